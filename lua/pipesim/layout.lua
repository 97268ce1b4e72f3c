-- pipesim.layout: a ps.run table's parallel layout as the C core places it
-- (core/par/layout.h through core.layout): the world size, the rank each
-- stage's program runs on, and ps.layout's view with its groups.
local pcore = require "pipesim.core"

local Y = {}

-- The layout of a ps.run table's ranks (core.layout: tp x dp x stages
-- ranks in Megatron's order, or its `ranks` list), as core.layout's view,
-- or with a token its groups ("tp", "dp-cp", ...). Raises plain messages.
function Y.run_layout(spec, token)
    local lay = { tp = spec.tp or 1, cp = spec.cp or 1, dp = spec.dp or 1, pp = spec.stages,
                  ranks = spec.ranks, placement = spec.placement }
    local ok, res = pcall(pcore.layout, lay, token)
    if not ok then error(res, 0) end
    return res
end

-- The ranks a layout of these sizes spans (tp, cp, dp and pp: the fields
-- of ps.layout or ps.search's configurations, absent ones 1): the one
-- formula in Lua, as par_sizes_world in core/par/layout.c.
function Y.world(s)
    return (s.tp or 1) * (s.cp or 1) * (s.dp or 1) * (s.pp or s.stages or 1)
end

-- The cluster rank each stage's program runs on: rank_of[j * p + r + 1]
-- for stage r of replica j (its TP rank 0's), from the layout.
function Y.stage_ranks(spec)
    return Y.run_layout(spec).rank_of
end

-- ps.layout{...}: the layout's view (core/bind/layout.c) with its groups
-- by Megatron's names, computed when first read: L.groups.tp,
-- L.groups["dp-cp"], L.groups.ep, L.groups.embedding ... (lists of
-- cluster ranks, Megatron's RankGenerator.get_ranks order).
function Y.layout(spec)
    local ok, view = pcall(pcore.layout, spec)
    if not ok then error(view, 0) end
    view.groups = setmetatable({}, { __index = function(t, token)
        if type(token) ~= "string" then return nil end
        local good, g = pcall(pcore.layout, spec, token)
        if not good then error("ps.layout: " .. g, 2) end
        rawset(t, token, g)
        return g
    end })
    return view
end


return Y
