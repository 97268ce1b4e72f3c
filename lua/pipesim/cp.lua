-- Context parallelism for ps.run (parallel.lua calls it): the sequence of
-- each microbatch sharded over the CP group, as Megatron-Core runs it with
-- Transformer Engine's attention. Every layer of one CP rank works on
-- seq/cp tokens (the roofline of a shape with seq/cp); the causal
-- attention of the rank is cp times the attention of seq/cp tokens (the
-- load-balanced split into 2 cp chunks gives every rank 1/cp of the causal
-- work); the KV exchange of cp_comm_type is costed on the layout's first
-- CP group and put on the compute stream, as TP's collectives are. The
-- gradient sync over dp x cp is the C core's (core/par/dp.c).
--
-- Sources: Transformer Engine 2.20.0.dev0 (commit d0067d0, 2026-08-22),
-- transformer_engine/pytorch/attention/dot_product_attention/
-- context_parallel.py: AttnFuncWithCPAndKVP2P (p2p, a2a+p2p),
-- AttnFuncWithCPAndKVAllGather (all_gather), AttnFuncWithCPAndQKVOA2A
-- (a2a); Megatron-Core core_v0.19.0 parallel_state.py (the CP groups,
-- create_hierarchical_groups) and get_batch_on_this_cp_rank (2 cp chunks).
local check = require "pipesim.argcheck"

local M = {}

local COMM_TYPES = { p2p = true, all_gather = true, a2a = true, ["a2a+p2p"] = true }

-- How parallel.lua costs the point-to-point operations (the options of
-- its TP cost function: NCCL runs them as grouped sends and receives, no
-- ring or tree, so no protocol).
M.P2P_OPS = { sendrecv = { tp_algorithm = "direct", tp_protocol = "none" },
              alltoall = { tp_algorithm = "direct", tp_protocol = "none" } }

-- The ps.run fields this module reads (cp itself also goes to the core)
-- are the registry's (core/bind/fields.c, role FR_LOWER).

