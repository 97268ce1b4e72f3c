-- Roofline compute model of a transformer block, embedding and head on one
-- tensor-parallel rank: every GEMM at FLOPs / (peak x gemm_efficiency of
-- its shape), every memory-bound operation at max(bytes / (HBM x
-- mem_efficiency), flops / vector FLOP/s). Backward = B (input gradients,
-- incl. the memory-bound ops and attention) + W (weight gradients), each
-- GEMM of the backward as many FLOPs as its forward. Pure functions of a
-- normalized shape (models/transformer.lua), a device (clusters.lua) and
-- the parallel options; the parts are returned so tests can add them up.
local clusters = require "pipesim.clusters"
local fp8 = require "pipesim.models.fp8"

local M = {}

local DTYPE_BYTES = { bf16 = 2, fp16 = 2, fp32 = 4 }
-- bytes of a main_grad entry (Megatron's gradient buffer): fp32 but for
-- fp16 training (M.embedding)
M.MAIN_GRAD_BYTES = { bf16 = 4, fp16 = 2, fp32 = 4 }
-- fp32 bytes per logit of the cross-entropy's kernels beyond the e-byte
-- logit read (forward) or gradient write (backward) (M.head)
M.CE_FWD_BYTES = 4 + 4 + 8 + 8 + 4 + 8
M.CE_BWD_BYTES = 8 + 4
-- the same with Megatron's fused cross-entropy (--cross-entropy-loss-
-- fusion, megatron/core/fusions/fused_cross_entropy.py: jit-fused
-- functions of the same ops, fewer passes): calculate_logits_max's
-- .float() reads e and writes 4, its max reads 4; calculate_predicted_
-- logits reads the fp32 logits, subtracts the max in place and writes
-- exp_logits (4 + 4 + 4); calculate_cross_entropy_loss's division reads
-- and writes 4 + 4: 28 + e. Backward: calculate_gradients reads the saved
-- softmax (4) and writes the e-byte gradient: 4 + e.
M.CE_FUSED_FWD_BYTES = 4 + 4 + 4 + 4 + 4 + 4 + 4
M.CE_FUSED_BWD_BYTES = 4
-- Transformer Engine's (--cross-entropy-fusion-impl te: transformer_engine/
-- pytorch/triton/cross_entropy.py): online_softmax_kernel reads the
-- logits, cross_entropy_kernel reads them again and writes the gradient
-- in the logits' dtype (e + e beyond the first read); the backward's
-- element_mul_kernel scales that gradient in place (read e, write e:
-- Megatron's per-token loss makes grad_output no scalar 1).
local function ce_bytes(s, e)
    if s.ce_fusion == "te" then return 2 * e, e end
    if s.ce_fusion then return M.CE_FUSED_FWD_BYTES, M.CE_FUSED_BWD_BYTES end
    return M.CE_FWD_BYTES, M.CE_BWD_BYTES
end
M.ce_bytes = ce_bytes

-- Time of a (batched) GEMM C[m x n] = A[m x k] B[k x n], `batch` of them
-- in one kernel, of e-byte operands (default 2): the roofline's two roofs
-- (Williams, Waterman and Patterson 2009, "Roofline"), the tensor cores at
-- gemm_efficiency of the shape or HBM moving A, B and C once. Only thin
-- GEMMs meet the second: the attention's scores and context (k or n =
-- head_dim, an s x s output or input per head: ~head_dim FLOPs per byte,
-- below an A100's 312/2.04 = 153 or an H100's 295). kind = "tensor" or
-- "block" (models/fp8.lua): an FP8 GEMM at the device's FP8 peak and
-- efficiency of that kind, 1-byte operands and an e-byte (BF16) output.
function M.gemm_time(dev, m, n, k, batch, e, kind)
    batch = batch or 1
    e = e or 2
    local f = 2 * m * n * k * batch
    local ea = kind and 1 or e
    local by = batch * (ea * (m * k + k * n) + e * m * n)
    local peak = kind and dev.fp8_flops or dev.flops
    return math.max(f / (peak * clusters.gemm_efficiency(dev, m, n, k, batch, kind)),
                    by / (dev.hbm_bandwidth * dev.mem_efficiency))
