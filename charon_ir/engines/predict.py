"""
The `predict` engine: an op's time from a model fitted per family
(`elementwise[silu]:bf16`, `matmul:bf16`, ...) on the measurements of the device
it prices for that the `db` engine reads (the user's database over the shipped
one). It prices ops the database lacks, such as another sequence length or
batch, from their FLOPs, bytes and element count (`charon_ir.profile.fit`;
`charon profile --fit` prints each family's held-out error), down to half the
smallest work of the family's measurements (`fit.BELOW_RANGE`). A family with fewer
than three measurements has no model (a `sim.generic` family has one or two, as
generics are not swept): its ops and collectives fall through to the next
engine; a zero-work `sim.generic` view costs 0.

Models are fitted with numpy when a family is first asked for, once per process
for a given database file and device.
"""

from __future__ import annotations

from pathlib import Path

from xdsl.ir import Operation

from charon_ir.dialects.sim import ComputeOp
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.engines.db import measurement_table
from charon_ir.profile.device import lookup_device
from charon_ir.profile.fit import Bounded, Sample, elements_of, fit_family, samples_by_family
from charon_ir.profile.key import OpKey, is_free_view
from charon_ir.profile.shipped import shipped_db_path
from charon_ir.profile.store import default_db_path
from charon_ir.target.target import Target

# (database path, modification times of it and its WAL, the shipped file read
# under it or None, device) -> family -> model
_FITTED: dict[tuple[str, tuple[float, ...], str | None, str], dict[str, Bounded | None]] = {}


def _stamp(path: Path) -> tuple[float, ...]:
    """When the database last changed: a commit may sit in the WAL file alone."""
    stamps = []
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            stamps.append(p.stat().st_mtime)
        except OSError:
            stamps.append(-1.0)
    return tuple(stamps)


class FamilyModels:
    """The measurements of one device, grouped by family, fitted on demand."""

    def __init__(self, path: Path, device: str):
        shipped = shipped_db_path()
        key = (str(path), _stamp(path), str(shipped) if shipped is not None else None, device)
        self.models = _FITTED.setdefault(key, {})
        self.path, self.device = path, device
        self._samples: dict[str, list[Sample]] | None = None

    def samples(self) -> dict[str, list[Sample]]:
        if self._samples is None:
            self._samples = samples_by_family(measurement_table(self.path, self.device).values())
        return self._samples

    def model(self, family: str) -> Bounded | None:
        if family not in self.models:
            self.models[family] = fit_family(self.samples().get(family, []))
        return self.models[family]


class PredictEngine(CostEngine):
    name = "predict"

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self._devices: dict[str, FamilyModels] = {}

    def price(self, op: Operation, target: Target) -> Cost | None:
        if not isinstance(op, ComputeOp):
            return None
        if is_free_view(op):
            return Cost(0.0, 0.0, 0.0, self.name)
        device = lookup_device(target)
        if device not in self._devices:
            self._devices[device] = FamilyModels(self.path, device)
        key = OpKey.of(op)
        model = self._devices[device].model(key.family)
        if model is None:
            return None
        flops, nbytes = op.flops(), op.bytes_moved()
        sample = Sample(flops, nbytes, elements_of(key.shape_list()))
        if not model.covers(sample):
            return None
        return Cost(max(model.predict(sample), 0.0), flops, nbytes, self.name)
