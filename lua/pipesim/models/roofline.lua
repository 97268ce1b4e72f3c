-- Roofline compute model of a transformer block, embedding and head on one
-- tensor-parallel rank: every GEMM at FLOPs / (peak x gemm_efficiency of
-- its shape), every memory-bound operation at max(bytes / (HBM x
-- mem_efficiency), flops / vector FLOP/s). Backward = B (input gradients,
-- incl. the memory-bound ops and attention) + W (weight gradients), each
-- GEMM of the backward as many FLOPs as its forward. Pure functions of a
-- normalized shape (models/transformer.lua), a device (clusters.lua) and
-- the parallel options; the parts are returned so tests can add them up.
local clusters = require "pipesim.clusters"

local M = {}

local DTYPE_BYTES = { bf16 = 2, fp16 = 2, fp32 = 4 }

-- Time of a (batched) GEMM C[m x n] = A[m x k] B[k x n], `batch` of them
-- in one kernel.
function M.gemm_time(dev, m, n, k, batch)
    batch = batch or 1
    local f = 2 * m * n * k * batch
    return f / (dev.flops * clusters.gemm_efficiency(dev, m, n, k, batch))
end

-- Time of a memory-bound kernel moving `bytes` and doing `flops` on the
-- vector units.
function M.mem_time(dev, bytes, flops)
    return math.max(bytes / (dev.hbm_bandwidth * dev.mem_efficiency),
                    (flops or 0) / dev.vector_flops)
end

-- Per-element costs of the memory-bound kernels, as Megatron-LM runs them
-- (megatron/core/transformer: fused bias-GeLU, fused bias-dropout-add,
-- fused scale-mask-softmax; column-parallel biases are added in the GEMM
-- epilogue). bytes(e) per element for e-byte activations and 1-byte
-- dropout masks; flops per element. A backward kernel reads the saved
-- tensor and the incoming gradient and writes the outgoing one: twice the
-- forward's traffic, as counted here.
local function norm_op(e) return 2 * e end              -- read x, write y
local function softmax_op(e) return 2 * e end           -- read scores, write probs
local function dropout_op(e) return 2 * e + 1 end       -- read, write, mask
local function bda_op(e, drop)                          -- x + residual (+ mask)
    return 3 * e + (drop and 1 or 0)
end
local FLOPS_NORM, FLOPS_SOFTMAX, FLOPS_DROPOUT, FLOPS_BDA = 8, 5, 2, 3
local FLOPS_GELU, FLOPS_SWIGLU, FLOPS_ROPE = 20, 10, 6

