"""parallel/sharding/propagation.py: why one walk in program order is enough.

A rule reads the layouts of its op's operands, so each must be decided before the
op is reached. The walk visits an op before the ops of its regions (pre-order),
and in SSA every operand is defined by an op before its reader in the same block
or an enclosing one, or is an argument of a block whose parent op (which lays its
arguments out: `ShardRepeat`) comes first; a region op's results are laid out by
its yield (`ShardYield`), the last op of its body, walked before anything after
the region op. So no worklist is needed: the tests hold the walk to that on
modules with repeats, phases and both kinds of result."""

from pathlib import Path
from unittest.mock import patch

from xdsl.ir import BlockArgument, Operation, OpResult

from charon_ir.dialects import sim
from charon_ir.parallel.examples import moe_layer, parse
from charon_ir.parallel.sharding.propagation import ApplyRules
from charon_ir.passes.shard_context import ShardContextPass
from charon_ir.passes.shard_tensor import ShardTensorPass

MODELS = Path(__file__).parents[2] / "lit/passes/Inputs/models"
TINY_LLAMA = (MODELS / "tiny-llama.mlir").read_text()
TINY_GPT_OSS = (MODELS / "tiny-gpt-oss.mlir").read_text()


def walked(analyse) -> list[Operation]:
    """The ops in the order the rules are handed them during `analyse()`."""
    seen: list[Operation] = []
    original = ApplyRules.match_and_rewrite

    def record(self, op, rewriter):
        seen.append(op)
        original(self, op, rewriter)

    with patch.object(ApplyRules, "match_and_rewrite", record):
        analyse()
    return seen


def laid_out_after(seen: list[Operation]) -> list[str]:
    """Reads of a value whose layout is decided after the reader is reached."""
    at = {op: i for i, op in enumerate(seen)}
    late = []
    for op in seen:
        for value in op.operands:
            if isinstance(value, OpResult):
                owner = value.op
                # a region op's results: laid out by the yield ending its body
                decider = owner.regions[0].block.last_op if owner.regions else owner
            else:
                assert isinstance(value, BlockArgument)
                decider = value.block.parent_op()
            if decider in at and at[decider] >= at[op]:
                late.append(f"{op.name} reads {value.name_hint} laid out by {decider.name}")
    return late


def test_shard_tensor_lays_every_operand_out_before_its_reader():
    module = parse(TINY_LLAMA)
    seen = walked(lambda: ShardTensorPass(tp=2).analyse(module))
    assert any(isinstance(op, sim.RepeatOp) for op in seen) and any(isinstance(op, sim.PhaseOp) for op in seen)
    assert laid_out_after(seen) == []


def test_shard_context_lays_every_operand_out_before_its_reader():
    module = parse(TINY_LLAMA)
    seen = walked(lambda: ShardContextPass(cp=2, mode="ulysses").analyse(module))  # pyright: ignore[reportArgumentType]
    assert laid_out_after(seen) == []


def test_experts_lay_every_operand_out_before_its_reader():
    for text in (TINY_GPT_OSS, moe_layer(32, 64, 4, 2, 64)):
        module = parse(text)
        seen = walked(lambda: ShardTensorPass(tp=2).analyse(module))
        assert laid_out_after(seen) == []


def test_a_reversed_walk_would_read_layouts_not_decided():
    # the check finds what the walk order prevents
    module = parse(TINY_LLAMA)
    seen = walked(lambda: ShardTensorPass(tp=2).analyse(module))
    assert laid_out_after(list(reversed(seen)))
