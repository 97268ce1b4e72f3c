-- expect: tests/errors/megatron_tp_without_cluster.lua:6: ps.run: tp = 2 needs the roofline compute model: give the cluster a device with roofline constants (ps.clusters.device or ps.clusters.dgx), or fwd_time
-- once "parallel.lua:413: attempt to call a boolean value (upvalue 'cost')"
local ps = require "pipesim"
local spec = ps.models.megatron{ num_layers = 4, hidden_size = 256, num_attention_heads = 4,
    seq_length = 128, vocab_size = 1000, tensor_model_parallel_size = 2 }
ps.run(spec)
