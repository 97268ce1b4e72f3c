-- expect: tests/errors/megatron_recompute_method_alone.lua:5: megatron: recompute_method needs recompute_granularity 'full' (got none): Megatron-LM recomputes nothing without a granularity
-- once accepted and ignored
local ps = require "pipesim"

ps.models.megatron { num_layers = 2, hidden_size = 64, num_attention_heads = 4, seq_length = 64,
    vocab_size = 1000, recompute_method = "uniform" }
