-- Device and DGX presets: figures, units, aliases, overrides, bad names.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local clusters = require "pipesim.clusters"

local a = clusters.device("A100")
H.eq(a.flops, 312e12); H.eq(a.memory, 80 * 2 ^ 30); H.eq(a.efficiency, 0.5)
local h = clusters.device("H100 SXM")
H.eq(h.flops, 989e12); H.eq(h.memory, 81559 * 2 ^ 20)
H.eq(clusters.device("h200").memory, 143771 * 2 ^ 20)
H.eq(clusters.device("h100-sxm", { efficiency = 0.4 }).efficiency, 0.4, "override")

local d = clusters.dgx("A100", 4)
H.eq(d.nodes, 4); H.eq(d.gpus_per_node, 8); H.eq(d.nics_per_node, 8)
H.near(d.intra.bandwidth, 200e9, 1e-15, "NVLink 3: 300 GB/s per direction, NCCL moves 200")
H.eq(d.inter.bandwidth, 25e9, "HDR 200 Gb/s")
H.eq(d.intra.latency, 0.6e-6); H.eq(d.inter.latency, 2.7e-6)
H.eq(d.nvls, nil, "DGX A100: no NVLink SHARP")
H.eq(clusters.dgx("H100", 2).nvls, true, "DGX H100: NVLink SHARP")
H.eq(d.device.flops, 312e12)
-- A100 GEMM ceiling: 230 TFLOPS, fp16 8192^3 on an A100 80GB (PyTorch
-- 22.07; mli/transformers-benchmarks); the preset reproduces it: 2*8192^3
-- FLOPs at 230e12 plus the 5.5 us overhead
H.near(a.gemm_max, 230 / 312, 1e-15, "A100 gemm_max")
H.eq(clusters.device("A100 40GB").gemm_max, a.gemm_max, "same chip")
local f8k = 2 * 8192 ^ 3
H.near(clusters.gemm_efficiency(a, 8192, 8192, 8192) * a.flops,
    f8k / (f8k / 230e12 + 5.5e-6), 1e-12, "8192^3 on A100")
