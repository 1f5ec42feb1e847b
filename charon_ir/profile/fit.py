"""
The predictor: per family (`OpKey.family`: `matmul:bf16`, `elementwise[silu]:f32`), a small model of an op's time from
its FLOPs and bytes, fitted on the database's measurements with numpy.

Candidate models, each a few parameters:
- `roofline`: t = c0 + c1 * flops + c2 * bytes + c3 * elements, coefficients
  >= 0, fitted on relative error (a launch overhead plus compute and memory
  terms; it extrapolates the way hardware does);
- `loglinear`: log t linear in log flops, log bytes and log elements (a power law);
- `loginterp`: piecewise-linear interpolation of log t over log work (bytes, or
  FLOPs for ops that have them), straight-line beyond the ends: it follows cache
  and kernel-selection steps a smooth model misses, for families whose
  measurements vary along one size;
- `logquad`: log t quadratic in log work, the smooth version of the same.

`fit_family` picks the candidate with the lowest cross-validated error on the
records it is given; `held_out_error` reports the error on records it never saw,
with the choice of model made inside each training fold. A family's records
are sorted by work and every interior one is held out once (5 folds, record i
in fold i mod 5); the smallest and largest stay in training, so the error is
that of predicting within the profiled range.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from charon_ir.profile.key import kind_of_family
from charon_ir.profile.store import Measurement, latest_by_key

FOLDS = 5
MIN_RECORDS = 3
"""Fewer records than this and a family has no model: misses fall through."""


@dataclass(frozen=True)
class Sample:
    """What the models see of one op: FLOPs, bytes and elements (the largest
    tensor's element count: a broadcast reads few bytes but still visits every
    output element), and, for training, the time."""

    flops: float
    bytes: float
    elements: float
    time_s: float = 0.0


def elements_of(shapes: Sequence[Sequence[int]]) -> float:
    return float(max((prod(s) for s in shapes), default=1))


def _work(s: Sample, by_flops: bool) -> float:
    return np.log(max(s.flops, 1.0) if by_flops else max(s.bytes, 1.0))


class Model:
    name: str

    def predict(self, s: Sample) -> float:
        raise NotImplementedError


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares for a handful of columns: the best unconstrained
    solution over every subset of columns that comes out non-negative."""
    best: tuple[float, np.ndarray] | None = None
    p = a.shape[1]
    for r in range(1, p + 1):
        for cols in itertools.combinations(range(p), r):
            w, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
            if (w < 0).any():
                continue
            residual = float(np.sum((a[:, cols] @ w - b) ** 2))
            if best is None or residual < best[0]:
                full = np.zeros(p)
                full[list(cols)] = w
                best = (residual, full)
    assert best is not None  # a single column always has a non-negative fit unless b <= 0
    return best[1]


# scales that keep the columns near 1 (seconds: ~1e-6..1e-1)
_ROOF_SCALE = np.array([1e-6, 1e-12, 1e-11, 1e-10])


class Roofline(Model):
    name = "roofline"

    def __init__(self, samples: Sequence[Sample]):
        x = np.array([self._columns(s) for s in samples]) * _ROOF_SCALE
        t = np.array([s.time_s for s in samples])
        # minimize relative error: divide each row by its time
        self.w = _nnls(x / t[:, None], np.ones(len(samples))) * _ROOF_SCALE

    @staticmethod
    def _columns(s: Sample) -> list[float]:
        return [1.0, s.flops, s.bytes, s.elements]

    def predict(self, s: Sample) -> float:
        return float(self.w @ np.array(self._columns(s)))


class LogLinear(Model):
    name = "loglinear"

    def __init__(self, samples: Sequence[Sample]):
        x = np.array([self._features(s) for s in samples])
        y = np.log([s.time_s for s in samples])
        # a little ridge keeps collinear log flops / log bytes (elementwise) stable
        lam = 1e-6 * len(samples)
        self.w = np.linalg.solve(x.T @ x + lam * np.eye(x.shape[1]), x.T @ y)

    @staticmethod
    def _features(s: Sample) -> list[float]:
        return [1.0, np.log(max(s.flops, 1.0)), np.log(max(s.bytes, 1.0)), np.log(max(s.elements, 1.0))]

    def predict(self, s: Sample) -> float:
        return float(np.exp(np.array(self._features(s)) @ self.w))


class LogInterp(Model):
    name = "loginterp"

    def __init__(self, samples: Sequence[Sample]):
        self.by_flops = all(s.flops > 0 for s in samples)
        pts: dict[float, list[float]] = {}
        for s in samples:
            pts.setdefault(_work(s, self.by_flops), []).append(np.log(s.time_s))
        self.x = np.array(sorted(pts))
        self.y = np.array([np.median(pts[k]) for k in self.x])

    def predict(self, s: Sample) -> float:
        x = _work(s, self.by_flops)
        xs, ys = self.x, self.y
        if len(xs) == 1:
            return float(np.exp(ys[0]))
        if x <= xs[0]:
            i = 0
        elif x >= xs[-1]:
            i = len(xs) - 2
        else:
            return float(np.exp(np.interp(x, xs, ys)))
        slope = (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i])
        # beyond the measured range time grows at most linearly with work, at least not at all
        slope = min(max(slope, 0.0), 1.0)
        edge = 0 if x <= xs[0] else len(xs) - 1
        return float(np.exp(ys[edge] + slope * (x - xs[edge])))


