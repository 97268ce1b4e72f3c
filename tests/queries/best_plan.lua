-- The scenario results/queries/best_plan.sql is checked on (tests/
-- run_queries.sh runs tests/queries/NAME.lua for NAME.sql when it exists):
-- a plan search of a 4-layer GPT on two GPUs of a DGX A100 node, pp 2 (dp
-- 1), no tensor parallelism; micro-batch 1 or 2, 1F1B or GPipe, with or
-- without full recompute: 8 configurations, every one simulated (prune =
-- "none"). GPipe and 1F1B take the same time here (with free
-- communication they both take (m + p - 1)(f + b)) and 1F1B holds less,
-- so the front is 1F1B's: mb 2 without recompute (fastest), mb 2 full,
-- mb 1 full (smallest): the query counts 3. (GPipe mb 2 full came out one
-- rounding step below 1F1B mb 2 full with the head's cross-entropy at
-- e + 16 bytes a logit, and counted as a fourth; at Megatron's 38 bytes
-- the two tie exactly.)
local ps = require "pipesim"
ps.search{ name = "plan", model = { name = "gpt-4l", layers = 4, hidden = 256, heads = 4, seq = 128, vocab = 1024 },
           cluster = ps.cluster(ps.clusters.dgx("A100", 1)), gpus = 2, global_batch = 8,
           space = { pp = { 2 }, microbatch = { 1, 2 }, schedule = { "1f1b", "gpipe" },
                     recompute = { "none", "full" } }, prune = "none" }