local d2 = clusters.dgx("dgx-h100", 2, { inter = { latency = 8e-6 } })
H.near(d2.intra.bandwidth, 370e9, 1e-15, "NCCL: 370 GB/s effective of 450"); H.eq(d2.inter.bandwidth, 50e9)
H.eq(d2.inter.latency, 8e-6, "nested override"); H.eq(d2.inter.bandwidth, 50e9, "rest kept")
H.eq(clusters.dgx("H200").nodes, 1, "one node by default")
H.eq(#clusters.devices(), 8)

-- H800: the H100's compute behind 8 NVLinks (200 GB/s a direction, NCCL's
-- 370/450 of it, DeepSeek-V3's "160 GB/s"); NCCL's search: 4 x 40 -> 8
local h8 = clusters.dgx("H800", 2)
H.near(h8.intra.bandwidth, 200e9 * 370 / 450, 1e-15, "H800 NVLink")
H.eq({ h8.nccl_channels, h8.compute_capability, h8.cpu_vendor, h8.nics_per_node },
    { 8, 90, "intel", 8 }, "H800 NCCL hardware")
H.eq(h8.device.fp8_flops, 1979e12); H.eq(h8.device.flops, 989e12)
H.eq(clusters.device("h800-sxm5").name, "H800 SXM", "alias")
-- GB200 NVL72: a node is the 72-GPU NVLink domain; nvl72(racks) is dgx
local g = clusters.dgx("GB200", 2)
H.eq({ g.nodes, g.gpus_per_node, g.nics_per_node, g.cpu_vendor, g.nccl_channels, g.nvls },
    { 2, 72, 72, "arm", 16, true }, "DGX GB200: 72-GPU NVLink domains")
H.near(g.intra.bandwidth, 900e9 * 370 / 450, 1e-15, "NVLink 5")
H.eq({ g.device.flops, g.device.fp8_flops, g.device.memory }, { 2.5e15, 5e15, 189471 * 2 ^ 20 })
local n = clusters.nvl72(2)
H.eq(n.name, "GB200 NVL72 x2")
n.name = g.name
H.eq(n, g, "nvl72(racks) = dgx(\"GB200\", racks)")
-- GB300 NVL72: Blackwell Ultra (sm_103), 800 Gb/s ConnectX-8 per GPU
local u = clusters.dgx("GB300", 1)
H.eq({ u.gpus_per_node, u.nics_per_node, u.compute_capability, u.inter.bandwidth,
       u.device.memory, u.device.fp8_flops },
    { 72, 72, 103, 100e9, 284208 * 2 ^ 20, 5e15 }, "DGX GB300")
H.eq(clusters.device("gb300-nvl72").name, "GB300 NVL72", "alias")
H.eq(clusters.dgx("B200").nvls, true, "DGX B200: NVLink SHARP")
-- one set of GEMM constants per generation (Transformer Engine's GEMM
-- benchmark), measured rates of the die over each part's own peak:
-- Hopper 598.9 TFLOP/s BF16, 1142.3 FP8, 933.1 blockwise; Blackwell
-- 1502.8, 2814.6, MXFP8 2677.4; Blackwell's attention backward at
-- 2560/3328 of gemm_max (FlashAttention-4's shared-memory bound)
for _, name in ipairs { "H100", "H200", "H800" } do
    local dev = clusters.device(name)
    H.eq({ dev.gemm_max, dev.fp8_gemm_max, dev.fp8_block_gemm_max, dev.mem_efficiency },
        { 598.9e12 / 989e12, 1142.3e12 / 1979e12, 933.1e12 / 1979e12, 0.9 },
        name .. " GEMM constants")
    H.eq(dev.mx_block, nil, name .. ": no MX block scaling")
    H.eq({ dev.attention_fwd, dev.attention_bwd }, { 518 / 989, 499 / 989 },
        name .. ": cuDNN's measured attention")
end
for _, name in ipairs { "B200", "GB200" } do
    local dev = clusters.device(name)
    H.near(dev.gemm_max * dev.flops, 1502.8e12, 1e-15, name .. " BF16 GEMM rate")
    H.near(dev.fp8_gemm_max * dev.fp8_flops, 2814.6e12, 1e-15, name .. " FP8 GEMM rate")
    H.near(dev.fp8_block_gemm_max * dev.fp8_flops, 2677.4e12, 1e-15, name .. " MXFP8 GEMM rate")
    H.eq({ dev.mx_block, dev.mem_efficiency }, { 32, 0.68 }, name .. " block scaling, HBM")
end
-- Blackwell attention: cuDNN's measured rates of each part (NVIDIA/cudnn-
-- frontend's SDPA benchmark, sequence 8192, GQA 128/8, head 128, causal),
-- TFLOP/s forward and backward over the part's own BF16 peak
for name, r in pairs { B200 = { 1171.278e12, 942.509e12, 2.25e15 },
                       GB200 = { 1584e12, 1211e12, 2.5e15 },
                       GB300 = { 1495.674e12, 1130.076e12, 2.5e15 } } do
    local dev = clusters.device(name)
    H.near(dev.attention_fwd * dev.flops, r[1], 1e-15, name .. ": cuDNN's attention forward")
    H.near(dev.attention_bwd * dev.flops, r[2], 1e-15, name .. ": cuDNN's attention backward")
    H.eq(dev.flops, r[3], name .. ": BF16 peak")
end
H.eq(clusters.device("GB200").gemm_max, 1502.8e12 / 2.5e15, "GB200: the die's rate, its own peak")
H.eq(clusters.device("A100").fp8_flops, nil, "A100: no FP8 tensor cores")
-- an NVL72 cluster builds and runs a collective inside a rack
local ps = require "pipesim"
local c = ps.cluster(clusters.nvl72(2))
H.eq(c.ranks, 144)
H.raises(function() ps.cluster { ranks = 2, device = clusters.device("H100",
    { fp8_gemm_max = 1.5 }) } end, "field 'device.fp8_gemm_max' must be in (0, 1], got 1.5")

H.raises(function() clusters.device("V100") end,
    "unknown device 'V100' (known: A100, A100 40GB, H100, H200, H800, B200, GB200, GB300)")
H.raises(function() clusters.dgx("H100", 0) end, "nodes must be a positive integer")
H.raises(function() clusters.dgx("H100", 1, { nicks = 4 }) end, "unknown field 'nicks'")
H.done()
