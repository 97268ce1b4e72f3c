-- expect: tests/errors/megatron_param_gather.lua:4: megatron: overlap_param_gather needs use_distributed_optimizer and overlap_grad_reduce
local ps = require "pipesim"

ps.models.megatron { num_layers = 2, hidden_size = 64, num_attention_heads = 4, seq_length = 64,
    vocab_size = 1000, world_size = 2, overlap_param_gather = true }
