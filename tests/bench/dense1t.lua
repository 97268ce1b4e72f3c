-- make bench (issue 28): one step of a dense 1T-parameter model on 100,000
-- H100 (12,500 DGX nodes): 120 layers of hidden 26,624 and FFN 106,496
-- (12 L h^2 = 1.02e12 parameters), TP 8, PP 20, DP 625, 1F1B, four
-- microbatches a replica (a global batch of 2,500 sequences of 8K tokens),
-- distributed optimizer, summary recording; the whole process timed by
-- tests/bench/targets.py. -D nodes=N scales the cluster and the batch
-- (N a multiple of 20); -D fold=false runs every replica.
--   build/pipesim run --unsafe tests/bench/dense1t.lua -o x.db
dofile("tests/bench/frontier.lua")("dense 1T", 12500, function(nodes)
    return { num_layers = 120, hidden_size = 26624, ffn_hidden_size = 106496,
        num_attention_heads = 208, group_query_attention = true, num_query_groups = 8,
        normalization = "RMSNorm", position_embedding_type = "rope",
        disable_bias_linear = true, untie_embeddings_and_output_weights = true,
        seq_length = 8192, vocab_size = 128256, tensor_model_parallel_size = 8,
        pipeline_model_parallel_size = 20, micro_batch_size = 1,
        global_batch_size = 4 * nodes * 8 // 160, bf16 = true, sequence_parallel = true,
        use_distributed_optimizer = true, overlap_grad_reduce = true,
        overlap_param_gather = true }
end)
