"""The typed attributes passes leave for each other print and parse back."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects import sim
from charon_ir.testing import make_context

amounts = st.floats(min_value=0.0, max_value=1e30, allow_nan=False, allow_infinity=False)


CONTEXT = make_context()


def parse_attribute(text: str):
    return Parser(CONTEXT, text).parse_attribute()


@settings(max_examples=60, deadline=None)
@given(amounts, amounts, amounts, st.sampled_from(["analytic", "db", "predict", "trace"]))
def test_a_cost_prints_what_it_parses_back_to(time_s, flops, nbytes, engine):
    cost = sim.CostAttr(time_s, flops, nbytes, engine)
    text = str(cost)
    again = parse_attribute(text)
    assert isinstance(again, sim.CostAttr) and str(again) == text
    # printed to 7 significant digits: the parsed fields are that close
    for field, value in (("time_s", time_s), ("flops", flops), ("bytes", nbytes)):
        assert getattr(again, field).data == pytest.approx(value, rel=1e-6, abs=0.0)
    assert again.engine.data == engine


@pytest.mark.parametrize("fields", [(-1e-9, 0.0, 0.0), (0.0, math.nan, 0.0), (0.0, 0.0, math.inf)])
def test_a_cost_is_never_negative_nor_unbounded(fields):
    with pytest.raises(VerifyException, match="must be finite and >= 0"):
        sim.CostAttr(*fields, "analytic")


@st.composite
def pipelines(draw):
    pp = draw(st.integers(1, 16))
    vpp = draw(st.integers(1, 4))
    layers = draw(st.lists(st.integers(0, 200), min_size=pp * vpp, max_size=pp * vpp))
    return pp, vpp, draw(st.sampled_from(sim.PIPELINE_SCHEDULES)), draw(st.integers(1, 4096)), layers


@settings(max_examples=60, deadline=None)
@given(pipelines(), st.integers(1, 4096))
def test_a_pipeline_parses_back_to_itself(fields, microbatches):
    pipeline = sim.PipelineAttr(*fields)
    assert parse_attribute(str(pipeline)) == pipeline
    again = pipeline.with_microbatches(microbatches)
    assert again.microbatches.data == microbatches
    assert (again.pp, again.vpp, again.schedule, again.layers) == (
        pipeline.pp, pipeline.vpp, pipeline.schedule, pipeline.layers)


def test_a_pipeline_gives_every_virtual_stage_its_layers():
    with pytest.raises(VerifyException, match="pp \\* vpp = 4 virtual stages"):
        sim.PipelineAttr(2, 2, "interleaved", 8, [4, 4])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4096), st.sampled_from([0, 1, 2, 3]), st.integers(1, 10_000), st.booleans(), st.booleans())
def test_data_parallel_settings_parse_back_to_themselves(dp, zero, bucket_mb, overlap, gather):
    gather = gather and zero in (1, 2)
    settings = sim.DataParallelAttr(dp, zero, bucket_mb, overlap, gather)
    assert parse_attribute(str(settings)) == settings