-- Reads cp, cp_comm_type and cp_hierarchy of a ps.run table into o:
-- o.cp, o.cp_comm, o.cp_a2a (the all-to-all group's size: cp for a2a,
-- the first hierarchy level for a2a+p2p, else 1) and o.cp_ring (the p2p
-- ring's size). Raises plain messages naming the field.
function M.options(spec, o)
    local c = spec.cp == nil and 1 or spec.cp
    if math.type(c) ~= "integer" or c < 1 then
        check.fail("field 'cp' must be an integer >= 1, got %s", check.show(c))
    end
    local ct = spec.cp_comm_type
    if ct ~= nil and (type(ct) ~= "string" or not COMM_TYPES[ct]) then
        check.fail("field 'cp_comm_type': unknown type %s (expected p2p, all_gather, a2a or " ..
            "a2a+p2p)", check.show(ct))
    end
    if ct ~= nil and c == 1 then
        check.fail("field 'cp_comm_type' needs cp > 1 (got cp = 1)")
    end
    ct = ct or "p2p" -- Megatron's --cp-comm-type default
    local h = spec.cp_hierarchy
    o.cp, o.cp_comm, o.cp_a2a, o.cp_ring = c, ct, 1, c
    if ct == "a2a" then o.cp_a2a, o.cp_ring = c, 1 end
    if ct ~= "a2a+p2p" then
        if h ~= nil then
            check.fail("field 'cp_hierarchy' needs cp_comm_type = \"a2a+p2p\" (got \"%s\")", ct)
        end
        return o
    end
    -- Megatron: "--hierarchical-context-parallel-sizes must be set when
    -- cp_comm_type in layers contains 'a2a+p2p'", their product cp
    if type(h) ~= "table" or #h ~= 2 or math.type(h[1]) ~= "integer"
        or math.type(h[2]) ~= "integer" or h[1] < 1 or h[2] < 1 then
        check.fail("field 'cp_hierarchy' must be { a2a size, p2p size } (two integers >= 1) " ..
            "with cp_comm_type = \"a2a+p2p\", got %s", check.show(h))
    end
    if h[1] * h[2] ~= c then
        check.fail("field 'cp_hierarchy': %d x %d is not cp = %d", h[1], h[2], c)
    end
    o.cp_a2a, o.cp_ring = h[1], h[2]
    return o
end

-- A model layer's shape checked for the CP options (once per shape), i
-- the layer's index. Raises naming the sizes.
function M.check_shape(sh, o, i)
    local c = o.cp
    if c == 1 then return end
    if sh.seq % (2 * c) ~= 0 then
        check.fail("cp = %d needs the sequence length (%d) divisible by 2 x cp = %d " ..
            "(Megatron's load-balanced causal split into 2 cp chunks)", c, sh.seq, 2 * c)
    end
    if not sh.flash_attention then
        check.fail("layers[%d]: cp = %d needs fused attention (the shape's flash_attention): " ..
            "Megatron-Core runs context parallelism in Transformer Engine's attention only", i, c)
    end
    local ha = o.tp * o.cp_a2a
    if o.cp_a2a > 1 and (sh.heads % ha ~= 0 or sh.kv_heads % ha ~= 0) then
        check.fail("cp_comm_type \"%s\" needs the heads (%d) and kv_heads (%d) divisible by " ..
            "tp x %s = %d (Transformer Engine: num_heads %% cp_size == 0 for Q, K, V)",
            o.cp_comm, sh.heads, sh.kv_heads, o.cp_comm == "a2a" and "cp" or "a2a size", ha)
    end
    if o.sp and (sh.seq // c) % o.tp ~= 0 then
        check.fail("sequence_parallel needs the sequence on one CP rank (%d / cp %d = %d) " ..
            "divisible by tp = %d", sh.seq, c, sh.seq // c, o.tp)
    end
end

-- The shape one CP rank's layers see: a copy with seq/cp tokens (made
-- anew each time: parallel.lua lowers a layer once per shape signature,
-- and a shape changed in place must not meet a stale copy).
function M.local_shape(s, c)
    if c == 1 then return s end
    local l = {}
    for k, v in pairs(s) do l[k] = v end
    l.seq = s.seq // c
    return l
end

-- The CP groups the costs are of: the layout's first CP group (cluster
-- ranks), its first a2a sub-group (consecutive CP ranks) and its first
-- ring (CP ranks a2a apart): Megatron's create_hierarchical_groups.
function M.groups(first, o)
    local a2a, ring = {}, {}
    for k = 1, o.cp_a2a do a2a[k] = first[k] end
    for k = 1, o.cp_ring do ring[k] = first[(k - 1) * o.cp_a2a + 1] end
    return a2a, ring
end

-- Bytes of one CP rank's local K and V (or dK and dV), of Q (or the
-- output) on its TP rank: e b (s/cp) heads/t d.
local function kv_bytes(s, e, o)
    return 2 * e * s.microbatch * (s.seq // o.cp) * (s.kv_heads // o.tp) * s.head_dim
end
local function q_bytes(s, e, o)
    return e * s.microbatch * (s.seq // o.cp) * (s.heads // o.tp) * s.head_dim
end

-- The CP communication of one block and microbatch and its exposed part:
-- { fwd, bwd (seconds on the wire), fwd_exposed, bwd_exposed }. s: the
-- full shape; e: bytes per element; tf, tb: one ring step's attention
-- forward and backward (the roofline of seq/cp tokens, times the a2a
-- group's size under a2a+p2p: each ring step does 1/ring of the rank's
-- attention); cost(op, bytes, ranks): a collective's time.
--   p2p (AttnFuncWithCPAndKVP2P.forward): cp steps; before step i < cp-1
--     computes, the K,V it holds go to the next rank (isend/irecv,
--     flash_attn_p2p_communicate): cp-1 sends of the local KV, each beside
--     one step's attention. backward: step 0 sends KV, steps 1..cp-2 KV
--     and the dKV accumulated so far (one [2, kv] buffer), the last step
--     dKV only, each beside that step.
--   all_gather: K and V all-gathered before the attention
--     (gather_along_first_dim, waited on), again in the backward, and dK,
--     dV reduce-scattered after it (reduce_scatter_along_first_dim).
--   a2a (AttnFuncWithCPAndQKVOA2A, DeepSpeed-Ulysses): all_to_all_single
--     of Q, K and V before the attention and of the output after;
--     backward of dout before and dQ, dK, dV after; none overlapped with
--     the attention.
--   a2a+p2p: the a2a over the first level, the p2p ring over the second.
function M.comm(s, e, o, tf, tb, a2a_group, ring_group, cost)
    local r = { fwd = 0, bwd = 0, fwd_exposed = 0, bwd_exposed = 0 }
    local kv, q = kv_bytes(s, e, o), q_bytes(s, e, o)
    local n = o.cp_ring
    if o.cp_comm == "all_gather" then
        -- nccl-tests sizes: the gathered K (or V) of the whole sequence
        local full = kv / 2 * o.cp
        local ag, rs = cost("allgather", full, ring_group), cost("reduce_scatter", full, ring_group)
        r.fwd, r.bwd = 2 * ag, 2 * ag + 2 * rs
        r.fwd_exposed, r.bwd_exposed = r.fwd, r.bwd
        return r
    end
    if o.cp_a2a > 1 then
        -- all_to_all_single of each tensor: nccl-tests' alltoall size is
        -- the rank's whole buffer
        local function a2a(bytes) return cost("alltoall", bytes, a2a_group) end
        local qkv, out = a2a(q) + 2 * a2a(kv / 2), a2a(q)
        r.fwd, r.bwd = qkv + out, out + qkv
        r.fwd_exposed, r.bwd_exposed = r.fwd, r.bwd
    end
    if n > 1 then
        local step = cost("sendrecv", kv, ring_group)
        local both = cost("sendrecv", 2 * kv, ring_group)
        r.fwd = r.fwd + (n - 1) * step
        r.fwd_exposed = r.fwd_exposed + (n - 1) * math.max(0, step - tf)
        r.bwd = r.bwd + 2 * step + (n - 2) * both
        r.bwd_exposed = r.bwd_exposed + 2 * math.max(0, step - tb)
            + (n - 2) * math.max(0, both - tb)
    end
    return r
end

-- Bytes one CP rank's attention allocates only while it runs: the K/V
-- buffers of the exchange (Transformer Engine 2.20.0.dev0, commit d0067d0,
-- context_parallel.py, the 16-bit path), beyond the local Q, K, V and
-- output the block's activations already hold:
--   p2p (AttnFuncWithCPAndKVP2P): the forward keeps every step's K/V
--     (p2p_comm_buffers: the torch.cat copy of the local K and V and the
--     ring - 1 received, none freed before it returns: ring x kv); the
--     backward two [2, kv] send/receive buffers of K/V and dK/dV (4 kv);
--     the larger of the two. Under a2a+p2p the ring's K/V after the a2a
--     are as many bytes as the local ones.
--   all_gather (AttnFuncWithCPAndKVAllGather): the backward gathers K and
--     V again (gather_along_first_dim, cp kv) and accumulates dK and dV
--     over the whole sequence before reduce-scattering them (cp kv):
--     2 cp kv, more than the forward's gathered cp kv.
--   a2a: its all-to-all outputs are as large as its inputs (not charged).
-- parallel.lua puts it in the layer's work_bytes: a rank holds its
-- largest layer's for the step (core/par/pp.c), as one layer computes at
-- a time.
function M.work_bytes(s, e, o)
    local kv = kv_bytes(s, e, o)
    if o.cp_comm == "all_gather" then return 2 * o.cp * kv end
    if o.cp_ring > 1 then return math.max(o.cp_ring, 4) * kv end
    return 0
end

-- The attention parts of a roofline block of seq/cp tokens: its flash
-- attention's forward and backward (one ring step's work: a step pairs
-- s/cp queries with s/(2 cp) keys, or s/cp with s/cp causally, each
-- (s/cp)^2 / 2 query-key pairs, the causal attention of s/cp tokens).
function M.attention_parts(rf)
    local tf, tb
    for _, p in ipairs(rf.parts or {}) do
        if p.name == "flash attention" then tf = p.time end
        if p.name == "flash attention bwd" then tb = p.time end
    end
    return tf or 0, tb or 0
end

-- A block's CP figures: adds to f and bi (one CP rank's forward and input
-- backward) the rest of its attention (cp - 1 more steps' worth: a2a runs
-- one kernel on heads/cp over the whole sequence, the same work) and the
-- exposed CP communication; selective recompute repeats the attention's
-- forward and its exchange in the backward. cc: { cost = cost(op,
-- bytes, ranks), a2a = group, ring = group } (M.groups). Sets
-- out.cp_comm_fwd, out.cp_comm_bwd, out.cp_exposed. Returns f, bi.
function M.lower_block(out, s, e, o, rf, f, bi, cc)
    local tf, tb = M.attention_parts(rf)
    local c = o.cp
    local extra_f, extra_b = (c - 1) * tf, (c - 1) * tb
    local cm = M.comm(s, e, o, o.cp_a2a * tf, o.cp_a2a * tb, cc.a2a, cc.ring, cc.cost)
    f = f + extra_f + cm.fwd_exposed
    bi = bi + extra_b + cm.bwd_exposed
    if o.selective then bi = bi + extra_f + cm.fwd_exposed end
    out.cp_comm_fwd, out.cp_comm_bwd = cm.fwd, cm.bwd
    out.cp_exposed = cm.fwd_exposed + cm.bwd_exposed
    out.cp_exposed_fwd = cm.fwd_exposed
    out.work_bytes = M.work_bytes(s, e, o)
    return f, bi
end

return M