class LogQuadratic(Model):
    """log t quadratic in log work: a smooth curve through a family's sizes that
    bends where efficiency grows with size, and averages noise that
    interpolation would pass through."""

    name = "logquad"

    def __init__(self, samples: Sequence[Sample]):
        self.by_flops = all(s.flops > 0 for s in samples)
        x = np.array([_work(s, self.by_flops) for s in samples])
        y = np.log([s.time_s for s in samples])
        self.center = float(np.mean(x))
        degree = min(2, len(set(x.tolist())) - 1)
        self.coef = np.polyfit(x - self.center, y, degree)

    def predict(self, s: Sample) -> float:
        return float(np.exp(np.polyval(self.coef, _work(s, self.by_flops) - self.center)))


CANDIDATES: tuple[Callable[[Sequence[Sample]], Model], ...] = (Roofline, LogLinear, LogInterp, LogQuadratic)


def _folds(n: int, k: int) -> list[np.ndarray]:
    """Test indices of up to `k` folds over records sorted by size: interior
    record i goes to fold i mod k, so every fold spans the sizes; the smallest
    and the largest record are never held out, so the error measured is that of
    predicting within the profiled range (beyond it the models extrapolate)."""
    interior = np.arange(1, n - 1)
    k = min(k, len(interior))
    return [interior[i::k] for i in range(k)]


def _errors(train: Sequence[Sample], test: Sequence[Sample], make) -> list[float]:
    model = make(train)
    return [abs(model.predict(s) - s.time_s) / s.time_s for s in test]


def _cv_error(samples: Sequence[Sample], make, k: int = FOLDS) -> float:
    errs: list[float] = []
    for test_idx in _folds(len(samples), k):
        test = set(test_idx.tolist())
        train = [s for i, s in enumerate(samples) if i not in test]
        if len(train) < 2:
            continue
        errs += _errors(train, [samples[i] for i in test_idx], make)
    return float(np.mean(errs)) if errs else float("inf")


def _choose(samples: Sequence[Sample]) -> Callable[[Sequence[Sample]], Model]:
    return min(CANDIDATES, key=lambda make: _cv_error(samples, make))


BELOW_RANGE = 2.0
"""How far below the smallest work a family was fitted on `Bounded.covers` an op:
a family measured on large kernels says little of small ones (launch floors,
other kernels), which the next engine prices instead."""


class Bounded(Model):
    """A fitted model held, beyond its family's measured sizes, to the rule
    `LogInterp` extrapolates by: past the largest measured work time grows at most
    linearly with the work and does not fall, below the smallest it shrinks at
    most linearly and does not grow. Unbounded, a log-quadratic fitted on large
    kernels alone priced small ones slower than the large ones it had seen."""

    def __init__(self, model: Model, samples: Sequence[Sample]):
        self.model, self.name = model, model.name
        self.by_flops = all(s.flops > 0 for s in samples)
        smallest = min(samples, key=lambda s: _work(s, self.by_flops))
        largest = max(samples, key=lambda s: _work(s, self.by_flops))
        self.low, self.high = ((_work(s, self.by_flops), model.predict(s)) for s in (smallest, largest))

    def covers(self, s: Sample) -> bool:
        """Whether `s` is within `BELOW_RANGE` of the measured sizes, or above them."""
        return _work(s, self.by_flops) >= self.low[0] - float(np.log(BELOW_RANGE))

    def predict(self, s: Sample) -> float:
        t, w = self.model.predict(s), _work(s, self.by_flops)
        if w < self.low[0]:
            edge_w, edge_t = self.low
            return min(max(t, edge_t * float(np.exp(w - edge_w))), edge_t)
        if w > self.high[0]:
            edge_w, edge_t = self.high
            return min(max(t, edge_t), edge_t * float(np.exp(w - edge_w)))
        return t


def fit_family(samples: Sequence[Sample]) -> Bounded | None:
    if len(samples) < MIN_RECORDS:
        return None
    return Bounded(_choose(samples)(samples), samples)


@dataclass(frozen=True)
class HeldOut:
    family: str
    records: int
    evaluated: int
    """Records held out (the interior ones): each predicted once."""
    mape: float
    """Mean absolute percentage error on held-out records, as a fraction."""
    max_error: float
    model: str
    """The model the full data selects."""


def held_out_error(family: str, samples: Sequence[Sample], k: int = FOLDS) -> HeldOut | None:
    """k-fold error: each fold is predicted by a model chosen and fitted on the
    other folds only."""
    if len(samples) < MIN_RECORDS:
        return None
    errs: list[float] = []
    for test_idx in _folds(len(samples), k):
        test = set(test_idx.tolist())
        train = [s for i, s in enumerate(samples) if i not in test]
        errs += _errors(train, [samples[i] for i in test_idx], _choose(train))
    model = _choose(samples)
    return HeldOut(family, len(samples), len(errs), float(np.mean(errs)), float(np.max(errs)), model.name)


def error_by_kind(results: Iterable[HeldOut]) -> dict[str, tuple[int, float]]:
    """Per op kind (`kind_of_family`): held-out records and
    their mean error, pooled over the kind's families."""
    pooled: dict[str, tuple[int, float]] = {}
    for h in results:
        kind = kind_of_family(h.family)
        n, total = pooled.get(kind, (0, 0.0))
        pooled[kind] = (n + h.evaluated, total + h.mape * h.evaluated)
    return {k: (n, total / n if n else 0.0) for k, (n, total) in sorted(pooled.items())}


def samples_by_family(measurements: Iterable[Measurement]) -> dict[str, list[Sample]]:
    """Measurements of one device grouped by family, one per op key
    (`latest_by_key`), each family sorted by work as `_folds` assumes."""
    out: dict[str, list[Sample]] = {}
    for m in latest_by_key(measurements).values():
        if m.time_s > 0:
            out.setdefault(m.key.family, []).append(
                Sample(m.flops, m.bytes, elements_of(m.key.shape_list()), m.time_s)
            )
    for samples in out.values():
        samples.sort(key=lambda s: (s.flops, s.bytes, s.elements))
    return dict(sorted(out.items()))
