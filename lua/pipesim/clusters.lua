-- ps.clusters: device and DGX-style node presets in the form ps.cluster
-- accepts, with the roofline constants of the compute model
-- (models/roofline.lua). Numbers are in base units (FLOP/s, bytes,
-- bytes/s, seconds); each figure names its source. Bandwidths are per
-- direction: a link carries one direction's traffic at this rate.
local check = require "pipesim.argcheck"
local core = require "pipesim.core"

local M = {}

local GiB = 2 ^ 30
local MiB = 2 ^ 20

-- Default efficiency (achieved fraction of dense peak for plain FLOP
-- layers, the `flops / (peak x efficiency)` rule). Reported model FLOPs
-- utilisation: Narayanan et al. 2021 (Megatron-LM, Table 1) 44-52% of A100
-- peak; Korthikanti et al. 2022 up to 56%; Llama 3 (Dubey et al. 2024,
-- Table 4) 38-43% on H100; Megatron-Core's README ~41-47% on H100. MFU
-- includes pipeline bubbles and exposed communication, which pipesim
-- simulates itself, so we take the upper half of each range. Modelled
-- transformer layers do not use it: they take the roofline below.
--
-- Roofline constants (one set per GPU type, never fitted per case):
--   gemm_max   the fraction of dense peak a BF16 matmul sustains at the
--              GEMM shapes of training, on the software stack of the runs
--              pipesim is held to: a fixed set of training shapes timed as
--              a mean over back-to-back iterations of random data, never
--              the best of a shape search (MAMF, Bekman, Machine Learning
--              Engineering, compute/accelerator/README.md: A100 271.2/312
--              = 86.9%, H100 794.5/989 = 80.3%, B200 1745/2250 = 77.6%,
--              the best shape and iteration of thousands, a ceiling few
--              training shapes reach).
--              A100: 230/312 = 73.7%, fp16 8192^3 `a @ b` on an A100 80GB
--              in NGC's PyTorch 22.07 container (mli/transformers-
--              benchmarks, README "MatMul FP32 / FP16 116 / 230", from
--              micro_bench.ipynb), the cuBLAS 11 of the 2021-22 Megatron-
--              LM runs.
--              Hopper (H100, H200, H800, one GH100 die of 132 SMs):
--              598.9 TFLOP/s, Transformer Engine's own GEMM benchmark (TE
--              docs/examples/gemm_profiling/gemm_profiling.rst, "Worked
--              Example: 5B Model on H200", benchmarks/gemm/benchmark_gemm.py:
--              torch.randn inputs, mean of 100 timed iterations after 10
--              warm-up) on an H200 NVL: the twelve GEMMs of a transformer
--              layer (hidden 4096, ffn 16384, 15,872 tokens: fprop, dgrad,
--              wgrad) in BF16, 32.014 ms for 1.917e13 FLOPs.
--              Blackwell (B200, GB200): 1502.8 TFLOP/s, the same benchmark
--              on a B300 (12.758 ms per layer).
--              Each generation's measured rate is taken in TFLOP/s, the
--              same for every part of its die, and gemm_max is that rate
--              over the part's own rated peak (H100/H200/H800 SXM 598.9/989
--              = 60.6 %, B200 1502.8/2250 = 66.8 %, GB200 1502.8/2500 =
--              60.1 %). A part's rated peak is its tensor cores at a
--              nominal clock (H100 SXM: 132 SMs x 4096 dense BF16 FLOP per
--              clock x 1830 MHz = 989.4 TFLOPS; the H200 NVL's 835.5 is the
--              same die at 1545 MHz), not a clock it holds under dense
--              matmuls on random data, which are power-limited (He 2024,
--              "Strangely, Matrix Multiplications on GPUs Run Faster When
--              Given 'Predictable' Data", thonking.ai: on H100 "matmuls ...
--              are primarily not compute or bandwidth limited, they are
--              power limited"). Until this change the benchmark's fraction
--              of the NVL's rating (71.7 %) was carried to each part's
--              rating, which assumes the SXM part holds its nominal clock
--              in a training step; no published measurement of an SXM
--              part's sustained GEMM rate inside a busy 8-GPU node was
--              found, so which rule holds is an assumption either way:
--              docs/fidelity.md gives the validation tables under both.
--   gemm_overhead  seconds a GEMM costs beyond FLOPs/(peak x gemm_max):
--              launch, ramp and wave tail. From XLA's measured H100 matmul
--              table (openxla xla/service/gpu/model/matmul_interpolator_
--              data.h, sm_90, bf16): 2048^3 runs at 632.0 TFLOP/s, i.e.
--              27.2 us, against 21.6 us at MAMF, so 5.5 us. The same table
--              then gives 4096^3 within 2% (769 vs 783 TFLOP/s) and
--              1024x2048x2048 exactly (524). Only H100 has such a table;
--              the other GPUs take the same 5.5 us (an assumption).
--   hbm        HBM bandwidth from each datasheet; mem_efficiency 0.9, the
--              fraction Calculon's A100 system file gives 10-100 MB
--              transfers (calculon-ai/calculon examples/a100_80g.json,
--              mem1.MB_efficiency), for A100 and Hopper: on an H200 NVL,
--              Transformer Engine's quantisation kernels (models/fp8.lua's
--              bytes) take 3.500 ms for what 0.9 of its 4.8 TB/s moves in
--              3.449 (TE's gemm_profiling page, autocast less pre-quantized
--              FP8 current scaling). Blackwell: the same kernels on a B300
--              (8 TB/s) move 12.41 GB in 2.335 ms (current scaling, 5.32
--              TB/s) and 10.09 GB in 1.823 ms (MXFP8, 5.53 TB/s): 0.665
--              and 0.692 of the datasheet rate, 0.68 taken.
--   vector     non-tensor FP32 FLOP/s (datasheets), the compute roof of
--              the memory-bound operations.
--   nvlink_efficiency  the fraction of the NVLink line rate NCCL gets, so
--              dgx()'s intra-node links carry what a ring really moves.
--              H100/H200/B200: 370/450, from NCCL's maintainer (nccl-tests
--              issue #212): "450GB/s is the line rate. With the protocol
--              overhead (~20%) NCCL can get an effective NVLink bandwidth
--              of 370GB/s". A100: 200/300, nccl-tests all_reduce_perf on
--              8 x A100-SXM4-80GB over NVSwitch, bus bandwidth ~200 GB/s
--              (nccl-tests issue #149; #178 reports 208).
--   sms        streaming multiprocessors (NVIDIA A100 and H100 whitepapers:
--              108 on A100, 132 on H100 SXM5; H200 is the same GH100
--              part), for the SMs Transformer Engine's TP-overlap kernels
--              take from the GEMMs they overlap (models/roofline.lua
--              te_overlap). Optional: without it that contention is not
--              charged (B200 has none here).
--   attention_fwd, attention_bwd  the fraction of dense peak a fused
--              causal attention kernel reaches, forward and backward,
--              counting the causal kernel's own FLOPs (half the s^2 work,
--              FlashAttention's benchmark convention). H100/H200: cuDNN's
--              fused attention, the kernel Transformer Engine picks on
--              Hopper ("Disabling FlashAttention to give FusedAttention
--              preference on Hopper+", transformer_engine/pytorch/
--              attention.py), at sequence 4k, head dim 128, BF16, as Shah
--              et al. 2024 (FlashAttention-3, arXiv 2407.08608) measure it
--              on H100 SXM5: forward with causal mask 518 TFLOP/s, backward
--              499 (their backward figure, no mask). Blackwell: cuDNN's
--              fused attention as NVIDIA's own SDPA benchmark measures it on
--              each part (NVIDIA/cudnn-frontend, benchmark/sdpa_benchmark_
--              training, artifacts/sdpa_bf16_benchmark_results_NVIDIA_
--              <part>.csv) at the Llama 3 training shape: sequence 8192,
--              128 query and 8 key/value heads of 128, BF16, causal, FLOPs
--              counted as here (the causal half; backward 2.5x). B200
--              1171.278 / 942.509 TFLOP/s and GB300 1495.674 / 1130.076
--              (PyTorch's cuDNN backend, cuDNN 9.13, NGC PyTorch 25.09; at
--              bb37575), GB200 1584 / 1211 (cuDNN frontend 1.16 on cuDNN
--              9.17, NGC PyTorch 25.11; at d48a60e). Before: the forward at
--              gemm_max and the backward at 0.769 of it, FlashAttention-4's
--              shared-memory bound (Zadouri et al. 2026, arXiv 2603.05451),
--              which the GB200 figures confirm (1211 / 1584 = 0.765) but
--              whose forward was an assumption; B200's measured kernel is
--              0.78 / 0.82 of that. The parts' figures come from different
--              cuDNN releases (9.13 for B200 and GB300, 9.17 for GB200: the
--              same release put GB300 at 1496, below GB200's 1584 on 9.17),
--              each the only published one of its part at this shape;
--              docs/fidelity.md. Optional: without them (A100) the kernel
--              runs at gemm_max.
--   fp8_flops  dense FP8 tensor-core peak (datasheets, half the "with
--              sparsity" figure). Absent on a device without FP8 tensor
--              cores (A100): FP8 there is an error naming the device.
--   fp8_gemm_max  the fraction of fp8_flops a per-tensor scaled FP8 GEMM
--              (Transformer Engine's delayed and current scaling) sustains,
--              the kernel alone (the quantisation is charged on its own,
--              models/roofline.lua). The same TE benchmark as gemm_max,
--              "pre-quantized" mode (inputs quantised once before the timed
--              loop): Hopper, H200 NVL, FP8 CurrentScaling 16.785 ms per
--              layer, 1142.3 TFLOP/s; Blackwell, B300, 6.812 ms, 2814.6
--              TFLOP/s; each a rate of its die, over the part's own FP8
--              peak as gemm_max (H100 SXM 1142.3/1979 = 57.7 %, B200
--              2814.6/4500 = 62.5 %). (The same benchmark's
--              autocast times, quantisation included, are reproduced by
--              the roofline within 2% on Hopper: tests/lua/test_fp8.lua.)
--   fp8_block_gemm_max  the same for block-scaled FP8 GEMMs: Blackwell's
--              MXFP8 (32-element blocks, E8M0 scales in hardware): B300,
--              MXFP8 pre-quantized, 7.161 ms per layer, 2677.4 TFLOP/s.
--              Hopper's blockwise FP8 (1x128 and 128x128 blocks,
--              fp32 scales, TE's Float8BlockScaling, which Hopper's cuBLAS
--              cannot take pre-quantised): the autocast time, 22.882 ms per
--              layer, less the block quantisation the roofline charges for
--              the benchmark's operands (2.335 ms), 1.917e13 FLOPs in
--              20.547 ms = 933.1 TFLOP/s.
--   mx_block   the block of elements one MX scale covers where the tensor
--              cores take MX block scales (Blackwell, compute capability
--              10.0: 32, OCP Microscaling Formats v1.0, E8M0 scales); Hopper
--              has none, so the 'mxfp8' recipe there is an error, and
--              Blackwell runs TE's blockwise recipe as MXFP8 ("On
--              Blackwell (SM100+), FP8 Block is emulated via MXFP8", the
--              same TE page).
local GEMM_OVERHEAD = 5.5e-6
local MEM_EFFICIENCY = 0.9

-- Hopper (GH100) and Blackwell GEMM constants, shared by every part of a
-- generation (see above: one set per GPU type): `rates` are the measured
-- FLOP/s of TE's benchmark, each part's gemm_max, fp8_gemm_max and
-- fp8_block_gemm_max their fraction of its own peak (flops, fp8_flops).
local HOPPER_GEMM = { rates = { gemm_max = 598.9e12, fp8_gemm_max = 1142.3e12,
                                fp8_block_gemm_max = 933.1e12 } }
local BLACKWELL_GEMM = { rates = { gemm_max = 1502.8e12, fp8_gemm_max = 2814.6e12,
                                   fp8_block_gemm_max = 2677.4e12 },
                         mx_block = 32, mem_efficiency = 0.68 }

local DEVICES = {
    a100 = {
        name = "A100 80GB SXM",
        -- NVIDIA A100 datasheet: 312 TFLOPS dense BF16 (624 with sparsity),
        -- 19.5 TFLOPS FP32, 80GB HBM2e at 2039 GB/s (nvidia-smi: 81920 MiB
        -- = 80 GiB). No FP8 tensor cores.
        flops = 312e12, memory = 80 * GiB, efficiency = 0.5,
        vector_flops = 19.5e12, hbm_bandwidth = 2039e9, gemm_max = 230 / 312,
        -- NVLink 3: 12 links x 50 GB/s = 600 GB/s total, both directions
        -- added; 300 GB/s per direction.
        nvlink = 300e9, nvlink_efficiency = 200 / 300, sms = 108,
        -- DGX A100: 8 x ConnectX-6 HDR InfiniBand 200 Gb/s for compute
        -- (plus 2 for storage, not modelled) = 25 GB/s per NIC.
        nic = 200e9 / 8, nics = 8,
    },
    a100_40 = {
        name = "A100 40GB SXM",
        -- NVIDIA A100 datasheet: same compute as the 80GB part; 40GB HBM2
        -- at 1555 GB/s; the 80GB part's matmul figure (same chip).
        flops = 312e12, memory = 40 * GiB, efficiency = 0.5,
        vector_flops = 19.5e12, hbm_bandwidth = 1555e9, gemm_max = 230 / 312,
        nvlink = 300e9, nvlink_efficiency = 200 / 300, nic = 200e9 / 8, nics = 8, sms = 108,
    },
    h100 = {
        name = "H100 SXM",
        -- NVIDIA H100 datasheet (SXM5): 989 TFLOPS dense BF16 (1979 with
        -- sparsity), 1979 dense FP8 (3958 with sparsity), 67 TFLOPS FP32,
        -- 80GB HBM3 at 3.35 TB/s. Memory is what a job can hold, the
        -- device's total as nvidia-smi reports it (memory.total 81559
        -- MiB; PyTorch's OOM message reads "a total capacity of 79.19
        -- GiB"), as for every device here: the datasheet's "80GB" is 80e9
        -- B or 80 GiB only by rounding.
        flops = 989e12, fp8_flops = 1979e12, memory = 81559 * MiB, efficiency = 0.45,
        vector_flops = 67e12, hbm_bandwidth = 3.35e12, gemm = HOPPER_GEMM,
        sms = 132, attention_fwd = 518 / 989, attention_bwd = 499 / 989,
        -- NVLink 4: 18 links x 50 GB/s = 900 GB/s total; 450 per direction.
        nvlink = 450e9, nvlink_efficiency = 370 / 450,
        -- DGX H100: 8 x ConnectX-7 NDR 400 Gb/s = 50 GB/s per NIC.
        nic = 400e9 / 8, nics = 8,
        -- third-generation NVSwitch with NVLink SHARP (in-switch
        -- reduction), which NCCL's NVLS algorithm uses (2.17+)
        nvls = true,
    },
    h200 = {
        name = "H200 SXM",
        -- NVIDIA H200 datasheet: same compute as H100 SXM (989 TFLOPS dense
        -- BF16, 1979 dense FP8, 67 FP32), 141GB HBM3e at 4.8 TB/s
        -- (nvidia-smi memory.total: 143771 MiB); NVLink 4 (900 GB/s
        -- total). MAMF: "H200 is the same" as H100 in BF16.
        flops = 989e12, fp8_flops = 1979e12, memory = 143771 * MiB, efficiency = 0.45,
        vector_flops = 67e12, hbm_bandwidth = 4.8e12, gemm = HOPPER_GEMM,
        sms = 132, attention_fwd = 518 / 989, attention_bwd = 499 / 989,
        nvlink = 450e9, nvlink_efficiency = 370 / 450,
        -- DGX H200: 8 x ConnectX-7 400 Gb/s, as DGX H100; the same
        -- NVSwitch with NVLink SHARP.
        nic = 400e9 / 8, nics = 8, nvls = true,
    },
    h800 = {
        name = "H800 SXM",
        -- NVIDIA H800 SXM5 (the export Hopper): the H100 SXM5's tensor
        -- cores and HBM (989 TFLOPS dense BF16, 1979 dense FP8, 80GB HBM3
        -- at 3.35 TB/s) with NVLink cut to 400 GB/s total: 8 of NVLink 4's
        -- 50 GB/s links, 200 GB/s per direction. NCCL's rate over them,
        -- 8 x SM90_NVLINK_BW = 8 x 20.6 = 164.8 GB/s (src/graph/topo.h),
        -- is H100's fraction of the line rate (370/450 x 200 = 164.4);
        -- DeepSeek-V3's report on its H800 cluster (arXiv 2412.19437,
        -- Sec. 3.2.2): "NVLink offers a bandwidth of 160 GB/s, roughly
        -- 3.2 times that of IB (50 GB/s)", one 400 Gb/s InfiniBand NIC
        -- per GPU ("Each node in the H800 cluster contains 8 GPUs
        -- connected by NVLink and NVSwitch within nodes", Sec. 3.1).
        -- Its HBM is the H100's (nvidia-smi memory.total 81559 MiB).
        flops = 989e12, fp8_flops = 1979e12, memory = 81559 * MiB, efficiency = 0.45,
        vector_flops = 67e12, hbm_bandwidth = 3.35e12, gemm = HOPPER_GEMM,
        sms = 132, attention_fwd = 518 / 989, attention_bwd = 499 / 989,
        nvlink = 200e9, nvlink_efficiency = 370 / 450,
        nic = 400e9 / 8, nics = 8, nvls = true,
    },
    b200 = {
        name = "B200 SXM",
        -- NVIDIA DGX B200 datasheet / HGX B200 (per GPU): 2.25 PFLOPS dense
        -- BF16, 72 PFLOPS FP8 training for 8 GPUs with sparsity = 4.5
        -- dense per GPU, 180GB HBM3e at 8 TB/s, FP32 600 TFLOPS for 8 GPUs
        -- = 75 per GPU; NVLink 5 1.8 TB/s total = 900 GB/s per direction;
        -- 8 x ConnectX-7 400 Gb/s. Fifth-generation NVLink Switch with
        -- NVLink SHARP (in-network reductions: "NVIDIA SHARP FP8 support",
        -- the NVLink Switch datasheet), which NCCL's NVLS uses.
        flops = 2.25e15, fp8_flops = 4.5e15, memory = 183359 * MiB, efficiency = 0.45,
        vector_flops = 75e12, hbm_bandwidth = 8e12, gemm = BLACKWELL_GEMM,
        attention_fwd = 1171.278e12 / 2.25e15, attention_bwd = 942.509e12 / 2.25e15,
        nvlink = 900e9, nvlink_efficiency = 370 / 450, nic = 400e9 / 8, nics = 8,
        -- 180GB is nvidia-smi's memory.total of 183359 MiB.
        nvls = true,
    },
    gb200 = {
        name = "GB200 NVL72",
        -- NVIDIA GB200 NVL72 datasheet, per GPU (the rack's 72 Blackwell
        -- GPUs): FP16/BF16 360 PFLOPS and FP8 720 PFLOPS with sparsity
        -- for 72 GPUs = 2.5 and 5 PFLOPS dense; up to 13.4 TB HBM3e at
        -- 576 TB/s = 186 GB at 8 TB/s; NVLink 130 TB/s = 1.8 TB/s per GPU
        -- (18 NVLink 5 links), 900 GB/s per direction, every GPU of the
        -- rack one hop from every other through the NVLink Switch trays
        -- (a 72-GPU NVLink domain); 72 OSFP ConnectX-7 400 Gb/s InfiniBand
        -- NICs per rack, one per GPU (DGX GB200 datasheet). FP32: none on
        -- the datasheet; B200's 75 TFLOPS scaled by GB200's higher tensor
        -- peak (2.5 / 2.25), an assumption (only the memory-bound
        -- kernels' compute roof, never reached). NVIDIA's own benchmark
        -- recipes rate it at 2.45 (BF16) and 4.9 (FP8) PFLOPS
        -- (NVIDIA/dgxc-benchmarking, nemotron/README.md, v25.05).
        -- Memory: nvidia-smi's memory.total of a GB200, 189471 MiB.
        flops = 2.5e15, fp8_flops = 5e15, memory = 189471 * MiB, efficiency = 0.45,
        vector_flops = 75e12 * 2.5 / 2.25, hbm_bandwidth = 8e12, gemm = BLACKWELL_GEMM,
        attention_fwd = 1584e12 / 2.5e15, attention_bwd = 1211e12 / 2.5e15,
        nvlink = 900e9, nvlink_efficiency = 370 / 450, nic = 400e9 / 8, nics = 72,
        nvls = true, node_gpus = 72,
    },
    gb300 = {
        name = "GB300 NVL72",
        -- NVIDIA GB300 NVL72 datasheet, per GPU (the rack's 72 Blackwell
        -- Ultra GPUs): FP16/BF16 360 PFLOPS and FP8 720 PFLOPS with
        -- sparsity for 72 GPUs = 2.5 and 5 PFLOPS dense, as GB200 (Blackwell
        -- Ultra adds dense FP4 and attention's exponentials, not BF16 or
        -- FP8 rate); up to 21 TB of HBM3e at 576 TB/s = 8 TB/s a GPU
        -- (nvidia-smi memory.total of a GB300: 284208 MiB); NVLink 5 at 1.8
        -- TB/s a GPU (900 GB/s per direction) across the rack's NVLink
        -- Switch; one ConnectX-8 SuperNIC at 800 Gb/s per GPU between racks.
        -- Its GEMM rates are the measured ones of BLACKWELL_GEMM, whose
        -- benchmark ran on a B300, the same Blackwell Ultra die. FP32 as
        -- GB200's (an assumption; only the memory-bound roof).
        flops = 2.5e15, fp8_flops = 5e15, memory = 284208 * MiB, efficiency = 0.45,
        vector_flops = 75e12 * 2.5 / 2.25, hbm_bandwidth = 8e12, gemm = BLACKWELL_GEMM,
        attention_fwd = 1495.674e12 / 2.5e15, attention_bwd = 1130.076e12 / 2.5e15,
        nvlink = 900e9, nvlink_efficiency = 370 / 450, nic = 800e9 / 8, nics = 72,
        nvls = true, node_gpus = 72,
    },
}
for _, d in pairs(DEVICES) do
    d.gemm_overhead = GEMM_OVERHEAD
    d.mem_efficiency = MEM_EFFICIENCY
    for k, v in pairs(d.gemm or {}) do d[k] = v end -- the generation's (above)
    d.gemm = nil
    for k, rate in pairs(d.rates or {}) do -- FLOP/s of the die over this part's peak
        d[k] = rate / (k == "gemm_max" and d.flops or d.fp8_flops)
    end
    d.rates = nil
end

-- What NCCL's tuner reads of each system beyond the links (the cluster
-- fields compute_capability, cpu_vendor, nccl_channels; core/coll/proto.c,
-- after src/graph/tuning.cc of NCCL 2.30.7): the GPU's CUDA compute
-- capability picks its generation's bandwidth caps; the host CPU of the
-- DGX picks llMaxBw across nodes and the network post overhead of a ring
-- step (AMD 2 us, Intel 1 us); nccl_channels is what NCCL's search
-- (src/graph/search.cc ncclTopoCompute) finds on one node: NVLink totalBw
-- = links x SMxx_NVLINK_BW (topo.h); starting from the generation's
-- fastest speedArrayIntra entry, the search tries each slower speed while
-- it is more than .49 of the best found and keeps the graph of the most
-- channels x speed (ncclTopoCompareGraphs: the first on a tie), then
-- doubles it (ncclTopoDupChannels, unless the speed is under 25, or under
-- 50 with more than 4 channels on cc > 80): A100 12 x 20.0 = 240 -> 6 x
-- 40 -> 12; H100 and H200 18 x 20.6 = 370.8 -> 6 x 60 -> 12; H800 8 x
-- 20.6 = 164.8 -> 4 x 40 (2 x 60 = 120, 3 x 50 = 150, 4 x 40 = 160, then
-- 5 x 30, 6 x 24 and 8 x 20 no better) -> 8; B200 and GB200 18 x 40.1 =
-- 721.8 -> 8 x 90 -> 16. CPUs: DGX A100 2 x AMD EPYC 7742 (DGX A100
-- user guide), DGX H100/H200 (and DGX H800, the same system) 2 x Intel
-- Xeon Platinum 8480C, DGX B200 2 x Intel Xeon Platinum 8570 (the DGX
-- datasheets); GB200: NVIDIA Grace (Arm Neoverse V2), two per compute
-- tray of four GPUs.
local NCCL_HW = {
    [DEVICES.a100] = { compute_capability = 80, cpu_vendor = "amd", nccl_channels = 12 },
    [DEVICES.a100_40] = { compute_capability = 80, cpu_vendor = "amd", nccl_channels = 12 },
    [DEVICES.h100] = { compute_capability = 90, cpu_vendor = "intel", nccl_channels = 12 },
    [DEVICES.h200] = { compute_capability = 90, cpu_vendor = "intel", nccl_channels = 12 },
    [DEVICES.h800] = { compute_capability = 90, cpu_vendor = "intel", nccl_channels = 8 },
    [DEVICES.b200] = { compute_capability = 100, cpu_vendor = "intel", nccl_channels = 16 },
    [DEVICES.gb200] = { compute_capability = 100, cpu_vendor = "arm", nccl_channels = 16 },
    -- GB300: Blackwell Ultra is sm_103; the same NVLink 5 as GB200, so the
    -- same search result; Grace CPUs.
    [DEVICES.gb300] = { compute_capability = 103, cpu_vendor = "arm", nccl_channels = 16 },
}

-- The roofline fields of a device table (what ps.cluster keeps in Lua for
-- the compute model; the C core reads flops, efficiency and memory).
M.ROOFLINE_FIELDS = { vector_flops = true, hbm_bandwidth = true, gemm_max = true,
                      gemm_overhead = true, mem_efficiency = true }
-- Roofline constants a device may leave out (see above for the default).
M.ROOFLINE_OPTIONAL = { sms = true, attention_fwd = true, attention_bwd = true,
                        fp8_flops = true, fp8_gemm_max = true, fp8_block_gemm_max = true,
                        mx_block = true }
-- The optional constants that are fractions of a peak, in (0, 1].
M.ROOFLINE_FRACTIONS = { "mem_efficiency", "gemm_max", "attention_fwd", "attention_bwd",
                         "fp8_gemm_max", "fp8_block_gemm_max" }

-- Latencies of one hop, the raw latency a transfer pays with no protocol
-- synchronisation: NCCL's LL figures (src/graph/tuning.cc
-- ncclTunerConstantsDefaults hwLatencies, NCCL 2.30.7: NVLink ring LL 0.6
-- us, network ring LL 2.7 us), LL being the protocol whose only overhead
-- is the flag in each line; NCCL's LL128 and Simple pay more per step,
-- which core/coll/proto.c adds for collectives run with them. Datasheets
-- give no latency; one pair for every GPU type (NVLink 3 and 4, HDR and
-- NDR NICs alike in NCCL's table). Until issue 14 these were 2 and 5 us.
local INTRA_LATENCY = 0.6e-6
local INTER_LATENCY = 2.7e-6

-- Accepted spellings: case, spaces, '-' and '_' are ignored, so "H100",
-- "h100-sxm", "H100 SXM" and "dgx-h100" are the same device.
local ALIASES = {
    a100 = "a100", a10080gb = "a100", a100sxm = "a100", a10080gbsxm = "a100",
    a100sxm80gb = "a100", dgxa100 = "a100",
    a10040gb = "a100_40", a10040gbsxm = "a100_40", a100sxm40gb = "a100_40",
    a10040 = "a100_40",
    h100 = "h100", h100sxm = "h100", h100sxm5 = "h100", h10080gb = "h100",
    dgxh100 = "h100",
    h200 = "h200", h200sxm = "h200", dgxh200 = "h200",
    h800 = "h800", h800sxm = "h800", h800sxm5 = "h800", dgxh800 = "h800", hgxh800 = "h800",
    b200 = "b200", b200sxm = "b200", dgxb200 = "b200", hgxb200 = "b200",
    gb200 = "gb200", gb200nvl72 = "gb200", nvl72 = "gb200", dgxgb200 = "gb200",
    gb300 = "gb300", gb300nvl72 = "gb300", dgxgb300 = "gb300",
}

local function lookup(name, what)
    if type(name) ~= "string" then
        check.fail("%s: expected a device name, got %s", what, type(name))
    end
    local key = ALIASES[(name:lower():gsub("[%s_%-]", ""))]
    if not key then
        check.fail("%s: unknown device %s (known: A100, A100 40GB, H100, H200, H800, B200, GB200, GB300)",
            what, check.show(name))
    end
    return DEVICES[key]
end

-- The tables inside a cluster that overrides merge into field by field,
-- and the list of known fields (core.fields, the binding's) of each.
local NESTED = { device = "device", intra = "link", inter = "link", link = "link" }

-- Merges overrides into t (a fresh table): fields are checked against the
-- same lists ps.cluster uses (`list` names one), so a typo in an override
-- is "dgx: overrides.device: unknown field 'eficiency' (did you mean
-- 'efficiency'?)" rather than a silent no-op.
local function merge(t, overrides, what, list)
    if overrides == nil then return t end
    if type(overrides) ~= "table" then
        check.fail("%s must be a table, got %s", what, type(overrides))
    end
    local known = core.fields[list]
    if list == "device" then
        -- and the roofline constants, which ps.cluster keeps in Lua
        -- (init.lua takes them out of the table the binding checks)
        known = {}
        for _, f in ipairs(core.fields.device) do known[f] = true end
        for f in pairs(M.ROOFLINE_FIELDS) do known[f] = true end
        for f in pairs(M.ROOFLINE_OPTIONAL) do known[f] = true end
    end
    check.known_fields(overrides, known, what)
    for k, v in pairs(overrides) do
        local sub_list = list == "cluster" and NESTED[k]
        if sub_list and type(v) == "table" and type(t[k]) == "table" then
            local sub = {}
            for kk, vv in pairs(t[k]) do sub[kk] = vv end
            t[k] = merge(sub, v, what .. "." .. k, sub_list)
        else
            t[k] = v
        end
    end
    return t
end

-- The fields of a preset that go into a device table: ps.cluster's and
-- the roofline constants (those a device lacks stay nil).
local DEVICE_FIELDS = { "name", "flops", "memory", "efficiency", "vector_flops",
                        "hbm_bandwidth", "gemm_max", "gemm_overhead", "mem_efficiency", "sms",
                        "attention_fwd", "attention_bwd", "fp8_flops", "fp8_gemm_max",
                        "fp8_block_gemm_max", "mx_block" }

local function device_table(d)
    local t = {}
    for _, k in ipairs(DEVICE_FIELDS) do t[k] = d[k] end
    return t
end

-- device(name, overrides) -> { name, flops, memory, efficiency, and the
-- roofline constants }, the `device` of ps.cluster. overrides replaces
-- fields, e.g. { efficiency = 0.4 } or { hbm_bandwidth = 3e12 }.
M.device = check.public(function(name, overrides)
    return merge(device_table(lookup(name, "device")), overrides, "device: overrides", "device")
end)

-- dgx(name, nodes, overrides) -> a ps.cluster table of `nodes` nodes of
-- the device's NVLink domain: 8 GPUs for the DGX/HGX systems, 72 for
-- GB200 (a DGX GB200 "node" is one NVL72 rack, every GPU one NVLink hop
-- from every other); intra = NVLink per direction at what NCCL achieves
-- (nvlink_efficiency), inter = one NIC per direction (a GPU's rail),
-- nics_per_node = the system's compute NICs. overrides are merged field by
-- field, e.g. { inter = { latency = 8e-6 }, device = { efficiency = 0.4 } }.
local function dgx_spec(d, nodes, overrides, prefix)
    return merge({
        name = prefix .. d.name .. " x" .. nodes,
        nodes = nodes,
        gpus_per_node = d.node_gpus or 8,
        device = device_table(d),
        intra = { bandwidth = d.nvlink * d.nvlink_efficiency, latency = INTRA_LATENCY },
        inter = { bandwidth = d.nic, latency = INTER_LATENCY },
        nics_per_node = d.nics,
        nvls = d.nvls or nil,
        compute_capability = NCCL_HW[d].compute_capability,
        cpu_vendor = NCCL_HW[d].cpu_vendor,
        nccl_channels = NCCL_HW[d].nccl_channels,
    }, overrides, prefix == "" and "nvl72: overrides" or "dgx: overrides", "cluster")
end

M.dgx = check.public(function(name, nodes, overrides)
    local d = lookup(name, "dgx")
    nodes = check.posint(nodes == nil and 1 or nodes, "dgx: nodes")
    return dgx_spec(d, nodes, overrides, "DGX ")
end)

-- nvl72(racks, overrides) -> a ps.cluster table of `racks` GB200 NVL72
-- racks: 72 GPUs per NVLink domain, InfiniBand (one 400 Gb/s NIC per GPU)
-- between racks. The same as dgx("GB200", racks, overrides).
M.nvl72 = check.public(function(racks, overrides)
    racks = check.posint(racks == nil and 1 or racks, "nvl72: racks")
    return dgx_spec(DEVICES.gb200, racks, overrides, "")
end)

-- load(path) -> the table a cluster file returns (`pipesim calibrate`'s
-- output, docs/calibrate.md), for ps.cluster: the file is data, run as a
-- text chunk (never a binary one) in an empty environment, so it can
-- read or call nothing; under the sandbox it must lie where scenarios may
-- load Lua from. Errors name the file.
M.load = check.public(function(path)
    if type(path) ~= "string" then
        check.fail("load: expected the path of a cluster file, got %s", type(path))
    end
    local chunk, err = loadfile(path, "t", {})
    if not chunk then check.fail("load: %s", tostring(err)) end
    local ok, t = pcall(chunk)
    if not ok then check.fail("load: %s", tostring(t)) end
    if type(t) ~= "table" then
        check.fail("load: %s must return a table for ps.cluster, got %s", path, type(t))
    end
    return t
end)

-- Names for listings, in datasheet order.
function M.devices()
    local out = {}
    for _, k in ipairs { "a100_40", "a100", "h100", "h200", "h800", "b200", "gb200", "gb300" } do
        out[#out + 1] = DEVICES[k].name
    end
    return out
end

-- gemm_efficiency(dev, M, N, K, batch, fp8) -> achieved fraction of the
-- peak for a (batched) GEMM of F = 2*M*N*K*batch FLOPs: max * F / (F +
-- F0) with F0 = max * peak * gemm_overhead, so that its time is F / (peak
-- * max) + gemm_overhead. Rises with size and saturates at max (see the
-- constants above). peak and max are dev.flops and dev.gemm_max, or for
-- fp8 = "tensor" dev.fp8_flops and dev.fp8_gemm_max, for fp8 = "block"
-- dev.fp8_flops and dev.fp8_block_gemm_max (the fraction is then of
-- fp8_flops).
function M.gemm_efficiency(dev, m, n, k, batch, fp8)
    local peak, max = dev.flops, dev.gemm_max
    if fp8 == "tensor" then
        peak, max = dev.fp8_flops, dev.fp8_gemm_max
    elseif fp8 == "block" then
        peak, max = dev.fp8_flops, dev.fp8_block_gemm_max
    end
    local f = 2 * m * n * k * (batch or 1)
    local f0 = max * peak * dev.gemm_overhead
    return max * f / (f + f0)
end

return M
