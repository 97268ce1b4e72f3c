#!/usr/bin/env python3
"""Writes lua/pipesim/models/megatron_flags.lua: every command-line flag of
Megatron-LM's training parser (megatron/training/arguments.py,
add_megatron_arguments), its default, and the flags pipesim lists as
ignored (they change no step time or memory) or defers (context
parallelism, sharded data parallelism: the next dimensions of issue 23).

Input: a JSON dump of the parser's actions (one object per action: flags,
dest, default, action, choices, group), made by building the parser of a
Megatron-LM checkout with its heavy imports (torch, transformer_engine,
...) stubbed. Usage: megatron_flags_gen.py args.json SOURCE > out.lua
"""
import json
import re
import sys

# whole argument groups that change no training step's time or memory
IGNORED_GROUPS = {
    "checkpointing", "validation", "learning rate and weight decay", "regularization",
    "RNG and initialization", "logging", "profiling", "rerun engine", "autoresume",
    "one logger", "ft_package", "straggler", "workload inspector", "In-process restart",
    "fault injector", "opentelemetry", "msc", "inference", "options",
}
# and single flags of the other groups (tokenizer: all but the sizes)
IGNORED = set("""
train_iters train_samples exit_interval exit_duration_in_mins exit_signal_handler exit_signal
exit_signal_handler_for_dataloader exit_signal_handler_for_training iterations_to_skip
no_check_for_nan_in_loss_and_grad check_for_large_grads result_rejected_tracker_filename
dataloader_type check_weight_hash_across_dp_replicas_interval gpu_sniff_test_interval
train_sync_interval use_mcore_models use_flash_attn no_persist_layer_norm manual_gc
manual_gc_interval no_manual_gc_eval empty_unused_memory_level rampup_batch_size
decrease_batch_size_if_needed step_batch_size_schedule
loss_scale initial_loss_scale min_loss_scale loss_scale_window hysteresis
data_path split train_data_path valid_data_path test_data_path data_args_path
per_split_data_args_path per_dataset_sequences_path dataloader_fast_cache_load
dataloader_defer_npy_index_mmap data_cache_path no_mmap_bin_files mock_data num_workers
reset_position_ids eod_mask_loss num_dataset_builder_threads object_storage_cache_path
mid_level_dataset_surplus allow_ambiguous_pad_tokens sample_rate mask_prob short_seq_prob
phase_transition_iterations no_create_attention_mask_in_dataloader
fim_data fim_rate fim_spm_rate fim_split_sample fim_fragment_rate fim_no_prefix
fim_prefix_token fim_middle_token fim_suffix_token fim_pad_token fim_eod_token
distributed_backend distributed_timeout_minutes local_rank lazy_mpu_init
nccl_communicator_config_path disable_gloo_process_groups distributed_timeout_seconds_after_init
flight_recorder_dump_path flight_recorder_trace_buffer_size no_flight_recorder_dump_on_timeout
flight_recorder_include_stack_trace no_flight_recorder_include_only_active
no_flight_recorder_extra_dump_on_exec fake_process_group ddp_average_in_collective
no_gradient_reduce_div_fusion
no_initialization use_cpu_initialization init_method_std embedding_init_method_std
init_model_with_meta_device norm_epsilon apply_layernorm_1p apply_query_key_layer_scaling
rotary_interleaved config_logger_dir tp_comm_bootstrap_backend calculate_per_token_loss
mup_width_mult mup_base_hidden_size mup_embedding_mult mup_output_mult mup_base_head_dim
mup_attn_scale_power use_mup fp8_margin fp8_interval fp8_amax_history_len fp8_amax_compute_algo
flash_decode symmetric_ar_type nccl_all_reduce_for_prefill inference_fuse_tp_communication
inference_disable_triton_nvls_kernels inference_grouped_gemm_backend
inference_moe_disable_fused_quant_kernels inference_moe_token_dispatcher_type
mlp_chunks_for_prefill inference_cuda_graph_scope
rotary_base rotary_percent rotary_seq_len_interpolation_factor use_rope_scaling
rope_scaling_factor yarn_original_max_position_embeddings yarn_beta_fast yarn_beta_slow
yarn_correction_range_round_to_int no_yarn_correction_range_round_to_int onnx_safe
vocab_file merge_file vocab_extra_ids tokenizer_type tokenizer_model tokenizer_metadata
tokenizer_special_tokens tiktoken_pattern tiktoken_num_special_tokens
tokenizer_sentencepiece_legacy no_tokenizer_sentencepiece_ignore_extra_whitespaces
tokenizer_hf_no_use_fast tokenizer_hf_no_include_special_tokens trust_remote_code
null_tokenizer_eod_id null_tokenizer_pad_id chat_template use_gigatoken
""".split())
# context parallelism and sharded data parallelism: mapped with those
# dimensions (issue 23's next engineer)
DEFERRED = {
    "context parallelism": set("""context_parallel_size cp_comm_type
        hierarchical_context_parallel_sizes max_seqlen_per_dp_cp_rank hybrid_context_parallel""".split()),
    "sharded data parallelism (ZeRO-2/3, FSDP)": set("""use_megatron_fsdp use_torch_fsdp2
        data_parallel_sharding_strategy outer_dp_sharding_strategy fsdp_double_buffer
        suggested_communication_unit_size keep_fp8_transpose_cache enable_full_sharding_in_hsdp
        num_distributed_optimizer_instances torch_fsdp2_no_reshard_after_forward
        megatron_fsdp_version no_use_layer_wise_param_layout fsdp_manual_registration
        create_all_gather_group megatron_fsdp_main_params_dtype megatron_fsdp_main_grads_dtype
        megatron_fsdp_grad_comm_dtype megatron_fsdp_enable_fine_grained_param_gather
        megatron_fsdp_max_pool_double_buffer fsdp_db_use_persist_buf_on_alloc_fail""".split()),
}


