-- ps.models.megatron: Megatron-LM's flags and defaults to a ps.run table
-- (sizes derived as Megatron derives them), and the static memory of a
-- middle stage against Megatron's own theoretical_memory_usage.py formula.
-- Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local flags = {
    num_layers = 96, hidden_size = 12288, num_attention_heads = 96, seq_length = 2048,
    vocab_size = 50257, bf16 = true, micro_batch_size = 1, global_batch_size = 1536,
    world_size = 1024, tensor_model_parallel_size = 8, pipeline_model_parallel_size = 8,
    num_layers_per_virtual_pipeline_stage = 4, sequence_parallel = true,
    recompute_granularity = "selective", use_distributed_optimizer = true,
}
local run, shape = ps.models.megatron(flags)
H.eq(run.dp, 16, "data-parallel size = world / (tp x pp)")
H.eq(run.microbatches, 96, "global batch / (micro batch x dp)")
H.eq(run.tp, 8); H.eq(run.stages, 8)
H.eq(run.virtual_stages, 3, "96 layers / 8 stages / 4 per virtual stage")
H.eq(run.schedule, "interleaved")
H.eq(run.sequence_parallel, true); H.eq(run.recompute, "selective"); H.eq(run.zero, 1)
H.eq(shape.vocab, 51200, "vocab padded to a multiple of 128 x tp")
H.eq(ps.models.padded_vocab(50257, 128, 1), 50304, "GPT-2 BPE padded at tp 1")
H.eq(shape.dtype, "bf16"); H.eq(shape.tied, true)
H.eq(#run.partition, 24, "one count per model chunk")
H.eq(run.partition[1], 5, "first chunk: embedding + 4 blocks")
H.eq(run.partition[2], 4); H.eq(run.partition[24], 5, "last chunk: 4 blocks + head")
H.eq(run.grad_sync.overlap, false, "Megatron's default: one reduction after the backward")
local ov = ps.models.megatron { num_layers = 4, hidden_size = 256, num_attention_heads = 8,
    seq_length = 128, vocab_size = 1000, world_size = 64, overlap_grad_reduce = true }
H.eq(ov.grad_sync, { bucket = 64e6 * 4, first_bucket = 64e6 * 4, bucketed = "first",
    overlap = true },
    "--overlap-grad-reduce: buckets of max(40M, 1M x dp) fp32 elements, on pp rank 0's chunk 0")
H.eq(run.memory, { weight_bytes = 2, grad_bytes = 4, optimizer_bytes = 12 },
    "16-bit weight, fp32 main gradient, Adam's fp32 master and moments")
-- fp16: the gradient buffer (and the data-parallel all-reduce) is fp16
-- unless --accumulate-allreduce-grads-in-fp32; bf16 forces fp32
local f16 = { num_layers = 4, hidden_size = 256, num_attention_heads = 8, seq_length = 128,
    vocab_size = 1000, world_size = 4, fp16 = true }
H.eq(ps.models.megatron(f16).memory, { weight_bytes = 2, grad_bytes = 2, optimizer_bytes = 12 },
    "fp16: 16-bit gradient buffer")
f16.accumulate_allreduce_grads_in_fp32 = true
H.eq(ps.models.megatron(f16).memory.grad_bytes, 4, "fp16 + accumulate in fp32")
-- Megatron's defaults: fp32, no recompute, 1F1B, 4h MLP
local plain = ps.models.megatron { num_layers = 4, hidden_size = 256, num_attention_heads = 8,
    seq_length = 128, vocab_size = 1000 }
H.eq(plain.dp, 1); H.eq(plain.microbatches, 1); H.eq(plain.recompute, "none")
H.eq(plain.schedule, "1f1b"); H.eq(plain.layers[2].shape.dtype, "fp32")
H.eq(plain.layers[2].shape.ffn_hidden, 1024)
H.eq(plain.memory, { weight_bytes = 4, grad_bytes = 4, optimizer_bytes = 8 })
H.eq(plain.layers[1].shape.vocab, 1024, "1000 padded to 1024")
local full = ps.models.megatron { num_layers = 4, hidden_size = 256, num_attention_heads = 8,
    seq_length = 128, vocab_size = 1000, recompute_granularity = "full",
    recompute_method = "block", recompute_num_layers = 2, pipeline_model_parallel_size = 2,
    world_size = 2, global_batch_size = 8 }
H.eq(full.recompute, "full"); H.eq(full.recompute_method, "block"); H.eq(full.recompute_layers, 2)
H.eq(full.microbatches, 8); H.eq(full.partition, { 3, 3 })
local swi = ps.models.megatron { num_layers = 2, hidden_size = 4096, num_attention_heads = 32,
    num_query_groups = 8, group_query_attention = true, swiglu = true, seq_length = 128,
    vocab_size = 1000, normalization = "RMSNorm", position_embedding_type = "rope",
    disable_bias_linear = true }
local sh = swi.layers[2].shape
H.eq(sh.kv_heads, 8); H.eq(sh.ffn_hidden, 10880, "SwiGLU: int(4h x 2/3 / 64) x 64")
H.eq(sh.norm, "rmsnorm"); H.eq(sh.position, "rope"); H.eq(sh.bias, false)

-- static memory of a middle stage = Megatron's formula: transformer
-- parameters / (pp x tp) x (6 + 12/d) bytes with the distributed optimizer
-- (theoretical_memory_usage.py), within the replicated norms and biases
-- (pipesim keeps them whole on each TP rank, the formula divides them too)
local cluster = ps.cluster(ps.clusters.dgx("H100", 128))
run.cluster = cluster
run.record = "none"
local r = ps.run(run)
local h, L = 12288, 96
local block = 12 * h * h + 13 * h
local want = L * block / (8 * 8) * (6 + 12 / 16)
H.near(r.static_memory[2], want, 1e-3, "middle stage: Megatron's 6 + 12/d bytes per parameter")
H.check(r.peak_memory[1] < 80e9, "GPT-3 175B, TP 8 PP 8 DP 16, SP + selective fits in 80 GB: "
    .. ps.bytes(r.peak_memory[1]))
H.eq(r.tp, 8)

-- peak activations of the first stage = Megatron's compute_activation_memory
-- (theoretical_memory_usage.py, SP + selective, 1F1B: 34sbh per layer for
-- all L layers, since pp microbatches are in flight on the first stage, the
-- embedding's dropout mask sbh and its 8sb token input per microbatch in
-- flight, all / tp); pipesim does not count the 8 bytes of token ids
local c8 = ps.cluster(ps.clusters.dgx("H100", 8))
-- (unfused attention: the formula has no term for the fused kernel's fp32
-- softmax statistics, 4 a s b bytes a layer, which Megatron-Core's default
-- attention keeps)
local r1 = ps.run(ps.models.megatron { num_layers = 96, hidden_size = 12288,
    num_attention_heads = 96, seq_length = 2048, vocab_size = 51200, bf16 = true,
    attention_backend = "unfused",
    micro_batch_size = 1, global_batch_size = 64, world_size = 64,
    tensor_model_parallel_size = 8, pipeline_model_parallel_size = 8, sequence_parallel = true,
    recompute_granularity = "selective", cluster = c8, record = "none" })
local sbh = 2048 * 12288
local megatron_act = (34 * sbh * 96 + 8 * 2048 * 8 + sbh * 8) / 8
H.near(r1.peak_memory[1] - r1.static_memory[1], megatron_act, 1e-5,
    "first-stage activations = Megatron's theoretical_memory_usage.py")

H.raises(function() ps.models.megatron { hidden_size = 1, num_attention_heads = 1,
    seq_length = 1, vocab_size = 1 } end, "megatron: missing flag 'num_layers'")
H.raises(function() ps.models.megatron { num_layers = 4, hidden_size = 256,
    num_attention_heads = 8, seq_length = 128, vocab_size = 1000, world_size = 12,
    tensor_model_parallel_size = 8 } end,
    "world_size (12) is not divisible by tensor_model_parallel_size (8) x pipeline_model_parallel_size (1)")
H.raises(function() ps.models.megatron { num_layers = 4, hidden_size = 256,
    num_attention_heads = 8, seq_length = 128, vocab_size = 1000, recompute_granularity = "full" } end,
    "recompute_granularity 'full' needs recompute_method")
H.raises(function() ps.models.megatron { num_layer = 4 } end,
    "megatron: unknown flag 'num_layer' (not a flag of Megatron-LM d98e8a64dd (Megatron-Core " ..
    "0.20.0, 2026-08-22)) (did you mean 'num_layers'?)")
H.done()
