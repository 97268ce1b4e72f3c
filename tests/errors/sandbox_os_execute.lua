-- expect: tests/errors/sandbox_os_execute.lua:2: os.execute is not allowed in a sandboxed scenario (run with --unsafe to allow it)
os.execute("echo pwned")
