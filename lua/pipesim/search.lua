-- ps.search: plan search over TP x CP (and its comm type) x PP x DP x
-- virtual stages x micro-batch size x schedule x recompute x ZeRO x
-- sequence parallelism x precision (search_space.lua). Enumerates
-- the space, removes what Megatron-LM itself would reject, drops what the
-- closed-form memory model says cannot fit, and event-simulates the rest
-- in order of a lower bound on the step time, skipping a configuration
-- only when the bound proves it can neither be the best nor on the Pareto
-- front (step time against peak memory).
local check = require "pipesim.argcheck"
local core = require "pipesim.core"
local models = require "pipesim.models"
local megatron = require "pipesim.models.megatron"
local parallel = require "pipesim.parallel"
local roofline = require "pipesim.models.roofline"
local split = require "pipesim.models.megatron_split"
local relax = require "pipesim.search_relax"
local search_cost = require "pipesim.search_cost"
local search_space = require "pipesim.search_space"
local transformer = require "pipesim.models.transformer"

local M = {}

local FIELDS = { name = true, model = true, cluster = true, gpus = true, global_batch = true,
                 space = true, objective = true, jobs = true, record = true, db = true,
                 prune = true, tp_in_node = true, pareto = true, max_collective_steps = true }

local GiB = 2 ^ 30
-- configurations simulated between two pruning checks (see M.run)
local BATCH = 8

local function fail(fmt, ...) check.fail("ps.search: " .. fmt, ...) end

M.cost, M.point, M.label = search_cost.cost, search_space.point, search_space.label

-- The model's shape: a preset name (ps.models.presets()) or a shape table
-- as ps.models.transformer takes it.
local function model_shape(m)
    local s
    if type(m) == "string" then s = models.shape(m)
    elseif type(m) == "table" then s = transformer.normalize(m)
    else fail("field 'model' must be a preset name or a shape table, got %s", type(m)) end
    -- the flags below describe a dense or a mixture-of-experts model: an
    -- MLA or MTP model would be searched as another one
    if s.multi_latent_attention or s.mtp_layers > 0 then
        fail("field 'model': the plan search does not cover multi-latent attention or " ..
            "multi-token prediction models yet")
    end
    return s
end

