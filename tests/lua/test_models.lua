-- Model formulas against hand-computed numbers, and preset sizes against
-- the published parameter counts.
-- run with --unsafe: debug.getinfo finds the line an error must point at
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local models = require "pipesim.models"
local F = models.formulas

-- A small GPT: b=2, s=128, h=64, a=4, V=1000, bf16. Numbers worked by hand:
--   block FLOPs 24*b*s*h^2 + 4*b*s^2*h = 25165824 + 8388608
--   block params 12h^2 + 13h = 49152 + 832
--   block act s*b*h*(34 + 5*a*s/h) = 16384 * (34 + 40)
local gpt = models.transformer { layers = 2, hidden = 64, heads = 4, seq = 128,
                                 microbatch = 2, vocab = 1000 }
H.eq(#gpt, 4, "embedding + 2 blocks + head")
H.eq(gpt[1].name, "embedding")
H.eq(gpt[2].name, "block 0")
H.eq(gpt[3].name, "block 1")
H.eq(gpt[4].name, "head")
H.eq(gpt[2].fwd_flops, 33554432, "GPT block forward FLOPs")
H.eq(gpt[2].params, 49984, "GPT block params 12h^2+13h")
H.eq(gpt[2].act_bytes, 1212416, "GPT block activations (Korthikanti)")
H.eq(gpt[2].out_bytes, 32768, "boundary s*b*h*2")
H.eq(gpt[2].bwd_flops, nil, "backward left to the 2x default")
H.eq(gpt[1].params, 64000 + 8192, "embedding V*h + learned positions s*h")
H.eq(gpt[1].fwd_flops, 0, "embedding FLOPs negligible")
H.eq(gpt[1].out_bytes, 32768, "embedding sends s*b*h*2")
H.eq(gpt[1].act_bytes, 16384, "embedding keeps its dropout mask")
H.eq(gpt[4].fwd_flops, 32768000, "head 2*b*s*h*V")
H.eq(gpt[4].params, 64000 + 128, "head V*h + final layernorm 2h")
H.eq(gpt[4].act_bytes, 65536 + 1024000, "head 2*2*sbh + fp32 logits 4*sbV")
H.eq(gpt[4].out_bytes, 0, "the last layer sends nothing")

-- fp32: tensors 4 bytes, dropout masks still 1: 66 sbh + 9 a s^2 b
local gpt32 = models.transformer { layers = 1, hidden = 64, heads = 4, seq = 128,
                                   microbatch = 2, vocab = 1000, dtype = "fp32" }
H.eq(gpt32[2].act_bytes, 66 * 16384 + 9 * 4 * 128 * 128 * 2, "fp32 block activations")
H.eq(gpt32[2].out_bytes, 65536, "fp32 boundary")

-- A small Llama: h=64, a=8, kv=2 (head_dim 8), f=160, s=32, b=1, V=100.
--   FLOPs: QKV 2*32*64*(64+32) = 393216, out 262144, attention 4*32^2*64 =
--   262144, SwiGLU 6*32*64*160 = 1966080
--   params: 64^2 + 2*64*16 + 64^2 = 10240, MLP 3*64*160 = 30720, 2 RMSNorm 128
--   act (bf16, no dropout): norms 8192, QKV in 4096, Q+K 2*32*80 = 5120,
--   V 1024, out-proj in 4096, MLP in 4096, SwiGLU 3*2*32*160 = 30720,
--   softmax 2*8*32*32 = 16384
local llama = models.transformer { layers = 1, hidden = 64, heads = 8, kv_heads = 2,
                                   ffn_hidden = 160, seq = 32, vocab = 100, swiglu = true }
H.eq(llama[2].fwd_flops, 393216 + 262144 + 262144 + 1966080, "Llama block FLOPs")
H.eq(llama[2].params, 10240 + 30720 + 128, "Llama block params")
H.eq(llama[2].act_bytes, 8192 + 4096 + 5120 + 1024 + 4096 + 4096 + 30720 + 16384,
    "Llama block activations")
H.eq(llama[1].params, 6400, "rotary: no position table")
H.eq(llama[1].act_bytes, 0, "no dropout mask")
H.eq(llama[3].params, 6400 + 64, "head V*h + final RMSNorm h")
H.eq(llama[3].fwd_flops, 409600, "head 2*b*s*h*V")
H.eq(llama[3].act_bytes, 8192 + 12800, "head activations")
local flash = models.transformer { layers = 1, hidden = 64, heads = 8, kv_heads = 2,
                                   ffn_hidden = 160, seq = 32, vocab = 100, swiglu = true,
                                   flash_attention = true }
H.eq(flash[2].act_bytes, 73728 - 16384 + 4 * 8 * 32, "flash attention keeps row stats, not s^2")

-- The general formulas reduce to the published GPT closed forms.
math.randomseed(7)
for _ = 1, 50 do
    local a = math.random(1, 16)
    local h = a * 8 * math.random(1, 16)
    local s = { layers = 1, hidden = h, heads = a, seq = 8 * math.random(1, 64),
                microbatch = math.random(1, 4), vocab = 100 }
    local n = F.normalize(s)
    local b, sq = n.microbatch, n.seq
    H.eq(F.block_fwd_flops(n), 24 * b * sq * h * h + 4 * b * sq * sq * h, "24bsh^2+4bs^2h")
    H.eq(F.block_params(n), 12 * h * h + 13 * h, "12h^2+13h")
    H.near(F.block_act_bytes(n), sq * b * h * (34 + 5 * a * sq / h), 1e-12, "sbh(34+5as/h)")
end

-- Presets: parameters add up to the published sizes (within 1%, or the
-- published figure's rounding: Narayanan et al.'s 1.7B is 1.65B, or the
-- gap a preset states). A published size is the main model's: the
-- multi-token prediction layers (DeepSeek-V3's) are left out.
for _, name in ipairs(models.presets()) do
    local pub, rounding, tol = models.published(name)
    if pub then
        local main = {}
        for _, l in ipairs(models.preset(name)) do
            if not l.mtp then main[#main + 1] = l end
        end
        local t = models.total(main)
        H.near(t.params, pub, math.max(0.01, (rounding or 0) / pub, tol or 0), name .. " parameters")
    end
end
H.near(models.total(models.preset("gpt3-175b")).params, 175e9, 0.01, "GPT-3 175B")
H.eq(models.total(models.preset("llama2-7b")).params, 6738415616, "Llama 2 7B (HF count)")
H.eq(models.total(models.preset("llama3-8b")).params, 8030261248, "Llama 3 8B (HF count)")
H.eq(models.total(models.preset("llama3-70b")).params, 70553706496, "Llama 3 70B (HF count)")
H.eq(models.total(models.preset("llama3-405b")).params, 405853388800, "Llama 3.1 405B")

-- GPT-3's head is tied: the last stage holds a copy, counted once in params.
local g3 = models.total(models.preset("gpt3-175b"))
H.eq(g3.params_stored - g3.params, 50257 * 12288, "tied head copy")
H.eq(#models.preset("gpt3-175b"), 98)
H.eq(#models.preset("llama3-405b"), 128)

-- Overrides scale the per-microbatch costs.
local base = models.preset("toy")
local mb2 = models.preset("toy", { microbatch = 2 })
H.eq(mb2[2].fwd_flops, 2 * base[2].fwd_flops, "microbatch doubles FLOPs")
H.eq(mb2[2].act_bytes, 2 * base[2].act_bytes, "microbatch doubles activations")
H.eq(mb2[2].params, base[2].params, "microbatch leaves params")
local f32 = models.preset("toy", { dtype = "fp32" })
H.eq(f32[2].out_bytes, 2 * base[2].out_bytes, "fp32 doubles the boundary")
local l8 = models.preset("llama3-8b", { seq = 4096 })
H.eq(models.shape("llama3-8b", { seq = 4096 }).seq, 4096)
H.eq(l8[2].out_bytes, 4096 * 4096 * 2, "seq override")

-- totals
local t = models.total(gpt)
H.eq(t.fwd_flops, 2 * 33554432 + 32768000)
H.eq(t.flops, 3 * t.fwd_flops, "backward defaults to 2x forward")
H.eq(t.layers, 4)
local tt = models.total { { fwd_time = 1, bwd_time = 3 }, { fwd_time = 2 } }
H.eq(tt.fwd_time, 3); H.eq(tt.bwd_time, 7)

-- Bad input: messages name the problem and point at the caller.
local line = debug.getinfo(1, "l").currentline + 1
local err = H.raises(function() models.preset("gpt-5") end, "unknown model preset 'gpt-5' (known: ")
H.check(err and err:find("test_models.lua:" .. line, 1, true), "error points at the caller: " .. tostring(err))
H.raises(function() models.preset("toy", { hiden = 3 }) end, "preset 'toy': overrides: unknown field 'hiden' (did you mean 'hidden'?)")
H.raises(function() models.transformer { layers = 2, hidden = 64, heads = 4, seq = 8 } end,
    "missing field 'vocab'")
H.raises(function() models.transformer { layers = 2, hidden = 64, heads = 5, seq = 8, vocab = 10 } end,
    "hidden (64) is not a multiple of heads (5)")
H.raises(function() models.transformer { layers = 2, hidden = 64, heads = 4, kv_heads = 3, seq = 8, vocab = 10 } end,
    "heads (4) is not a multiple of kv_heads (3)")
H.raises(function() models.transformer { layers = 0, hidden = 64, heads = 4, seq = 8, vocab = 10 } end,
    "transformer: field 'layers' must be an integer in 1..16777216, got 0")
H.raises(function() models.preset("toy", { dtype = "fp8" }) end, "unknown dtype 'fp8'")
H.raises(function() models.transformer { layers = 1, hidden = 64, heads = 4, seq = 8, vocab = 10, swiglu = "yes" } end,
    "swiglu must be a boolean")

H.done()
