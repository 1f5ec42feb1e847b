"""Pipeline parallelism in serving: the pp virtual engines of a replica share its
stages, so a burst fills the pipeline before the engines interleave."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charon_ir.serving.scheduler import StagePipeline


@given(pp=st.integers(1, 8), dt=st.floats(1e-4, 10.0))
def test_a_burst_fills_the_pipeline(pp, dt):
    pipeline = StagePipeline(pp)
    ends = [pipeline.run(0.0, dt) for _ in range(pp)]
    # the k-th engine enters the first stage when the one before leaves it
    assert ends == pytest.approx([dt + k * dt / pp for k in range(pp)])


@given(pp=st.integers(1, 8), dt=st.floats(1e-4, 10.0), rounds=st.integers(2, 6))
def test_engines_that_keep_issuing_interleave_without_waiting(pp, dt, rounds):
    """Each engine issues its next iteration when its last one ends: after the
    fill, every engine finishes one iteration per dt (the stages are never idle)."""
    pipeline = StagePipeline(pp)
    ends = [0.0] * pp
    for _ in range(rounds):
        ends = [pipeline.run(end, dt) for end in ends]
    assert ends == pytest.approx([rounds * dt + k * dt / pp for k in range(pp)])


def test_a_static_batch_on_two_stages_is_not_twice_as_fast():
    """16 prompts split over 2 engines: the second waits for the first stage, so
    its prompts see 3/4 of the one-stage batch time, not 1/2 (it was 1/2)."""
    from charon_ir.serving import serve

    one, two = (serve("llama-3.1-8b", pp=pp, batch=16, input_len=2048, output_len=16) for pp in (1, 2))
    assert two["ttft_s"]["p99"] == pytest.approx(0.75 * one["ttft_s"]["p99"], rel=0.03)
    assert two["ttft_s"]["p50"] < two["ttft_s"]["p99"]
