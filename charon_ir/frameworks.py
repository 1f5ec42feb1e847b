"""Framework presets: what a training stack turns on when its user does not say.

A published run states its parallel layout, batch and precision; it rarely states
what its framework does by default (Megatron-Core's distributed optimizer,
sequence parallelism with tp > 1, overlapped gradient reduce and parameter
gather, tp-comm overlap, the fp8 recipe). `--framework NAME` fills every setting
the user left unset from the stack's documented defaults; a flag given overrides
it. `resolve` returns the configuration in force and, per setting, where its
value came from (the report's `framework` key).

A preset is a list of rules evaluated in order, each seeing the settings already
in force (what the user gave and the rules before it), since a default depends on
the layout: sequence parallelism only with tp > 1, parameter gathers overlapped
only under a sharded optimizer, Megatron-Core's bucket size from dp. The source
of every default is in docs/calibration.md ("Framework presets").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from charon_ir.errors import CharonError

DEFAULT_FRAMEWORK = "megatron-core"
"""What `charon simulate` assumes when `--framework` is not given: the stack a
user trains with today (Megatron-Core as its example scripts and NeMo /
Megatron-Bridge run it)."""

Resolved = Mapping[str, Any]
"""The settings in force so far: the user's, then each rule's in turn."""


@dataclass(frozen=True)
class Rule:
    """One default of a preset: `setting` (a TrainingConfig field) takes
    `value(resolved)` unless the user gave it."""

    setting: str
    value: Callable[[Resolved], Any]
    why: str
    """The framework's own name for it and where it is documented."""
    applies: Callable[[Resolved], bool] = lambda resolved: True
    """Whether the setting means anything in this run (an fp8 recipe under bf16
    does not): a rule that does not apply leaves the setting to the defaults."""


@dataclass(frozen=True)
class Framework:
    name: str
    summary: str
    rules: tuple[Rule, ...]


