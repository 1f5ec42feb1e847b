"""`charon simulate`: predict one training step (DESIGN.md section 7)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from charon_ir import api
from charon_ir.commands import on_command_line
from charon_ir.errors import CharonError
from charon_ir.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS
from charon_ir.report.table import print_report
from charon_ir.target.cluster import load_cluster
from charon_ir.target.hardware import with_power_cap

Opt = typer.Option

HAND_WRITTEN_IGNORES = (
    ("seq_len", "--seq-len"), ("micro_batch", "--micro-batch"), ("schedule", "--schedule"),
    ("fuse", "--fuse/--no-fuse"), ("tier", "--tier"), ("framework", "--framework"),
    ("overlap_grad_reduce", "--overlap-grad-reduce/--no-overlap-grad-reduce"),
    ("bucket_mb", "--bucket-mb"), ("fp8_recipe", "--fp8-recipe"), ("fp8_params", "--fp8-params/--no-fp8-params"),
    ("moe_dispatcher", "--moe-dispatcher"), ("etp", "--etp"), ("fused_cross_entropy", "--fused-cross-entropy/--no-fused-cross-entropy"),
    ("fuse_backward", "--fuse-backward/--no-fuse-backward"),
    ("moe_a2a_overlap", "--moe-a2a-overlap/--no-moe-a2a-overlap"),
    ("pp_send_overlap", "--pp-send-overlap/--no-pp-send-overlap"),
    ("cp_comm_type", "--cp-comm-type"), ("hierarchical_cp", "--hierarchical-cp"),
)
"""Flags that shape what the passes build: a .mlir step simulated as written has
its own shapes, kernels and schedule, and its one run is the fine tier's."""


PRESET_FLAG_PARAMETERS = {
    "dp_overlap_param_gather": "overlap_param_gather", "dp_overlap": "overlap_grad_reduce",
    "dp_bucket_mb": "bucket_mb",
}
"""TrainingConfig fields whose flag's parameter is named otherwise."""


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_command)


def parse_layout(text: str) -> tuple[int, ...]:
    """--pp-layout's comma-separated layer counts; () when not given."""
    if not text.strip():
        return ()
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise CharonError(f"--pp-layout: expected layer counts separated by commas (e.g. 15,16,16,15), "
                          f"got {text[:80]!r}") from None


