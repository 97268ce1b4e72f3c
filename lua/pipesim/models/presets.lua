-- Published model shapes for ps.models.preset. Sizes are from the papers
-- and the Hugging Face config.json files (hidden_size, num_hidden_layers,
-- num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
-- tie_word_embeddings); `published` is the parameter count the tests check
-- our layer list against (within 1%). seq is the pre-training context.
return {
    -- Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
    -- 96 layers, d_model 12288, 96 heads, context 2048; GPT-2 BPE vocab of
    -- 50257, learned positions, embedding tied to the output layer as in
    -- GPT-2 (and Megatron-LM's default).
    ["gpt3-175b"] = {
        shape = { layers = 96, hidden = 12288, heads = 96, seq = 2048,
                  vocab = 50257, tied = true },
        published = 175e9,
    },
    -- Llama 2 (Touvron et al. 2023); HF meta-llama/Llama-2-*-hf config.json.
    ["llama2-7b"] = {
        shape = { layers = 32, hidden = 4096, heads = 32, kv_heads = 32,
                  ffn_hidden = 11008, seq = 4096, vocab = 32000, swiglu = true },
        published = 6.74e9,
    },
    ["llama2-13b"] = {
        shape = { layers = 40, hidden = 5120, heads = 40, kv_heads = 40,
                  ffn_hidden = 13824, seq = 4096, vocab = 32000, swiglu = true },
        published = 13.0e9,
    },
    ["llama2-70b"] = {
        shape = { layers = 80, hidden = 8192, heads = 64, kv_heads = 8,
                  ffn_hidden = 28672, seq = 4096, vocab = 32000, swiglu = true },
        published = 69.0e9,
    },
    -- Llama 3 (Dubey et al. 2024, "The Llama 3 Herd of Models", Table 3);
    -- HF meta-llama/Meta-Llama-3-8B, -70B and Llama-3.1-405B config.json.
    -- (Early uploads of the 405B config said 16 kv heads; Meta's params.json
    -- and the corrected config say 8.)
    ["llama3-8b"] = {
        shape = { layers = 32, hidden = 4096, heads = 32, kv_heads = 8,
                  ffn_hidden = 14336, seq = 8192, vocab = 128256, swiglu = true },
        published = 8.03e9,
    },
    ["llama3-70b"] = {
        shape = { layers = 80, hidden = 8192, heads = 64, kv_heads = 8,
                  ffn_hidden = 28672, seq = 8192, vocab = 128256, swiglu = true },
        published = 70.6e9,
    },
    ["llama3-405b"] = {
        shape = { layers = 126, hidden = 16384, heads = 128, kv_heads = 8,
                  ffn_hidden = 53248, seq = 8192, vocab = 128256, swiglu = true },
        published = 405.9e9,
    },
    -- Megatron-LM's GPT models. Narayanan et al. 2021, "Efficient
    -- Large-Scale Language Model Training on GPU Clusters Using
    -- Megatron-LM", Table 1 (heads, hidden, layers, parameters in
    -- billions): "All models use a vocabulary size of 51,200 and a sequence
    -- length of 2048"; learned positions, GeLU MLP of 4h, embedding tied
    -- to the output layer (Megatron-LM's defaults). The table gives one
    -- decimal: `rounding` is half its last digit (1.65 B prints as 1.7).
    ["gpt-1.7b"] = { shape = { layers = 24, hidden = 2304, heads = 24, seq = 2048,
                               vocab = 51200, tied = true }, published = 1.7e9, rounding = 0.05e9 },
    ["gpt-3.6b"] = { shape = { layers = 30, hidden = 3072, heads = 32, seq = 2048,
                               vocab = 51200, tied = true }, published = 3.6e9, rounding = 0.05e9 },
    ["gpt-7.5b"] = { shape = { layers = 36, hidden = 4096, heads = 32, seq = 2048,
                               vocab = 51200, tied = true }, published = 7.5e9 },
    ["gpt-18b"] = { shape = { layers = 40, hidden = 6144, heads = 48, seq = 2048,
                              vocab = 51200, tied = true }, published = 18.4e9 },
    ["gpt-39b"] = { shape = { layers = 48, hidden = 8192, heads = 64, seq = 2048,
                              vocab = 51200, tied = true }, published = 39.1e9 },
    ["gpt-76b"] = { shape = { layers = 60, hidden = 10240, heads = 80, seq = 2048,
                              vocab = 51200, tied = true }, published = 76.1e9 },
    ["gpt-145b"] = { shape = { layers = 80, hidden = 12288, heads = 96, seq = 2048,
                               vocab = 51200, tied = true }, published = 145.6e9 },
    ["gpt-310b"] = { shape = { layers = 96, hidden = 16384, heads = 128, seq = 2048,
                               vocab = 51200, tied = true }, published = 310.1e9 },
    ["gpt-530b"] = { shape = { layers = 105, hidden = 20480, heads = 128, seq = 2048,
                               vocab = 51200, tied = true }, published = 529.6e9 },
    ["gpt-1t"] = { shape = { layers = 128, hidden = 25600, heads = 160, seq = 2048,
                             vocab = 51200, tied = true }, published = 1008.0e9 },
    -- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
    -- Transformer Models", Table 3: 22B (64 heads, 6144 hidden, 48 layers)
    -- and 175B (96, 12288, 96, GPT-3's shape); its 530B and 1T are the
    -- gpt-530b and gpt-1t above. Sequence 2048, vocabulary 51200, as
    -- Narayanan et al.
    ["gpt-22b"] = { shape = { layers = 48, hidden = 6144, heads = 64, seq = 2048,
                              vocab = 51200, tied = true }, published = 22e9 },
    ["gpt-175b"] = { shape = { layers = 96, hidden = 12288, heads = 96, seq = 2048,
                               vocab = 51200, tied = true }, published = 175e9 },
    -- A small GPT for tests and quick scenarios (not a published model).
    toy = {
        shape = { layers = 4, hidden = 64, heads = 4, seq = 128, vocab = 1000 },
    },
}
