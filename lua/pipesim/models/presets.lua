-- Published model shapes for ps.models.preset. Sizes are from the papers
-- and the Hugging Face config.json files (hidden_size, num_hidden_layers,
-- num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
-- tie_word_embeddings); `published` is the parameter count the tests check
-- our layer list against (within 1%). seq is the pre-training context.

-- moe_layers lists (models/moe.lua): the first n blocks dense, then MoE
-- (DeepSeek's first_k_dense_replace); every odd block MoE (Llama 4's
-- interleave_moe_layer_step 2: (layer + 1) % 2 == 0).
local function first_dense(n, layers)
    local p = {}
    for i = 1, layers do p[i] = i > n and 1 or 0 end
    return p
end
local function every_other(layers)
    local p = {}
    for i = 1, layers do p[i] = (i % 2 == 0) and 1 or 0 end
    return p
end

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
    -- Mixtures of experts (models/moe.lua). `published_active` is the
    -- published count of parameters a token runs through; `active_no_
    -- embedding` marks the publishers whose figure leaves the input
    -- embedding (a lookup) out: it then matches to its last digit (GPT-OSS
    -- 5.13B), and counting it would miss the rounding (DeepSeek-V3 37.55B
    -- for "37B", Kimi K2 32.9B for "32B"). Fields a model has that pipesim
    -- does not model are said per preset; each changes the count by less
    -- than 0.01%.
    --
    -- Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts": 46.7B total,
    -- 12.9B active, context 32k); HF mistralai/Mixtral-8x7B-v0.1
    -- config.json: hidden 4096, 32 layers, 32 heads, 8 kv heads,
    -- intermediate 14336, 8 experts, 2 per token, vocab 32000, untied.
    ["mixtral-8x7b"] = {
        shape = { layers = 32, hidden = 4096, heads = 32, kv_heads = 8, ffn_hidden = 14336,
                  seq = 32768, vocab = 32000, swiglu = true, experts = 8, topk = 2 },
        published = 46.7e9, published_active = 12.9e9,
    },
    -- Mixtral 8x22B (Mistral AI, "Cheaper, Better, Faster, Stronger",
    -- 2024-04: 141B total, 39B active, 64k context); HF mistralai/
    -- Mixtral-8x22B-v0.1 config.json: hidden 6144, 56 layers, 48 heads, 8 kv
    -- heads, intermediate 16384, 8 experts, 2 per token, vocab 32768.
    ["mixtral-8x22b"] = {
        shape = { layers = 56, hidden = 6144, heads = 48, kv_heads = 8, ffn_hidden = 16384,
                  seq = 65536, vocab = 32768, swiglu = true, experts = 8, topk = 2 },
        published = 141e9, published_active = 39e9,
    },
    -- DeepSeek-V3 (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", Sec.
    -- 4.2: 61 layers, hidden 7168, MLA with 128 heads, q/kv latent ranks
    -- 1536/512, per-head 128 + 64 rope, the first three layers dense, then
    -- 1 shared + 256 routed experts of 2048, 8 per token over at most 4
    -- nodes, sigmoid scores, one MTP module; 671B total, 37B active;
    -- pre-training sequence 4K); HF deepseek-ai/DeepSeek-V3 config.json
    -- (intermediate_size 18432, vocab 129280, n_group 8, topk_group 4,
    -- untied). Not modelled: the routing bias (256 per MoE layer). The
    -- report's 671B is the main model; the checkpoint's 685B adds the MTP
    -- module (the MTP layers here) with its own copies of the embedding
    -- and the head (tests/lua/test_moe.lua checks both).
    ["deepseek-v3"] = {
        shape = { layers = 61, hidden = 7168, heads = 128, ffn_hidden = 18432, seq = 4096,
                  vocab = 129280, swiglu = true, experts = 256, topk = 8, expert_ffn = 2048,
                  shared_experts = 1, moe_layers = first_dense(3, 61), router_score = "sigmoid",
                  router_groups = 8, router_group_topk = 4, mtp_layers = 1,
                  multi_latent_attention = true, q_lora_rank = 1536, kv_lora_rank = 512,
                  qk_head_dim = 128, qk_pos_emb_head_dim = 64, v_head_dim = 128 },
        published = 671e9, published_active = 37e9, active_no_embedding = true,
    },
    -- Kimi K2 (Moonshot AI 2025, "Kimi K2: Open Agentic Intelligence":
    -- 1.04T total, 32B active, DeepSeek-V3's architecture with 384
    -- experts, 64 heads, one dense layer); HF moonshotai/Kimi-K2-Base
    -- config.json (vocab 163840, n_group 1, no MTP). The config adds up to
    -- 1.026T, 1.3% under the report's 1.04T (the model card says "1T"):
    -- `tolerance` states that gap rather than hiding it.
    ["kimi-k2"] = {
        shape = { layers = 61, hidden = 7168, heads = 64, ffn_hidden = 18432, seq = 4096,
                  vocab = 163840, swiglu = true, experts = 384, topk = 8, expert_ffn = 2048,
                  shared_experts = 1, moe_layers = first_dense(1, 61), router_score = "sigmoid",
                  multi_latent_attention = true, q_lora_rank = 1536, kv_lora_rank = 512,
                  qk_head_dim = 128, qk_pos_emb_head_dim = 64, v_head_dim = 128 },
        published = 1.04e12, tolerance = 0.015, published_active = 32e9,
        active_no_embedding = true,
    },
    -- Qwen3 (Qwen Team 2025, "Qwen3 Technical Report", Table 2; the model
    -- cards: 30.5B total / 3.3B activated and 235B / 22B; pre-training
    -- stage 1 at 4,096 tokens); HF Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B
    -- config.json (head_dim 128, moe_intermediate_size 768 and 1536, 128
    -- experts, 8 per token, vocab 151936, untied). Not modelled: the
    -- per-head q/k RMSNorms (2 x 128 per layer).
    ["qwen3-30b-a3b"] = {
        shape = { layers = 48, hidden = 2048, heads = 32, kv_heads = 4, head_dim = 128,
                  ffn_hidden = 6144, seq = 4096, vocab = 151936, swiglu = true, experts = 128,
                  topk = 8, expert_ffn = 768 },
        published = 30.5e9, published_active = 3.3e9,
    },
    ["qwen3-235b-a22b"] = {
        shape = { layers = 94, hidden = 4096, heads = 64, kv_heads = 4, head_dim = 128,
                  ffn_hidden = 12288, seq = 4096, vocab = 151936, swiglu = true, experts = 128,
                  topk = 8, expert_ffn = 1536 },
        published = 235e9, published_active = 22e9,
    },
    -- GPT-OSS (OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card", Table
    -- 1: 116.83B total / 5.13B active, 20.91B / 3.61B); HF openai/gpt-oss-
    -- 120b config.json: hidden 2880, 36 layers (20b: 24), 64 heads of 64, 8
    -- kv heads, 128 experts (20b: 32) of 2880, 4 per token, vocab 201088,
    -- biases on the attention, the experts and the router;
    -- initial_context_length 4096 (the pre-training length is not
    -- published). Not modelled: the attention sinks (64 per layer) and the
    -- 128-token sliding window of every other layer (its attention FLOPs
    -- are counted as full).
    ["gpt-oss-120b"] = {
        shape = { layers = 36, hidden = 2880, heads = 64, kv_heads = 8, head_dim = 64,
                  ffn_hidden = 2880, seq = 4096, vocab = 201088, swiglu = true, bias = true,
                  experts = 128, topk = 4 },
        published = 116.83e9, published_active = 5.13e9, active_no_embedding = true,
    },
    ["gpt-oss-20b"] = {
        shape = { layers = 24, hidden = 2880, heads = 64, kv_heads = 8, head_dim = 64,
                  ffn_hidden = 2880, seq = 4096, vocab = 201088, swiglu = true, bias = true,
                  experts = 32, topk = 4 },
        published = 20.91e9, published_active = 3.61e9, active_no_embedding = true,
    },
    -- Llama 4 Maverick (Meta 2025, "The Llama 4 herd", model card: 17B
    -- active, 400B total, 128 experts); HF meta-llama/Llama-4-Maverick-
    -- 17B-128E config.json text_config: hidden 5120, 48 layers, 40 heads, 8
    -- kv heads, every other layer MoE (interleave_moe_layer_step 2, layers
    -- 1, 3, ...), dense intermediate 16384, experts and the one shared
    -- expert 8192, 1 per token, vocab 202048. Not modelled: the vision
    -- encoder (outside the 400B) and chunked attention on 3 of 4 layers
    -- (its FLOPs counted as full); seq 8192 is not published.
    ["llama4-maverick"] = {
        shape = { layers = 48, hidden = 5120, heads = 40, kv_heads = 8, head_dim = 128,
                  ffn_hidden = 16384, seq = 8192, vocab = 202048, swiglu = true, experts = 128,
                  topk = 1, expert_ffn = 8192, shared_experts = 1, moe_layers = every_other(48) },
        published = 400e9, published_active = 17e9,
    },
    -- A small GPT for tests and quick scenarios (not a published model).
    toy = {
        shape = { layers = 4, hidden = 64, heads = 4, seq = 128, vocab = 1000 },
    },
}
