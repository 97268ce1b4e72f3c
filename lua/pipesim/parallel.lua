-- Tensor/sequence parallelism and recompute for ps.run, lowered to what the
-- C core runs: layer times of one TP rank from the roofline
-- (models/roofline.lua) plus the TP collectives on the compute stream,
-- costed on the layout's first TP group, and per-rank parameters and
-- activations after Korthikanti et al. 2022. The placement (Megatron-LM's
-- rank order tp-cp-ep-dp-pp, the TP groups, which ranks are simulated once)
-- belongs to the C core's layout (core/par/layout.h); ps.layout is its
-- view (M.layout).
local check = require "pipesim.argcheck"
local cpar = require "pipesim.cp" -- context parallelism's share of the lowering
local pcore = require "pipesim.core" -- core.seal_layers
local roofline = require "pipesim.roofline_lazy" -- loads on first use (issue 12)
local block = require "pipesim.block"
local layout = require "pipesim.layout"
local fields = require "pipesim.fields"
local finish = require "pipesim.finish"

local expert = require "pipesim.expert"
local recompute = require "pipesim.recompute"

local M = {}

local RECOMPUTE, METHODS = fields.RECOMPUTE, fields.METHODS
-- The fields this module reads from ps.run and removes before the core
-- (lua/pipesim/fields.lua), and those that make ps.run need it.
M.FIELDS, M.TRIGGERS = fields.FIELDS, fields.TRIGGERS
-- Megatron's per-block figures (lua/pipesim/block.lua) and the layout
-- (lua/pipesim/layout.lua), as this module has always offered them
for k, f in pairs(block) do M[k] = f end
local embedding_comm, head_comm = block.embedding_comm, block.head_comm
local run_layout = layout.run_layout
M.world, M.stage_ranks, M.layout = layout.world, layout.stage_ranks, layout.layout
-- the lowering's last step (lua/pipesim/finish.lua)
M.finish = finish.finish

-- Does ps.run need this module? Model layers (with a shape) or any TP or
-- recompute field.
function M.applies(spec)
    for k in pairs(M.TRIGGERS) do
        if spec[k] ~= nil then return true end
    end
    for _, l in ipairs(spec.layers) do
        if type(l) == "table" and l.shape ~= nil then return true end
    end
    return false
end

-- Options from a ps.run table, checked; errors are plain messages.
function M.options(spec)
    local o = {}
    local t = spec.tp == nil and 1 or spec.tp
    if math.type(t) ~= "integer" or t < 1 then
        check.fail("field 'tp' must be an integer >= 1, got %s", check.show(t))
    end
    o.tp = t
    local sp = spec.sequence_parallel
    if sp ~= nil and type(sp) ~= "boolean" then
        check.fail("field 'sequence_parallel' must be a boolean, got %s", check.show(sp))
    end
    o.sp = sp == true
    if o.sp and t == 1 then
        check.fail("field 'sequence_parallel' needs tp > 1 (got tp = 1)")
    end
    local ov = spec.tp_overlap
    if ov ~= nil and type(ov) ~= "boolean" then
        check.fail("field 'tp_overlap' must be a boolean, got %s", check.show(ov))
    end
    o.overlap = ov == true
    local rc = spec.recompute
    if rc == nil then rc = spec.checkpoint == true and "full" or "none" end
    if type(rc) ~= "string" or not RECOMPUTE[rc] then
        check.fail("field 'recompute': unknown mode %s (expected none, selective or full)",
            check.show(rc))
    end
    if spec.checkpoint == true and rc ~= "full" then
        check.fail("field 'checkpoint' = true means recompute = 'full', but recompute is '%s'", rc)
    end
    o.recompute = rc
    -- which modules selective recompute covers (Megatron's
    -- --recompute-modules, lua/pipesim/recompute.lua); o.selective: the
    -- attention core's (core_attn)
    o.modules, o.modules_key = recompute.modules(spec.recompute_modules, rc,
        "field 'recompute_modules'", "recompute = 'selective'")
    o.selective = o.modules ~= nil and o.modules.core_attn == true
    local method = spec.recompute_method == nil and "uniform" or spec.recompute_method
    if type(method) ~= "string" or not METHODS[method] then
        check.fail("field 'recompute_method': unknown method %s (expected uniform or block)",
            check.show(method))
    end
    local k = spec.recompute_layers == nil and 1 or spec.recompute_layers
    if math.type(k) ~= "integer" or k < 1 then
        check.fail("field 'recompute_layers' must be an integer >= 1, got %s", check.show(k))
    end
    if (spec.recompute_method ~= nil or spec.recompute_layers ~= nil) and rc ~= "full" then
        check.fail("fields 'recompute_method' and 'recompute_layers' need recompute = 'full' (got '%s')", rc)
    end
    o.method, o.k = method, k
    local tc = spec.tp_comm
    if tc ~= nil then
        if type(tc) ~= "table" then
            check.fail("field 'tp_comm' must be a table such as { algorithm = \"ring\", " ..
                "protocol = \"none\" }, got %s", check.show(tc))
        end
        check.known_fields(tc, pcore.fields.tp_comm, "tp_comm")
        for _, f in ipairs { "algorithm", "protocol" } do
            if tc[f] ~= nil and type(tc[f]) ~= "string" then
                check.fail("field 'tp_comm.%s' must be a string, got %s", f, check.show(tc[f]))
            end
        end
        o.tp_algorithm, o.tp_protocol = tc.algorithm, tc.protocol
    end
    return expert.options(spec, cpar.options(spec, o))
