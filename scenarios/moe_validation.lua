-- How close to reality, mixture of experts: NVIDIA's published MoE training
-- runs (Megatron-Bridge's performance summary), each row's model FLOPs per
-- token as the publisher counts them against pipesim's. Prints the table of
-- docs/moe.md's "How close to reality".
--
-- Source: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (the
-- 26.08 NeMo container) and docs/performance-summary-archive.md (26.06,
-- 26.02, 25.11), commit 067f987 (2026-08-22): pre-training, "we
-- force-balance the token distribution among experts and all benchmarks are
-- token-dropless". Each row publishes tokens/s/GPU and model TFLOP/s/GPU,
-- the latter from Megatron-Bridge's flop_utils.py (Megatron-LM's
-- num_floating_point_operations); their ratio is the publisher's model
-- FLOPs per token, which pipesim's efficiency figures (the same formula,
-- models/moe.lua's presets at the run's sequence length) must give. Both
-- figures are printed as integers: a row agrees when its error is within
-- that rounding (0.5 / TFLOP/s + 0.5 / tokens/s).
--
-- DeepSeek-V3 rows run with one MTP layer (Megatron-Bridge's recipe,
-- recipes/deepseek/h100/deepseek_v3.py: mtp_num_layers = 1) unless the
-- table says "w/o MTP". GPT-OSS alternates sliding-window (128 tokens) and
-- full attention; Megatron-Bridge counts the windowed layers' core at their
-- average context, pipesim counts every layer's as full causal attention
-- (not modelled: docs/moe.md), so its FLOPs per token are larger by the
-- gap printed in the note.
--
-- The step time (the second table): each row's plan simulated by ps.run
-- with the run's recipe, its tokens/s/GPU against the published one. The
-- recipes are Megatron-Bridge's performance configs of the row's release:
-- scripts/performance/configs/<model>/*_workload_base_configs.py at
-- 85211c3 (2025-12-09, 25.11), ccd05ead6 (2026-02-14, 26.02), 5ade62b
-- (2026-06-19, 26.06), and src/megatron/bridge/perf_recipes/ at 067f987
-- (26.08), with the model recipes they start from
-- (src/megatron/bridge/recipes/, training/flex_dispatcher_backend.py:
-- apply_flex_dispatcher_backend turns moe_flex_dispatcher_backend
-- "deepep"/"hybridep" into moe_token_dispatcher_type = "flex" on the GPUs
-- it supports). A row pipesim cannot express prints the setting that
-- refuses it. What every simulated row assumes: the recipe's TP, PP, VP,
-- EP (expert TP 1: every recipe's expert_tensor_parallel_size), MBS, GBS
-- and precision; the distributed optimizer with Megatron's overlapped
-- gradient reduce and parameter gather (40 M-element buckets); even
-- routing (moe_router_force_load_balancing); the uniform layer split
-- (the recipes' hand-written pipeline layouts are not expressed); the
-- recipe's selective recompute (its recompute_modules, STEP's rc; Qwen3's
-- recipes set recompute_granularity None); CUDA graphs and cuDNN norms not modelled (no launch
-- overheads are charged). Rows with many microbatches run the first m1
-- and m2 (multiples of the stages) and extrapolate the step linearly in
-- the microbatches, the steady state of the schedule: say so in the note.
local ps = require "pipesim"
local efficiency = require "pipesim.efficiency"

-- preset, MTP layers, release, system, GPUs, precision, global batch,
-- micro batch, sequence, TP, PP, VP (1: none), EP, tokens/s/GPU, model
-- TFLOP/s/GPU, and what the row's publisher says or does differently
local RUNS = {
    { "deepseek-v3", 1, "26.08", "GB200", 256, "MXFP8", 4096, 1, 4096, 1, 4, 4, 64, 4912, 1276 },
    { "deepseek-v3", 0, "25.11", "GB300", 256, "BF16", 4096, 1, 4096, 1, 2, 4, 32, 3848, 961 },
    { "deepseek-v3", 1, "25.11", "B200", 256, "MXFP8", 2048, 1, 4096, 1, 16, 1, 8, 2139, 557 },
    { "kimi-k2", 0, "26.06", "GB300", 256, "MXFP8", 4096, 2, 4096, 1, 4, 4, 64, 5372, 1099 },
    { "qwen3-235b-a22b", 0, "26.08", "GB200", 256, "MXFP8", 8192, 1, 4096, 1, 8, 3, 32, 7280, 1077 },
    { "qwen3-235b-a22b", 0, "26.02", "H100", 256, "FP8", 8192, 1, 4096, 2, 8, 4, 32, 1633, 242 },
    { "qwen3-30b-a3b", 0, "26.08", "GB200", 8, "MXFP8", 512, 4, 4096, 1, 1, 1, 8, 39936, 923 },
    { "qwen3-30b-a3b", 0, "26.06", "H100", 16, "FP8", 1024, 1, 4096, 1, 1, 1, 16, 8826, 203 },
    { "gpt-oss-120b", 0, "26.08", "GB200", 64, "MXFP8", 1280, 4, 4096, 1, 1, 1, 64, 28672, 934 },
    { "gpt-oss-120b", 0, "26.02", "H100", 64, "BF16", 1280, 1, 4096, 1, 4, 1, 8, 5993, 163,
      "26.02 counts 16% fewer FLOPs per token than 26.08 for the same model and sequence" },
}

-- GPT-OSS's sliding window and which layers use it (its config.json:
-- sliding_window 128, layer_types alternating sliding and full from the
-- first): Megatron-Bridge's FLOPs of the windowed layers' core, 6 x 2 q
-- ctx per token with ctx = w - w (w - 1) / (2 s), against full causal
-- attention's 6 x q s.
local function window_gap(layers, s)
    local sh = layers[2].shape
    local q, w, windowed = sh.heads * sh.head_dim, 128, sh.layers // 2
    local ctx = w - w * (w - 1) / (2 * s)
    return windowed * 6 * q * (s - 2 * ctx)
end

print("| model | release, system, GPUs, precision | TP/PP/VP/EP, MBS, GBS | published tok/s, "
    .. "TFLOP/s per GPU | GFLOP per token: published | pipesim | error | note |")
print("|---|---|---|---|---|---|---|---|")
local sum, worst, n = 0, 0, 0
for _, r in ipairs(RUNS) do
    local name, mtp, release, system, gpus, precision, gbs, mbs, s, tp, pp, vp, ep, tok, tf, says =
        table.unpack(r)
    local layers = ps.models.preset(name, { seq = s, microbatch = mbs, mtp_layers = mtp })
    local f = efficiency.figures({ layers = layers }, nil, nil)
    local mine, published = f.model_flops / f.tokens, tf * 1e12 / tok
    local err = mine / published - 1
    local note = math.abs(err) <= 0.5 / tf + 0.5 / tok and "within the rounding" or ""
    if name:find("gpt-oss", 1, true) then
        local gap = window_gap(layers, s)
        note = says or string.format("sliding window: pipesim counts %.2f GFLOP more (%+.2f%% without)",
            gap / 1e9, ((f.model_flops / f.tokens - gap) / published - 1) * 100)
    else
        sum, worst, n = sum + math.abs(err), math.max(worst, math.abs(err)), n + 1
    end
    print(string.format("| %s%s | %s, %s, %d, %s | %d/%d/%s/%d, %d, %d | %d, %d | %.2f | %.2f | %+.2f%% | %s |",
        name, mtp == 0 and name == "deepseek-v3" and " (w/o MTP)" or "", release, system, gpus,
        precision, tp, pp, vp > 1 and tostring(vp) or "-", ep, mbs, gbs, tok, tf, published / 1e9,
        mine / 1e9, err * 100, note))
end
print(string.format("\n%d rows but GPT-OSS's: mean |error| %.2f%%, max %.2f%%", n, sum / n * 100,
    worst * 100))

-- The step. Per row (as RUNS): the dispatcher the recipe ran
-- (moe_token_dispatcher_type, after apply_flex_dispatcher_backend), the
-- FP8 recipe (Megatron's --fp8-recipe: fp8_cs is tensorwise), the system
-- as a ps.clusters name, m1, m2 when the step is extrapolated from two
-- shorter runs (nil: simulated whole), and rc the recipe's
-- recompute_modules under selective recompute (nil: no recompute):
-- 067f987 perf_recipes/deepseek/gb200/deepseek_v3.py fp8mx ["mla_up_proj"];
-- 85211c3 deepseek_workload_base_configs.py GB300 ["moe_act"], B200
-- ["mla_up_proj"]; 5ade62b kimi_workload_base_configs.py GB300
-- ["mla_up_proj"]; 067f987 perf_recipes/gpt_oss/gb200/gpt_oss.py 120b
-- fp8mx [] (selective, nothing listed); ccd05ead6
-- gpt_oss_workload_base_configs.py H100 ["layernorm", "moe_act"].
-- overlap: the recipe's moe_a2a_overlap (Megatron's
-- overlap_moe_expert_parallel_comm, ps.run's ep_overlap: the combined
-- 1F1B, docs/moe.md), its value the SMs the dispatcher's kernels take
-- (Megatron-Core's moe_hybridep_num_sms, 16 unless the recipe sets it:
-- 32 in 067f987 perf_recipes/deepseek/common.py and gpt_oss/common.py;
-- moe_deepep_num_sms 20), over the device's SMs as ep_comm_share: the
-- rows of 26.08 perf_recipes on GB200 (their hybridep full-iteration
-- settings set overlap_moe_expert_parallel_comm and delay_wgrad_compute)
-- and 26.02 Qwen3-235B on H100 (moe_a2a_overlap = True in ccd05ead6
-- qwen3_workload_base_configs.py); memory: the optimizer's bytes when not
-- Adam's.
-- The optimizer state per parameter when a recipe runs Muon rather than
-- Adam (12 bytes: fp32 master, exp_avg, exp_avg_sq): the fp32 master and
-- the one fp32 momentum buffer, 8 bytes. Kimi K2's 26.06 row: "Muon
-- optimizer was used for pre-training Kimi-K2" (performance-summary.md at
-- 5ade62b), scripts/performance/argument_parser.py --optimizer_type
-- default "muon", recipes/kimi/kimi_k2.py distributed_muon_with_cosine_
-- annealing with fp32 main params (its layer-wise distributed optimizer
-- shards the state over the data-parallel ranks, as zero = 1 does), and
-- the common perf config's grad_reduce_in_fp32 = False (2-byte gradients).
local MUON = { weight_bytes = 2, grad_bytes = 2, optimizer_bytes = 8 }
local STEP = {
    { "flex", "mxfp8", "GB200", m1 = 16, m2 = 32, rc = { "mla_up_proj" }, overlap = 32,
      why = "26.08 perf_recipes/deepseek/common.py: hybridep on 32 SMs, a2a overlap" },
    { "alltoall", nil, "GB300", rc = { "moe_act" },
      skip = "over the default --max-memory: 143 M ops with 4 microbatches, every rank simulated (its EP groups span the replicas, so they do not fold)" },
    { "alltoall", "mxfp8", "B200", m1 = 32, m2 = 64, rc = { "mla_up_proj" },
      why = "25.11 B200 base config: no flex backend, PP 16 EP 8" },
    { "flex", "mxfp8", "GB300", m1 = 4, m2 = 8, rc = { "mla_up_proj" }, memory = MUON,
      why = "26.06 GB300 base config: hybridep; Muon (fp32 master and momentum, 8 bytes)" },
    { "flex", "mxfp8", "GB200", m1 = 32, m2 = 64, overlap = 16,
      why = "26.08 perf_recipes/qwen/gb200: hybridep, a2a overlap" },
    { "flex", "tensorwise", "H100", m1 = 32, m2 = 64, overlap = 20,
      why = "26.02 recipes/qwen/qwen3_moe.py: deepep, applied on Hopper; a2a overlap" },
    { "flex", "mxfp8", "GB200", overlap = 16,
      why = "26.08 perf_recipes/qwen/gb200: hybridep, a2a overlap" },
    { "flex", "tensorwise", "H100", why = "26.06 H100 base config: hybridep" },
    { "flex", "mxfp8", "GB200", rc = {}, overlap = 32,
      why = "26.08 perf_recipes/gpt_oss/common.py: hybridep on 32 SMs, a2a overlap" },
    { "alltoall", nil, "H100", rc = { "layernorm", "moe_act" },
      why = "26.02: no flex backend (alltoall)" },
}

-- SMs per GPU: H100 SXM 132 (NVIDIA H100 Tensor Core GPU Architecture
-- whitepaper), B200 148 (GB200's GPU; NVIDIA Blackwell architecture
-- technical brief)
local SMS = { H100 = 132, GB200 = 148, B200 = 148 }

-- One row's plan for ps.run, m microbatches a data-parallel replica.
local function plan(r, st, m)
    local name, mtp, _, _, gpus, _, _, mbs, s, tp, pp, vp, ep = table.unpack(r)
    local dispatcher, recipe, system = table.unpack(st)
    local layers = ps.models.preset(name, { seq = s, microbatch = mbs, mtp_layers = mtp,
        flash_attention = true, fp8 = recipe and "e4m3" or nil, fp8_recipe = recipe })
    -- GB200: the recipes' NVLink domains of 64 GPUs (their
    -- NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = 64: 16 of an NVL72's 18
    -- compute trays), one NIC a GPU; GB300 NVL72 racks are deployed alike
    local nvl72 = system == "GB200" or system == "GB300"
    local per = nvl72 and 64 or 8
    local over = nvl72 and { gpus_per_node = 64, nics_per_node = 64 } or nil
    local dp = gpus // (tp * pp)
    return { cluster = ps.cluster(ps.clusters.dgx(system, (gpus + per - 1) // per, over)),
             layers = layers, stages = pp, virtual_stages = vp > 1 and vp or nil,
             schedule = vp > 1 and "interleaved" or "1f1b", tp = tp, etp = 1,
             sequence_parallel = tp > 1 or nil, dp = dp, ep = ep, microbatches = m,
             moe_dispatcher = dispatcher, zero = 1, record = "summary",
             ep_overlap = st.overlap and true or nil, memory = st.memory,
             ep_comm_share = st.overlap and st.overlap / SMS[system] or nil,
             recompute = st.rc and "selective" or nil, recompute_modules = st.rc,
             grad_sync = { bucket = 40e6 * 4, first_bucket = 40e6 * 4, bucketed = "first",
                           overlap_param_gather = dp > 1 or nil },
             name = string.format("%s %s %d", name, system, gpus) }
end

-- The step table: -D step=1 (minutes of CPU: the 256-GPU rows simulate
-- every all-to-all flow); -D quick=1 (the test suite) runs the rows of
-- at most 64 GPUs simulated whole; -D row=N with either, the N-th only.
local QUICK = ps.args.quick ~= nil
-- -D row=N: only the N-th row (from 1) of the step table
local ROW = ps.args.row and math.tointeger(tonumber(ps.args.row))
if ps.args.row and not (ROW and RUNS[ROW]) then
    error(string.format("-D row=%s: not a row of the table (1 to %d)", ps.args.row, #RUNS), 0)
end
if ps.args.step or QUICK then
    print("\n| model | system, GPUs, precision | TP/PP/VP/EP, m | published tok/s/GPU | pipesim "
        .. "| error | fits | note |")
    print("|---|---|---|---|---|---|---|---|")
    local ssum, sworst, sn, refused, skipped, ran = 0, 0, 0, 0, 0, 0
    for k, r in ipairs(RUNS) do
        if QUICK and (STEP[k].m1 or r[5] > 64) then goto next end
        if ROW and k ~= ROW then goto next end
        ran = ran + 1
        local name, _, _, system, gpus, precision, gbs, mbs, _, tp, pp, vp, ep, tok = table.unpack(r)
        local st = STEP[k]
        local dp = gpus // (tp * pp)
        local m = gbs // (mbs * dp)
        local ok, res = pcall(function()
            if st.skip then error(st.skip, 0) end
            if not st.m1 then return { step = ps.run(plan(r, st, m)) } end
            local a, b = ps.run(plan(r, st, st.m1)), ps.run(plan(r, st, st.m2))
            local t = b.makespan + (m - st.m2) * (b.makespan - a.makespan) / (st.m2 - st.m1)
            return { step = b, makespan = t }
        end)
        local head = string.format("| %s | %s, %d, %s | %d/%d/%s/%d, %d | %d |", name, system, gpus,
            precision, tp, pp, vp > 1 and tostring(vp) or "-", ep, m, tok)
        if ok then
            local t = res.makespan or res.step.makespan
            local mine = gbs * r[9] / (gpus * t)
            local err = mine / tok - 1
            ssum, sworst, sn = ssum + math.abs(err), math.max(sworst, math.abs(err)), sn + 1
            local note = {}
            note[#note + 1] = st.why
            note[#note + 1] = st.m1 and string.format("%d and %d microbatches simulated, extrapolated",
                st.m1, st.m2)
            print(string.format("%s %.0f | %+.1f%% | %s | %s |", head, mine, err * 100,
                res.step.fits and "yes" or "no", table.concat(note, "; ")))
        else
            if st.skip then skipped = skipped + 1 else refused = refused + 1 end
            local msg = tostring(res):gsub("^.-%.lua:%d+: ", ""):gsub("^ps%.%w+: ", ""):gsub("|", "/")
            print(string.format("%s - | - | - | %s: %s%s |", head,
                st.skip and "not simulated" or "refused", msg,
                st.why and ("; " .. st.why) or ""))
        end
        ::next::
    end
    print(string.format("\n%d of %d rows simulated: mean |error| %.1f%%, max %.1f%%; %d refused, "
        .. "%d expressible but not simulated here", sn, ran, sn > 0 and ssum / sn * 100 or 0,
        sworst * 100, refused, skipped))
end
