-- ps.models: layer lists for ps.run from transformer shapes or published
-- presets, and totals over a layer list. Layers follow the ps.run contract:
-- name, fwd_flops or fwd_time, optional bwd_flops / bwd_time (default twice
-- the forward), params, act_bytes, out_bytes; ours also carry `kind`
-- ("embedding", "block", "head") and, for a tied head, `shared_params`.
local check = require "pipesim.argcheck"
local transformer = require "pipesim.models.transformer"
local presets = require "pipesim.models.presets"
local megatron = require "pipesim.models.megatron"
local moe = require "pipesim.models.moe"
local mla = require "pipesim.models.mla"

local M = {}

-- transformer{ layers, hidden, heads, ... } -> layer list (see
-- models/transformer.lua for the fields, their defaults and formulas).
M.transformer = check.public(function(shape)
    return (transformer.build(shape))
end)

-- megatron{ num_layers = 96, hidden_size = 12288, ... } -> the ps.run
-- table of one step, from Megatron-LM's own flag names and defaults
-- (models/megatron.lua); the second result is the model's shape.
M.megatron = check.public(function(flags)
    return megatron.build(flags)
end)
M.padded_vocab = megatron.padded_vocab

local function preset_shape(name, overrides)
    if type(name) ~= "string" or not presets[name] then
        check.fail("unknown model preset %s (known: %s)", check.show(name), check.keys(presets))
    end
    local shape = {}
    for k, v in pairs(presets[name].shape) do shape[k] = v end
    if overrides ~= nil then
        if type(overrides) ~= "table" then
            check.fail("preset '%s': overrides must be a table, got %s", name, type(overrides))
        end
        check.known_fields(overrides, transformer.FIELDS,
            string.format("preset '%s': overrides", name))
        for k, v in pairs(overrides) do shape[k] = v end
    end
    shape.name = shape.name or name
    return shape
end

-- preset(name, overrides) -> layer list of a published model; overrides
-- replace any shape field (seq, microbatch, dtype, flash_attention, ...).
M.preset = check.public(function(name, overrides)
    return (transformer.build(preset_shape(name, overrides)))
end)

-- shape(name, overrides) -> the filled-in shape table of a preset.
M.shape = check.public(function(name, overrides)
    return transformer.normalize(preset_shape(name, overrides))
end)

-- Sorted preset names, and the published size of one (nil for toy).
function M.presets()
    local names = {}
    for k in pairs(presets) do names[#names + 1] = k end
    table.sort(names)
    return names
end

-- published(name) -> the published parameter count and, when the paper
-- rounds it coarsely, half its last digit (nil otherwise), then the
-- relative tolerance a preset states for a gap it cannot explain (nil).
function M.published(name)
    local p = presets[name]
    if not p then return nil end
    return p.published, p.rounding, p.tolerance
end

-- published_active(name) -> the published count of parameters one token
-- runs through (MoE presets, nil otherwise) and whether the publisher
-- leaves the input embedding out of it.
function M.published_active(name)
    local p = presets[name]
    if not p then return nil end
    return p.published_active, p.active_no_embedding or false
end

-- total(layers) -> { params, params_stored, active_params, fwd_flops,
-- bwd_flops, flops, fwd_time, bwd_time, act_bytes, layers }. params counts
-- each parameter once (a tied head's copy excluded); params_stored is what
-- the stages hold; active_params what one token runs through (a MoE
-- block's router, top-k routed and shared experts: its active_params;
-- other layers all of theirs).
-- Backward defaults to twice the forward, as in ps.run. O(#layers).
M.total = check.public(function(layers)
    if type(layers) ~= "table" then
        check.fail("total: expected a layer list, got %s", type(layers))
    end
    local t = { params = 0, params_stored = 0, active_params = 0, fwd_flops = 0, bwd_flops = 0,
                fwd_time = 0, bwd_time = 0, act_bytes = 0, layers = #layers }
    for i, l in ipairs(layers) do
        if type(l) ~= "table" then check.fail("total: layer %d is not a table", i) end
        local p = l.params or 0
        t.params_stored = t.params_stored + p
        t.params = t.params + p - (l.shared_params or 0)
        t.active_params = t.active_params + (l.active_params or p) - (l.shared_params or 0)
        local ff = l.fwd_flops or 0
        t.fwd_flops = t.fwd_flops + ff
        t.bwd_flops = t.bwd_flops + (l.bwd_flops or 2 * ff)
        local ft = l.fwd_time or 0
        t.fwd_time = t.fwd_time + ft
        t.bwd_time = t.bwd_time + (l.bwd_time or 2 * ft)
        t.act_bytes = t.act_bytes + (l.act_bytes or 0)
    end
    t.flops = t.fwd_flops + t.bwd_flops
    return t
end)

-- A MoE block's cost on one rank of an expert-parallel group
-- (models/moe.lua block_cost; docs/moe.md) and the routed tokens of a
-- microbatch; MLA's KV cache bytes per token and layer (models/mla.lua).
M.moe = {
    block_cost = check.public(moe.block_cost),
    routed_tokens = moe.routed_tokens,
}
M.mla = { kv_cache_bytes = mla.kv_cache_bytes }

-- The formulas, for tests and for users who build their own layers.
M.formulas = {
    block_params = transformer.block_params,
    block_fwd_flops = transformer.block_fwd_flops,
    block_act_bytes = transformer.block_act_bytes,
    boundary_bytes = transformer.boundary_bytes,
    normalize = transformer.normalize,
}

return M
