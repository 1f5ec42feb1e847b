"""The timeline's interval maths (runtime/timeline.py): what the report, the
fast tier and the Kineto comparison (interop/kineto.py) read off intervals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charon_ir.runtime.timeline import measure, subtract, union

SPANS = st.lists(st.tuples(st.floats(0, 100), st.floats(0, 10)), max_size=20)


def _intervals(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(s, s + d) for s, d in spans]


@given(SPANS)
def test_a_union_is_sorted_disjoint_and_no_longer_than_its_parts(spans):
    merged = union(_intervals(spans))
    assert all(s < e for s, e in merged)
    assert all(e < s for (_, e), (s, _) in zip(merged, merged[1:]))
    assert measure(merged) <= sum(d for _, d in spans) + 1e-9


@given(SPANS, SPANS)
def test_a_difference_is_bounded_and_adds_up_to_the_union(a, b):
    ua, ub = union(_intervals(a)), union(_intervals(b))
    rest = subtract(ua, ub)
    assert -1e-9 <= rest <= measure(ua) + 1e-9
    # |a u b| = |b| + |a - b|, and the overlap |a| - |a - b| is the same both ways
    assert measure(union(_intervals(a + b))) == pytest.approx(measure(ub) + rest, abs=1e-9)
    assert measure(ua) - rest == pytest.approx(measure(ub) - subtract(ub, ua), abs=1e-9)
    assert subtract(ua, ua) == pytest.approx(0.0, abs=1e-9)


def test_touching_intervals_merge_and_empty_ones_vanish():
    assert union([(2.0, 3.0), (0.0, 1.0), (1.0, 2.0), (5.0, 5.0)]) == [(0.0, 3.0)]
    assert subtract([(0.0, 10.0)], [(2.0, 3.0), (5.0, 12.0)]) == pytest.approx(4.0)