def megatron_core_bucket_mb(dp: int, element_bytes: int = 2) -> int:
    """Megatron-Core's gradient bucket when `--ddp-bucket-size` is not given:
    max(40M, 1M x dp) parameters (megatron/core/distributed/
    distributed_data_parallel.py, r0.8), in MiB of bf16 gradients."""
    return -(-max(40_000_000, 1_000_000 * dp) * element_bytes // 2**20)


def _data_parallel(resolved: Resolved) -> int:
    """The dense replicas (gpus / (tp pp cp) when --dp is unset), as
    TrainingConfig.data_parallel counts them; 1 where the layout is no layout
    (a count below 1, or degrees that do not divide: the configuration's own
    checks name that)."""
    if resolved.get("dp", 0) > 0:
        return int(resolved["dp"])
    model_parallel = resolved.get("tp", 1) * resolved.get("pp", 1) * resolved.get("cp", 1)
    return max(1, resolved.get("gpus", 8) // model_parallel) if model_parallel > 0 else 1


def _sharded_optimizer(resolved: Resolved) -> bool:
    return not resolved.get("fsdp") and resolved.get("zero", 0) in (1, 2)


def _has_experts(resolved: Resolved) -> bool:
    return resolved.get("ep", 1) > 1


def _is_blackwell(resolved: Resolved) -> bool:
    return str(resolved.get("hardware", "")).upper().startswith(("B200", "GB200", "B300", "GB300"))


def _is_fp8(resolved: Resolved) -> bool:
    return resolved.get("precision") == "fp8"


def _non_interleaved_pipeline(resolved: Resolved) -> bool:
    return resolved.get("pp", 1) > 1 and resolved.get("vpp", 1) <= 1


_MEGATRON_CORE: tuple[Rule, ...] = (
    Rule("fp8_weight_cache", lambda r: True,
         "TE modules called with is_first_microbatch, set on each chunk's first micro-batch of a step "
         "(set_is_first_microbatch, megatron/core/pipeline_parallel/schedules.py; extensions/"
         "transformer_engine.py): fp8 weights cast once per step, cached for the later micro-batches",
         applies=_is_fp8),
    Rule("sequence_parallel", lambda r: r.get("tp", 1) > 1,
         "--sequence-parallel with tp > 1 (Megatron-Core example scripts, NeMo/Megatron-Bridge recipes)"),
    Rule("zero", lambda r: 0 if r.get("fsdp") else 1,
         "--use-distributed-optimizer: optimizer states and fp32 master weights sharded over dp x cp "
         "(ZeRO-1)"),
    Rule("dp_overlap", lambda r: True, "--overlap-grad-reduce: each bucket reduced as its backward ends"),
    Rule("dp_overlap_param_gather", _sharded_optimizer,
         "--overlap-param-gather: updated parameters gathered in the next forward"),
    Rule("dp_bucket_mb", lambda r: megatron_core_bucket_mb(_data_parallel(r) * max(1, r.get("cp", 1))),
         "ddp bucket size max(40M, 1M x dp x cp) parameters (distributed_data_parallel.py)"),
    Rule("tp_comm_overlap", lambda r: bool(r.get("sequence_parallel")) and r.get("tp", 1) > 1,
         "--tp-comm-overlap: Transformer Engine userbuffers overlap tp all-gathers / reduce-scatters "
         "with their GEMMs (NeMo/Megatron-Bridge performance recipes)"),
    Rule("etp", lambda r: r.get("tp", 1),
         "--expert-tensor-parallel-size defaults to --tensor-model-parallel-size (megatron/training/"
         "arguments.py validate_args): each expert split over the tp ranks", applies=_has_experts),
    Rule("moe_a2a_overlap", lambda r: False,
         "overlap_moe_expert_parallel_comm defaults to False (megatron/core/model_parallel_config.py): "
         "the token "
         "dispatchers call the all_to_all synchronously (tensor_parallel/mappings.py _AllToAll: "
         "all_to_all_single without async_op; transformer/moe/fused_a2a.py FusedDispatch/FusedCombine "
         "async_finish=False), so no compute runs beside a dispatch or combine", applies=_has_experts),
    Rule("pp_send_overlap", lambda r: False,
         "non-interleaved 1F1B waits for every send: forward_backward_pipelining_without_interleaving "
         "calls send_forward / send_forward_recv_backward / send_backward_recv_forward, whose "
         "_communicate runs with wait_on_reqs=True (req.wait() on each batch_isend_irecv request, then "
         "torch.cuda.synchronize() under batch_p2p_sync; megatron/core/pipeline_parallel/"
         "p2p_communication.py); overlap_p2p_comm only reaches the interleaved schedule (validate_args "
         "sets it False without vpp; with vpp it defaults on: --no-overlap-p2p-communication, and "
         "Megatron-Bridge/NeMo comm_overlap set overlap_p2p_comm=True, batch_p2p_comm=False)",
         applies=_non_interleaved_pipeline),
)


def expert_launches_per_gemm(precision: str, fp8_recipe: str) -> float:
    """Launches the host issues per local expert for each GEMM op of a routed
    expert (a layer runs six: fc1 and fc2 forward, their dgrad and wgrad), as
    Transformer Engine's `_GroupedLinear` runs them (docs/calibration.md, "Host
    launches of a Megatron-Core MoE layer"): a cuBLAS GEMM per expert
    (`general_grouped_gemm`), and in fp8 a quantization of each expert's input
    (forward) and output gradient (backward, shared by dgrad and wgrad): current
    scaling 3 kernels a tensor (amax, scale, cast), MXFP8 / blockwise 1, delayed
    scaling one multi-tensor cast for all experts (`fused_multi_quantize`)."""
    if precision != "fp8" or fp8_recipe == "delayed":
        return 1.0  # 6 GEMMs a layer and expert
    per_tensor = 3 if fp8_recipe == "current" else 1
    # 6 GEMMs plus 4 quantized tensors (2 inputs, 2 output gradients) per expert
    return (6 + 4 * per_tensor) / 6


_MOE_HOST: tuple[Rule, ...] = (
    Rule("expert_launches", lambda r: expert_launches_per_gemm(r.get("precision", "bf16"),
                                                               r.get("fp8_recipe", "delayed")),
         "TEGroupedMLP (moe_grouped_gemm with Transformer Engine) runs each expert linear as TE's "
         "GroupedLinear: one cuBLAS GEMM per local expert (general_grouped_gemm), each expert's fp8 "
         "operand quantized on its own (grouped_linear.py); counts with --host-launch-us only",
         applies=_has_experts),
    Rule("moe_host_sync", lambda r: True,
         "dropless dispatch: TEGroupedMLP.forward reads tokens_per_expert.tolist() (megatron/core/"
         "transformer/moe/experts.py:645, 0.16.1), a device-to-host sync per MoE layer forward; "
         "counts with --host-launch-us only", applies=_has_experts),
)


_FP32_MAIN_GRADS = Rule(
    "grad_bytes", lambda r: 4,
    "fp32 main gradients: --bf16 sets accumulate_allreduce_grads_in_fp32 unless --grad-reduce-in-bf16 "
    "(megatron/training/arguments.py validate_args)")


def _fp8_recipe(default_hopper: str, why: str) -> Rule:
    return Rule("fp8_recipe", lambda r: "mxfp8" if _is_blackwell(r) else default_hopper, why,
                applies=_is_fp8)


_MEGATRON_LM_2021: tuple[Rule, ...] = (
    Rule("fuse_attention", lambda r: False,
         "no flash attention: fused scale-mask-softmax around materialised scores (before 2023)"),
    Rule("dp_overlap", lambda r: False,
         "local DDP: allreduce_gradients() after the whole backward (`DDP_impl local`)"),
    Rule("pipeline_scatter_gather", lambda r: True,
         "scatter_gather_tensors_in_pipeline: tp-replicated activations cross stages as 1/tp slices"),
    Rule("blocking_comm", lambda r: ("tp",),
         "every tensor-parallel all-reduce waited for (megatron/mpu)"),
    Rule("pp_send_overlap", lambda r: False,
         "every batched isend/irecv waited for (megatron/p2p_communication.py)",
         applies=lambda r: r.get("pp", 1) > 1),
    Rule("optimizer", lambda r: "unfused-fp16",
         "Float16OptimizerWithFloat16Params around apex FusedAdam: copy, unscale, norm as own kernels"),
    Rule("unfused_grad_accumulation", lambda r: True,
         "param.main_grad.add_(param.grad) per micro-batch (gradient-accumulation fusion came mid-2022)"),
    Rule("keep_stage_outputs", lambda r: r.get("pp", 1) > 1,
         "megatron/schedules.py keeps each output tensor in output_tensors until its backward_step; "
         "pseudo-freeing it once sent (free_output_tensor, --deallocate-pipeline-outputs) came in 2022"),
)

_MEGATRON_LM_2022: tuple[Rule, ...] = tuple(
    rule for rule in _MEGATRON_LM_2021
    # the column-parallel backward all-reduce overlaps the weight-gradient GEMM (async
    # tensor-model-parallel all-reduce): no blocking tp; Korthikanti et al.'s code frees
    # a sent output (no keep_stage_outputs); batched isend/irecv still waited for
    if rule.setting not in ("blocking_comm", "keep_stage_outputs")
)

def _zero3(resolved: Resolved) -> bool:
    return bool(resolved.get("fsdp")) or resolved.get("zero", 0) == 3


_DEEPSPEED_STAGE_OUTPUTS = Rule(
    "keep_stage_outputs", lambda r: r.get("pp", 1) > 1,
    "PipelineEngine keeps each micro-batch's forward output in pipe_buffers['outputs'] until "
    "_exec_backward_pass sets it to None after its backward (deepspeed/runtime/pipe/engine.py); with "
    "tp > 1 it keeps a 1/tp PartitionedTensor of the first output, counted here whole")

_DEEPSPEED_BLOCKING_SENDS = Rule(
    "pp_send_overlap", lambda r: False,
    "PipelineEngine's SendActivation / SendGrad call p2p.send, which asserts async_op == False and "
    "runs dist.send (deepspeed/runtime/pipe/p2p.py): the stage's compute waits for each send",
    applies=lambda r: r.get("pp", 1) > 1)

_DEEPSPEED_LIVE_PARAMETERS = Rule(
    "zero3_live_params", lambda r: 1_000_000_000 + 50_000_000,
    "ZeRO-3 gathers module by module: stage3_max_live_parameters 1e9 plus stage3_prefetch_bucket_size "
    "5e7 elements at most (deepspeed/runtime/zero/constants.py)", applies=_zero3)


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework("none", "only what the flags say: no framework's defaults", ()),
        Framework(
            "megatron-core",
            "Megatron-Core (r0.8 on): distributed optimizer, sequence parallelism, overlapped grad "
            "reduce / param gather, tp-comm overlap, fp32 main gradients; fp8 with delayed scaling "
            "(MXFP8 on Blackwell)",
            (*_MEGATRON_CORE, _FP32_MAIN_GRADS, _fp8_recipe("delayed", "Transformer Engine's DelayedScaling recipe "
                                          "(fp8_recipe default); MXFP8 block scaling on Blackwell"), *_MOE_HOST),
        ),
        Framework(
            "nemo-24.07",
            "NeMo 24.03-24.07 performance recipes on Megatron-Core: as megatron-core, fp8 with "
            "delayed scaling (hybrid E4M3/E5M2, amax history)",
            (*_MEGATRON_CORE, Rule("grad_bytes", lambda r: 4, "bf16_mixed: grad_reduce_in_fp32=True "
                                   "(nemo/collections/llm/recipes/precision/mixed_precision.py)"),
             Rule("fp8_params", lambda r: True, "bf16_with_fp8_mixed: fp8_params=True (fp8_param_gather in "
                  "NeMo 2.0): the linears' weights kept in fp8", applies=_is_fp8),
             _fp8_recipe("delayed", "NeMo MegatronMixedPrecision fp8: DelayedScaling, "
                                          "hybrid format"), *_MOE_HOST),
        ),
        Framework(
            "megatron-bridge",
            "NeMo 25.x / Megatron-Bridge performance recipes: as megatron-core, fp8 with current "
            "(per-tensor) scaling on Hopper, MXFP8 on Blackwell; bf16 gradients",
            (*_MEGATRON_CORE, Rule("grad_bytes", lambda r: 2, "perf scripts: grad_reduce_in_fp32=False "
                                   "(scripts/performance/configs/*)"),
             _fp8_recipe("current", "Megatron-Bridge perf configs: FP8-CS "
                                          "(Float8CurrentScaling) on Hopper, MXFP8 on Blackwell"),
             Rule("fp8_params", lambda r: r.get("fp8_recipe") != "blockwise",
                  "training/mixed_precision.py: fp8_param_gather=True for FP8-CS, FP8-MX and delayed "
                  "scaling, False for blockwise (FP8-SC)", applies=_is_fp8),
             Rule("fused_cross_entropy", lambda r: True,
                  "cross_entropy_loss_fusion=True, cross_entropy_fusion_impl='te' (recipes/*: Transformer "
                  "Engine's parallel cross entropy, the gradient written in place of the bf16 logits)"),
             Rule("etp", lambda r: 1,
                  "expert_tensor_parallel_size=1 in every MoE performance config (scripts/performance/"
                  "configs/{deepseek,qwen,gpt_oss}/*_workload_base_configs.py) and MoE recipe: experts "
                  "whole, tp folded into the expert group", applies=_has_experts), *_MOE_HOST),
        ),
        Framework("megatron-lm-2021", "Megatron-LM v2 (Narayanan et al. 2021)", _MEGATRON_LM_2021),
        Framework("megatron-lm-2022", "Megatron-LM v3 (Korthikanti et al. 2022)", _MEGATRON_LM_2022),
        Framework(
            "deepspeed-0.3",
            "DeepSpeed 0.3-0.5 with Megatron-LM (2021): ZeRO stage as given, no flash attention",
            (Rule("fuse_attention", lambda r: False,
                  "Megatron-LM's fused scale-mask-softmax around materialised scores (before 2023)"),
             _DEEPSPEED_LIVE_PARAMETERS, _DEEPSPEED_STAGE_OUTPUTS, _DEEPSPEED_BLOCKING_SENDS),
        ),
        Framework(
            "deepspeed",
            "DeepSpeed ZeRO (0.10 on): ZeRO stage as given, flash attention",
            (_DEEPSPEED_LIVE_PARAMETERS, _DEEPSPEED_STAGE_OUTPUTS, _DEEPSPEED_BLOCKING_SENDS),
        ),
        Framework(
            "fsdp2",
            "PyTorch FSDP2 as torchtitan runs it: parameters, gradients and states sharded (ZeRO-3)",
            (Rule("fsdp", lambda r: r.get("zero", 0) == 0,
                  "fully_shard per transformer block, reshard_after_forward=True (torchtitan)"),
             Rule("zero3_keep_gathered", lambda r: r.get("pp", 1) > 1,
                  "with pp, reshard_after_forward=False (torchtitan parallelize_llama apply_fsdp), and "
                  "torch.distributed.pipelining's backward_maybe_with_nosync turns off resharding after "
                  "backward and gradient sync but for the last backward: parameters stay gathered, "
                  "gradients accumulate unsharded in fp32 (FSDP2's reduce dtype)", applies=_zero3),
             Rule("keep_stage_outputs", lambda r: r.get("pp", 1) > 1,
                  "torch.distributed.pipelining keeps each stage's output in fwd_cache until "
                  "backward_one_chunk pops it (stage.py)"),
             Rule("fp32_param_shards", lambda r: True,
                  "FSDPParam keeps the sharded parameter in its original dtype (fp32) and casts it to "
                  "MixedPrecisionPolicy.param_dtype (bf16) only for the all-gather input "
                  "(_fully_shard/_fsdp_param.py): the shard is the optimizer's master copy",
                  applies=_zero3)),
        ),
        Framework(
            "llm-foundry",
            "MosaicML llm-foundry / Composer: FSDP FULL_SHARD, triton flash attention",
            (Rule("fsdp", lambda r: r.get("zero", 0) == 0,
                  "fsdp_config sharding_strategy FULL_SHARD (llm-foundry yamls)"),
             Rule("attention_kernel", lambda r: "triton",
                  "attn_impl triton (scripts/train/benchmarking/submit_benchmarks.py)")),
        ),
    )
}


