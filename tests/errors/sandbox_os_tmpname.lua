-- expect: tests/errors/sandbox_os_tmpname.lua:2: os.tmpname is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local name = os.tmpname()
