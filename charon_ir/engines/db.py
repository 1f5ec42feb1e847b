"""
The `db` engine: an op's measured time, looked up in the profile database.

It knows a compute op when the database holds a measurement with the op's kind,
variant, shapes and element types on the device it prices for: the module's
target GPU (`H100-SXM5-80GB`), or `$CHARON_PROFILE_DEVICE` when set (`cpu` prices
with this machine's CPU measurements). Among measurements taken with several
torch versions it takes the installed version's, else the newest. Collectives
and ops never measured (most `sim.generic` ops: the IR lacks their arguments)
fall through to the next engine; a zero-work `sim.generic` view costs 0.

The database is `$CHARON_PROFILE_DB` or `~/.cache/charon/profile.db`, over the
GPU kernels shipped with Charon (`charon_ir.profile.shipped`: H100 and H200): an
op the user measured is priced with the user's measurement. It is read once per
engine, and a missing file is an empty database. Looking up imports no torch.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from xdsl.ir import Operation

from charon_ir.dialects.sim import ComputeOp
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.profile.device import lookup_device
from charon_ir.profile.key import OpKey, is_free_view
from charon_ir.profile.shipped import SHIPPED_MAX_SPREAD, shipped_db_path
from charon_ir.profile.store import Measurement, ProfileStore, default_db_path, latest_by_key
from charon_ir.target.target import Target


def load_measurements(path: Path, device: str) -> list[Measurement]:
    """Every measurement on `device`; none when the file does not exist."""
    store = ProfileStore.open_existing(path)
    if store is None:
        return []
    with store:
        return list(store.measurements(device))


@cache
def shipped_table(shipped: Path, device: str) -> dict[OpKey, Measurement]:
    """The shipped measurements of `device` the engines read (samples within
    `SHIPPED_MAX_SPREAD`), read once per process: the file is immutable (every
    cost-annotate run builds its engines anew)."""
    with ProfileStore.open_shipped(shipped) as store:
        table = latest_by_key(store.measurements(device))
    return {key: m for key, m in table.items() if m.spread <= SHIPPED_MAX_SPREAD}


def measurement_table(path: Path, device: str) -> dict[OpKey, Measurement]:
    """One measurement per op on `device`: the database at `path` over the
    shipped one."""
    table: dict[OpKey, Measurement] = {}
    shipped = shipped_db_path()
    if shipped is not None and shipped.resolve() != path.resolve():
        table.update(shipped_table(shipped, device))
    table.update(latest_by_key(load_measurements(path, device)))
    return table


class DbEngine(CostEngine):
    name = "db"

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self._tables: dict[str, dict[OpKey, Measurement]] = {}

    def table(self, device: str) -> dict[OpKey, Measurement]:
        if device not in self._tables:
            self._tables[device] = measurement_table(self.path, device)
        return self._tables[device]

    def price(self, op: Operation, target: Target) -> Cost | None:
        if not isinstance(op, ComputeOp):
            return None
        if is_free_view(op):
            return Cost(0.0, 0.0, 0.0, self.name)
        m = self.table(lookup_device(target)).get(OpKey.of(op))
        if m is None:
            return None
        return Cost(m.time_s, op.flops(), op.bytes_moved(), self.name)
