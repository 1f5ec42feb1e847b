"""Running a sweep: which points still need a result, who evaluates them, and
streaming their records into the results file.

Executors:
- in-process (default): one evaluator, points in sharing order, one record at
  a time.
- a local process pool (`jobs` > 1): contiguous batches of the sharing order, so
  each worker still shares pass prefixes inside its batch.
- Ray (`ray=True` starts a local cluster, `ray_address` joins one): the same
  batches as remote tasks.

The main process alone writes the store, committing as records arrive, so
killing a sweep loses at most the batches in flight; rerunning it skips every
key stored by the same simulator (`store.simulator_fingerprint`) and re-times
those another version stored.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import random
import socket
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from charon_ir import progress as progress_module
from charon_ir.errors import CharonError
from charon_ir.profile.store import default_db_path
from charon_ir.sweep.evaluate import STATUS_ILLEGAL, record, sharing_order
from charon_ir.sweep.screen import class_order
from charon_ir.sweep.space import Point, Space, load_space, point_defaults
from charon_ir.sweep.store import ResultStore, simulator_fingerprint
from charon_ir.sweep.workers import evaluate_points, evaluator, forget_outcomes, point_kind
from charon_ir.target.hardware import split_variant

RETIME_FIRST = 10
"""Screened records re-timed by the fast tier once the sweep has run: the best 10."""
RETIME_EXACT = 3
"""... then until the best 3 (the winner, the runner-up it is explained against,
and one more) are fast-tier records."""
MAX_POINTS = 10**6
"""The most points a sweep enumerates unless `--max-points` says more: a point takes
~1 ms to expand and check, so 10^6 are ~20 minutes before the first is timed."""
COMMIT_EVERY_S = 0.5
"""In-process: commit at least this often, so an interrupt loses under a second."""


@dataclass
class SweepResult:
    """Every point's record (in the space's order) and how this run went."""

    space: Space
    records: list[dict]
    elapsed_s: float = 0.0
    evaluated: int = 0
    """Points evaluated by this run (the rest were already stored)."""
    reused: int = 0
    stale: int = 0
    """Points whose stored record another simulator version timed: evaluated again."""
    db: str = ":memory:"
    executor: str = "in-process"
    counts: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    """Points of the space with no record yet (left for the next run by `limit`)."""


def _batches(points: list[Point], workers: int, limit: int = 32,
             group: Callable[[Point], Any] | None = None) -> list[list[Point]]:
    """Contiguous runs of the sharing order: several per worker for balance,
    never so small that neighbours stop sharing prefixes; with `group`, a
    batch ends only where the group changes (a screened layer's probes are
    built by one worker)."""
    if not points:
        return []
    size = max(1, min(limit, math.ceil(len(points) / (workers * 6))))
    if group is None:
        return [points[i : i + size] for i in range(0, len(points), size)]
    batches: list[list[Point]] = [[]]
    for point in points:
        last = batches[-1]
        if len(last) >= size and group(point) != group(last[-1]):
            batches.append(last := [])
        last.append(point)
    return batches


def _in_process(points: list[Point], tier: str = "fast") -> Iterator[dict]:
    yield from evaluator(point_kind(points), tier).evaluate(points)


class _Pool:
    """A local process pool kept for the whole sweep: its points, then the
    fast tier's re-timing of the best, so each worker reuses its parsed models.

    Linux forks the workers, at once, before the progress bar's thread starts:
    they start with this process's imports done instead of importing everything
    again (about a second of CPU each); the results file's connection, open by
    then, is copied into them but never used there. A worker only
    evaluates the points it is sent and returns their records; the results
    file, open here, is only ever written by this process. Elsewhere the
    workers are spawned."""

    def __init__(self, jobs: int, training: list[Point] | None = None, tier: str = "fast") -> None:
        """`training`: the sweep's training points, whose models are parsed
        here before the workers fork (each would parse every model it meets)."""
        fork = sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()
        if fork and training:
            evaluator("training", tier).parse_models(training)
        context = multiprocessing.get_context("fork" if fork else "spawn")
        self.jobs = jobs
        self.executor = ProcessPoolExecutor(max_workers=jobs, mp_context=context)
        # a forking pool starts every worker at its first task; what this
        # process holds by then (modules, parsed models) is frozen out of the
        # workers' collections, which would otherwise walk it (and copy each
        # page it lies on) again and again
        if fork:
            gc.freeze()
        try:
            self.executor.submit(os.getpid).result()
        finally:
            if fork:
                gc.unfreeze()

    def run(self, batches: list[list[Point]], tier: str) -> Iterator[dict]:
        pending = {self.executor.submit(evaluate_points, batch, tier): batch for batch in batches}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = pending.pop(future)
                    yield from _batch_records(batch, future.result, future.exception)
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self.executor.shutdown(cancel_futures=True)


def _batch_records(batch: list[Point], result: Callable[[], list[dict]], exception: Callable[[], Any]) -> list[dict]:
    """A batch's records, or one error record per point when the worker died."""
    error = exception()
    if error is None:
        return result()
    message = f"worker failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return [record(p, "error", error=message) for p in batch]


