-- The flex token dispatcher (Megatron-LM's MoEFlexTokenDispatcher,
-- --moe-token-dispatcher-type flex, with DeepEP's or HybridEP's normal
-- kernels): what each rank of an expert-parallel group sends where.
--
-- DeepEP (deepseek-ai/DeepEP, csrc/kernels/internode.cu b805c0e, the
-- "normal" kernels Megatron's --moe-flex-dispatcher-backend deepep runs;
-- README: "kernels optimized for asymmetric-domain bandwidth forwarding,
-- such as forwarding data from NVLink domain to RDMA domain"): a rank
-- sends each token once to every node that holds one of its top-k
-- experts, over RDMA to the GPU of its own local index there (the token's
-- SourceMeta carries the set of that node's GPUs it goes to), and that
-- GPU forwards it over NVLink to each of those GPUs once, however many of
-- their experts the token picked; inside the sender's own node the token
-- goes over NVLink to each destination GPU once. The combine sends the
-- same tokens back the same way, reduced per GPU and then per node.
-- HybridEP (NVIDIA's, --moe-flex-dispatcher-backend hybridep) moves the
-- same bytes inside an NVLink domain and is costed the same way.
--
-- Under even routing (Megatron-Bridge's moe_router_force_load_balancing:
-- random router logits, so a token's top-k is a uniform k-subset of the
-- experts, or of the experts of its M chosen groups under group-limited
-- routing, moe_utils.py group_limited_topk) a rank receives from each
-- peer the expected number of tokens that hit it.
local check = require "pipesim.argcheck"

local M = {}

-- C(a, k) / C(b, k): the chance that k distinct picks out of b all fall
-- among a given a of them.
local function avoid(a, b, k)
    if a < k then return 0 end
    local p = 1
    for i = 0, k - 1 do p = p * (a - i) / (b - i) end
    return p
end

local function binom(n, r)
    if r < 0 or r > n then return 0 end
    local c = 1
    for i = 1, r do c = c * (n - r + i) / i end
    return c
end

-- hit(E, k, X, g, m) -> the chance that a token's k experts (of E)
-- include one of a contiguous, aligned range of X experts (a GPU's or a
-- node's), with g router groups of which the token picks m (nil: no
-- group limit). The range lies inside one group (E/g a multiple of X) or
-- spans q = X g / E whole groups (X a multiple of E/g); the token picks m
-- groups uniformly, then k of their m E/g experts.
function M.hit(E, k, X, g, m)
    g, m = g or 1, m or 1
    local Eg = E // g
    local pool = m * Eg
    if X <= Eg then
        return m / g * (1 - avoid(pool - X, pool, k))
    end
    local q = X // Eg
    local miss = 0
    for j = math.max(0, m - (g - q)), math.min(q, m) do
        miss = miss + binom(q, j) * binom(g - q, m - j) / binom(g, m) *
            avoid(pool - j * Eg, pool, k)
    end
    return 1 - miss
end

-- How an expert-parallel group lies on the cluster: groups (lists of
-- cluster ranks, from ps.layout's "ep"), gpn the cluster's GPUs per node.
-- Returns { G = its ranks per node, N = its nodes }, or fails naming what
-- the flex dispatcher's path needs: nodes of GPUs behind NICs, and every
-- node of a group holding the group's ranks at the same local indices
-- (each token's RDMA hop goes to the sender's local index on the other
-- node).
function M.layout(groups, gpn)
    if math.type(gpn) ~= "integer" or gpn < 2 then
        -- a mesh or a graph of links reports 1 (core/par/pass.h: unknown)
        check.fail("field 'moe_dispatcher': flex needs a cluster of nodes (nodes, " ..
            "gpus_per_node: NVLink inside a node, RDMA across), not a mesh of links")
    end
    local G, N
    for _, ranks in ipairs(groups) do
        local nodes, order = {}, {}
        for _, r in ipairs(ranks) do
            local n = r // gpn
            if not nodes[n] then nodes[n] = {}; order[#order + 1] = n end
            nodes[n][#nodes[n] + 1] = r % gpn
        end
        local first = nodes[order[1]]
        for _, n in ipairs(order) do
            local l = nodes[n]
            local same = #l == #first
            for i = 1, #l do same = same and l[i] == first[i] end
            if not same then
                check.fail("field 'moe_dispatcher': flex needs each node of an expert-parallel " ..
                    "group to hold its ranks at the same local GPU indices (the RDMA hop " ..
                    "goes to the sender's index); the group of ranks %d.. has %d on node %d " ..
                    "and %d on node %d", ranks[1], #first, order[1], #l, n)
            end
        end
        G, N = #first, #order
    end
    return { G = G, N = N }
end

-- The flex dispatcher's figures for one MoE block: sh its shape, c its
-- moe.block_cost (even routing, etp = 1: the all-to-all's bytes, each S
-- (ep - 1) / ep token copies, S = c.routed_tokens), ep, lay = M.layout's,
-- Tr the tokens the rank routes. Returns the four exchanges' bytes per
-- rank and the shares of them each NVLink peer and each RDMA peer gets
-- (core/par/pass.h par_moe flex_nvl, flex_rdma).
function M.bytes(sh, c, ep, lay, Tr)
    local E, k = sh.experts, sh.topk
    local El = E // ep
    local g, m = sh.router_groups, sh.router_group_topk
    for _, X in ipairs { El, El * lay.G } do
        local Eg = E // (g or 1)
        if not (Eg % X == 0 or X % Eg == 0) then
            check.fail("field 'moe_dispatcher': flex with %d router groups of %d experts " ..
                "and %d experts on a %s is not modelled (neither holds the other whole)",
                g or 1, Eg, X, X == El and "GPU" or "node")
        end
    end
    local nvl = lay.N * Tr * M.hit(E, k, El, g, m)
    local rdma = lay.N > 1 and Tr * M.hit(E, k, El * lay.G, g, m) or 0
    local tokens = (lay.G - 1) * nvl + (lay.N - 1) * rdma
    local copies = c.routed_tokens * (ep - 1) / ep
    local scale = tokens / copies
    return { dispatch = c.dispatch_bytes * scale, combine = c.combine_bytes * scale,
             dispatch_grad = c.dispatch_grad_bytes * scale,
             combine_grad = c.combine_grad_bytes * scale,
             nvl_share = nvl / tokens, rdma_share = rdma / tokens, tokens = tokens }
end

return M
