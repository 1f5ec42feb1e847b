"""GPU specifications (package data copied from the project's reference table) and
the target a module is compiled for.

`gpus.json` holds per-value sources; `summary_flat` is the numeric view read here.
Units inside this module are SI: FLOP/s, bytes, bytes/s, seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from charon_ir.errors import CharonError


class UnknownGpuError(CharonError):
    pass


# Short names a user types; each maps to a row of gpus.json.
GPU_ALIASES: dict[str, str] = {
    "V100": "V100-SXM2",
    "A100": "A100-SXM4-80GB",
    "A100-40GB": "A100-SXM4-40GB",
    "A100-80GB": "A100-SXM4-80GB",
    "H100": "H100-SXM5-80GB",
    "H100-SXM": "H100-SXM5-80GB",
    "H100-PCIe": "H100-PCIe-80GB",
    "H800": "H800-SXM5-80GB",
    "H20": "H20-96GB",
    "H200": "H200-SXM-141GB",
    "B200": "B200-SXM-180GB",
    "GB200": "GB200-per-GPU",
}


@dataclass(frozen=True)
class GpuSpec:
    name: str
    peak_flops: dict[str, float] = field(hash=False)
    """Dense peak FLOP/s per element type name (bf16, f16, f32, tf32, f8)."""
    hbm_bytes: float
    hbm_bandwidth: float
    scale_up_bandwidth: float
    """One direction, per GPU (what a ring collective is bounded by)."""
    scale_up_domain: int
    gpus_per_node: int
    nics_per_node: int
    nic_bandwidth: float
    """Per NIC, one direction, bytes/s."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def peak(self, dtype: str) -> float:
        key = {"f8E4M3FN": "f8", "f8E5M2": "f8", "f64": "f64"}.get(dtype, dtype)
        if key in self.peak_flops:
            return self.peak_flops[key]
        # integer and unknown types are priced at the fp16 rate
        return self.peak_flops.get("bf16") or self.peak_flops["f16"]

    @property
    def sm_count(self) -> int:
        """Streaming multiprocessors (compute units on AMD); 0 when unknown."""
        return int(self.raw.get("sm_or_cu_count") or 0)

    @property
    def architecture(self) -> str:
        """The GPU table's `architecture` ("Hopper (GH100)", ...); empty when unknown."""
        return str(_details().get(self.name, {}).get("architecture") or "")

    @property
    def vector_peak(self) -> float:
        """FLOP/s of the non-tensor-core units (fp32), what pointwise ops run on."""
        return self.peak_flops.get("f32") or self.peak("bf16") / 16

    @property
    def scale_out_bandwidth_per_gpu(self) -> float:
        return self.nics_per_node * self.nic_bandwidth / self.gpus_per_node


@cache
def _gpus_json() -> dict[str, Any]:
    return json.loads(resources.files("charon_ir.target").joinpath("gpus.json").read_text())


def _table() -> dict[str, dict[str, Any]]:
    return _gpus_json()["summary_flat"]


def _details() -> dict[str, dict[str, Any]]:
    """The GPU table's full entries (architecture, sources) by name."""
    return _gpus_json()["gpus"]


def gpu_names() -> list[str]:
    return sorted(_table())


def resolve_gpu_name(name: str) -> str:
    table = _table()
    if name in table:
        return name
    if name in GPU_ALIASES:
        return GPU_ALIASES[name]
    lowered = {k.lower(): k for k in table} | {k.lower(): v for k, v in GPU_ALIASES.items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    raise UnknownGpuError(
        f"unknown GPU '{name}' (known: {', '.join(gpu_names())})"
    )


@cache
def load_gpu(name: str) -> GpuSpec:
    key = resolve_gpu_name(name)
    row = _table()[key]
    tf = 1e12

    def rate(field_name: str) -> float | None:
        v = row.get(field_name)
        return None if v is None else float(v) * tf

    peaks = {
        "f64": rate("fp64_tflops"),
        "f32": rate("fp32_tflops"),
        "tf32": rate("tf32_tflops"),
        "bf16": rate("bf16_tflops"),
        "f16": rate("fp16_tflops"),
        "f8": rate("fp8_tflops"),
    }
    peaks = {k: v for k, v in peaks.items() if v}
    return GpuSpec(
        name=key,
        peak_flops=peaks,
        hbm_bytes=float(row["hbm_gb"]) * 2**30,
        hbm_bandwidth=float(row["hbm_tb_s"]) * 1e12,
        scale_up_bandwidth=float(row.get("scale_up_unidir_GB_s") or 0) * 1e9,
        scale_up_domain=int(row.get("scale_up_domain") or 1),
        gpus_per_node=int(row.get("gpus_per_node") or 8),
        nics_per_node=int(row.get("nics_per_node") or 1),
        nic_bandwidth=float(row.get("nic_Gb_s") or 0) * 1e9 / 8,
        raw=row,
    )


def check_fp8(gpu: GpuSpec, flag: str = "--precision fp8") -> None:
    """fp8 GEMMs need fp8 tensor cores: one line naming `flag` and the GPU otherwise."""
    if "f8" not in gpu.peak_flops:
        raise CharonError(f"{flag}: {gpu.name} has no fp8 tensor cores")
