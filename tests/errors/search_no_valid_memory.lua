-- expect: tests/errors/search_no_valid_memory.lua:5: ps.search: no valid configuration: constraint 'memory' removed the last 2 candidates (the smallest, tp8 pp1 dp1 v1 mb1 1f1b full zero0 sp, needs
local ps = require "pipesim"
-- GPT-3 175B on one node: even TP 8 with full recompute needs > 80 GiB
local c = ps.cluster(ps.clusters.dgx("A100", 1))
ps.search{ model = "gpt3-175b", cluster = c, gpus = 8, global_batch = 8,
    space = { tp = { 8 }, recompute = { "none", "full" } } }
