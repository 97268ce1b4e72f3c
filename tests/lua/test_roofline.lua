-- The roofline compute model: a block's time is the sum of its parts,
-- each part matches its closed form (a GEMM costs 2mnk / (peak x gemm_max)
-- + gemm_overhead, or its operands' bytes / (HBM x mem_efficiency) when
-- that is longer; a memory-bound op the bytes its kernel moves, forward
-- and backward apart, / (HBM x mem_efficiency)), the
-- GEMM curve rises and saturates, B and W add up to the backward, and a
-- one-stage run's makespan is the layers' roofline times plus the default
-- optimizer step. Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local roofline = require "pipesim.models.roofline"

local dev = ps.clusters.device("A100")
local peak, emax, t0 = dev.flops, dev.gemm_max, dev.gemm_overhead
local bw = dev.hbm_bandwidth * dev.mem_efficiency

-- the curve: rises with size, saturates below gemm_max
local prev = 0
for _, n in ipairs { 128, 256, 512, 1024, 2048, 4096, 8192, 16384 } do
    local e = ps.clusters.gemm_efficiency(dev, n, n, n)
    H.check(e > prev and e < emax, string.format("efficiency(%d^3) = %.4f rises, < %.3f", n, e, emax))
    prev = e
end
H.check(ps.clusters.gemm_efficiency(dev, 16384, 16384, 16384) > 0.99 * emax, "saturates")

local function gemm(m, n, k, batch)
    batch = batch or 1
    return math.max(2 * m * n * k * batch / (peak * emax) + t0,
        2 * batch * (m * k + k * n + m * n) / bw)
end
local function mem(bytes) return bytes / bw end -- memory-bound (vector FLOPs far below)

-- GPT block, 16-bit, no TP: b = 2, s = 1024, h = 2048, a = 16 (d = 128),
-- f = 8192, dropout and biases, no flash attention
local s = ps.models.formulas.normalize { layers = 1, hidden = 2048, heads = 16, seq = 1024,
    vocab = 1000, microbatch = 2 }
local T, h, f, n, a, d = 2048, 2048, 8192, 1024, 16, 128
local hb = 2 * a -- heads x microbatch
-- bytes per element (e = 2): norm 4 forward, 6 backward (read x, dy;
-- write dx); causal softmax 3 (the lower half read, all written) and 4
-- (dy and y over the half, dx written); dropout 5 and 5 (dy and the mask
-- read, dx written); bias-dropout-add 7 and 5 (the residual's gradient
-- is the incoming one); GeLU 4 and 6; permute 4 and 4; the two residual
-- branch points' gradient sums 6 each; bias gradients 2 (W)
local fwd = mem(T * h * 4) + gemm(T, 3 * h, h) + mem(T * 3 * h * 4) -- norm1, QKV, its bias
    + gemm(n, n, d, hb) + mem(hb * n * n * 3) + mem(hb * n * n * 5) -- scores, softmax, dropout
    + gemm(n, d, n, hb) + mem(T * h * 4) + gemm(T, h, h)            -- context, permute, proj
    + mem(T * h * 7) + mem(T * h * 4)                               -- bias-dropout-add, norm2
    + gemm(T, f, h) + mem(T * f * 4) + gemm(T, h, f)                -- fc1, GeLU, fc2
    + mem(T * h * 7)                                                -- bias-dropout-add
local wgrad = gemm(h, 3 * h, T) + gemm(h, h, T) + gemm(h, f, T) + gemm(f, h, T)
    + mem(T * 3 * h * 2) + mem(T * h * 2) + mem(T * f * 2) + mem(T * h * 2) -- bias gradients
local bwd_in = 2 * mem(T * h * 6) + 2 * mem(T * h * 6)             -- residual sums, norms
    + gemm(T, h, 3 * h) + 2 * gemm(n, d, n, hb)                     -- QKV dgrad, dQ dK
    + mem(hb * n * n * 4) + mem(hb * n * n * 5)                     -- softmax, dropout
    + gemm(n, n, d, hb) + gemm(n, d, n, hb) + mem(T * h * 4)        -- dP dV, permute
    + gemm(T, h, h) + 2 * mem(T * h * 5)                            -- proj, bias-dropout-adds
    + gemm(T, h, f) + mem(T * f * 6) + gemm(T, f, h)                -- fc1, GeLU, fc2
