-- Issue 27 item 13: db = "" is SQLite's temporary database: ids of runs
-- kept nowhere.
-- expect: db_empty.lua:5: ps.run: field 'db' must name a database file, got '': runs recorded there would be kept nowhere (to simulate without recording, set record = "none")
local ps = require "pipesim"
ps.run{ layers = { { fwd_time = 1 }, { fwd_time = 1 } }, stages = 2, microbatches = 2, db = "" }
