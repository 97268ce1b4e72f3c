-- Partitions: the balanced split against brute force over every partition,
-- uniform remainders, explicit lists and Megatron-style { first, last }.
-- run with --unsafe: debug.getinfo finds the line an error must point at
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local F = require "fixtures"
local P = require "pipesim.partition"
local models = require "pipesim.models"

local sum = F.sum

-- uniform: the first n % p stages get the extra layer
H.eq(P.uniform(10, 4), { 3, 3, 2, 2 })
H.eq(P.uniform(8, 4), { 2, 2, 2, 2 })
H.eq(P.uniform(7, 1), { 7 })
H.eq(P.uniform(5, 5), { 1, 1, 1, 1, 1 })
H.raises(function() P.uniform(3, 4) end, "3 layers cannot fill 4 stages")
H.raises(function() P.uniform(3, 0) end, "number of stages must be a positive integer")

-- enumerate: every composition once, count(n, p) = C(n-1, p-1)
for n = 1, 9 do
    for p = 1, n do
        local seen, k, ok = {}, 0, true
        for c in P.enumerate(n, p) do
            k = k + 1
            local key = table.concat(c, ",")
            if seen[key] or #c ~= p or sum(c) ~= n then ok = false end
            for _, x in ipairs(c) do if x < 1 then ok = false end end
            seen[key] = true
        end
        H.check(ok, string.format("enumerate(%d, %d) yields valid distinct partitions", n, p))
        H.eq(k, P.count(n, p), string.format("enumerate(%d, %d) count", n, p))
    end
end
H.eq(P.count(34, 4), 5456)
local first = P.enumerate(4, 2)()
H.eq(first, { 1, 3 }, "first partition")