RAY_CONNECT_TIMEOUT_S = 5.0
"""How long `--ray-address HOST:PORT` waits for the address to answer before
failing (Ray itself retries for minutes)."""


def _ray_connect(jobs: int, address: str | None) -> bool:
    """Join the cluster at `address` or start a local one (before anything is
    written); True when it was started here (and must be shut down)."""
    try:
        import ray
    except ImportError:
        raise CharonError("--ray needs Ray: pip install 'charon-ir[sweep]' (or ray>=2.9)") from None
    if ray.is_initialized():
        return False
    where = f"--ray-address {address}: cannot join a Ray cluster" if address else \
        "--ray: cannot start a local Ray cluster"
    options: dict[str, Any] = {"log_to_driver": False}
    if address:
        _check_answers(address, where)
        options["address"] = address  # a running cluster keeps its own settings
    else:
        options.update(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False)
    try:
        ray.init(**options)
    except Exception as e:  # noqa: BLE001 - no cluster at the address, a bad address, no resources
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CharonError(f"{where} ({first})") from None
    return True


def _check_answers(address: str, where: str) -> None:
    """A HOST:PORT address (or ray://HOST:PORT) must accept a connection within
    RAY_CONNECT_TIMEOUT_S; `auto` and other forms are Ray's to resolve."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise CharonError(f"{where} (nothing answers at {host}:{port}: {reason})") from None


def _ray_shutdown(started_here: bool) -> None:
    if started_here:
        import ray

        ray.shutdown()


def _ray(points: list[Point], tier: str) -> Iterator[dict]:
    """The points on the connected cluster (`_ray_connect`; `run_sweep` shuts it down)."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=1)(evaluate_points)
    workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    pending = {remote.remote(batch, tier): batch for batch in _batches(points, workers)}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            batch = pending.pop(ref)
            try:
                records = ray.get(ref)
            except Exception as e:  # noqa: BLE001 - a lost worker fails its batch only
                records = [record(p, "error", error=f"ray task failed: {type(e).__name__}") for p in batch]
            yield from records


def check_options(*, jobs: int = 1, limit: int = 0, retime: int = 0, sample: int = 0) -> None:
    """Raise on a count out of its range (one line naming its flag)."""
    if jobs < 1:
        raise CharonError(f"--jobs must be >= 1 (1: in-process), got {jobs}")
    if limit < 0:
        raise CharonError(f"--limit must be >= 0 (0: no limit), got {limit}")
    if retime < -1:
        raise CharonError(f"--retime must be >= -1 (0: {RETIME_FIRST}; -1: none), got {retime}")
    if sample < 0:
        raise CharonError(f"sample must be >= 0 (0: every point), got {sample}")


