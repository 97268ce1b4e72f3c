-- expect: tests/errors/search_unknown_space_field.lua:5: ps.search: space: unknown field 'pipeline' (known: tp, cp, cp_comm_type, pp, dp, ep, etp, virtual_stages, microbatch, schedule, recompute, zero, sequence_parallel, fp8)
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("A100", 1))
local model = { layers = 4, hidden = 256, heads = 4, seq = 128, vocab = 1024 }
ps.search{ model = model, cluster = c, gpus = 8, global_batch = 16, space = { pipeline = { 2 } } }
