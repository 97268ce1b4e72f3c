-- Expert parallelism for ps.run (issue 24, the parallel side): the
-- options (ep, etp, moe_imbalance, moe_dispatcher, ep_comm_share), their
-- checks, and a MoE block lowered to the layer fields the C core's ep
-- pass reads (core/par/ep.h, core/bind/run.c): the model's own costs from
-- moe.block_cost (lua/pipesim/models/moe.lua, MOE_INTERFACE: one
-- microbatch on the most loaded rank of the EP group) cut at the dispatch
-- and the combine, whose all-to-alls the core runs on the network.
--
-- Megatron-LM's MoE layer (megatron/core/transformer/moe/moe_layer.py,
-- MoELayer.forward, core 0.13-0.14): shared experts, then router and
-- preprocess (permute), dispatch, routed experts, combine (unpermute);
-- the backward walks it back. So the forward's piece before the dispatch
-- is attention + shared experts + router + permute, the experts' piece
-- lies between dispatch and combine, and unpermute follows the combine.
local check = require "pipesim.argcheck"

local M = {}

-- The ps.run fields this module reads, moe_imbalance and moe_dispatcher,
-- are the registry's (core/bind/fields.c, role FR_LOWER: parallel.lua
-- takes them out before the core); ep and etp go on to the core, which
-- places the groups (core/par/layout.h).

-- The dispatchers of Megatron's --moe-token-dispatcher-type (flex:
-- DeepEP's or HybridEP's normal kernels, models/moe_flex.lua).
local DISPATCHERS = { alltoall = true, allgather = true, flex = true }

-- Is this lowered-to-be layer a MoE block (ps.models marks it moe = true,
-- MOE_INTERFACE; its shape holds experts)?
function M.is_moe(l)
    return type(l) == "table" and l.moe == true and type(l.shape) == "table"
end

-- Does a plain layer carry the core's MoE fields itself?
local function plain_moe(l)
    return type(l) == "table" and l.shape == nil and
        (l.moe_dispatch_bytes ~= nil or l.moe_combine_bytes ~= nil)
end

-- Options from a ps.run table, checked (plain messages): ep, etp (nil:
-- tp), imbalance (max over mean tokens per expert, >= 1), dispatcher.
function M.options(spec, o)
    local function size(k)
        local v = spec[k]
        if v == nil then return nil end
        if math.type(v) ~= "integer" and not (type(v) == "number" and math.tointeger(v)) or v < 1 then
            check.fail("field '%s' must be an integer >= 1, got %s", k, check.show(v))
        end
        return math.tointeger(v)
    end
    o.ep = size("ep") or 1
    o.etp = size("etp")
    local imb = spec.moe_imbalance
    if imb ~= nil and (type(imb) ~= "number" or imb ~= imb or imb < 1 or imb == math.huge) then
        check.fail("field 'moe_imbalance' must be a number >= 1 (the most loaded expert's " ..
            "tokens over the mean), got %s", check.show(imb))
    end
    o.imbalance = imb or 1
    local d = spec.moe_dispatcher
    if d ~= nil then
        if type(d) ~= "string" or DISPATCHERS[d] == nil then
            check.fail("field 'moe_dispatcher': unknown dispatcher %s (expected alltoall, " ..
                "allgather or flex)", check.show(d))
        end
        if not DISPATCHERS[d] then
            check.fail("field 'moe_dispatcher': '%s' is not modelled yet (alltoall and allgather: " ..
                "docs/moe.md, Expert parallelism)", d)
        end
    end
    o.dispatcher = d or "alltoall"
    -- Megatron's combined 1F1B all-to-all overlap (core/par/ep.h; the
    -- schedule's and the recompute's conditions are checked there):
    -- transformer_config.py refuses the allgather dispatcher
    if spec.ep_overlap == true and o.dispatcher == "allgather" then
        check.fail("field 'ep_overlap' needs moe_dispatcher 'alltoall' or 'flex', got " ..
            "'allgather' (Megatron: \"overlap_moe_expert_parallel_comm is supported with " ..
            "alltoall/flex token dispatcher\")")
    end
    if o.dispatcher == "flex" and (o.etp or o.tp) > 1 then
        check.fail("field 'moe_dispatcher': flex with etp = %d is not modelled (etp = 1 only; " ..
            "etp defaults to tp)", o.etp or o.tp)
    end
    if o.dispatcher == "flex" and o.imbalance > 1 then
        -- its bytes are even routing's (models/moe_flex.lua)
        check.fail("field 'moe_imbalance': %g with the flex dispatcher is not modelled (even " ..
            "routing only)", o.imbalance)
    end
    if o.dispatcher == "allgather" and (o.etp or o.tp) > 1 then
        -- its group is then the etp x ep ranks, not the EP group the core's
        -- exchanges run in
        check.fail("field 'moe_dispatcher': allgather with etp = %d is not modelled (etp = 1 " ..
            "only)", o.etp or o.tp)
    end
    return o
