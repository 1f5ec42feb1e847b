"""Evaluating points: the simulator's pass pipeline with shared prefixes.

A training point is the pass pipeline of `charon_ir.api.build_training_module`
(import, shard-tensor, sequence-parallel, shard-context, shard-expert, fuse,
pipeline, data-parallel, recompute, set-target) followed by memory-analysis and
cost-annotate, then the fast-tier timing of `charon_ir.api.simulate`. Two
changes make a sweep cheap without changing any answer:

- The model is imported (parsed) once per (model, seq_len, micro-batch) and
  every point starts from a clone of it.
- Points are visited in the order of their pass steps, so neighbours share a
  prefix of the pipeline (same micro-batch and tp, say, different pp): the
  module after the shared prefix is kept and the next point clones it instead of
  redoing those passes. Only the snapshot the next point needs is kept, so
  memory stays at a few modules whatever the sweep's size.

memory-analysis runs before cost-annotate (it reads shapes and the target, not
costs), so a point that cannot fit is pruned before it is priced or timed.

What is kept between points is keyed by every option it depends on and bounded:
the imported modules by (model, seq_len, micro-batch) in an LRU of
`IMPORT_CACHE_SIZE`; snapshots by the exact pass steps before them (a point's
whole plan, options included, is its key path), at most one per depth of the
current path; prefixes known to fail likewise, in an LRU of `FAILED_CACHE_SIZE`.
A snapshot no later point needs is handed to the point itself instead of cloned,
and the built module goes to the timing as it is (nothing else refers to it).
`TrainingEvaluator(cache=False)` keeps nothing: every point is imported and
built from scratch, as `charon simulate` does (tests compare the two byte for
byte).

The cyclic garbage collector is off while a point is built and timed (the
passes allocate hundreds of thousands of IR objects, and each full collection
would walk every live module again: it was most of a build's time); the
youngest generation, which holds what the point allocated, is collected after
it.
"""

from __future__ import annotations

import gc
import json
import time
import traceback
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any

from charon_ir import api
from charon_ir.api import (TrainingConfig, imports_tensor_parallel, load_model_module, overlap_model, pass_plan,
                           time_module)
from charon_ir.dialects.sim import HF_PARAM_COUNT_ATTR
from charon_ir.errors import CharonError
from charon_ir.memory import peak_bytes_per_stage
from charon_ir.passes import recompute as recompute_pass
from charon_ir.sweep import screen
from charon_ir.sweep.hardware import cluster_file, has_hardware_axes, point_hardware
from charon_ir.sweep.space import TRAINING_DEFAULTS, ModelShape, Point, states_lower_bound
from charon_ir.target.cluster import load_cluster
from charon_ir.target.hardware import load_gpu
from charon_ir.testing import make_context

Step = tuple[str, tuple[tuple[str, Any], ...]]
"""A pass of the pipeline and its options, hashable and ordered."""

STATUS_OK = "ok"
STATUS_ILLEGAL = "illegal"
STATUS_OOM = "oom"
STATUS_ERROR = "error"

IMPORT_CACHE_SIZE = 4
"""Imported modules kept per evaluator (LRU): one per (model, seq_len,
micro-batch); a 70B training import is a few MB of IR."""
FAILED_CACHE_SIZE = 256
"""Pass prefixes known to fail, kept per evaluator (LRU)."""
OUTCOMES_KEPT = 64
"""Fast-tier outcomes kept per evaluator (LRU), for points whose module is
another's (a recompute policy that rewrites nothing)."""


def _step(name: str, **options: Any) -> Step:
    return name, tuple(sorted(options.items()))


_SETTING_FIELDS = tuple(k for k in TRAINING_DEFAULTS if k in {f.name for f in fields(TrainingConfig)}
                        and k not in ("hardware", "gpus_per_node", "cluster", "engines", "blocking_comm"))
"""The point settings that are TrainingConfig fields of the same name and value
(every setting a preset decides among them: test_space)."""