def run_sweep(
    space: Space | str | Path | dict,
    *,
    db: str | Path = ":memory:",
    jobs: int = 1,
    ray: bool = False,
    ray_address: str | None = None,
    progress: bool = False,
    limit: int = 0,
    sample: int = 0,
    seed: int = 0,
    tier: str = "screen",
    retime: int = 0,
    max_points: int = MAX_POINTS,
) -> SweepResult:
    """Evaluate every point of `space` not yet in `db` and return all records.

    `limit` (> 0) stops after that many new evaluations: the rest stay for the
    next run, as after an interrupt. `sample` (> 0) evaluates that many of the
    legal points drawn at random (`seed`), a cross-section of the space for
    benchmarks (the first points of a space share its first axis values).

    `tier` (training): screen (default) composes the points it models from one
    probe per layer class (`charon_ir.sweep.screen`), then re-times the best
    `retime` of them (0: RETIME_FIRST; < 0: none) with the fast tier, and more
    until the best RETIME_EXACT are fast-tier records; fast times every point
    with the fast tier.

    A space of more than `max_points` points (the product of its axes, counted
    before any is built) is refused; with `limit` the points are enumerated as
    they are taken, so the first one is timed at once however large the space."""
    if tier not in ("screen", "fast"):
        raise CharonError(f"--tier must be screen or fast, got '{tier}'")
    check_options(jobs=jobs, limit=limit, retime=retime, sample=sample)
    if not isinstance(space, Space):
        space = load_space(space)
    if max_points < 1:
        raise CharonError(f"--max-points must be >= 1, got {max_points}")
    if space.size > max_points:
        raise CharonError(f"the space has {space.size:,} points, more than --max-points {max_points:,} "
                          "(fewer axis values, or a larger --max-points)")
    forget_outcomes()
    start = time.perf_counter()
    stream = space.iter_points()
    # the values are checked before the first point comes: before the results file exists
    first = next(stream, None)
    streaming = limit > 0 and sample == 0
    points = [first] if first is not None else []
    if not streaming:
        points.extend(stream)
    # a cluster that cannot be joined fails before the results file exists
    ray_started = _ray_connect(jobs if jobs > 1 else 0, ray_address) if ray or ray_address else False
    store = pool = None
    try:
        inputs = _space_points(space) if streaming else points
        store = ResultStore(db, simulator=simulator_fingerprint(_profile_db(inputs), _input_files(inputs)))
        stored = store.stored_keys()
        if streaming:
            # the first `limit` points with no record, and every one before them
            new = sum(p.key not in stored and not p.pruned for p in points)
            for point in stream if new < limit else ():
                points.append(point)
                new += point.key not in stored and not point.pruned
                if new >= limit:
                    break
        todo = [p for p in points if p.key not in stored]
        stale = store.stale_keys() & {p.key for p in todo}
        illegal = [p for p in todo if p.pruned]
        # illegal points cost nothing: stored at once, never sent to a worker
        store.put([record(p, STATUS_ILLEGAL, error=p.pruned) for p in illegal], space.kind)
        legal = [p for p in todo if not p.pruned]
        if sample > 0:
            chosen = {p.key for p in random.Random(seed).sample(legal, min(sample, len(legal)))}
            legal = [p for p in legal if p.key in chosen]
        if limit > 0:
            legal = legal[:limit]
        ordered = sharing_order(legal) if space.kind == "training" else legal
        group = None
        if space.kind == "training" and tier == "screen":
            # a layer class's points together, and a layer's classes (their
            # probes share passes): a worker's batch builds each probe once
            ordered.sort(key=lambda p: class_order(p.config))
            group = lambda p: class_order(p.config)[0]  # noqa: E731
        retimer = _in_process
        if ray or ray_address:
            executor, stream = "ray", _ray(ordered, tier)
        elif jobs > 1:
            pool = _Pool(jobs, ordered if space.kind == "training" else None, tier)
            executor, stream = f"pool of {jobs}", pool.run(_batches(ordered, jobs, group=group), tier)
            retimer = lambda points, tier: pool.run(_builds(points), tier)  # noqa: E731
        else:
            executor, stream = "in-process", _in_process(ordered, tier)
        _drain(stream, store, space.kind, len(ordered), progress, len(points) - len(todo))
        if space.kind == "training" and tier == "screen" and not limit and retime >= 0:
            _retime_best(store, points, retime or RETIME_FIRST, RETIME_EXACT, progress, retimer)
        # each record's config is its point's (below): not decoded
        records = {r["key"]: r for r in store.get({p.key for p in points}, configs=False)}
    finally:
        if store is not None:
            store.close()
        if pool is not None:
            pool.close()
        _ray_shutdown(ray_started)
    # a record stored before one of space.LATER_SETTINGS existed lacks it: the point of the
    # same key is the same configuration, with every setting spelled out
    ordered_records = [{**records[p.key], "config": p.config} for p in points if p.key in records]
    counts: dict[str, int] = {}
    for r in ordered_records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return SweepResult(
        space,
        ordered_records,
        elapsed_s=time.perf_counter() - start,
        evaluated=len(illegal) + len(legal),
        reused=len(points) - len(todo),
        stale=len(stale),
        db=str(db),
        executor=executor,
        counts=counts,
        # unenumerated points are pending too (an upper bound: some may repeat)
        pending=len(points) - len(ordered_records) + (space.size - len(points) if streaming else 0),
    )


def _space_points(space: Space) -> list[Point]:
    """Stand-ins for the points of `space` for what its settings' values decide
    (the files it reads, the engines): one per value, without enumerating it."""
    values = {**point_defaults(space.kind), **space.fixed, **{k: v[0] for k, v in space.axes.items()}}
    stand_ins = [Point({**values, key: value}, "", "") for key, axis in space.axes.items() for value in axis]
    return stand_ins or [Point(values, "", "")]