-- Megatron-LM flags of one configuration (models/megatron.lua builds the
-- run from them, with Megatron's defaults: memory bytes per parameter,
-- vocab padding, the even layer split, gradient sync in one go).
local function flags(s, c, spec)
    -- the space's precision (c.fp8: 'bf16' or a recipe, the model's format
    -- or hybrid) over the model's own
    if c.fp8 then
        local f = {}
        for k, v in pairs(s) do f[k] = v end
        f.fp8 = c.fp8 ~= "bf16" and (s.fp8 or "hybrid") or false
        f.fp8_recipe = c.fp8 ~= "bf16" and c.fp8 or s.fp8_recipe
        -- transformer.normalize's defaults where the model had no FP8
        if f.fp8_wgrad == nil then f.fp8_wgrad = true end
        f.fp8_bf16_first, f.fp8_bf16_last = f.fp8_bf16_first or 0, f.fp8_bf16_last or 0
        s = f
    end
    local ends = s.fp8 and s.fp8_bf16_first + s.fp8_bf16_last > 0
    local extra = search_space.split(s.layers, c.pp)
    return {
        num_layers = s.layers, hidden_size = s.hidden, ffn_hidden_size = s.ffn_hidden,
        num_attention_heads = s.heads, kv_channels = s.head_dim,
        group_query_attention = s.kv_heads ~= s.heads or nil,
        num_query_groups = s.kv_heads ~= s.heads and s.kv_heads or nil,
        swiglu = s.swiglu, squared_relu = s.squared_relu or nil, seq_length = s.seq,
        max_position_embeddings = s.max_positions,
        vocab_size = s.vocab, fp16 = s.dtype == "fp16", bf16 = s.dtype == "bf16",
        untie_embeddings_and_output_weights = not s.tied,
        position_embedding_type = s.position == "rope" and "rope" or "learned_absolute",
        normalization = s.norm == "rmsnorm" and "RMSNorm" or "LayerNorm",
        disable_bias_linear = not s.bias,
        attention_dropout = s.dropout and 0.1 or 0, hidden_dropout = s.dropout and 0.1 or 0,
        -- Megatron-Core's attention is TE's fused kernel unless unfused
        -- (models/megatron.lua attention)
        attention_backend = s.flash_attention and "auto" or "unfused",
        cross_entropy_loss_fusion = s.ce_fusion and true or nil,
        cross_entropy_fusion_impl = s.ce_fusion or nil,
        fp8_format = s.fp8 or nil, fp8_recipe = s.fp8 and s.fp8_recipe or nil,
        fp8_param_gather = s.fp8 and s.fp8_params or nil,
        no_fp8_wgrad = s.fp8 and not s.fp8_wgrad or nil, fp8_output_proj = s.fp8 and s.fp8_head or nil,
        first_last_layers_bf16 = ends or nil,
        num_layers_at_start_in_bf16 = ends and s.fp8_bf16_first or nil,
        num_layers_at_end_in_bf16 = ends and s.fp8_bf16_last or nil,
        micro_batch_size = c.microbatch, global_batch_size = spec.global_batch,
        world_size = parallel.world(c), tensor_model_parallel_size = c.tp,
        pipeline_model_parallel_size = c.pp, context_parallel_size = c.cp,
        cp_comm_type = c.cp > 1 and c.cp_comm or nil,
        num_layers_per_virtual_pipeline_stage = c.v > 1 and (s.layers + extra) // (c.pp * c.v) or nil,
        account_for_embedding_in_pipeline_split = extra > 0 or nil,
        account_for_loss_in_pipeline_split = extra > 0 or nil,
        sequence_parallel = c.sp, recompute_granularity = c.recompute ~= "none" and c.recompute or nil,
        recompute_method = c.recompute == "full" and "uniform" or nil,
        use_distributed_optimizer = c.zero == 1, schedule = c.schedule,
        -- ZeRO-2/3 as Megatron-FSDP runs them (docs/sharding.md), reducing
        -- during the backward
        use_megatron_fsdp = c.zero >= 2 or nil, overlap_grad_reduce = c.zero >= 2 or nil,
        data_parallel_sharding_strategy = ({ nil, "optim_grads", "optim_grads_params" })[c.zero],
        cluster = spec.cluster, record = spec.record or "summary", db = spec.db,
        -- mixture of experts (models/megatron_moe.lua reads them): the
        -- shape's experts, and the expert-parallel sizes of c, with the
        -- all-to-all dispatcher (allgather is Megatron's default, but with
        -- etp > 1 not modelled, and EP runs use all-to-all)
        num_experts = s.experts, moe_router_topk = s.experts and s.topk,
        moe_ffn_hidden_size = s.experts and s.expert_ffn,
        moe_shared_expert_intermediate_size = s.experts and s.shared_ffn > 0 and s.shared_ffn or nil,
        moe_layer_freq = s.experts and s.moe_layers,
        moe_expert_capacity_factor = s.experts and s.capacity_factor,
        moe_pad_expert_input_to_capacity = s.experts and s.pad_to_capacity or nil,
        moe_grouped_gemm = s.experts and s.grouped_gemm or nil,
        moe_permute_fusion = s.experts and s.permute_fusion or nil,
        moe_router_num_groups = s.experts and s.router_groups,
        moe_router_group_topk = s.experts and s.router_group_topk,
        moe_dispatch_fwd_dtype = s.experts and s.dispatch_dtype,
        moe_combine_bwd_dtype = s.experts and s.combine_grad_dtype,
        moe_token_dispatcher_type = s.experts and "alltoall" or nil,
        expert_model_parallel_size = s.experts and c.ep or nil,
        expert_tensor_parallel_size = s.experts and c.etp or nil,
        -- the model's name (run.model): the preset's, or the shape's own
        name = type(spec.model) == "string" and spec.model or s.name,
    }
