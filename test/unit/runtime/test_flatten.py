"""What flatten numbers for the interpreter from the event IR: an `event.comm`'s
`#event<link ...>` and an `event.stream`'s kind, each member of its enum."""

from charon_ir.dialects import event
from charon_ir.runtime.flatten import LINKS, flatten_all
from charon_ir.runtime.program import (
    KIND_COMM,
    KIND_COMPUTE,
    KIND_HOST,
    LINK_SCALE_OUT,
    LINK_SCALE_UP,
    NO_LINK,
)
from charon_ir.testing import make_context, parse_module

PROGRAM = """
event.program @stage0 ranks 8 {
  event.stream @compute compute
  event.stream @comm_tp comm {axes = ["tp"]}
  event.stream @host host
  %issue = event.launch "launch" on @host duration 2.0e-05
  %mm = event.compute "matmul" on @compute duration 1.0e-03 after(%issue)
  %up = event.comm "all_reduce" on @comm_tp duration 1.0e-04 after(%mm) {link = #event<link "scale-up">}
  %out = event.comm "all_reduce" on @comm_tp duration 1.0e-04 after(%up) {link = #event<link "scale-out">}
  %none = event.comm "all_reduce" on @comm_tp duration 1.0e-04 after(%out)
}
"""


def test_every_link_has_its_own_number():
    assert set(LINKS) == set(event.Link)
    assert len({NO_LINK, *LINKS.values()}) == len(event.Link) + 1


def test_links_and_stream_kinds_are_numbered_from_the_enums():
    module = parse_module(PROGRAM, make_context())
    flat = flatten_all([op for op in module.walk() if isinstance(op, event.ProgramOp)])
    index = {label: i for i, label in enumerate(flat.labels)}
    assert flat.labels.count("all_reduce") == 3
    comms = [i for i, label in enumerate(flat.labels) if label == "all_reduce"]
    assert [flat.link.get(i, NO_LINK) for i in comms] == [LINK_SCALE_UP, LINK_SCALE_OUT, NO_LINK]
    assert NO_LINK == flat.link.get(index["matmul"], NO_LINK)
    assert flat.stream_kinds == [KIND_COMPUTE, KIND_COMM, KIND_HOST]


ITEMS = """
event.program @stage0 ranks 1 {
  event.stream @compute compute
  %f = event.compute "forward" on @compute duration 1.0e-03
  %ef = event.wait(%f) {item = #event<item F>}
  %b = event.compute "backward" on @compute duration 2.0e-03 after(%ef)
  %eb = event.wait(%b) {item = #event<item B>}
  %w = event.wait(%eb)
}
"""


def test_the_schedule_item_a_wait_ends_is_typed_in_the_flat_program():
    """Readers (memory over time, the layer records) ask `item_ends`, not labels."""
    module = parse_module(ITEMS, make_context())
    flat = flatten_all([op for op in module.walk() if isinstance(op, event.ProgramOp)])
    assert {flat.labels[i]: item for i, item in flat.item_ends.items()} == {
        "end F": event.ScheduleItem.F, "end B": event.ScheduleItem.B}
    assert "wait" in flat.labels and flat.labels.index("wait") not in flat.item_ends


def test_a_comm_stream_is_reported_under_the_axes_it_declares():
    """Exposure per axis reads `event.stream`'s `axes`, not the stream's name;
    a comm stream written without axes goes by its name."""
    module = parse_module("""
event.program @stage0 ranks 8 {
  event.stream @compute compute
  event.stream @ring comm {axes = ["dp", "tp"]}
  event.stream @comm_pp_send comm
  event.stream @host host
}
""", make_context())
    flat = flatten_all([op for op in module.walk() if isinstance(op, event.ProgramOp)])
    assert flat.stream_axes == ["", "dp_tp", "pp", ""]
