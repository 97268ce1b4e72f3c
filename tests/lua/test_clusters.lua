-- Device and DGX presets: figures, units, aliases, overrides, bad names.
package.path = "lua/?.lua;lua/?/init.lua;tests/lua/?.lua;" .. package.path
local H = require "harness"
local clusters = require "pipesim.clusters"

local a = clusters.device("A100")
H.eq(a.flops, 312e12); H.eq(a.memory, 80 * 2 ^ 30); H.eq(a.efficiency, 0.5)
local h = clusters.device("H100 SXM")
H.eq(h.flops, 989e12); H.eq(h.memory, 80e9)
H.eq(clusters.device("h200").memory, 141e9)
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
H.eq(#clusters.devices(), 7)

H.raises(function() clusters.device("V100") end,
    "unknown device 'V100' (known: A100, A100 40GB, H100, H200, H800, B200, GB200)")
H.raises(function() clusters.dgx("H100", 0) end, "nodes must be a positive integer")
H.raises(function() clusters.dgx("H100", 1, { nicks = 4 }) end, "unknown field 'nicks'")
H.done()
