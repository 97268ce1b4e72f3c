-- expect: tests/errors/sandbox_os_rename.lua:2: os.rename is not allowed in a sandboxed scenario (run with --unsafe to allow it)
os.rename("/nonexistent-pipesim/x", "/nonexistent-pipesim/y")