def _profile_db(points: list[Point]) -> Path | None:
    """The profile database whose measurements time these points: only when
    one of them prices with the `db` engine."""
    engines = {e.strip() for p in points for e in str(p.config.get("engines") or "").split(",")}
    if "db" not in engines:
        return None
    return default_db_path()


def _input_files(points: list[Point]) -> set[Path]:
    """The files the points read (a model or cluster given by path): a stored
    time is stale once one of them changes, though the point's key is the same."""
    # a GPU variant of a file (`my.toml:hbm_bw=...`) reads the file; each
    # distinct value is looked up once (points repeat most of theirs)
    values = {v for p in points for v in p.config.values() if isinstance(v, str) and v}
    return {Path(split_variant(v)[0]) for v in values if Path(split_variant(v)[0]).is_file()}


def _builds(points: list[Point]) -> list[list[Point]]:
    """`points` (in their sharing order) as the pool's re-timing tasks: one per
    fast-tier build, the points that differ only in their recompute policy
    together (where it rewrites nothing they are one build:
    `TrainingEvaluator._run`). The workers take them as they finish the last:
    a contiguous half each would leave one idle while the other times its
    longer builds."""
    batches: list[list[Point]] = []
    for point in points:
        if batches and _but_recompute(point) == _but_recompute(batches[-1][-1]):
            batches[-1].append(point)
        else:
            batches.append([point])
    return batches


def _but_recompute(point: Point) -> dict:
    return {k: v for k, v in point.config.items() if k != "recompute"}


def _retime_best(store: ResultStore, points: list[Point], first: int, exact: int,
                 progress: bool = False,
                 evaluate: Callable[[list[Point], str], Iterator[dict]] = _in_process) -> None:
    """Re-time the `first` fastest screened records with the fast tier, then
    keep re-timing until the `exact` fastest records are all fast-tier ones (a
    re-timed point can fall out of the top and let another in), by `evaluate`
    (points, tier -> records: in this process, or the sweep's pool). Records
    already re-timed are kept, so a resumed sweep re-times nothing twice."""
    by_key = {p.key: p for p in points}
    # read once (decoding every record again per round costs more than the
    # re-timing's bookkeeping), then kept as the store is
    timed = {r["key"]: r for r in store.get(set(by_key), configs=False) if r["status"] == "ok" and r["metrics"]}
    k = first
    while True:
        records = sorted(timed.values(), key=lambda r: (-(r["metrics"].get("tokens_per_s") or 0.0), r["key"]))
        screened = [by_key[r["key"]] for r in records[:k] if r["metrics"].get("tier") == "screen"]
        if not screened:
            if k == exact:
                return
            k = exact
            continue
        if progress:
            print(f"re-timing {len(screened)} of the best screened points with the fast tier",
                  file=sys.stderr)
        retimed = list(evaluate(sharing_order(screened), "fast"))
        store.put(retimed, "training")
        for r in retimed:
            timed.pop(r["key"], None)
            if r["status"] == "ok" and r["metrics"]:
                timed[r["key"]] = r
        k = exact


def _drain(stream: Iterator[dict], store: ResultStore, kind: str, total: int, progress: bool, reused: int) -> None:
    """Store records as they come, committing at least every COMMIT_EVERY_S."""
    bar = _progress(total, reused) if progress else None
    pending: list[dict] = []
    last_commit = time.perf_counter()
    try:
        for rec in stream:
            pending.append(rec)
            if bar is not None:
                bar.advance(rec["status"])
            now = time.perf_counter()
            if now - last_commit >= COMMIT_EVERY_S:
                store.put(pending, kind)
                pending, last_commit = [], now
    finally:
        # an interrupt still stores what finished
        if pending:
            store.put(pending, kind)
        if bar is not None:
            bar.close()


class _progress:
    """A rich progress bar on stderr: done/total, rate, ETA and status counts."""

    def __init__(self, total: int, reused: int) -> None:
        self.counts: dict[str, int] = {}
        self.reused = reused
        self.start = time.perf_counter()
        self.progress = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[counts]}"),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self.task = self.progress.add_task("sweep", total=total, rate="", counts=self._counts())
        self.progress.start()
        progress_module.ACTIVE += 1  # no import spinner under the bar

    def _counts(self) -> str:
        parts = [f"{k} {v}" for k, v in sorted(self.counts.items())]
        if self.reused:
            parts.append(f"stored {self.reused}")
        return ", ".join(parts)

    def advance(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        done = sum(self.counts.values())
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        self.progress.update(self.task, advance=1, rate=f"{rate:.1f}/s", counts=self._counts())

    def close(self) -> None:
        self.progress.stop()
        progress_module.ACTIVE -= 1