local b = roofline.block(s, dev, { tp = 1 })
H.near(b.fwd, fwd, 1e-9, "block forward = sum of its hand-computed parts")
H.near(b.bwd_input, bwd_in, 1e-9, "block B = sum of its hand-computed parts")
H.near(b.bwd_weight, wgrad, 1e-9, "block W = its four weight-gradient GEMMs + four bias gradients")
-- the backward kernels' own bytes, not twice their forward's
local bytes = {}
for _, p in ipairs(b.parts) do bytes[p.name] = p.bytes end
H.near(bytes["softmax bwd"], hb * n * n * 4, 1e-12, "softmax backward: dy and y (causal half), dx")
H.near(bytes["attention dropout bwd"], hb * n * n * 5, 1e-12, "dropout backward: dy, mask, dx")
H.near(bytes["norm1 bwd"], T * h * 6, 1e-12, "layernorm backward: x, dy, dx")
H.near(bytes["bias-gelu bwd"], T * f * 6, 1e-12, "bias-GeLU backward: dy, x, dx")
-- a thin GEMM (the attention's, k = head_dim) meets the memory roof
H.near(roofline.gemm_time(dev, n, n, 64, 32), 2 * 32 * (n * 64 * 2 + n * n) / bw, 1e-12,
    "scores with head_dim 64: HBM-bound")
H.near(roofline.gemm_time(dev, 8192, 8192, 8192), 2 * 8192 ^ 3 / (peak * emax) + t0, 1e-12,
    "8192^3: compute-bound")
local sum = { F = 0, B = 0, W = 0 }
for _, p in ipairs(b.parts) do sum[p.pass] = sum[p.pass] + p.time end
H.near(sum.F, b.fwd, 1e-12, "parts add up (F)")
H.near(sum.B + sum.W, b.bwd_input + b.bwd_weight, 1e-12, "parts add up (B + W)")
-- each GEMM part's FLOPs: the block's matmul FLOPs are the closed form
local fl = 0
for _, p in ipairs(b.parts) do if p.pass == "F" and p.flops then fl = fl + p.flops end end
H.near(fl, ps.models.formulas.block_fwd_flops(s), 1e-12, "GEMM FLOPs = 24bsh^2 + 4bs^2h")

-- embedding backward: the zero-filled table gradients (V x h words, s x h
-- learned positions) plus each one's output gradient read and rows
-- written, then DDP's main_grad.add_ over each table (bf16 gradient read,
-- fp32 main_grad read and written: 2 + 8 bytes an entry); its dropout's
-- backward reads dy and the mask, writes dx
local emb = roofline.embedding(s, dev, {})
H.near(emb.bwd_weight, mem((2 + 10) * 1000 * h + 4 * T * h + (2 + 10) * n * h + 4 * T * h), 1e-12,
    "embedding W = embedding_dense_backward of words and positions + main_grad.add_")
-- fp16: the gradient buffer is fp16 too (2 + 2 + 2 bytes an entry)
local s16 = ps.models.formulas.normalize { layers = 1, hidden = 2048, heads = 16, seq = 1024,
    vocab = 1000, microbatch = 2, dtype = "fp16" }
H.near(roofline.embedding(s16, dev, {}).bwd_weight,
    mem((2 + 6) * 1000 * h + 4 * T * h + (2 + 6) * n * h + 4 * T * h), 1e-12,
    "fp16 embedding W: main_grad in fp16")
-- head: final norm, LM-head GEMMs and Megatron's unfused vocab-parallel
-- cross-entropy, per logit 2 + 36 bytes forward (.float() 2 + 4, max 4,
-- subtract 8, exp 8, sum 4, div_ 8) and 12 + 2 backward (mul_ 8, the
-- fp32 -> bf16 gradient 4 + 2); TP 2 halves the logits of a rank
for _, t in ipairs { 1, 2 } do
    local V = 1000 / t
    local hd = roofline.head(s, dev, { tp = t })
    H.near(hd.fwd, mem(T * h * 4) + gemm(T, V, h) + mem(T * V * 38), 1e-12,
        "head F: norm, logits GEMM, cross-entropy 38 B a logit, tp " .. t)
    H.near(hd.bwd_input, mem(T * h * 6) + gemm(T, h, V) + mem(T * V * 14), 1e-12,
        "head B: norm, dgrad GEMM, cross-entropy 14 B a logit, tp " .. t)
    H.near(hd.bwd_weight, gemm(h, V, T), 1e-12, "head W: the wgrad GEMM, tp " .. t)
