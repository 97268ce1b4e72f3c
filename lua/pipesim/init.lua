-- pipesim: the module scenarios load with `local ps = require "pipesim"`.
-- It checks arguments, fills defaults and resolves partitions in Lua, then
-- hands a plain table to the C core (pipesim.core). Every error is raised
-- at the scenario's line: "scenarios/x.lua:12: ps.run: ...".
local core = require "pipesim.core"

local ps = {}
ps.version = core.version
ps.args = core.args()

ps.partition = require "pipesim.partition"
ps.models = require "pipesim.models"
ps.clusters = require "pipesim.clusters"
ps.profile = require "pipesim.profile"

-- Every field of ps.run, ps.cluster and ps.collective, at every depth, is
-- checked by the C binding (core/bind_check.c; the lists of known fields
-- are in core/bind_fields.c, also visible as core.fields). This module
-- only fills defaults and resolves partitions, which the binding asks for
-- once the fields they read are checked.

local function expect_table(fn, spec)
  if type(spec) ~= "table" then
    error(fn .. ": expected a table of fields, got " .. type(spec), 3)
  end
end

-- Calls a core function; a failure becomes an error at the scenario line
-- (level 3: the caller of the ps.* function that called us).
local function call(fn, f, ...)
  local ok, res = pcall(f, ...)
  if not ok then error(fn .. ": " .. tostring(res), 3) end
  return res
end

function ps.cluster(spec)
  expect_table("ps.cluster", spec)
  local c = call("ps.cluster", core.cluster, spec)
  return c -- not a tail call: `call` blames the caller two frames up
end

-- Layer fields that carry units, and their kinds for core.parse.
local LAYER_UNITS = {
  fwd_flops = "flop", bwd_flops = "flop", fwd_time = "time",
  bwd_time = "time", act_bytes = "bytes", out_bytes = "bytes",
  in_bytes = "bytes", params = "flop",
}

-- Layers with unit strings turned into numbers (a new table only when a
-- layer has strings, so models built from numbers pass through as is).
local function normalize_layers(layers)
  local out
  for i, l in ipairs(layers) do
    if type(l) ~= "table" then
      error(string.format("layers[%d] must be a table, got %s", i, type(l)), 0)
    end
    local copy
    for k, kind in pairs(LAYER_UNITS) do
      local v = l[k]
      if type(v) == "string" then
        local ok, n = pcall(core.parse, v, kind)
        if not ok then
          error(string.format("layers[%d]: field '%s': %s", i, k, n), 0)
        end
        if not copy then
          copy = {}
          for kk, vv in pairs(l) do copy[kk] = vv end
        end
        copy[k] = n
      end
    end
    if copy then
      if not out then out = table.move(layers, 1, #layers, 1, {}) end
      out[i] = copy
    end
  end
  return out or layers
end

-- FLOP/s of each pipeline rank's device for partition = "time" ([r + 1]
-- for rank r; nil entries unknown): the cluster rank it runs on by
-- core/bind_run.c's placement (`ranks`, else "dp_inner" rank r * dp + j or
-- "pp_inner" j * p + r for replica j), the slowest replica's device when
-- dp > 1 (a stage's replicas all wait for the slowest at the gradient
-- sync). Without a cluster every rate is unknown (measured times only).
local function stage_rates(spec)
  local c = spec.cluster
  if type(c) ~= "userdata" then return nil end
  local all = c.flops_rates
  local p, dp = spec.stages, spec.dp or 1
  if math.type(dp) ~= "integer" or dp < 1 then dp = 1 end
  local ranks = type(spec.ranks) == "table" and spec.ranks or nil
  local rates = {}
  for r = 0, p - 1 do
    local slowest
    for j = 0, dp - 1 do
      local cr
      if ranks then cr = ranks[j * p + r + 1]
      elseif spec.placement == "pp_inner" then cr = j * p + r
      else cr = r * dp + j end
      local x = math.type(cr) == "integer" and all[cr + 1] or nil
      if x == nil or x ~= x then slowest = nil; break end
      if not slowest or x < slowest then slowest = x end
    end
    rates[r + 1] = slowest or (0 / 0)
  end
  return rates
end

local function resolve_partition(spec, layers, nstages)
  local opts = {}
  if spec.partition == "time" then
    opts.rates = stage_rates(spec)
    opts.checkpoint = spec.checkpoint == true
  end
  local ok, counts = pcall(ps.partition.resolve, spec.partition, layers, nstages, opts)
  if not ok then error(counts, 0) end
  return counts
end

