-- Selective recompute by module (issue 24): Megatron-LM's
-- --recompute-modules, read and checked. Megatron-Core 0.20 (d98e8a64dd,
-- megatron/core/transformer/transformer_config.py recompute_modules and
-- its __post_init__) takes a list of submodule names with
-- --recompute-granularity selective, ["core_attn"] by default, and raises
-- on a name outside its allowed set. pipesim models four of them (the
-- costs: models/moe.lua discarded(), parallel.lua for dense blocks):
--   core_attn    the attention core, checkpointed (attention.py): its s^2
--                tensors dropped, its forward run again (Korthikanti et al.)
--   layernorm    input_layernorm and pre_mlp_layernorm outputs discarded
--                and recomputed from their inputs (transformer_layer.py,
--                CheckpointWithoutOutput)
--   mla_up_proj  MLA's query and key/value up projections and RoPE
--                (multi_latent_attention.py qkv_up_proj_and_rope_apply):
--                Q, K, V discarded, the GEMMs and RoPE run again
--   moe_act      the grouped experts' activation function (moe/experts.py
--                TEGroupedMLP): fc2's input discarded, the activation run
--                again
--   mlp          a dense block's MLP (transformer_layer.py: not a MoE
--                layer's) under tensor_parallel.checkpoint: its
--                intermediates discarded, its forward run again
--   shared_experts  a MoE block's shared experts, the same way
--                (moe_layer.py)
--   moe          the whole MoE layer under tensor_parallel.checkpoint
--                (moe_layer.py; it takes shared_experts' and moe_act's
--                place): router, permute, experts, unpermute and shared
--                experts discarded, their forward and its all-to-alls run
--                again in the backward
-- The other names Megatron takes (gdn_norm_out, gdp_in_proj, gdp_qkv, mhc)
-- are refused by name: not modelled.
local check = require "pipesim.argcheck"

local M = {}

M.MODELLED = { core_attn = true, layernorm = true, mla_up_proj = true, moe_act = true,
               mlp = true, shared_experts = true, moe = true }
-- transformer_config.py's allowed_modules, in its order
M.MEGATRON = { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts",
               "gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc" }
local KNOWN = {}
for _, n in ipairs(M.MEGATRON) do KNOWN[n] = true end

-- modules(list, mode, what, need) -> the set of module names (nil unless
-- mode is 'selective') and a key naming it (sorted names, for memo keys).
-- list nil means Megatron's default { "core_attn" }; what names the field
-- in messages, need the setting it needs ("recompute = 'selective'").
function M.modules(list, mode, what, need)
    if list ~= nil and mode ~= "selective" then
        -- Megatron reads the list only under selective: a flag that
        -- changes nothing is an error here
        check.fail("%s needs %s (got %s)", what, need, check.show(mode or "none"))
    end
    if mode ~= "selective" then return nil, "" end
    if list == nil then return { core_attn = true }, "core_attn" end
    if type(list) ~= "table" then
        check.fail("%s must be a list of Megatron's module names, got %s", what, check.show(list))
    end
    local set, names = {}, {}
    for i, n in ipairs(list) do
        if type(n) ~= "string" or not KNOWN[n] then
            check.fail("%s[%d]: unknown module %s (Megatron-Core 0.20 allows %s)", what, i,
                check.show(n), table.concat(M.MEGATRON, ", "))
        end
        if not M.MODELLED[n] then
            check.fail("%s[%d]: module '%s' is not modelled (pipesim models core_attn, " ..
                "layernorm, mla_up_proj, moe_act, mlp, shared_experts and moe)", what, i, n)
        end
        if not set[n] then names[#names + 1] = n end
        set[n] = true
    end
    for k in pairs(list) do
        if math.type(k) ~= "integer" or k < 1 or k > #list then
            check.fail("%s must be a list of Megatron's module names, got the key %s", what,
                check.show(k))
        end
    end
    table.sort(names)
    return set, table.concat(names, ",")
end

-- The model-wide checks of transformer_config.py (d98e8a64dd): mla_up_proj
-- needs multi_latent_attention, moe_act needs moe_grouped_gemm (a dense
-- model has no grouped GEMM: an error as in Megatron). has_mla, has_grouped:
-- whether any block has MLA, any MoE block a grouped GEMM. layers: the
-- model's layers, for the modules that would change nothing (Megatron
-- takes them silently; pipesim says so): mlp without a dense block,
-- shared_experts without shared experts, moe without a MoE block.
function M.check_model(set, has_mla, has_grouped, layers)
    if not set then return end
    local dense, shared, moe = false, false, false
    for _, l in ipairs(type(layers) == "table" and layers or {}) do
        local sh = type(l) == "table" and l.kind == "block" and l.shape or nil
        if type(sh) == "table" then
            dense = dense or (sh.experts == nil and (sh.ffn_hidden or 0) > 0)
            shared = shared or (sh.experts ~= nil and (sh.shared_ffn or 0) > 0)
            moe = moe or sh.experts ~= nil
        end
    end
    local need = { mlp = { dense, "dense blocks with an MLP" },
                   shared_experts = { shared, "MoE blocks with shared experts" },
                   moe = { moe, "MoE blocks" } }
    for _, n in ipairs { "mlp", "shared_experts", "moe" } do
        if set[n] and not need[n][1] then
            check.fail("recompute_modules: %s needs %s; this model has none (it would change " ..
                "nothing)", n, need[n][2])
        end
    end
    if set.mla_up_proj and not has_mla then
        check.fail("recompute_modules: mla_up_proj needs multi_latent_attention (Megatron: " ..
            "\"mla_up_proj in recompute_modules is only supported with multi_latent_attention\")")
    end
    if set.moe_act and not has_grouped then
        check.fail("recompute_modules: moe_act needs MoE blocks with grouped_gemm (Megatron: " ..
            "\"moe_act in recompute_modules is only supported with moe_grouped_gemm\")")
    end
end

return M
