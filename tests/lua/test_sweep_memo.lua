-- ps.sweep with `base` checks and lowers the layers its points share once
-- (lua/pipesim/init.lua prepare_run's memo, sealed layers from
-- core/bind/run.c): every point's result must equal the same ps.run made
-- alone, over model layers (TP, sequence parallelism, selective and full
-- recompute, dp), plain layers with unit strings, weighted partitions and
-- a failing point; sealed layers are a snapshot of the list.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"
local core = require "pipesim.core"

-- the space's cluster and layers, shared with the scenario of
-- tests/cli_sweep_memo.sh; read and loaded as text, since a sandboxed test
-- may dofile only from its own directory and lua/
local f = assert(io.open("tests/data/sweep_memo_space.lua"))
local space = assert(load(f:read("a"), "@tests/data/sweep_memo_space.lua", "t"))()
f:close()
local cluster, model, plain = space.cluster, space.model, space.plain

-- the results of ps.sweep{base, points} against ps.run of each point alone
local function same(label, base, points)
    local rs = ps.sweep{ name = label, base = base, points = points }
    for i, p in ipairs(points) do
        local t = {}
        for k, v in pairs(base) do t[k] = v end
        for k, v in pairs(p) do t[k] = v end
        local want = ps.run(t)
        local got = rs[i]
        got.point, got.point_index = nil, nil
        got.id, want.id = nil, nil
        H.eq(got, want, label .. " point " .. i)
        for k, v in pairs(want) do
            if type(v) == "table" then H.eq(got[k], v, label .. " point " .. i .. " " .. k) end
        end
    end
end

local mbase = { cluster = cluster, layers = model, stages = 4, microbatches = 8, record = "summary" }
same("model partitions", mbase, { { partition = { 1, 12, 9, 12 } }, { partition = { 8, 8, 8, 10 } },
                                  { partition = "time" }, { partition = "params" } })
same("model options", mbase, { { tp = 2 }, { tp = 2, sequence_parallel = true },
                               { recompute = "selective" }, { recompute = "full" },
                               { recompute = "full", recompute_method = "block", recompute_layers = 2 },
                               { stages = 2, dp = 2 }, { tp = 2, stages = 2, dp = 2, placement = "pp_inner" },
                               { schedule = "interleaved", virtual_stages = 2, microbatches = 8 },
                               { tp = 2 }, { partition = { 1, 12, 9, 12 } } })
local pbase = { layers = plain, stages = 4, microbatches = 6, record = "summary" }
same("plain layers", pbase, { { partition = { 1, 2, 2, 3 } }, { partition = "time" },
                              { partition = "uniform" }, { stages = 2 }, { microbatches = 3 } })

-- a failing point raises what its ps.run alone raises, after the points before it
do
    local ok, err = pcall(ps.sweep, { name = "fails", base = pbase,
        points = { { partition = { 2, 2, 2, 2 } }, { partition = { 2, 2, 2, 3 } } } })
    H.check(not ok, "a bad partition fails the sweep")
    local alone_ok, alone = pcall(ps.run, { layers = plain, stages = 4, microbatches = 6,
        record = "summary", partition = { 2, 2, 2, 3 } })
    H.check(not alone_ok, "and fails alone")
    local why = tostring(alone):match("ps%.run: .*")
    H.check(why and tostring(err):find(why, 1, true) ~= nil,
        "the same message: " .. tostring(err) .. " / " .. tostring(alone))
end

-- a ps.run loop reuses the core's copy of the same lowered layers
-- (parallel.finish's sealed views), never a stale one: a changed layer is
-- lowered again and read again
do
    local m = ps.models.preset("llama2-7b", { seq = 2048, microbatch = 1 })
    local t = { cluster = cluster, layers = m, stages = 4, microbatches = 8, record = "none",
                partition = { 1, 12, 9, 12 } }
    local r1 = ps.run(t)
    H.eq(ps.run(t).makespan, r1.makespan, "the same layers: the same makespan")
    local old = m[5].fwd_time
    m[5].fwd_time = 0.5
    local r2 = ps.run(t)
    H.check(r2.makespan > r1.makespan, "a layer made slower is read again: " ..
        tostring(r2.makespan) .. " > " .. tostring(r1.makespan))
    m[5].fwd_time = old
    H.eq(ps.run(t).makespan, r1.makespan, "and back")
end

-- sealed layers are a snapshot: changing the list later changes nothing
do
    local list = { { fwd_time = 1, bwd_time = 2, name = "a" }, { fwd_time = 1, bwd_time = 2 } }
    local sealed = core.seal_layers(list)
    list[1].fwd_time, list[1].name = 100, nil
    collectgarbage()
    local r = core.run{ layers = sealed, stages = 2, microbatches = 4, partition = { 1, 1 },
                        record = "none", params_json = "{}" }
    H.eq(r.makespan, 3 * (4 + 2 - 1), "the snapshot's times: 3(m + p - 1)")
    H.raises(function() core.seal_layers({ { fwd_time = -1 } }) end, "layers[1]",
        "sealing checks each layer as ps.run does")
end

H.done()
