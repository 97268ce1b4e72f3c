-- expect: tests/errors/megatron_unknown_flag.lua:6: megatron: unknown flag 'my_custom_knob' (not a flag of Megatron-LM d98e8a64dd (Megatron-Core 0.20.0, 2026-08-22))
-- A name that is not one of Megatron-LM's flags (the parser of the
-- version pipesim follows, models/megatron_flags.lua) nor pipesim's own,
-- far from every one: no suggestion.
local ps = require "pipesim"
ps.models.megatron{
    my_custom_knob = 1, num_layers = 2, hidden_size = 64,
    num_attention_heads = 4, seq_length = 16, vocab_size = 128, micro_batch_size = 1,
    global_batch_size = 2, world_size = 1 }
