-- tests/cli_cp.sh: steps with context parallelism recorded at the events
-- level, each printing the group its gradient sync must run in for every
-- rank ("run|rank|group", one per line): Megatron's dp-cp groups, ranks
-- tp_rank + tp (cp_rank + cp (dp_rank + dp pp_rank)) over cp and dp
-- (megatron/core/parallel_state.py, core_v0.19.0), for the TP ranks the
-- step simulates.
local ps = require "pipesim"
local node = ps.cluster(ps.clusters.dgx("H100", 4))
local layers = ps.models.transformer{ layers = 2, hidden = 512, heads = 8, seq = 1024,
    vocab = 1024, dtype = "bf16", flash_attention = true }
-- the dp-cp group of TP rank tr in stage pr: cp fastest, then dp
local function dp_cp_group(tp, cp, dp, pr, tr)
    local g = {}
    for dr = 0, dp - 1 do
        for cr = 0, cp - 1 do g[#g + 1] = tr + tp * (cr + cp * (dr + dp * pr)) end
    end
    return g
end
for _, k in ipairs { { 1, 2, 2, 2 }, { 2, 2, 2, 2 }, { 2, 4, 1, 2 }, { 4, 2, 2, 1 },
                     { 8, 2, 1, 2 }, { 1, 4, 4, 2 } } do
    local tp, cp, dp, pp = k[1], k[2], k[3], k[4]
    local r = ps.run{ cluster = node, layers = layers, stages = pp, microbatches = 2, tp = tp,
        cp = cp, dp = dp, grad_sync = { algorithm = "ring" }, record = "events" }
    local tps = {}
    for _, x in ipairs(r.rank) do tps[x % tp] = true end
    for pr = 0, pp - 1 do
        for tr = 0, tp - 1 do
            for _, rank in ipairs(tps[tr] and dp_cp_group(tp, cp, dp, pr, tr) or {}) do
                print(string.format("%d|%d|%d", r.id, rank, pr * tp + tr))
            end
        end
    end
end
