-- FP8 as Transformer Engine runs it (models/fp8.lua): FP8 GEMM times
-- against their closed form, the quantisation kernels' bytes, the FP8
-- weight copies and saved activations by hand, the published TE GEMM
-- benchmark reproduced, and the errors (FP8 on an A100, mxfp8 on Hopper,
-- bad fields). Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local roofline = require "pipesim.models.roofline"
local fp8 = require "pipesim.models.fp8"

local h100 = ps.clusters.device("H100")
local b200 = ps.clusters.device("B200")

local function part(b, name)
    for _, p in ipairs(b.parts) do if p.name == name then return p end end
    error("no part " .. name)
end

-- 1. an FP8 GEMM = FLOPs / (FP8 peak x its efficiency) + the launch, or
-- its bytes (1-byte operands, 2-byte output) at the HBM rate
do
    local m, n, k = 8192, 8192, 8192
    local f = 2 * m * n * k
    H.near(roofline.gemm_time(h100, m, n, k, 1, nil, "tensor"),
        f / 1142.3e12 + 5.5e-6, 1e-12, "H100 FP8 GEMM: TE's measured 1142.3 TFLOP/s")
    H.near(roofline.gemm_time(h100, m, n, k, 1, nil, "block"),
        f / 933.1e12 + 5.5e-6, 1e-12, "H100 blockwise GEMM")
    H.near(roofline.gemm_time(b200, m, n, k, 1, nil, "block"),
        f / 2677.4e12 + 5.5e-6, 1e-12, "B200 MXFP8 GEMM")
    -- a thin GEMM meets the memory roof: A 1 byte, B 1 byte, C 2 bytes
    local big = 1 << 22
    local t = roofline.gemm_time(h100, big, 64, 64, 1, nil, "tensor")
    H.near(t, (big * 64 + 64 * 64 + 2 * big * 64) / (3.35e12 * 0.9), 1e-12,
        "thin FP8 GEMM on the memory roof")
end

-- 2. a block: every linear GEMM in FP8, attention in BF16, and the
-- quantisation of each input and output gradient (Hopper, delayed: read
-- 2 bytes, write the FP8 copy and its transpose)
local shape = { layers = 2, hidden = 4096, heads = 32, seq = 2048, vocab = 1000,
    dtype = "bf16", flash_attention = true, fp8 = "hybrid" }
local s = ps.models.formulas.normalize(shape)
local b = roofline.block(s, h100, { tp = 1 })
local T, h = 2048, 4096
H.near(part(b, "qkv").time, roofline.gemm_time(h100, T, 3 * h, h, 1, nil, "tensor"), 1e-12,
    "qkv in FP8")
H.near(part(b, "qkv quantize").bytes, T * h * (2 + 2), 1e-12, "qkv input: cast + transpose")
H.near(part(b, "qkv grad quantize").bytes, T * 3 * h * 4, 1e-12, "qkv output gradient")
H.near(part(b, "fc2 quantize").bytes, T * 4 * h * 4, 1e-12, "fc2 input (the GeLU output)")
H.near(part(b, "proj quantize").time, roofline.mem_time(h100, T * h * 4, 3 * T * h), 1e-12,
    "quantisation at the HBM rate")
local s16 = ps.models.formulas.normalize { layers = 2, hidden = 4096, heads = 32, seq = 2048,
    vocab = 1000, dtype = "bf16", flash_attention = true }
local b16 = roofline.block(s16, h100, { tp = 1 })
H.near(part(b, "flash attention").time, part(b16, "flash attention").time, 1e-12,
    "attention stays BF16")
-- tensorwise (current scaling) adds the amax pass; Blackwell needs no
-- transpose; mxfp8 makes both copies and their E8M0 scales
local function quant_bytes(dev, recipe)
    local sh = {}
    for k2, v in pairs(shape) do sh[k2] = v end
    sh.fp8_recipe = recipe
    return part(roofline.block(ps.models.formulas.normalize(sh), dev, { tp = 1 }),
        "qkv quantize").bytes / (T * h)
