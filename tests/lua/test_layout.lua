-- The parallel layout (core/par/layout.h, ps.layout) against Megatron-LM's
-- RankGenerator: generate_masked_orthogonal_rank_groups as written in
-- megatron/core/parallel_state.py (tag core_v0.19.0, commit 5be9626), ported
-- line by line below, and initialize_model_parallel's two generators (the
-- dense one over tp-cp-ep-dp-pp with ep = 1, the expert one over the same
-- order with tp = etp, cp = 1, dp = world / (etp ep pp)). Every group of
-- every token for a dozen (tp, cp, ep, etp, dp, pp) combinations, in both
-- orders; coordinates; the world's checks.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

-- parallel_state.py's prefix_product, inner_product, decompose and
-- generate_masked_orthogonal_rank_groups
local function prefix_product(a)
    local r, init = { 1 }, 1
    for _, v in ipairs(a) do init = init * v; r[#r + 1] = init end
    return r
end

local function inner_product(a, b)
    local s = 0
    for i = 1, #a do s = s + a[i] * b[i] end
    return s
end

local function decompose(index, shape)
    local stride = prefix_product(shape)
    local idx = {}
    for i = 1, #shape do idx[i] = (index // stride[i]) % shape[i] end
    return idx
end

local function masked_groups(world, parallel_size, mask)
    local masked_shape, unmasked_shape = {}, {}
    local global_stride = prefix_product(parallel_size)
    local masked_stride, unmasked_stride = {}, {}
    for i, s in ipairs(parallel_size) do
        if mask[i] then
            masked_shape[#masked_shape + 1] = s
            masked_stride[#masked_stride + 1] = global_stride[i]
        else
            unmasked_shape[#unmasked_shape + 1] = s
            unmasked_stride[#unmasked_stride + 1] = global_stride[i]
        end
    end
    local group_size = prefix_product(masked_shape)[#masked_shape + 1]
    local ranks = {}
    for group_index = 0, world // group_size - 1 do
        local g = decompose(group_index, unmasked_shape)
        local rank = {}
        for rank_in_group = 0, group_size - 1 do
            local r = decompose(rank_in_group, masked_shape)
            rank[#rank + 1] = inner_product(r, masked_stride) + inner_product(g, unmasked_stride)
        end
        ranks[#ranks + 1] = rank
    end
    return ranks
end

-- RankGenerator(tp, ep, dp, pp, cp, order).get_ranks(token)
local function get_ranks(sizes, order, token)
    local names = {}
    for name in order:gmatch("[^-]+") do names[#names + 1] = name end
    local size, mask, world = {}, {}, 1
    local want = {}
    for t in token:gmatch("[^-]+") do want[t] = true end
    for i, name in ipairs(names) do
        size[i] = sizes[name]
        mask[i] = want[name] or false
        world = world * size[i]
    end
    return masked_groups(world, size, mask)
end

-- The dozen (and more) combinations: tp, cp, ep, etp, dp, pp.
local CASES = {
    { tp = 2, cp = 1, ep = 1, dp = 2, pp = 4 },   -- Megatron's docstring example
    { tp = 1, cp = 1, ep = 1, dp = 8, pp = 1 },
    { tp = 8, cp = 1, ep = 1, dp = 1, pp = 1 },
    { tp = 2, cp = 2, ep = 1, dp = 2, pp = 2 },
    { tp = 4, cp = 2, ep = 1, dp = 1, pp = 2 },
    { tp = 1, cp = 4, ep = 1, dp = 2, pp = 1 },
    { tp = 2, cp = 1, ep = 2, dp = 2, pp = 2 },
    { tp = 2, cp = 1, ep = 4, dp = 4, pp = 1 },
    { tp = 1, cp = 1, ep = 8, dp = 8, pp = 2 },
    { tp = 4, cp = 1, ep = 2, etp = 1, dp = 2, pp = 2 },
    { tp = 2, cp = 2, ep = 4, etp = 1, dp = 2, pp = 1 },
    { tp = 4, cp = 1, ep = 8, etp = 2, dp = 4, pp = 2 },
    { tp = 3, cp = 1, ep = 1, dp = 5, pp = 2 },
    { tp = 2, cp = 3, ep = 2, etp = 1, dp = 2, pp = 3 },
}

local DENSE = { "tp", "cp", "dp", "pp", "dp-cp", "tp-pp", "tp-cp", "tp-dp", "tp-dp-cp",
                "tp-cp-dp-pp" }
local EXPERT = { ep = "ep", etp = "tp", edp = "dp", ["etp-ep"] = "tp-ep",
                 ["etp-ep-pp"] = "tp-ep-pp", pp = "pp" }
local ORDERS = { dp_inner = "tp-cp-ep-dp-pp", pp_inner = "tp-cp-ep-pp-dp" }

for _, c in ipairs(CASES) do
    local world = c.tp * c.cp * c.dp * c.pp
    local etp = c.etp or c.tp
    local edp = world // (etp * c.ep * c.pp)
    for placement, order in pairs(ORDERS) do
        local label = string.format("tp %d cp %d ep %d etp %d dp %d pp %d %s", c.tp, c.cp,
            c.ep, etp, c.dp, c.pp, placement)
        -- Megatron asserts the expert dp equals dp unless the order ends in pp
        local megatron_ok = placement == "dp_inner" or c.pp == 1 or edp == c.dp
        local ok, L = pcall(ps.layout, { tp = c.tp, cp = c.cp, ep = c.ep, etp = c.etp,
            pp = c.pp, world = world, placement = placement })
        if not megatron_ok then
            H.check(not ok and tostring(L):find("needs the expert data-parallel size", 1, true),
                label .. ": refused as Megatron-LM asserts: " .. tostring(L))
        elseif H.check(ok, label .. ": " .. tostring(L)) then
            H.eq(L.dp, c.dp, label .. ": dp = world / (tp cp pp)")
            H.eq(L.edp, edp, label .. ": edp = world / (etp ep pp)")
            local dense = { tp = c.tp, cp = c.cp, ep = 1, dp = c.dp, pp = c.pp }
            for _, token in ipairs(DENSE) do
                H.eq(L.groups[token], get_ranks(dense, order, token), label .. ": " .. token)
            end
            local expert = { tp = etp, cp = 1, ep = c.ep, dp = edp, pp = c.pp }
            for token, mtoken in pairs(EXPERT) do
                H.eq(L.groups[token], get_ranks(expert, order, mtoken),
                    label .. ": expert " .. token)
            end
            -- initialize_model_parallel: "Pipeline parallel groups are
            -- expected to be the same for Non-Expert and Expert part"
            H.eq(get_ranks(expert, order, "pp"), L.groups.pp, label .. ": pp groups agree")
            -- coordinates: a rank's place in each group is its coordinate
            local bad = 0
            for _, tok in ipairs { "tp", "cp", "dp", "pp" } do
                for _, g in ipairs(L.groups[tok]) do
                    for i, r in ipairs(g) do
                        if L.coords[r + 1][tok] ~= i - 1 then bad = bad + 1 end
                    end
                end
            end
            for tok, key in pairs { ep = "ep", etp = "etp", edp = "edp" } do
                for _, g in ipairs(L.groups[tok]) do
                    for i, r in ipairs(g) do
                        if L.coords[r + 1][key] ~= i - 1 then bad = bad + 1 end
                    end
                end
            end
            H.eq(bad, 0, label .. ": coordinates are positions in the groups")
            -- the embedding groups: each pipeline group's first and last
            local emb = {}
            for i, g in ipairs(L.groups.pp) do emb[i] = #g > 1 and { g[1], g[#g] } or { g[1] } end
            H.eq(L.groups.embedding, emb, label .. ": embedding groups")
        end
    end
end

-- the world: dp from it, or every size given and checked against it
H.raises(function() ps.layout{ tp = 2, pp = 2, dp = 3, world = 16 } end,
    "ps.layout: tp 2 x cp 1 x dp 3 x pp 2 is 12 ranks but the world has 16")
H.raises(function() ps.layout{ tp = 3, pp = 2, world = 16 } end,
    "ps.layout: the world of 16 ranks is not divisible by tp 3 x cp 1 x pp 2 (6 ranks)")
local dgx = ps.cluster(ps.clusters.dgx("H100", 2))
H.raises(function() ps.layout{ tp = 8, pp = 2, dp = 2, cluster = dgx } end,
    "ps.layout: tp 8 x cp 1 x dp 2 x pp 2 is 32 ranks but the cluster has 16")
H.raises(function() ps.layout{ tp = 2, ep = 3, world = 8 } end,
    "ps.layout: etp 2 x ep 3 x pp 1 (6 ranks) does not divide the world of 8 ranks")
H.raises(function() ps.layout{ tp = 0, world = 8 } end,
    "ps.layout: field 'tp' must be an integer in 1..1048576, got 0")
H.raises(function() ps.layout{ tp = 2, pp = 4, dp = 2, ranks = { 1, 2 } } end,
    "ps.layout: field 'ranks' must list 16 cluster ranks (tp 2 x stages 4 x dp 2, TP rank " ..
    "innermost), got 2")
H.raises(function() ps.layout{ world = 4, placement = "tp_inner" } end,
    "ps.layout: field 'placement': unknown placement 'tp_inner' (expected dp_inner or pp_inner)")
H.raises(function() return ps.layout{ world = 4 }.groups["tp-ep"] end,
    "ps.layout: group 'tp-ep' mixes the dense side (tp, cp, dp) and the expert side (ep, etp, edp)")
H.raises(function() return ps.layout{ world = 4 }.groups.xp end,
    "ps.layout: unknown group 'xp'")
H.raises(function() ps.layout{ world = 4, tpp = 2 } end,
    "ps.layout: unknown field 'tpp'")

-- ps.run's world: tp x dp x stages must fit the cluster (the layout's
-- message, from the binding before any lowering)
local layers = ps.models.transformer{ layers = 2, hidden = 256, heads = 8, seq = 128, vocab = 512 }
H.raises(function() ps.run{ cluster = dgx, layers = layers, stages = 2, dp = 2, tp = 8,
    microbatches = 2 } end, "ps.run: tp 8 x stages 2 x dp 2 need 32 ranks but the cluster has 16")
H.raises(function() ps.run{ cluster = dgx, layers = layers, stages = 2, dp = 16,
    microbatches = 2 } end, "ps.run: dp 16 x 2 stages need 32 ranks but the cluster has 16")

-- spans on a cluster: DGX H100 x 2 (8 GPUs and 8 NICs a node)
local S = ps.layout{ tp = 8, pp = 2, cluster = dgx }
H.eq(S.span.tp, { nodes = 1, per_node = 8, per_nic = 1 }, "a TP group fills a node, a NIC each")
H.eq(S.span.pp, { nodes = 2, per_node = 1, per_nic = 1 }, "the pipeline crosses nodes")
H.eq(S.order, "tp-cp-ep-dp-pp")
H.eq(#S.rank_of, 2); H.eq(S.rank_of, { 0, 8 }, "each stage's program on TP rank 0")

H.done()
