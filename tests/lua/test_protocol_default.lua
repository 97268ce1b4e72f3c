-- One protocol rule for every front end (issue 27 item 11,
-- coll_default_protocol in core/coll/coll.h): on a cluster whose devices
-- carry NCCL's constants (a DGX preset's compute_capability) a collective
-- runs as NCCL does, auto's (algorithm, protocol) pair, unless the caller
-- names a protocol or a textbook algorithm; on textbook links it runs
-- without a protocol, the closed forms of DESIGN.md. Before, ps.collective
-- defaulted to "none" everywhere and `pipesim nccl-tests` to "auto":
-- up to 2.6x apart at 1-8 MiB on DGX H100.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local function coll(c, op, bytes, extra)
    local t = { cluster = c, op = op, bytes = bytes, record = "none" }
    for k, v in pairs(extra or {}) do t[k] = v end
    return ps.collective(t)
end

local MiB = 1024 * 1024

-- DGX H100 x 1 and x 2: ps.collective's default is protocol = "auto", and
-- nccl-tests' table gives the same times, size for size
for _, nodes in ipairs { 1, 2 } do
    local c = ps.cluster(ps.clusters.dgx("h100", nodes))
    for _, op in ipairs { "allreduce", "reduce_scatter", "allgather" } do
        for _, b in ipairs { 1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB } do
            local d = coll(c, op, b)
            local a = coll(c, op, b, { protocol = "auto" })
            local what = string.format("%s x%d %s %d B", "h100", nodes, op, b)
            H.eq(d.protocol, a.protocol, what .. ": default protocol")
            H.eq(d.algorithm, a.algorithm, what .. ": default algorithm")
            H.eq(d.time, a.time, what .. ": default time = auto's")
            H.check(d.protocol ~= "none", what .. ": runs with one of NCCL's protocols")
        end
    end
    local rows = ps.nccl_tests { op = "all_reduce", cluster = c, b = "1M", e = "8M", f = 2,
                                 print = false, record = "none" }
    H.eq(#rows, 4, "nccl-tests sizes")
    for _, row in ipairs(rows) do
        local r = coll(c, "allreduce", row.size)
        H.eq(r.time, row.time, string.format("x%d nccl-tests = ps.collective at %d B", nodes, row.size))
        H.eq(r.protocol, row.protocol, "same protocol at " .. row.size)
    end
end

-- the 2.6x that main had at 1-8 MiB: "none" is still there when asked for
do
    local c = ps.cluster(ps.clusters.dgx("h100", 1))
    local none = coll(c, "allreduce", 4 * MiB, { protocol = "none" })
    local d = coll(c, "allreduce", 4 * MiB)
    H.eq(none.protocol, "none")
    H.check(none.time < d.time, "none (no protocol overhead) is faster than NCCL's auto")
end

-- a fixed NCCL algorithm takes its best protocol; a textbook one none
do
    local c = ps.cluster(ps.clusters.dgx("h100", 2))
    H.eq(coll(c, "allreduce", MiB, { algorithm = "ring" }).protocol,
        coll(c, "allreduce", MiB, { algorithm = "ring", protocol = "auto" }).protocol, "ring: auto")
    H.check(coll(c, "allreduce", MiB, { algorithm = "tree" }).protocol ~= "none", "tree: a protocol")
    H.eq(coll(c, "allreduce", MiB, { algorithm = "halving_doubling" }).protocol, "none",
        "halving_doubling has no protocol")
    -- candidates naming a textbook algorithm ask for the textbook models
    local r = coll(c, "allreduce", MiB, { candidates = { "ring", "binomial_tree" } })
    H.eq(r.protocol, "none", "candidates with binomial_tree")
    H.eq(coll(c, "allreduce", MiB, { candidates = "all" }).protocol, "none", "candidates = all")
    H.check(coll(c, "allreduce", MiB, { candidates = { "ring", "tree" } }).protocol ~= "none",
        "candidates ring and tree: NCCL's")
    -- ops none of whose algorithms has protocols
    for _, op in ipairs { "broadcast", "reduce", "alltoall", "sendrecv" } do
        H.eq(coll(c, op, 16 * MiB).protocol, "none", op)
    end
    -- the cost-model path (simulate = false) follows the same rule
    local p = coll(c, "allreduce", MiB, { simulate = false })
    local q = coll(c, "allreduce", MiB, { simulate = false, protocol = "auto" })
    H.eq(p.protocol, q.protocol, "simulate = false: protocol")
    H.eq(p.predicted, q.predicted, "simulate = false: prediction")
end

-- textbook links (no compute_capability): no protocol, the ring's closed
-- form 2(N-1)(a + T/(N b)) exactly (DESIGN.md)
do
    local N, a, b, T = 8, 5e-6, 25e9, 64 * MiB
    local c = ps.cluster { ranks = N, link = { bandwidth = b, latency = a } }
    local r = coll(c, "allreduce", T, { algorithm = "ring" })
    H.eq(r.protocol, "none", "mesh: no protocol")
    H.near(r.time, 2 * (N - 1) * (a + T / (N * b)), 1e-9, "ring closed form")
    H.eq(coll(c, "allreduce", T).protocol, "none", "mesh, auto: no protocol")
    -- a DGX preset without its compute capability is textbook too
    local spec = ps.clusters.dgx("h100", 1)
    spec.compute_capability = nil
    H.eq(coll(ps.cluster(spec), "allreduce", T, { algorithm = "ring" }).protocol, "none",
        "no compute_capability")
    local rows = ps.nccl_tests { op = "all_reduce", cluster = c, b = "64M", e = "64M", print = false,
                                 record = "none" }
    H.eq(rows[1].protocol, "none", "nccl-tests on textbook links: no protocol")
end

H.done()
