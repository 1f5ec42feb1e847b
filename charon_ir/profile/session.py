"""
One `charon profile` run: the ops to measure, in order, and the loop that
measures the missing ones and commits them.

The load other processes put on a shared machine changes over seconds, and a
family measured during a busy second would come out uniformly slow. So samples
are taken in rounds: each round visits every missing op and takes a few of its
samples. The first round commits each op's time as soon as it is taken (an
interrupted run keeps it, and the next run skips it); later rounds refine the
rows this run inserted with all the samples so far (`runner.summarize`).

The model's own ops come before their sweep variants, so an interrupted run
has covered what the `db` engine needs for that model first.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from charon_ir.dialects.sim import ComputeOp
from charon_ir.errors import CharonError
from charon_ir.profile.collect import OpSet
from charon_ir.profile.key import OpKey
from charon_ir.profile.store import Measurement, ProfileStore
from charon_ir.profile.sweep import variants

ROUNDS = 10
"""Rounds the `repeats` samples of an op are spread over."""
MIN_SAMPLE_S = 5e-4
"""Each sample times enough back-to-back calls to last this long."""


def plan(opset: OpSet, factors: Sequence[float]) -> list[tuple[OpKey, ComputeOp]]:
    """The model's distinct ops, then each one's sweep variants, without repeats."""
    items: dict[OpKey, ComputeOp] = dict(opset.ops)
    for op in opset.ops.values():
        for v in variants(op, factors) if factors else ():
            items.setdefault(OpKey.of(v), v)
    return list(items.items())


@dataclass
class ProfileRun:
    device: str
    """The name measurements are stored under (`cpu`, `H100-SXM5-80GB`)."""
    torch_version: str
    measured: int = 0
    already: int = 0
    """Ops the database had for this device and torch version: skipped."""
    not_runnable: Counter[str] = field(default_factory=Counter)
    """Why ops could not run, with counts."""
    left_for_later: int = 0
    """Ops the time budget left unmeasured (a later run measures them)."""
    timed_eagerly: Counter[str] = field(default_factory=Counter)
    """CUDA ops whose capture into a graph failed, so their samples hold the host's
    launches too: why, with counts."""


def torch_device(device: str):
    """The torch device `--device` names (cpu, cuda or cuda:N), when this machine
    has it; a one-line CharonError otherwise."""
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError:  # torch's message lists its twenty device types
        raise CharonError(f"--device {device}: expected cpu, cuda or cuda:N") from None
    if dev.type not in ("cpu", "cuda"):
        raise CharonError(f"--device {device}: expected cpu or cuda")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CharonError("--device cuda: torch sees no CUDA device on this machine")
    return dev


def profile_ops(
    store: ProfileStore,
    items: Sequence[tuple[OpKey, ComputeOp]],
    device: str,
    warmup: int,
    repeats: int,
    device_name: str | None = None,
    cpu_threads: int = 1,
    on_start: Callable[[ProfileRun, int], None] | None = None,
    on_op: Callable[[OpKey], None] | None = None,
    refresh: bool = False,
    refresh_below: float = 0.0,
    budget_s: float = 0.0,
) -> ProfileRun:
    """Measure every op of `items` the database lacks on `device` (`cpu`, `cuda`
    or `cuda:N`); with `refresh`, every op, replacing the timings already there
    (a comparison with a step measured now needs the machine as it is now); with
    `refresh_below`, the ops stored as faster than that many seconds (small CUDA
    kernels timed before CUDA graphs were: PyTorch's launch rate, not the GPU).
    `on_start(run, steps)` is called once the ops to measure are known and
    `on_op(key)` after each of the `steps` (an op in a round). A
    KeyboardInterrupt leaves what was committed and propagates; `run` holds the
    counts so far. `budget_s` > 0: no op is started past that many seconds; the
    first round measures the items in order (the model's ops before the sweep's
    variants), later rounds only refine, and what the budget left is counted in
    `run.left_for_later`."""
    import torch

    from charon_ir.profile import runner  # imports torch

    dev = torch_device(device)
    if dev.type == "cpu":
        runner.keep_freed_memory()
        # one thread by default: timings a shared machine's other processes barely
        # disturb (see runner._sample), and a fixed, stated configuration
        torch.set_num_threads(max(1, cpu_threads))
    run = ProfileRun(device_name or runner.device_name(dev), torch.__version__)
    rounds = max(1, min(ROUNDS, repeats))
    per_round = max(1, -(-repeats // rounds))
    todo: list[tuple[OpKey, ComputeOp]] = []
    for key, op in items:
        stored = store.time_of(key, run.device, run.torch_version)
        if stored is not None and not refresh and stored >= refresh_below:
            run.already += 1
        else:
            todo.append((key, op))
    replace = refresh or refresh_below > 0  # a row already there is overwritten
    if on_start is not None:
        on_start(run, len(todo) * rounds)
    samples: dict[OpKey, list[float]] = {}
    calls: dict[OpKey, int] = {}
    eager: set[OpKey] = set()
    deadline = time.monotonic() + budget_s if budget_s > 0 else None
    with runner.timing_stream(dev):  # see timing_stream: captures need a side stream
        for r in range(rounds):
            for position, (key, op) in enumerate(todo):
                # each run measures one op at least, so that runs again always progress
                if deadline is not None and (r > 0 or position > 0) and time.monotonic() > deadline:
                    if r == 0:
                        run.left_for_later = len(todo) - position
                    break
                if r > 0 and key not in samples:
                    if on_op is not None:
                        on_op(key)  # not runnable, or measured first by another run
                    continue
                try:
                    # built again each round, so at most one op's tensors are alive
                    fn = runner.prepare(op, dev)
                    if r == 0:
                        calls[key] = runner.calls_per_sample(fn, dev, warmup, MIN_SAMPLE_S)
                    if key not in eager:  # a capture that failed once is not tried again
                        fn = runner.graphed(fn, dev, calls[key], partial(_timed_eagerly, run, eager, key))
                    new = runner.take_samples(fn, dev, 0 if r == 0 else 1, calls[key], per_round)
                    del fn
                except runner.NotRunnable as e:
                    run.not_runnable[f"{key.family}: {e}"] += 1
                    samples.pop(key, None)
                except runner.KERNEL_ERRORS as e:
                    run.not_runnable[f"{key.family}: {runner.first_line(e)}"] += 1
                    samples.pop(key, None)
                else:
                    taken = samples.setdefault(key, [])
                    taken += new
                    timing = runner.summarize(taken, calls[key], dev)
                    m = Measurement(
                        key, run.device, run.torch_version, timing.time_s,
                        op.flops(), op.bytes_moved(), timing.samples, timing.spread,
                    )
                    if r == 0:
                        if store.put(m):
                            run.measured += 1
                        elif replace:
                            store.update(m)
                            run.measured += 1
                        else:
                            del samples[key]  # another run committed it first: theirs stays
                    else:
                        store.update(m)
                if on_op is not None:
                    on_op(key)
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return run


def _timed_eagerly(run: ProfileRun, eager: set[OpKey], key: OpKey, why: str) -> None:
    eager.add(key)
    run.timed_eagerly[f"{key.family}: {why}"] += 1
