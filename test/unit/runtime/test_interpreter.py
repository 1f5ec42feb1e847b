"""The discrete-event interpreter: stream order, dependencies, overlap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.runtime.flatten import KIND_COMM, KIND_COMPUTE, KIND_JOIN, FlatProgram
from charon_ir.runtime.interpreter import EventTables, OverlapModel, run


def program(events, streams=("compute", "comm")) -> FlatProgram:
    """events: (stream, duration, deps); stream -1 is a join."""
    kinds = {0: KIND_COMPUTE, 1: KIND_COMM, -1: KIND_JOIN}
    return FlatProgram(
        name="p",
        ranks=1,
        streams=list(streams),
        stream_kinds=[KIND_COMPUTE, KIND_COMM][: len(streams)],
        duration=np.array([e[1] for e in events], dtype=float),
        stream=np.array([e[0] for e in events], dtype=np.int64),
        kind=np.array([kinds.get(e[0], KIND_COMM) for e in events], dtype=np.int8),
        flops=np.zeros(len(events)),
        bytes=np.zeros(len(events)),
        labels=[f"e{i}" for i in range(len(events))],
        deps=[list(e[2]) for e in events],
    )


def test_two_independent_events_on_two_streams_overlap():
    tl = run(program([(0, 3.0, []), (1, 5.0, [])]))
    assert tl.makespan == 5.0
    assert tl.stream_busy() == {"compute": 3.0, "comm": 5.0}


def test_a_dependency_serialises_streams():
    tl = run(program([(0, 3.0, []), (1, 5.0, [0]), (0, 1.0, [1])]))
    assert tl.makespan == 9.0
    assert list(tl.start) == [0.0, 3.0, 8.0]


def test_a_stream_runs_in_program_order():
    # event 1 could start at once, but the compute stream is busy with event 0
    tl = run(program([(0, 2.0, []), (0, 1.0, [])]))
    assert list(tl.end) == [2.0, 3.0]


def test_overlap_slows_both_sides():
    # 1.0 s of compute beside 1.0 s of comm; both at half rate while together.
    tl = run(program([(0, 1.0, []), (1, 1.0, [])]), OverlapModel(1.0, 1.0))
    assert tl.makespan == pytest.approx(2.0)
    # comm of 0.5 s: both run at half speed until comm ends at t=1.0 (0.5 of
    # compute done), compute finishes its remaining 0.5 s alone at t=1.5.
    tl = run(program([(0, 1.0, []), (1, 0.5, [])]), OverlapModel(1.0, 1.0))
    assert tl.makespan == pytest.approx(1.5)


def test_joins_take_no_time():
    tl = run(program([(0, 2.0, []), (1, 3.0, []), (-1, 0.0, [0, 1]), (0, 1.0, [2])]))
    assert tl.makespan == 4.0


def test_a_cycle_is_reported_not_hung():
    with pytest.raises(CharonError, match="deadlock"):
        run(program([(0, 1.0, [1]), (1, 1.0, [0])]))


@st.composite
def dags(draw):
    n = draw(st.integers(1, 25))
    events = []
    for i in range(n):
        stream = draw(st.sampled_from([0, 1]))
        duration = draw(st.floats(0.0, 10.0, allow_nan=False))
        deps = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        events.append((stream, duration, deps))
    return events


@settings(max_examples=150, deadline=None)
@given(dags())
def test_makespan_bounds_and_dependencies(events):
    p = program(events)
    tl = run(p)
    busy = tl.stream_busy()
    assert tl.makespan >= max(busy.values()) - 1e-9
    assert tl.makespan <= sum(e[1] for e in events) + 1e-9
    for i, (_, dur, deps) in enumerate(events):
        assert tl.end[i] - tl.start[i] == pytest.approx(dur, abs=1e-9)
        for d in deps:
            assert tl.start[i] >= tl.end[d] - 1e-9


@settings(max_examples=50, deadline=None)
@given(dags(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_same_input_same_timeline(events, cs, ms):
    a = run(program(events), OverlapModel(cs, ms))
    b = run(program(events), OverlapModel(cs, ms))
    assert a.start.tobytes() == b.start.tobytes() and a.end.tobytes() == b.end.tobytes()


@settings(max_examples=80, deadline=None)
@given(dags(), st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=25, max_size=25), st.floats(0.0, 1.0))
def test_programs_of_one_structure_share_their_tables(events, durations, slowdown):
    """Programs that differ only in durations (built by `replace` from one) run
    on one EventTables exactly as each on its own; tables of another program
    are not used (derived again)."""
    from dataclasses import replace

    first = program(events)
    tables = EventTables.of(first)
    other = replace(first, duration=np.array(durations[: len(events)]), busy=None)
    overlap = OverlapModel(slowdown, slowdown)
    assert tables.describe(first) and tables.describe(other)  # shared, not derived again
    for p in (first, other, first):
        shared, alone = run(p, overlap, tables=tables), run(p, overlap)
        assert shared.start.tobytes() == alone.start.tobytes() and shared.end.tobytes() == alone.end.tobytes()
    rebuilt = program(events)  # the same structure in arrays of its own
    assert not tables.describe(rebuilt)
    elsewhere = program([(0, 1.0, [])] * len(events))
    assert run(elsewhere, tables=tables).end.tobytes() == run(elsewhere).end.tobytes()


def test_collectives_on_one_link_share_its_bandwidth():
    """Two 1 s transfers on the NICs at once take 2 s each (half the bandwidth
    each); one on NVLink beside them is not slowed; once one ends the other
    speeds back up."""
    p = program([(1, 1.0, []), (2, 1.0, []), (3, 1.0, []), (2, 1.0, [1])],
                streams=("compute", "comm_dp", "comm_pp_send", "comm_tp"))
    p.stream_kinds = [KIND_COMPUTE, KIND_COMM, KIND_COMM, KIND_COMM]
    p.kind = np.array([KIND_COMM] * 4, dtype=np.int8)
    p.stream_program = [0, 0, 0, 0]
    p.link = {0: 2, 1: 2, 2: 1, 3: 2}
    tl = run(p)
    assert list(tl.end[:3]) == [2.0, 2.0, 1.0]
    assert tl.end[3] == 3.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 5.0), min_size=1, max_size=6))
def test_sharing_one_link_conserves_work(durations):
    """n transfers started together on one link end when the link has moved
    their total: the last ends at the sum of the durations."""
    events = [(i, d, []) for i, d in enumerate(durations)]
    names = tuple(f"comm_{i}" for i in range(len(durations)))
    p = program(events, streams=names)
    p.stream_kinds = [KIND_COMM] * len(names)
    p.kind = np.array([KIND_COMM] * len(durations), dtype=np.int8)
    p.stream_program = [0] * len(names)
    p.link = {i: 2 for i in range(len(durations))}
    tl = run(p)
    assert tl.makespan == pytest.approx(sum(durations), rel=1e-9)