def lua_value(v):
    if v is None:
        return "NONE"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if v != v or v in (float("inf"), float("-inf")):
            return "NONE"
        return repr(v)
    if isinstance(v, list):
        return "{ " + ", ".join(lua_value(x) for x in v) + " }" if v else "NONE"
    s = str(v)
    m = re.match(r"<\w+\.(\w+): .*>$", s)  # an enum's repr: its member's name
    if m:
        s = m.group(1)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def wrap(items, indent="    ", width=100):
    lines, cur = [], indent
    for it in items:
        if len(cur) + len(it) + 1 > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += it + " "
    if cur.strip():
        lines.append(cur.rstrip())
    return "\n".join(lines)


def main():
    actions = json.load(open(sys.argv[1]))
    source = sys.argv[2]
    defaults, ignored, deferred = {}, [], {}
    for a in actions:
        switch = a["action"] in ("_StoreTrueAction", "_StoreFalseAction", "BooleanOptionalAction")
        for flag in a["flags"]:
            if not flag.startswith("--"):
                continue
            name = flag[2:].replace("-", "_")
            defaults[name] = "false" if switch else lua_value(a["default"])
            if a["group"] in IGNORED_GROUPS or name in IGNORED or (
                    a["group"] == "tokenizer" and name not in ("vocab_size", "padded_vocab_size",
                                                               "no_pad_vocab_size")):
                ignored.append(name)
            for topic, names in DEFERRED.items():
                if name in names:
                    deferred[name] = topic
    out = []
    out.append("-- Megatron-LM's training flags (generated by tests/data/megatron_flags_gen.py;")
    out.append("-- do not edit): every flag of " + source + ",")
    out.append("-- dashes as underscores, with the value pipesim reads as Megatron's default")
    out.append("-- (false for a switch not given; NONE where argparse's default is None),")
    out.append("-- the flags that change no step time or memory (ignored, listed), and")
    out.append("-- those left to the next dimensions (deferred).")
    out.append("local M = {}")
    out.append("M.SOURCE = " + lua_value(source))
    out.append('M.NONE = setmetatable({}, { __tostring = function() return "None" end })')
    out.append("local NONE = M.NONE")
    out.append("M.DEFAULTS = {")
    items = [f"{k} = {v}," for k, v in sorted(defaults.items())]
    out.append(wrap(items))
    out.append("}")
    out.append("M.IGNORED = {}")
    out.append("for name in ([[")
    out.append(wrap(sorted(set(ignored)), indent=""))
    out.append("]]):gmatch(\"%S+\") do M.IGNORED[name] = true end")
    out.append("M.DEFERRED = {")
    for topic in DEFERRED:
        names = sorted(k for k, v in deferred.items() if v == topic)
        out.append(f"    [{lua_value(topic)}] = [[")
        out.append(wrap(names, indent="        "))
        out.append("    ]],")
    out.append("}")
    out.append("return M")
    print("\n".join(out))


main()
