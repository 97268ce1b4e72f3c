-- expect: tests/errors/megatron_unknown_flag.lua:6: megatron: unknown field 'overlap_param_gather_with_optimizer_step' (known: accumulate_allreduce_grads_in_fp32, attention_dropout, bf16, cluster, db, disable_bias_linear, ffn_hidden_size, fp16, global_batch_size, grad_sync, group_query_attention, hidden_dropout, hidden_size, kv_channels, make_vocab_size_divisible_by, max_position_embeddings, micro_batch_size, name, normalization, num_attention_heads, num_layers, num_layers_per_virtual_pipeline_stage, num_query_groups, optimizer_time, overlap_grad_reduce, overlap_param_gather, pipeline_model_parallel_size, position_embedding_type, recompute_granularity, recompute_method, recompute_num_layers, record, schedule, seq_length, sequence_parallel, swiglu, tensor_model_parallel_size, tp_overlap, untie_embeddings_and_output_weights, use_distributed_optimizer, use_flash_attn, vocab_size, world_size)
-- A launch-script flag pipesim does not take (Megatron's
-- --overlap-param-gather-with-optimizer-step), far from every known one:
-- the known names, sorted (a set's traversal order changes from run to run).
local ps = require "pipesim"
ps.models.megatron{
    overlap_param_gather_with_optimizer_step = true, num_layers = 2, hidden_size = 64,
    num_attention_heads = 4, seq_length = 16, vocab_size = 128, micro_batch_size = 1,
    global_batch_size = 2, world_size = 1 }
