-- Issue 27 item 13: db = ":memory:" keeps runs nowhere.
-- expect: db_memory.lua:5: ps.collective: field 'db' must name a database file, got ':memory:': runs recorded there would be kept nowhere (to simulate without recording, set record = "none")
local ps = require "pipesim"
local c = ps.cluster{ ranks = 2 }
ps.collective{ cluster = c, op = "allreduce", bytes = 8, db = ":memory:" }
