"""The analytic engine: it knows every op, so it ends every engine chain.

Compute ops: roofline, time = max(FLOPs / peak, bytes / HBM bandwidth).
Collectives: ring, time = alpha x steps + bytes each rank sends / bottleneck link
bandwidth (`Target.link_for_group`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from charon_ir.dialects.coll import AllReduceOp, CollectiveOp, RecvOp, SendOp
from charon_ir.dialects.sim import ComputeOp
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.target.target import Target


def compute_dtype(op: Operation) -> str:
    for v in op.operands:
        if isinstance(v.type, TensorType):
            return str(v.type.element_type)
    return "bf16"


def ring_steps(op: CollectiveOp, n: int) -> int:
    if isinstance(op, (SendOp, RecvOp)):
        return 1
    if isinstance(op, AllReduceOp):
        return 2 * (n - 1)
    return n - 1


class AnalyticEngine(CostEngine):
    name = "analytic"

    def price(self, op: Operation, target: Target) -> Cost | None:
        if isinstance(op, ComputeOp):
            return self.price_compute(op, target)
        if isinstance(op, CollectiveOp):
            return self.price_collective(op, target)
        return None

    def price_compute(self, op: ComputeOp, target: Target) -> Cost:
        flops, nbytes = op.flops(), op.bytes_moved()
        peak = target.gpu.peak(compute_dtype(op))
        time = max(flops / peak, nbytes / target.gpu.hbm_bandwidth)
        return Cost(time, flops, nbytes, self.name)

    def price_collective(self, op: CollectiveOp, target: Target) -> Cost:
        n = op.group_size()
        sent = op.ring_bytes_per_rank()
        if n <= 1 or isinstance(op, RecvOp):
            return Cost(0.0, 0.0, sent, self.name)
        link = target.link_for_group(op.lookup_grid().axis_sizes(), op.axis_names())
        time = ring_steps(op, n) * link.step_latency_s + sent / link.bandwidth
        return Cost(time, 0.0, sent, self.name)