end
H.near(quant_bytes(h100, "tensorwise"), 2 + 2 + 2, 1e-12, "H100 current scaling: 2e + 2")
H.near(quant_bytes(b200, "delayed"), 2 + 1, 1e-12, "B200 delayed: e + 1")
H.near(quant_bytes(b200, "tensorwise"), 2 + 2 + 1, 1e-12, "B200 current scaling: 2e + 1")
H.near(quant_bytes(b200, "mxfp8"), 2 + 2 + 2 / 32, 1e-12, "B200 MXFP8: e + 2 + 2/32")
H.near(quant_bytes(b200, "blockwise"), 2 + 2 + 2 / 32, 1e-12, "Blackwell runs blockwise as MXFP8")
H.near(quant_bytes(h100, "blockwise"), 2 + 2 + 8 / 128, 1e-12, "H100 blockwise: fp32 scales")

-- 3. Transformer Engine's own GEMM benchmark (docs/examples/
-- gemm_profiling/gemm_profiling.rst, H200 NVL): a layer of hidden 4096,
-- ffn 16384, 15,872 tokens, its twelve GEMMs each with both operands
-- quantised in autocast mode. The roofline's GEMM and quantisation costs
-- reproduce the measured per-layer times within 2 % (delayed 18.978 ms,
-- current scaling 20.285 ms) on an H200 NVL (4.8 TB/s, as the H200
-- SXM; the GEMM rates are the die's, whatever the part's rated peak)
do
    local nvl = ps.clusters.device("H200")
    local M, hh, f = 15872, 4096, 16384
    local shapes = {
        { M, hh, 3 * hh }, { M, hh, hh }, { M, hh, f }, { M, f, hh },       -- fprop
        { M, 3 * hh, hh }, { M, hh, hh }, { M, f, hh }, { M, hh, f },       -- dgrad
        { 3 * hh, M, hh }, { hh, M, hh }, { f, M, hh }, { hh, M, f },       -- wgrad
    }
    local function layer_ms(recipe)
        local plan = fp8.plan({ fp8 = "hybrid", fp8_recipe = recipe, fp8_wgrad = true,
                                dtype = "bf16" }, nvl)
        local t = 0
        for _, x in ipairs(shapes) do
            local m, k, n = table.unpack(x)
            local el = m * k + k * n
            t = t + roofline.gemm_time(nvl, m, n, k, 1, nil, plan.gemm) +
                roofline.mem_time(nvl, el * plan.quant, 3 * el)
        end
        return t * 1e3
    end
    local bf16 = 0
    for _, x in ipairs(shapes) do bf16 = bf16 + roofline.gemm_time(nvl, x[1], x[3], x[2]) end
    H.near(bf16 * 1e3, 32.014, 0.01, "TE BF16 per layer: 32.014 ms")
    H.near(layer_ms("delayed"), 18.978, 0.02, "TE FP8 delayed autocast: 18.978 ms")
    H.near(layer_ms("tensorwise"), 20.285, 0.02, "TE FP8 current scaling autocast: 20.285 ms")
    H.near(layer_ms("blockwise"), 22.882, 0.02, "TE FP8 block autocast: 22.882 ms")
end

-- 4. memory: the FP8 weight copies TE keeps for the step (Hopper: the FP8
-- weight and its transpose, 2 bytes per linear parameter), FP8
-- parameters in place of the 16-bit weight (1 + 1 - 2 = 0 on Hopper;
-- Blackwell tensorwise needs no transpose: 1 - 2 = -1), the GEMM inputs
-- saved in FP8
do
    H.eq(fp8.weight_bytes(s, h100, 2), 2, "H100 delayed: FP8 weight + transpose")
    local sp = ps.models.formulas.normalize { layers = 2, hidden = 4096, heads = 32, seq = 2048,
        vocab = 1000, dtype = "bf16", fp8 = "hybrid", fp8_params = true }
    H.eq(fp8.weight_bytes(sp, h100, 2), 0, "H100 FP8 parameters: 1 + 1 for the 2 they replace")
    local spb = ps.models.formulas.normalize { layers = 2, hidden = 4096, heads = 32, seq = 2048,
        vocab = 1000, dtype = "bf16", fp8 = "hybrid", fp8_params = true, fp8_recipe = "tensorwise" }
    H.eq(fp8.weight_bytes(spb, b200, 2), -1, "B200 tensorwise FP8 parameters: 1 byte")
    H.eq(fp8.gather_bytes(sp, 2), 1, "fp8_param_gather: the all-gather moves 1 byte")
    H.eq(fp8.gather_bytes(s, 2), 2, "without it, the 16-bit weight")
    local c = ps.cluster(ps.clusters.dgx("H100", 1))
    local function run(sh)
        return ps.run { cluster = c, layers = ps.models.transformer(sh), stages = 1,
            microbatches = 1, record = "none" }
    end
    local base = { layers = 4, hidden = 1024, heads = 16, seq = 512, vocab = 1024, dtype = "bf16",
        flash_attention = true }
    local r16 = run(base)
    base.fp8 = "hybrid"
    local r8 = run(base)
    local linear = 4 * (12 * 1024 * 1024)
    H.near(r8.static_memory[1] - r16.static_memory[1], 2 * linear, 1e-12,
        "static memory + 2 bytes per linear parameter")
    -- activations per block and token: QKV and fc1 inputs 2 -> 1 byte
    -- (-2 h), the projection's FP8 copy beside flash's output (+h), fc2's
    -- input 2 -> 1 (-4h): -5h; times seq x 4 blocks
    local act16 = r16.peak_memory[1] - r16.static_memory[1]
    local act8 = r8.peak_memory[1] - r8.static_memory[1]
    H.near(act16 - act8, 5 * 1024 * 512 * 4, 1e-12, "FP8 saves 5 h bytes a token a block")
