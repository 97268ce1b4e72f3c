-- expect: tests/errors/sandbox_debug_getlocal.lua:2: debug.getlocal is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local name, value = debug.getlocal(1, 1)
