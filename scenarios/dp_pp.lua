-- dp_pp: data parallelism x pipeline parallelism on two DGX-style nodes.
--
-- 8 GPUs = 4 pipeline stages x 2 data-parallel replicas. By default
-- (placement = "dp_inner", Megatron-LM's rank order) the two replicas of a
-- stage sit on the same node, so the gradient allreduce crosses NVLink and
-- the pipeline crosses the network; "pp_inner" is the reverse. Gradients are
-- reduced in buckets in reverse layer order as the backward produces them
-- (PyTorch DDP); with overlap the reductions hide behind the rest of the
-- backward, without it they all start after the last backward.
local ps = require "pipesim"

local cluster = ps.cluster{
    nodes = 2, gpus_per_node = 4,
    device = { flops = "989 TFLOPS", efficiency = 0.45, memory = "80 GB" },
    intra = { bandwidth = "450 GB/s", latency = "2 us" },  -- NVLink 4
    inter = { bandwidth = "400 Gb/s", latency = "5 us" },  -- one NDR NIC per GPU
}

-- a 7B-class model (ps.models): 32 blocks, embedding and head
local layers = ps.models.preset("llama2-7b", { seq = 4096, microbatch = 1 })
local m = ps.args.quick and 8 or 16

local function run(name, extra)
    local spec = { name = name, cluster = cluster, layers = layers, stages = 4,
                     microbatches = m, schedule = "1f1b", dp = 2,
                     record = "summary" }
    for k, v in pairs(extra) do spec[k] = v end
    return ps.run(spec)
end

local function max(t)
    local x = 0
    for _, v in ipairs(t) do x = math.max(x, v) end
    return x
end

print(string.format("%-34s %10s %8s %14s %12s", "configuration", "step",
                      "bubble", "exposed comm", "peak memory"))
local function show(r)
    print(string.format("%-34s %10s %8s %14s %12s", r.name, ps.seconds(r.makespan),
                          ps.pct(r.bubble), ps.seconds(max(r.exposed_comm)),
                          ps.bytes(max(r.peak_memory))))
end

show(run("dp in node, overlap", {}))
show(run("dp in node, no overlap", { grad_sync = { overlap = false } }))
show(run("pp in node, overlap", { placement = "pp_inner" }))
show(run("pp in node, no overlap", { placement = "pp_inner",
                                       grad_sync = { overlap = false } }))
show(run("dp in node, ZeRO-1", { zero = 1 }))

print()
print("bucket size sweep (pp in node, so gradients cross the network):")
local sizes = ps.args.quick and { "1 MB", "25 MB", "1 GB" }
    or { "1 MB", "4 MB", "25 MB", "100 MB", "400 MB", "1 GB" }
for _, b in ipairs(sizes) do
    show(run("  bucket " .. b, { placement = "pp_inner",
                                   grad_sync = { bucket = b } }))
end
print("(small buckets start early but pay a latency each; one huge bucket "
    .. "waits for the whole backward)")
