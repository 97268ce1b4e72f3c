-- expect: tests/errors/sandbox_io_open_write.lua:2: io.open with mode 'w' is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = io.open("/nonexistent-pipesim/out.txt", "w")
