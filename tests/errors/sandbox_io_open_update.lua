-- expect: tests/errors/sandbox_io_open_update.lua:2: io.open with mode 'r+' is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = io.open("tests/errors/data/non_numeric.csv", "r+")
