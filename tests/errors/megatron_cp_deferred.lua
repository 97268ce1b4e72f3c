-- expect: tests/errors/megatron_cp_deferred.lua:5: megatron: flag 'context_parallel_size' (context parallelism) is not modelled yet; pipesim cannot run this launch script
-- Context parallelism is the next dimension (issue 23): its flags are
-- refused by name until it lands, never silently dropped.
local ps = require "pipesim"
ps.models.megatron{ context_parallel_size = 2, num_layers = 2, hidden_size = 64,
    num_attention_heads = 4, seq_length = 16, vocab_size = 128, world_size = 2 }
