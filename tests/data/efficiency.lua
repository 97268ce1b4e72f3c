-- tests/cli_efficiency.sh: a modelled step, a plain-layer step and a
-- collective, each recorded; prints each pipeline's r.efficiency
-- figures as %.17g for the suite to compare with the run row.
local ps = require "pipesim"
local c = ps.cluster(ps.clusters.dgx("h100", 1))
local FIELDS = { "model_flops", "hardware_flops", "tokens", "gpus", "peak_flops",
                 "model_tflops_per_gpu", "mfu", "hardware_tflops_per_gpu", "tokens_per_s_per_gpu" }
local function show(r)
    local out = { tostring(r.id) }
    for _, k in ipairs(FIELDS) do
        local v = r.efficiency[k]
        out[#out + 1] = v == nil and "" or string.format("%.17g", v)
    end
    print(table.concat(out, "|"))
end
show(ps.run(ps.models.megatron {
    num_layers = 8, hidden_size = 1024, num_attention_heads = 16, seq_length = 1024,
    vocab_size = 32000, bf16 = true, micro_batch_size = 2, global_batch_size = 32,
    world_size = 4, tensor_model_parallel_size = 2, pipeline_model_parallel_size = 2,
    recompute_granularity = "selective", sequence_parallel = true, cluster = c,
    record = "summary", name = "model" }))
local L = {}
for i = 1, 4 do L[i] = { fwd_flops = "2 TFLOP", out_bytes = "4 MiB" } end
show(ps.run { cluster = c, layers = L, stages = 2, microbatches = 4, record = "summary", name = "plain" })
ps.collective { cluster = c, op = "allreduce", bytes = "1 MiB", record = "summary" }
