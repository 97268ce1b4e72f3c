-- expect: tests/errors/sandbox_load_binary.lua:2: load of a binary chunk is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local f = load(string.dump(function() return 1 end))