end

-- 5. the first and last blocks in BF16 (--first-last-layers-bf16)
do
    local layers = ps.models.transformer { layers = 6, hidden = 256, heads = 4, seq = 128,
        vocab = 1000, fp8 = "hybrid", fp8_recipe = "tensorwise", fp8_bf16_first = 1,
        fp8_bf16_last = 2 }
    local kinds = {}
    for i = 2, 7 do kinds[#kinds + 1] = layers[i].shape.fp8 or "bf16" end
    H.eq(kinds, { "bf16", "hybrid", "hybrid", "hybrid", "bf16", "bf16" }, "blocks 0, 4, 5 in BF16")
end

-- 6. errors
local a100 = ps.cluster(ps.clusters.dgx("A100", 1))
H.raises(function() ps.run { cluster = a100, layers = ps.models.transformer { layers = 1,
    hidden = 64, heads = 4, seq = 64, vocab = 100, fp8 = "hybrid" }, stages = 1,
    microbatches = 1, record = "none" } end,
    "fp8: the device 'A100 80GB SXM' has no FP8 tensor cores")
local h1 = ps.cluster(ps.clusters.dgx("H100", 1))
H.raises(function() ps.run { cluster = h1, layers = ps.models.transformer { layers = 1,
    hidden = 64, heads = 4, seq = 64, vocab = 100, fp8 = "hybrid", fp8_recipe = "mxfp8" },
    stages = 1, microbatches = 1, record = "none" } end,
    "fp8_recipe 'mxfp8': the device 'H100 SXM' has no MX block scaling in its tensor cores")
local base = { layers = 1, hidden = 64, heads = 4, seq = 64, vocab = 100 }
local function with(t)
    local x = {}
    for k, v in pairs(base) do x[k] = v end
    for k, v in pairs(t) do x[k] = v end
    return x
end
H.raises(function() ps.models.transformer(with { fp8 = "e5m2" }) end,
    "transformer: fp8 must be 'e4m3' or 'hybrid' (or false), got 'e5m2'")
H.raises(function() ps.models.transformer(with { fp8 = "hybrid", fp8_recipe = "nvfp4" }) end,
    "transformer: unknown fp8_recipe 'nvfp4' (known: blockwise, delayed, mxfp8, tensorwise)")
H.raises(function() ps.models.transformer(with { fp8_recipe = "delayed" }) end,
    "transformer: field 'fp8_recipe' needs fp8 ('e4m3' or 'hybrid')")
H.raises(function() ps.models.transformer(with { fp8 = "hybrid", fp8_bf16_first = 1 }) end,
    "fp8_bf16_first/fp8_bf16_last need a recipe other than 'delayed'")
H.raises(function() ps.models.transformer(with { fp8 = "hybrid", dtype = "fp32" }) end,
    "transformer: fp8 needs 16-bit training (dtype 'bf16' or 'fp16'), got dtype 'fp32'")
H.raises(function() ps.models.transformer(with { fp8 = "hybrid", fp8_head = true }) end,
    "fp8_head (Megatron's --fp8-output-proj) needs fp8_recipe 'mxfp8', got 'delayed'")
H.done()
