-- expect: tests/errors/sandbox_dofile_outside.lua:2: dofile of 'tests/lua/harness.lua' (outside the scenario's directory and pipesim's lua/) is not allowed in a sandboxed scenario (run with --unsafe to allow it)
dofile("tests/lua/harness.lua")