end

local function comm_time(list, cost)
    local x = 0
    for _, c in ipairs(list) do x = x + cost(c.op, c.bytes) end
    return x
end

-- A layer's parameters, activations and static bytes on one TP (and CP)
-- rank into out: l the model layer, s the shape one rank sees, mc the
-- block_cost of an MLA or MTP block (nil otherwise).
local function layer_memory(out, l, s, o, dev, mc)
    local t, sp, kind = o.tp, o.sp, l.kind
    local e = roofline.DTYPE_BYTES[s.dtype]
    local sbh = s.seq * s.microbatch * s.hidden
    if s.fp8 and not dev then
        check.fail("fp8: the cluster's device has no roofline constants (fp8_flops); " ..
            "use a device of ps.clusters")
    end
    if kind == "block" and (s.multi_latent_attention or l.mtp) then
        -- without a device the plain FLOP rule, which runs at tp = 1 only
        out.params = mc and mc.dense_params or l.params
        out.act_bytes = mc and mc.act_bytes or l.act_bytes
        local fb = s.fp8 and mc and roofline.fp8.weight_bytes(s, dev, e) or 0
        if fb ~= 0 then out.static_bytes = fb * mc.linear_params end
    elseif kind == "block" then
        out.params = M.block_params(s, t)
        out.act_bytes = M.block_act_bytes(s, t, sp, o.selective)
        -- FP8 weight copies of the linear layers (models/fp8.lua)
        local fb = s.fp8 and roofline.fp8.weight_bytes(s, dev, roofline.DTYPE_BYTES[s.dtype]) or 0
        if fb ~= 0 then out.static_bytes = fb * M.block_linear_params(s, t) end
    elseif kind == "embedding" then
        local pos = s.position == "learned" and s.max_positions * s.hidden or 0
        out.params = s.vocab * s.hidden / t + pos
        out.act_bytes = (s.dropout and 1 or 0) * sbh / (sp and t or 1)
    else
        local norm = (s.norm == "layernorm" and 2 or 1) * s.hidden
        out.params = s.vocab * s.hidden / t + norm
        out.shared_params = l.shared_params and s.vocab * s.hidden / t or nil
        -- final norm input and LM head input (split with SP), fp32 logits
        -- (TE's fused cross-entropy keeps its e-byte gradient, not fp32)
        local logit = s.ce_fusion == "te" and e or 4
        out.act_bytes = 2 * e * sbh / (sp and t or 1) + logit * s.seq * s.microbatch * s.vocab / t
        if s.fp8 and s.fp8_head then -- --fp8-output-proj: the head's FP8 copies
            out.static_bytes = roofline.fp8.weight_bytes(s, dev, e) * s.vocab * s.hidden / t
        end
    end
end

-- The FP8 amax reductions of one dense block and microbatch (models/
-- fp8.lua, Transformer Engine's): current scaling's TP all-reduces beside
-- the sequence-parallel all-gathers, and delayed scaling's per-region
-- all-reduce over the stage's TP x CP x DP group (o.amax_delayed, set by
-- prepare: a chunk's reduction shared by its blocks). Returns the seconds
-- added to the forward and to the input-gradient backward; both block the
-- compute stream, so neither overlaps. Full recompute repeats the
-- forward's (TE's checkpoint re-enters fp8_autocast).
local function amax_time(s, o, cost)
    local f8 = roofline.fp8
    local nf, nb = f8.tp_amax_reductions(s, o.tp, o.sp)
    local one = (nf + nb > 0) and cost("allreduce", f8.TP_AMAX_BYTES) or 0
    local f, b = nf * one, nb * one
    local d = o.amax_delayed
    if d and f8.delayed(s) then f, b = f + d.fwd, b + d.bwd end
    return f, b
end

-- A layer's per-TP-rank figures for the core. l is a model layer (kind,
-- shape), dev the roofline device or nil (plain FLOP rule), cost(op,
-- bytes) the time of one TP collective.
local function lower_layer(l, o, dev, cost, ccost, i)
    -- one CP rank's layers work on seq/cp tokens (lua/pipesim/cp.lua)
    local full, t, sp = l.shape, o.tp, o.sp
    local s = cpar.local_shape(full, o.cp)
    if l.kind == "block" and l.moe and o.cp > 1 then
        -- expert.lua prices a MoE block with block_cost, which has no
        -- attention parts for cp.lua to split
        check.fail("layer '%s': cp = %d with MoE blocks is not modelled", tostring(l.name), o.cp)
    end
    -- a dense block with multi-latent attention, or a multi-token
    -- prediction block: models/moe.lua's block_cost knows their
    -- projections (MLA's, the MTP module's)
    local mc
    if l.kind == "block" and not l.moe and (s.multi_latent_attention or l.mtp) then
        local what = l.mtp and "multi-token prediction" or "multi-latent attention"
        if dev and o.overlap then
            check.fail("layer '%s': tp_overlap with %s blocks is not modelled", tostring(l.name),
                what)
        end
        if o.cp > 1 then
            -- cp.lua splits a block's attention by the roofline's parts,
            -- which block_cost does not give
            check.fail("layer '%s': cp = %d with %s blocks is not modelled", tostring(l.name),
                o.cp, what)
        end
        if dev then
            mc = require("pipesim.models.moe").block_cost(s, { device = dev, tp = t, sp = sp,
                selective = o.selective, modules = o.modules, mtp = l.mtp })
        end
    end
    local out = { name = l.name, kind = l.kind }
    local kind = l.kind
    local comm
    if kind == "block" then comm = M.block_comm(s, t, sp)
    elseif kind == "embedding" then comm = embedding_comm(s, t, sp)
    else comm = head_comm(s, t, sp) end
    local cf, cb = comm_time(comm.fwd, cost), comm_time(comm.bwd, cost)
    if kind == "block" and expert.is_moe(l) then
        -- the attention's half of the block's TP collectives (one of its
        -- two all-reduces, or two of its four SP collectives, each way)
        return expert.lower_block(l, o, dev, { fwd = cf / 2, bwd = cb / 2 }, i)
    end
    out.tp_comm_fwd, out.tp_comm_bwd = cf, cb
    local e = roofline.DTYPE_BYTES[s.dtype]
    layer_memory(out, l, s, o, dev, mc)
    -- --recompute-modules on a plain dense block (moe.block_cost counts
    -- them in the MLA and MTP blocks' figures): its norms' outputs
    local again = 0
    if kind == "block" and not mc and o.modules and (o.modules.layernorm or o.modules.mlp) then
        if s.multi_latent_attention or l.mtp then
            check.fail("layer '%s': recompute_modules needs the roofline compute model (a " ..
                "device of ps.clusters) with MLA or MTP blocks", tostring(l.name))
        end
        local drop
        drop, again = require("pipesim.models.moe").discarded(s, o, dev, s.seq * s.microbatch,
            true)
        out.act_bytes = out.act_bytes - drop
    end
    -- pipeline p2p: each TP rank sends 1/t of the boundary activation
    -- (Narayanan et al. 2021 Sec. 4.1 scatter/gather; with SP the tensor
    -- is already split); the all-gather inside the receiving node is not
    -- charged (an NVLink all-gather, small next to a stage's compute)
    if l.out_bytes then out.out_bytes = l.out_bytes / (t * o.cp) end
    out.fwd_flops = l.fwd_flops and l.fwd_flops / (t * o.cp) or nil
    if l.fwd_time ~= nil then
        -- profiled: measured times override everything
        out.fwd_time, out.bwd_time = l.fwd_time, l.bwd_time
        return out
    end
    if dev then
        local opt = { tp = t, sp = sp, selective = o.selective }
        local rf
        if mc then
            rf = { fwd = mc.attn_fwd_time + mc.shared_fwd_time,
                   bwd_weight = mc.attn_bwd_weight_time + mc.shared_bwd_weight_time }
            rf.bwd_input = mc.attn_bwd_time + mc.shared_bwd_time - rf.bwd_weight
        elseif kind == "block" then rf = roofline.block(s, dev, opt)
        elseif kind == "embedding" then rf = roofline.embedding(s, dev, opt)
        else rf = roofline.head(s, dev, opt) end
        local f, bi, bw = rf.fwd, rf.bwd_input + again, rf.bwd_weight
        if o.overlap and kind == "block" and sp then
            -- tp_overlap with sequence parallelism, as Megatron runs it
            -- (Transformer Engine's userbuffers): each collective beside
            -- its own GEMM, chunked and sharing the SMs
            -- (roofline.te_overlap); what that leaves exposed is added to
            -- each pass
            local ag = cost("allgather", comm.fwd[1].bytes)
            local rs = cost("reduce_scatter", comm.fwd[2].bytes)
            local xf, xb, xw = roofline.te_overlap(dev, rf.parts, t, ag, rs)
            out.tp_exposed_fwd = xf
            out.tp_comm_exposed = xf + xb + xw
            f, bi, bw = f + xf, bi + xb, bw + xw
        elseif o.overlap then
            -- tp_overlap: Megatron's --tp-comm-overlap pipelines each TP
            -- collective with the GEMM next to it (userbuffers), so a
            -- block's communication hides behind its GEMMs: a pass costs
            -- max(its GEMMs, its collectives) + its other work. Modelled
            -- per pass with the GEMM share of the pass (the backward's
            -- data- and weight-gradient GEMMs both), the exposed rest in F
            -- and B.
            local gf, gb = 0, 0
            for _, p in ipairs(rf.parts or {}) do
                if p.flops and p.pass == "F" then gf = gf + p.time end
                if p.flops and p.pass ~= "F" then gb = gb + p.time end
            end
            out.tp_exposed_fwd = math.max(0, cf - gf)
            out.tp_comm_exposed = out.tp_exposed_fwd + math.max(0, cb - gb)
            f = f + out.tp_exposed_fwd
            bi = bi + math.max(0, cb - gb)
        else
            f, bi = f + cf, bi + cb
            out.tp_exposed_fwd = cf
            out.tp_comm_exposed = cf + cb
        end
        if kind == "block" and o.cp > 1 then
            f, bi = cpar.lower_block(out, full, e, o, rf, f, bi, ccost)
        end
        if kind == "block" and not mc and s.fp8 then
            local af, ab = amax_time(s, o, cost)
            f, bi = f + af, bi + ab
        end
        out.tp_comm_time, out.tp_exposed_time = cf + cb, out.tp_comm_exposed
        out.fwd_time, out.bwd_input_time, out.bwd_weight_time = f, bi, bw
        out.bwd_time = bi + bw
        out.attention_core = rf.attention_core
    else
        if t > 1 or o.cp > 1 then
            check.fail("%s = %d needs the roofline compute model: give the cluster a device " ..
                "with roofline constants (ps.clusters.device or ps.clusters.dgx), or fwd_time",
                t > 1 and "tp" or "cp", t > 1 and t or o.cp)
        end
        out.fwd_flops = l.fwd_flops
        out.bwd_flops = l.bwd_flops
    end
    return out
end

-- Lowering a model layer evaluates the roofline (tens of microseconds a
-- layer), and a sweep lowers the same layers run after run. So lowered
-- layers are memoised in `memo`, a table the caller keeps per cluster
-- (the device and the TP collective costs belong to it): under the
-- layer's shape table, checked against a signature of the shape's values
-- (a shape changed in place is lowered anew, never served stale), then
-- under the options and TP group, then under the layer table itself (weak
-- keys), checked against the layer's own figures. A hit allocates nothing;
-- the lowered tables are read, never changed, by ps.run.
local LAYER_FIGURES = { "kind", "name", "fwd_time", "bwd_time", "out_bytes", "fwd_flops",
                        "bwd_flops", "shared_params" }

local function shape_signature(s)
    local parts = {}
    for k, v in pairs(s) do parts[#parts + 1] = tostring(k) .. "=" .. tostring(v) end
    table.sort(parts)
    return table.concat(parts, ";")
end

local function lower_memoised(memo, l, o, dev, cost, okey, sigs, ccost, i)
    if not memo then return lower_layer(l, o, dev, cost, ccost, i) end
    local sh = l.shape
    local sig = sigs[sh]
    if not sig then sig = shape_signature(sh); sigs[sh] = sig end
    local entry = memo[sh]
    if not entry or entry.sig ~= sig then
        entry = { sig = sig, by_options = {} }
        memo[sh] = entry
    end
    local per_layer = entry.by_options[okey]
    if not per_layer then
        per_layer = setmetatable({}, { __mode = "k" })
        entry.by_options[okey] = per_layer
    end
    local hit = per_layer[l]
    if hit then
        for _, f in ipairs(LAYER_FIGURES) do
            if hit.figures[f] ~= l[f] then hit = nil; break end
        end
        if hit then return hit.out end
    end
    local out = lower_layer(l, o, dev, cost, ccost, i)
    local figures = {}
    for _, f in ipairs(LAYER_FIGURES) do figures[f] = l[f] end
    per_layer[l] = { figures = figures, out = out }
    return out
end

-- Shapes check_shape passed, by table (weak), with the signature of the
-- values it passed with.
local CHECKED_SHAPES = setmetatable({}, { __mode = "k" })

-- A model layer's shape as the lowering reads it: a table with the sizes
-- and the dtype ps.models fills in (models/transformer.lua), each a
-- positive integer (a hand-made shape once ended in a Lua error, issue
-- 27). Checked rather than normalised again: ps.models' own per-layer
-- variants (FP8's BF16 end layers) are no new input for its checks.
-- Raises naming layers[i].shape.
local SHAPE_SIZES = { "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "seq",
                      "microbatch", "vocab" }
-- the sizes of multi-latent attention (models/mla.lua) and of a MoE
-- block (models/moe.lua), when the shape has them; 0 allowed where the
-- second entry says so
local MLA_SIZES = { "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim" }
local MOE_SIZES = { "experts", "topk", "expert_ffn", { "shared_ffn", 0 } }

local function check_size(sh, i, k, least)
    local v = sh[k]
    if math.type(v) ~= "integer" and not (type(v) == "number" and math.tointeger(v))
        or v < (least or 1) then
        check.fail("layers[%d].shape.%s must be a %s integer (ps.models fills it), got %s", i, k,
            least == 0 and "non-negative" or "positive", check.show(v))
    end
end

local function check_shape(sh, i)
    if type(sh) ~= "table" then
        check.fail("layers[%d].shape must be a table (the shape of a layer from ps.models), got %s",
            i, check.show(sh))
    end
    for _, k in ipairs(SHAPE_SIZES) do check_size(sh, i, k) end
    -- learned positions: the embedding holds max_positions of them
    if sh.position == "learned" then check_size(sh, i, "max_positions") end
    local mla = sh.multi_latent_attention
    if mla ~= nil and type(mla) ~= "boolean" then
        check.fail("layers[%d].shape.multi_latent_attention must be a boolean (ps.models fills " ..
            "it), got %s", i, check.show(mla))
    end
    local extra = {}
    if mla then extra = { table.unpack(MLA_SIZES) } end
    if mla and sh.q_lora_rank ~= nil then extra[#extra + 1] = "q_lora_rank" end
    if sh.experts ~= nil then table.move(MOE_SIZES, 1, #MOE_SIZES, #extra + 1, extra) end
    if sh.mtp_layers ~= nil then extra[#extra + 1] = { "mtp_layers", 0 } end
    for _, k in ipairs(extra) do
        if type(k) == "table" then check_size(sh, i, k[1], k[2]) else check_size(sh, i, k) end
    end
    if not roofline.DTYPE_BYTES[sh.dtype] then
        check.fail("layers[%d].shape.dtype: unknown dtype %s (ps.models fills it)", i,
            check.show(sh.dtype))
    end
    expert.check_shape(sh, i)
end

-- Delayed scaling's amax all-reduces (models/fp8.lua: one forward and one
-- backward per model chunk and microbatch, over the stage's TP x CP x DP
-- ranks, Megatron's amax reduction group) as each FP8 block's share:
-- { fwd, bwd } seconds, a chunk's reduction over its blocks, or nil when
-- no block runs delayed scaling or the group is one rank. The chunks are
-- stages x virtual stages; each holds the FP8 blocks / chunks (exact when
-- they hold equal numbers, as Megatron's uniform split does).
local function delayed_amax(spec, o, cost)
    local f8, nblocks = roofline.fp8, 0
    for _, l in ipairs(spec.layers) do
        if type(l) == "table" and l.kind == "block" and l.shape and f8.delayed(l.shape) then
            nblocks = nblocks + 1
        end
    end
    if nblocks == 0 or not cost or o.tp * o.cp * (spec.dp or 1) == 1 then return nil end
    local chunks = (spec.stages or 1) * (spec.virtual_stages or 1)
    local per_chunk = math.ceil(nblocks / chunks)
    local group = run_layout(spec, "tp-cp-dp")[1]
    local share = math.min(nblocks, chunks) / nblocks
    return {
        fwd = share * cost("allreduce", per_chunk * f8.DELAYED_FWD_BYTES, group, {}),
        bwd = share * cost("allreduce", per_chunk * f8.DELAYED_BWD_BYTES, group, {}),
    }
end

-- prepare(spec, dev, cost, memo) -> plan: { options, layers (for the
-- core and the partition), group (the cluster ranks of the first TP group,
-- whose collectives the TP costs are of) }. dev: roofline device or nil;
-- cost(op, bytes, ranks, o): a TP collective's time on the listed cluster
-- ranks with the options' tp_comm, or nil without a cluster (an ideal
-- network: free); memo: a table kept per cluster for lowered layers, or
-- nil. core.check_run has checked the sizes against the cluster. Plain
-- layers (no shape) pass through unchanged at tp = 1 and are an error at tp
-- > 1.
function M.prepare(spec, dev, cost, memo)
    local o = M.options(spec)
    local t = o.tp
    local plan = { o = o }
    -- the TP group of stage 0 in replica 0 (core/par/layout.h: the first
    -- of Megatron's TP groups); ranks and placement checked there
    local group = t > 1 and run_layout(spec, "tp")[1] or nil
    plan.group = group
    local function tcost(op, bytes)
        if t == 1 or not cost then return 0 end
        return cost(op, bytes, group, o)
    end
    -- CP: the first CP group's collectives (lua/pipesim/cp.lua), as
    -- every collective runs (no tp_comm options); sendrecv and alltoall
    -- are NCCL's point-to-point sends, pipesim's direct algorithm
    local ccost, cgroup
    if o.cp > 1 then
        cgroup = run_layout(spec, "cp")[1]
        local a2a, ring = cpar.groups(cgroup, o)
        ccost = { a2a = a2a, ring = ring, cost = function(op, bytes, ranks)
            if not cost then return 0 end
            return cost(op, bytes, ranks, cpar.P2P_OPS[op] or {})
        end }
    end
    plan.cp_group = cgroup
    o.amax_delayed = delayed_amax(spec, o, cost)
    -- expert TP: the first ETP group (Megatron's expert_tensor_parallel
    -- group), whose all-gather and reduce-scatter lower_block costs as
    -- the TP collectives are (on the cluster); placed on first use, so a
    -- dense model (etp defaults to tp) never lays it out
    local etp = o.etp or t
    if etp > 1 then
        local egroup
        o.etp_cost = function(op, bytes)
            if not cost then return 0 end
            if not egroup then
                local lay = { tp = t, cp = o.cp, dp = spec.dp or 1, pp = spec.stages, ep = o.ep,
                              etp = etp, ranks = spec.ranks, placement = spec.placement }
                local ok, groups = pcall(pcore.layout, lay, "etp")
                if not ok then error(groups, 0) end
                egroup = groups[1]
            end
            return cost(op, bytes, egroup, o)
        end
    end
    if o.dispatcher == "flex" and o.ep > 1 then
        -- where the EP groups lie on the nodes (models/moe_flex.lua)
        local lay = { tp = t, cp = o.cp, dp = spec.dp or 1, pp = spec.stages, ep = o.ep,
                      etp = o.etp or t, ranks = spec.ranks, placement = spec.placement }
        local ok, groups = pcall(pcore.layout, lay, "ep")
        if not ok then error(groups, 0) end
        local cl = spec.cluster
        o.flex = require("pipesim.models.moe_flex").layout(groups,
            (type(cl) == "userdata" or type(cl) == "table") and cl.gpus_per_node or nil, cl)
    end
    local layers = {}
    local checked = {}
    local sigs = {} -- shape signatures, once per shape and run
    local ad = o.amax_delayed
    local okey = memo and string.format("%d|%s|%s|%s|%s|%s|%s|%d|%s|%d|%s|%d|%s|%.17g|%s%s", t,
        tostring(o.sp), o.recompute .. o.modules_key, tostring(o.overlap),
        group and table.concat(group, ",") or "",
        o.tp_algorithm or "", o.tp_protocol or "", o.cp, o.cp_comm, o.cp_a2a,
        cgroup and table.concat(cgroup, ",") or "", o.ep, tostring(o.etp), o.imbalance,
        o.dispatcher .. (o.flex and string.format("|%dx%d", o.flex.G, o.flex.N) or "") ..
        (etp > 1 and string.format("|%s|%s|%s|%s", tostring(spec.dp), tostring(spec.stages),
            tostring(spec.placement), tostring(spec.ranks)) or ""),
        ad and string.format("|amax %.17g %.17g", ad.fwd, ad.bwd) or "")
    local has_moe, has_mla, has_grouped = false, false, false
    for i, l in ipairs(spec.layers) do
        if type(l) ~= "table" then check.fail("layers[%d] must be a table, got %s", i, type(l)) end
        local sh = l.shape
        if sh ~= nil and not checked[sh] then
            -- checked once per shape and its values (the signature the
            -- lowering's memo keeps anyway): a ps.run loop pays a lookup
            if type(sh) ~= "table" then check_shape(sh, i) end
            local sig = sigs[sh] or shape_signature(sh)
            sigs[sh] = sig
            if CHECKED_SHAPES[sh] ~= sig then
                check_shape(sh, i)
                CHECKED_SHAPES[sh] = sig
            end
            -- Megatron-LM's own checks (megatron/training/arguments.py,
            -- core/utils divide): heads, query groups, hidden and ffn
            -- split evenly over the TP ranks
            if t > 1 then
                for _, f in ipairs { { "heads", sh.heads }, { "kv_heads", sh.kv_heads },
                                     { "hidden", sh.hidden }, { "ffn_hidden", sh.ffn_hidden } } do
                    if f[2] % t ~= 0 then
                        check.fail("tp = %d does not divide the model's %s (%d)", t, f[1], f[2])
                    end
                end
            end
            cpar.check_shape(sh, o, i)
            checked[sh] = true
        end
        has_moe = has_moe or expert.is_moe(l) or expert.plain_moe(l)
        if sh ~= nil then
            has_mla = has_mla or sh.multi_latent_attention == true
            has_grouped = has_grouped or (sh.experts ~= nil and sh.grouped_gemm == true)
        end
        if l.shape ~= nil then
            local ok, res = pcall(lower_memoised, memo, l, o, dev, tcost, okey, sigs, ccost, i)
            if not ok then error(res, 0) end
            layers[i] = res
        else
            if t > 1 or o.cp > 1 then
                check.fail("layers[%d]: %s = %d needs model layers (ps.models.*, with a shape); " ..
                    "a plain layer cannot be split", i, t > 1 and "tp" or "cp",
                    t > 1 and t or o.cp)
            end
            layers[i] = l
        end
    end
    expert.check_used(spec, o, has_moe)
    recompute.check_model(o.modules, has_mla, has_grouped, spec.layers)
    plan.has_moe = has_moe
    plan.layers = layers
    return plan
end


-- annotate(r, plan): adds the parallel layout to ps.run's result: tp,
-- sequence_parallel, recompute, and per block and microbatch the TP
-- collectives' time (tp_comm = { fwd, bwd, exposed }, seconds on one TP
-- rank; exposed is what tp_overlap leaves on the compute stream). The core
-- has set r.tp_groups and r.stands_for (core/bind/run.c).
function M.annotate(r, plan)
    local o = plan.o
    r.tp, r.sequence_parallel, r.recompute = o.tp, o.sp, o.recompute
    -- the first block with TP collectives, found once per layer list (a
    -- sweep's plan keeps its list)
    if plan.annotated ~= plan.layers then
        plan.tp_block = false
        for _, l in ipairs(plan.layers) do
            if l.kind == "block" and l.tp_comm_fwd then plan.tp_block = l; break end
        end
        plan.annotated = plan.layers
    end
    local l = plan.tp_block
    if l then
        r.tp_comm = { fwd = l.tp_comm_fwd, bwd = l.tp_comm_bwd, exposed = l.tp_comm_exposed }
    end
    -- context parallelism: its size, type and per block and microbatch
    -- its exchange's time (cp_comm = { fwd, bwd, exposed }, seconds on one
    -- CP rank, lua/pipesim/cp.lua)
    r.cp, r.cp_comm_type = o.cp, o.cp > 1 and o.cp_comm or nil
    if o.cp > 1 then
        for _, b in ipairs(plan.layers) do
            if b.kind == "block" and b.cp_comm_fwd then
                r.cp_comm = { fwd = b.cp_comm_fwd, bwd = b.cp_comm_bwd, exposed = b.cp_exposed }
                break
            end
        end
    end
    expert.annotate(r, o, plan.has_moe)
end

return M
