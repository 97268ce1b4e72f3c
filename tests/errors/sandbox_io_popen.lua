-- expect: tests/errors/sandbox_io_popen.lua:2: io.popen is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = io.popen("id")