def simulate_command(
    ctx: typer.Context,
    model: Annotated[str, Opt("--model", help="bundled name, config.json (or a model folder holding one), or a .mlir file")],
    hardware: Annotated[str, Opt("--hardware", help="GPU: a name (H100-SXM5-80GB), a GPU file (.toml) or a variant (H100:hbm_bw=6.7e12); with --cluster: the cluster's")] = "H100-SXM5-80GB",
    gpus: Annotated[int, Opt("--gpus", help="GPUs in the job")] = 8,
    gpus_per_node: Annotated[int, Opt("--gpus-per-node", help="0: the GPU's usual node")] = 0,
    cluster: Annotated[str, Opt("--cluster", help="a .cluster file or preset")] = "",
    power_cap: Annotated[float, Opt("--power-cap", help="board power limit per GPU, W: lower clocks and speed (docs/calibration.md, Energy)")] = 0.0,
    tp: Annotated[int, Opt("--tp", help="tensor parallel")] = 1,
    pp: Annotated[int, Opt("--pp", help="pipeline stages")] = 1,
    dp: Annotated[int, Opt("--dp", help="data parallel (0: gpus / (tp pp cp))")] = 0,
    cp: Annotated[int, Opt("--cp", help="context parallel")] = 1,
    cp_comm_type: Annotated[str, Opt("--cp-comm-type", help="with --cp: p2p (ring attention) | a2a (Ulysses all-to-all) | a2a+p2p (all-to-all within --hierarchical-cp ranks, the ring between them), as Megatron-Core's")] = "p2p",
    hierarchical_cp: Annotated[int, Opt("--hierarchical-cp", help="with --cp-comm-type a2a+p2p: ranks of the inner all-to-all group (Megatron-Core's --hierarchical-context-parallel-sizes A cp/A)")] = 0,
    ep: Annotated[int, Opt("--ep", help="expert parallel")] = 1,
    vpp: Annotated[int, Opt("--vpp", help="model chunks per pipeline stage")] = 1,
    pp_layout: Annotated[str, Opt("--pp-layout", help="layers of each virtual stage, comma-separated "
                                  "(e.g. 15,16,16,15; default: as even as possible)")] = "",
    framework: Annotated[str, Opt("--framework", help="the training stack whose defaults fill the flags not given: "
                                  + ", ".join(FRAMEWORKS))] = DEFAULT_FRAMEWORK,
    sequence_parallel: Annotated[bool, Opt("--sequence-parallel/--no-sequence-parallel", help="Megatron SP (megatron-core: on with --tp > 1)")] = False,
    zero: Annotated[int, Opt("--zero", help="ZeRO stage 0..3 (megatron-core: 1, its distributed optimizer)")] = 0,
    overlap_param_gather: Annotated[bool, Opt("--overlap-param-gather/--no-overlap-param-gather", help="ZeRO 1/2: gather updated parameters in the next forward, overlapping it (Megatron-Core)")] = False,
    overlap_grad_reduce: Annotated[bool, Opt("--overlap-grad-reduce/--no-overlap-grad-reduce", help="reduce gradients bucket by bucket during the backward (off: after it)")] = True,
    bucket_mb: Annotated[int, Opt("--bucket-mb", help="MiB per gradient-reduction bucket (megatron-core: max(40M, 1M x dp) parameters; none: 25)")] = 25,
    fsdp: Annotated[bool, Opt("--fsdp/--no-fsdp", help="FSDP (ZeRO-3)")] = False,
    seq_len: Annotated[int, Opt("--seq-len")] = 2048,
    global_batch: Annotated[int, Opt("--global-batch", help="sequences per step (0: dp x micro-batch)")] = 0,
    micro_batch: Annotated[int, Opt("--micro-batch")] = 1,
    recompute: Annotated[str, Opt("--recompute", help="none | selective | selective-op | full (selective-op: torchtitan's op-level selective checkpointing)")] = "none",
    recompute_modules: Annotated[str, Opt("--recompute-modules", help="with --recompute selective: the sub-blocks recomputed, comma separated: core_attn, layernorm, mla_up_proj, mlp, moe, moe_act, shared_experts (default: core_attn, as Megatron-Core's)")] = "",
    cpu_offload_layers: Annotated[int, Opt("--cpu-offload-layers", help="layers whose saved activations go to host memory after their forward and come back before their backward (Megatron-Core's --cpu-offloading --cpu-offloading-num-layers; needs --pp 1, no --recompute; 0: off, every preset's default)")] = 0,
    precision: Annotated[str, Opt("--precision", help="bf16 | fp8")] = "bf16",
    fp8_params: Annotated[bool, Opt("--fp8-params/--no-fp8-params", help="with fp8: the linears' weights kept in fp8 (NeMo's fp8_params; nemo-24.07 and megatron-bridge: on)")] = False,
    fp8_recipe: Annotated[str, Opt("--fp8-recipe", help="with fp8: delayed | current | mxfp8 | blockwise (megatron-core: delayed, mxfp8 on Blackwell)")] = "delayed",
    schedule: Annotated[str, Opt("--schedule", help="gpipe | 1f1b | interleaved | zb-h1")] = "",
    fused_cross_entropy: Annotated[bool, Opt("--fused-cross-entropy/--no-fused-cross-entropy", help="with --fuse: the loss as Transformer Engine's parallel cross entropy (bf16 logits saved, gradient in place; megatron-bridge: on)")] = False,
    fuse_backward: Annotated[bool, Opt("--fuse-backward/--no-fuse-backward", help="with --fuse: the backward of each fused norm, activation and RoPE as one kernel, as Transformer Engine runs it (default: autograd's pieces)")] = False,
    etp: Annotated[int, Opt("--etp", help="with --ep: expert tensor parallel, 1 or --tp (megatron-core: tp; megatron-bridge: 1, the tp ranks folded into the expert group)")] = 0,
    moe_a2a_overlap: Annotated[bool, Opt("--moe-a2a-overlap/--no-moe-a2a-overlap", help="with --ep: idealised overlap within the micro-batch, each expert all-to-all beside compute that does not read its result (Megatron-Core's overlap_moe_expert_parallel_comm, pairing micro-batches, is not modelled); --no-moe-a2a-overlap: each is waited for (megatron-core, nemo, megatron-bridge: off); refused with ep 1")] = True,
    pp_send_overlap: Annotated[bool, Opt("--pp-send-overlap/--no-pp-send-overlap", help="with --pp: a stage's sends run beside its next compute (Megatron-Core's overlap_p2p_comm, interleaved schedule); --no-pp-send-overlap: the compute waits for each send (megatron-core, nemo, megatron-bridge without --vpp: off); refused with pp 1")] = True,
    moe_dispatcher: Annotated[str, Opt("--moe-dispatcher", help="with --ep: alltoall (NCCL, every token copy) | flex (DeepEP / HybridEP: once per destination node and rank)")] = "alltoall",
    fuse: Annotated[bool, Opt("--fuse/--no-fuse", help="flash attention and fused kernels")] = True,
    tp_comm_overlap: Annotated[bool, Opt("--tp-comm-overlap/--no-tp-comm-overlap", help="pipeline tp all-gathers / reduce-scatters with their GEMMs (Megatron-Core; needs --sequence-parallel)")] = False,
    attention_kernel: Annotated[str, Opt("--attention-kernel", help="flash2 | flash3 | triton (default: flash2)")] = "",
    optimizer: Annotated[str, Opt("--optimizer", help="fused | unfused-fp16 | unfused-bf16 (Megatron-LM's mixed-precision optimizer)")] = "fused",
    unfused_grad_accumulation: Annotated[bool, Opt("--unfused-grad-accumulation/--no-unfused-grad-accumulation", help="add each micro-batch's weight gradients into the buffer in a kernel of their own (Megatron-LM 2021-22)")] = False,
    engines: Annotated[str, Opt("--engines", help="cost engine chain, comma separated")] = "analytic",
    host_launch_us: Annotated[float, Opt("--host-launch-us", min=0.0, help="microseconds the host takes to issue each kernel and collective (0: not modelled): a step of shorter kernels is bound by its launches")] = 0.0,
    no_mtp: Annotated[bool, Opt("--no-mtp", help="train without the multi-token-prediction modules a config asks for (DeepSeek-V3's num_nextn_predict_layers)")] = False,
    tier: Annotated[str, Opt("--tier", help="fast (layers and micro-batches folded) | fine (every event)")] = "fast",
    reserved: Annotated[bool, Opt("--reserved/--no-reserved", help="replay each stage's allocations through PyTorch's caching allocator for its peak reserved bytes, reported beside the allocated peak (--no-reserved: skip it, about a quarter less time)")] = True,
    as_json: Annotated[bool, Opt("--json", help="print the JSON report")] = False,
    trace: Annotated[str | None, Opt("--trace", help="write a Chrome/Perfetto trace")] = None,
    plot: Annotated[str | None, Opt("--plot", help="write PNG plots into this folder")] = None,
) -> None:
    """Simulate one training step and print the report.

    A configuration that does not fit in memory prints the memory diagnostic on
    one line and exits 1; with --json the whole report comes first on stdout,
    timed as if memory were unlimited, with "fits": false and "oom"."""
    hardware = step_hardware(ctx, locals())
    transformed = (
        (tp, pp, cp, ep, vpp, dp, zero) != (1, 1, 1, 1, 1, 0, 0) or global_batch or fsdp or pp_layout
        or sequence_parallel or tp_comm_overlap or overlap_param_gather or recompute != "none"
        or optimizer != "fused" or attention_kernel or unfused_grad_accumulation or cpu_offload_layers
    )
    if model.endswith(".mlir") and no_mtp:
        raise CharonError(f"--no-mtp: {model} is already IR, with what it holds (`charon import "
                          "--no-mtp` imports a model without its MTP modules)")
    if model.endswith(".mlir") and transformed and on_command_line(ctx, "seq_len"):
        raise CharonError(f"--seq-len: {model} is a hand-written step: its sequence length is the "
                          "file's shapes' (the passes shard them, they do not resize them)")
    if model.endswith(".mlir") and not transformed:
        # a hand-written step, and no flag asks for a pass: simulate it as written
        if plot is not None:
            raise CharonError(f"--plot: {model} is simulated as written (no flag asks for a pass), "
                              "which draws no plots; --trace writes its timeline")
        for name, flag in HAND_WRITTEN_IGNORES:
            if on_command_line(ctx, name):
                raise CharonError(f"{flag}: {model} is simulated as written (no flag asks for a "
                                  "pass): its shapes, kernels and schedule are the file's")
        report = api.simulate_file(
            model, hardware=hardware, gpus=gpus, gpus_per_node=gpus_per_node, cluster=cluster,
            precision=precision, engines=tuple(engines.split(",")), trace=trace,
        )
    else:
        report = api.simulate(
            model,
            framework=framework,
            trace=trace,
            plot=plot,
            # with --json a configuration that does not fit still prints its
            # whole report ("fits": false, "oom": ...), then fails below
            allow_oom=as_json,
            tier=tier,
            reserved=reserved,
            **step_options(ctx, locals()),
        )
    if as_json:
        print(json.dumps(report, indent=2), flush=True)
        if report.get("fits") is False:
            raise CharonError(report["oom"]["message"])
    else:
        print_report(report)


