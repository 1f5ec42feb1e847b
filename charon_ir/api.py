"""The Python API: the same runs as the command line, returning the report dict.

`simulate(...)` is `charon simulate`: import (or parse) the model, shard it, split
it into pipeline stages, add data parallelism and recomputation, target the
hardware, price every op, check memory, lower to events and interpret. Every step
is a pass of the registry, run in this order:

    shard-tensor, sequence-parallel, shard-context, shard-expert, fuse, pipeline,
    data-parallel, recompute, offload-activations, accumulate-gradients, unfuse-optimizer,
    group-expert-gemms, set-target, memory-analysis, cost-annotate, lower-to-events
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from charon_ir.dialects import sim
from charon_ir.engines.compute_efficiency import ATTENTION_KERNELS
from charon_ir.errors import CharonError, read_text
from charon_ir.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, field_defaults, resolve
from charon_ir.frontend import import_model
from charon_ir.frontend.configs import load_config
from charon_ir.frontend import MEGATRON_PREFIX
from charon_ir.frontend.user_modules import is_handle, lookup, model_name
from charon_ir.memory import analyze_memory
from charon_ir.parallel.mesh import stage_gpus
from charon_ir.parallel.schedules import SCHEDULES, ScheduleError, check_schedule
from charon_ir.parallel.sub_blocks import MODULES as RECOMPUTE_MODULES
from charon_ir.passes.recompute import POLICIES as RECOMPUTE_POLICIES, POLICY_CHOICES
from charon_ir.registry import ALL_PASSES
from charon_ir.report.energy import add_training_energy
from charon_ir.report.output import check_output_dir, check_output_file
from charon_ir.runtime import tiers
from charon_ir.runtime.interpreter import calibrated_overlap
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.target.hardware import check_fp8, load_gpu
from charon_ir.target.target import Target
from charon_ir.testing import make_context
from charon_ir.tools.charon_opt import parse_located

GIB = 1 << 30


MAX_COUNT = 2**31 - 1
"""The largest degree, size or batch a flag takes."""


@dataclass(frozen=True)
class TrainingConfig:
    """One training run, as DESIGN.md section 7 names its flags."""

    model: str
    hardware: str = "H100-SXM5-80GB"
    gpus: int = 8
    gpus_per_node: int = 0
    cluster: str = ""
    tp: int = 1
    pp: int = 1
    dp: int = 0
    cp: int = 1
    cp_comm_type: str = "p2p"
    """How context-parallel attention sees the whole sequence (Megatron-Core's
    `--cp-comm-type`, Transformer Engine's `cp_comm_type`): p2p, the ring
    (`shard-context{mode=ring}`); a2a, Ulysses' all-to-alls (`mode=ulysses`);
    a2a+p2p, all-to-alls within groups of `hierarchical_cp` ranks and the ring
    between the groups (`mode=a2a+p2p`)."""
    hierarchical_cp: int = 0
    """With cp_comm_type a2a+p2p: ranks of the inner all-to-all group (the first of
    Megatron-Core's `--hierarchical-context-parallel-sizes`); the ring runs over
    cp / hierarchical_cp of them."""
    ep: int = 1
    vpp: int = 1
    sequence_parallel: bool = False
    zero: int = 0
    fsdp: bool = False
    seq_len: int = 2048
    global_batch: int = 0
    micro_batch: int = 1
    recompute: str = "none"
    recompute_modules: tuple[str, ...] = ()
    """With recompute=selective: the sub-blocks recomputed (Megatron-Core's
    --recompute-modules: core_attn, layernorm, mla_up_proj, mlp, moe, moe_act,
    shared_experts); empty: Megatron-Core's default, core_attn."""
    cpu_offload_layers: int = 0
    """Layers whose saved activations go to host memory after their forward and
    come back before their backward (`offload-activations{layers}`: Megatron-Core's
    `--cpu-offloading --cpu-offloading-num-layers N`, Transformer Engine's async
    double-buffered offload handler); 0: none, as Megatron-Core's default
    (`cpu_offloading=False`) and every preset. Needs pp 1 and no recompute, as
    Megatron-Core's TransformerConfig does."""
    precision: str = "bf16"
    fp8_recipe: str = "delayed"
    """With fp8: how Transformer Engine scales its casts (`cost-annotate{fp8-recipe}`):
    delayed (amax history), current (per-tensor amax of the tensor itself),
    mxfp8 (Blackwell's 1x32 block scales), blockwise (DeepSeek-V3's 1x128 / 128x128)."""
    schedule: str = ""
    fuse: bool = True
    """Run `fuse` (flash attention, fused norms, activations, RoPE), as Megatron
    and every production stack do; False simulates the model's kernels as traced."""
    fuse_attention: bool = True
    """With `fuse`: flash attention (False: the score matrix is materialised, as in
    pre-FlashAttention stacks)."""
    attention_kernel: str = ""
    """With flash attention: the kernel it is priced as (flash2, flash3, triton;
    empty: the engine's default, FlashAttention-2)."""
    dp_bucket_mb: int = 25
    """data-parallel's bucket: MiB per gradient reduction (and ZeRO parameter
    gather) collective; 25 is PyTorch DDP's `bucket_cap_mb`."""
    dp_overlap: bool = True
    """Reduce each layer's gradients while the backward goes on (False: after the
    whole backward, as Megatron-LM's local DDP before `--overlap-grad-reduce`)."""
    dp_overlap_param_gather: bool = False
    """ZeRO 1/2: gather each layer's updated parameters in the next step's first
    forward, overlapping it, instead of after the step (Megatron-Core
    `--overlap-param-gather`)."""
    tp_comm_overlap: bool = False
    """Overlap tensor-parallel all-gathers / reduce-scatters with the GEMMs next to
    them (Megatron-Core `--tp-comm-overlap`, Transformer Engine userbuffers)."""
    pipeline_scatter_gather: bool = False
    """Activations and gradients that every tp rank holds whole cross pipeline
    stages as 1/tp slices, all-gathered over tp on arrival (`pipeline{
    scatter-gather=true}`, Megatron-LM's `scatter_gather_tensors_in_pipeline`)."""
    pp_layout: tuple[int, ...] = ()
    """Layers of each virtual pipeline stage, in order (`pipeline{layers=...}`,
    Megatron's `--decoder-first-pipeline-num-layers` / NeMo's
    `pipeline_model_parallel_layout` in counts); empty: as even as the layers
    allow, the remainder to the middle stages."""
    blocking_comm: tuple[str, ...] = ()
    """Grid axes whose collectives block the compute stream (`lower-to-events{
    blocking=...}`): Megatron-LM 2021 waited on every tensor-parallel all-reduce,
    so nothing overlapped it; `pp`: the compute stream waits for every pipeline
    send (empty: communication runs beside independent compute)."""
    host_launch_s: float = 0.0
    """Seconds the host takes to issue each kernel and collective (`lower-to-events{
    host-launch=...}`): the GPU cannot start a kernel before the host has issued it,
    so a step of kernels shorter than their launches is bound by the host; 0: the
    host is not modelled (it keeps ahead)."""
    expert_launches: float = 0.0
    """With `host_launch_s`: launches the host issues per local expert for each
    GEMM of the routed experts (`lower-to-events{expert-launches=...}`):
    Transformer Engine's GroupedLinear runs one cuBLAS GEMM per expert and, in
    fp8, quantizes each expert's operand on its own (`expert_launches_per_gemm`);
    0: one launch an op (a grouped GEMM kernel)."""
    moe_host_sync: bool = False
    """With `host_launch_s`: the host waits for each forward MoE dispatch
    (`lower-to-events{moe-host-sync=true}`), as Megatron-Core's dropless
    dispatchers read the tokens per expert back (`tokens_per_expert.tolist()`)."""
    moe_a2a_overlap: bool = True
    """With ep > 1: an idealised overlap within the micro-batch, each expert-parallel
    dispatch and combine all_to_all running beside the compute that does not read
    its result; False: each is synchronous, issued after the compute before it and
    waited for by all later compute (`lower-to-events{sync-expert-a2a=true}`), as
    Megatron-Core's token dispatchers run by default. Megatron-Core's
    `overlap_moe_expert_parallel_comm` (one micro-batch's all-to-alls beside
    another's compute) is not modelled. Given with ep = 1, False is refused."""
    pp_send_overlap: bool = True
    """With pp > 1: a pipeline stage's sends run beside its next compute
    (Megatron-Core's `overlap_p2p_comm` in the interleaved schedule); False: every
    collective over the pp axis blocks (`lower-to-events{blocking=pp}`): the stage's
    compute waits for each send to complete, as Megatron-Core's non-interleaved
    1F1B waits on every batched isend/irecv, and for the tied-embedding gradient
    all-reduce over the first and last stages, which Megatron runs synchronously
    anyway (`_allreduce_embedding_grads`). Given with pp = 1, refused."""
    mtp: bool = True
    """Train the multi-token-prediction modules a model's config asks for
    (DeepSeek-V3's `num_nextn_predict_layers`), after the layers on the last
    stage; False: the model without them."""
    unfused_grad_accumulation: bool = False
    """Each micro-batch's weight gradients are added into the gradient buffer by a
    kernel of their own (`accumulate-gradients`: Megatron-LM's local DDP before
    gradient-accumulation fusion, 2021-22); False: fused into the weight-gradient
    GEMMs, or a single micro-batch."""
    optimizer: str = "fused"
    """How the AdamW step runs: `fused` (one fused kernel over bf16 parameters and
    gradients, fp32 master weights and states), or `unfused-fp16` / `unfused-bf16`
    (`unfuse-optimizer`: Megatron-LM's mixed-precision optimizer, separate kernels
    for the gradient copy and unscale (fp16 only), the gradient norm and the
    parameter copy around a multi-tensor Adam)."""
    fp8_params: bool = False
    """With fp8: the layers' GEMM weights are kept in fp8 (memory-analysis'
    `fp8-params`: NeMo's `fp8_params`, Megatron's `--fp8-param-gather`). Their
    ZeRO gathers are still priced at the IR's 16 bits."""
    fp8_weight_cache: bool = False
    """With fp8 and 16-bit weights: the framework passes Transformer Engine
    `is_first_microbatch`, so each weight is cast (with its transpose) on a chunk's
    first micro-batch of a step and read from TE's cache after (Megatron-Core:
    `set_is_first_microbatch`, pipeline_parallel/schedules.py); False: cast on every
    forward (`cost-annotate{fp8-weight-casts}`). Weights kept in fp8 (`fp8_params`)
    are not cast per GEMM at all."""
    zero3_live_params: int = 0
    """Under ZeRO-3 / FSDP: the most parameter elements gathered at once
    (memory-analysis' `zero3-live-params`: DeepSpeed's `stage3_max_live_parameters`
    plus its prefetch bucket); 0: the largest layer twice (FSDP's block-by-block
    gathers). Memory only: the gathers are priced layer by layer either way."""
    zero3_keep_gathered: bool = False
    """Under ZeRO-3 / FSDP with pipeline parallelism: the layers' parameters stay
    gathered through the step and the gradients accumulate unsharded in fp32
    until the last micro-batch's backward (memory-analysis' `zero3-keep-gathered`:
    FSDP2 under PyTorch's pipelining, torchtitan's `reshard_after_forward=False`
    with pp). Memory only: the gathers and reduce-scatters are priced as before."""
    keep_stage_outputs: bool = False
    """A pipeline stage's output stays on its GPU until its micro-batch's backward
    (memory-analysis' `keep-stage-outputs`: PyTorch's pipelining keeps it in
    `fwd_cache`); False: freed once sent (Megatron-LM's `deallocate_output_tensor`)."""
    fp32_param_shards: bool = False
    """Under ZeRO-3 / FSDP: a parameter's shard is the fp32 master copy the optimizer
    updates, cast to bf16 only for the all-gather (memory-analysis'
    `fp32-param-shards`: FSDP2's mixed precision); False: bf16 shards beside an
    fp32 master among the optimizer states (DeepSpeed ZeRO-3). Memory only."""
    grad_bytes: int = 2
    """Bytes per element of the gradient buffer (memory-analysis' `grad-bytes`):
    2, gradients kept in bf16; 4, Megatron's fp32 main gradients (`--bf16` without
    `--grad-reduce-in-bf16`). The reductions are priced at the IR's bf16 either way."""
    memory_limit_gb: float = 0.0
    """memory-analysis' limit per GPU; 0: the GPU's HBM. A huge value reports the
    memory without stopping at an out-of-memory (validation of runs that did fit)."""
    engines: tuple[str, ...] = ("analytic",)
    compute_slowdown: float | None = None
    """While compute runs beside a collective, it progresses at 1 / (1 + this);
    None: the GPU type's calibrated value (`compute_efficiency.OVERLAP_SLOWDOWN`)."""
    comm_slowdown: float | None = None
    """The same for the collective; None: the GPU type's calibrated value."""
    fuse_backward: bool = False
    """With `fuse`: the backward of each fused norm, activation and RoPE as one
    kernel (`fuse{backward}`), as Transformer Engine and Megatron-Core run it;
    False: autograd's pieces, each a pass over the activation (the default: see
    docs/calibration.md, "Fused backward kernels")."""
    fused_cross_entropy: bool = False
    """With `fuse`: the loss as Transformer Engine's parallel cross entropy runs it
    (`fuse{loss}`: one kernel that saves the bf16 logits, its gradient computed in
    place of them), as Megatron-Bridge's recipes set `cross_entropy_loss_fusion`
    with `cross_entropy_fusion_impl="te"`; False: log-softmax and NLL as imported
    (fp32 softmax saved, two fp32 vocabulary-sized gradients)."""
    etp: int = 0
    """Expert tensor parallelism (Megatron-Core's `--expert-tensor-parallel-size`,
    which defaults to tp): 0 or tp, each expert's ffn split over the tp ranks;
    1 under tp > 1, experts whole and the tp ranks folded into the expert group
    (ep x etp carved out of tp x dp: `shard-tensor{experts=false}`,
    `shard-expert{etp=1}`), as Megatron-Bridge's MoE recipes run."""
    moe_dispatcher: str = "alltoall"
    """How expert parallelism's all-to-alls run (`shard-expert{dispatcher}`,
    Megatron-Core's `moe_token_dispatcher_type`): `alltoall`, NCCL's all-to-all of
    every (token, expert) copy; `flex`, DeepEP / HybridEP, a token once per
    destination node over the network and once per destination rank over NVLink,
    within the model's group-limited routing (DeepSeek-V3's n_group / topk_group)."""
    moe_routing: str = "balanced"
    """How tokens spread over the experts (`shard-expert{routing}`): `balanced`,
    every rank the mean load; `random`, Megatron-Core's
    `moe_router_force_load_balancing` (random router logits, as the Megatron-Bridge
    MoE benchmarks run dropless), the slowest rank's expected load."""
    extra: dict[str, Any] = field(default_factory=dict)

    def check_counts(self) -> None:
        """Every degree, size and batch is a count: zero or a negative one would
        divide by zero below, or surface in a later pass under another name."""
        for flag, value, minimum in (
            ("--gpus", self.gpus, 1), ("--gpus-per-node", self.gpus_per_node, 0),
            ("--tp", self.tp, 1), ("--pp", self.pp, 1), ("--dp", self.dp, 0), ("--cp", self.cp, 1),
            ("--hierarchical-cp", self.hierarchical_cp, 0),
            ("--ep", self.ep, 1), ("--vpp", self.vpp, 1), ("--seq-len", self.seq_len, 1),
            ("--micro-batch", self.micro_batch, 1), ("--global-batch", self.global_batch, 0),
        ):
            if value < minimum:
                raise CharonError(f"{flag} must be >= {minimum}, got {value}")
            if value > MAX_COUNT:  # torch's and the IR's sizes are 64-bit: products must fit
                raise CharonError(f"{flag} must be <= {MAX_COUNT}, got {value}")

    def data_parallel(self) -> int:
        """Data-parallel replicas of the dense model: gpus / (tp x pp x cp). Expert
        parallelism is carved out of them (Megatron-LM): ep must divide dp."""
        self.check_counts()
        model_parallel = self.tp * self.pp * self.cp
        if self.dp:
            if self.dp * model_parallel != self.gpus:
                raise CharonError(
                    f"--gpus {self.gpus} is not tp x pp x cp x dp = "
                    f"{self.tp} x {self.pp} x {self.cp} x {self.dp} = {self.dp * model_parallel}"
                )
            dp = self.dp
        elif self.gpus % model_parallel:
            raise CharonError(
                f"--gpus {self.gpus} is not divisible by tp x pp x cp = {model_parallel}"
            )
        else:
            dp = self.gpus // model_parallel
        if self.ep < 1 or dp % self.ep:
            raise CharonError(
                f"--ep {self.ep} does not divide the data-parallel replicas {dp} "
                f"(experts are spread over data-parallel ranks)"
            )
        return dp

    def expert_fold(self) -> int:
        """tp ranks folded into the expert group: tp with --etp 1 under --tp > 1
        and --ep > 1, else 1; refuses an etp the IR cannot lay out."""
        if self.etp not in (0, 1, self.tp):
            raise CharonError(f"--etp must be 1 or --tp ({self.tp}), got {self.etp}")
        if self.etp != 1 or self.tp == 1 or self.ep == 1:
            return 1
        if self.ep % self.tp:
            raise CharonError(
                f"--etp 1 folds the --tp {self.tp} ranks into the expert group: --ep {self.ep} "
                f"must be a multiple of --tp"
            )
        return self.tp

    def microbatches(self, dp: int) -> int:
        global_batch = self.global_batch or dp * self.micro_batch
        if global_batch % (dp * self.micro_batch):
            raise CharonError(
                f"--global-batch {global_batch} is not divisible by dp x micro-batch = "
                f"{dp} x {self.micro_batch} = {dp * self.micro_batch}"
            )
        return global_batch // (dp * self.micro_batch)


def lowering_options(config: TrainingConfig) -> dict[str, Any]:
    """`lower-to-events`' options for `config`: blocking collectives (the
    expert-parallel all_to_alls among them) and the host's issue model."""
    blocking = tuple(config.blocking_comm)
    if not config.pp_send_overlap and "pp" not in blocking:
        blocking = (*blocking, "pp")
    return {"blocking": blocking, "host_launch": config.host_launch_s,
            "expert_launches": config.expert_launches, "moe_host_sync": config.moe_host_sync,
            "sync_expert_a2a": not config.moe_a2a_overlap}


def make_pass(name: str, **options):
    """The registered pass `name` (its `charon-opt -p` name) built with `options`:
    how code outside charon-opt runs a pass of the pipeline; an unknown name or a
    pass that cannot load is one CharonError line."""
    if name not in ALL_PASSES:
        raise CharonError(f"the '{name}' pass is not available in this build")
    try:
        cls = ALL_PASSES[name]()
    except ImportError as e:
        raise CharonError(f"the '{name}' pass cannot load: {e}") from None
    return cls(**options)


def load_model_module(model: str, *, seq_len: int, batch: int, mode: str = "train", ctx=None, mtp: bool = True,
                      tp: int = 1, sequence_parallel: bool = False):
    """A bundled name or config.json through the frontend (a training step with the
    MTP modules its config asks for unless `mtp` is False); a .mlir file parsed. A
    `megatron:` model is imported as one rank of `tp` (`imports_tensor_parallel`)."""
    ctx = ctx or make_context()
    if model.endswith(".mlir"):
        path = Path(model)
        return ctx, parse_located(ctx, read_text(path), str(path))
    if is_handle(model):
        module = import_model(lookup(model), seq_len=seq_len, batch=batch, mode=mode)
        _check_layer_stack(module, model)
        return ctx, module
    if imports_tensor_parallel(model):
        return ctx, import_model(model, seq_len=seq_len, batch=batch, mode=mode, mtp=mtp, tp=tp,
                                 sequence_parallel=sequence_parallel)
    return ctx, import_model(model, seq_len=seq_len, batch=batch, mode=mode, mtp=mtp)


def imports_tensor_parallel(model: str) -> bool:
    """Whether `model` is imported already split by tensor (and sequence)
    parallelism, its collectives in the IR: Megatron-Core's model code, built at
    the run's tp. shard-tensor and sequence-parallel then have nothing to do."""
    return str(model).startswith(MEGATRON_PREFIX)


OPTIMIZERS = ("fused", "unfused-fp16", "unfused-bf16")


def check_precision(precision: str, hardware: str, cluster: str) -> None:
    """`--precision` is bf16 or fp8, and fp8 needs fp8 tensor cores (a cluster's
    GPU is checked by cost-annotate, which reads it off the target)."""
    if precision not in ("bf16", "fp8"):
        raise CharonError(f"--precision must be bf16 or fp8, got '{precision}'")
    if precision == "fp8" and not cluster:
        check_fp8(load_gpu(hardware))


SCHEDULE_FLAG_WORDS = {
    "unknown": "--schedule must be one of {known}, got '{schedule}'",
    "vpp-needs-interleaved": "--vpp {vpp} runs the interleaved schedule, not --schedule {schedule}",
    "interleaved-vpp": "--schedule interleaved needs --vpp >= 2 (model chunks per stage)",
    "interleaved-divisible": "{named} needs the micro-batches divisible by --pp {pp}: {counted}",
    "too-few": "{named} needs at least --pp {pp} micro-batches in flight: {counted}",
}
"""`check_schedule`'s rules in the flags' words (the pipeline pass names its
options, and 'microbatches' is no flag)."""


def _check_schedule_flags(config: TrainingConfig, schedule: str, dp: int, microbatches: int) -> None:
    try:
        check_schedule(schedule, config.pp, config.vpp, microbatches)
    except ScheduleError as e:
        counted = (f"--global-batch {config.global_batch or dp * config.micro_batch} / (dp {dp} x "
                   f"--micro-batch {config.micro_batch}) = {microbatches} micro-batches")
        # a schedule nobody asked for is named as the default it is
        named = (f"--schedule {schedule}" if config.schedule
                 else f"the {schedule} schedule (the default with --{'vpp' if config.vpp > 1 else 'pp'})")
        raise CharonError(SCHEDULE_FLAG_WORDS[e.rule].format(
            known=", ".join(SCHEDULES), schedule=schedule, vpp=config.vpp, pp=config.pp,
            counted=counted, named=named)) from None


MOE_DISPATCHERS = ("alltoall", "flex")
MOE_ROUTINGS = ("balanced", "random")


def _routing_groups(model: str) -> dict[str, int]:
    """shard-expert's group-limited routing options from the model's config:
    DeepSeek-V2/V3's `n_group` groups of experts, a token's within `topk_group`
    of them (Megatron-Core's moe_router_num_groups / moe_router_group_topk).
    Nothing for an .mlir input, which states no config."""
    if model.endswith(".mlir") or is_handle(model) or model.startswith(MEGATRON_PREFIX):
        return {}
    _, hf = load_config(model)
    groups, pick = hf.get("n_group"), hf.get("topk_group")
    if isinstance(groups, int) and isinstance(pick, int) and 1 < groups and 0 < pick < groups:
        return {"groups": groups, "groups_per_token": pick}
    return {}


CP_COMM_TYPES = ("p2p", "a2a", "a2a+p2p")
"""Megatron-Core's --cp-comm-type values: shard-context's mode ring, ulysses
(gather-kv=false) and a2a+p2p (`context_options`)."""


def context_options(config: TrainingConfig) -> dict[str, Any]:
    """shard-context's options for --cp, --cp-comm-type and --hierarchical-cp;
    the flags' own errors here, the model's (heads, sequence) the pass's."""
    kind, inner = config.cp_comm_type, config.hierarchical_cp
    if kind not in CP_COMM_TYPES:
        raise CharonError(f"--cp-comm-type must be {', '.join(CP_COMM_TYPES)}, got '{kind}'")
    if kind != "p2p" and config.cp == 1:
        raise CharonError(f"--cp-comm-type {kind} needs --cp > 1")
    if inner and kind != "a2a+p2p":
        raise CharonError(f"--hierarchical-cp {inner} needs --cp-comm-type a2a+p2p, not {kind}")
    if kind != "a2a+p2p":
        # Transformer Engine's a2a splits q and kv heads alike: it gathers none
        return {"cp": config.cp, **({"mode": "ulysses", "gather_kv": False} if kind == "a2a" else {})}
    if not inner:
        raise CharonError("--cp-comm-type a2a+p2p needs --hierarchical-cp A: the ranks of the inner "
                          "all-to-all group (the ring runs over cp / A groups)")
    if config.cp % inner or not 1 < inner < config.cp:
        raise CharonError(f"--hierarchical-cp {inner} must divide --cp {config.cp} and lie strictly between "
                          "1 and it (1 is --cp-comm-type p2p, cp is a2a)")
    return {"cp": config.cp, "mode": "a2a+p2p", "a2a": inner}


def pass_plan(config: TrainingConfig) -> list[tuple[str, dict[str, Any]]]:
    """The passes of one training run, in order, with their options: the one
    definition `build_training_module` and `charon sweep` both follow.
    memory-analysis runs before cost-annotate: it reads shapes and the target, and a
    configuration that cannot fit is rejected before anything is priced."""
    if config.recompute not in RECOMPUTE_POLICIES:
        raise CharonError(f"--recompute must be {POLICY_CHOICES}, got '{config.recompute}'")
    check_precision(config.precision, config.hardware, config.cluster)
    dp = config.data_parallel()
    microbatches = config.microbatches(dp)
    # flags that would otherwise be dropped without a word
    if config.sequence_parallel and config.tp == 1:
        raise CharonError("--sequence-parallel needs --tp > 1 (it shards along tensor parallelism)")
    if config.fsdp and config.zero not in (0, 3):
        raise CharonError(f"--fsdp is ZeRO-3: it cannot be combined with --zero {config.zero}")
    if config.vpp > 1 and config.pp == 1:
        raise CharonError(f"--vpp {config.vpp} needs --pp > 1 (an interleaved schedule of one stage)")
    plan: list[tuple[str, dict[str, Any]]] = []
    fold = config.expert_fold()
    if config.tp > 1:
        if not imports_tensor_parallel(config.model):
            plan.append(("shard-tensor", {"tp": config.tp, **({"experts": False} if fold > 1 else {})}))
        if config.sequence_parallel:
            plan.append(("sequence-parallel", {"tp_comm_overlap": config.tp_comm_overlap}))
    if config.tp_comm_overlap and not (config.tp > 1 and config.sequence_parallel):
        raise CharonError("--tp-comm-overlap needs --tp > 1 and --sequence-parallel "
                          "(as Megatron-Core's)")
    zero = 3 if config.fsdp else config.zero
    if config.dp_overlap_param_gather and zero not in (1, 2):
        raise CharonError(f"--overlap-param-gather needs --zero 1 or 2 (only they gather updated "
                          f"parameters), got {'--fsdp' if config.fsdp else f'--zero {zero}'}")
    context = context_options(config)
    if config.cp > 1:
        plan.append(("shard-context", context))
    # refused whatever ep: a value ep 1 does not read is still a typo
    if config.moe_dispatcher not in MOE_DISPATCHERS:
        raise CharonError(f"--moe-dispatcher must be {', '.join(MOE_DISPATCHERS)}, "
                          f"got '{config.moe_dispatcher}'")
    if config.moe_routing not in MOE_ROUTINGS:
        raise CharonError(f"moe_routing must be {', '.join(MOE_ROUTINGS)}, got '{config.moe_routing}'")
    if config.ep > 1:
        if config.tp > 1 and imports_tensor_parallel(config.model):
            raise CharonError(f"--ep {config.ep} with --tp {config.tp}: a megatron: MoE model is imported split "
                              "by tp, its experts' tp collectives in it, which shard-expert does not lay out "
                              "beside the all-to-alls yet; use --tp 1 or the model's Hugging Face config")
        expert: dict[str, Any] = {"ep": config.ep, **({"etp": 1} if fold > 1 else {})}
        if config.moe_dispatcher != "alltoall":
            expert["dispatcher"] = config.moe_dispatcher
        if config.moe_routing != "balanced":
            expert["routing"] = config.moe_routing
        if config.moe_dispatcher != "alltoall" or config.moe_routing != "balanced":
            expert.update(_routing_groups(config.model))
        plan.append(("shard-expert", expert))
    if config.fuse:
        fuse: dict[str, Any] = {"attention": config.fuse_attention}
        if config.fused_cross_entropy:
            fuse["loss"] = True
        if config.fuse_backward:
            fuse["backward"] = True
        if config.attention_kernel:
            if config.attention_kernel not in ATTENTION_KERNELS:
                raise CharonError(f"--attention-kernel must be {', '.join(ATTENTION_KERNELS)}, "
                                  f"got '{config.attention_kernel}'")
            fuse["attention_kernel"] = config.attention_kernel
        plan.append(("fuse", fuse))
    schedule = config.schedule or ("interleaved" if config.vpp > 1 else "1f1b")
    _check_schedule_flags(config, schedule, dp, microbatches)
    pipeline: dict[str, Any] = {"pp": config.pp, "vpp": config.vpp, "schedule": schedule,
                                "microbatches": microbatches}
    if config.pipeline_scatter_gather:
        pipeline["scatter_gather"] = True
    if config.pp_layout:
        pipeline["layers"] = tuple(config.pp_layout)
    plan.append(("pipeline", pipeline))
    # the mesh's dp axis counts the replicas of the ep groups
    # (etp 1 under tp: the ep group takes tp ranks, so the ep axis is ep / tp)
    plan.append(("data-parallel", {"dp": dp // (config.ep // fold), "zero": zero,
                                   "bucket_mb": config.dp_bucket_mb, "overlap": config.dp_overlap,
                                   "overlap_param_gather": config.dp_overlap_param_gather}))
    unknown = [m for m in config.recompute_modules if m not in RECOMPUTE_MODULES]
    if unknown:
        raise CharonError(f"--recompute-modules: unknown module '{unknown[0]}' "
                          f"(known: {', '.join(RECOMPUTE_MODULES)})")
    if config.recompute_modules and config.recompute != sim.RecomputePolicy.SELECTIVE:
        raise CharonError(f"--recompute-modules needs --recompute selective, got --recompute {config.recompute}")
    if config.recompute != sim.RecomputePolicy.NONE:
        recompute: dict[str, Any] = {"policy": config.recompute}
        if config.recompute_modules:
            recompute["modules"] = tuple(config.recompute_modules)
        plan.append(("recompute", recompute))
    if config.cpu_offload_layers:
        _check_cpu_offload(config)
        plan.append(("offload-activations", {"layers": config.cpu_offload_layers}))
    if config.unfused_grad_accumulation:
        plan.append(("accumulate-gradients", {}))
    if config.optimizer != "fused":
        if config.optimizer not in OPTIMIZERS:
            raise CharonError(f"--optimizer must be {', '.join(OPTIMIZERS)}, got '{config.optimizer}'")
        plan.append(("unfuse-optimizer", {"loss_scale": config.optimizer == "unfused-fp16"}))
    # the routed experts run as grouped GEMMs (a no-op for a dense model)
    plan.append(("group-expert-gemms", {}))
    target: dict[str, Any] = {"hardware": config.hardware, "gpus": config.gpus,
                              "gpus_per_node": config.gpus_per_node}
    if config.cluster:
        target["cluster"] = config.cluster
    plan.append(("set-target", target))
    # Transformer Engine's fp8 training: fp8 GEMMs and the casts around them, the
    # linears' inputs saved in fp8
    fp8 = config.precision == "fp8"
    memory: dict[str, Any] = {"limit_gb": config.memory_limit_gb, "grad_bytes": config.grad_bytes}
    if config.zero3_live_params:
        memory["zero3_live_params"] = config.zero3_live_params
    if config.zero3_keep_gathered:
        memory["zero3_keep_gathered"] = True
    if config.keep_stage_outputs:
        memory["keep_stage_outputs"] = True
    if config.fp32_param_shards:
        memory["fp32_param_shards"] = True
    if fp8:
        memory["fp8"] = True
        if config.fp8_params:
            memory["fp8_params"] = True
    plan.append(("memory-analysis", memory))
    cost: dict[str, Any] = {"engines": config.engines, "fp8_gemms": fp8, "fp8_casts": fp8}
    if fp8:
        cost["fp8_recipe"] = config.fp8_recipe
        if config.fp8_params or config.fp8_weight_cache:
            cost["fp8_weight_casts"] = "none" if config.fp8_params else "first-microbatch"
    plan.append(("cost-annotate", cost))
    return plan


def _check_cpu_offload(config: TrainingConfig) -> None:
    """Megatron-Core's TransformerConfig refusals of CPU offloading, named by flag
    (the layer count is checked by offload-activations, which sees the layers)."""
    n = config.cpu_offload_layers
    if n < 0:
        raise CharonError(f"--cpu-offload-layers must be >= 0, got {n}")
    if config.pp > 1:
        raise CharonError(f"--cpu-offload-layers {n} needs --pp 1: Megatron-Core has no CPU offloading "
                          f"under pipeline parallelism (TransformerConfig refuses it), got --pp {config.pp}")
    if config.recompute != sim.RecomputePolicy.NONE:
        raise CharonError(f"--cpu-offload-layers {n} with --recompute {config.recompute}: Megatron-Core's CPU "
                          "offloading does not work when activation recomputation is enabled")


def _check_preset_recompute(framework: str, given: dict[str, Any], resolved: dict[str, Any]) -> None:
    """`--cpu-offload-layers` under a preset that turned recompute on: the refusal
    names the preset, not a --recompute the user never gave."""
    n, policy = resolved.get("cpu_offload_layers", 0), resolved.get("recompute", sim.RecomputePolicy.NONE)
    if n and "recompute" not in given and policy != sim.RecomputePolicy.NONE:
        raise CharonError(f"--cpu-offload-layers {n}: the framework preset '{framework}' turns on --recompute "
                          f"{policy}, and Megatron-Core's CPU offloading does not work when activation "
                          "recomputation is enabled; add --recompute none")


def cpu_offload_report(config: TrainingConfig, memory: list, given: bool) -> dict[str, Any]:
    """The report's `cpu_offload` entry of a run that offloads: the layers, where
    the setting came from (no framework preset turns it on), and the saved bytes
    one micro-batch keeps on the host, per pipeline stage."""
    return {
        "layers": config.cpu_offload_layers,
        "from": "flag" if given else "default",
        "why": "Megatron-Core --cpu-offloading --cpu-offloading-num-layers N (NeMo cpu_offloading, "
               "cpu_offloading_num_layers); off by default (cpu_offloading=False, megatron/core/"
               "model_parallel_config.py) and in every framework preset",
        "host_bytes_per_microbatch": [s.host_activations for s in memory],
    }


def build_training_module(config: TrainingConfig, replay: bool = False, replay_limit_gb: float | None = None):
    """The priced, memory-checked (not yet lowered) module of one training step,
    and its per-stage memory (with `replay`, the caching allocator's peak
    reserved bytes too: `analyze_memory(replay=True)`, on a device of
    `replay_limit_gb`, by default the config's `memory_limit_gb`)."""
    plan = pass_plan(config)
    ctx, module = load_model_module(config.model, seq_len=config.seq_len, batch=config.micro_batch, mtp=config.mtp,
                                    tp=config.tp, sequence_parallel=config.sequence_parallel)
    if config.model.endswith(".mlir"):
        _check_layer_stack(module, config.model)
    if config.cpu_offload_layers:
        _check_cpu_offload_layers(module, config.cpu_offload_layers)
    for name, options in plan:
        make_pass(name, **options).apply(ctx, module)
    limit = config.memory_limit_gb if replay_limit_gb is None else replay_limit_gb
    return ctx, module, _memory(module, config, replay, limit)


def _check_cpu_offload_layers(module, n: int) -> None:
    """`--cpu-offload-layers N` offloads fewer layers than the model has, as
    Megatron-Core's TransformerConfig asks (offload-activations checks it too,
    naming its own option)."""
    layers = sum(forward.trip_count for forward, _ in sim.layer_repeat_pairs(module.body.block))
    if layers and n >= layers:
        raise CharonError(f"--cpu-offload-layers {n} must be less than the model's {layers} layers "
                          "(Megatron-Core keeps the last layer's activations on the GPU)")


def _check_layer_stack(module, path: str) -> None:
    """The passes a flag asks for schedule micro-batches over a stack of layers (a
    `sim.repeat` in the forward phase); a hand-written step without one failed in
    the pipeline pass, which no flag had named."""
    for phase in module.body.block.ops:
        if isinstance(phase, sim.PhaseOp) and phase.kind.data == sim.PhaseKind.FORWARD and any(
            isinstance(o, sim.RepeatOp) for o in phase.body.block.ops
        ):
            return
    raise CharonError(f"{path} has no stack of layers (a sim.repeat in a forward phase) for the passes "
                      "that parallel-strategy and batch flags ask for; without them it is simulated as written")


def _memory(module, config: TrainingConfig, replay: bool = False, limit_gb: float = 0.0) -> list:
    """Per-stage memory of a module memory-analysis has checked; with `replay`,
    its allocations replayed through the caching allocator on a device of
    `limit_gb` (0: the GPU's memory, as memory-analysis' limit)."""
    fp8 = config.precision == "fp8"
    target = Target.from_module(module)
    capacity = replay_capacities(module, limit_gb)
    return analyze_memory(module, target, grad_bytes=config.grad_bytes,
                          fp8=fp8, fp8_params=fp8 and config.fp8_params,
                          zero3_live_params=config.zero3_live_params,
                          zero3_keep_gathered=config.zero3_keep_gathered,
                          keep_stage_outputs=config.keep_stage_outputs,
                          fp32_param_shards=config.fp32_param_shards, replay=replay,
                          capacity=capacity if replay else None)


def replay_capacities(module, limit_gb: float = 0.0) -> list[int]:
    """The memory each physical stage's allocator replay runs on: `limit_gb`
    when it is a finite limit, else the stage's own GPU's (as memory-analysis'
    limit); one entry per GPU kind, indexed by stage modulo their count."""
    gpus = stage_gpus(module) or [Target.from_module(module).gpu]
    return [int(limit_gb * GIB if 0 < limit_gb < UNLIMITED_GB else gpu.hbm_bytes) for gpu in gpus]


def refuse_flags_without_effect(given: dict[str, Any], resolved: dict[str, Any]) -> None:
    """Refuse a preset setting the user gave (`given`) where the run has nothing
    it acts on; a preset's own value there is harmless and passes."""
    if given.get("fuse_backward") and not resolved.get("fuse", True):
        raise CharonError("--fuse-backward needs --fuse (it fuses the backward of the fused kernels)")
    if given.get("moe_a2a_overlap") is False and resolved.get("ep", 1) == 1:
        raise CharonError("--no-moe-a2a-overlap needs --ep > 1 (it waits for the expert all-to-alls)")
    if "pp_send_overlap" in given and resolved.get("pp", 1) == 1:
        flag = "--pp-send-overlap" if given["pp_send_overlap"] else "--no-pp-send-overlap"
        raise CharonError(f"{flag} needs --pp > 1 (it decides whether a stage waits for its sends)")


def configure(model: Any, framework: str = DEFAULT_FRAMEWORK, **options: Any
              ) -> tuple[TrainingConfig, dict[str, Any]]:
    """The TrainingConfig of a run under `framework`'s presets (the settings
    given in `options` win), and the report's `framework` entry: its name, what
    the preset stands for and, for every setting a preset decides, the value in
    force and where it came from. `model` is a bundled name, a config.json or
    .mlir path, or an nn.Module (named in the config by its handle)."""
    model = model_name(model)
    defaults = field_defaults(TrainingConfig)
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise CharonError(f"unknown training option(s): {', '.join(unknown)}")
    resolved, settings = resolve(framework, options, defaults)
    refuse_flags_without_effect(options, resolved)
    _check_preset_recompute(framework, options, resolved)
    return TrainingConfig(model=model, **resolved), {
        "name": framework, "summary": FRAMEWORKS[framework].summary, "settings": settings}


def simulate(
    model: Any,
    *,
    framework: str = DEFAULT_FRAMEWORK,
    trace: str | Path | None = None,
    plot: str | Path | None = None,
    tier: str = "fast",
    allow_oom: bool = False,
    reserved: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """Simulate one training step; keyword options are TrainingConfig's fields,
    the ones not given taken from `framework`'s presets (`charon_ir.frameworks`;
    "none": TrainingConfig's own defaults).

    The fast tier folds identical layers inside the interpreter and identical
    micro-batches here: it simulates the schedule at two small micro-batch counts
    in steady state and extrapolates linearly (exact for 1F1B/interleaved once
    every stage is in steady state), or, with one pipeline stage, folds the
    micro-batch loop in the interpreter; the fine tier simulates every event.

    A configuration that does not fit in memory raises the memory-analysis
    diagnostic (a CharonError); with `allow_oom`, it is timed as if memory were
    unlimited and the report says `"fits": false` with the diagnostic under
    `"oom"` (no trace or plot is written for it).

    `reserved`: each stage's allocations over two steps replayed through
    PyTorch's caching allocator on the GPU's memory (`memory_limit_gb` when
    given), whose peak reserved bytes the report gives as `peak_reserved_bytes`
    beside `peak_memory_bytes`, and `reserved_fits` per stage (about a
    microsecond an allocation; off where only the time is wanted). A replay
    that runs past that memory (where PyTorch would raise its out-of-memory
    error after releasing its cached segments) is reported, not refused:
    `reserved_fits` false and the diagnostic under `"reserved_oom"`; `fits`
    stays the allocated peak's (docs/calibration.md, "The caching allocator's
    reserved bytes": the replay
    would refuse a published run that ran)."""
    config, settings = configure(model, framework, **options)
    _check_outputs(trace, plot)
    if not allow_oom:
        ctx, module, memory = build_training_module(config, replay=reserved)
        oom = out_of_memory(module, memory, config.memory_limit_gb)
        if oom is not None:  # memory-analysis passed the allocated peak
            raise CharonError(oom["message"])
        report = time_module(ctx, module, config, memory, tier=tier, trace=trace, plot=plot)
        report["fits"] = True
        _report_reserved_past(report, module, memory, config.memory_limit_gb)
        report["framework"] = settings
        if config.cpu_offload_layers:
            report["cpu_offload"] = cpu_offload_report(config, memory, "cpu_offload_layers" in options)
        return report
    ctx, module, memory = build_training_module(replace(config, memory_limit_gb=UNLIMITED_GB), replay=reserved,
                                                replay_limit_gb=config.memory_limit_gb)
    oom = out_of_memory(module, memory, config.memory_limit_gb)
    if oom is not None:
        trace = plot = None
    report = time_module(ctx, module, config, memory, tier=tier, trace=trace, plot=plot)
    report["fits"] = oom is None
    _report_reserved_past(report, module, memory, config.memory_limit_gb)
    report["framework"] = settings
    if config.cpu_offload_layers:
        report["cpu_offload"] = cpu_offload_report(config, memory, "cpu_offload_layers" in options)
    if oom is not None:
        report["oom"] = oom
    return report


def _report_reserved_past(report: dict[str, Any], module, memory: list, limit_gb: float) -> None:
    """The diagnostic of a stage whose allocator replay ran past its memory, under
    `"reserved_oom"`: reported beside the time, never a refusal."""
    over = reserved_out_of_memory(module, memory, limit_gb)
    if over is not None:
        report["reserved_oom"] = over


def _check_outputs(trace: str | Path | None, plot: str | Path | None) -> None:
    """A trace or plot path that cannot be written fails before the run, not
    after it (and a trace is never written beside plots that then fail)."""
    if trace is not None:  # an empty path was taken for no trace at all
        check_output_file(trace, "--trace")
    if plot is not None:
        check_output_dir(plot, "--plot")


UNLIMITED_GB = math.inf
"""memory-analysis' limit when a configuration is timed whether or not it fits."""


def out_of_memory(module, memory: list, limit_gb: float = 0.0) -> dict[str, Any] | None:
    """None when every stage fits in `limit_gb` (0: the GPU's HBM); otherwise the
    memory-analysis diagnostic of the stage that needs the most, as a dict:
    stage, peak and capacity bytes, its three largest consumers, and the one-line
    message `charon simulate` prints."""
    if not memory:
        return None
    gpus = stage_gpus(module) or [Target.from_module(module).gpu]

    def capacity_of(stage: int) -> float:
        return limit_gb * GIB if limit_gb > 0 else gpus[stage % len(gpus)].hbm_bytes

    # the stage most over its own GPU's memory
    worst = max(memory, key=lambda r: (r.peak - capacity_of(r.stage), r.peak, -r.stage))
    capacity = capacity_of(worst.stage)
    if worst.peak <= capacity:
        return None
    return {
        "stage": worst.stage,
        "peak_bytes": int(worst.peak),
        "capacity_bytes": int(capacity),
        "largest": [{"what": label, "bytes": int(n)} for label, n in worst.top(3)],
        "message": worst.oom_message(capacity),
    }


def reserved_out_of_memory(module, memory: list, limit_gb: float = 0.0) -> dict[str, Any] | None:
    """The diagnostic of the first stage whose allocator replay ran past its
    memory (`StageMemory.reserved_fits`), with `"reserved": true`; None when
    every replay fit or none ran."""
    over = next((r for r in memory if r.reserved_fits is False), None)
    if over is None:
        return None
    capacities = replay_capacities(module, limit_gb)  # what the replay ran on
    capacity = capacities[over.stage % len(capacities)]
    return {
        "stage": over.stage,
        "peak_bytes": int(over.peak),
        "reserved_bytes": int(over.reserved),
        "capacity_bytes": int(capacity),
        "largest": [{"what": label, "bytes": int(n)} for label, n in over.top(3)],
        "reserved": True,
        "message": over.reserved_oom_message(capacity),
    }


def overlap_model(config: TrainingConfig, gpu):
    """The interpreter's overlap contention: the config's slowdowns where set,
    else the calibrated one of the GPU type (a GpuSpec)."""
    return calibrated_overlap(gpu, config.compute_slowdown, config.comm_slowdown)


def time_module(
    ctx,
    module,
    config: TrainingConfig,
    memory: list | None = None,
    *,
    tier: str = "fast",
    trace: str | Path | None = None,
    plot: str | Path | None = None,
) -> dict[str, Any]:
    """The report of a built (priced, memory-checked) training module, which it
    lowers in place (`runtime.tiers.time_module`); `memory` is its per-stage
    StageMemory (computed if None)."""
    if memory is None:
        memory = _memory(module, config)
    target = Target.from_module(module)
    by_stage = stage_gpus(module)  # read before lowering erases the stages
    report = tiers.time_module(ctx, module, memory, overlap_model(config, target.gpu), pp=config.pp,
                               vpp=config.vpp, lowering=lowering_options(config), tier=tier,
                               trace=trace, plot=plot)
    # the energy of the step as timed (extrapolated from fewer micro-batches too)
    return add_training_energy(report, target, by_stage)



def simulate_file(
    path: str | Path,
    *,
    hardware: str,
    gpus: int = 8,
    gpus_per_node: int = 0,
    cluster: str = "",
    precision: str = "bf16",
    engines: tuple[str, ...] = ("analytic",),
    trace: str | Path | None = None,
) -> dict:
    """A hand-written `sim` module as it is (no parallelism passes): target it
    (on `cluster` when one is given, as `simulate` does), price it (its GEMMs on
    the fp8 tensor cores under `precision="fp8"`), lower it and interpret it with
    the GPU type's calibrated overlap contention."""
    if gpus < 1:  # set-target would read 0 as "every GPU of the cluster"
        raise CharonError(f"--gpus must be >= 1, got {gpus}")
    check_precision(precision, hardware, cluster)
    _check_outputs(trace, None)
    ctx, module = load_model_module(str(path), seq_len=0, batch=0)
    target: dict[str, Any] = {"hardware": hardware, "gpus": gpus, "gpus_per_node": gpus_per_node}
    if cluster:
        target["cluster"] = cluster
    make_pass("set-target", **target).apply(ctx, module)
    # every GEMM as written on the fp8 tensor cores (no Transformer Engine layers to
    # tell apart from an output layer in a hand-written step)
    make_pass("cost-annotate", engines=engines, fp8_gemms=precision == "fp8").apply(ctx, module)
    make_pass("lower-to-events").apply(ctx, module)
    overlap = calibrated_overlap(Target.from_module(module).gpu)
    return simulate_module(ctx, module, overlap, trace=str(trace) if trace else None)
