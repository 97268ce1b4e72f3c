-- make bench, issue 9: the time to simulate one training step of GPT-3 175B
-- on 1024 GPUs (128 DGX H100 nodes), TP 8, PP 8, DP 16, m = 64 microbatches
-- of 1 per replica (global batch 1024), SP + selective recompute, 1F1B, with
-- full (events) and summary recording. Each TP group is one simulated rank,
-- so the engine runs 128 ranks: 8 pipelines x 16 replicas plus the
-- gradient sync. Target: under 2 s with summary recording.
--   build/pipesim run --unsafe tests/bench/gpt3_1024.lua -o /tmp/pipesim-gpt3.db
local ps = require "pipesim"

local function wall()
    local ok, p = pcall(io.popen, "date +%s.%N")
    if ok and p then
        local t = tonumber(p:read("l"))
        p:close()
        if t then return t end
    end
    return os.time()
end

local cluster = ps.cluster(ps.clusters.dgx("H100", 128))
local run = ps.models.megatron {
    num_layers = 96, hidden_size = 12288, num_attention_heads = 96, seq_length = 2048,
    vocab_size = 50257, bf16 = true, micro_batch_size = 1, global_batch_size = 1024,
    world_size = 1024, tensor_model_parallel_size = 8, pipeline_model_parallel_size = 8,
    sequence_parallel = true, recompute_granularity = "selective",
    use_distributed_optimizer = true, cluster = cluster,
}
assert(run.dp == 16 and run.microbatches == 64)
-- median of 3 repetitions, wall and CPU time; last, the same step with
-- Megatron's --overlap-grad-reduce (gradient buckets of 40M elements
-- reduced during the backward: many more collectives to simulate)
local bucketed = ps.models.megatron {
    num_layers = 96, hidden_size = 12288, num_attention_heads = 96, seq_length = 2048,
    vocab_size = 50257, bf16 = true, micro_batch_size = 1, global_batch_size = 1024,
    world_size = 1024, tensor_model_parallel_size = 8, pipeline_model_parallel_size = 8,
    sequence_parallel = true, recompute_granularity = "selective",
    use_distributed_optimizer = true, overlap_grad_reduce = true, cluster = cluster,
}
for _, case in ipairs { { run, "summary" }, { run, "events" }, { bucketed, "summary" } } do
    local record = case[2]
    run = case[1]
    run.record = record
    run.name = "gpt3-175b " .. record .. (run == bucketed and " overlap_grad_reduce" or "")
    local walls, cpus, r = {}, {}, nil
    for i = 1, 3 do
        local t0, c0 = wall(), os.clock()
        r = ps.run(run)
        cpus[i], walls[i] = os.clock() - c0, wall() - t0
    end
    table.sort(walls); table.sort(cpus)
    print(string.format("GPT-3 175B, 1024 GPUs, TP 8 PP 8 DP 16, m = 64, record = %-7s%s: " ..
        "%.3f s cpu, %.3f s wall (%d events); step %.2f s, peak %s", record,
        run == bucketed and ", overlap_grad_reduce" or "", cpus[2], walls[2],
        r.events, r.makespan, ps.bytes(r.peak_memory[1])))
end
