-- pipesim.finish: the lowering's last step, once the partition is known
-- (parallel.finish): the core's view of each lowered layer, full
-- recompute's checkpointed blocks per stage, the default optimizer step,
-- and the fields the core does not read taken out of its table.
local check = require "pipesim.argcheck"
local pcore = require "pipesim.core" -- core.seal_layers
local roofline = require "pipesim.roofline_lazy"
local block = require "pipesim.block"
local fields = require "pipesim.fields"
local CORE_LAYER, FIELD_LIST = fields.CORE_LAYER, fields.FIELD_LIST

local F = {}

-- The fields of a lowered layer the core reads, kept per lowered layer
-- (weak keys): lowered layers are memoised across runs, and so are their
-- views. Full recompute changes a view, so it takes a copy.
local CORE_VIEW = setmetatable({}, { __mode = "k" })

local function core_view(l)
    local c = CORE_VIEW[l]
    if not c then
        c = {}
        for k, v in pairs(l) do if CORE_LAYER[k] then c[k] = v end end
        CORE_VIEW[l] = c
    end
    return c
end

-- Sealed copies (core.seal_layers) of lists of core views, by the list's
-- first view (weak): core views are this module's own tables, memoised
-- with their lowered layers and never changed, so a list holding the same
-- views as a kept one reads the same, and the core need not read its
-- layers again (a ps.run loop over partitions of one model). Each entry:
-- { list = the views, sealed = their copy }.
local SEALED_VIEWS = setmetatable({}, { __mode = "k" })

local function sealed_views(out)
    local hit = SEALED_VIEWS[out[1]]
    if hit and #hit.list == #out then
        local list = hit.list
        local same = true
        for i = 2, #out do
            if list[i] ~= out[i] then same = false; break end
        end
        if same then return hit.sealed end
    end
    local sealed = pcore.seal_layers(out)
    SEALED_VIEWS[out[1]] = { list = out, sealed = sealed }
    return sealed
end

