-- ps.search's closed forms (lua/pipesim/search.lua calls them): per configuration,
-- from the run ps.run would hand the core, the peak memory per rank and a
-- lower bound on the step time, with no simulation.
local core = require "pipesim.core"
local parallel = require "pipesim.parallel"
local sharding = require "pipesim.sharding"

local M = {}

-- Schedules whose per-rank order (and so whose peak memory) the closed form
-- below reproduces exactly; the others get a lower bound.
local EXACT = { gpipe = true, ["1f1b"] = true, interleaved = true }
-- Schedules that run v > 1 chunks per rank (core/sched/sched.c sched_check), and
-- those whose second chunk sits in V shape (sched_default_placement).
local MULTI_CHUNK = { interleaved = true, looped_bfs = true, interleaved_pytorch = true,
                      interleaved_zb = true, zbv = true, dualpipev = true }
local V_SHAPE = { zbv = true, dualpipev = true }
M.EXACT, M.MULTI_CHUNK, M.V_SHAPE = EXACT, MULTI_CHUNK, V_SHAPE

---------------------------------------------------------------------------
-- Closed forms from the lowered run (what ps.run hands the core)
---------------------------------------------------------------------------

function M.stage_of(sched, p, chunk, r)
    if V_SHAPE[sched] and chunk % 2 == 1 then return (chunk + 1) * p - 1 - r end
    return chunk * p + r
end

-- The model stages pipeline rank r holds (0-based), and the microbatches
-- each runs: its v chunks, each for all m; under DualPipe (v 1) stage r
-- and a copy of stage p - 1 - r, each for the half of the microbatches
-- that run its way (DeepSeek's DualPipe: two copies of the parameters,
-- core/par/dp.c dp_memory counts both).
local function held(sched, p, v, r)
    if sched == "dualpipe" then return { r, p - 1 - r }, 0.5 end
    local out = {}
    for ch = 0, v - 1 do out[ch + 1] = M.stage_of(sched, p, ch, r) end
    return out, 1
end
M.held = held

