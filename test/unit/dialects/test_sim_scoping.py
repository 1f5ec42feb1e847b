"""`sim.phase` verifies SSA scoping, which xDSL does not check: a value read
inside a phase is defined in a block that encloses the reader, so a phase reads
another phase's values only through its results, and a layer body's values leave
the body only as the repeat's results. (The parser cannot even express the
violation: a pass that rewires a use across regions is the only way to make one.)"""

import pytest
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects import sim
from charon_ir.testing import parse_module

STEP = """
builtin.module {
  %x = sim.input "x" : tensor<4xbf16>
  %w = sim.param "layers.w" : tensor<2x4xbf16>
  %f = sim.phase "forward" -> tensor<4xbf16> {
    %s = sim.elementwise "gelu" %x : tensor<4xbf16> -> tensor<4xbf16>
    %r = sim.repeat 2 iter(%s : tensor<4xbf16>) slices(%w : tensor<2x4xbf16>) -> (tensor<4xbf16>) {
    ^bb0(%h: tensor<4xbf16>, %wi: tensor<4xbf16>):
      %y = sim.elementwise "mul" %h, %wi : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
      sim.yield %y : tensor<4xbf16>
    }
    %out = sim.elementwise "add" %r, %s : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
    sim.yield %out : tensor<4xbf16>
  }
  %b = sim.phase "backward" -> tensor<4xbf16> {
    %g = sim.elementwise "add" %f, %x : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
    sim.yield %g : tensor<4xbf16>
  }
}
"""


def ops(module, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def test_reading_through_results_and_enclosing_blocks_verifies():
    parse_module(STEP)  # parses and verifies: phase results, step values, the phase's own


def test_a_phase_reading_inside_another_phase_is_rejected():
    module = parse_module(STEP)
    gelu = ops(module, "sim.elementwise")[0]
    grad = next(op for op in ops(module, "sim.elementwise") if isinstance(op.parent_op(), sim.PhaseOp)
                and op.parent_op().kind.data == "backward")
    grad.operands = [gelu.results[0], grad.operands[1]]  # the forward's value, not its result
    with pytest.raises(VerifyException, match="reads a value defined inside sim.phase \"forward\""):
        module.verify()


def test_a_layer_body_value_read_after_the_repeat_is_rejected():
    module = parse_module(STEP)
    mul = next(op for op in ops(module, "sim.elementwise") if isinstance(op.parent_op(), sim.RepeatOp))
    add = next(op for op in ops(module, "sim.elementwise") if op.results[0].name_hint == "out")
    add.operands = [mul.results[0], add.operands[1]]
    with pytest.raises(VerifyException, match="does not enclose it"):
        module.verify()
