-- make bench (issue 28): one step of Llama 3 405B on 16,384 H100 (2,048
-- DGX nodes; TP 8, PP 16, DP 128, interleaved with one layer a virtual
-- stage, Meta's 2,048-sequence batch of 8K tokens), summary recording, the
-- whole process timed by tests/bench/targets.py. -D nodes=N scales the
-- cluster and the batch together; -D fold=false runs every replica.
--   build/pipesim run --unsafe tests/bench/llama405.lua -o x.db
dofile("tests/bench/frontier.lua")("llama3-405b", 2048, function(nodes)
    return { num_layers = 126, hidden_size = 16384, ffn_hidden_size = 53248,
        num_attention_heads = 128, group_query_attention = true, num_query_groups = 8,
        swiglu = true, normalization = "RMSNorm", position_embedding_type = "rope",
        disable_bias_linear = true, untie_embeddings_and_output_weights = true,
        seq_length = 8192, vocab_size = 128256, tensor_model_parallel_size = 8,
        pipeline_model_parallel_size = 16, num_layers_per_virtual_pipeline_stage = 1,
        account_for_embedding_in_pipeline_split = true,
        account_for_loss_in_pipeline_split = true, micro_batch_size = 1,
        global_batch_size = 2048 * nodes // 2048, bf16 = true, sequence_parallel = true,
        use_distributed_optimizer = true, overlap_grad_reduce = true,
        overlap_param_gather = true }
end)
