-- ps.partition: contiguous splits of a layer list into pipeline stages.
-- A partition is a list of per-stage layer counts (stage 0 first), each at
-- least 1, summing to the number of layers. Stages are numbered from 0 in
-- messages, as in the database. Errors are raised at the caller's line.
local check = require "pipesim.argcheck"

local M = {}

local fail = check.fail

local function args(n, p, what)
    n = check.posint(n, what .. ": number of layers")
    p = check.posint(p, what .. ": number of stages")
    if n < p then
        fail("%s: %d layers cannot fill %d stages without an empty stage", what, n, p)
    end
    return n, p
end

-- uniform(n, p) -> counts differing by at most one; the first n % p stages
-- get the extra layer. Megatron-LM has no remainder rule (it requires
-- num_layers divisible by the pipeline size), so this follows DeepSpeed's
-- PipelineModule partition_method="uniform" (deepspeed/runtime/utils.py,
-- partition_uniform: the residual goes to the leading parts).
local function uniform(n, p)
    n, p = args(n, p, "uniform")
    local base, extra = n // p, n % p
    local counts = {}
    for s = 1, p do counts[s] = base + (s <= extra and 1 or 0) end
    return counts
end
M.uniform = check.public(uniform)

local function weight_list(w, what)
    if type(w) ~= "table" then fail("%s: expected a list of weights, got %s", what, type(w)) end
    for i = 1, #w do
        if not check.is_finite(w[i]) or w[i] < 0 then
            fail("%s: weight %d must be a non-negative number, got %s", what, i, check.show(w[i]))
        end
    end
    return w
end

-- stats(counts, weights) -> { sums = per-stage sums, max, mean, imbalance =
-- max / mean (1 when every sum is 0), slowest = 0-based stage of the max }.
local function stats(counts, w)
    weight_list(w, "stats")
    if type(counts) ~= "table" then fail("stats: expected a list of counts, got %s", type(counts)) end
    local sums, at, total = {}, 0, 0.0
    local mx, slowest = -math.huge, 0
    for s = 1, #counts do
        local c = check.posint(counts[s], "stats: stage " .. (s - 1) .. " count")
        local x = 0.0
        for i = at + 1, at + c do x = x + (w[i] or 0) end
        at = at + c
        sums[s], total = x, total + x
        if x > mx then mx, slowest = x, s - 1 end
    end
    if at ~= #w then fail("stats: counts sum to %d layers but there are %d weights", at, #w) end
    local mean = total / #counts
    return { sums = sums, max = mx, mean = mean, slowest = slowest,
             imbalance = mean > 0 and mx / mean or 1 }
end
M.stats = check.public(stats)

-- split(A, B, c, n, p) -> counts: the contiguous split of n layers into p
-- stages with the smallest largest stage cost, where stage k holding
-- layers i+1..j costs (A[j] - A[i]) + (B[j] - B[i]) * c[k] (A, B prefix
-- sums from A[0] = B[0] = 0; c nil: B is not used). "time" on ranks of
-- different speeds is A = measured seconds, B = FLOPs, c[k] = 1 / FLOP
-- rate of stage k's device. Exact, two dynamic programs, each
-- O(p * (n-p)^2) time and O(p * n) memory:
--   1. best[k][j] = min over i of max(best[k-1][i], cost_k(i, j)) gives the
--      optimal bottleneck L;
--   2. among splits whose stages all cost at most L, the one with the
--      smallest sum of squared stage costs (the most even), ties going
--      to the split whose later stages are lighter.
-- So equal costs give uniform()'s answer, and scaling every cost (FLOPs
-- vs seconds) does not change the split. L is compared with a relative
-- slack of 1e-12 for rounding.
local function split(A, B, c, n, p)
    local function cost(k, i, j)
        local x = A[j] - A[i]
        if c then
            local b = B[j] - B[i]
            if b ~= 0 then x = x + b * c[k] end -- c[k] may be NaN (unknown)
        end
        return x
    end
    -- 1. optimal bottleneck
    local prev = {}
    for j = 1, n - p + 1 do prev[j] = cost(1, 0, j) end
    for k = 2, p do
        local cur = {}
        for j = k, n - p + k do
            local bm = math.huge
            for i = k - 1, j - 1 do
                local x, m = cost(k, i, j), prev[i]
                if x > m then m = x end
                if m < bm then bm = m end
            end
            cur[j] = bm
        end
        prev = cur
    end
    local limit = prev[n] * (1 + 1e-12)
    -- 2. most even split under the bottleneck
    local Q, cut = {}, {}
    local Q1 = {}
    for j = 1, n - p + 1 do
        local x = cost(1, 0, j)
        Q1[j] = x <= limit and x * x or math.huge
    end
    Q[1], cut[1] = Q1, {}
    for k = 2, p do
        local Qp, Qk, Ck = Q[k - 1], {}, {}
        for j = k, n - p + k do
            local bq, bi = math.huge, nil
            for i = j - 1, k - 1, -1 do -- later cut first: ties keep it
                local x = cost(k, i, j)
                if x > limit then break end -- x only grows as i falls
                local q = Qp[i] + x * x
                if q < bq then bq, bi = q, i end
            end
            Qk[j], Ck[j] = bq, bi
        end
        Q[k], cut[k] = Qk, Ck
    end
    local counts, j = {}, n
    for k = p, 2, -1 do
        local i = cut[k][j]
        counts[k], j = j - i, i
    end
    counts[1] = j
    return counts
