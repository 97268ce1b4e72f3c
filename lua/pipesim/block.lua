-- pipesim.block: what one Megatron-LM transformer block (and the embedding
-- and head) costs on one tensor-parallel rank, from its shape: the TP
-- collectives, the parameters and the activations kept (Korthikanti et al.
-- 2022). parallel.lua lowers model layers with these and re-exports them.
local roofline = require "pipesim.roofline_lazy"

local B = {}

-- Megatron-LM's collectives per transformer block and microbatch on one TP
-- group (megatron/core/tensor_parallel/layers.py and mappings.py), each
-- { op, bytes } with bytes the whole s*b*h activation (nccl-tests sizes,
-- as ps.collective takes them):
--   without SP: forward one all-reduce after attention's row-parallel
--   projection and one after the MLP's; backward one each for the
--   column-parallel inputs' gradients (attention and MLP);
--   with SP: forward all-gather before each column-parallel GEMM and
--   reduce-scatter after each row-parallel one; backward the gradient of
--   each reduce-scatter is an all-gather, of each all-gather a
--   reduce-scatter, and the sequence-parallel input is all-gathered again
--   for each column-parallel weight gradient (LinearWithGradAccumulation-
--   AndAsyncCommunication.backward): 4 all-gathers and 2 reduce-scatters.
function B.block_comm(s, t, sp)
    if t == 1 then return { fwd = {}, bwd = {} } end
    local bytes = roofline.DTYPE_BYTES[s.dtype] * s.seq * s.microbatch * s.hidden
    local AR, AG, RS = { op = "allreduce", bytes = bytes }, { op = "allgather", bytes = bytes },
        { op = "reduce_scatter", bytes = bytes }
    if not sp then
        return { fwd = { AR, AR }, bwd = { AR, AR } }
    end
    return { fwd = { AG, RS, AG, RS }, bwd = { AG, AG, RS, AG, AG, RS } }
end

-- Embedding: vocab-parallel, an all-reduce of its output (a reduce-scatter
-- with SP), nothing backward. Head: the column-parallel LM head's input is
-- all-gathered with SP (its backward a reduce-scatter plus the repeated
-- all-gather for the weight gradient) or copied without SP (backward an
-- all-reduce); the vocab-parallel cross-entropy all-reduces the logit max,
-- the target logit and the sum of exponentials (3 x 4 bytes per token).
local function embedding_comm(s, t, sp)
    if t == 1 then return { fwd = {}, bwd = {} } end
    local bytes = roofline.DTYPE_BYTES[s.dtype] * s.seq * s.microbatch * s.hidden
    return { fwd = { { op = sp and "reduce_scatter" or "allreduce", bytes = bytes } }, bwd = {} }
end

local function head_comm(s, t, sp)
    if t == 1 then return { fwd = {}, bwd = {} } end
    local e = roofline.DTYPE_BYTES[s.dtype]
    local bytes = e * s.seq * s.microbatch * s.hidden
    local ce = { op = "allreduce", bytes = 4 * s.seq * s.microbatch }
    if sp then
        return { fwd = { { op = "allgather", bytes = bytes }, ce, ce, ce },
                 bwd = { { op = "reduce_scatter", bytes = bytes }, { op = "allgather", bytes = bytes } } }
    end
    return { fwd = { ce, ce, ce }, bwd = { { op = "allreduce", bytes = bytes } } }
end
B.embedding_comm, B.head_comm = embedding_comm, head_comm

-- Parameters one TP rank holds (Megatron: column- and row-parallel weights
-- and the column-parallel biases split t ways; layernorm/RMSNorm weights
-- and the row-parallel output biases replicated; vocab-parallel embedding
-- and head; learned position embeddings replicated).
function B.block_params(s, t)
    local h, f = s.hidden, s.ffn_hidden
    local q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    local split = h * q + 2 * h * kv + q * h + (s.swiglu and 3 or 2) * h * f
    local repl = (s.norm == "layernorm" and 4 or 2) * h
    if s.bias then
        split = split + q + 2 * kv + (s.swiglu and 2 or 1) * f
        repl = repl + 2 * h
    end
    return split / t + repl
end

-- Parameters of a block's linear layers on one TP rank (the weights TE
-- runs in FP8): B.block_params without norms and biases.
function B.block_linear_params(s, t)
    local h, f = s.hidden, s.ffn_hidden
    local q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return (h * q + 2 * h * kv + q * h + (s.swiglu and 3 or 2) * h * f) / t
end

-- Activation bytes one block keeps per microbatch on one TP rank,
-- Korthikanti et al. 2022 Table 2 generalised term by term as in
-- models/transformer.lua: the norms' inputs, the QKV and MLP inputs and
-- the dropout masks are replicated on the TP ranks (10sbh for GPT) unless
-- sequence parallelism splits them; Q, K, V, the projection input, the MLP
-- intermediates (24sbh) and the s^2 attention tensors (5as^2b) are split.
-- GPT, 16-bit: sbh(10 + 24/t + 5as/(ht)); SP: sbh/t (34 + 5as/h);
-- selective drops the s^2 tensors (recomputed): 34sbh/t with SP.
function B.block_act_bytes(s, t, sp, selective)
    local e = roofline.DTYPE_BYTES[s.dtype]
    local b, n, h, f = s.microbatch, s.seq, s.hidden, s.ffn_hidden
    local a = s.heads
    local q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    local mask = s.dropout and 1 or 0
    local sb = n * b
    local repl = 2 * e * sb * h + e * sb * h + e * sb * h + 2 * mask * sb * h
    local split = e * sb * (q + kv) + e * sb * kv + e * sb * q + (s.swiglu and 3 or 2) * e * sb * f
    -- FP8: TE keeps the GEMM inputs in FP8 (models/fp8.lua act_delta)
    local dr, ds = roofline.fp8.act_delta(s)
    repl, split = repl + dr * sb, split + ds * sb
    local core = 0
    if s.flash_attention then
        core = 4 * a * sb
    elseif not selective then
        core = s.dropout and (2 * e + 1) * a * n * sb or e * a * n * sb
    end
    return repl / (sp and t or 1) + (split + core) / t
end

-- What a fully recomputed block keeps: its input, e*sbh (2sbh in 16 bits),
-- split by t with SP.
function B.block_kept_bytes(s, t, sp)
    return roofline.DTYPE_BYTES[s.dtype] * s.seq * s.microbatch * s.hidden / (sp and t or 1)
end

return B
