-- pipesim.fields: the field lists of ps.run's front end, derived from the
-- binding's registry (core.fields and core.field_roles, core/bind/fields.c),
-- where each field is written once with what the front end does with it.
local core = require "pipesim.core"

local F = {}

-- The names of table's fields (core.fields[table], sorted) with role, or
-- (without = true) without it.
function F.with_role(table_name, role, without)
    local roles, out = core.field_roles[table_name], {}
    for _, k in ipairs(core.fields[table_name]) do
        local has = roles[k] ~= nil and roles[k][role] == true
        if has ~= (without == true) then out[#out + 1] = k end
    end
    return out
end

local function set_of(list)
    local s = {}
    for _, k in ipairs(list) do s[k] = true end
    return s
end

F.RECOMPUTE = { none = true, selective = true, full = true }
F.METHODS = { uniform = true, block = true }

-- Layer fields the C core reads (core/bind/run.c read_layer): every layer
-- field but the model's (kind, shape, ...).
F.CORE_LAYER = set_of(F.with_role("layer", "model", true))

-- The fields the lowering (parallel.lua) reads from ps.run and removes
-- before the core; FIELD_LIST: their names, sorted, for loops without pairs.
F.FIELD_LIST = F.with_role("run", "lower")
F.FIELDS = set_of(F.FIELD_LIST)
-- Fields that make ps.run need the lowering: its own and expert
-- parallelism's sizes (checked against the layers there, read by the core)
F.TRIGGERS = set_of(F.with_role("run", "trigger"))
for k in pairs(F.FIELDS) do F.TRIGGERS[k] = true end

return F
