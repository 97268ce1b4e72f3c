-- expect: tests/errors/search_no_valid.lua:7: ps.search: no valid configuration: constraint 'pp_layers' removed the last 2 candidates (pp divides neither the 4 layers nor the 6 with the embedding and the loss counted as layers; e.g. tp1 pp8 dp1 v1 mb1 1f1b none zero0)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("A100", 1))
local model = { layers = 4, hidden = 256, heads = 4, seq = 128, vocab = 1024 }
-- tp 8 does not divide the 4 heads (removed first); pp 8 then leaves an
-- empty stage
ps.search{ model = model, cluster = c, gpus = 8, global_batch = 16,
    space = { tp = { 1, 8 }, pp = { 8, 1 }, dp = { 1 }, microbatch = { 1, 3 } } }