end

-- After the layers are seen: options that would change nothing are errors.
-- has: some layer is a MoE layer (a model's, or plain with the fields).
function M.check_used(spec, o, has)
    if spec.ep_overlap == true and o.modules and o.modules.moe then
        check.fail("field 'ep_overlap' with recompute_modules 'moe' is not modelled (the " ..
            "recomputed all-to-alls' place in the combined 1F1B pair)")
    end
    if has then return end
    if spec.moe_imbalance ~= nil then
        check.fail("field 'moe_imbalance' needs MoE layers (ps.models with experts, or " ..
            "layers with moe_dispatch_bytes); this model has none")
    end
    if spec.moe_dispatcher ~= nil then
        check.fail("field 'moe_dispatcher' needs MoE layers (ps.models with experts, or " ..
            "layers with moe_dispatch_bytes); this model has none")
    end
    if spec.ep_overlap == true then
        check.fail("field 'ep_overlap' needs MoE layers (ps.models with experts, or layers " ..
            "with moe_dispatch_bytes); this model has none")
    end
    if o.ep > 1 then
        check.fail("field 'ep' = %d needs MoE layers (ps.models with experts, or layers " ..
            "with moe_dispatch_bytes); this model has none", o.ep)
    end
end

M.plain_moe = plain_moe

-- A positive integer field of a shape (nil allowed when optional).
local function shape_int(sh, k, i, optional, min)
    local v = sh[k]
    if optional and v == nil then return end
    if math.type(v) ~= "integer" and not (type(v) == "number" and math.tointeger(v)) or
        v < (min or 1) then
        check.fail("layers[%d].shape.%s must be %s integer (ps.models fills it), got %s", i, k,
            (min or 1) == 0 and "a non-negative" or "a positive", check.show(v))
    end
end

-- The MLA and MoE fields of a layer's shape, as ps.models fills them
-- (parallel.lua's shape check): a hand-edited shape gets a message, not
-- an arithmetic error inside models/moe.lua or mla.lua.
function M.check_shape(sh, i)
    local mla = sh.multi_latent_attention
    if mla ~= nil and type(mla) ~= "boolean" then
        check.fail("layers[%d].shape.multi_latent_attention must be a boolean (ps.models fills " ..
            "it), got %s", i, check.show(mla))
    end
    if mla then
        for _, k in ipairs { "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim" } do
            shape_int(sh, k, i)
        end
        shape_int(sh, "q_lora_rank", i, true)
    end
    if sh.experts ~= nil then
        shape_int(sh, "experts", i)
        shape_int(sh, "topk", i)
        shape_int(sh, "expert_ffn", i)
        shape_int(sh, "shared_ffn", i, false, 0)
        local cf = sh.capacity_factor
        if cf ~= nil and (type(cf) ~= "number" or not (cf > 0) or cf == math.huge) then
            check.fail("layers[%d].shape.capacity_factor must be a number > 0 (ps.models fills " ..
                "it), got %s", i, check.show(cf))
        end
    end
end

-- Megatron's checks of a MoE block against the sizes
-- (megatron/core/transformer/moe/moe_utils.py and arguments.py:
-- num_experts % expert_model_parallel_size == 0).
local function check_block(sh, o, i)
    local e = sh.experts
    if math.type(e) ~= "integer" or e < 1 then
        check.fail("layers[%d].shape.experts must be a positive integer (ps.models fills it), " ..
            "got %s", i, check.show(e))
    end
    if e % o.ep ~= 0 then
        check.fail("ep = %d does not divide the model's %d experts (layers[%d])", o.ep, e, i)
    end
end

-- The bytes a rank sends in all under Megatron's allgather dispatcher
-- (MoEAllGatherTokenDispatcher, megatron/core/transformer/moe/
-- token_dispatcher.py, core 0.13-0.14): token_dispatch all-gathers over
-- the tp x ep group (expert side: etp = 1 here, so the EP group) each
-- rank's Tr tokens' hidden states (e bytes), routing map ([Tr, E] bool)
-- and probabilities ([Tr, E], the router's dtype: the input's by default);
-- token_combine reduce-scatters the [ep Tr, h] unpermuted output back. A
-- rank so sends (ep - 1) x its share each way; the backward mirrors each
-- (the combine's gradient an all-gather of the hidden gradient, the
-- dispatch's a reduce-scatter of the hidden and probability gradients).
-- The core runs each as a direct exchange of those shares with every
-- peer at once: the bytes of NCCL's ring, one step's latency instead of
-- ep - 1.
local function allgather_bytes(sh, o)
    local e = require("pipesim.models.roofline").DTYPE_BYTES[sh.dtype]
    local Tr = sh.seq * sh.microbatch / (o.sp and o.tp or 1)
    local h, E, peers = sh.hidden, sh.experts, o.ep - 1
    return { dispatch = peers * Tr * (h * e + E * (1 + e)), combine = peers * Tr * h * e,
             dispatch_grad = peers * Tr * h * e, combine_grad = peers * Tr * (h + E) * e }
end

-- Expert tensor parallelism's collectives around the experts (Megatron-
-- LM's MoEAlltoAllTokenDispatcher, token_dispatcher.py, core 0.13-0.14:
-- with tp_size > 1, the expert TP group's, token_dispatch all-gathers the
-- tokens the all-to-all brought over the ETP group,
-- gather_from_sequence_parallel_region, and token_combine reduce-scatters
-- the experts' output back, reduce_scatter_to_sequence_parallel_region,
-- before the combine's all-to-all; the backward runs each one's
-- gradient, a reduce-scatter and an all-gather, of the same size). The
-- buffer is the loaded rank's R = E/ep x tokens_per_expert tokens (the
-- ETP-gathered count), h wide, in the model's dtype. Costed on the first
-- ETP group of the cluster as the TP collectives are (o.etp_cost,
-- parallel.lua; nil: an ideal network). Returns { time = one all-gather
-- plus one reduce-scatter (each direction runs both), bytes = what a rank
-- sends in one of them over a ring, (etp - 1) / etp of the buffer }.
function M.etp_comm(sh, c, o)
    local etp = o.etp or o.tp
    if etp <= 1 then return { time = 0, bytes = 0 } end
    local e = require("pipesim.models.roofline").DTYPE_BYTES[sh.dtype]
    local buf = sh.experts // o.ep * c.tokens_per_expert * sh.hidden * e
    local cost = o.etp_cost or function() return 0 end
    return { time = cost("allgather", buf) + cost("reduce_scatter", buf),
             bytes = buf * (etp - 1) / etp }
end

-- A MoE block's figures for the core. l: the layer (kind "block", moe =
-- true, shape), o: the options, dev: the roofline device, tcomm: the
-- attention's TP collectives' seconds { fwd, bwd } (parallel.lua), i: its
-- index. The times are the most loaded rank's (block_cost applies the
-- imbalance), so every rank of the group waits for it at the combine.
function M.lower_block(l, o, dev, tcomm, i)
    local sh = l.shape
    check_block(sh, o, i)
    if not dev then
        check.fail("layers[%d]: a MoE block needs the roofline compute model: give the " ..
            "cluster a device of ps.clusters", i)
    end
    if o.overlap then
        check.fail("layers[%d]: tp_overlap with MoE blocks is not modelled", i)
    end
    -- required here: models/moe.lua loads parallel.lua, which loads this
    local c = require("pipesim.models.moe").block_cost(sh, { tp = o.tp, etp = o.etp or o.tp,
        ep = o.ep, cp = 1, sp = o.sp, imbalance = o.imbalance, device = dev,
        selective = o.selective, modules = o.modules, mtp = l.mtp })
    local function num(k)
        local v = c[k]
        if type(v) ~= "number" or v ~= v or v < 0 then
            check.fail("layers[%d]: moe.block_cost gave %s = %s (a number >= 0 expected)", i, k,
                check.show(v))
        end
        return v
    end
    local af, ab = num("attn_fwd_time") + tcomm.fwd, num("attn_bwd_time") + tcomm.bwd
    local rf, rb = num("router_fwd_time"), num("router_bwd_time")
    local pf, pb = num("permute_fwd_time"), num("permute_bwd_time")
    local ef, eb = num("expert_fwd_time"), num("expert_bwd_time")
    local etc = M.etp_comm(sh, c, o)
    ef, eb = ef + etc.time, eb + etc.time
    local sf, sb = num("shared_fwd_time"), num("shared_bwd_time")
    local out = { name = l.name, kind = l.kind }
    -- permute before the dispatch, unpermute after the combine: half each
    out.fwd_time = af + sf + rf + pf + ef
    out.bwd_time = ab + sb + rb + pb + eb
    out.moe_fwd_pre_time = af + sf + rf + pf / 2
    out.moe_fwd_expert_time = ef
    out.moe_bwd_pre_time = pb / 2
    out.moe_bwd_expert_time = eb
    if c.moe_recompute then
        -- recompute_modules 'moe' (models/moe.lua): the backward runs the
        -- layer's forward first. Its dispatch goes the way of the combine's
        -- gradient and its combine the way of the dispatch's gradient, so
        -- each rides in the backward all-to-all of its direction (one
        -- latency for the two, the bytes of both): shared experts, router
        -- and permute before the first, the experts' forward, unpermute
        -- and unpermute's gradient beside the experts' backward between them
        out.bwd_time = out.bwd_time + sf + rf + pf + ef
        out.moe_bwd_pre_time = sf + rf + pf / 2
        out.moe_bwd_expert_time = ef + pf / 2 + pb / 2 + eb
    end
    -- the weight gradients' share, for the zero-bubble schedules' W
    local w = (c.attn_bwd_weight_time or 0) + (c.shared_bwd_weight_time or 0) +
        (c.expert_bwd_weight_time or 0)
    out.bwd_input_time, out.bwd_weight_time = out.bwd_time - w, w
    if o.ep > 1 and o.dispatcher == "flex" then
        if sh.capacity_factor then
            -- as Megatron's TransformerConfig: a capacity factor needs the
            -- alltoall dispatcher
            check.fail("layers[%d]: a capacity factor needs the alltoall dispatcher (Megatron's " ..
                "moe_expert_capacity_factor), not flex", i)
        end
        local Tr = sh.seq * sh.microbatch / (o.sp and o.tp or 1)
        local b = require("pipesim.models.moe_flex").bytes(sh, c, o.ep, o.flex, Tr)
        out.moe_dispatch_bytes, out.moe_combine_bytes = b.dispatch, b.combine
        out.moe_dispatch_grad_bytes, out.moe_combine_grad_bytes = b.dispatch_grad, b.combine_grad
        out.moe_flex_nvl_share, out.moe_flex_rdma_share = b.nvl_share, b.rdma_share
        -- DeepEP's layout kernel and notify before the forward dispatch
        out.fwd_time = out.fwd_time + b.fixed_fwd_time
        out.moe_fwd_pre_time = out.moe_fwd_pre_time + b.fixed_fwd_time
    elseif o.ep > 1 and o.dispatcher == "allgather" then
        local b = allgather_bytes(sh, o)
        out.moe_dispatch_bytes, out.moe_combine_bytes = b.dispatch, b.combine
        out.moe_dispatch_grad_bytes, out.moe_combine_grad_bytes = b.dispatch_grad, b.combine_grad
    elseif o.ep > 1 then
        out.moe_dispatch_bytes = num("dispatch_bytes")
        out.moe_combine_bytes = num("combine_bytes")
        out.moe_dispatch_grad_bytes = num("dispatch_grad_bytes")
        out.moe_combine_grad_bytes = num("combine_grad_bytes")
    end
    if c.moe_recompute and out.moe_dispatch_bytes then
        out.moe_dispatch_grad_bytes = out.moe_dispatch_grad_bytes + out.moe_dispatch_bytes
        out.moe_combine_grad_bytes = out.moe_combine_grad_bytes + out.moe_combine_bytes
    end
    out.params = num("dense_params") + num("expert_params")
    out.moe_expert_params = num("expert_params")
    out.act_bytes = num("act_bytes")
    if sh.fp8 then
        -- FP8 copies of the linear weights (models/fp8.lua), the experts'
        -- grouped linears' as the dense side's (TE keeps both)
        local rl = require "pipesim.models.roofline"
        out.static_bytes = rl.fp8.weight_bytes(sh, dev, rl.DTYPE_BYTES[sh.dtype]) *
            ((c.linear_params or 0) + out.moe_expert_params)
    end
    out.tp_comm_time = tcomm.fwd + tcomm.bwd + (c.moe_recompute and 3 or 2) * etc.time
    out.tp_exposed_time = out.tp_comm_time
    c.etp_comm_time, c.etp_comm_bytes = etc.time, etc.bytes
    out.moe_figures = c
    if l.out_bytes then out.out_bytes = l.out_bytes / o.tp end
    return out
end

-- What ps.run's result says about expert parallelism (r.moe).
function M.annotate(r, o, has)
    if not has then return end
    r.moe = { ep = o.ep, etp = o.etp or o.tp, imbalance = o.imbalance, dispatcher = o.dispatcher,
              routing = o.imbalance == 1 and
                  "even: every expert gets the mean of the tokens (as published benchmarks " ..
                  "force it); set moe_imbalance for a skewed load" or
                  string.format("the most loaded expert gets %g x the mean of the tokens",
                      o.imbalance) }
end

return M