end
H.near(emb.bwd_input, mem(T * h * 5), 1e-12, "embedding B = its dropout's backward")

-- TP 4 splits the GEMMs' N (or K) and the attention heads
local b4 = roofline.block(s, dev, { tp = 4 })
local qkv4
for _, p in ipairs(b4.parts) do if p.name == "qkv" then qkv4 = p.time end end
H.near(qkv4, gemm(T, 3 * h / 4, h), 1e-9, "QKV after TP splitting: N = 3h/t")
-- selective recompute adds the attention core's forward to B
local bs = roofline.block(s, dev, { tp = 1, selective = true })
H.near(bs.bwd_input - b.bwd_input,
    gemm(n, n, d, hb) + mem(hb * n * n * 3) + mem(hb * n * n * 5) + gemm(n, d, n, hb), 1e-9,
    "selective: B + the attention core's forward")

-- optimizer: 30 bytes per parameter at HBM speed
H.near(roofline.optimizer_time(dev, 1e9), 38e9 / bw, 1e-12, "Megatron's bf16 step: 38 B per parameter")
H.near(roofline.optimizer_time(dev, 1e9, "fp16"), 46e9 / bw, 1e-12, "fp16: + unscale, 46 B")

-- ps.run on one rank, one microbatch: makespan = sum of the layers'
-- roofline forward + backward + the optimizer step, exactly
local node = ps.clusters.dgx("A100", 1)
local cluster = ps.cluster{ ranks = 1, device = node.device, link = node.intra }
local layers = ps.models.transformer { layers = 2, hidden = 2048, heads = 16, seq = 1024,
    vocab = 1000, microbatch = 2 }
local r = ps.run{ cluster = cluster, layers = layers, stages = 1, microbatches = 1, record = "none" }
local e = roofline.embedding(s, dev, {})
local hd = roofline.head(s, dev, {})
local params = 0
for _, l in ipairs(layers) do params = params + l.params end
local want = e.fwd + e.bwd_input + e.bwd_weight + 2 * (b.fwd + b.bwd_input + b.bwd_weight)
    + hd.fwd + hd.bwd_input + hd.bwd_weight + roofline.optimizer_time(dev, params)
H.near(r.makespan, want, 1e-9, "one-rank makespan = roofline layer times + optimizer step")
-- profiled times override the roofline
local timed = ps.models.transformer { layers = 2, hidden = 2048, heads = 16, seq = 1024, vocab = 1000 }
for _, l in ipairs(timed) do l.fwd_time, l.bwd_time = 1e-3, 2e-3 end
local rt = ps.run{ cluster = cluster, layers = timed, stages = 1, microbatches = 1,
    record = "none", optimizer_time = 0 }
H.near(rt.makespan, 4 * 3e-3, 1e-12, "fwd_time/bwd_time override the roofline")

-- tp = 1 reproduces plain FLOP layers' results bit for bit
local plain = {}
for i = 1, 4 do plain[i] = { fwd_flops = 1e12 * i, params = 1e6, act_bytes = 1e6, out_bytes = 1e6 } end
local c2 = ps.cluster{ ranks = 2, device = { flops = 312e12, efficiency = 0.5 },
    link = { bandwidth = 300e9, latency = 2e-6 } }
local r0 = ps.run{ cluster = c2, layers = plain, stages = 2, microbatches = 4, record = "none" }
local r1 = ps.run{ cluster = c2, layers = plain, stages = 2, microbatches = 4, record = "none", tp = 1 }
H.eq(r1.makespan, r0.makespan, "tp = 1: plain FLOP layers unchanged")
H.eq(r1.peak_memory[1], r0.peak_memory[1], "tp = 1: memory unchanged")

H.done()