-- Per model stage: forward, backward, recompute seconds per microbatch,
-- parameters, and the memory its microbatch holds, mirroring core/step/pipe.c
-- build_stages and stage_recompute: without recompute F allocates the
-- stage's activations and B frees them; with full recompute F keeps the
-- checkpointed inputs (`kept`), R restores the largest unit beyond them
-- (`unit`) and B frees both.
function M.stages(args)
    local out, at = {}, 0
    local ck = args.checkpoint == true
    for s, count in ipairs(args.partition) do
        local st = { F = 0, B = 0, R = 0, params = 0, out = 0, static = 0, work = 0, expert = 0 }
        local act, kept, any, cur, unit = 0, 0, false, 0, 0
        for i = at + 1, at + count do
            local l = args.layers[i]
            -- plain FLOP layers (no time) count 0: the bound stays a bound
            local f = tonumber(l.fwd_time) or 0
            local b = tonumber(l.bwd_time)
            if not b and l.bwd_input_time and l.bwd_weight_time then
                b = l.bwd_input_time + l.bwd_weight_time
            end
            st.F, st.B = st.F + f, st.B + (b or 2 * f)
            if ck then st.R = st.R + (tonumber(l.recompute_time) or f) end
            st.params = st.params + (tonumber(l.params) or 0)
            -- the experts' own parameters (core/par/ep_sync.c syncs and
            -- shards them over the expert data-parallel group)
            st.expert = st.expert + (tonumber(l.moe_expert_params) or 0)
            -- the layer's own static bytes (FP8 weight copies: core/par/dp.c
            -- dp_memory adds pipe_layer.static_bytes to the stage's)
            st.static = st.static + (tonumber(l.static_bytes) or 0)
            -- the largest working bytes of its layers (context parallelism's
            -- K/V buffers: core/par/pp.c pp_memory holds a rank's largest
            -- over the step, beside its static bytes)
            st.work = math.max(st.work, tonumber(l.work_bytes) or 0)
            -- what the stage sends on (core/step/pipe_cost.c: its last layer's)
            st.out = tonumber(l.out_bytes) or 0
            local a = tonumber(l.act_bytes) or 0
            act = act + a
            local kb = tonumber(l.kept_bytes)
            if kb then any = true else kb = a end
            if kb > 0 then cur = 0 end
            cur = cur + math.max(a - kb, 0)
            unit = math.max(unit, cur)
            kept = kept + kb
        end
        if ck and any then
            st.alloc, st.extra = kept, unit
        else
            st.alloc, st.extra = act, 0
        end
        st.held = st.alloc + st.extra
        out[s] = st
        at = at + count
    end
    return out
end

-- The network's figures for the bound, per cluster and pair of ranks
-- (c:path: route latency, bottleneck bandwidth, first link's bandwidth
-- and id), asked once per pair: a search costs each pair many times.
local PATHS = setmetatable({}, { __mode = "k" })

local function path(cluster, a, b)
    local memo = PATHS[cluster]
    if not memo then memo = { n = cluster.ranks }; PATHS[cluster] = memo end
    local key = a * memo.n + b
    local e = memo[key]
    if not e then
        e = table.pack(cluster:path(a, b))
        memo[key] = e
    end
    return e
end

-- The least time bytes take from cluster rank a to b: the route's latency
-- plus bytes over its bottleneck bandwidth (core/net/net.c net_lone_time), what
-- the transfer takes alone; sharing links and waiting only add to it.
local function lone(cluster, a, b, bytes)
    if not cluster or a == b then return 0 end
    local e = path(cluster, a, b)
    return e[1] + bytes / e[2]
end

-- A lower bound on a collective in which the first rank of group (the
-- cluster ranks of one pipeline rank's d replicas, replica 0's first) must
-- send `bytes`: they leave on the first links of its routes to the others,
-- and the last of them arrives a route latency later at the earliest.
-- What it must send, whatever the algorithm (ring, the trees, direct,
-- NVLS) and protocol (which only add bytes; NVLS's transfers are scaled to
-- carry more, core/coll/proto.c): in an all-reduce its whole gradient,
-- since every other rank needs a sum of each of its elements; in a
-- reduce-scatter its contributions to the other d - 1 shards, (d - 1)/d of
-- it; in an all-gather its own shard, 1/d of the weights, at least once.
-- The group's figures for it: the least route latency and the first
-- links' bandwidth in all (group.lat, group.cap, kept in the group).
local function coll_links(cluster, group)
    if group.cap then return group.lat, group.cap end
    local a = group[1]
    local cap, lat, seen = 0, math.huge, {}
    for j = 2, #group do
        local e = path(cluster, a, group[j])
        lat = math.min(lat, e[1])
        local bw, id = e[3], e[4]
        if bw and id == nil then
            cap = cap + bw -- a mesh: every pair has its own link
        elseif bw and not seen[id] then
            seen[id] = true
            cap = cap + bw
        end
    end
    group.lat, group.cap = lat, cap
    return lat, cap
end

local function coll_bound(cluster, group, bytes)
    if not cluster or #group < 2 then return 0 end
    local lat, cap = coll_links(cluster, group)
    if cap <= 0 then return lat end
    return lat + bytes / cap
end

-- The largest running sum of pipeline rank r's activation allocations
-- over its schedule (F +alloc, R +extra, B -held: core/sim/mem.c's ledger
-- of one compute lane), or for the schedules without a closed-form order
-- a lower bound, the largest chunk's one microbatch.
local function act_peak(st, sched, p, v, m, r)
    local top, cur = 0, 0
    local function f(ch)
        cur = cur + st[ch * p + r + 1].alloc
        if cur > top then top = cur end
    end
    local function b(ch)
        -- R restores `extra` right before B, which frees it and the
        -- forward's allocation
        local g = st[ch * p + r + 1]
        if cur + g.extra > top then top = cur + g.extra end
        cur = cur - g.alloc
    end
    if sched == "gpipe" or sched == "1f1b" then
        -- every F before its B: min(p - r, m) forwards held at once
        -- (core/sched/sched.c order_1f1b: a warm-up of p - r - 1, then
        -- one F a B)
        local g = st[r + 1]
        local at_once = sched == "gpipe" and m or math.min(p - r, m)
        return at_once * g.alloc + g.extra
    elseif sched == "interleaved" then
        -- core/sched/sched.c order_interleaved (virtual_mb): warm-up
        -- forwards, then one F a B, then the cool-down backwards
        local total, pv = m * v, p * v
        local warm = math.min(2 * (p - r - 1) + (v - 1) * p, total)
        for k = 0, warm - 1 do f((k % pv) // p) end
        -- the steady pairs repeat with period pv, each chunk p times
        -- forward and p times backward in a period, so a period leaves
        -- the sum where it was: its first period holds the steady
        -- phase's peak, and after n pairs the sum is where it was after
        -- n mod pv (O(pv), not O(m v), per rank)
        local steady = total - warm
        local left = steady % pv
        local after = cur
        for k = 0, math.min(steady, pv) - 1 do
            f(((k + warm) % pv) // p)
            b(v - 1 - (k % pv) // p)
            if k + 1 == left then after = cur end
        end
        if steady > pv then cur = after end
        for k = total - warm, total - 1 do b(v - 1 - (k % pv) // p) end
        return top
    end
    if sched == "looped_bfs" then
        -- core/sched/pt.c looped_bfs (PyTorch's ScheduleLoopedBFS): every
        -- forward of every chunk before the first backward, of the last
        -- chunk (its recompute restoring `extra` first)
        local sum = 0
        for ch = 0, v - 1 do sum = sum + m * st[ch * p + r + 1].alloc end
        return sum + st[(v - 1) * p + r + 1].extra
    elseif sched == "interleaved_pytorch" or sched == "interleaved_zb" then
        -- core/sched/pt.c interleaved (PyTorch's _get_warmup_ops): the
        -- warm-up forwards, and the first steady step's forward, are held
        -- when the first backward starts, chunks in rounds of mpr
        -- microbatches; a lower bound on the peak (what follows may hold more)
        local mpr = m // math.max(1, m // p)
        local warm = math.min((v - 1) * mpr + (sched == "interleaved_zb" and 1 or 2) * (p - 1 - r),
            m * v)
        local held_f = warm + (warm < m * v and 1 or 0)
        -- forward k is of chunk (k // mpr) % v: rounds full rounds of mpr
        -- and rem more of chunk rounds % v
        local rounds, rem = held_f // mpr, held_f % mpr
        local sum = 0
        for ch = 0, v - 1 do
            local n = (rounds // v + (ch < rounds % v and 1 or 0)) * mpr
                + (ch == rounds % v and rem or 0)
            sum = sum + n * st[ch * p + r + 1].alloc
        end
        -- the first backward is of the last chunk (BCHUNK(warm))
        return sum + st[(v - 1) * p + r + 1].extra
    end
    for _, sx in ipairs((held(sched, p, v, r))) do top = math.max(top, st[sx + 1].held) end
    return top
end

-- sync_groups(args, at_list, p) -> group(r): the cluster ranks of pipeline
-- rank r's gradient-sync group, its replica-0 rank first: the replicas'
-- stage ranks, or with cp > 1 the layout's dp-cp group (ps.layout's
-- groups["dp-cp"]), whose CP ranks are not among the simulated replicas.
local function sync_groups(args, at_list, p)
    local dp, cp = args.dp or 1, args.cp or 1
    if cp == 1 then
        return function(r)
            local g = {}
            for j = 0, dp - 1 do g[j + 1] = at_list[j * p + r + 1] end
            return g
        end
    end
    local groups = parallel.layout { tp = args.tp or 1, cp = cp, dp = dp, pp = p }
        .groups["dp-cp"]
    local of = {}
    for _, g in ipairs(groups) do
        for _, rank in ipairs(g) do of[rank] = g end
    end
    return function(r)
        local first = at_list[r + 1]
        local g = { first }
        for _, rank in ipairs(of[first]) do
            if rank ~= first then g[#g + 1] = rank end
        end
        return g
    end
end

-- The distributed optimizer's padding (ZeRO-1): every bucket of a model
-- chunk's gradient buffer padded to a multiple of lcm(dp, 128) elements,
-- held at the weight's and the gradient's bytes. A chunk is one bucket
-- unless it is cut (grad_sync.bucketed: "all", or "first", the default,
-- for pipeline rank 0's first chunk only), then the first bucket holds
-- first_bucket bytes and the others bucket bytes. The rule is the dp
-- pass's own (core/par/dp_lane.c close_bucket, Megatron's
-- param_layout.py), through core.dp_pad.
local function bytes_of(v, default)
    if v == nil then return default end
    return type(v) == "number" and v or core.parse(v, "bytes")
end

local function pad_elements(P, shard, cut, gb, first_cap, cap)
    if not (P > 0) then return 0 end
    return core.dp_pad(P, shard, cut, gb, first_cap, cap)
end

-- cost(args, c) -> { memory = closed-form peak bytes (the largest rank's),
-- exact = whether it is the simulated peak or only a lower bound, bound =
-- a lower bound on the step time, rank = the rank with the largest peak }.
-- The peak of a rank is its static memory (weights, gradients, optimizer
-- state, ZeRO-1 dividing the last by dp: core/step/pipe.c) plus the largest
-- running sum of its schedule's allocations (F +alloc, R +extra, B -held),
-- which is what the memory ledger (core/sim/mem.c) computes from one compute
-- lane. The bound on the step time holds for any schedule: rank r cannot
-- start before microbatch 0's forward went through stages 0..r-1 and over
-- the r links between them (fill; each transfer at least its time alone on
-- the network), then computes m (F + R + B) per chunk one op at a time
-- (busy). Without overlap (Megatron's default, which ps.search builds) the
-- gradient sync starts after the rank's last op (core/par/dp_lane.c par_dp_rewrite_lane),
-- and the optimizer step waits for it; with ZeRO-1 the sync is a
-- reduce-scatter and an all-gather of the updated weights follows the step
-- (sync = before + opt + after). For the
-- Megatron-order schedules the rank's last op is the backward of stage r,
-- after which stages r-1..0 still run theirs, each after the gradient
-- came down its link (drain; Megatron receives it before the recompute,
-- core/sched/lower.c), and then rank 0 syncs and steps.
--
-- memo (optional): a table kept between configurations that share the
-- lowered layers, the partition and the layout (all but schedule and ZeRO
-- stage: ps.search's groups), holding the stage figures and the ranks.
-- c.zero, when set, is the ZeRO stage over args.zero, and Megatron's
-- overlap of the gradient reduction follows it (on for ZeRO-2/3, which
-- ps.search builds as Megatron-FSDP with overlap_grad_reduce, off below).
function M.cost(args, c, memo)
    memo = memo or {}
    local st = memo.st
    if not st then st = M.stages(args); memo.st, memo.top = st, {} end
    local p, v, m = args.stages, args.virtual_stages or 1, args.microbatches
    -- the gradients sync and the optimizer shards over dp x cp (Megatron's
    -- data-parallel group with_context_parallel=True; core/par/dp.c)
    local d = (args.dp or 1) * (args.cp or 1)
    local mem = args.memory or {}
    -- ZeRO's stage over the data-parallel group (or its shard group): the
    -- ZeRO paper's bytes per parameter (ps.sharding); ZeRO-2/3's buffers
    -- beyond them (core/par/fsdp.c) are left out, so their memory is a
    -- lower bound, and their sync runs during the backward (a bound of
    -- its own below)
    local stage = d > 1 and (c.zero or args.zero or 0) or 0
    local shard = args.shard_group or d
    local zero = stage == 1
    local per_param = sharding.per_param(stage, shard, mem.weight_bytes or 2,
        mem.grad_bytes or 2, mem.optimizer_bytes or 12)
    local opt = (tonumber(args.optimizer_time) or 0) / (stage >= 1 and shard or 1)
    local exact = EXACT[c.schedule] ~= nil and stage < 2
    -- mixture of experts: where the expert data-parallel group differs
    -- from dp x cp (ep > 1 or etp unlike tp; core/par/ep_sync.c
    -- par_ep_sync_applies) the experts' parameters keep their weights and
    -- gradients whole and their optimizer state divided by the expert
    -- data-parallel size under the distributed optimizer (whatever dp x cp
    -- is: par_ep_sync_memory); ZeRO-2/3 keep at least that
    local tp = c.tp or args.tp or 1
    local etp, ep = c.etp or args.etp or tp, c.ep or args.ep or 1
    local apart = ep > 1 or etp ~= tp
    local per_expert = 0
    if apart then
        local edp = tp * (args.cp or 1) * (args.dp or 1) // (etp * ep)
        local zs = c.zero or args.zero or 0
        per_expert = (mem.weight_bytes or 2) + (mem.grad_bytes or 2)
            + (mem.optimizer_bytes or 12) / ((zs >= 1 and edp > 1) and edp or 1)
    end
    local cluster = type(args.cluster) == "userdata" and args.cluster or nil
    -- the layout's ranks: TP rank 0 of each group, and the sync groups
    -- (with their links' figures), shared by the configurations of one
    -- layout through memo.layouts
    local lay = memo.lay
    if not lay then
        local shared = not args.ranks and not args.placement and memo.layouts or nil
        local key = table.concat({ args.tp or 1, args.cp or 1, args.dp or 1, p }, "|")
        lay = shared and shared[key]
        if not lay then
            lay = { at_list = parallel.stage_ranks(args), groups = {} }
            if shared then shared[key] = lay end
        end
        memo.lay = lay
    end
    local at_list, groups = lay.at_list, lay.groups
    local function at(r, j) return at_list[j * p + r + 1] end
    local function sync_group(r)
        local g = groups[r]
        if not g then
            lay.group_of = lay.group_of or sync_groups(args, at_list, p)
            g = lay.group_of(r)
            groups[r] = g
        end
        return g
    end
    local overlap
    if c.zero ~= nil then
        overlap = c.zero >= 2
    else
        local gs = args.grad_sync
        overlap = not (type(gs) == "table" and gs.overlap == false)
    end
    local grad_bytes, weight_bytes = mem.grad_bytes or 2, mem.weight_bytes or 2
    local gs = type(args.grad_sync) == "table" and args.grad_sync or {}
    local cut_mode = gs.bucketed or "first"
    local first_bucket = bytes_of(gs.first_bucket, 1024 * 1024)
    local bucket = bytes_of(gs.bucket, 25 * 1024 * 1024)
    local best_mem, best_rank, bound = 0, 0, 0
    local peaks, sync = {}, {}
    -- DualPipe's reverse direction enters at rank p - 1 (its copy of
    -- stage 0): rank r's copy, stage p-1-r, starts after the forwards of
    -- stages 0 .. p-2-r (their transfers counted as 0)
    local rfill = {}
    if c.schedule == "dualpipe" then
        local acc = 0
        for k = 0, p - 1 do
            rfill[p - 1 - k] = acc
            acc = acc + st[k + 1].F
        end
    end
    -- microbatch 0's activations up to rank r, the last microbatch's
    -- gradient down from it (fill[r], drain[r]), the same for every
    -- schedule and ZeRO stage of the memo's group
    local fills, drains = memo.fills, memo.drains
    if not fills then
        fills, drains = { [0] = 0 }, { [0] = 0 }
        for r = 0, p - 2 do
            local g = st[r + 1]
            fills[r + 1] = fills[r] + g.F + lone(cluster, at(r, 0), at(r + 1, 0), g.out)
            drains[r + 1] = drains[r] + g.R + g.B + lone(cluster, at(r + 1, 0), at(r, 0), g.out)
        end
        memo.fills, memo.drains = fills, drains
    end
    local helds = memo.held and memo.held[c.schedule]
    if not helds then
        memo.held = memo.held or {}
        helds = {}
        memo.held[c.schedule] = helds
    end
    for r = 0, p - 1 do
        local static, busy, params, work = 0, 0, 0, 0
        local hr = helds[r]
        if not hr then hr = table.pack(held(c.schedule, p, v, r)); helds[r] = hr end
        local stages, share = hr[1], hr[2]
        local fill, drain = fills[r], drains[r]
        for k, sx in ipairs(stages) do
            local g = st[sx + 1]
            local dense = apart and g.params - g.expert or g.params
            static = static + dense * per_param + (apart and g.expert * per_expert or 0) + g.static
            if zero then
                local cut = cut_mode == "all" or (cut_mode == "first" and r == 0 and k == 1)
                static = static + pad_elements(dense, shard, cut, grad_bytes, first_bucket, bucket)
                    * (weight_bytes + grad_bytes)
            end
            work = math.max(work, g.work)
            -- DualPipe's copy: its gradient may be summed with the
            -- original's before the sync, so the sync bound counts one;
            -- the experts' own sync (apart) is not counted
            if k == 1 or share == 1 then params = params + dense end
            busy = busy + m * share * (g.F + g.R + g.B)
        end
        sync[r] = opt
        if d > 1 and not overlap then
            local group = sync_group(r)
            if zero then
                sync[r] = coll_bound(cluster, group, (d - 1) / d * params * grad_bytes) + opt
                    + coll_bound(cluster, group, params * weight_bytes / d)
            else
                sync[r] = coll_bound(cluster, group, params * grad_bytes) + opt
            end
        end
        -- ZeRO-2/3 (Megatron-FSDP, overlap_grad_reduce): the gradients'
        -- reduce-scatters run beside the backward, one after every
        -- backward of a microbatch, since the gradients are kept sharded
        -- (core/par/fsdp.c, as DeepSpeed's and FSDP's), one after the
        -- other on the rank's reduce lane; each must send (d - 1)/d of the
        -- microbatch's gradient (over the shard group), whatever the
        -- algorithm, and the optimizer step waits for the last: a bound
        -- of its own. ZeRO-3 also all-gathers the weights before every
        -- forward and backward, on another lane but out of the same links:
        -- the rank sends its shard, 1/d of them, at least once each time
        local overlapped = 0
        if stage >= 2 and cluster and d > 1 then
            local lat, cap = coll_links(cluster, sync_group(r))
            local per_mb = (shard - 1) / shard * params * grad_bytes
                + (stage == 3 and 2 * params * weight_bytes / shard or 0)
            overlapped = m * share * lat + (cap > 0 and m * share * per_mb / cap or 0) + opt
        end
        -- the activations' peak: the same for every ZeRO stage (memo.top)
        local tops = memo.top[c.schedule]
        if not tops then tops = {}; memo.top[c.schedule] = tops end
        local top = tops[r]
        if not top then top = act_peak(st, c.schedule, p, v, m, r); tops[r] = top end
        local peak = static + work + top
        peaks[r + 1] = peak
        if peak > best_mem then best_mem, best_rank = peak, r end
        local tail = sync[r]
        if EXACT[c.schedule] then tail = math.max(tail, drain + sync[0]) end
        -- DualPipe feeds microbatches from both ends: rank r's first op
        -- may be the reverse direction's, after stages p-1 .. r+1 (their
        -- copies on ranks 0 .. p-2-r)
        local first = fill
        if c.schedule == "dualpipe" then first = math.min(fill, rfill[r]) end
        bound = math.max(bound, first + busy + tail, overlapped)
    end
    return { memory = best_mem, exact = exact, bound = bound, rank = best_rank, peaks = peaks }
end

return M
