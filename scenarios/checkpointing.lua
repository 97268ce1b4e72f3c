-- checkpointing: activation memory saved vs compute added.
--
-- With checkpoint = true a stage keeps only its input activation per
-- microbatch and recomputes the forward (an R op) right before each
-- backward: peak activation memory drops from act_bytes to in_bytes per
-- held microbatch, and each microbatch costs one more forward.
local ps = require "pipesim"

local cluster = ps.cluster{
    ranks = 4,
    device = { flops = "989 TFLOPS", efficiency = 0.45, memory = "80 GiB" },
    link = { bandwidth = "50 GB/s", latency = "5 us" },
}
local layers = {}
for i = 1, 32 do
    layers[i] = { fwd_flops = "2 TFLOP", params = 100e6, act_bytes = "2 GiB",
                    out_bytes = "64 MiB" }
end

local results = {}
for _, ckpt in ipairs{ false, true } do
    local r = ps.run{ name = ckpt and "checkpointed" or "full activations",
                        cluster = cluster, layers = layers, stages = 4,
                        microbatches = 16, schedule = "1f1b", checkpoint = ckpt }
    results[#results + 1] = r
    local act = r.peak_memory[1] - r.static_memory[1]
    print(string.format("%-18s step %s  rank 0 peak %s (static %s + "
        .. "activations %s)%s", r.name, ps.seconds(r.makespan),
        ps.bytes(r.peak_memory[1]), ps.bytes(r.static_memory[1]), ps.bytes(act),
        r.fits == false and string.format(": exceeds the 80 GiB of rank %s",
                                            table.concat(r.over_capacity_ranks, ", ")) or ""))
end
local full, ck = results[1], results[2]
print(string.format("checkpointing saves %s of activations on rank 0 and "
    .. "costs %.1f%% more time per step",
    ps.bytes(full.peak_memory[1] - ck.peak_memory[1]),
    100 * (ck.makespan / full.makespan - 1)))
