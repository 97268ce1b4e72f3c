-- expect: tests/errors/sandbox_io_output.lua:2: io.output to a file name is not allowed in a sandboxed scenario (run with --unsafe to allow it)
io.output("/nonexistent-pipesim/out.txt")
