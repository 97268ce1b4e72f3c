-- FP8 training as Transformer Engine runs it under Megatron-LM: which
-- GEMMs run in FP8, what the quantisation kernels move, what the FP8
-- weight copies and saved activations weigh. Pure functions of a
-- normalized shape (models/transformer.lua: fp8, fp8_recipe, fp8_params,
-- fp8_wgrad, fp8_head) and a roofline device (clusters.lua: fp8_flops,
-- fp8_gemm_max, fp8_block_gemm_max, mx_block); models/roofline.lua charges
-- the times, parallel.lua the memory.
--
-- What runs in FP8 (Megatron-Core 0.20.0, d98e8a6; Transformer Engine
-- 2.x): the transformer layers' TE linear modules (QKV, attention output
-- projection, fc1, fc2) inside fp8_autocast, forward (fprop), data
-- gradient (dgrad) and weight gradient (wgrad, unless --no-fp8-wgrad).
-- The attention core (TEDotProductAttention: no FP8 attention flag in
-- Megatron-Core 0.20), the embedding and the output layer stay BF16; the
-- output layer runs under MXFP8 only with --fp8-output-proj and the mxfp8
-- recipe (megatron/core/fp8_utils.py is_mxfp8_output_proj_active). With
-- --first-last-layers-bf16 the first --num-layers-at-start-in-bf16 and
-- last --num-layers-at-end-in-bf16 layers of the model (global layer
-- numbers, is_first_last_bf16_layer) run in BF16; Megatron refuses that
-- with delayed scaling ("Delayed scaling does not support first / last
-- layer in BF16", get_fp8_context).
local check = require "pipesim.argcheck"

local M = {}

-- Megatron's --fp8-recipe names (TransformerConfig.fp8_recipe) and the TE
-- recipe each maps to (megatron/core/fp8_utils.py get_fp8_recipe):
-- delayed -> DelayedScaling (scale from the amax history of earlier
-- steps, amax taken in the cast kernel), tensorwise -> Float8CurrentScaling
-- (the tensor's own amax first, then the cast), blockwise ->
-- Float8BlockScaling (1x128 activation and 128x128 weight blocks, fp32
-- scales), mxfp8 -> MXFP8BlockScaling (32-element blocks, E8M0 scales).
-- The value: the GEMM kind (clusters.gemm_efficiency).
M.RECIPES = { delayed = "tensor", tensorwise = "tensor", blockwise = "block", mxfp8 = "block" }
M.FORMATS = { e4m3 = true, hybrid = true }

-- fp32 scale bytes per element of Hopper's blockwise recipe: one 4-byte
-- scale per 128 elements (activations, each of the row- and column-wise
-- copies) or per 128 x 128 (weights)
local BLOCK_ACT_SCALE, BLOCK_WEIGHT_SCALE = 4 / 128, 4 / (128 * 128)

-- plan(s, dev) -> nil for a BF16 layer, else the FP8 costs of its recipe
-- on dev: { gemm = "tensor" | "block", quant = bytes a quantised input
-- moves per element when both its row-wise copy (this GEMM) and its
-- column-wise copy (the backward's GEMM) are made, quant_row = with the
-- row-wise copy only, cache = bytes per linear parameter of the FP8
-- weight copies beside a 16-bit weight, param = bytes per linear
-- parameter of FP8 parameters (fp8_params: the weight itself in FP8) }.
-- Raises naming the device where it has no FP8 tensor cores, and for
-- mxfp8 on a device without MX block scaling.
--
-- Bytes per element of an e-byte input (the kernels of TE's quantizers):
-- Hopper's FP8 GEMMs take only "TN" operands, so the backward's copy is a
-- transpose, made in the same pass as the cast (cast_transpose):
--   delayed      read e, write 1 + 1 (amax taken in the cast kernel)
--   tensorwise   an amax pass (read e), then read e, write 1 + 1
--   blockwise    read e, write 1 + 1 and a 4-byte scale per 128 of each
-- Blackwell's FP8 GEMMs take any layout, so a tensor-scaled copy serves
-- both GEMMs (TE's non-TN FP8 GEMM path): delayed e + 1, tensorwise 2e + 1;
-- MX scales run along the reduction dimension, so MXFP8 (and TE's
-- blockwise recipe, "emulated via MXFP8" on Blackwell) makes both copies
-- with their scales: e + 2 + 2/32. Checked against TE's own GEMM benchmark
-- (docs/examples/gemm_profiling): on an H200 NVL, current scaling's
-- quantisation of the benchmark's operands comes to 3.449 ms by these
-- bytes at the HBM rate against 3.500 measured (autocast less pre-
-- quantized, tests/lua/test_fp8.lua).
function M.plan(s, dev)
    if not s.fp8 then return nil end
    if not dev.fp8_flops then
        check.fail("fp8: the device %s has no FP8 tensor cores (no fp8_flops: A100 and older " ..
            "train in 16 bits); use an H100, H200, H800, B200, GB200 or GB300, or drop fp8",
            check.show(dev.name or "of this cluster"))
    end
    local e = s.dtype == "fp32" and 4 or 2
    local recipe = s.fp8_recipe
    local mx = dev.mx_block
    if recipe == "mxfp8" and not mx then
        check.fail("fp8_recipe 'mxfp8': the device %s has no MX block scaling in its tensor " ..
            "cores (Blackwell has); use 'delayed', 'tensorwise' or 'blockwise'",
            check.show(dev.name or "of this cluster"))
    end
    local p = { gemm = M.RECIPES[recipe] }
    if mx and (recipe == "mxfp8" or recipe == "blockwise") then
        local sc = 1 / mx -- one E8M0 byte per block
        p.gemm = "block"
        p.quant, p.quant_row = e + 2 + 2 * sc, e + 1 + sc
        p.cache, p.param = 2 + 2 * sc, 2 + 2 * sc
    elseif recipe == "blockwise" then
        p.quant, p.quant_row = e + 2 + 2 * BLOCK_ACT_SCALE, e + 1 + BLOCK_ACT_SCALE
        p.cache, p.param = 2 + 2 * BLOCK_WEIGHT_SCALE, 2 + 2 * BLOCK_WEIGHT_SCALE
    else
        local amax = recipe == "tensorwise" and e or 0
        local copies = mx and 1 or 2 -- Hopper: the transpose too
        p.quant, p.quant_row = amax + e + copies, amax + e + 1
        p.cache, p.param = copies, copies
    end
    if not s.fp8_wgrad then
        -- --no-fp8-wgrad: the weight gradient in BF16 from the 16-bit
        -- input and output gradient; FP8 copies for fprop and dgrad only
        p.quant = p.quant_row
        p.wgrad_bf16 = true
    end
    return p
end

-- Static bytes per linear parameter beyond the run's weight_bytes: the
-- FP8 weight copies TE caches for the step (Megatron passes
-- is_first_microbatch, so weights are quantised once per step and kept),
-- or with fp8_params the FP8 parameter and its copies in place of the
-- 16-bit weight (weight_bytes, 2: negative when they weigh less).
function M.weight_bytes(s, dev, weight_bytes)
    local p = M.plan(s, dev)
    if not p then return 0 end
    if s.fp8_params then return p.param - weight_bytes end
    return p.cache
end

-- Bytes per parameter the distributed optimizer all-gathers for a linear
-- weight: FP8 with fp8_params (Megatron's --fp8-param-gather: "perform the
-- param all-gather in fp8"), else the 16-bit weight. For the data-parallel
-- pass (ZeRO / FSDP), which gathers linear weights at this size and every
-- other parameter at weight_bytes.
function M.gather_bytes(s, weight_bytes)
    if s.fp8 and s.fp8_params then return 1 end
    return weight_bytes
end

-- Activation bytes per token a block keeps beyond (negative: short of)
-- its 16-bit figure (transformer.block_act_bytes), at tp = 1, as
-- { repl, split }: the parts replicated on TP ranks (split by t under
-- sequence parallelism) and the parts split by t. TE saves each FP8 GEMM's
-- input for the weight gradient as its FP8 column-wise copy (1 byte an
-- element; the 16-bit tensor is freed unless another op keeps it):
--   QKV and fc1 inputs (the norms' outputs): e -> 1        (repl)
--   attention output projection input: the attention kernel keeps its
--     16-bit output O for its backward (flash), so the FP8 copy is extra
--     (+1); unfused attention keeps none (e -> 1)          (split)
--   fc2 input (the activation's output; the activation keeps its own
--     input): e f -> f                                      (split)
-- With --no-fp8-wgrad the 16-bit inputs are kept: no change.
function M.act_delta(s)
    if not s.fp8 or not s.fp8_wgrad then return 0, 0 end
    local e = s.dtype == "fp32" and 4 or 2
    local q, f = s.heads * s.head_dim, s.ffn_hidden
    local repl = 2 * (1 - e) * s.hidden
    local proj = s.flash_attention and q or (1 - e) * q
    return repl, proj + (1 - e) * f
end

-- FP8 amax reductions: the collectives Transformer Engine issues to agree
-- on a scale (TE v2.9, the 2.x of Megatron-Core 0.20). Both are blocking:
-- the compute stream waits for them.
--
-- Current scaling (tensorwise), under sequence parallelism: a quantiser
-- whose input TE all-gathers over the TP group (the column-parallel
-- linears' input forward, the row-parallel linears' output gradient
-- backward) reduces its amax over that group before the cast:
-- module/linear.py, layernorm_linear.py _customize_quantizers_float8_
-- current_scaling (with_amax_reduction, amax_reduction_group = tp_group),
-- csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl (a
-- c10d allreduce MAX of the one fp32 amax, then ->wait()), on the NCCL and
-- the userbuffers all-gather paths alike. A Megatron block's TE linears:
-- QKV and fc1 column-parallel, the attention's projection and fc2 row-
-- parallel, so 2 all-reduces of 4 bytes forward and 2 backward.
M.TP_AMAX_FWD, M.TP_AMAX_BWD, M.TP_AMAX_BYTES = 2, 2, 4
function M.tp_amax_reductions(s, tp, sp)
    if s.fp8 and s.fp8_recipe == "tensorwise" and sp and tp > 1 then
        return M.TP_AMAX_FWD, M.TP_AMAX_BWD
    end
    return 0, 0
end

-- Delayed scaling: every amax of an fp8_autocast region is reduced at
-- once, over the region's fp8_group: quantization.py
-- FP8GlobalStateManager.reduce_and_update_fp8_tensors (torch.cat of the
-- buffer, all_reduce MAX, async_op=False), forward at the outermost
-- autocast's exit (autocast_exit), backward once the region's first FP8
-- module has run its backward (is_first_fp8_module, layernorm_linear.py
-- reduce_and_update_bwd_fp8_tensors). Megatron-Core 0.20 opens one
-- region per TransformerBlock forward with delayed scaling
-- (transformer_block.py use_outer_quantization_context), its group the
-- tensor-, context- and data-parallel ranks of the pipeline stage
-- (fp8_utils.py get_fp8_context: get_amax_reduction_group(
-- with_context_parallel=True), parallel_state.py _TENSOR_AND_DATA_
-- PARALLEL_GROUP_WITH_CP). So one all-reduce forward and one backward per
-- model chunk and microbatch. Its bytes: each TE module's amax_history[0],
-- 3 fp32 a GEMM forward (input, weight, output) and 2 backward (output
-- and input gradients; base.py init_fp8_meta_tensors), 4 single-GEMM
-- modules a block.
M.DELAYED_FWD_BYTES, M.DELAYED_BWD_BYTES = 4 * 3 * 4, 4 * 2 * 4
function M.delayed(s)
    return s.fp8 and s.fp8_recipe == "delayed" or false
end

return M
