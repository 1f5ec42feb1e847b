"""
The `scaled` engine: an op's time on the target GPU from its measurement on
another GPU, scaled by the roofline of the op on both.

A measured kernel took t_A on GPU A. Its roofline time there is
r_A = max(FLOPs / peak_A, bytes / bandwidth_A) (tensor-core peak of the op's
element type for matmul and attention, the vector peak otherwise): the bound
(compute or memory) is whichever term is larger, and r_A / (t_A - L) is the
efficiency the kernel reached over it. On GPU B the same kernel is taken to
reach the same efficiency over its own roofline r_B, after the same fixed cost
L (launch and the smallest kernel's run, `KERNEL_FLOOR_S`, never more than t_A):

    t_B = L + (t_A - L) x r_B / r_A

so a compute-bound GEMM scales by the ratio of peaks, a memory-bound norm by the
ratio of HBM bandwidths, an op that changes bound between the two GPUs by the
larger of its new terms, and a launch-bound kernel hardly at all. SimAI scales
by the ratio of one kind of peak; carrying each measured kernel's own efficiency
and bound is what this adds (README, "The `scaled` engine", reports the error).

Sources: the measurements the `db` engine reads (the user's database over the
shipped H100 kernels), on every device but the target, preferring a GPU of the
same architecture, then the one measured most recently. A target whose own
measurement exists is the `db` engine's; in the chain db -> predict -> scaled ->
analytic the `scaled` engine prices what neither the target's measurements nor
its fitted models know: a GPU never profiled, a variant of one
(`H100:hbm_bw=6.7e12`), a GPU file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from xdsl.ir import Operation

from charon_ir.dialects.sim import ComputeOp
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.engines.compute_efficiency import KERNEL_FLOOR_S
from charon_ir.engines.db import DbEngine
from charon_ir.profile.device import lookup_device
from charon_ir.profile.key import OpKey, is_free_view
from charon_ir.profile.shipped import shipped_db_path
from charon_ir.profile.store import Measurement, ProfileStore, default_db_path
from charon_ir.target.hardware import GpuSpec, UnknownGpuError, gpu_names, load_gpu
from charon_ir.target.target import Target

TENSOR_KINDS = ("matmul", "attention", "grouped_matmul")
"""Op kinds that run on the tensor cores (the rest on the vector units)."""


def roofline_s(gpu: GpuSpec, kind: str, dtype: str, flops: float, nbytes: float) -> float:
    """max(compute, memory) of an op on `gpu`, at peak rates."""
    peak = gpu.peak(dtype) if kind in TENSOR_KINDS else gpu.vector_peak
    compute = flops / peak if peak and flops else 0.0
    memory = nbytes / gpu.hbm_bandwidth if nbytes else 0.0
    return max(compute, memory)


MIN_ROOFLINE_S = 1e-12


def scale_time(t_a: float, source: GpuSpec, target: GpuSpec, kind: str, dtype: str,
               flops: float, nbytes: float) -> float:
    """The time on `target` of a kernel measured at `t_a` on `source`."""
    fixed = min(t_a, KERNEL_FLOOR_S)
    r_a = roofline_s(source, kind, dtype, flops, nbytes)
    r_b = roofline_s(target, kind, dtype, flops, nbytes)
    # a roofline under a picosecond is no work (denormal byte counts make their
    # ratio noise): the kernel is its launch, unscaled
    if r_a <= MIN_ROOFLINE_S or r_b <= MIN_ROOFLINE_S:
        return t_a
    return fixed + (t_a - fixed) * r_b / r_a


def _devices_in(path: Path, shipped: bool = False) -> list[str]:
    store = ProfileStore.open_shipped(path) if shipped else ProfileStore.open_existing(path)
    if store is None:
        return []
    with store:
        return store.devices()


@cache
def _bundled_gpu(name: str) -> GpuSpec | None:
    try:
        return load_gpu(name) if name in gpu_names() else None
    except UnknownGpuError:
        return None


class ScaledEngine(CostEngine):
    name = "scaled"

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self._db = DbEngine(self.path)
        devices = set(_devices_in(self.path))
        shipped = shipped_db_path()
        if shipped is not None:
            devices |= set(_devices_in(shipped, shipped=True))
        # GPUs whose measurements can be scaled: bundled ones the db engine reads
        self.sources = sorted(d for d in devices if _bundled_gpu(d) is not None)

    def _order(self, target: GpuSpec, own: str) -> list[str]:
        """Source devices, same architecture first (then by name, for a stable choice)."""
        family = target.architecture.split(" ")[0]
        candidates = [d for d in self.sources if d != own]
        return sorted(candidates, key=lambda d: (_bundled_gpu(d).architecture.split(" ")[0] != family, d))  # pyright: ignore[reportOptionalMemberAccess]

    def find(self, key: OpKey, target: GpuSpec, own: str) -> tuple[str, Measurement] | None:
        for device in self._order(target, own):
            m = self._db.table(device).get(key)
            if m is not None:
                return device, m
        return None

    def price(self, op: Operation, target: Target) -> Cost | None:
        if not isinstance(op, ComputeOp):
            return None
        if is_free_view(op):
            return Cost(0.0, 0.0, 0.0, self.name)
        key = OpKey.of(op)
        found = self.find(key, target.gpu, lookup_device(target))
        if found is None:
            return None
        device, m = found
        dtypes = key.dtype_list()
        flops, nbytes = op.flops(), op.bytes_moved()
        time_s = scale_time(m.time_s, _bundled_gpu(device), target.gpu, key.kind,  # pyright: ignore[reportArgumentType]
                            dtypes[-1] if dtypes else "bf16", flops, nbytes)
        return Cost(time_s, flops, nbytes, self.name)
