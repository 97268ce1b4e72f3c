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
    -- A small GPT for tests and quick scenarios (not a published model).
    toy = {
        shape = { layers = 4, hidden = 64, heads = 4, seq = 128, vocab = 1000 },
    },
}
