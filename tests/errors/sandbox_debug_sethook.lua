-- expect: tests/errors/sandbox_debug_sethook.lua:2: debug.sethook is not allowed in a sandboxed scenario (run with --unsafe to allow it)
debug.sethook(function() end, "l")
