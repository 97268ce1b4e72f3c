-- expect: tests/errors/megatron_unmodelled_flag.lua:6: megatron: flag 'overlap_param_gather_with_optimizer_step' = true changes the step's time or memory and is not modelled by pipesim (Megatron's default: false)
-- A Megatron flag that changes performance and that pipesim does not
-- model, given away from Megatron's default: an error naming it (at its
-- default it would be accepted).
local ps = require "pipesim"
ps.models.megatron{
    overlap_param_gather_with_optimizer_step = true, num_layers = 2, hidden_size = 64,
    num_attention_heads = 4, seq_length = 16, vocab_size = 128, micro_batch_size = 1,
    global_batch_size = 2, world_size = 1 }
