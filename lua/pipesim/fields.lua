-- pipesim.fields: the field lists of ps.run's front end: which fields the
-- lowering (parallel.lua) reads and takes out, which make ps.run need it,
-- and which layer fields the C core reads.
local cpar = require "pipesim.cp"
local expert = require "pipesim.expert"

local F = {}

local RECOMPUTE = { none = true, selective = true, full = true }

-- Layer fields the C core reads (core/bind/run.c read_layer).
local CORE_LAYER = { name = true, fwd_flops = true, bwd_flops = true, fwd_time = true,
                     bwd_time = true, bwd_input_time = true, bwd_weight_time = true,
                     params = true, act_bytes = true, out_bytes = true, in_bytes = true,
                     recompute_time = true, kept_bytes = true, tp_comm_time = true,
                     tp_exposed_time = true, bwd_weight_bytes = true, bwd_input_flops = true,
                     bwd_weight_flops = true, shared_params = true, static_bytes = true,
                     work_bytes = true,
                     -- a MoE block's (lua/pipesim/expert.lua, core/par/ep.h)
                     moe_dispatch_bytes = true, moe_combine_bytes = true,
                     moe_dispatch_grad_bytes = true, moe_combine_grad_bytes = true,
                     moe_fwd_pre_time = true, moe_fwd_expert_time = true,
                     moe_bwd_pre_time = true, moe_bwd_expert_time = true,
                     moe_expert_params = true }
local METHODS = { uniform = true, block = true }

-- The fields this module reads from ps.run and removes before the core.
F.FIELDS = { tp = true, sequence_parallel = true, recompute = true, recompute_modules = true,
             recompute_method = true, recompute_layers = true, tp_overlap = true,
             tp_comm = true }
for k in pairs(cpar.FIELDS) do F.FIELDS[k] = true end
for k in pairs(expert.FIELDS) do F.FIELDS[k] = true end
-- Fields that make ps.run need this module: its own and expert
-- parallelism's sizes (checked against the layers here, read by the core)
F.TRIGGERS = { ep = true, etp = true }
for k in pairs(F.FIELDS) do F.TRIGGERS[k] = true end
local FIELD_LIST = {} -- F.FIELDS' names, for loops without pairs
for k in pairs(F.FIELDS) do FIELD_LIST[#FIELD_LIST + 1] = k end
table.sort(FIELD_LIST)
F.CORE_LAYER, F.FIELD_LIST, F.RECOMPUTE, F.METHODS = CORE_LAYER, FIELD_LIST, RECOMPUTE, METHODS

return F