end

---------------------------------------------------------------------------
-- The search
---------------------------------------------------------------------------

local function check_spec(ps, spec)
    if type(spec) ~= "table" then fail("expected a table of fields, got %s", type(spec)) end
    check.known_fields(spec, FIELDS, "ps.search")
    if spec.model == nil then fail("missing field 'model'") end
    if type(spec.cluster) ~= "userdata" then
        fail("field 'cluster' must be a cluster (ps.cluster), got %s", type(spec.cluster))
    end
    spec.gpus = check.posint(spec.gpus, "ps.search: field 'gpus'")
    if spec.gpus > spec.cluster.ranks then
        fail("field 'gpus' (%d) is more than the cluster's %d ranks", spec.gpus, spec.cluster.ranks)
    end
    spec.global_batch = check.posint(spec.global_batch, "ps.search: field 'global_batch'")
    local obj = spec.objective or "step_time"
    if obj ~= "step_time" then
        fail("field 'objective': unknown objective %s (expected 'step_time')", check.show(obj))
    end
    if spec.jobs ~= nil then check.posint(spec.jobs, "ps.search: field 'jobs'") end
    local prune = spec.prune or "bound"
    if prune ~= "bound" and prune ~= "none" then
        fail("field 'prune' must be 'bound' or 'none', got %s", check.show(prune))
    end
    if spec.pareto ~= nil and type(spec.pareto) ~= "boolean" then
        fail("field 'pareto' must be a boolean, got %s", check.show(spec.pareto))
    end
    if spec.max_collective_steps ~= nil then
        local n = spec.max_collective_steps
        if type(n) ~= "number" or n ~= n or n < 0 then
            fail("field 'max_collective_steps' must be a number >= 0, got %s", check.show(n))
        end
    end
    if spec.name ~= nil and type(spec.name) ~= "string" then
        fail("field 'name' must be a string, got %s", check.show(spec.name))
    end
    local space = spec.space
    if type(space) ~= "table" then fail("field 'space' must be a table, got %s", type(space)) end
    check.known_fields(space, search_space.SPACE, "ps.search: space")
    if next(space) == nil then
        fail("empty space: give at least one of %s", table.concat(search_space.SPACE, ", "))
    end
    local sp = search_space.check(space)
    local ok, shape = pcall(model_shape, spec.model)
    if not ok then fail("field 'model': %s", shape) end
    for _, k in ipairs { "ep", "etp" } do
        if sp[k] and not shape.experts then
            fail("space.%s needs a model with experts (a mixture-of-experts shape: ps.models, " ..
                "docs/moe.md); this one has none", k)
        end
    end
    local _ = ps
    return sp, shape, prune
end

-- The simulator lowers each collective into its algorithm's steps on
-- every simulated rank (core/coll/), and the step's programs are arrays of
-- about 56 bytes an op (7.3 GiB for 139 M ops: Llama 3 405B at tp 4, cp 8,
-- pp 16, dp 32 on 16,384 H100, main at 2261866), all replicas built before
-- folding. Plans whose collectives alone need more steps than MAX_STEPS
-- (about 1.7 GB of arrays) are not simulated: they would take minutes and
-- more memory than this machine has, or stop at --max-memory, which ends
-- the whole search. They are rows with status "too large", and make the
-- best unproven when their bound is below it (res.unproven).
local MAX_STEPS = 30e6
-- ZeRO-2/3's per-layer collectives take about 6 times the memory a step
-- of the gradient sync's takes: Llama 3 405B at tp 8, pp 16, dp 128, v 8,
-- micro-batch 4, ZeRO-2 (16.6 M steps by the estimate below) held 5.9 GB
-- resident while simulated, where 56 bytes a step would be 0.9 GB
local FSDP_WEIGHT = 6
-- Context parallelism's programs grow with dp^2 (main at 3e7f909):
-- Llama 3 405B at tp 4, cp 8, pp 16, v 8, 64 microbatches took 215 MB at
-- dp 4 and 860 MB at dp 8; at tp 4, cp 4, pp 32, v 4, interleaved_zb 89,
-- 230 and 887 MB at dp 4, 8, 16 (maximum resident, whole process): about
-- 56 bytes per estimated step times dp / 6.4 to dp / 7.7
local CP_DP = 6
-- Plans estimated above this many steps (some seconds to simulate) are
-- first simulated relaxed (search_relax.lua), which costs a 1/dp^2 share
local RELAX_STEPS = 3e6

