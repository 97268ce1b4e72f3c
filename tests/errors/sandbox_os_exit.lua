-- expect: tests/errors/sandbox_os_exit.lua:2: os.exit is not allowed in a sandboxed scenario (run with --unsafe to allow it)
os.exit(0)
