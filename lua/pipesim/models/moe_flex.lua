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

-- What DeepEP's normal kernels achieve, where the links would allow more
-- (deepseek-ai/DeepEP dd758ca, docs/legacy.md "Normal kernels with NVLink
-- and RDMA forwarding" and tests/legacy/test_internode.py, the V1 kernels
-- Megatron-LM's fused_a2a.py calls; 24 SMs, Megatron's default
-- moe_deepep_num_sms is 20). The test's figures are logical: its RDMA
-- bytes count a token once per destination node, its own node included,
-- and its NVLink bytes every token a GPU receives, its own included.
--   rdma_efficiency  of the NIC's rate, what the internode kernels move
--       across: on H800 with CX7 400 Gb/s (~50 GB/s), 58 GB/s logical at
--       EP 32 (4 nodes: 3/4 of it crosses, 43.5 GB/s) and 51 GB/s at EP 64
--       (8 nodes, top-4 groups: 7/8 crosses, 44.6 GB/s): 44 / 50.
--   nvl_forward  bytes a second a GPU receives over NVLink (logical)
--       under the internode kernels on Hopper, where the forwarder warps
--       that copy each RDMA chunk on to the node's GPUs are the limit, not
--       the link: on H200 (NVLink 450 GB/s a direction, as H100's), two
--       nodes, 134 GB/s in a BF16 dispatch and 145 GB/s in a combine
--       (DeepEP issue #493, a84a248); on H800 (160 GB/s achievable) the
--       legacy README's EP 16 row, 43 GB/s RDMA logical, implies 139 GB/s
--       of NVLink received. 140e9. The intranode kernels (one node) are
--       left at the link's rate: 153 of H800's ~160 GB/s, 337 GB/s on
--       H20 at the default SMs (issue #16) against pipesim's 370.
--   layout_time, notify_time  before each forward dispatch, Megatron's
--       fused_a2a.py runs get_dispatch_layout and then dispatch without a
--       cached handle, whose notify_dispatch exchanges the counts and makes
--       the CPU wait for them: the layout kernel takes 54-55 us at 4096
--       tokens and 256 experts on H100 and H20 (issues #261, #158), the
--       notify 96-161 us on 4 x 8 H100 (issue #397). The backward's
--       dispatch and combine reuse the handle (no notify).
M.DEEPEP = { rdma_efficiency = 44 / 50, nvl_forward = 140e9, layout_time = 55e-6,
             notify_time = 100e-6 }

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
function M.layout(groups, gpn, cluster)
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
    return M.rates({ G = G, N = N }, groups[1], gpn, cluster)
end

-- lay with the links the flex exchanges use, from the cluster (a
-- ps.cluster's path): nvl_bw from the group's first rank to a rank of
-- its node, rdma_bw to the rank of its local index on another node, and
-- hopper when the device is compute capability 9.x (DeepEP's measured
-- NVLink forwarding rate, M.DEEPEP, is Hopper's).
function M.rates(lay, ranks, gpn, cluster)
    if not (cluster and type(cluster) == "userdata") then return lay end
    local a = ranks[1]
    for _, b in ipairs(ranks) do
        if b ~= a and b // gpn == a // gpn and not lay.nvl_bw then
            lay.nvl_bw = select(2, cluster:path(a, b))
        elseif b // gpn ~= a // gpn and b % gpn == a % gpn and not lay.rdma_bw then
            lay.rdma_bw = select(2, cluster:path(a, b))
        end
    end
    local cc = cluster.compute_capability
    lay.hopper = cc ~= nil and cc >= 90 and cc < 100
    return lay
end

-- The factors by which the flex exchanges' NVLink and RDMA bytes grow so
-- that the links carry them in the time DeepEP's internode kernels take
-- (M.DEEPEP): across nodes, a GPU's NVLink sends (G - 1) N Tr p_gpu
-- tokens at the link's nvl_bw where DeepEP receives G N Tr p_gpu at
-- nvl_forward on Hopper, so k_nvl = G nvl_bw / ((G - 1) nvl_forward)
-- when above 1; the RDMA hop runs at rdma_efficiency of the NIC. One
-- node (DeepEP's intranode kernels), or a cluster the lowering did not
-- give (lay without rates): 1 and 1.
function M.slowdown(lay)
    if not (lay.N > 1 and lay.rdma_bw) then return 1, 1 end
    local knvl = 1
    if lay.hopper and lay.G > 1 and lay.nvl_bw then
        knvl = math.max(1, lay.G * lay.nvl_bw / ((lay.G - 1) * M.DEEPEP.nvl_forward))
    end
    return knvl, 1 / M.DEEPEP.rdma_efficiency
end

-- The flex dispatcher's figures for one MoE block: sh its shape, c its
-- moe.block_cost (even routing, etp = 1: the all-to-all's bytes, each S
-- (ep - 1) / ep token copies, S = c.routed_tokens), ep, lay = M.layout's,
-- Tr the tokens the rank routes. Returns the four exchanges' bytes per
-- rank and the shares of them each NVLink peer and each RDMA peer gets
-- (core/par/pass.h par_moe flex_nvl, flex_rdma), each share grown by
-- M.slowdown's factor (the bytes the links carry in DeepEP's time), and
-- fixed_fwd_time, the layout and notify before a forward dispatch.
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
    local knvl, krdma = M.slowdown(lay)
    return { dispatch = c.dispatch_bytes * scale, combine = c.combine_bytes * scale,
             dispatch_grad = c.dispatch_grad_bytes * scale,
             combine_grad = c.combine_grad_bytes * scale,
             nvl_share = nvl / tokens * knvl, rdma_share = rdma / tokens * krdma,
             tokens = tokens, fixed_fwd_time = M.DEEPEP.layout_time + M.DEEPEP.notify_time }
end

return M
