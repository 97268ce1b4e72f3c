-- expect: tests/errors/type_switches_string.lua:4: ps.cluster: field 'switches' must be a table of names, got 'spine'
local ps = require "pipesim"

ps.cluster{ ranks = 2, switches = "spine", links = { { 0, "spine", bandwidth = "50 GB/s" } } }