end

-- balanced(weights, p) -> counts, bottleneck: the contiguous split with the
-- smallest largest stage sum (split() above with one cost per layer); the
-- bottleneck returned is the largest direct stage sum of the split.
local function balanced(w, p)
    weight_list(w, "balanced")
    local n
    n, p = args(#w, p, "balanced")
    -- floats: squares of integer weights would wrap around as integers
    local S = { [0] = 0.0 }
    for i = 1, n do S[i] = S[i - 1] + w[i] end
    local counts = split(S, nil, nil, n, p)
    return counts, stats(counts, w).max
end
M.balanced = check.public(balanced)

-- count(n, p) -> how many partitions enumerate(n, p) yields: C(n-1, p-1).
M.count = check.public(function(n, p)
    n, p = args(n, p, "count")
    local c = 1
    for i = 1, p - 1 do c = c * (n - p + i) // i end
    return c
end)

-- enumerate(n, p) -> iterator over every partition of n layers into p
-- non-empty contiguous stages, each a fresh count list, in lexicographic
-- order of the stage boundaries. Yields count(n, p) lists.
M.enumerate = check.public(function(n, p)
    n, p = args(n, p, "enumerate")
    local cuts = {}
    for i = 1, p - 1 do cuts[i] = i end
    local done = false
    return function()
        if done then return nil end
        local counts, prev = {}, 0
        for i = 1, p - 1 do counts[i], prev = cuts[i] - prev, cuts[i] end
        counts[p] = n - prev
        local i = p - 1
        while i >= 1 and cuts[i] == n - p + i do i = i - 1 end
        if i < 1 then
            done = true
        else
            cuts[i] = cuts[i] + 1
            for k = i + 1, p - 1 do cuts[k] = cuts[k - 1] + 1 end
        end
        return counts
    end
end)

---------------------------------------------------------------------------
-- search: local search over stage boundaries (partition = "search")
---------------------------------------------------------------------------

-- search(seed, evaluate, weights) -> counts, cost, evaluations: a local
-- search for the contiguous split with the smallest evaluate(counts) (a
-- step time from simulation; math.huge for a split that cannot run),
-- starting from `seed` (a balanced split). A move takes one layer from
-- stage a and gives it to stage b (every boundary between them shifts by
-- one, so the split stays contiguous); moves are tried bottleneck first
-- (stages by falling weight sum, their lighter neighbours first) and the
-- first that improves is taken, until none does. "Improves" is
-- lexicographic: a smaller step time, or the same step time (to 1e-12
-- relative) with a smaller sum of squared stage weights, which walks the
-- search across the plateaus a max-like step time has (moving a layer
-- between two stages that are not the bottleneck changes nothing else).
-- Each split is evaluated once (memoised). weights: per-layer costs (e.g.
-- seconds), or nil for equal weights.
local function search(seed, evaluate, w)
    local n, p = 0, #seed
    for i = 1, p do n = n + seed[i] end
    w = w or {}
    local function sums(counts)
        local out, at = {}, 0
        for s = 1, p do
            local x = 0
            for i = at + 1, at + counts[s] do x = x + (w[i] or 1) end
            out[s], at = x, at + counts[s]
        end
        return out
    end
    local function squares(counts)
        local q = 0
        for _, x in ipairs(sums(counts)) do q = q + x * x end
        return q
    end
    local seen, evals = {}, 0
    local function cost(counts)
        local key = table.concat(counts, ",")
        local c = seen[key]
        if c == nil then
            c = evaluate(counts)
            evals = evals + 1
            seen[key] = c
        end
        return c
    end
    local best = table.move(seed, 1, p, 1, {})
    local bc, bq = cost(best), squares(best)
    local function better(c, q)
        if c < bc * (1 - 1e-12) then return true end
        return c <= bc * (1 + 1e-12) and q < bq * (1 - 1e-12)
    end
    while true do
        local st = sums(best)
        local order = {}
        for s = 1, p do order[s] = s end
        table.sort(order, function(a, b)
            if st[a] ~= st[b] then return st[a] > st[b] end
            return a < b
        end)
        local moved = false
        for _, a in ipairs(order) do
            if best[a] > 1 then
                -- receivers: the nearest first (a short shift changes
                -- fewer stages), lighter first at equal distance
                local recv = {}
                for b = 1, p do if b ~= a then recv[#recv + 1] = b end end
                table.sort(recv, function(x, y)
                    local dx, dy = math.abs(x - a), math.abs(y - a)
                    if dx ~= dy then return dx < dy end
                    if st[x] ~= st[y] then return st[x] < st[y] end
                    return x < y
                end)
                for _, b in ipairs(recv) do
                    local cand = table.move(best, 1, p, 1, {})
                    cand[a], cand[b] = cand[a] - 1, cand[b] + 1
                    local c = cost(cand)
                    local q = squares(cand)
                    if better(c, q) then
                        best, bc, bq, moved = cand, c, q, true
                        break
                    end
                end
            end
            if moved then break end
        end
        if not moved then break end
    end
    return best, bc, evals
end
M.search = check.public(search)

---------------------------------------------------------------------------
-- resolve: the `partition` field of ps.run
---------------------------------------------------------------------------

local function layer_label(layers, i)
    local name = layers[i].name
    -- Lua indices, as the binding names layers ("layers[3]")
    if name ~= nil then return string.format("layers[%d] ('%s')", i, tostring(name)) end
    return string.format("layers[%d]", i)
end

local function weights_params(layers)
    local w = {}
    for i, l in ipairs(layers) do w[i] = l.params or 0 end
    return w
end

local function weights_flops(layers)
    local w = {}
    for i, l in ipairs(layers) do
        if l.fwd_flops == nil then
            fail("partition 'flops': %s has no fwd_flops (for measured times use partition = 'time')",
                layer_label(layers, i))
        end
        w[i] = l.fwd_flops + (l.bwd_flops or 2 * l.fwd_flops)
    end
    return w
end

-- A layer's forward + backward (+ recompute) as seconds a plus FLOPs b, so
-- that it takes a + b / rate on a device of `rate` FLOP/s (peak x
-- efficiency), by the C core's rule (core/step/pipe.c layer_fwd, layer_bwd,
-- stage_recompute): the forward is fwd_time, else fwd_flops / rate; the
-- backward bwd_time, else bwd_input_time + bwd_weight_time, else bwd_flops
-- / rate (only without fwd_time), else twice the forward; with
-- checkpointing the recompute is recompute_time, else the forward.
local function layer_cost(l, recompute)
    local fa, fb = 0, 0
    if l.fwd_time ~= nil then fa = l.fwd_time else fb = l.fwd_flops end
    local ba, bb = 2 * fa, 2 * fb
    if l.bwd_time ~= nil then
        ba, bb = l.bwd_time, 0
    elseif l.bwd_input_time ~= nil and l.bwd_weight_time ~= nil then
        ba, bb = l.bwd_input_time + l.bwd_weight_time, 0
    elseif l.bwd_flops ~= nil and l.fwd_time == nil then
        ba, bb = 0, l.bwd_flops
    end
    local ra, rb = 0, 0
    if recompute then
        if l.recompute_time ~= nil then ra = l.recompute_time else ra, rb = fa, fb end
    end
    return fa + ba + ra, fb + bb + rb
end

-- "time": per-layer costs, the FLOP/s of each stage's device (opts.rates:
-- per pipeline rank, [r + 1] for rank r, model stage s on rank s % #rates;
-- else opts.flops_rate for every stage) and prefix sums for split().
local function time_costs(layers, p, opts)
    local rates = opts.rates
    if rates ~= nil and (type(rates) ~= "table" or #rates == 0) then
        fail("partition 'time': opts.rates must be a list of FLOP/s per pipeline rank")
    end
    local c, known = {}, true
    for k = 1, p do
        local rate = rates and rates[(k - 1) % #rates + 1] or opts.flops_rate
        if type(rate) == "number" and rate > 0 and rate < math.huge then
            c[k] = 1 / rate
        else
            c[k], known = 0 / 0, false
        end
    end
    local A, B = { [0] = 0.0 }, { [0] = 0.0 }
    for i, l in ipairs(layers) do
        if l.fwd_time == nil and l.fwd_flops == nil then
            fail("partition 'time': %s has neither fwd_time nor fwd_flops", layer_label(layers, i))
        end
        local a, b = layer_cost(l, opts.checkpoint)
        if b > 0 and not known then
            fail("partition 'time': %s has no measured time and no flops_rate (FLOP/s) was given",
                layer_label(layers, i))
        end
        A[i], B[i] = A[i - 1] + a, B[i - 1] + b
    end
    return A, B, c
end

-- Megatron-LM attaches the embedding to the first stage and the output
-- layer and loss to the last, outside the transformer-layer split (unless
-- --account-for-embedding-in-pipeline-split / -loss- are given). Here:
-- leading layers of kind "embedding" and trailing layers of kind "head".
local function pinned(layers)
    local lead, trail, n = 0, 0, #layers
    while lead < n and layers[lead + 1].kind == "embedding" do lead = lead + 1 end
    while trail < n - lead and layers[n - trail].kind == "head" do trail = trail + 1 end
    return lead, trail
end

local function with_pins(blocks, lead, trail)
    blocks[1] = blocks[1] + lead
    blocks[#blocks] = blocks[#blocks] + trail
    return blocks
end

-- { first = k, last = k }: Megatron-LM's --decoder-first-pipeline-num-layers
-- / --decoder-last-pipeline-num-layers (TransformerConfig
-- num_layers_in_first_pipeline_stage / _last_; get_num_layers_to_build):
-- the given ends take k transformer layers, the remaining layers are split
-- evenly over the other stages and must divide evenly (Megatron asserts).
-- Either end may be left out. k counts blocks; the embedding and the head
-- ride along with the first and last stage as in Megatron, so k = 0 is a
-- stage holding only the embedding (or the head).
local function first_last(part, layers, p)
    check.known_fields(part, { first = true, last = true }, "partition")
    local lead, trail = pinned(layers)
    local blocks = #layers - lead - trail
    local first, last = part.first, part.last
    for _, f in ipairs { { "first", first }, { "last", last } } do
        local v = f[2]
        if v ~= nil and (type(v) ~= "number" or v ~= math.floor(v) or v < 0) then
            fail("partition: %s must be a non-negative integer, got %s", f[1], check.show(v))
        end
    end
    first, last = first and math.tointeger(first), last and math.tointeger(last)
    if p < 2 then fail("partition { first, last } needs at least 2 stages, got %d", p) end
    local middle = p - (first and 1 or 0) - (last and 1 or 0)
    local rest = blocks - (first or 0) - (last or 0)
    -- the partition as written: "{ first = 1 }", "{ first = 1, last = 2 }"
    local given = {}
    if first then given[#given + 1] = "first = " .. first end
    if last then given[#given + 1] = "last = " .. last end
    local shown = "{ " .. table.concat(given, ", ") .. " }"
    if rest < 0 then
        fail("partition %s takes more than the model's %d blocks", shown, blocks)
    end
    local each = 0
    if middle > 0 then
        if rest % middle ~= 0 then
            fail("partition %s: the remaining %d blocks do not divide evenly over %d stages",
                shown, rest, middle)
        end
        each = rest // middle
    elseif rest ~= 0 then
        fail("partition %s leaves %d blocks with no stage for them", shown, rest)
    end
    local counts = {}
    for s = 1, p do counts[s] = each end
    if first then counts[1] = first end
    if last then counts[p] = last end
    return with_pins(counts, lead, trail)
end

local mtype = math.type

local function explicit(part, layers, p)
    local n = #layers
    if #part ~= p then
        fail("partition lists %d stages but the run has %d", #part, p)
    end
    local sum, ints = 0, true
    for s = 1, p do
        local c = part[s]
        -- integers pass the first check as they are (one C call, not two)
        if mtype(c) ~= "integer" then
            ints = false
            if type(c) ~= "number" or c ~= math.floor(c) then
                fail("partition: stage %d count must be an integer, got %s", s - 1, check.show(c))
            end
        end
        if c <= 0 then fail("partition: stage %d has %d layers", s - 1, c) end
        sum = sum + c
    end
    if sum ~= n then fail("partition sums to %d layers but the model has %d", sum, n) end
    -- a constructor sizes the list once
    if ints then return { table.unpack(part, 1, p) } end
    local counts = {}
    for s = 1, p do counts[s] = math.tointeger(part[s]) or part[s] end
    return counts
end

local NAMED = "'uniform', 'params', 'flops', 'time', 'search', a list of layer counts or " ..
    "{ first = k, last = k }"

local function resolve(part, layers, p, opts)
    if type(layers) ~= "table" or #layers == 0 then
        fail("partition: the model has no layers")
    end
    for i = 1, #layers do
        if type(layers[i]) ~= "table" then
            fail("partition: layers[%d] must be a table, got %s", i, check.show(layers[i]))
        end
    end
    p = check.posint(p, "partition: number of stages")
    if p > #layers then
        fail("partition: %d layers cannot fill %d stages without an empty stage", #layers, p)
    end
    opts = opts or {}
    if part == nil or part == "uniform" then
        local lead, trail = pinned(layers)
        local blocks = #layers - lead - trail
        if blocks < p then
            -- too few blocks to give each stage one: split every entry
            return uniform(#layers, p)
        end
        return with_pins(uniform(blocks, p), lead, trail)
    elseif part == "params" then
        local w = weights_params(layers)
        return (balanced(w, p)), w
    elseif part == "flops" then
        local w = weights_flops(layers)
        return (balanced(w, p)), w
    elseif part == "time" then
        local A, B, c = time_costs(layers, p, opts)
        local counts = split(A, B, c, #layers, p)
        -- weights: each layer's seconds on the stage it landed on
        local w, at = {}, 0
        for k = 1, p do
            for i = at + 1, at + counts[k] do
                local x = A[i] - A[i - 1]
                local flops = B[i] - B[i - 1]
                if flops > 0 then x = x + flops * c[k] end
                w[i] = x
            end
            at = at + counts[k]
        end
        return counts, w
    elseif part == "search" then
        fail("partition 'search' simulates candidate splits: give it to ps.run, not to resolve")
    elseif type(part) == "table" then
        if part.first ~= nil or part.last ~= nil or (next(part) ~= nil and #part == 0) then
            return first_last(part, layers, p)
        end
        return explicit(part, layers, p)
    end
    fail("partition must be %s, got %s", NAMED, check.show(part))
end

-- resolve_checked(partition, layers, stages): resolve for an explicit list
-- or { first, last } and layers the caller has checked (a non-empty list
-- of tables: ps.sweep's memo, lua/pipesim/init.lua), without the public
-- wrapper's pcall and option check; the same counts and messages, raised
-- without a position.
function M.resolve_checked(part, layers, p)
    p = check.posint(p, "partition: number of stages")
    if p > #layers then
        fail("partition: %d layers cannot fill %d stages without an empty stage", #layers, p)
    end
    if part.first ~= nil or part.last ~= nil or (next(part) ~= nil and #part == 0) then
        return (first_last(part, layers, p))
    end
    return (explicit(part, layers, p))
end

-- resolve(partition, layers, stages, opts) -> counts[, weights]: what ps.run
-- calls. partition is one of "uniform" (default; blocks split evenly, the
-- embedding and head ride with the first and last stage as in Megatron-LM),
-- "params", "flops", "time" (balanced by that weight; weights returned too),
-- an explicit count list over all layers, or { first = k, last = k }.
-- "time" balances seconds on each stage's own device: opts.rates lists the
-- FLOP/s (peak x efficiency) of each pipeline rank ([r + 1] for rank r;
-- with virtual stages model stage s is on rank s % #opts.rates), else
-- opts.flops_rate is every stage's; layers with measured times take those;
-- opts.checkpoint adds the recompute. "params" and "flops" are pure
-- parameter and FLOP balances whatever the devices.
-- opts.level: which caller an error blames, as in error(): 1 (default) the
-- line that called resolve, 2 its caller, and so on.
local RESOLVE_OPTS = { "checkpoint", "flops_rate", "level", "rates" }

function M.resolve(part, layers, p, opts)
    local level = 2
    if type(opts) == "table" and type(opts.level) == "number" then level = opts.level + 1 end
    if opts ~= nil and type(opts) ~= "table" then
        error("partition.resolve: opts must be a table, got " .. type(opts), level)
    end
    local ok, err = pcall(check.known_fields, opts or {}, RESOLVE_OPTS, "partition.resolve: opts")
    if not ok then error(err, level) end
    local res = table.pack(pcall(resolve, part, layers, p, opts))
    if not res[1] then error(res[2], level) end
    return table.unpack(res, 2, res.n)
end

return M
