"""Energy of a training step or a serving run, from what each GPU does over the
timeline (docs/calibration.md, "Energy").

A GPU's board power is its idle power plus a share of its dynamic range
(TDP - idle), by what it does:

- computing: COMPUTE_FLOOR + (1 - COMPUTE_FLOOR) x tensor-core utilisation (the
  FLOPs done over what the computing time could do at peak): a kernel running at
  all keeps SMs, caches and HBM clocked (memory-bound work draws the floor),
  tensor-core math at peak draws the TDP;
- communicating with nothing computing beside it: COMM_ACTIVITY (NCCL's kernels
  on a few SMs, HBM reads and writes, the NVLink SerDes, which sit on the board
  and inside its TDP);
- waiting (pipeline bubbles, idle replicas): idle power.

NICs sit outside the GPU's board power and draw about the same whether they
send or not: NIC_POWER_W each, shared out per GPU, for the whole run.
Energy is power times time, per rank class (pipeline stage), summed over GPUs.
"""

from __future__ import annotations

from typing import Any

from charon_ir.target.hardware import GpuSpec

COMPUTE_FLOOR = 0.5
"""Share of the dynamic range drawn by a kernel that uses no tensor cores."""
COMM_ACTIVITY = 0.15
"""Share of the dynamic range drawn while only collectives run."""
NIC_POWER_W = 25.0
"""One 400 Gb/s-class NIC with its optics (an assumption of the order NIC spec
sheets give, not a measured value)."""


def nics_per_gpu(cluster: Any) -> float:
    """NICs per GPU of a Cluster (target.cluster)."""
    return cluster.nics.count / cluster.gpus_per_node if cluster.gpus_per_node else 0.0


def add_training_energy(report: dict[str, Any], target: Any,
                        stage_gpus: list[GpuSpec] | None = None) -> dict[str, Any]:
    """`report` with its energy (training_energy) on the target's GPU and NICs,
    or each stage's own GPU (`stage_gpus`, a cluster of several node kinds)."""
    report.update(training_energy(report, target.gpu, nics_per_gpu(target.topology), stage_gpus))
    return report


def board_power_w(gpu: GpuSpec, activity: float) -> float:
    """Idle power plus `activity` (0..1) of the dynamic range."""
    return gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * min(1.0, max(0.0, activity))


def compute_activity(gpu: GpuSpec, flops: float, compute_s: float) -> float:
    peak = gpu.peak("bf16")
    utilisation = min(1.0, flops / (compute_s * peak)) if compute_s > 0 and peak else 0.0
    return COMPUTE_FLOOR + (1.0 - COMPUTE_FLOOR) * utilisation


def _no_power(gpu: GpuSpec) -> dict[str, Any]:
    return {"energy_j": None, "tokens_per_joule": None,
            "energy": {"note": f"{gpu.name} states no power figures ([power] in its GPU file)"}}


def training_energy(report: dict[str, Any], gpu: GpuSpec, nics_per_gpu: float,
                    stage_gpus: list[GpuSpec] | None = None) -> dict[str, Any]:
    """`energy_j` (the whole job, one step), `tokens_per_joule` and the split of
    a step's energy, from a training report's stages (compute, exposed
    communication, bubble per rank class) and FLOPs; each stage on `gpu`, or on
    its own of `stage_gpus`."""
    stages = report.get("stages") or [report["breakdown"]]
    by_stage = stage_gpus if stage_gpus and len(stage_gpus) == len(stages) else [gpu] * len(stages)
    missing = [g for g in by_stage if not g.has_power]
    if missing:
        return _no_power(missing[0])
    step = float(report["iteration_time_s"])
    mean_compute = sum(float(s["compute_s"]) for s in stages) / len(stages)
    activities = {g: compute_activity(g, float(report["flops_per_gpu"]), mean_compute)
                  for g in dict.fromkeys(by_stage)}
    activity = activities[by_stage[0]]
    compute_j = comm_j = idle_j = 0.0
    for s, own in zip(stages, by_stage):
        compute_s = float(s["compute_s"])
        bubble_s = float(s["bubble_s"])
        comm_s = max(0.0, step - compute_s - bubble_s)
        compute_j += compute_s * board_power_w(own, activities[own])
        comm_j += comm_s * board_power_w(own, COMM_ACTIVITY)
        idle_j += bubble_s * own.idle_w
    n = len(stages)
    per_gpu = {"compute_j": compute_j / n, "comm_j": comm_j / n, "idle_j": idle_j / n,
               "nic_j": step * NIC_POWER_W * nics_per_gpu}
    gpu_j = sum(per_gpu.values())
    gpus = int(report["gpus"])
    energy_j = gpu_j * gpus
    tokens = float(report.get("tokens_per_s") or 0.0) * step
    return {
        "energy_j": energy_j,
        "tokens_per_joule": tokens / energy_j if tokens and energy_j > 0 else None,
        "energy": {
            "power_w_per_gpu": gpu_j / step if step > 0 else 0.0,
            "per_gpu_j": per_gpu,
            "compute_activity": activity,
            "tdp_w": gpu.tdp_w,
            "idle_w": gpu.idle_w,
        },
    }


def serving_energy(report: dict[str, Any], gpu_of: Any, nics_per_gpu: float,
                   model_flops_per_token: float) -> dict[str, Any]:
    """The same for a serving run: each replica computes while busy (its
    utilisation from the model FLOPs of the tokens it processed) and idles for
    the rest of the run. `gpu_of(role)` is the GpuSpec of a replica's role."""
    duration = float(report["duration_s"])
    replicas = report.get("replicas") or []
    gpus = {r["role"]: gpu_of(r["role"]) for r in replicas}
    missing = [g for g in gpus.values() if not g.has_power]
    if missing or not replicas:
        return _no_power(missing[0]) if missing else {"energy_j": None, "tokens_per_joule": None, "energy": {}}
    tokens = float(report.get("input_tokens", 0)) + float(report.get("output_tokens", 0))
    busy_gpu_s = sum(r["busy_s"] * r["gpus"] for r in replicas)
    flops = tokens * model_flops_per_token
    compute_j = idle_j = 0.0
    for r in replicas:
        gpu = gpus[r["role"]]
        # the run's FLOPs over its busy GPU-seconds: one utilisation for all
        activity = compute_activity(gpu, flops, busy_gpu_s)
        compute_j += r["busy_s"] * r["gpus"] * board_power_w(gpu, activity)
        idle_j += max(0.0, duration - r["busy_s"]) * r["gpus"] * gpu.idle_w
    n_gpus = sum(r["gpus"] for r in replicas)
    nic_j = duration * NIC_POWER_W * nics_per_gpu * n_gpus
    energy_j = compute_j + idle_j + nic_j
    output = float(report.get("output_tokens", 0))
    return {
        "energy_j": energy_j,
        "tokens_per_joule": output / energy_j if output and energy_j > 0 else None,
        "energy": {
            "power_w_per_gpu": energy_j / duration / n_gpus if duration > 0 and n_gpus else 0.0,
            "compute_j": compute_j,
            "idle_j": idle_j,
            "nic_j": nic_j,
            "joules_per_output_token": energy_j / output if output else None,
        },
    }
