"""The `calibrated` engine: an op's work at the rate a user calibration measured.

`charon calibrate --profile TRACE` stores, per kernel class, the seconds one
unit of work took in the trace: per FLOP for GEMMs and attention (the achieved
throughput), per byte moved for the memory-bound classes (elementwise,
embedding, loss, optimizer) and for communication (the achieved bandwidth),
and on a CPU trace the host overhead per op
(`charon_ir.interop.calibration`). This engine prices an op as its work (the
analytic engine's FLOPs or bytes) times its class's rate (+ that overhead for a
compute op), for the
device the module targets (`$CHARON_PROFILE_DEVICE` when set, as the `db`
engine). With no calibration for the device, or none for the op's class, it
knows no op and the next engine of the chain prices it:
`--engines calibrated,analytic`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from xdsl.ir import Operation

from charon_ir.dialects.coll import CollectiveOp
from charon_ir.dialects.sim import ComputeOp
from charon_ir.engines.analytic import AnalyticEngine
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.interop.calibration import active
from charon_ir.interop.kernel_classes import HOST, WORK_FLOPS, kernel_class
from charon_ir.profile.device import lookup_device
from charon_ir.target.target import Target


class CalibratedEngine(CostEngine):
    name = "calibrated"

    probe: ClassVar[dict[str, float] | None] = None
    """Rates used instead of the stored ones (`probing`)."""

    def __init__(self, path: Path | str | None = None):
        self.path = path
        self.base = AnalyticEngine()
        self._factors: dict[str, dict[str, float] | None] = {}

    def factors(self, device: str) -> dict[str, float] | None:
        if CalibratedEngine.probe is not None:
            return CalibratedEngine.probe
        if device not in self._factors:
            found = active(device, self.path)
            self._factors[device] = found.factors if found is not None else None
        return self._factors[device]

    def price(self, op: Operation, target: Target) -> Cost | None:
        factors = self.factors(lookup_device(target))
        if not factors or not isinstance(op, ComputeOp | CollectiveOp):
            return None
        klass = "comm" if isinstance(op, CollectiveOp) else kernel_class(op.op_kind())
        factor = factors.get(klass)
        if factor is None:
            return None
        cost = self.base.price(op, target)
        if cost is None:
            return None
        work = cost.flops if klass in WORK_FLOPS else cost.bytes
        overhead = factors.get(HOST, 0.0) if isinstance(op, ComputeOp) else 0.0
        return Cost(work * factor + overhead, cost.flops, cost.bytes, self.name)


@contextmanager
def probing(classes) -> Iterator[None]:
    """Within it, the engine prices every op of `classes` at one second per unit
    of work and no overhead: a simulated step's time per class is its work."""
    CalibratedEngine.probe = {c: 1.0 for c in classes}
    try:
        yield
    finally:
        CalibratedEngine.probe = None
