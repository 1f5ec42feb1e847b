"""parallel/sharding/layout.py: retyping through the rewriter, and the dim groups of
a reshape."""

import re
from math import prod
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType, bf16

from charon_ir.dialects import sim
from charon_ir.parallel.sharding.layout import reshape_groups, retype
from charon_ir.testing import parse_module

TEXT = """
builtin.module {
  %x = sim.input "x" : tensor<8x16xbf16>
  %w = sim.param "layers.w" : tensor<3x16x16xbf16>
  %r = sim.repeat 3 iter(%x : tensor<8x16xbf16>) slices(%w : tensor<3x16x16xbf16>) -> (tensor<8x16xbf16>) {
  ^bb0(%h: tensor<8x16xbf16>, %wi: tensor<16x16xbf16>):
    %y = sim.matmul %h, %wi : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
    sim.yield %y : tensor<8x16xbf16>
  }
  %n = sim.elementwise "add" %r, %x : tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<8x16xbf16>
}
"""


def test_retype_puts_a_new_value_in_the_old_ones_place():
    module = parse_module(TEXT)
    x = next(op for op in module.walk() if isinstance(op, sim.InputOp))
    old = x.result
    readers = [use.operation for use in old.uses]
    new = retype(old, TensorType(bf16, [4, 16]))
    assert new is not old and x.result is new
    assert new.type == TensorType(bf16, [4, 16]) and new.name_hint == old.name_hint
    assert not old.uses and sorted(id(u.operation) for u in new.uses) == sorted(id(o) for o in readers)


def test_retype_a_block_argument():
    module = parse_module(TEXT)
    rep = next(op for op in module.walk() if isinstance(op, sim.RepeatOp))
    arg = rep.body.block.args[0]
    new = retype(arg, TensorType(bf16, [2, 16]))
    assert rep.body.block.args[0] is new and new.uses and not arg.uses


def test_retype_to_the_same_type_keeps_the_value():
    module = parse_module(TEXT)
    x = next(op for op in module.walk() if isinstance(op, sim.InputOp))
    assert retype(x.result, x.result.type) is x.result


def test_no_module_writes_a_value_type_in_place():
    # the rewriter never sees a private write: rewrites retype through it
    root = Path(__file__).resolve().parents[3]
    private = re.compile(r"\._type\s*=[^=]")
    found = [
        f"{path.relative_to(root)}:{n}"
        for folder in ("charon_ir", "dialects", "passes", "lowering", "tools")
        for path in (root / folder).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if private.search(line)
    ]
    assert not found, found


@st.composite
def two_shapes(draw):
    """Two shapes of the same factors, grouped differently (a reshape)."""
    atoms = draw(st.lists(st.integers(2, 5), min_size=1, max_size=6))

    def grouping() -> list[int]:
        cuts = sorted(draw(st.sets(st.integers(1, len(atoms) - 1), max_size=len(atoms) - 1))) if len(atoms) > 1 else []
        bounds = [0, *cuts, len(atoms)]
        return [prod(atoms[a:b]) for a, b in zip(bounds, bounds[1:])]

    return grouping(), grouping()


@given(two_shapes())
def test_reshape_groups_partition_both_shapes_into_equal_products(shapes):
    a, b = shapes
    groups = reshape_groups(a, b)
    assert groups is not None
    assert [i for gi, _ in groups for i in gi] == list(range(len(a)))
    assert [j for _, gj in groups for j in gj] == list(range(len(b)))
    for gi, gj in groups:
        assert gi and gj and prod(a[i] for i in gi) == prod(b[j] for j in gj)


@given(st.lists(st.integers(2, 6), min_size=1, max_size=4), st.integers(2, 7))
def test_reshape_groups_none_when_the_products_differ(a, extra):
    assert reshape_groups(a, [*a[:-1], a[-1] * extra]) is None
