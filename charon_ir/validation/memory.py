"""
Published per-GPU peak memory (`training_memory` records) against `memory-analysis`.

A record states a run (model, GPUs, FSDP / TP / PP / CP degrees, batch,
sequence, activation checkpointing, precision) and the peak memory one GPU of it
used; `memory_case` turns it into the options of a training run under the
record's framework preset, `run_memory` builds that run's step through the
passes up to `memory-analysis` (nothing is priced), and `charon validate --only
memory` (`runner.run_memory`) compares the fullest stage's predicted peak
reserved bytes with the published figure.

What is compared: the records publish the PyTorch caching allocator's peak
*reserved* bytes (`torch.cuda.memory_stats()['reserved_bytes.all.peak']`), the
segments it holds from cudaMalloc, which also hold the blocks it keeps cached or
cannot reuse (fragmentation, per-stream pools). The prediction is the same
quantity: the stage's allocations and frees over two steps, from the IR by
memory-analysis's liveness rules, replayed through the allocator's algorithm
(`memory.allocations`, `memory.allocator`); the note also gives the bytes the
step's tensors hold at their peak (the analysis's peak, allocated). Neither
counts the CUDA context, NCCL's own buffers or cuBLAS's workspaces. Each
result's note names what the run had that the analysis does not model
(torch.compile, Float8's scaling state, async TP's symmetric-memory buffers).

A record whose activation checkpointing is not a policy the analysis has
(`RECOMPUTE`) is reported as unsupported, with the reason.
"""

from __future__ import annotations

from typing import Any

from charon_ir import api
from charon_ir.memory import GIB, analyze_memory
from charon_ir.validation import record_gpu
from charon_ir.validation.training import Unsupported

GROUP = "memory"
QUANTITY = "peak memory per GPU (GiB)"

FRAMEWORK_PRESETS = {"torchtitan": "fsdp2"}
"""A record's framework (the first word of `strategy.framework`) -> the preset
it runs under."""

RECOMPUTE = {
    "full": "full",
    "none": "none",
    "selective op-level activation checkpointing": "selective-op",
}
"""Activation checkpointing as a record states it (before its parenthesis) ->
`--recompute`. torchtitan's op-level selective checkpointing (`mode =
'selective'`, `selective_ac_option = 'op'`) is the recompute pass's
`selective-op`; Megatron-Core's selective modules (`--recompute selective`) are
not it, nor is torchtitan's layer-level option (every n-th block checkpointed
whole), which no record here ran."""

NOT_MODELLED = {
    "torch_compile": "torch.compile (inductor chooses what to save and fuses)",
    "async_tp": "async TP's symmetric-memory buffers",
}


def memory_case(record: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """(model, `configure` options, what the run had that the analysis does not
    model) of a `training_memory` record; Unsupported with the reason if it
    cannot be run."""
    strategy, hardware = record["strategy"], record["hardware"]
    checkpointing = str(strategy["activation_checkpointing"]).split(" (")[0]
    if checkpointing not in RECOMPUTE:
        raise Unsupported(f"activation checkpointing '{checkpointing}' is not a policy "
                          f"memory-analysis models for these records ({', '.join(RECOMPUTE)})")
    framework = str(strategy["framework"]).split()[0]
    if framework not in FRAMEWORK_PRESETS:
        raise Unsupported(f"framework '{framework}' has no preset here ({', '.join(FRAMEWORK_PRESETS)})")
    tp, pp, cp, vpp = (int(strategy.get(k, 1)) for k in ("tp", "pp", "cp", "vp"))
    fsdp, gpus = int(strategy["fsdp"]), int(hardware["num_gpus"])
    if fsdp * tp * pp * cp != gpus:
        raise Unsupported(f"fsdp {fsdp} x tp {tp} x pp {pp} x cp {cp} is not the record's {gpus} GPUs")
    micro_batch = int(strategy["micro_batch"])
    microbatches = int(strategy.get("microbatches") or 1)
    if micro_batch * microbatches != int(strategy["local_batch"]):
        raise Unsupported(f"micro-batch {micro_batch} x {microbatches} is not the local batch "
                          f"{strategy['local_batch']}")
    options = {
        "framework": FRAMEWORK_PRESETS[framework], "hardware": record_gpu(record), "gpus": gpus,
        "gpus_per_node": int(hardware.get("gpus_per_node") or 8), "tp": tp, "pp": pp, "cp": cp, "vpp": vpp,
        "sequence_parallel": bool(strategy.get("sequence_parallel")), "seq_len": int(strategy["seq_len"]),
        "micro_batch": micro_batch, "global_batch": micro_batch * microbatches * fsdp,
        "recompute": RECOMPUTE[checkpointing],
        "precision": "fp8" if str(strategy["precision"]).startswith("fp8") else "bf16",
        # the published figure is what is compared: no limit refuses the run
        "memory_limit_gb": float("inf"),
    }
    if pp > 1:
        options["schedule"] = "interleaved" if vpp > 1 else "1f1b"
    missing = [what for key, what in NOT_MODELLED.items() if strategy.get(key)]
    return record["model"]["config"], options, missing


def predicted_stages(model: str, options: dict[str, Any]) -> list:
    """Per-stage memory of the run: its passes up to `memory-analysis` (the step
    is not priced)."""
    config, _ = api.configure(model, **options)
    plan = [(name, opts) for name, opts in api.pass_plan(config) if name != "cost-annotate"]
    ctx, module = api.load_model_module(config.model, seq_len=config.seq_len, batch=config.micro_batch,
                                        mtp=config.mtp, tp=config.tp, sequence_parallel=config.sequence_parallel)
    for name, opts in plan:
        api.make_pass(name, **opts).apply(ctx, module)
    fp8 = config.precision == "fp8"
    return analyze_memory(module, grad_bytes=config.grad_bytes, fp8=fp8, fp8_params=fp8 and config.fp8_params,
                          zero3_live_params=config.zero3_live_params,
                          zero3_keep_gathered=config.zero3_keep_gathered,
                          keep_stage_outputs=config.keep_stage_outputs,
                          fp32_param_shards=config.fp32_param_shards, replay=True)


def predicted_reserved(stages: list) -> int:
    """The compared figure: the fullest stage's replayed peak reserved bytes."""
    return max(s.reserved for s in stages)


def memory_note(record: dict[str, Any], stages: list, missing: list[str]) -> str:
    """What a compared record's result says: the fullest stage's reserved and
    allocated peaks and consumers, what the published figure is, what the run had
    that the analysis does not model, and the record's assumptions."""
    fullest = max(stages, key=lambda s: s.reserved)
    parts = ", ".join(f"{label} {b / GIB:.1f}" for label, b in fullest.consumers() if b >= GIB / 10)
    notes = [f"stage {fullest.stage}: reserved {fullest.reserved / GIB:.1f} GiB replayed, allocated peak "
             f"{fullest.peak / GIB:.1f} GiB ({parts})", "published: the allocator's peak reserved"]
    if missing:
        notes.append("not modelled: " + ", ".join(missing))
    notes += [f"assumed {a.split(' (')[0]}" for a in record.get("assumed", ())]
    return "; ".join(notes)
