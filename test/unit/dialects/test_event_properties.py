"""What an event program, loop and wait state is declared, typed and verified,
and prints and parses back."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects import event
from charon_ir.testing import make_context

CONTEXT = make_context()


def _program(**fields) -> event.ProgramOp:
    block = Block([event.StreamOp("compute", event.StreamKind.COMPUTE)])
    return event.ProgramOp("p", 2, Region(block), **fields)


@settings(max_examples=60, deadline=None)
@given(
    st.none() | st.integers(0, 63),
    st.none() | st.integers(0, 2**40),
    st.none() | st.floats(0.0, 1e18, allow_nan=False),
    st.none() | st.sampled_from(["H100-SXM5-80GB", "H200-SXM-141GB"]),
)
def test_a_program_states_its_fields_typed_and_parses_back(stage, tokens, recompute_flops, hardware):
    program = _program(stage=stage, tokens=tokens, recompute_flops=recompute_flops, hardware=hardware)
    program.verify()
    assert program.stage_index() == (stage or 0)
    assert program.token_count() == (tokens or 0)
    assert program.recomputed_flops() == (recompute_flops or 0.0)
    assert program.hardware_ref() == (hardware or "")
    text = str(program)
    again = Parser(CONTEXT, text).parse_op()
    assert isinstance(again, event.ProgramOp) and str(again) == text
    assert (again.stage_index(), again.token_count(), again.hardware_ref()) == (
        program.stage_index(), program.token_count(), program.hardware_ref())
    assert again.recomputed_flops() == pytest.approx(program.recomputed_flops(), rel=1e-6)
    assert not again.attributes  # nothing left as an undeclared attribute


@pytest.mark.parametrize("fields, message", [
    ({"stage": -1}, "stage must be >= 0"),
    ({"tokens": -1}, "tokens must be >= 0"),
    ({"recompute_flops": math.nan}, "recompute_flops must be finite"),
    ({"hardware": ""}, "hardware must name a GPU"),
])
def test_a_program_refuses_a_field_out_of_range(fields, message):
    with pytest.raises(VerifyException, match=message):
        _program(**fields).verify()


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(list(event.ScheduleItem)), st.text("FBW0123,", min_size=1, max_size=12))
def test_a_wait_names_its_schedule_item_and_a_loop_its_label(item, label):
    start = event.WaitOp([])
    body = Block(arg_types=[event.TokenType()])
    marker = event.WaitOp([body.args[0]], item)
    body.add_ops([marker, event.YieldOp(marker.token)])
    loop = event.LoopOp(3, start.token, Region(body), label=label)
    program = event.ProgramOp("p", 1, Region(Block([start, loop])))
    program.verify()
    again = Parser(CONTEXT, str(program)).parse_op()
    assert isinstance(again, event.ProgramOp)
    loop_again = next(op for op in again.walk() if isinstance(op, event.LoopOp))
    wait_again = next(op for op in again.walk() if isinstance(op, event.WaitOp) and op.item is not None)
    assert loop_again.label is not None and loop_again.label.data == label
    assert wait_again.item is not None and wait_again.item.data is item
    assert loop_again.is_layer_repeat() == (label == event.LAYER_REPEAT)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(list(event.Link)), st.sampled_from(list(event.ScheduleItem)))
def test_a_link_and_an_item_parse_back_to_themselves(link, item):
    for attr in (event.LinkAttr(link), event.ScheduleItemAttr(item)):
        again = Parser(CONTEXT, str(attr)).parse_attribute()
        assert again == attr
