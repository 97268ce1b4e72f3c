-- expect: tests/errors/sandbox_db_outside.lua:4: ps.run: db '/proc/pipesim.db' (outside the working directory and the scenario's and -o database's directories) is not allowed in a sandboxed scenario (run with --unsafe to allow it)
local ps = require "pipesim"
local l = { { fwd_time = 1 }, { fwd_time = 1 } }
ps.run{ layers = l, stages = 2, microbatches = 2, db = "/proc/pipesim.db" }