def training_config(config: dict[str, Any]):
    """The api's TrainingConfig of a point, with a synthesised cluster when the
    point sweeps network settings."""
    cluster = config["cluster"]
    if has_hardware_axes(config):
        cluster = cluster_file(config, config["gpus"])
    hardware = point_hardware(config)
    return TrainingConfig(
        **{k: config[k] for k in _SETTING_FIELDS},
        hardware="" if cluster and not hardware else hardware,
        gpus_per_node=0 if cluster else config["gpus_per_node"],
        cluster=cluster,
        # comma-separated in a point
        engines=tuple(e.strip() for e in str(config["engines"]).split(",") if e.strip()),
        blocking_comm=tuple(a.strip() for a in config["blocking_comm"].split(",") if a.strip()),
    )


def training_steps(config) -> tuple[Step, ...]:
    """The import, then the pass steps of a TrainingConfig in api.pass_plan's order."""
    # a model imported already split by tensor parallelism is imported per tp
    split = ({"tp": config.tp, "sequence_parallel": config.sequence_parallel}
             if config.tp > 1 and imports_tensor_parallel(config.model) else {})
    steps = [_step("import", model=config.model, seq_len=config.seq_len, batch=config.micro_batch, **split)]
    steps += [_step(name, **options) for name, options in pass_plan(config)]
    return tuple(steps)


def _sort_key(steps: tuple[Step, ...]) -> str:
    return json.dumps(steps, default=str)


def sharing_order(points: Iterable[Point]) -> list[Point]:
    """Points ordered so that neighbours share the longest pipeline prefixes."""
    keyed = []
    for point in points:
        try:
            key = _sort_key(training_steps(training_config(point.config)))
        except Exception:  # noqa: BLE001 - a bad point sorts last and fails when run
            key = "\uffff" + point.key
        keyed.append((key, point))
    keyed.sort(key=lambda kp: kp[0])
    return [p for _, p in keyed]