-- balanced == brute force (bottleneck exact; among optimal splits the
-- smallest sum of squares), on random integer and real weights
local function brute(w, p)
    local best, bestsq = math.huge, math.huge
    for c in P.enumerate(#w, p) do
        local s = P.stats(c, w)
        if s.max < best then best = s.max end
    end
    for c in P.enumerate(#w, p) do
        local s = P.stats(c, w)
        if s.max <= best * (1 + 1e-12) then
            local q = 0
            for _, x in ipairs(s.sums) do q = q + x * x end
            if q < bestsq then bestsq = q end
        end
    end
    return best, bestsq
end

local cases, bad = 0, 0
for seed = 1, 300 do
    math.randomseed(seed)
    local n = math.random(1, 10)
    local p = math.random(1, n)
    local w = {}
    for i = 1, n do
        if seed % 2 == 0 then w[i] = math.random(0, 9) else w[i] = math.random() * 100 end
    end
    local counts, bottleneck = P.balanced(w, p)
    local want, wantsq = brute(w, p)
    local s = P.stats(counts, w)
    local q = 0
    for _, x in ipairs(s.sums) do q = q + x * x end
    cases = cases + 1
    local ok = #counts == p and sum(counts) == n
        and math.abs(bottleneck - want) <= 1e-12 * math.max(want, 1)
        and math.abs(s.max - bottleneck) <= 1e-12 * math.max(want, 1)
        and q <= wantsq * (1 + 1e-9) + 1e-12
    for _, c in ipairs(counts) do if c < 1 then ok = false end end
    if not ok then
        bad = bad + 1
        print(string.format("FAIL seed %d: w=%s p=%d got %s (%.17g) want %.17g", seed,
            H.show(w), p, H.show(counts), bottleneck, want))
    end
end
H.eq(bad, 0, "balanced matches brute force on " .. cases .. " random cases")

-- equal weights: balanced gives uniform's split
for n = 1, 24 do
    for p = 1, n do
        local w = {}
        for i = 1, n do w[i] = 5 end
        H.eq((P.balanced(w, p)), P.uniform(n, p), string.format("equal weights %d/%d", n, p))
    end
end
H.raises(function() P.balanced({ 1, -1 }, 2) end, "weight 2 must be a non-negative number")
H.raises(function() P.balanced({ 1, 2 }, 3) end, "2 layers cannot fill 3 stages")

-- stats
local s = P.stats({ 1, 2 }, { 4, 1, 1 })
H.eq(s.sums, { 4, 2 }); H.eq(s.max, 4); H.eq(s.mean, 3); H.near(s.imbalance, 4 / 3)
H.eq(s.slowest, 0)
H.raises(function() P.stats({ 1, 1 }, { 1, 1, 1 }) end, "counts sum to 2 layers but there are 3 weights")

-- resolve on a model: embedding + 8 blocks + head
local L = models.preset("toy", { layers = 8 })
H.eq(#L, 10)
H.eq(P.resolve("uniform", L, 4), { 3, 2, 2, 3 }, "uniform splits blocks, embedding and head ride along")
H.eq(P.resolve(nil, L, 4), { 3, 2, 2, 3 }, "uniform is the default")
H.eq(P.resolve("uniform", L, 1), { 10 })
local L3 = models.preset("toy", { layers = 3 })
H.eq(P.resolve("uniform", L3, 4), { 2, 1, 1, 1 }, "fewer blocks than stages: split every layer")
H.eq(P.resolve({ first = 1, last = 1 }, L, 4), { 2, 3, 3, 2 }, "Megatron first/last")
H.eq(P.resolve({ first = 0, last = 2 }, L, 4), { 1, 3, 3, 3 }, "first stage only the embedding")
H.eq(P.resolve({ last = 2 }, L, 3), { 4, 3, 3 }, "only the last given")
H.eq(P.resolve({ first = 4, last = 4 }, L, 2), { 5, 5 })
H.raises(function() P.resolve({ first = 1, last = 2 }, L, 4) end,
    "the remaining 5 blocks do not divide evenly over 2 stages")
H.raises(function() P.resolve({ first = 9 }, L, 4) end, "takes more than the model's 8 blocks")
H.raises(function() P.resolve({ first = 1, last = 1 }, L, 1) end, "needs at least 2 stages")
H.raises(function() P.resolve({ first = -1 }, L, 2) end, "first must be a non-negative integer")
H.raises(function() P.resolve({ frist = 1 }, L, 2) end, "unknown field 'frist'")

-- explicit lists count every layer, embedding and head included
H.eq(P.resolve({ 1, 4, 4, 1 }, L, 4), { 1, 4, 4, 1 })
H.raises(function() P.resolve({ 2, 3, 3 }, L, 3) end, "partition sums to 8 layers but the model has 10")
H.raises(function() P.resolve({ 5, 0, 5 }, L, 3) end, "partition: stage 1 has 0 layers")
H.raises(function() P.resolve({ 5, -1, 6 }, L, 3) end, "partition: stage 1 has -1 layers")
H.raises(function() P.resolve({ 5, 5 }, L, 3) end, "partition lists 2 stages but the run has 3")
H.raises(function() P.resolve({ 5, 2.5, 2.5 }, L, 3) end, "stage 1 count must be an integer")
H.raises(function() P.resolve("fastest", L, 3) end,
    "partition must be 'uniform', 'params', 'flops', 'time', 'search', a list of layer counts or { first = k, last = k }, got 'fastest'")
H.raises(function() P.resolve("uniform", L, 11) end, "10 layers cannot fill 11 stages")
H.raises(function() P.resolve("uniform", {}, 2) end, "the model has no layers")

-- weighted: params vs flops on a GPT with a big embedding (the point of
-- scenarios/balance_sweep.lua): parameter balance isolates the embedding
-- (long sequence so the head is ~2.6 blocks of FLOPs, embedding ~16 blocks of params)
local G = models.transformer { layers = 8, hidden = 256, heads = 4, seq = 8192, vocab = 50257 }
local byp, wp = P.resolve("params", G, 4)
local byf, wf = P.resolve("flops", G, 4)
H.eq(#wp, #G); H.eq(#wf, #G)
H.eq(byp[1], 1, "parameters: the embedding alone on stage 0")
H.check(byf[1] > 1, "FLOPs: stage 0 takes blocks besides the embedding")
H.check(P.stats(byf, wf).max < P.stats(byp, wf).max, "FLOP balance beats parameter balance in FLOPs")
local byt = P.resolve("time", G, 4, { flops_rate = 312e12 * 0.5 })
H.eq(byt, byf, "time at one FLOP rate splits as FLOPs do")
H.raises(function() P.resolve("time", G, 4) end, "no flops_rate (FLOP/s) was given")

-- profiled layers: "time" uses measured times, "flops" refuses
local prof = {
    { name = "a", fwd_time = 1, bwd_time = 2 }, { name = "b", fwd_time = 5 },
    { name = "c", fwd_time = 1 }, { name = "d", fwd_time = 1, bwd_time = 1 },
}
local ct, wt = P.resolve("time", prof, 2)
H.eq(wt, { 3, 15, 3, 2 }, "fwd+bwd seconds, bwd defaulting to 2x")
H.eq(ct, { 2, 2 })
H.raises(function() P.resolve("flops", prof, 2) end, "layers[1] ('a') has no fwd_flops")
H.raises(function() P.resolve("time", { { name = "x" } }, 1, { flops_rate = 1 }) end,
    "layers[1] ('x') has neither fwd_time nor fwd_flops")
H.eq(P.resolve("params", prof, 2), { 3, 1 }, "all-zero params: most even count split")

-- opts.level: ps.run passes 2 so the error names its caller's line
local function run_like(part)
    local counts = P.resolve(part, L, 4, { level = 2 }) -- not a tail call
    return counts
end
local line = debug.getinfo(1, "l").currentline + 1
local err = H.raises(function() run_like({ 1, 1 }) end, "partition lists 2 stages")
H.check(err and err:find("test_partition.lua:" .. line, 1, true), "level 2 blames the caller's caller: " .. tostring(err))

H.done()
