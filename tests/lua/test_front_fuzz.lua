-- The Lua front end's tables fuzzed (issue 27 item 12): every field of a
-- few valid ps.run, ps.models.megatron, ps.models.transformer and
-- ps.layout tables, and of their nested tables, removed or replaced by a
-- value of another type or out of range. Each call either runs or fails
-- with one line at this file's call site ("tests/lua/test_front_fuzz.lua:N:
-- ps.run: ..."); a message that names a pipesim source line, a Lua runtime
-- error ("attempt to ...") or more than one line fails the test.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local ps = require "pipesim"

local node = ps.cluster(ps.clusters.dgx("A100", 1))
local mesh = ps.cluster{ ranks = 8, link = { bandwidth = "10 GB/s", latency = "1 us" } }
local function model() return ps.models.transformer{ layers = 2, hidden = 256, heads = 8,
    seq = 128, vocab = 512 } end

local BASES = {
    { "ps.run plain", function(t) return ps.run(t) end, function() return {
        layers = { { fwd_time = 1, params = 10, act_bytes = 8, out_bytes = 4 },
                   { fwd_time = 1, params = 10 }, { fwd_time = 1 }, { fwd_time = 1 } },
        stages = 2, microbatches = 4, dp = 2, cluster = mesh, schedule = "1f1b",
        grad_sync = { bucket = "1 MB", overlap = true, algorithm = "ring", protocol = "none" },
        memory = { weight_bytes = 2 }, record = "none", checkpoint = false,
        partition = { 2, 2 }, placement = "dp_inner" } end },
    { "ps.run model", function(t) return ps.run(t) end, function() return {
        layers = model(), stages = 2, microbatches = 2, tp = 2, dp = 2, cluster = node,
        sequence_parallel = true, recompute = "full", recompute_method = "uniform",
        recompute_layers = 1, tp_overlap = false, tp_comm = { algorithm = "ring" },
        zero = 1, record = "none", virtual_stages = 1, ranks = { 0, 1, 2, 3, 4, 5, 6, 7 } } end },
    { "ps.run mla", function(t) return ps.run(t) end, function() return {
        layers = ps.models.transformer{ layers = 2, hidden = 256, heads = 8, seq = 128,
            vocab = 512, multi_latent_attention = true, q_lora_rank = 64, kv_lora_rank = 32,
            mtp_layers = 1 },
        stages = 1, microbatches = 2, tp = 2, cluster = node, sequence_parallel = true,
        recompute = "selective", record = "none" } end },
    { "ps.models.megatron", function(t)
        local spec = ps.models.megatron(t)
        local r = ps.run(spec)
        return r
    end, function() return {
        num_layers = 4, hidden_size = 256, num_attention_heads = 8, seq_length = 128,
        vocab_size = 1000, tensor_model_parallel_size = 2, pipeline_model_parallel_size = 2,
        world_size = 8, micro_batch_size = 1, global_batch_size = 4, bf16 = true,
        recompute_granularity = "full", recompute_method = "block", recompute_num_layers = 1,
        untie_embeddings_and_output_weights = false, sequence_parallel = true,
        use_distributed_optimizer = true, cluster = node, record = "none" } end },
    { "ps.layout", function(t) return ps.layout(t) end, function() return {
        tp = 2, cp = 1, ep = 2, etp = 1, pp = 2, vp = 1, world = 8, placement = "pp_inner",
        shard = 1, shard_group = 2 } end },
}


local VALUES = { "x", -1, 0, 0.5, 2 ^ 40, 1e300, 0 / 0, true, {}, { 1 }, function() end }

-- One call: ok, or a one-line message at this file's line.
local function one(name, fn, t, what)
    local ok, err = pcall(function() local r = fn(t); return r end)
    if ok then return H.check(true) end
    err = tostring(err)
    local good = err:find("^tests/lua/test_front_fuzz.lua:%d+: ") ~= nil
        and not err:find("lua/pipesim/", 1, true) and not err:find("attempt to", 1, true)
        and not err:find("\n", 1, true) and not err:find("%.c:%d")
    H.check(good, name .. ", " .. what .. ": " .. err)
end

-- The fields to mutate: the top level's and those of each nested table
-- (its path as a list of keys).
local function paths(t, prefix, out)
    for k, v in pairs(t) do
        local p = { table.unpack(prefix) }
        p[#p + 1] = k
        out[#out + 1] = p
        if type(v) == "table" and k ~= "cluster" and #prefix < 4 then
            -- a list's first entry stands for the rest
            if v[1] ~= nil and type(v[1]) == "table" then
                local q = { table.unpack(p) }
                q[#q + 1] = 1
                for kk, vv in pairs(v[1]) do
                    local r = { table.unpack(q) }
                    r[#r + 1] = kk
                    out[#out + 1] = r
                    if type(vv) == "table" then paths(vv, r, out) end -- a shape
                end
            elseif v[1] == nil and #prefix < 2 then
                paths(v, p, out)
            end
        end
    end
    return out
end

local function set(t, path, v)
    for i = 1, #path - 1 do t = t[path[i]] end
    t[path[#path]] = v
end

local function show(path)
    local s = {}
    for _, k in ipairs(path) do s[#s + 1] = tostring(k) end
    return table.concat(s, ".")
end

for _, b in ipairs(BASES) do
    local name, fn, make = b[1], b[2], b[3]
    one(name, fn, make(), "as given")
    for _, path in ipairs(paths(make(), {}, {})) do
        local t = make()
        set(t, path, nil)
        one(name, fn, t, show(path) .. " = nil")
        for _, v in ipairs(VALUES) do
            t = make()
            set(t, path, v)
            one(name, fn, t, show(path) .. " = " .. tostring(v))
        end
    end
end

H.done()
