"""The predictor's models and its held-out error, on synthetic timings."""

from __future__ import annotations

import numpy as np

from charon_ir.profile.fit import (
    Bounded,
    HeldOut,
    LogInterp,
    LogQuadratic,
    Roofline,
    Sample,
    error_by_kind,
    fit_family,
    held_out_error,
)


def roofline_samples(n: int = 20, noise: float = 0.0) -> list[Sample]:
    rng = np.random.default_rng(0)
    out = []
    for size in np.geomspace(1e4, 1e8, n):
        flops, nbytes = 2.0 * size, 3.0 * size
        t = 5e-6 + flops / 1e11 + nbytes / 2e10
        out.append(Sample(flops, nbytes, size, t * (1 + noise * rng.standard_normal())))
    return out


def test_roofline_recovers_overhead_and_rates():
    model = Roofline(roofline_samples())
    s = Sample(2e9, 3e9, 1e9)
    assert abs(model.predict(s) - (5e-6 + 2e9 / 1e11 + 3e9 / 2e10)) / model.predict(s) < 1e-6


def test_loginterp_follows_steps_and_extrapolates_at_most_linearly():
    samples = [Sample(f, f, f, t) for f, t in ((1e6, 1.0), (2e6, 1.1), (4e6, 4.0), (8e6, 8.0))]
    model = LogInterp(samples)
    assert abs(model.predict(Sample(2e6, 2e6, 2e6)) - 1.1) < 1e-9
    assert 1.1 < model.predict(Sample(3e6, 3e6, 3e6)) < 4.0
    assert abs(model.predict(Sample(16e6, 16e6, 16e6)) - 16.0) < 1e-6


def test_beyond_the_measured_sizes_time_is_bounded_by_linear_scaling():
    """A log-quadratic fitted on large kernels alone (a parabola in log work that
    turns up below its data) priced a small kernel slower than the large ones."""
    samples = [Sample(f, f, f, t) for f, t in ((1e8, 1.0), (2e8, 1.5), (4e8, 4.0), (8e8, 16.0))]
    raw = LogQuadratic(samples)
    small = Sample(1e6, 1e6, 1e6)
    assert raw.predict(small) > 1.0  # the unbounded curve: slower than the smallest measured
    bounded = Bounded(raw, samples)
    edge = raw.predict(samples[0])
    assert edge * 1e-2 - 1e-12 <= bounded.predict(small) <= edge  # shrinks at most linearly, never grows
    big = Sample(1.6e10, 1.6e10, 1.6e10)
    high = raw.predict(samples[-1])
    assert high <= bounded.predict(big) <= high * 20 + 1e-9  # grows at most linearly
    inside = Sample(3e8, 3e8, 3e8)
    assert bounded.predict(inside) == raw.predict(inside)
    assert isinstance(fit_family(samples), Bounded)
    # far below the measured sizes the family says nothing: the next engine prices it
    assert bounded.covers(Sample(6e7, 6e7, 6e7)) and not bounded.covers(small)
    assert bounded.covers(big) and bounded.covers(inside)


def test_held_out_error_is_small_on_clean_data_and_measures_noise():
    clean = held_out_error("matmul", roofline_samples())
    assert clean is not None and clean.mape < 0.01 and clean.evaluated == 18
    noisy = held_out_error("matmul", roofline_samples(noise=0.2))
    assert noisy is not None and noisy.mape > 0.05


def test_too_few_records_have_no_model():
    assert fit_family(roofline_samples(2)) is None
    assert held_out_error("x", roofline_samples(2)) is None


def test_error_by_kind_pools_families_by_records():
    pooled = error_by_kind(
        [HeldOut("elementwise[add]:bf16", 10, 8, 0.1, 0.2, "roofline"), HeldOut("elementwise[mul]:f32", 4, 2, 0.6, 0.9, "roofline")]
    )
    assert pooled == {"elementwise": (10, 0.2)}