end

-- Time of a memory-bound kernel moving `bytes` and doing `flops` on the
-- vector units.
function M.mem_time(dev, bytes, flops)
    return math.max(bytes / (dev.hbm_bandwidth * dev.mem_efficiency),
                    (flops or 0) / dev.vector_flops)
end

-- Per-element bytes of the memory-bound kernels, forward and backward,
-- as Megatron-LM runs them (megatron/core/transformer and the legacy
-- megatron/model: fused bias-GeLU, fused bias-dropout-add, fused
-- scale-mask-softmax; column-parallel biases are added in the GEMM
-- epilogue), for e-byte activations and 1-byte dropout masks. Each
-- backward is charged what its kernel reads and writes, not twice its
-- forward:
--   layernorm / RMSNorm: forward reads x, writes y (2e). Backward reads
--     x and dy, writes dx (3e): apex.contrib.layer_norm's ln_bwd_kernel
--     (apex/contrib/csrc/layer_norm/ln_bwd_kernels.cuh, one pass over
--     each row; dgamma/dbeta are per-CTA partials of h elements),
--     Megatron's default since a2fdcdf (2021-10, "persistent fused layer
--     norm", megatron/model/fused_layer_norm.py FastLayerNormFN), and
--     Transformer Engine's layernorm/rmsnorm backward the same way.
--   causal scale-mask-softmax: Megatron's scaled_upper_triang_masked_
--     softmax (megatron/fused_kernels/scaled_upper_triang_masked_softmax.h,
--     as of 040eac9): the forward loads only the row's first local_seq =
--     row + 1 elements (the causal half, e/2 on average) and writes the
--     whole row (e): 1.5e. The backward loads the gradient and the saved
--     output over the same half (e/2 + e/2) and writes the whole row of
--     input gradients (e): 2e.
--   dropout (attention, embedding): forward reads x, writes y and the
--     bool mask (2e + 1); backward is PyTorch's masked_scale (aten/src/
--     ATen/native/cuda/Dropout.cu, dropout_backward: grad * mask * scale):
--     reads the gradient and the mask, writes one gradient (2e + 1).
--   bias-dropout-add: forward reads x and the residual, writes the sum
--     (and the mask): 3e (+ 1). Backward: the residual's gradient is the
--     incoming one (no kernel); with dropout, x's is masked_scale (2e + 1);
--     the row-parallel bias's gradient is a reduction reading it (e, W).
--   residual gradient: a block's input and its attention output each
--     feed a norm and a residual add (ParallelTransformerLayer.forward:
--     `residual = hidden_states`), so autograd adds the two incoming
--     gradients (torch/csrc/autograd/input_buffer.cpp accumulate: old +
--     new): read 2e, write e, twice per block.
--   bias-GeLU: forward reads the input, writes the output (2e); backward
--     is bias_gelu_back (megatron/model/fused_bias_gelu.py GeLUFunction):
--     reads the gradient and the saved input, writes one gradient (3e);
--     the bias's gradient is autograd's sum_to of that gradient (e, W).
--   SwiGLU (megatron/core/fusions/fused_bias_swiglu.py): forward reads
--     both halves, writes one (3e per output element); swiglu_back reads
--     the gradient and both halves, writes both halves' gradients (5e).
--   RoPE (Transformer Engine's fused_rope, apply_rope_fusion): forward
--     and backward each read one tensor and write one (2e).
--   permute copy (the context's [s, b, heads, d] layout): its gradient is
--     the copy back (2e).
local function norm_op(e) return 2 * e end              -- read x, write y
local function norm_bwd(e) return 3 * e end             -- read x, dy; write dx
local function softmax_op(e) return 1.5 * e end        -- read the causal half, write all
local function softmax_bwd(e) return 2 * e end          -- read dy, y (half); write dx
local function dropout_op(e) return 2 * e + 1 end       -- read, write, mask
local function dropout_bwd(e) return 2 * e + 1 end      -- read dy, mask; write dx
local function bda_op(e, drop)                          -- x + residual (+ mask)
    return 3 * e + (drop and 1 or 0)
end
local function bda_bwd(e, drop) return drop and dropout_bwd(e) or 0 end
local FLOPS_NORM, FLOPS_SOFTMAX, FLOPS_DROPOUT, FLOPS_BDA = 8, 5, 2, 3
local FLOPS_GELU, FLOPS_SWIGLU, FLOPS_ROPE, FLOPS_SQRELU = 20, 10, 6, 2

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
    -- FP8 (models/fp8.lua): the linear layers' GEMMs at the FP8 peak, and
    -- the quantisation of their inputs (forward) and output gradients
    -- (backward) as memory-bound kernels
    local fq = fp8.plan(s, dev)
    local gk = fq and fq.gemm or nil
    local wk = fq and not fq.wgrad_bf16 and gk or nil
    -- a linear layer X[T x k] W[k x n]: F, then dX (B) and dW (W); under
    -- FP8, qin elements of its input are quantised before F (with sequence
    -- parallelism the local shard, before TE's FP8 all-gather) and qgrad
    -- of its output gradient before B (0: shared with a GEMM before it)
    local function linear(name, m, nn, k, qin, qgrad)
        local fl = 2 * m * nn * k
        if fq and qin > 0 then
            local by = qin * fq.quant
            add(name .. " quantize", "F", M.mem_time(dev, by, 3 * qin), { bytes = by })
        end
        add(name, "F", M.gemm_time(dev, m, nn, k, 1, nil, gk), { flops = fl })
        if fq and qgrad > 0 then
            local by = qgrad * fq.quant
            add(name .. " grad quantize", "B", M.mem_time(dev, by, 3 * qgrad), { bytes = by })
        end
        add(name .. " dgrad", "B", M.gemm_time(dev, m, k, nn, 1, nil, gk), { flops = fl })
        add(name .. " wgrad", "W", M.gemm_time(dev, k, nn, m, 1, nil, wk), { flops = fl })
    end
    -- a memory-bound kernel over `elems` elements: its forward moves
    -- fwd_per bytes per element, its backward bwd_per (the table above;
    -- none when 0), at twice the forward's vector FLOPs
    local function memop(name, elems, fwd_per, bwd_per, flops_per)
        local by, fl = elems * fwd_per, elems * flops_per
        add(name, "F", M.mem_time(dev, by, fl), { bytes = by })
        if bwd_per > 0 then
            local bb = elems * bwd_per
            add(name .. " bwd", "B", M.mem_time(dev, bb, 2 * fl), { bytes = bb })
        end
    end
    -- autograd's sum of the two gradients reaching a residual branch
    local function residual_grad(name, elems)
        add(name, "B", M.mem_time(dev, 3 * e * elems, elems), { bytes = 3 * e * elems })
    end
    -- a bias's gradient: a reduction over the tokens reading the output
    -- gradient (sum_to in autograd), a weight gradient
    local function bias_grad(name, elems)
        add(name, "W", M.mem_time(dev, e * elems, elems), { bytes = e * elems })
    end
    local heads = b * a / t -- attention heads (x microbatch) on this rank
    residual_grad("residual grad 1", T * h / r)
    memop("norm1", T * h / r, norm_op(e), norm_bwd(e), FLOPS_NORM)
    linear("qkv", T, (q + 2 * kv) / t, h, T * h / r, T * (q + 2 * kv) / t)
    if s.bias then
        -- Megatron's ColumnParallelLinear adds the QKV bias in its own
        -- kernel (`output = output + bias` after the matmul in
        -- LinearWithGradAccumulationAndAsyncCommunication); its gradient
        -- is a reduction over the tokens (W)
        local el = T * (q + 2 * kv) / t
        add("qkv bias", "F", M.mem_time(dev, 2 * e * el, el), { bytes = 2 * e * el })
        bias_grad("qkv bias grad", el)
    end
    if s.position == "rope" then
        memop("rope", T * (q + kv) / t, 2 * e, 2 * e, FLOPS_ROPE)
    end
    -- attention core: scores Q K^T and context P V, batched over heads
    local core = {}
    if s.flash_attention then
        -- one fused kernel (Dao et al. 2022): no s^2 tensor in HBM, so
        -- its bytes are Q, K, V and the output (forward), and those, the
        -- output's gradient and dQ, dK, dV (backward); its backward
        -- recomputes the scores, then runs the four gradient GEMMs (dQ,
        -- dK, dP, dV): 2.5x the forward's FLOPs. GPT training is causal,
        -- so the kernel skips the blocks above the diagonal: it does half
        -- of the s^2 work (FlashAttention's benchmark counts causal FLOPs
        -- as 4 s^2 d heads / 2), at the device's measured attention rate
        -- (clusters.lua attention_fwd / attention_bwd, counted the same
        -- way; gemm_max when the device has none). Until this change the
        -- kernel was charged the full s^2 FLOPs as batched GEMMs whose
        -- s x s output went through HBM, which put it on the memory roof
        -- (363 TFLOP/s on H100 for the 1.7B model's shape, 2.9x slower
        -- than cuDNN's measured kernel).
        local fl = 4 * heads * n * n * d
        local causal = fl / 2
        local kvh = b * s.kv_heads / t -- key/value heads on this rank
        local io = e * n * d * (2 * heads + 2 * kvh)
        local ef = dev.attention_fwd or dev.gemm_max
        local eb = dev.attention_bwd or dev.gemm_max
        local bw = dev.hbm_bandwidth * dev.mem_efficiency
        local tf = math.max(causal / (dev.flops * ef), io / bw) + dev.gemm_overhead
        local tb = math.max(2.5 * causal / (dev.flops * eb), 2 * io / bw) + dev.gemm_overhead
        add("flash attention", "F", tf, { flops = causal })
        add("flash attention bwd", "B", tb, { flops = 2.5 * causal })
        core[#core + 1] = tf
    else
        local fl = 2 * heads * n * n * d
        local ts = M.gemm_time(dev, n, n, d, heads)
        add("scores", "F", ts, { flops = fl })
        add("scores dQ dK", "B", 2 * M.gemm_time(dev, n, d, n, heads), { flops = 2 * fl })
        local el = heads * n * n
        local sm = M.mem_time(dev, el * softmax_op(e), el * FLOPS_SOFTMAX)
        add("softmax", "F", sm, { bytes = el * softmax_op(e) })
        add("softmax bwd", "B", M.mem_time(dev, el * softmax_bwd(e), 2 * el * FLOPS_SOFTMAX),
            { bytes = el * softmax_bwd(e) })
        core[#core + 1] = ts
        core[#core + 1] = sm
        if s.dropout then
            local dr = M.mem_time(dev, el * dropout_op(e), el * FLOPS_DROPOUT)
            add("attention dropout", "F", dr, { bytes = el * dropout_op(e) })
            add("attention dropout bwd", "B",
                M.mem_time(dev, el * dropout_bwd(e), 2 * el * FLOPS_DROPOUT),
                { bytes = el * dropout_bwd(e) })
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
    memop("context permute", T * q / t, 2 * e, 2 * e, 0)
    linear("proj", T, h, q / t, T * q / t, T * h / r)
    memop("bias-dropout-add 1", T * h / r, bda_op(e, s.dropout), bda_bwd(e, s.dropout), FLOPS_BDA)
    if s.bias then bias_grad("proj bias grad", T * h / r) end
    residual_grad("residual grad 2", T * h / r)
    memop("norm2", T * h / r, norm_op(e), norm_bwd(e), FLOPS_NORM)
    if s.swiglu then
        -- gate and up are TE's one fc1 GEMM: one quantised input, one
        -- quantised gradient of both halves
        linear("gate", T, f / t, h, T * h / r, 2 * T * f / t)
        linear("up", T, f / t, h, 0, 0)
        memop("swiglu", T * f / t, 3 * e, 5 * e, FLOPS_SWIGLU)
        linear("down", T, h, f / t, T * f / t, T * h / r)
    else
        linear("fc1", T, f / t, h, T * h / r, T * f / t)
        -- GeLU with its bias fused (bias_gelu), or squared ReLU
        -- (megatron/core/activations.py squared_relu: torch.pow(F.relu(x),
        -- 2) under jit_fuser, one fused kernel each way): the same bytes
        if s.squared_relu then
            -- with a bias, Megatron-Core's MLP adds it in a kernel of its
            -- own first (bias_activation_fusion fuses GeLU and SwiGLU only)
            if s.bias then memop("fc1 bias", T * f / t, 3 * e, 0, 1) end
            memop("squared relu", T * f / t, 2 * e, 3 * e, FLOPS_SQRELU)
        else
            memop("bias-gelu", T * f / t, 2 * e, 3 * e, FLOPS_GELU)
        end
        if s.bias then bias_grad("fc1 bias grad", T * f / t) end
        linear("fc2", T, h, f / t, T * f / t, T * h / r)
    end
    memop("bias-dropout-add 2", T * h / r, bda_op(e, s.dropout), bda_bwd(e, s.dropout), FLOPS_BDA)
    if s.bias then bias_grad("fc2 bias grad", T * h / r) end
    local core_time = 0
    for _, x in ipairs(core) do core_time = core_time + x end
    out.attention_core = core_time
    if opt.selective then
        add("selective recompute", "B", core_time)
    end
    return out
end

-- Transformer Engine's userbuffers overlap of a block's TP collectives
-- with its GEMMs (Megatron's --tp-comm-overlap, which needs sequence
-- parallelism), with TE's default configuration (transformer_engine/
-- pytorch/module/base.py initialize_ub, used when Megatron is given no
-- --tp-comm-overlap-cfg): three methods, each GEMM's own collective.
--   ring_exchange (qkv and fc1 forward after the all-gather of their
--     input, proj and fc2 data gradients after the all-gather of the
--     output gradient): the GEMM runs as t chunks of M/t rows while the
--     next chunk arrives by peer-to-peer copy on the copy engines
--     (use_ce = True, no SMs): (t-1) steps of max(chunk GEMM, one chunk's
--     transfer), then the last chunk's GEMM.
--   pipeline (proj and fc2 forward, then the reduce-scatter of their
--     output): num_splits = 4 chunks; chunk i's reduce-scatter, a kernel
--     on num_sm = 16 SMs, runs beside chunk i+1's GEMM; the first GEMM
--     chunk and the last reduce-scatter are exposed.
--   bulk (qkv and fc1 data gradients beside the all-gather of the input
--     their weight gradients need; qkv and fc1 weight gradients beside
--     the reduce-scatter of the data gradient): the whole collective, on
--     16 SMs, beside the whole GEMM.
-- A GEMM beside a kernel on k of the device's S SMs runs at (S-k)/S of
-- its speed while that kernel runs: max(c, g + c k/S). Each chunk GEMM
-- pays the launch overhead (gemm_overhead) again. A collective's chunk
-- takes its share of the collective's time. Returns the seconds each pass
-- (F, B, W) takes beyond its GEMMs alone; a device without `sms` pays no
-- SM contention.
local TE_COMM_SMS, TE_SPLITS = 16, 4

local function beside(dev, g, c)
    local share = dev.sms and TE_COMM_SMS / dev.sms or 0
    if c * (1 - share) >= g then return c end
    return g + c * share
end

local function chunked(dev, g, n)
    local oh = math.min(dev.gemm_overhead, g)
    return (g - oh) / n + oh
end

local function ring_exchange(dev, g, c, t)
    local gc = chunked(dev, g, t)
    return (t - 1) * math.max(gc, c / (t - 1)) + gc
end

local function pipeline(dev, g, c)
    local gc, rc = chunked(dev, g, TE_SPLITS), c / TE_SPLITS
    return gc + (TE_SPLITS - 1) * beside(dev, gc, rc) + rc
end

-- parts: M.block's parts; ag, rs: the seconds of one all-gather and one
-- reduce-scatter of the block's s*b*h activation on the TP group.
function M.te_overlap(dev, parts, t, ag, rs)
    local g = {}
    for _, p in ipairs(parts) do g[p.name] = p.time end
    local function gemm(a, b)
        local x = (g[a] or 0) + (b and g[b] or 0)
        return x
    end
    -- a SwiGLU MLP's gate and up projections are TE's one fc1 GEMM
    local fc1 = g.fc1 and "fc1" or "gate"
    local up = g.fc1 and nil or "up"
    local down = g.fc2 and "fc2" or "down"
    local function dg(n) return n .. " dgrad" end
    local function wg(n) return n .. " wgrad" end
    local f, b, w = 0, 0, 0
    local x
    x = gemm("qkv"); f = f + ring_exchange(dev, x, ag, t) - x
    x = gemm("proj"); f = f + pipeline(dev, x, rs) - x
    x = gemm(fc1, up); f = f + ring_exchange(dev, x, ag, t) - x
    x = gemm(down); f = f + pipeline(dev, x, rs) - x
    x = gemm(dg(down)); b = b + ring_exchange(dev, x, ag, t) - x
    x = gemm(dg(fc1), up and dg(up)); b = b + beside(dev, x, ag) - x
    x = gemm(dg("proj")); b = b + ring_exchange(dev, x, ag, t) - x
    x = gemm(dg("qkv")); b = b + beside(dev, x, ag) - x
    x = gemm(wg(fc1), up and wg(up)); w = w + beside(dev, x, rs) - x
    x = gemm(wg("qkv")); w = w + beside(dev, x, rs) - x
    return f, b, w
end

-- Embedding on one TP rank (vocab-parallel, Megatron's
-- VocabParallelEmbedding): the masked lookup writes the full s*b*h output
-- (read rows, write output), learned positions are added, then dropout
-- (split by t under sequence parallelism). Its backward is the weight
-- gradient, W (no B but the dropout's): PyTorch's embedding_dense_backward
-- (aten/src/ATen/native/cuda/Embedding.cu, embedding_backward_cuda_kernel)
-- zero-fills the table's gradient (e per entry of the V/t x h table on
-- this rank), reads the output gradient and writes the summed rows (at
-- most one per token): e*V/t*h + 2e*T*h; learned positions the same over
-- their max_positions x h table (the add's gradient is the incoming one).
-- Then Megatron's DDP hook adds that gradient to the parameter's main_grad
-- in the gradient buffer, every microbatch (megatron/core/distributed/
-- distributed_data_parallel.py _make_param_hook, as of 937571cfd4:
-- `param.main_grad.add_(param.grad.data)`; the legacy megatron/model/
-- distributed.py of 2021 the same): read the e-byte gradient, read and
-- write the g-byte main_grad, e + 2g per table entry. g = 4 (fp32) but for
-- fp16, whose buffer takes the parameter's dtype (M.MAIN_GRAD_BYTES, as
-- models/megatron.lua's grad_bytes). The linear layers' weight gradients
-- need no such pass: gradient_accumulation_fusion writes them into
-- main_grad from the GEMM.
function M.embedding(s, dev, opt)
    local t = opt.tp or 1
    local r = opt.sp and t or 1
    local e = DTYPE_BYTES[s.dtype]
    local T, h = s.microbatch * s.seq, s.hidden
    local by = 2 * e * T * h
    if s.position == "learned" then by = by + 3 * e * T * h end
    local fwd = M.mem_time(dev, by, T * h)
    local acc = e + 2 * M.MAIN_GRAD_BYTES[s.dtype] -- main_grad.add_ per table entry
    local wb = (e + acc) * s.vocab / t * h + 2 * e * T * h
    if s.position == "learned" then wb = wb + (e + acc) * s.max_positions * h + 2 * e * T * h end
    local w = M.mem_time(dev, wb, 2 * T * h)
    local bwd_input = 0
    if s.dropout then
        local el = T * h / r
        fwd = fwd + M.mem_time(dev, el * dropout_op(e), el * FLOPS_DROPOUT)
        bwd_input = M.mem_time(dev, el * dropout_bwd(e), 2 * el * FLOPS_DROPOUT)
    end
    return { fwd = fwd, bwd_input = bwd_input, bwd_weight = w }
end

-- Head on one TP rank: final norm, the vocab-parallel LM head GEMM
-- (s*b x V/t x h) and the vocab-parallel cross-entropy over fp32 logits,
-- charged kernel by kernel as Megatron runs it (megatron/core/
-- tensor_parallel/cross_entropy.py as of 937571cfd4, the unfused default
-- without --cross-entropy-loss-fusion; the 2021 megatron/mpu/
-- cross_entropy.py runs the same ops on output.float()), per logit:
--   forward: .float() reads e, writes 4; max reads 4; the in-place
--     subtraction of the max reads 4, writes 4; exp (out= in place) 4 + 4;
--     sum 4; div_ by the sum 4 + 4: CE_FWD_BYTES + e (38 for bf16)
--   backward: grad_input.mul_(grad_output) 4 + 4, then .float()'s
--     gradient reads the fp32 gradient and writes e: CE_BWD_BYTES + e (14)
-- (the target gather and the scatter of -1 touch one logit per token,
-- not counted). Until this change: e + 16 forward and 4 + e backward.
-- The final norm's backward reads x and dy and writes dx (3e, as a
-- block's norms).
function M.head(s, dev, opt)
    local t = opt.tp or 1
    local r = opt.sp and t or 1
    local e = DTYPE_BYTES[s.dtype]
    local T, h, V = s.microbatch * s.seq, s.hidden, s.vocab
    local el = T * h / r
    local norm = M.mem_time(dev, el * norm_op(e), el * FLOPS_NORM)
    local norm_b = M.mem_time(dev, el * norm_bwd(e), 2 * el * FLOPS_NORM)
    local cf, cb = ce_bytes(s, e)
    local ce_f = M.mem_time(dev, T * V / t * (e + cf), T * V / t * 10)
    local ce_b = M.mem_time(dev, T * V / t * (e + cb), T * V / t * 2)
    -- the output layer stays BF16 but with --fp8-output-proj under the
    -- mxfp8 recipe (models/fp8.lua): then its input and its output's
    -- gradient are quantised, its GEMMs block-scaled FP8
    local fq = s.fp8_head and fp8.plan(s, dev) or nil
    local gk = fq and fq.gemm or nil
    local qf = fq and M.mem_time(dev, el * fq.quant, 3 * el) or 0
    local qb = fq and M.mem_time(dev, T * V / t * fq.quant, 3 * T * V / t) or 0
    return {
        fwd = norm + qf + M.gemm_time(dev, T, V / t, h, 1, nil, gk) + ce_f,
        bwd_input = norm_b + qb + M.gemm_time(dev, T, h, V / t, 1, nil, gk) + ce_b,
        bwd_weight = M.gemm_time(dev, h, V / t, T, 1, nil, fq and not fq.wgrad_bf16 and gk or nil),
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
M.fp8 = fp8

return M
