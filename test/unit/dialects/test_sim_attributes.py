"""The typed attributes passes leave for each other print and parse back."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects import sim
from charon_ir.testing import make_context

amounts = st.floats(min_value=0.0, max_value=1e30, allow_nan=False, allow_infinity=False)


def parse_attribute(text: str):
    return Parser(make_context(), text).parse_attribute()


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