-- The dtype of the first model layer (the optimizer step's).
local function first_dtype(spec)
    for _, l in ipairs(spec.layers) do
        if type(l) == "table" and l.shape then return l.shape.dtype end
    end
end

-- finish's fields of args beside the layers; stage_params: parameters per
-- pipeline rank (index from 1).
local function finish_args(plan, partition, args, dev, spec, stage_params, full, dtype, memo)
    local o = plan.o
    args.checkpoint = full
    if dev and spec.optimizer_time == nil then
        -- every rank runs its own step; the core takes one figure, so the
        -- most loaded rank's (the step ends when the slowest is done)
        local most = 0
        for r = 1, #stage_params do -- ranks 1..p, all set
            local p = stage_params[r]
            if p > most then most = p end
        end
        if dtype == nil then dtype = first_dtype(spec) end
        -- a sweep's plan (finish_memo): kept per figure, for its device
        local times = memo and memo.opt_dev == dev and memo.opt_times or nil
        local t = times and times[most] or nil
        if t == nil then
            t = roofline.optimizer_time(dev, most, dtype)
            if memo then
                if not times then
                    times = {}
                    memo.opt_dev, memo.opt_times = dev, times
                end
                times[most] = t
            end
        end
        args.optimizer_time = t
    end
    for i = 1, #FIELD_LIST do args[FIELD_LIST[i]] = nil end
    -- recorded in the run row (core/rec/rec.c)
    args.tp, args.sequence_parallel, args.recompute = o.tp, o.sp, o.recompute
    args.cp = o.cp > 1 and o.cp or nil -- the core's layout (core/bind/run.c)
    plan.partition = partition
end

-- Parameters per pipeline rank (index from 1): stage(ctx, sidx, at,
-- count) gives stage sidx's, its layers at + 1 .. at + count, added to
-- its rank's in the partition's order. Both paths below sum through it,
-- so a sweep's plan adds in the same order as a full finish.
local function rank_params(partition, stages, stage, ctx)
    local stage_params, at = {}, 0
    for sidx, count in ipairs(partition) do
        local r = (sidx - 1) % stages + 1
        stage_params[r] = (stage_params[r] or 0) + stage(ctx, sidx, at, count)
        at = at + count
    end
    return stage_params
end

-- A stage's parameters from a sweep's memo, by its first layer and
-- count: partitions share stages.
local function memo_stage(memo, _, at, count)
    local prm, sums = memo.params, memo.sums
    local key = at * (#prm + 1) + count
    local p = sums[key]
    if p == nil then
        p = 0
        for i = at + 1, at + count do p = p + prm[i] end
        sums[key] = p
    end
    return p
end

-- finish without full recompute, for a sweep's plan: the core's list
-- (core_view of each model layer, plain layers as given), each layer's
-- parameters and the dtype once per plan; per run only the sums per stage.
local function finish_memo(plan, partition, args, dev, spec, memo)
    local layers = plan.layers
    if not memo.sealed then
        local out, prm = {}, {}
        for i, l in ipairs(layers) do
            out[i] = spec.layers[i].shape == nil and l or core_view(l)
            prm[i] = tonumber(l.params) or 0
        end
        memo.sealed = pcore.seal_layers(out)
        memo.params, memo.dtype = prm, first_dtype(spec) or false
    end
    if not memo.sums then memo.sums = {} end
    local stage_params = rank_params(partition, spec.stages, memo_stage, memo)
    args.layers = memo.sealed
    finish_args(plan, partition, args, dev, spec, stage_params, false, memo.dtype or nil, memo)
end

-- finish(plan, partition, args, dev): with the partition known, marks the
-- checkpointed blocks of full recompute (Megatron's --recompute-method
-- uniform: every k consecutive blocks of a stage are one unit keeping its
-- input; block: the first k blocks of each stage, each keeping its input;
-- the embedding and the head are never recomputed) and sets the default
-- optimizer step. Writes into args (the core's table). memo (a table kept
-- with a sweep's plan, or nil): without full recompute the core's layer
-- list does not depend on the partition, so it is built and read by the
-- core (core.seal_layers) once per plan and passed as sealed layers.
function F.finish(plan, partition, args, dev, spec, memo)
    local o, layers = plan.o, plan.layers
    local full = o.recompute == "full"
    if memo and not full then return finish_memo(plan, partition, args, dev, spec, memo) end
    local out = {}
    local all_views = not full -- every entry of out a core_view
    local function stage(_, sidx, at, count)
        local blocks = 0
        for i = at + 1, at + count do
            if layers[i].kind == "block" then blocks = blocks + 1 end
        end
        if full and blocks > 0 and o.k > blocks then
            check.fail("field 'recompute_layers' (%d) is greater than the %d blocks on stage %d",
                o.k, blocks, sidx - 1)
        end
        local nb = 0
        local p = 0
        for i = at + 1, at + count do
            local l = layers[i]
            local c
            if spec.layers[i].shape == nil then
                c = l -- a plain layer goes to the core as the user wrote it
                all_views = false
            elseif full then
                c = {}
                for k, v in pairs(core_view(l)) do c[k] = v end
            else
                c = core_view(l)
            end
            p = p + (tonumber(l.params) or 0)
            if full and spec.layers[i].shape ~= nil then
                if l.kind == "block" then
                    local s = spec.layers[i].shape
                    local recomputed
                    if o.method == "block" then recomputed = nb < o.k else recomputed = true end
                    if recomputed then
                        c.recompute_time = l.fwd_time -- nil: the core's forward
                        -- R repeats the forward's collectives
                        if l.tp_comm_time then
                            c.tp_comm_time = l.tp_comm_time + l.tp_comm_fwd
                            c.tp_exposed_time = l.tp_exposed_time + l.tp_exposed_fwd
                        end
                        local first = o.method == "block" or nb % o.k == 0
                        c.kept_bytes = first and block.block_kept_bytes(s, o.tp, o.sp) / o.cp or 0
                    else
                        c.recompute_time, c.kept_bytes = 0, l.act_bytes
                    end
                    nb = nb + 1
                else
                    c.recompute_time, c.kept_bytes = 0, l.act_bytes or 0
                end
            end
            out[i] = c
        end
        return p
    end
    local stage_params = rank_params(partition, spec.stages, stage)
    args.layers = out
    -- for core.run (ps.run passes it instead of out; ps.search reads out)
    plan.sealed_layers = all_views and sealed_views(out) or nil
    finish_args(plan, partition, args, dev, spec, stage_params, full)
end

return F
