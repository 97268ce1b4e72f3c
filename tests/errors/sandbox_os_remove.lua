-- expect: tests/errors/sandbox_os_remove.lua:2: os.remove is not allowed in a sandboxed scenario (run with --unsafe to allow it)
os.remove("/nonexistent-pipesim/x")
