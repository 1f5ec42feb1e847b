"""B and W halves of a backward (zb-h1): W holds the weight-gradient GEMMs, what
they read and what reads them; a weight gradient that is no GEMM stays in B."""

from __future__ import annotations

from xdsl.ir import Operation

from charon_ir.api import TrainingConfig, build_training_module
from charon_ir.dialects import sim
from charon_ir.parallel.backward_split import weight_gradient_ops


def backward_of(**options) -> sim.PhaseOp:
    _, module, _ = build_training_module(TrainingConfig(
        model="llama-3.1-8b", gpus=2, tp=2, sequence_parallel=True, seq_len=256, global_batch=1,
        schedule="zb-h1", memory_limit_gb=1e6, **options))
    return next(op for op in module.walk() if isinstance(op, sim.PhaseOp) and op.kind.data == "backward")


def _connected_to_a_gemm(op: Operation, w: frozenset[Operation]) -> bool:
    reads = any(isinstance(v.owner, Operation) and v.owner in w for v in op.operands)
    feeds = any(use.operation in w for r in op.results for use in r.uses)
    return isinstance(op, sim.MatmulOp) or reads or feeds


def test_w_is_the_weight_gradient_gemms_and_their_neighbours():
    bwd = backward_of()
    w = weight_gradient_ops(bwd)
    layer = next(op for op in bwd.body.block.ops if isinstance(op, sim.RepeatOp))
    in_layer = [op for op in layer.body.block.ops if op in w]
    # the layer's seven weight-gradient GEMMs (q, k, v, o, gate, up, down)
    assert sum(isinstance(op, sim.MatmulOp) for op in in_layer) == 7
    assert all(_connected_to_a_gemm(op, w) for op in in_layer)
    # the RMSNorm weights' gradients (a multiply, a sum over tokens) stay in B
    norm_sums = [op for op in layer.body.block.ops if isinstance(op, sim.ReduceOp)]
    assert norm_sums and not any(op in w for op in norm_sums)


def test_recompute_does_not_change_the_split_of_gemms():
    gemms = [sum(isinstance(op, sim.MatmulOp) for op in weight_gradient_ops(backward_of(recompute=r)))
             for r in ("none", "full")]
    assert gemms[0] == gemms[1] > 0


def test_b_never_reads_what_w_computes():
    """B runs before W: no B op may read a W op's result, in the layers or around them."""
    for options in ({}, {"recompute": "full"}, {"recompute": "selective"}):
        bwd = backward_of(**options)
        w = weight_gradient_ops(bwd)
        for op in bwd.walk():
            if op in w or isinstance(op, (sim.PhaseOp, sim.RepeatOp, sim.YieldOp)):
                continue  # structure: a yield hands on what W computed
            assert not any(isinstance(v.owner, Operation) and v.owner in w for v in op.operands), (options, op)
