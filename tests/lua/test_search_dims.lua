-- ps.search over context parallelism (cp, cp_comm_type) and precision
-- (fp8): the constraints' drop counts, the closed-form peak equal to the
-- simulated one, the step-time bound below every simulated step, the
-- pruned search's best and front equal to simulating every configuration,
-- and the space's error messages. Runs under `pipesim run`.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local ps = require "pipesim"

-- a small GPT with fused attention (CP needs it) and 4 query groups, on
-- one DGX H100 node (FP8 needs Hopper)
local model = { layers = 8, hidden = 512, heads = 8, kv_heads = 4, seq = 512, vocab = 8192,
                tied = true, flash_attention = true }
local node = ps.cluster(ps.clusters.dgx("H100", 1))

-- every configuration simulated, then the pruned search: the same best
-- and front, and the closed forms checked on every simulated row
local function both(name, space, shape)
    local all = ps.search { name = name, model = shape or model, cluster = node, gpus = 8,
        global_batch = 16, space = space, prune = "none", record = "none" }
    local pruned = ps.search { name = name .. " pruned", model = shape or model, cluster = node,
        gpus = 8, global_batch = 16, space = space, record = "none" }
    H.eq(all.simulated, all.valid, name .. ": prune = 'none' simulates every valid one")
    local ok = true
    for _, r in ipairs(all.table) do
        H.eq(r.status, "simulated", r.label)
        if r.memory_exact and math.abs(r.memory - r.peak_memory) > 1e-9 * r.peak_memory then
            ok = false
            H.check(false, string.format("%s: closed-form peak %.9g ~= simulated %.9g", r.label,
                r.memory, r.peak_memory))
        end
        if r.bound > r.step_time * (1 + 1e-12) then
            ok = false
            H.check(false, string.format("%s: bound %.9g above the step %.9g", r.label, r.bound,
                r.step_time))
        end
    end
    H.check(ok, name .. ": closed-form peaks exact, bounds below every step")
    H.eq(pruned.best.label, all.best.label, name .. ": pruning finds the brute-force best")
    H.eq(pruned.best.step_time, all.best.step_time)
    H.eq(#pruned.pareto, #all.pareto, name .. ": and the same front")
    for i, r in ipairs(all.pareto) do H.eq(pruned.pareto[i].label, r.label, name .. ": front " .. i) end
    -- (the first batch of 8 is simulated whatever the bounds)
    H.check(all.valid <= 8 or pruned.simulated < all.simulated,
        string.format("%s: pruning simulates fewer (%d of %d)", name, pruned.simulated, all.simulated))
    return all, pruned
end

-- context parallelism: 2 tp x 3 cp x 3 cp_comm_type x 2 pp x 2 zero = 72 raw
local cp = both("cp", { tp = { 1, 2 }, cp = { 1, 2, 4 }, cp_comm_type = { "p2p", "a2a", "all_gather" },
    pp = { 1, 2 }, zero = { 0, 1 }, recompute = { "selective" } })
H.eq(cp.raw, 72)
-- by hand, in the order applied: gpus: tp 2 x cp 4 x pp 2 = 16 > 8 GPUs,
-- 3 comm types x 2 zero = 6; cp_heads: a2a at tp x cp = 8 > 4 query groups
-- (tp 1 cp 8 is not in the space; tp 2 cp 4 pp 1), 2 zero = 2; duplicate:
-- at cp 1 a2a and all_gather repeat p2p, 2 tp x 2 pp x 2 zero x 2 = 16, and
-- ZeRO-1 at dp x cp = 1 repeats ZeRO-0: none (dp x cp = 8 / (tp pp) >= 2)
H.eq(cp.dropped, { gpus = 6, cp_heads = 2, duplicate = 16 })
local with_cp = 0
for _, r in ipairs(cp.table) do
    if r.cp and r.cp > 1 then with_cp = with_cp + 1 end
end
H.eq(with_cp, cp.valid - 8, "every valid configuration but the 8 at cp 1 runs CP")

-- precision: bf16 and the FP8 recipes Hopper has
local f8 = both("fp8", { tp = { 1, 2 }, pp = { 1, 2 }, fp8 = { "bf16", "delayed", "tensorwise",
    "blockwise" }, recompute = { "none", "full" }, zero = { 1 } })
H.eq(f8.raw, 32)
H.eq(f8.dropped, {}, "every precision valid on Hopper")
local precisions = {}
for _, r in ipairs(f8.table) do precisions[r.fp8] = (precisions[r.fp8] or 0) + 1 end
H.eq(precisions, { bf16 = 8, delayed = 8, tensorwise = 8, blockwise = 8 })

-- 6 layers over 4 stages: pp divides 6 + 2 with the embedding and the loss
-- counted as layers (Megatron's account_for_embedding/loss_in_pipeline_split,
-- as Llama 3 405B's 126 over 16), one block on the first and the last stage
local six = both("split", { pp = { 1, 2, 4 }, virtual_stages = { 1, 2 },
    schedule = { "1f1b", "interleaved" }, recompute = { "none", "full" } }, F.with(model, { layers = 6 }))
H.eq(six.raw, 24)
-- virtual_stages: v 2 needs interleaved at pp > 1 and (6 + extra) / pp
-- even, interleaved needs v 2: of the 4 (v, schedule) pairs x 2 recompute,
-- pp 1 keeps v1 1f1b, pp 2 (3 blocks a rank) v1 1f1b, pp 4 (8 / 4 = 2)
-- v1 1f1b and v2 interleaved: 6 + 6 + 4 = 16 dropped, 8 valid; schedule:
-- none (pp 4: dp 2, 8 microbatches, a multiple of 4)
H.eq(six.dropped, { virtual_stages = 16 })
local at4 = 0
for _, r in ipairs(six.table) do if r.pp == 4 then at4 = at4 + 1 end end
H.eq(at4, 4, "pp 4 (v1 1f1b, v2 interleaved) x 2 recompute, split with the ends counted")

-- errors: each value checked, the refusals of ps.run named by the space
local base = { model = model, cluster = node, gpus = 8, global_batch = 16 }
local function with(t) return F.with(base, t) end
H.raises(function() ps.search(with { space = { cp = { 0 } } }) end,
    "ps.search: space.cp[1] must be a positive integer, got 0")
H.raises(function() ps.search(with { space = { cp = { 2 }, cp_comm_type = { "a2a+p2p" } } }) end,
    "ps.search: space.cp_comm_type[1] must be 'p2p', 'a2a' or 'all_gather' (Megatron's " ..
    "--cp-comm-type; 'a2a+p2p' needs a cp_hierarchy, which ps.search does not vary), got 'a2a+p2p'")
H.raises(function() ps.search(with { space = { fp8 = { "bf16", "e5m2" } } }) end,
    "ps.search: space.fp8[2] must be 'bf16' or an FP8 recipe with the hybrid format")
H.raises(function() ps.search(with { space = { fp8 = { true } } }) end,
    "ps.search: space.fp8[1] must be 'bf16' or an FP8 recipe")
H.raises(function() ps.search(with { space = { tp = { 2 }, cp = { 4 }, cp_comm_type = "a2a" } }) end,
    "ps.search: no valid configuration: constraint 'cp_heads' removed the last 1 candidates")
H.raises(function()
    ps.search(F.with(base, { model = F.with(model, { seq = 520 }), space = { cp = { 8 } } }))
end, "ps.search: no valid configuration: constraint 'cp_seq' removed the last 1 candidates " ..
    "(cp needs fused attention, the sequence (520) divisible by 2 x cp")
H.raises(function()
    ps.search(F.with(base, { model = F.with(model, { flash_attention = false }), space = { cp = { 2 } } }))
end, "constraint 'cp_seq' removed the last 1 candidates")
-- FP8 on A100 and MXFP8 on Hopper: refused as ps.run refuses them
local a100 = ps.cluster(ps.clusters.dgx("A100", 1))
H.raises(function() ps.search(F.with(base, { cluster = a100, space = { fp8 = { "bf16", "delayed" } } })) end,
    "ps.search: space.fp8 'delayed': fp8: the device 'A100 80GB SXM' has no FP8 tensor cores")
H.raises(function() ps.search(with { space = { fp8 = { "mxfp8" } } }) end,
    "ps.search: space.fp8 'mxfp8': fp8_recipe 'mxfp8': the device 'H100 SXM' has no MX block " ..
    "scaling")
H.done()
