-- expect: tests/errors/megatron_param_gather_start.lua:4: megatron: param_gather_start changes nothing without overlap_param_gather
local ps = require "pipesim"

ps.models.megatron { num_layers = 2, hidden_size = 64, num_attention_heads = 4, seq_length = 64,
    vocab_size = 1000, world_size = 2, use_distributed_optimizer = true, overlap_grad_reduce = true,
    param_gather_start = "step" }