-- A lower estimate of the ring steps of a configuration's collectives
-- over its simulated ranks (TP groups are folded to one: cp x pp x dp of
-- them), a send and a receive each: the gradient sync over dp x cp = d,
-- one per model chunk (v; dualpipe's two copies), a reduce-scatter and an
-- all-gather of d - 1 steps each (an all-reduce is both); ZeRO-2/3's
-- reduce-scatter of every layer after every microbatch (and ZeRO-3's two
-- all-gathers; core/par/fsdp.c, units are layers) instead; context
-- parallelism's exchange of K and V in every layer's forward and backward,
-- cp - 1 steps each, times dp / CP_DP (at least 1): the simulator builds
-- every replica's CP ranks before folding them, which grows with dp^2.
local function collective_steps(c, shape)
    local d = c.dp * c.cp
    local per_rank = ((shape.layers + (search_space.split(shape.layers, c.pp) or 0)) + c.pp - 1) // c.pp
    local steps = 0
    if c.zero >= 2 and d > 1 then
        -- weighted by FSDP_WEIGHT: its collectives (one a layer and
        -- microbatch) cost the simulator more memory per step
        steps = steps + FSDP_WEIGHT * c.microbatches * per_rank * 2 * (d - 1)
            * (c.zero == 3 and 3 or 1)
    elseif d > 1 then
        steps = steps + (c.schedule == "dualpipe" and 2 or c.v) * 4 * (d - 1)
    end
    if c.cp > 1 then
        steps = steps + c.microbatches * per_rank * 4 * (c.cp - 1) * math.max(1, c.dp / CP_DP)
    end
    return c.cp * c.pp * c.dp * steps
end

local function ranked(a, b)
    if a.step_time ~= b.step_time then return a.step_time < b.step_time end
    return a.index < b.index
end

-- Pareto front of step time against peak memory over the simulated rows
-- that fit: sorted by memory, each row faster than every row before it.
local function front(rows)
    local fit = {}
    for _, r in ipairs(rows) do
        if r.step_time and r.fits then fit[#fit + 1] = r end
    end
    table.sort(fit, function(a, b)
        if a.peak_memory ~= b.peak_memory then return a.peak_memory < b.peak_memory end
        return ranked(a, b)
    end)
    local out, fastest = {}, math.huge
    for _, r in ipairs(fit) do
        if r.step_time < fastest then out[#out + 1] = r; fastest = r.step_time end
    end
    return out
end

-- The ps.run table of configuration c (Megatron's flags built), its layer
-- list shared with the configurations of the same (micro-batch, tp, fp8).
local function build_run(c, shape, spec, layers_of)
    local run = megatron.build(flags(shape, c, spec))
    local key = c.microbatch .. "|" .. c.tp .. "|" .. tostring(c.fp8)
    if layers_of[key] then run.layers = layers_of[key] else layers_of[key] = run.layers end
    run.name = (spec.name or "search") .. "/" .. M.label(c)
    return run
end

-- What a configuration's lowered run shares with others (search_cost's
-- memo): all of it but the schedule and the ZeRO stage, which the closed
-- forms take from c.
local function group_key(c)
    return table.concat({ c.tp, c.cp, c.cp_comm, tostring(c.sp), c.microbatch, c.recompute,
        tostring(c.fp8), c.pp, c.v, c.dp, c.ep, tostring(c.etp) }, "|")
end

-- What parallel.prepare's lowered layers depend on: the TP and CP groups
-- it costs are the layout's first (ranks 0..tp-1 and every tp-th rank
-- from 0 in Megatron's tp-cp-dp-pp order), whatever pp and dp are, and
-- full recompute keeps every block's input (recompute_method uniform, one
-- layer a unit), whatever the split.
local function lower_key(c)
    return table.concat({ c.tp, c.cp, c.cp_comm, tostring(c.sp), c.microbatch, c.recompute,
        tostring(c.fp8), c.ep, tostring(c.etp) }, "|")
end

-- The run's figures for search_cost.cost where another configuration
-- with the same lower_key was lowered (args): its layers, split as
-- Megatron splits them for c (megatron_split, as megatron.build does),
-- and the optimizer step of the rank with the most parameters (as
-- parallel.lua finish_args: stage s on pipeline rank (s - 1) mod pp).
local function derived(args, c, shape, spec, dev)
    local part = split.partition(flags(shape, c, spec), shape.layers, c.pp)
    local d = setmetatable({ stages = c.pp, virtual_stages = c.v, dp = c.dp,
        microbatches = c.microbatches, partition = part }, { __index = args })
    if args.optimizer_time ~= nil and dev then
        local per, at = {}, 0
        for sidx, count in ipairs(part) do
            local r = (sidx - 1) % c.pp + 1
            for i = at + 1, at + count do
                per[r] = (per[r] or 0) + (tonumber(args.layers[i].params) or 0)
            end
            at = at + count
        end
        local most = 0
        for r = 1, c.pp do most = math.max(most, per[r] or 0) end
        d.optimizer_time = roofline.optimizer_time(dev, most, shape.dtype)
    end
    return d
end

-- Costs every valid configuration without simulating it: c.bound,
-- c.memory, ... (search_cost.cost). ps.run's checks and lowering run once
-- per lower_key, on the first configuration that passes them, the others
-- derived from it; one that fails is counted under 'ps.run'. Returns
-- those that fit, how many did not, and the smallest of those.
local function cost_all(cands, shape, spec, hooks, result, layers_of)
    local memo_of, lowered, layouts = {}, {}, {}
    local capacity = spec.cluster.memory
    local dev = hooks.device and hooks.device(spec.cluster)
    local fits, mem_removed, smallest = {}, 0, nil
    for _, c in ipairs(cands) do
        c.microbatches = spec.global_batch // (c.dp * c.microbatch)
        local key = group_key(c)
        local memo = memo_of[key]
        local pok, args = true, memo and memo.args
        if not memo then
            local lk = lower_key(c)
            if lowered[lk] then
                args = derived(lowered[lk], c, shape, spec, dev)
            else
                c.run = build_run(c, shape, spec, layers_of)
                pok, args = pcall(hooks.prepare, c.run)
                if pok then lowered[lk] = args end
            end
            if pok then memo = { args = args, layouts = layouts }; memo_of[key] = memo end
        end
        if not pok and c.fp8 and c.fp8 ~= "bf16" and tostring(args):find("fp8", 1, true) then
            -- FP8 on a device without it (A100), mxfp8 before Blackwell:
            -- ps.run's refusal, naming the space's value
            error(string.format("ps.search: space.fp8 %s: %s", check.show(c.fp8),
                (tostring(args):gsub("^ps%.run: ", ""))), hooks.level + 2)
        end
        if not pok then
            result.dropped["ps.run"] = (result.dropped["ps.run"] or 0) + 1
            c.error = args
        else
            local k = M.cost(args, c, memo)
            c.memory, c.memory_exact, c.bound, c.peaks = k.memory, k.exact, k.bound, k.peaks
            if capacity and capacity > 0 and c.memory > capacity then
                mem_removed = mem_removed + 1
                if not smallest or c.memory < smallest.memory then smallest = c end
            else
                fits[#fits + 1] = c
            end
        end
    end
    return fits, mem_removed, smallest
end

function M.run(ps, spec, hooks)
    local ok, space, shape, prune = pcall(check_spec, ps, spec)
    if not ok then error(space, hooks.level + 1) end
    -- a search is a sweep for --shard's check (core/cli/main.c): see shards below
    core.sweep_begin()
    local name = spec.name or "search"
    local cluster = spec.cluster
    local nodesize = cluster.gpus_per_node
    if not (math.type(nodesize) == "integer" and nodesize > 0) then nodesize = nil end
    local capacity = cluster.memory
    -- res.cpu: seconds of this process's CPU (os.clock) per phase, the
    -- workers' not counted
    local clock = os.clock()
    local cpu = {}
    local function lap(k)
        local now = os.clock()
        cpu[k] = now - clock
        clock = now
    end
    local cands = search_space.enumerate(space, spec)
    local result = { name = name, raw = #cands, dropped = {}, table = {}, cpu = cpu }
    lap("enumerate")
    local order_of_drops = {}
    -- the constraints, one after the other; the one that empties the
    -- candidate list is named in the error
    for _, cons in ipairs(search_space.constraints(shape, spec, nodesize)) do
        local kept, removed, first = {}, 0, nil
        for _, c in ipairs(cands) do
            if cons[3](c) then kept[#kept + 1] = c
            else removed = removed + 1; first = first or c end
        end
        if removed > 0 then
            result.dropped[cons[1]] = removed
            order_of_drops[#order_of_drops + 1] = cons[1]
        end
        if #kept == 0 then
            error(string.format("ps.search: no valid configuration: constraint '%s' removed the " ..
                "last %d candidates (%s; e.g. %s)", cons[1], removed, cons[2], M.label(first)),
                hooks.level + 1)
        end
        cands = kept
    end
    lap("constraints")
    -- cost every valid configuration without simulating it
    local layers_of = {}
    local fits, mem_removed, smallest = cost_all(cands, shape, spec, hooks, result, layers_of)
    if mem_removed > 0 then
        result.dropped.memory = mem_removed
        order_of_drops[#order_of_drops + 1] = "memory"
    end
    if #fits == 0 then
        if smallest then
            error(string.format("ps.search: no valid configuration: constraint 'memory' removed " ..
                "the last %d candidates (the smallest, %s, needs %.1f GiB of the device's %.1f GiB)",
                mem_removed, M.label(smallest), smallest.memory / GiB, capacity / GiB),
                hooks.level + 1)
        end
        error(string.format("ps.search: no valid configuration: ps.run rejected the last %d " ..
            "candidates (%s)", result.dropped["ps.run"] or 0, tostring(cands[1].error)),
            hooks.level + 1)
    end
    lap("cost")
    result.valid = #fits
    result.drop_order = order_of_drops
    -- simulate in order of the bound; skip a configuration when a
    -- simulated one is at least as fast as its bound and needs no more
    -- memory than its closed form: it can then be neither the best nor on
    -- the front
    table.sort(fits, function(a, b)
        if a.bound ~= b.bound then return a.bound < b.bound end
        return a.index < b.index
    end)
    local done = {}
    local simulated, pruned = 0, 0
    local jobs, shard_k, shard_n = core.sweep_info()
    -- --shard K/N: with prune = "none" every valid configuration is a point
    -- of its own, so the shards divide them, the k-th by enumeration order
    -- going to shard k % N, and each records its own (merging the shards
    -- gives the rows of the unsharded search); its result covers its own
    -- rows. With prune = "bound" what is simulated depends on the results
    -- before it, so the search cannot be divided: every shard runs it whole
    -- and shard 0 alone records it.
    local divided = shard_n > 1 and prune == "none"
    if divided then
        local by_index = table.move(fits, 1, #fits, 1, {})
        table.sort(by_index, function(a, b) return a.index < b.index end)
        for k, c in ipairs(by_index) do c.shard = (k - 1) % shard_n end
        result.shard = { k = shard_k, n = shard_n }
    end
    if spec.jobs and spec.jobs < jobs then jobs = spec.jobs end
    -- configurations in batches of BATCH, in bound order, a batch at a
    -- time in --jobs worker processes (ps.sweep's core.sweep_map): pruning
    -- is checked against the batches before, so a batch may simulate one
    -- that a one-by-one search would have skipped, never the reverse. The
    -- batch does not depend on --jobs, so neither do the rows recorded.
    local batch = BATCH
    -- pareto = false: the best alone is sought, so a configuration whose
    -- bound is no faster than a simulated one that fits is skipped whatever
    -- its memory (res.pareto is then the front of the simulated rows only)
    local front_too = spec.pareto ~= false
    local max_steps = spec.max_collective_steps or MAX_STEPS
    local function dominated(c, bound)
        if prune ~= "bound" then return false end
        bound = bound or c.bound
        for _, d in ipairs(done) do
            if d.fits and d.step_time <= bound and (not front_too or d.peak_memory <= c.memory) then
                return true
            end
        end
        return false
    end
    -- the relaxed bound (search_relax.lua), for ZeRO 0 and 1 only: ZeRO-2/3
    -- are slow through their per-layer collectives over dp x cp, which the
    -- relaxation takes away, so it would prove nothing there
    local relax_memo, relaxations = { spec = spec }, 0
    local function relaxed(c)
        if prune ~= "bound" or c.zero >= 2 then return nil end
        if c.relaxed == nil then
            local t = relax.step(c, function(rc, rspec)
                relaxations = relaxations + 1
                return build_run(rc, shape, rspec, layers_of)
            end, ps.run, relax_memo, M.label)
            c.relaxed, c.row.relaxed = t or false, t
        end
        return c.relaxed or nil
    end
    -- one configuration: recorded as a point of the sweep named after the
    -- search (run.sweep, run.point as JSON, run.point_index = its place in
    -- the enumeration from 0); under --shard K/N undivided, only shard 0
    -- records, the others search alike without recording (init.lua's rule
    -- for runs outside a sweep)
    local function simulate(c)
        if shard_k == 0 or divided then
            hooks.at { sweep = name, point = table.concat(hooks.json(M.point(c), {})),
                       point_index = c.index - 1 }
        end
        -- built here unless the group's first (search_cost's memo)
        c.run = c.run or build_run(c, shape, spec, layers_of)
        local rok, r = pcall(ps.run, c.run)
        hooks.at(nil)
        if not rok then return { failed = tostring(r) } end
        local peak = 0
        for _, x in ipairs(r.peak_memory) do peak = math.max(peak, x) end
        return { makespan = r.makespan, peak = peak, id = r.id, fits = r.fits ~= false,
                 bubble = r.bubble, peak_memory = r.peak_memory }
    end
    local i = 1
    while i <= #fits do
        local todo = {}
        while i <= #fits and #todo < batch do
            local c = fits[i]
            i = i + 1
            c.row = { index = c.index, tp = c.tp, cp = c.cp, cp_comm_type = c.cp > 1 and c.cp_comm
                      or nil, fp8 = c.fp8, pp = c.pp, dp = c.dp, ep = c.ep, etp = c.etp or c.tp,
                      virtual_stages = c.v,
                      microbatch = c.microbatch, microbatches = c.microbatches,
                      schedule = c.schedule, recompute = c.recompute, zero = c.zero,
                      sequence_parallel = c.sp, bound = c.bound, memory = c.memory,
                      memory_exact = c.memory_exact, peaks = c.peaks, label = M.label(c) }
            result.table[#result.table + 1] = c.row
            if divided and c.shard ~= shard_k then
                c.row.status = "other shard"
            elseif dominated(c) then
                pruned = pruned + 1
                c.row.status = "pruned"
            else
                local steps = collective_steps(c, shape)
                -- too large or costly: its relaxation first, when what was
                -- simulated may already be as fast
                local x = steps > RELAX_STEPS and #done > 0 and relaxed(c)
                if x and dominated(c, math.max(c.bound, x)) then
                    pruned = pruned + 1
                    c.row.status = "pruned"
                elseif steps > max_steps then
                    c.row.status = "too large"
                    c.row.error = string.format("about %.0f collective steps to simulate, more " ..
                        "than max_collective_steps (%.0f)", steps, max_steps)
                    result.dropped.too_large = (result.dropped.too_large or 0) + 1
                else
                    todo[#todo + 1] = c
                end
            end
        end
        local outs
        if #todo > 1 and jobs > 1 and core.sweep_map then
            outs = core.sweep_map(#todo, jobs, function(j) return simulate(todo[j]) end)
        else
            outs = {}
            for j, c in ipairs(todo) do outs[j] = simulate(c) end
        end
        -- each run's C side (its programs: hundreds of MB at 16,384 GPUs)
        -- goes with its Lua objects, whose size the collector does not
        -- see: collect after every batch, or they pile up to --max-memory
        collectgarbage()
        for j, c in ipairs(todo) do
            local o, row = outs[j], c.row
            simulated = simulated + 1
            if o.failed then
                -- a rule of the schedule's own (core/sched/sched.c sched_check)
                -- that the constraints above do not repeat
                row.status, row.error = "failed", o.failed
                result.dropped["ps.run"] = (result.dropped["ps.run"] or 0) + 1
            else
                row.status = "simulated"
                row.step_time, row.peak_memory, row.run = o.makespan, o.peak, o.id
                row.rank_peaks, row.fits, row.bubble = o.peak_memory, o.fits, o.bubble
                done[#done + 1] = row
            end
        end
    end
    -- the plans found too large before anything ran: their relaxation
    -- against what ran, in bound order (nothing to prove against when
    -- nothing that fits ran)
    local ran = false
    for _, d in ipairs(done) do ran = ran or d.fits end
    for _, c in ipairs(ran and fits or {}) do
        if c.row.status == "too large" and not dominated(c) then
            local x = relaxed(c)
            if x and dominated(c, math.max(c.bound, x)) then
                c.row.status, c.row.error = "pruned", nil
                pruned = pruned + 1
                result.dropped.too_large = result.dropped.too_large - 1
            end
        end
    end
    if result.dropped.too_large == 0 then result.dropped.too_large = nil end
    table.sort(result.table, function(a, b) return a.index < b.index end)
    lap("simulate")
    result.simulated, result.pruned, result.relaxed = simulated, pruned, relaxations
    local best
    for _, r in ipairs(done) do
        if r.fits and (not best or ranked(r, best)) then best = r end
    end
    result.best = best
    result.pareto = front(done)
    -- a configuration ps.run refused after the constraints (a schedule
    -- rule they do not repeat, a run beyond --max-memory) whose bound is
    -- below the best's step might have beaten it: the best is then the
    -- best of what ran, and the search says so (res.unproven)
    local unproven, first = 0, nil
    for _, r in ipairs(result.table) do
        if (r.status == "failed" or r.status == "too large")
            and (not best or math.max(r.bound, r.relaxed or 0) < best.step_time) then
            unproven = unproven + 1
            first = first or r
        end
    end
    result.unproven = unproven
    if unproven > 0 then
        io.stderr:write(string.format("pipesim: warning: ps.search '%s': %d configuration%s " ..
            "that might beat the best failed in ps.run or were too large to simulate, so the " ..
            "best is the best of those that ran (res.unproven; the first, %s: %s)\n", name,
            unproven, unproven == 1 and "" or "s",
            first.label, (tostring(first.error):gsub("\n.*", ""))))
    end
    return result
end

return M
