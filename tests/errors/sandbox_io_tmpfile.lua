-- expect: tests/errors/sandbox_io_tmpfile.lua:2: io.tmpfile is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = io.tmpfile()