-- opt = { tp = t, sp = bool, selective = bool }. Returns
-- { fwd, bwd_input, bwd_weight, parts = { {name, pass, time, flops?,
-- bytes?}, ... } } where pass is "F", "B" or "W"; fwd = sum of the F
-- parts, and so on. selective adds the attention core's forward again to B
-- (Korthikanti et al. 2022 Sec. 5: it is recomputed in the backward).
function M.block(s, dev, opt)
    local t = opt.tp or 1
    local r = opt.sp and t or 1 -- sequence parallel splits norms and dropout
    local e = DTYPE_BYTES[s.dtype]
    local b, n, h, f = s.microbatch, s.seq, s.hidden, s.ffn_hidden
    local a, d = s.heads, s.head_dim
    local q, kv = a * d, s.kv_heads * d
    local T = b * n
    local parts = {}
    local out = { fwd = 0, bwd_input = 0, bwd_weight = 0, parts = parts }
    local function add(name, pass, time, extra)
        local p = { name = name, pass = pass, time = time }
        if extra then for k, v in pairs(extra) do p[k] = v end end
        parts[#parts + 1] = p
        if pass == "F" then out.fwd = out.fwd + time
        elseif pass == "B" then out.bwd_input = out.bwd_input + time
        else out.bwd_weight = out.bwd_weight + time end
    end
    -- a linear layer X[T x k] W[k x n]: F, then dX (B) and dW (W)
    local function linear(name, m, nn, k)
        local fl = 2 * m * nn * k
        add(name, "F", M.gemm_time(dev, m, nn, k), { flops = fl })
        add(name .. " dgrad", "B", M.gemm_time(dev, m, k, nn), { flops = fl })
        add(name .. " wgrad", "W", M.gemm_time(dev, k, nn, m), { flops = fl })
    end
    local function memop(name, elems, bytes_per, flops_per, bwd)
        local by, fl = elems * bytes_per, elems * flops_per
        add(name, "F", M.mem_time(dev, by, fl), { bytes = by })
        if bwd ~= false then
            add(name .. " bwd", "B", M.mem_time(dev, 2 * by, 2 * fl), { bytes = 2 * by })
        end
    end
    local heads = b * a / t -- attention heads (x microbatch) on this rank
    memop("norm1", T * h / r, norm_op(e), FLOPS_NORM)
    linear("qkv", T, (q + 2 * kv) / t, h)
    if s.bias then
        -- Megatron's ColumnParallelLinear adds the QKV bias in its own
        -- kernel (`output = output + bias` after the matmul in
        -- LinearWithGradAccumulationAndAsyncCommunication); its gradient
        -- is a reduction over the tokens (W)
        local el = T * (q + 2 * kv) / t
        add("qkv bias", "F", M.mem_time(dev, 2 * e * el, el), { bytes = 2 * e * el })
        add("qkv bias grad", "W", M.mem_time(dev, e * el, el), { bytes = e * el })
    end
    if s.position == "rope" then
        memop("rope", T * (q + kv) / t, 2 * e, FLOPS_ROPE)
    end
    -- attention core: scores Q K^T and context P V, batched over heads
    local core = {}
    if s.flash_attention then
        -- one fused kernel (Dao et al. 2022): both GEMMs' FLOPs, no s^2
        -- tensor in HBM; its backward recomputes the scores, then runs the
        -- four gradient GEMMs (dQ, dK, dP, dV)
        local fl = 4 * heads * n * n * d
        local tf = M.gemm_time(dev, n, n, d, 2 * heads)
        add("flash attention", "F", tf, { flops = fl })
        add("flash attention bwd", "B", M.gemm_time(dev, n, n, d, 5 * heads),
            { flops = 2.5 * fl })
        core[#core + 1] = tf
    else
        local fl = 2 * heads * n * n * d
        local ts = M.gemm_time(dev, n, n, d, heads)
        add("scores", "F", ts, { flops = fl })
        add("scores dQ dK", "B", 2 * M.gemm_time(dev, n, d, n, heads), { flops = 2 * fl })
        local sm = M.mem_time(dev, heads * n * n * softmax_op(e), heads * n * n * FLOPS_SOFTMAX)
        add("softmax", "F", sm, { bytes = heads * n * n * softmax_op(e) })
        add("softmax bwd", "B", 2 * sm, { bytes = 2 * heads * n * n * softmax_op(e) })
        core[#core + 1] = ts
        core[#core + 1] = sm
        if s.dropout then
            local dr = M.mem_time(dev, heads * n * n * dropout_op(e), heads * n * n * FLOPS_DROPOUT)
            add("attention dropout", "F", dr, { bytes = heads * n * n * dropout_op(e) })
            add("attention dropout bwd", "B", 2 * dr,
                { bytes = 2 * heads * n * n * dropout_op(e) })
            core[#core + 1] = dr
        end
        local tc = M.gemm_time(dev, n, d, n, heads)
        add("context", "F", tc, { flops = fl })
        add("context dP dV", "B", M.gemm_time(dev, n, n, d, heads) + M.gemm_time(dev, n, d, n, heads),
            { flops = 2 * fl })
        core[#core + 1] = tc
    end
    -- the context is laid out [s, b, heads, d] for the projection:
    -- dot_product_attention.py's context.permute(2, 0, 1, 3).contiguous(),
    -- a copy (and its gradient's copy back)
    memop("context permute", T * q / t, 2 * e, 0)
    linear("proj", T, h, q / t)
    memop("bias-dropout-add 1", T * h / r, bda_op(e, s.dropout), FLOPS_BDA)
    memop("norm2", T * h / r, norm_op(e), FLOPS_NORM)
    if s.swiglu then
        linear("gate", T, f / t, h)
        linear("up", T, f / t, h)
        memop("swiglu", T * f / t, 3 * e, FLOPS_SWIGLU)
        linear("down", T, h, f / t)
    else
        linear("fc1", T, f / t, h)
        memop("bias-gelu", T * f / t, 2 * e, FLOPS_GELU)
        linear("fc2", T, h, f / t)
    end
    memop("bias-dropout-add 2", T * h / r, bda_op(e, s.dropout), FLOPS_BDA)
    local core_time = 0
    for _, x in ipairs(core) do core_time = core_time + x end
    out.attention_core = core_time
    if opt.selective then
        add("selective recompute", "B", core_time)
    end
    return out
end

-- Embedding on one TP rank (vocab-parallel, Megatron's
-- VocabParallelEmbedding): the masked lookup writes the full s*b*h output
-- (read rows, write output), learned positions are added, then dropout
-- (split by t under sequence parallelism). Its backward is the weight
-- gradient (a scatter-add of the output gradient): W, no B.
function M.embedding(s, dev, opt)
    local t = opt.tp or 1
    local r = opt.sp and t or 1
    local e = DTYPE_BYTES[s.dtype]
    local T, h = s.microbatch * s.seq, s.hidden
    local by = 2 * e * T * h
    if s.position == "learned" then by = by + 3 * e * T * h end
    local fwd = M.mem_time(dev, by, T * h)
    local w = M.mem_time(dev, 2 * by, 2 * T * h)
    local bwd_input = 0
    if s.dropout then
        local dr = T * h / r * dropout_op(e)
        fwd = fwd + M.mem_time(dev, dr, T * h / r * FLOPS_DROPOUT)
        bwd_input = M.mem_time(dev, 2 * dr, 2 * T * h / r * FLOPS_DROPOUT)
    end
    return { fwd = fwd, bwd_input = bwd_input, bwd_weight = w }
end

-- Head on one TP rank: final norm, the vocab-parallel LM head GEMM
-- (s*b x V/t x h) and the vocab-parallel cross-entropy over fp32 logits
-- (Megatron's vocab_parallel_cross_entropy: read the e-byte logits, write
-- and reread fp32 exponentials, normalise: e + 16 bytes per logit forward;
-- its backward reads the fp32 softmax and writes the gradient, 4 + e).
function M.head(s, dev, opt)
    local t = opt.tp or 1
    local r = opt.sp and t or 1
    local e = DTYPE_BYTES[s.dtype]
    local T, h, V = s.microbatch * s.seq, s.hidden, s.vocab
    local norm = M.mem_time(dev, T * h / r * norm_op(e), T * h / r * FLOPS_NORM)
    local ce_f = M.mem_time(dev, T * V / t * (e + 16), T * V / t * 10)
    local ce_b = M.mem_time(dev, T * V / t * (4 + e), T * V / t * 2)
    return {
        fwd = norm + M.gemm_time(dev, T, V / t, h) + ce_f,
        bwd_input = 2 * norm + M.gemm_time(dev, T, h, V / t) + ce_b,
        bwd_weight = M.gemm_time(dev, h, V / t, T),
    }
end

-- The optimizer step as Megatron-LM's MixedPrecisionOptimizer.step runs
-- it (megatron/core/optimizer/optimizer.py), bytes of HBM traffic per
-- parameter of the rank (gradients in fp32 main_grad, fused into the
-- weight-gradient GEMMs):
--   fp16 only: _unscale_main_grads_and_check_for_nan, read + write 4 + 4
--   clip_grad_norm's norm (multi_tensor_l2norm), read 4 (the rescale runs
--     only when the norm exceeds the clip value, not counted)
--   Adam (fused): read the fp32 master weight, gradient and both moments,
--     write master and moments: 16 + 12
--   _copy_main_params_to_model_params: read 4, write the 16-bit weight 2
-- 38 bytes with bf16 (no loss scaling), 46 with fp16; fp32 training keeps no
-- master copy: norm 4 + Adam 28 = 32. ZeRO-1 divides by d in the core.
function M.optimizer_bytes(dtype)
    if dtype == "fp32" then return 32 end
    return (dtype == "fp16" and 8 or 0) + 4 + 28 + 6
end

function M.optimizer_time(dev, params, dtype)
    local by = M.optimizer_bytes(dtype or "bf16")
    return M.mem_time(dev, params * by, params * 12)
end

M.DTYPE_BYTES = DTYPE_BYTES

return M