def framework(name: str) -> Framework:
    if name not in FRAMEWORKS:
        raise CharonError(f"--framework must be one of {', '.join(FRAMEWORKS)}, got '{name}'")
    return FRAMEWORKS[name]


def preset_settings() -> tuple[str, ...]:
    """Every setting some preset decides, in a stable order."""
    seen: dict[str, None] = {}
    for f in FRAMEWORKS.values():
        for rule in f.rules:
            seen.setdefault(rule.setting)
    return tuple(seen)


def resolve(name: str, given: Mapping[str, Any], defaults: Mapping[str, Any]
            ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The settings of a run under framework `name`: what the user `given`, the
    preset's rules for what they left unset, then `defaults` (TrainingConfig's).
    Also, for every setting a preset decides, its value and where it came from:
    `flag`, `framework NAME` (with the rule's source) or `default`."""
    preset = framework(name)
    resolved = {**defaults, **given}
    origin: dict[str, dict[str, Any]] = {}
    for rule in preset.rules:
        if rule.setting in given or not rule.applies(resolved):
            continue
        resolved[rule.setting] = rule.value(resolved)
        origin[rule.setting] = {"from": f"framework {preset.name}", "why": rule.why}
    settings = {}
    for setting in preset_settings():
        source = origin.get(setting) or {"from": "flag" if setting in given else "default"}
        value = resolved.get(setting)
        settings[setting] = {"value": list(value) if isinstance(value, tuple) else value, **source}
    return resolved, settings


def field_defaults(config_type: type) -> dict[str, Any]:
    """A dataclass's field defaults (the fields that have one)."""
    return {f.name: f.default for f in fields(config_type) if f.default is not MISSING}