-- JSON text of v appended to out. seen holds the tables being written: a
-- table inside itself is an error, not a stack overflow.
local function json(v, out, seen)
  local t = type(v)
  if t == "table" then
    seen = seen or {}
    if seen[v] then error("a table contains itself (cyclic tables cannot be recorded)", 0) end
    seen[v] = true
    if #v > 0 or next(v) == nil then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        json(v[i], out, seen)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = tostring(k) end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = string.format("%q:", k)
        json(v[k] == nil and v[tonumber(k)] or v[k], out, seen)
      end
      out[#out + 1] = "}"
    end
    seen[v] = nil
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      out[#out + 1] = "null"
    elseif math.type(v) == "integer" then
      out[#out + 1] = tostring(v)
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif t == "string" then
    out[#out + 1] = '"' .. v:gsub('[%c"\\]', function(c)
      return string.format("\\u%04x", c:byte())
    end) .. '"'
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  else
    out[#out + 1] = '"' .. tostring(v) .. '"'
  end
  return out
end

-- The inputs of a run as JSON for run.params (layers summarised: a sweep of
-- thousands of runs should not store thousands of copies of the model).
local function params_json(spec, partition)
  local p = {}
  for k, v in pairs(spec) do
    if k ~= "layers" and k ~= "cluster" then p[k] = v end
  end
  p.partition = partition
  p.layers = #spec.layers
  local c = spec.cluster
  if c then
    p.cluster = { ranks = c.ranks, gpus_per_node = c.gpus_per_node,
                  device = { memory = c.memory, flops_rate = c.flops_rate } }
  end
  return table.concat(json(p, {}))
end

function ps.run(spec)
  expect_table("ps.run", spec)
  local args = {}
  for k, val in pairs(spec) do args[k] = val end
  -- core.run checks every field, then calls this with the number of
  -- stages (stages x virtual_stages) for the counts per stage
  args.partition = function(nstages)
    -- The C core reads unit strings itself; only the weighted partitions
    -- add up layer figures in Lua, so only they need numbers (this keeps
    -- a sweep's per-run cost off the layer tables).
    local ok, layers = true, spec.layers
    local p = spec.partition
    if p == "params" or p == "flops" or p == "time" then
      ok, layers = pcall(normalize_layers, spec.layers)
      if not ok then error(layers, 0) end
    end
    local partition = resolve_partition(spec, layers, nstages)
    args.params_json = function() return params_json(spec, partition) end
    return partition
  end
  if args.name == nil then
    args.name = type(spec.schedule) == "table" and "custom"
      or tostring(spec.schedule or "1f1b")
  end
  local r = call("ps.run", core.run, args)
  r.db = spec.db
  return r
end

-- ps.collective: one collective on a cluster (core/bind_collective.c).

-- The inputs of a collective as JSON for run.params: the cluster by its
-- shape and name (the `topology` key, which results/queries/crossover.sql
-- groups by), the data function as `true`.
local function collective_params(spec)
  local p = {}
  for k, v in pairs(spec) do
    if k ~= "cluster" and k ~= "data" then p[k] = v end
  end
  if type(spec.bytes) == "string" then
    local ok, n = pcall(core.parse, spec.bytes, "bytes")
    if ok then p.bytes = n end
  end
  if spec.data ~= nil then p.data = true end
  p.algorithm = spec.algorithm or "auto"
  local c = spec.cluster
  if type(c) == "userdata" then
    p.topology = c.name
    p.cluster = { ranks = c.ranks, nodes = c.nodes,
                  gpus_per_node = c.gpus_per_node, topology = c.topology,
                  sharing = c.sharing, name = c.name }
  end
  return table.concat(json(p, {}))
end

function ps.collective(spec)
  expect_table("ps.collective", spec)
  local args = {}
  for k, v in pairs(spec) do args[k] = v end
  -- called by core.collective once every field is checked
  args.params_json = function() return collective_params(spec) end
  local r = call("ps.collective", core.collective, args)
  r.db = spec.db
  return r
end

-- Prints a run's summary line and ASCII Gantt chart (or, without a run, the
-- table of every run recorded so far in the session's database).
function ps.show(r, width)
  if r ~= nil and type(r) ~= "table" then
    error("ps.show: expected a run result, got " .. type(r), 2)
  end
  if r and not r.id then
    error("ps.show: this run was not recorded (record = \"none\")", 2)
  end
  local text = call("ps.show", core.report, r and r.db, r and r.id, width or 100)
  io.write(text)
end

-- Percent formatting used by scenarios' tables.
function ps.pct(x)
  if x == nil then return "-" end
  return string.format("%.2f%%", 100 * x)
end

-- Bytes as GiB/MiB/KiB text.
function ps.bytes(b)
  local units = { "B", "KiB", "MiB", "GiB", "TiB" }
  local i = 1
  while b >= 1024 and i < #units do b = b / 1024; i = i + 1 end
  return string.format(i == 1 and "%.0f %s" or "%.2f %s", b, units[i])
end

-- Seconds as s/ms/us text.
function ps.seconds(t)
  if t >= 1 then return string.format("%.3f s", t) end
  if t >= 1e-3 then return string.format("%.3f ms", t * 1e3) end
  return string.format("%.3f us", t * 1e6)
end

ps.parse = core.parse

-- ps.progress(false) silences the progress line a long sweep draws on a
-- terminal (it is on by default when stderr is a terminal, off otherwise).
function ps.progress(on)
  core.progress(on)
end
return ps
