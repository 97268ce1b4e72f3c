-- The fixed cost of a process (issue 12): lua/pipesim/init.lua loads
-- ps.partition, ps.models, ps.clusters, ps.profile and ps.schedule on
-- first use. Each is still reachable, is the table require gives, loads
-- from the library even after the scenario changed package.path, and
-- pairs(ps) still lists it.
package.path = "tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

-- nothing read yet, nothing loaded (parallel.lua, which every ps.run
-- needs, loads the roofline and pipesim.clusters when a run has model
-- layers, TP or recompute)
local LATER = { "pipesim.models", "pipesim.profile", "pipesim.schedule", "pipesim.partition",
    "pipesim.models.roofline", "pipesim.clusters" }
for _, name in ipairs(LATER) do
    H.eq(package.loaded[name], nil, name .. " not loaded by require 'pipesim'")
end
H.eq(rawget(ps, "models"), nil, "ps.models not a field before its first use")

-- a run of plain layers loads neither the roofline nor clusters.lua
local c = ps.cluster{ ranks = 4, link = { bandwidth = "50 GB/s", latency = "5 us" } }
ps.run{ cluster = c, stages = 2, microbatches = 2, record = "none",
    layers = { { fwd_time = "1 ms" }, { fwd_time = "1 ms" } } }
H.eq(package.loaded["pipesim.models.roofline"], nil, "a plain run: no roofline")
H.eq(package.loaded["pipesim.clusters"], nil, "a plain run: no clusters.lua")

-- a scenario that drops pipesim's lua/ from package.path afterwards still
-- gets the library's modules, as when they loaded with require "pipesim"
local saved = package.path
package.path = "./?.lua"
local models = ps.models
H.eq(package.path, "./?.lua", "package.path restored after the load")
package.path = saved
H.eq(type(models), "table", "ps.models")
H.check(models == require "pipesim.models", "ps.models is require 'pipesim.models'")
H.check(rawget(ps, "models") == models, "a plain field once loaded")
H.eq(models.shape("gpt3-175b").hidden, 12288, "ps.models works")
H.eq(ps.partition.uniform(8, 4), { 2, 2, 2, 2 }, "ps.partition works")
H.check(ps.clusters == require "pipesim.clusters", "ps.clusters")
H.eq(ps.clusters.device("A100").flops, 312e12, "ps.clusters works")
H.eq(type(ps.profile.load), "function", "ps.profile")
H.eq(type(ps.schedule.load_pytorch), "function", "ps.schedule")

-- pairs(ps) lists every module, loaded or not
local ps2 = ps -- the same table: a second require is the cached module
H.check(require "pipesim" == ps2, "require 'pipesim' is cached")
local seen = {}
for k, v in pairs(ps) do seen[k] = type(v) end
for _, k in ipairs { "partition", "models", "clusters", "profile", "schedule", "run", "cluster" } do
    H.check(seen[k] ~= nil, "pairs(ps) lists " .. k)
end

-- a field the scenario sets (or clears) stays as set
ps.schedule = nil
H.eq(ps.schedule, nil, "ps.schedule cleared stays nil")
ps.schedule = require "pipesim.schedule"

-- a run with TP loads the roofline (parallel.lua), from the library even
-- after package.path changed
H.eq(package.loaded["pipesim.models.roofline"], nil, "no roofline before a TP run")
local saved0 = package.path
package.path = "./?.lua"
local r = ps.run{ cluster = ps.cluster{ ranks = 4, device = ps.clusters.device("A100"),
        link = { bandwidth = "50 GB/s", latency = "5 us" } },
    stages = 2, microbatches = 2, record = "none", tp = 2,
    layers = ps.models.preset("gpt-1.7b", { layers = 2 }) }
package.path = saved0
H.eq(r.tp, 2, "a TP run")
H.check(r.tp_comm and r.tp_comm.fwd > 0, "a TP run costs its collectives")
H.check(package.loaded["pipesim.models.roofline"] ~= nil, "a TP run loads the roofline")

H.done()
