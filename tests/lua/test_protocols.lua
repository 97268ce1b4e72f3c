-- NCCL's protocols (core/coll_proto.c): wire bytes per payload byte and
-- the fixed latency from NCCL's tuner constants (src/graph/tuning.cc, NCCL
-- 2.30.7), auto's (algorithm, protocol) choice, and NCCL's tree
-- (coll_tree_build) against its closed form.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local t = require "harness"
local ps = require "pipesim"

local function coll(c, algo, proto, bytes, extra)
  local spec = { cluster = c, op = "allreduce", algorithm = algo, protocol = proto,
                 bytes = bytes, record = "none" }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return ps.collective(spec)
end

local us = 1e-6
local c = ps.cluster(ps.clusters.dgx("h100", 2)) -- 2 nodes x 8 GPUs
local N, m = 16, 2
local intra, inter = 2 * (N - 1) - 2 * (m - 1), 2 * (m - 1)

-- LL puts 8 flag bytes beside every 8 data bytes: the ring moves twice the
-- bytes and pays LL's base latency (6.6 us) once
do
  local T = 1024 * 1024
  local none2 = coll(c, "ring", "none", 2 * T)
  local ll = coll(c, "ring", "ll", T)
  t.eq(ll.protocol, "ll")
  t.near(ll.time, none2.time + 6.6 * us, 1e-9, "ll = none at 2T + 6.6 us")
  t.near(ll.predicted, none2.predicted + 6.6 * us, 1e-9, "ll model")
  -- LL128: 128-byte lines with 120 bytes of data; base 14 us, and 1.3 us
  -- more than LL per NVLink step, 1.3 us per network step
  local T2 = 120 * 4 * 128 * 10 -- blocks of whole elements either way
  local none = coll(c, "ring", "none", T2 * 128 // 120)
  local ll128 = coll(c, "ring", "ll128", T2)
  t.near(ll128.time, none.time + (14 + intra * 1.3 + inter * 1.3) * us, 1e-9, "ll128")
  -- Simple: the payload alone; base 8.4 us, per step 3.4 - 0.6 us (NVLink)
  -- and 14 - 2.7 us (network) over LL's
  none = coll(c, "ring", "none", T)
  local simple = coll(c, "ring", "simple", T)
  t.near(simple.time, none.time + (8.4 + intra * 2.8 + inter * 11.3) * us, 1e-9, "simple")
  -- NCCL's tree: 2 ((ppn - 1) intra + log2(nodes) inter) steps
  none = coll(c, "tree", "none", T)
  simple = coll(c, "tree", "simple", T)
  t.near(simple.time, none.time + (8.4 + 2 * (7 * 3.4 + 1 * 9.0)) * us, 1e-9, "tree simple")
end

-- auto: LL for tiny messages, a bandwidth protocol for large ones
do
  local r = coll(c, "auto", "auto", 8)
  t.eq(r.protocol, "ll", "auto at 8 B")
  r = coll(c, "auto", "auto", "1 GiB")
  t.eq(r.algorithm, "ring", "auto at 1 GiB")
  t.check(r.protocol ~= "ll", "auto at 1 GiB: " .. r.protocol)
  -- a fixed algorithm, the protocol auto
  t.eq(coll(c, "ring", "auto", 8).protocol, "ll")
  -- the choice is the cheapest prediction of all pairs
  local best = math.huge
  for _, a in ipairs{ "ring", "tree" } do
    for _, p in ipairs{ "ll", "ll128", "simple" } do
      local x = coll(c, a, p, "4 MiB").predicted
      if x < best then best = x end
    end
  end
  t.near(coll(c, "auto", "auto", "4 MiB").predicted, best, 1e-12, "auto = min")
  -- no protocol: today's model
  t.eq(coll(c, "ring", nil, 8).protocol, "none")
end

-- bad input
t.raises(function() coll(c, "ring", "ll64", 8) end,
  "field 'protocol': unknown protocol 'll64' (expected ll, ll128, simple, auto, none)")
t.raises(function() coll(c, "halving_doubling", "ll", 8) end,
  "allreduce: protocol 'll' applies to ring and tree (NCCL's algorithms), not halving_doubling")
t.done()