PRESET_SETTINGS = (
    "sequence_parallel", "zero", "fsdp", "dp_overlap_param_gather", "dp_overlap", "dp_bucket_mb",
    "tp_comm_overlap", "attention_kernel", "optimizer", "unfused_grad_accumulation", "fp8_recipe",
    "fp8_params", "moe_dispatcher", "etp", "fused_cross_entropy", "moe_a2a_overlap",
    "pp_send_overlap",
)
"""TrainingConfig settings a framework preset decides: passed only when their flag is given."""


def step_hardware(ctx: typer.Context, params: dict[str, Any]) -> str:
    """The GPU of the step: --hardware, the cluster's GPU when only --cluster is
    given (the --hardware default would contradict it), capped by --power-cap."""
    hardware, cluster = params["hardware"], params["cluster"]
    if cluster and not on_command_line(ctx, "hardware"):
        hardware = load_cluster(cluster).gpu.ref
    if on_command_line(ctx, "power_cap"):
        if cluster:
            raise CharonError("--power-cap with --cluster: cap the cluster file's GPU "
                              "(node { gpu = \"H100:power_cap=500\" })")
        hardware = with_power_cap(hardware, params["power_cap"])
    return hardware


def step_options(ctx: typer.Context, params: dict[str, Any]) -> dict[str, Any]:
    """The TrainingConfig options of simulate's flags (`params`: the command's
    parameters, `hardware` resolved by step_hardware); the settings a framework
    preset decides only when given, the rest being the preset's
    (`charon_ir.frameworks`). `charon export` builds its step from the same."""
    p = params
    given = {name: p[PRESET_FLAG_PARAMETERS.get(name, name)] for name in PRESET_SETTINGS
             if on_command_line(ctx, PRESET_FLAG_PARAMETERS.get(name, name))}
    if p.get("cpu_offload_layers"):  # off unless given: no preset turns it on
        given["cpu_offload_layers"] = p["cpu_offload_layers"]
    return dict(
        hardware=p["hardware"], gpus=p["gpus"], gpus_per_node=p["gpus_per_node"], cluster=p["cluster"],
        tp=p["tp"], pp=p["pp"], dp=p["dp"], cp=p["cp"], ep=p["ep"], vpp=p["vpp"],
        cp_comm_type=p.get("cp_comm_type", "p2p"), hierarchical_cp=p.get("hierarchical_cp", 0),
        pp_layout=parse_layout(p["pp_layout"]), seq_len=p["seq_len"], global_batch=p["global_batch"],
        micro_batch=p["micro_batch"], recompute=p["recompute"], precision=p["precision"],
        recompute_modules=tuple(m for m in p.get("recompute_modules", "").split(",") if m),
        schedule=p["schedule"], fuse=p["fuse"], fuse_backward=p.get("fuse_backward", False),
        engines=tuple(p["engines"].split(",")),
        host_launch_s=p.get("host_launch_us", 0.0) * 1e-6, mtp=not p.get("no_mtp", False), **given,
    )
