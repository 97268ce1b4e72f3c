-- expect: tests/errors/megatron_fp8_a100.lua:6: ps.run: fp8: the device 'A100 80GB SXM' has no FP8 tensor cores (no fp8_flops: A100 and older train in 16 bits); use an H100, H200, H800, B200, GB200 or GB300, or drop fp8
-- FP8 on a device without FP8 tensor cores is an error naming the device.
local ps = require "pipesim"
local run = ps.models.megatron{ num_layers = 2, hidden_size = 64, num_attention_heads = 4, seq_length = 16,
    vocab_size = 128, bf16 = true, fp8_format = "hybrid", record = "none", cluster = ps.cluster(ps.clusters.dgx("A100", 1)) }
ps.run(run)
