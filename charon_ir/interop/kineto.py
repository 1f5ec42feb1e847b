"""A measured step (a PyTorch profiler / Kineto Chrome trace) beside its simulation.

Both sides are cut into kernel classes — gemm, attention, elementwise (norms,
activations, copies, reductions), embedding, loss, optimizer, and communication
per mesh axis — and compared per class, per stream and for the whole step.

Measured side: the trace's last `ProfilerStep#N` window (the whole trace when it
has none). On a GPU trace the kernels are the `kernel` events (NCCL kernels are
communication; the rest compute), per CUDA stream. On a CPU trace the kernels
are the innermost `cpu_op` events of the step's threads: their self time is the
class's; the rest of the step (Python, the dispatcher, wrappers' own time) is
host overhead, which the simulator, pricing kernels, does not model unless a
calibration adds it (`calibration`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from charon_ir import api
from charon_ir.dialects import event
from charon_ir.engines.calibrated import probing
from charon_ir.errors import CharonError, read_json_file
from charon_ir.interop import calibration as user
from charon_ir.interop.kernel_classes import CLASSES, HOST, WORK_FLOPS, kernel_class
from charon_ir.profile.device import gpu_table_name, pricing_device
from charon_ir.report.summary import summarize
from charon_ir.runtime.flatten import KIND_COMM, KIND_JOIN, flatten_all
from charon_ir.runtime.interpreter import run
from charon_ir.runtime.timeline import measure as length, subtract, union
from charon_ir.target.target import Target

__all__ = ["CLASSES", "HOST", "WORK_FLOPS", "calibrate_profile", "kernel_class", "measure", "validate_profile"]


@dataclass
class StepBreakdown:
    """One training step broken down as `compare` sets the trace beside its
    simulation."""

    step_s: float
    classes: dict[str, float]
    """Seconds of kernel time per class (simulated: `comm:AXIS` per axis)."""
    streams: dict[str, float]
    """Busy seconds per stream (CPU: `compute` for the step's threads)."""
    kernels: dict[str, int]
    """Kernels (simulated: events) per class."""
    exposed_comm_s: float
    """Communication time no computation overlaps."""


@dataclass
class Measured(StepBreakdown):
    device: str
    """`cpu`, or the GPU's name from the trace's deviceProperties."""
    host_s: float = 0.0
    """CPU: step time no kernel accounts for."""
    launches: int = 0
    """GPU: kernels and copies the host launched in its step window."""
    host_window_s: float = 0.0
    """GPU: the host's step window (its `ProfilerStep#`)."""


def load_trace(path: str | Path) -> dict[str, Any]:
    """The trace's JSON (plain or gzipped); bad input is one line naming the file."""
    data = read_json_file(path, "Chrome trace (JSON)")
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise CharonError(f"{path}: not a Chrome trace: no traceEvents list")
    return data


def _events(data: dict, path: str) -> list[dict]:
    out = []
    for i, e in enumerate(data["traceEvents"]):
        if not isinstance(e, dict):
            raise CharonError(f"{path}: traceEvents[{i}] is not an object")
        if e.get("ph") != "X":
            continue
        try:
            e["ts"], e["dur"] = float(e["ts"]), float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            raise CharonError(f"{path}: traceEvents[{i}] ({e.get('name')!r}) has no numeric ts/dur") from None
        if e["dur"] < 0:
            raise CharonError(f"{path}: traceEvents[{i}] ({e.get('name')!r}) has a negative duration")
        out.append(e)
    return out


def measure(path: str | Path) -> Measured:
    """The measured step of a Kineto trace, in seconds."""
    data = load_trace(path)
    events = _events(data, str(path))
    # the host's step: a GPU trace also holds the step's projection onto the
    # GPU (`gpu_user_annotation`), which spans only part of its kernels
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") != "gpu_user_annotation"]
    if steps:
        step = max(steps, key=lambda e: e["ts"])
        lo, hi = step["ts"], step["ts"] + step["dur"]
    elif events:
        lo = min(e["ts"] for e in events)
        hi = max(e["ts"] + e["dur"] for e in events)
    else:
        raise CharonError(f"{path}: the trace has no complete ('X') events")
    inside = [e for e in events if e["ts"] >= lo and e["ts"] + e["dur"] <= hi + 1e-3]
    props = data.get("deviceProperties") or []
    gpu_kernels = _step_kernels(events, lo, hi)
    host_window = (hi - lo) * 1e-6
    launches = sum(1 for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                   and "Launch" in str(e.get("name", "")) and lo <= e["ts"] <= hi)
    if gpu_kernels:
        # the GPU runs behind the host: the step ends with the last kernel it launched
        hi = max(hi, max(e["ts"] + e["dur"] for e in gpu_kernels))
    classes: dict[str, float] = defaultdict(float)
    kernels: dict[str, int] = defaultdict(int)
    streams: dict[str, list[tuple[float, float]]] = defaultdict(list)
    host = 0.0
    if gpu_kernels:
        device = str(props[0].get("name", "cuda")) if props and isinstance(props[0], dict) else "cuda"
        for e in gpu_kernels:
            c = kernel_class(str(e.get("name", "")))
            classes[c] += e["dur"] * 1e-6
            kernels[c] += 1
            stream = (e.get("args") or {}).get("stream", e.get("tid"))
            lane = "comm" if c == "comm" else "compute"
            streams[f"{lane} (stream {stream})" if lane == "comm" else "compute"].append((e["ts"], e["ts"] + e["dur"]))
    else:
        device = "cpu"
        ops = [e for e in inside if e.get("cat") == "cpu_op"]
        if not ops:
            raise CharonError(f"{path}: no kernels (cat 'kernel') and no CPU ops (cat 'cpu_op') in the step")
        by_thread: dict[Any, list[dict]] = defaultdict(list)
        for e in ops:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
        for thread_ops in by_thread.values():
            thread_ops.sort(key=lambda e: (e["ts"], -e["dur"]))
            # each op's self time (its duration less its children's) goes to the
            # class of the nearest op around it, itself included, that names one
            # (aten::mm's resolve_conj is GEMM time); an aten op's otherwise is
            # elementwise; a wrapper's (autograd nodes, Python-level
            # record_functions) and the time between ops is host overhead
            stack: list[tuple[dict, str | None]] = []
            for e in thread_ops:
                while stack and e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"] - 1e-6:
                    stack.pop()
                own = kernel_class(str(e.get("name", "")))
                named = own if own != "elementwise" else None
                outer = stack[-1][1] if stack else None
                if stack:
                    stack[-1][0]["_child_s"] = stack[-1][0].get("_child_s", 0.0) + e["dur"]
                    stack[-1][0]["_has_op_child"] = True
                e["_class"] = outer or named or ("elementwise" if str(e.get("name", "")).startswith("aten::") else HOST)
                e["_first"] = named is not None and outer != named
                stack.append((e, outer or named))
            for e in thread_ops:
                self_s = max(e["dur"] - e.get("_child_s", 0.0), 0.0) * 1e-6
                c = e["_class"]
                classes[c] += self_s
                if e["_first"] or (c == "elementwise" and not e.get("_has_op_child")):
                    kernels[c] += 1
                if c != HOST:
                    streams["compute"].append((e["ts"], e["ts"] + e["dur"]))
        # host overhead: the step's time no kernel class accounts for (wrappers'
        # self time, and the Python between ops)
        classes.pop(HOST, None)
        host = (hi - lo) * 1e-6 - sum(v for k, v in classes.items() if k != "comm")
    unions = {name: union(iv) for name, iv in streams.items()}
    compute = unions.get("compute", [])
    comm = union([iv for name, ivs in streams.items() if name != "compute" for iv in ivs])
    exposed = subtract(comm, compute) * 1e-6
    return Measured(
        step_s=(hi - lo) * 1e-6, classes=dict(classes),
        streams={name: length(iv) * 1e-6 for name, iv in unions.items()},
        kernels=dict(kernels), exposed_comm_s=exposed, device=device, host_s=max(host, 0.0),
        launches=launches if gpu_kernels else 0, host_window_s=host_window if gpu_kernels else 0.0,
    )


def _step_kernels(events: list[dict], lo: float, hi: float) -> list[dict]:
    """The GPU kernels the host launched inside [lo, hi]: matched to their
    launch (`cuda_runtime` / `cuda_driver` events) by correlation id, since a
    kernel runs after its launch, past the host's step when the GPU lags; a
    kernel with no launch on record counts when it runs inside the window."""
    launches = {(e.get("args") or {}).get("correlation"): e["ts"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    launches.pop(None, None)
    kernels = []
    for e in events:
        if e.get("cat") != "kernel":
            continue
        launched = launches.get((e.get("args") or {}).get("correlation"))
        if launched is not None:
            if lo <= launched <= hi:
                kernels.append(e)
        elif e["ts"] >= lo and e["ts"] + e["dur"] <= hi + 1e-3:
            kernels.append(e)
    return kernels


@dataclass
class Predicted(StepBreakdown):
    compute_ops: int
    report: dict = field(default_factory=dict)


def predicted_of(timeline, report: dict) -> Predicted:
    """Per-class and per-stream seconds of a simulated step (its fine-tier timeline)."""
    program = timeline.program
    classes: dict[str, float] = defaultdict(float)
    kernels: dict[str, int] = defaultdict(int)
    compute_ops = 0
    for i in range(program.num_events):
        if program.kind[i] == KIND_JOIN:
            continue
        busy = float(program.duration[i])  # as priced: overlap contention is the stream's
        if program.kind[i] == KIND_COMM:
            c = "comm:" + program.streams[int(program.stream[i])].removeprefix("comm_")
        else:
            c = kernel_class(program.labels[i])
            compute_ops += 1
        classes[c] += busy
        kernels[c] += 1
    streams = {name: float(s["busy_s"]) for name, s in report.get("streams", {}).items()}
    exposed = sum((report.get("breakdown", {}).get("exposed_comm_s") or {}).values())
    return Predicted(float(report["iteration_time_s"]), dict(classes), streams, dict(kernels),
                     float(exposed), compute_ops, report)


def simulate_for_profile(model: str, device: str, **options) -> Predicted:
    """Simulate the step a trace measured (fine tier: every kernel an event),
    pricing with the calibration stored for `device` when the engine chain has
    `calibrated`."""
    with pricing_device(device):
        config, _ = api.configure(model, **options)
        ctx, module, _ = api.build_training_module(config)
        api.make_pass("lower-to-events", **api.lowering_options(config)).apply(ctx, module)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    overlap = api.overlap_model(config, Target.from_module(module).gpu)
    timeline = run(flatten_all(programs), overlap)
    report = summarize(timeline, Target.from_module(module))
    return predicted_of(timeline, report)


@dataclass
class Row:
    what: str
    measured_s: float | None
    predicted_s: float | None
    measured_n: int = 0
    predicted_n: int = 0

    @property
    def error(self) -> float | None:
        if not self.measured_s or self.predicted_s is None:
            return None
        return self.predicted_s / self.measured_s - 1.0


def compare(measured: Measured, predicted: Predicted) -> dict[str, list[Row]]:
    """Rows per kernel class, per stream, and for the step."""
    names = [c for c in CLASSES if c in measured.classes or c in predicted.classes]
    rows = [Row(c, measured.classes.get(c, 0.0), predicted.classes.get(c, 0.0),
                measured.kernels.get(c, 0), predicted.kernels.get(c, 0)) for c in names]
    comm_m = measured.classes.get("comm", 0.0)
    comm_p = sum(v for k, v in predicted.classes.items() if k.startswith("comm"))
    if comm_m or comm_p:
        rows.append(Row("comm", comm_m, comm_p, measured.kernels.get("comm", 0),
                        sum(v for k, v in predicted.kernels.items() if k.startswith("comm"))))
    if measured.device == "cpu":
        rows.append(Row(HOST, measured.host_s, None))
    streams = [Row(name, measured.streams.get(name), predicted.streams.get(name))
               for name in sorted(set(measured.streams) | set(predicted.streams))]
    step = [Row("step", measured.step_s, predicted.step_s),
            Row("exposed comm", measured.exposed_comm_s, predicted.exposed_comm_s),
            # communication hidden behind compute: all of it less what is exposed
            Row("overlapped comm", measured.classes.get("comm", 0.0) - measured.exposed_comm_s,
                max(comm_p - predicted.exposed_comm_s, 0.0))]
    return {"kernel class": rows, "stream": streams, "step": step}


def format_comparison(trace: str, measured: Measured, predicted: Predicted, calibration: str) -> str:
    def ms(x: float | None) -> str:
        return f"{x * 1e3:10.3f}" if x is not None else f"{'-':>10}"

    lines = [f"profile {trace} ({measured.device}) against its simulation ({calibration})",
             f"{'':16} {'measured ms':>11} {'predicted ms':>12} {'error':>8} {'kernels':>8} {'sim ops':>8}"]
    for section, rows in compare(measured, predicted).items():
        lines.append(f"-- per {section}" if section != "step" else "-- step")
        for r in rows:
            err = f"{r.error * 100:+7.1f}%" if r.error is not None else f"{'-':>8}"
            counts = f"{r.measured_n:8d} {r.predicted_n:8d}" if section == "kernel class" else ""
            lines.append(f"{r.what:16} {ms(r.measured_s)} {ms(r.predicted_s)}   {err} {counts}".rstrip())
    if measured.launches:
        # a step of short kernels is bound by the host that launches them, which
        # the simulator prices only when told its cost (`--host-launch-us`)
        per = measured.host_window_s / measured.launches
        lines.append(f"host: {measured.launches} launches in its {measured.host_window_s * 1e3:.3f} ms window, "
                     f"{per * 1e6:.1f} us a launch (charon simulate --host-launch-us)")
    return "\n".join(lines)


def comparison_json(measured: Measured, predicted: Predicted) -> dict:
    return {section: [{"what": r.what, "measured_s": r.measured_s, "predicted_s": r.predicted_s,
                       "error": r.error, "measured_kernels": r.measured_n, "simulated_ops": r.predicted_n}
                      for r in rows]
            for section, rows in compare(measured, predicted).items()}


def fit_calibration(measured: Measured, work: Predicted, compute_ops: int) -> dict[str, float]:
    """Seconds per unit of work per class (measured time / the step's work of
    that class, `work` being the step simulated under `probing`) and, on a CPU
    trace, the host overhead per simulated compute op that closes the step."""
    factors: dict[str, float] = {}
    for c, w in work.classes.items():
        if c.startswith("comm"):
            continue
        m = measured.classes.get(c)
        if m and w > 0:
            factors[c] = m / w
    # communication: one rate for every axis (a trace's NCCL kernels name no mesh axis)
    comm_w = sum(v for k, v in work.classes.items() if k.startswith("comm"))
    if measured.classes.get("comm") and comm_w > 0:
        factors["comm"] = measured.classes["comm"] / comm_w
    if measured.device == "cpu" and compute_ops:
        factors[HOST] = measured.host_s / compute_ops
    return factors


def _device_name(measured: Measured) -> str:
    """The profile-database device a trace's calibration is stored under: `cpu`,
    or the GPU table's name for the trace's CUDA device."""
    if measured.device == "cpu":
        return "cpu"
    return gpu_table_name(measured.device)


def validate_profile(trace: str, model: str, options: dict, as_json: bool = False) -> str:
    """`charon validate --profile`: the table (or JSON) of a trace against the
    simulation of its step, priced with the calibration in force for the
    trace's device when the engines name `calibrated`."""
    measured = measure(trace)
    device = _device_name(measured)
    predicted = simulate_for_profile(model, device, **options)
    in_force = user.active(device) if "calibrated" in options["engines"] else None
    how = (f"calibration of {device} v{in_force.version} from {in_force.source}" if in_force is not None
           else f"engines {','.join(options['engines'])}, no calibration of {device} in force")
    if as_json:
        return json.dumps({"trace": trace, "device": device, "calibration": how,
                           **comparison_json(measured, predicted)}, indent=2)
    return format_comparison(trace, measured, predicted, how)


def calibrate_profile(trace: str, model: str, options: dict, device: str = "") -> str:
    """`charon calibrate --profile`: fit the trace's rates, store them as the
    device's newest calibration and report the step before and after."""
    measured = measure(trace)
    device = device or _device_name(measured)
    engines = tuple(e for e in options["engines"] if e != "calibrated") or ("analytic",)
    plain = {**options, "engines": engines}
    before = simulate_for_profile(model, device, **plain)
    previous = user.active(device)
    with probing(CLASSES + ("comm",)):
        work = simulate_for_profile(model, device, **{**options, "engines": ("calibrated", *engines)})
    factors = fit_calibration(measured, work, work.compute_ops)
    if not factors:
        raise CharonError(f"{trace}: no kernel class of the trace matches the simulated step's: nothing to calibrate")
    stored = user.save(device, factors, str(Path(trace).resolve()))
    after = simulate_for_profile(model, device, **{**options, "engines": ("calibrated", *engines)})
    lines = [f"calibration of {device} v{stored.version} from {trace} "
             f"({'replaces v%d' % previous.version if previous else 'the first'}; "
             f"`charon calibrate --remove {device}` reverts it)"]
    for name, value in sorted(factors.items()):
        unit = ("s per op" if name == HOST else "s per FLOP (%.3g TFLOP/s)" % (1e-12 / value) if name in WORK_FLOPS
                else "s per byte (%.3g GB/s)" % (1e-9 / value) if value else "s per byte")
        lines.append(f"  {name:14} {value:.4g} {unit}")
    for label, p in (("before", before), ("after", after)):
        lines.append(f"step {label:6}: measured {measured.step_s * 1e3:.3f} ms, predicted "
                     f"{p.step_s * 1e3:.3f} ms ({(p.step_s / measured.step_s - 1) * 100:+.1f}%)")
    return "\n".join(lines)


def calibration_action(profile: str, remove: str, listing: bool, model: str, device: str, options: dict) -> str:
    """`charon calibrate --profile TRACE | --remove DEVICE | --list`."""
    if sum(map(bool, (profile, remove, listing))) > 1:
        raise CharonError("--profile, --remove and --list are separate actions: give one")
    if remove:
        gone = user.remove(remove)
        now = user.active(remove)
        return (f"calibration of {remove} v{gone.version} deactivated; in force now: "
                f"{f'v{now.version}' if now else 'none (the next engine of the chain prices)'}")
    if listing:
        rows = []
        for c in user.calibrations():
            current = user.active(c.device)
            state = ("in force" if current is not None and current.version == c.version
                     else "removed" if not c.active else "superseded")
            rows.append(f"{c.device} v{c.version} ({state}) from {c.source}: "
                        + " ".join(f"{k}={v:.4g}" for k, v in sorted(c.factors.items())))
        return "\n".join(rows) or "no user calibrations stored"
    if not model:
        raise CharonError("--profile: give --model, the traced step's model (and its --seq-len)")
    return calibrate_profile(profile, model, options, device)