def _common_prefix(a: tuple[Step, ...], b: tuple[Step, ...]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def record(point: Point, status: str, *, error: str = "", metrics: dict | None = None,
           seconds: float = 0.0, cpu_seconds: float = 0.0) -> dict:
    """The stored form of one evaluated point: wall and CPU seconds it cost (CPU
    is what a shared machine cannot inflate)."""
    return {
        "key": point.key,
        "config": point.config,
        "status": status,
        "error": error,
        "metrics": metrics,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
    }


class Clock:
    """Wall and CPU time since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def spent(self) -> dict[str, float]:
        return {"seconds": time.perf_counter() - self.wall, "cpu_seconds": time.process_time() - self.cpu}


def summarise_training(report: dict[str, Any], gpus: int) -> dict[str, Any]:
    """The part of a report a sweep keeps: headline numbers and the breakdown."""
    peaks = [int(p) for p in (report.get("peak_memory_bytes") or [])]
    return {
        "tier": "fast",
        "iteration_time_s": report["iteration_time_s"],
        "tokens_per_s": report.get("tokens_per_s") or 0.0,
        "tflops_per_gpu": report.get("tflops_per_gpu") or 0.0,
        "mfu": report.get("mfu") or 0.0,
        "hfu": report.get("hfu") or 0.0,
        "peak_memory_bytes": peaks,
        "max_peak_memory_bytes": max(peaks) if peaks else 0,
        "breakdown": report.get("breakdown") or {},
        "gpus": gpus,
        "engines": report.get("engines") or {},
        "energy_j": report.get("energy_j"),
        "tokens_per_joule": report.get("tokens_per_joule"),
    }


class TrainingEvaluator:
    """Runs training points, sharing imports and pass prefixes between them.

    One evaluator lives in one process (the in-process run, or each pool or Ray
    worker); `evaluate` takes points already in `sharing_order`."""

    def __init__(self, cache: bool = True, tier: str = "fast", imports: TrainingEvaluator | None = None) -> None:
        """`imports`: another evaluator of this process whose parsed models (and
        context) this one shares: a sweep's screen and the fast tier that
        re-times its best points parse each model once."""
        self.ctx = imports.ctx if imports is not None else make_context()
        self.cache = cache
        """False: the fast tier keeps nothing between points (no import, snapshot,
        outcome or failure reused), the reference the cached evaluation must
        equal. The screening tier keeps its probes (`probes`) either way."""
        self.tier = tier
        """fast: every point built and timed by the fast tier; screen: points the
        screening tier models are composed from their layer class's probe
        (`charon_ir.sweep.screen`), the rest as fast."""
        self.probes: screen.ProbeCache = imports.probes if imports is not None else screen.ProbeCache()
        """The screening tier's probes and the modules they share; a fast-tier
        build starts from the module of its passes before the pipeline when a
        probe of its layer built it."""
        self._imports: OrderedDict[Step, Any] = imports._imports if imports is not None else OrderedDict()
        self._snapshots: list[tuple[int, Any]] = []
        self._path: tuple[Step, ...] = ()
        self._failed: OrderedDict[tuple[Step, ...], str] = OrderedDict()
        self._shapes: dict[str, ModelShape | None] = {}
        self._outcomes: OrderedDict[str, tuple[str, str, dict | None]] = OrderedDict()
        """Fast-tier outcomes by configuration (repr), of the last OUTCOMES_KEPT points."""
        self._same_as: str | None = None

    def forget_outcomes(self) -> None:
        """Start the next sweep without this one's outcomes and probes
        (`workers.forget_outcomes`)."""
        self._outcomes.clear()
        self._same_as = None
        self.probes.clear()

    def _states_overflow(self, point: Point, config) -> str:
        """The memory model's closed-form bound: a point whose model states alone
        exceed the GPU is out of memory before its IR is even built."""
        model = point.config["model"]
        if model not in self._shapes:
            shape = ModelShape.of(model)
            if shape is not None and not shape.params:
                # the frontend records the HF parameter count on the imported module
                imported = self.imported_model(model, point.config["seq_len"], point.config["micro_batch"])
                count = imported.attributes.get(HF_PARAM_COUNT_ATTR)
                if count is not None:
                    shape = replace(shape, params=count.value.data)
            self._shapes[model] = shape
        need = states_lower_bound(point.config, self._shapes[model])
        if not need:
            return ""
        gib = 2**30
        # memory-analysis' limit: the point's own, else the GPU's HBM
        capacity = config.memory_limit_gb * gib if config.memory_limit_gb > 0 else _hbm_bytes(config)
        if need <= capacity:
            return ""
        return (
            f"memory-analysis: model states alone need at least {need / gib:.1f} GiB per GPU "
            f"of {capacity / gib:.1f} GiB (tp x pp x ep = {config.tp * config.pp * config.ep}, "
            f"zero {config.zero}, dp {point.config['dp']}); pruned before building the IR"
        )

    # -- the pipeline ---------------------------------------------------------

    def imported_model(self, model: str, seq_len: int, batch: int, **split: Any):
        """The model's imported module, parsed once per process (never mutated);
        `split`: the tp (and sequence parallelism) a Megatron-Core model is
        imported at."""
        step = _step("import", model=model, seq_len=seq_len, batch=batch, **split)
        if step in self._imports:
            self._imports.move_to_end(step)
            return self._imports[step]
        _, module = load_model_module(model, seq_len=seq_len, batch=batch, ctx=self.ctx, **split)
        if self.cache:
            self._imports[step] = module
            while len(self._imports) > IMPORT_CACHE_SIZE:
                self._imports.popitem(last=False)
        return module

    def parse_models(self, points: list[Point]) -> None:
        """Parse now the models `points` import (up to IMPORT_CACHE_SIZE): workers
        forked after it start with them instead of each parsing its own. A
        model that fails is left for its points to report."""
        # one point per (model, sequence, micro-batch, and the tp a model may be imported at)
        first: dict[tuple, Point] = {}
        for p in points:
            c = p.config
            first.setdefault((c["model"], c["seq_len"], c["micro_batch"], c.get("tp"), c.get("sequence_parallel")), p)
        steps = set()
        for p in first.values():
            try:
                steps.add(training_steps(training_config(p.config))[0])
            except CharonError:
                continue
        for step in sorted(steps)[:IMPORT_CACHE_SIZE]:
            try:
                self.imported_model(**dict(step[1]))
            except Exception:  # noqa: BLE001 - the points' own evaluation reports it
                continue

    def _import(self, step: Step):
        options = dict(step[1])
        module = self.imported_model(**options)
        # uncached, the import is this point's own; cached, it is shared
        return module.clone() if self.cache else module

    def _apply(self, step: Step, module):
        name, options = step
        if name == "import":
            return self._import(step)
        api.make_pass(name, **dict(options)).apply(self.ctx, module)
        return module

    def _build(self, steps: tuple[Step, ...], keep: int, same: str | None = None):
        """The module after `steps` (this point's own: nothing else refers to it),
        from the deepest snapshot on its path; keeps a copy after the first `keep`
        steps for the next point. `same`: the key of the point without
        recomputation, whose outcome this one has when its recompute pass
        rewrites nothing (raises _SameAs when that outcome is known; else
        `_same_as` is set to it)."""
        self._same_as = None
        if not self.cache:
            keep = 0
            self._snapshots.clear()
        common = _common_prefix(steps, self._path)
        while self._snapshots and self._snapshots[-1][0] > common:
            self._snapshots.pop()
        self._path = steps
        for n in range(1, len(steps) + 1):
            if steps[:n] in self._failed:
                self._failed.move_to_end(steps[:n])
                raise CharonError(self._failed[steps[:n]])
        level, module = 0, None
        shared, prefix = self.probes.shared_prefix(steps) if self.cache else (0, None)
        if self._snapshots:
            level, snapshot = self._snapshots[-1]
            if keep < level:
                # the next point shares less than this snapshot: no one else needs it
                self._snapshots.pop()
                module = snapshot
            elif shared <= level:
                module = snapshot.clone()
        if shared > level:
            level, module = shared, prefix.clone()
        for j in range(level, len(steps)):
            try:
                module = self._apply(steps[j], module)
            except CharonError as e:
                # every later point with this prefix fails the same way
                if self.cache:
                    self._failed[steps[: j + 1]] = str(e)
                    while len(self._failed) > FAILED_CACHE_SIZE:
                        self._failed.popitem(last=False)
                raise
            if same is not None and steps[j][0] == "recompute" and recompute_pass.rewrote_nothing(module):
                if same in self._outcomes:
                    raise _SameAs(same)
                self._same_as = same
            done = j + 1
            if done == keep and (not self._snapshots or self._snapshots[-1][0] < done):
                self._snapshots.append((done, module.clone()))
        return module

    # -- timing ----------------------------------------------------------------

    def _time(self, module, config) -> dict[str, Any]:
        """api.simulate's fast tier on a built module, which it lowers in place
        (`_build` gives each point its own). The per-stage peaks are the ones
        memory-analysis attached while building, not a second analysis."""
        memory = [_Peak(peak) for peak in peak_bytes_per_stage(module)]
        return time_module(self.ctx, module, config, memory, tier="fast")

    # -- points ------------------------------------------------------------------

    def evaluate(self, points: list[Point]) -> Iterator[dict]:
        """One record per point, in order; a failing point is recorded with its
        error and never stops the rest."""
        # plan first: a point's successor decides which snapshot to keep, and
        # points pruned without building must not count as successors
        planned: list[tuple[Point, Any, tuple[Step, ...], str, str]] = []
        for point in points:
            if point.pruned:
                planned.append((point, None, (), STATUS_ILLEGAL, point.pruned))
                continue
            try:
                config = training_config(point.config)
                steps = training_steps(config)
                overflow = self._states_overflow(point, config)
            except CharonError as e:
                planned.append((point, None, (), STATUS_ILLEGAL, str(e)))
                continue
            if overflow:
                planned.append((point, None, (), STATUS_OOM, overflow))
            else:
                planned.append((point, config, steps, "", ""))
        for i, (point, config, steps, status, error) in enumerate(planned):
            if status:
                yield record(point, status, error=error)
                continue
            if self.tier == "screen":
                screened = self._screen(point, config)
                if screened is not None:
                    yield screened
                    continue
            clock = Clock()
            following = next((s for _, _, s, _, _ in planned[i + 1 :] if s), ())
            collecting = gc.isenabled()
            # Building and timing a point allocate hundreds of thousands of IR
            # objects, which would trigger full collections that walk every
            # live module again and again (most of a build's time). Nothing
            # is collected during a point; afterwards the youngest generation,
            # which holds everything the point allocated, is, so a point's dead
            # modules are freed at the cost of one walk over them.
            gc.disable()
            try:
                status, error, metrics = self._run(steps, _common_prefix(steps, following), config)
            finally:
                gc.collect(0)
                if collecting:
                    gc.enable()
            yield record(point, status, error=error, metrics=metrics, **clock.spent())

    def _screen(self, point: Point, config) -> dict | None:
        """The point's record from the screening tier, or None when the fast tier
        must decide it: a configuration the screen does not model, a probe a
        pass refuses (a CharonError: the fast tier gives the point's own
        answer), or a composed peak within the margin of the GPU's memory. Any
        other exception is a bug: the point's error record says where."""
        if not screen.screenable(config):
            return None
        clock = Clock()
        # no collection while composing (it makes no cycles; a probe built here
        # collects what it allocated, `screen.building`)
        collecting = gc.isenabled()
        gc.disable()
        try:
            probe = screen.build_probe(self, config)
            if probe is None:
                return None
            target = screen.point_target(config)
            capacity = config.memory_limit_gb * 2**30 if config.memory_limit_gb else target.gpu.hbm_bytes
            step = screen.compose_shared(probe, config, target.topology, capacity,
                                         overlap_model(config, target.gpu))
        except CharonError:
            return None
        except Exception as e:  # noqa: BLE001 - a simulator bug must not stop a sweep
            return record(point, STATUS_ERROR, error=_bug(e), **clock.spent())
        finally:
            if collecting:
                gc.enable()
        peak = max(step.peaks)
        low, high = step.memory_band
        if low * capacity <= peak <= high * capacity:
            return None
        if peak > capacity:
            stage = step.peaks.index(peak)
            gib = 2**30
            return record(point, STATUS_OOM, error=(
                f"memory-analysis (screened): stage {stage} needs about {peak / gib:.1f} GiB "
                f"of {capacity / gib:.1f} GiB"), **clock.spent())
        metrics = screen.metrics(step, config, target)
        return record(point, STATUS_OK, metrics=metrics, **clock.spent())

    def _run(self, steps: tuple[Step, ...], keep: int, config) -> tuple[str, str, dict | None]:
        """Build and time one point: (status, error, metrics). Nothing it built
        outlives the call but the snapshots kept for the next point.

        A point whose recompute pass rewrites nothing (`passes.recompute.rewrote_nothing`)
        builds the module of the same point without recomputation: it has that
        point's outcome, kept (`OUTCOMES_KEPT`) so that one of the two is timed."""
        key = repr(config)
        if key in self._outcomes:
            self._outcomes.move_to_end(key)
            return self._outcomes[key]
        same = screen.without_recompute(config) if self.cache else None
        try:
            module = self._build(steps, keep, repr(same) if same is not None else None)
            report = self._time(module, config)
            outcome: tuple[str, str, dict | None] = (STATUS_OK, "", summarise_training(report, config.gpus))
        except _SameAs as known:
            return self._outcomes[known.key]
        except CharonError as e:
            status = STATUS_OOM if str(e).startswith("memory-analysis:") else STATUS_ERROR
            outcome = (status, str(e), None)
        except Exception as e:  # noqa: BLE001 - a simulator bug must not stop a sweep
            outcome = (STATUS_ERROR, _bug(e), None)
        if self.cache:
            for k in (key, self._same_as):
                if k is not None:
                    self._outcomes[k] = outcome
            while len(self._outcomes) > OUTCOMES_KEPT:
                self._outcomes.popitem(last=False)
        return outcome


def _bug(e: Exception) -> str:
    """A point's error for an exception no rule foresaw: its type, message and
    where it was raised."""
    where = traceback.extract_tb(e.__traceback__)[-1]
    return f"{type(e).__name__}: {e} ({where.filename}:{where.lineno})"


class _SameAs(Exception):  # noqa: N818 - a signal, not an error
    """A point's module is another's, whose outcome is known (`key`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


@dataclass(frozen=True)
class _Peak:
    """A stage's peak bytes as memory-analysis attached them: all of a
    StageMemory the fast tier reads (no trace, no plot)."""

    peak: int
    reserved: int | None = None
    """The allocator's replayed reserved bytes: not replayed for a sweep point."""


def _hbm_bytes(config) -> float:
    if config.cluster:
        return load_cluster(config.cluster).gpu.hbm_bytes
    return load_gpu(config.hardware).hbm_bytes
