-- How close to reality, Megatron-Bridge's dense pre-training runs of the
-- 25.11 NeMo container (Llama 3 8B and 70B, Llama 3.1 405B) on DGX H100,
-- DGX B200 and GB200 NVL72, with context parallelism, FP8 (per-tensor
-- current scaling, "FP8-CS", and MXFP8) and Megatron-FSDP where the
-- recipes use them, against pipesim's prediction with the default device
-- presets (never fitted to these rows). Prints docs/fidelity.md's
-- "Megatron-Bridge 25.11" table; `-D quick=1` runs two rows.
--
-- Published: NVIDIA-NeMo/Megatron-Bridge v0.2.1 (the 25.11 container's
-- release), docs/performance-summary.md, "25.11 NeMo Container", tokens
-- / sec / GPU; the step is GBS x 8192 / (GPUs x tokens/s/GPU).
-- Configurations: the same tag's scripts/performance/configs/
-- llama3/workload_base_configs.py and llama31/workload_base_configs.py
-- (parallel sizes, MBS, GBS, recompute, FSDP, CPU offloading),
-- llama3_llm_pretrain.py / llama31_llm_pretrain.py (TP overlap, the
-- MXFP8 rows' overlap_param_gather = False), utils/helpers.py
-- (set_workload_base_configs: sequence parallel wherever TP > 1;
-- recompute_num_layers as full, block; set_common_perf_overrides: TE's
-- cross-entropy) and src/megatron/bridge/recipes/llama/llama3.py
-- (_llama3_common: the distributed optimizer with overlapped gradient
-- reduce and parameter gather; set_llama3_common_configs: gradients
-- reduced in bf16; the 405B's embedding and loss counted in the
-- pipeline split) and src/megatron/bridge/training/mixed_precision.py
-- (bf16_with_fp8_current_scaling_mixed and bf16_with_mxfp8_mixed, the
-- FP8-CS and MXFP8 precision configs: fp8 "hybrid" / "e4m3" and
-- fp8_param_gather = True, FP8 parameters; get_precision_config of
-- scripts/performance/utils/helpers.py turns the current-scaling
-- recipe's BF16 first and last layers off).
--
-- Not expressible (refused by name, not modelled): the FSDP rows of
-- GB200 (LLAMA3_70B FP8-CS, LLAMA3.1_405B FP8-CS) offload 40 and 92
-- layers' activations to the CPU (cpu_offloading_num_layers); GB300
-- has no device preset. The H100 LLAMA3_8B row's table says FSDP 1,
-- but its v0.2.1 config (LLAMA3_8B_H100_FP8_CS_BASE_CONFIG) sets no
-- use_megatron_fsdp; it is run as configured (the DDP distributed
-- optimizer, full recompute of 5 blocks).
local ps = require "pipesim"
local V = require "pipesim.validation"

local quick = ps.args.quick

-- Llama 3 / 3.1 (pipesim.validation: RMSNorm, SwiGLU, RoPE, no biases, no
-- dropout, untied, vocabulary 128,256, sequence 8192, 8 query groups, the
-- distributed optimizer overlapped) with TE's cross-entropy, FP8 hybrid and
-- FP8 parameters (fp8_param_gather, both precision configs).
local function llama(L, h, ffn, heads)
    return V.llama3(L, h, ffn, heads, { cross_entropy_fusion_impl = "te", fp8_format = "hybrid",
                                        fp8_param_gather = true })
end

-- The parallel layout, precision and batch of one row.
local function plan(f, t)
    f.tensor_model_parallel_size = t.tp or 1
    f.pipeline_model_parallel_size = t.pp or 1
    f.context_parallel_size = t.cp or 1
    f.num_virtual_stages_per_pipeline_rank = t.vp
    f.sequence_parallel = (t.tp or 1) > 1 or nil
    f.tp_comm_overlap = (t.tp or 1) > 1 or nil
    f.fp8_recipe = t.recipe
    -- bf16_with_mxfp8_mixed: fp8 = "e4m3"; current scaling: "hybrid"
    if t.recipe == "mxfp8" then f.fp8_format = "e4m3" end
    f.global_batch_size, f.world_size = t.gbs, t.gpus
    if t.mbs then f.micro_batch_size = t.mbs end
    -- MXFP8 rows: "keeping this enabled causes NaN grad norm"
    -- (llama3_llm_pretrain.py, llama31_llm_pretrain.py)
    if t.recipe == "mxfp8" then f.overlap_param_gather = nil end
    return f
end

local function llama8(t)
    return plan(llama(32, 4096, 14336, 32), t)
end

local function llama70(t)
    return plan(llama(80, 8192, 28672, 64), t)
end

local function llama405(t)
    local f = llama(126, 16384, 53248, 128)
    f.account_for_embedding_in_pipeline_split = true
    f.account_for_loss_in_pipeline_split = true
    return plan(f, t)
end

local function tok(gbs, gpus, tps)
    return gbs * 8192 / (gpus * tps)
end

-- name, device, nodes (GB200: NVL72 racks), flags, published seconds
local ROWS = {
    { "Llama 3 8B FP8-CS", "H100", 1,
      (function()
          local f = llama8 { gpus = 8, gbs = 128, recipe = "tensorwise" }
          f.recompute_granularity, f.recompute_method, f.recompute_num_layers = "full", "block", 5
          return f
      end)(), tok(128, 8, 14451) },
    { "Llama 3 70B FP8-CS", "H100", 8,
      llama70 { gpus = 64, gbs = 128, tp = 4, pp = 8, vp = 5, recipe = "tensorwise" },
      tok(128, 64, 1602) },
    { "Llama 3.1 405B FP8-CS", "H100", 128,
      llama405 { gpus = 1024, gbs = 512, tp = 8, pp = 8, cp = 2, vp = 8, recipe = "tensorwise" },
      tok(512, 1024, 292) },
    { "Llama 3.1 405B FP8-CS", "B200", 16,
      llama405 { gpus = 128, gbs = 64, tp = 4, pp = 8, cp = 2, vp = 8, recipe = "tensorwise" },
      tok(64, 128, 661) },
    { "Llama 3.1 405B MXFP8", "B200", 16,
      llama405 { gpus = 128, gbs = 64, tp = 4, pp = 8, cp = 2, vp = 8, recipe = "mxfp8" },
      tok(64, 128, 624) },
    { "Llama 3 70B MXFP8", "GB200", 1,
      llama70 { gpus = 64, gbs = 128, tp = 2, pp = 4, vp = 5, recipe = "mxfp8" },
      tok(128, 64, 3617) },
    { "Llama 3.1 405B MXFP8", "GB200", 2,
      llama405 { gpus = 128, gbs = 64, tp = 4, pp = 8, cp = 2, vp = 8, recipe = "mxfp8" },
      tok(64, 128, 563) },
}
local QUICK = { [2] = true, [6] = true }

local tally = V.tally { "H100", "B200", "GB200" }
print("| model | device, GPUs | TP/PP/CP/VP, MBS, GBS | published | pipesim | error | fits |")
print("|---|---|---|---|---|---|---|")
for i, row in ipairs(ROWS) do
    if not quick or QUICK[i] then
        local name, device, nodes, f, secs = table.unpack(row)
        f.cluster = ps.cluster(ps.clusters.dgx(device, nodes))
        f.record = "summary"
        f.name = name .. " " .. device
        local layout = string.format("%d/%d/%d/%s, %d, %d", f.tensor_model_parallel_size,
            f.pipeline_model_parallel_size, f.context_parallel_size,
            f.num_virtual_stages_per_pipeline_rank or "-", f.micro_batch_size,
            f.global_batch_size)
        local r = ps.run(ps.models.megatron(f))
        local err = V.add(tally, name, device, secs, r)
        print(string.format("| %s | %s, %d | %s | %.3f s | %.3f s | %+.1f%% | %s |", name, device,
            f.world_size, layout, secs, r.makespan, 100 * err, r.fits and "yes" or "no"))
    end
end
print()
V.summary(tally)
return tally.results
