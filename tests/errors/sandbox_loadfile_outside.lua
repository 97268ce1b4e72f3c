-- expect: tests/errors/sandbox_loadfile_outside.lua:2: loadfile of 'tests/lua/harness.lua' (outside the scenario's directory and pipesim's lua/) is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = loadfile("tests/lua/harness.lua")
