"""GPU specifications and the one loader that reads them.

A GPU is a TOML file (schema in docs/gpus.md). The bundled GPUs are the files in
`charon_ir/target/gpus/` (their values and sources: `gpus.json`); a user's file
works wherever a GPU name does. `load_gpu` takes

- a name or alias of a bundled GPU: `H100-SXM5-80GB`, `H100`;
- a path to a GPU file: `gpus/rubin.toml` (any name ending in `.toml`);
- either of these followed by `:key=value,...`, a variant derived from it:
  `H100-SXM5-80GB:hbm_bw=6.7e12,hbm=141e9` (keys: `VARIANT_KEYS`, SI units).

A variant keeps its base's calibration (`calibrated_as`): the kernel efficiencies
fitted on the measured GPU carry over, so only what the override changes moves.
Units inside this module are SI: FLOP/s, bytes, bytes/s, seconds, watts.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
import tomllib
from dataclasses import dataclass, field, fields, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError

HOST_LINK_BYTES_S = 25e9
"""Bytes/s one GPU moves to or from pinned host memory, each direction: the
project's one host-link bandwidth (serving's KV swaps and remote-KV fetches, the
training step's CPU activation offload copies). An input, not a measurement of
this project: docs/calibration.md ("CPU activation offloading") gives its source."""


class UnknownGpuError(CharonError):
    pass


class GpuFileError(UnknownGpuError):
    """A GPU file or a variant that does not follow the schema: one line naming
    the file (or variant) and the field."""


@dataclass(frozen=True)
class GpuEfficiency:
    """Efficiency curves a GPU file may state for the analytic engine. None
    takes the constants fitted for the GPU's `calibrated_as` (engines/
    compute_efficiency.py, engines/collectives.py; docs/calibration.md), or the
    documented defaults for a GPU without records."""

    gemm_max: float | None = None
    """Peak fraction of an ideally shaped GEMM."""
    memory_max: float | None = None
    """Fraction of HBM bandwidth a large streaming kernel reaches."""
    memory_half_bytes: float | None = None
    """Bytes at which a streaming kernel reaches half of memory_max."""
    overlap_slowdown: float | None = None
    """Contention of a kernel and a collective running at once."""
    attention: tuple[tuple[str, tuple[float, ...]], ...] = ()
    """(kernel, (fwd_max, fwd_overhead, bwd_max, bwd_overhead, head_dim_half))."""
    scale_up_efficiency: float | None = None
    nic_efficiency: float | None = None
    nvls_efficiency: float | None = None
    nvls_latency_s: float | None = None
    nvls_fill_s: float | None = None


@dataclass(frozen=True)
class GpuSpec:
    name: str
    peak_flops: dict[str, float] = field(hash=False)
    """Dense peak FLOP/s per element type name (bf16, f16, f32, tf32, f8, f4)."""
    hbm_bytes: float
    hbm_bandwidth: float
    scale_up_bandwidth: float
    """One direction, per GPU (what a ring collective is bounded by)."""
    scale_up_domain: int
    gpus_per_node: int
    nics_per_node: int
    nic_bandwidth: float
    """Per NIC, one direction, bytes/s."""
    sm_count: int = 0
    """Streaming multiprocessors (compute units on AMD); 0 when unknown."""
    architecture: str = ""
    l2_bytes: float = 0.0
    clock_hz: float = 0.0
    scale_up_tech: str = ""
    scale_up_latency: float = 0.5e-6
    multicast: bool = False
    """NVSwitch multicast (NVLS): in-switch reductions in the scale-up domain."""
    nic_latency: float = 1.0e-6
    nics_stated: bool = False
    """Whether the file gives the node's NICs (count and speed); else a cluster
    assumes one 400 Gb/s NIC per GPU."""
    tdp_w: float = 0.0
    """Board power at full load (TDP); 0 when no public figure exists."""
    idle_w: float = 0.0
    calibration: str = ""
    """The bundled GPU whose fitted efficiency constants apply (`calibrated_as`)."""
    efficiency: GpuEfficiency = field(default_factory=GpuEfficiency)
    ref: str = ""
    """What `load_gpu` reads back to this spec (a name, a path, a variant): what
    the IR and cluster texts store."""
    source: str = field(default="", compare=False)
    """The file the spec was read from."""

    def peak(self, dtype: str) -> float:
        key = {"f8E4M3FN": "f8", "f8E5M2": "f8", "f4E2M1FN": "f4", "f64": "f64"}.get(dtype, dtype)
        if key in self.peak_flops:
            return self.peak_flops[key]
        # integer and unknown types are priced at the fp16 rate
        return self.peak_flops.get("bf16") or self.peak_flops["f16"]

    @property
    def vector_peak(self) -> float:
        """FLOP/s of the non-tensor-core units (fp32), what pointwise ops run on."""
        return self.peak_flops.get("f32") or self.peak("bf16") / 16

    @property
    def scale_out_bandwidth_per_gpu(self) -> float:
        return self.nics_per_node * self.nic_bandwidth / self.gpus_per_node

    @property
    def has_power(self) -> bool:
        return self.tdp_w > 0


# ---------------------------------------------------------------------------
# The schema
# ---------------------------------------------------------------------------

PEAK_TYPES = ("f64", "f32", "tf32", "bf16", "f16", "f8", "f4")

# section -> key -> (required, kind); kind "number" is a non-negative finite number
SCHEMA: dict[str, dict[str, tuple[bool, str]]] = {
    "": {"schema": (True, "int"), "name": (True, "text"), "aliases": (False, "texts"),
         "architecture": (False, "text"), "calibrated_as": (False, "text")},
    "compute": {"peak_tflops": (True, "peaks"), "int8_tops": (False, "number"),
                "sm_count": (False, "count"), "clock_mhz": (False, "number"),
                "l2_mb": (False, "number"), "llc_mb": (False, "number")},
    "memory": {"hbm_gib": (True, "positive"), "hbm_tb_s": (True, "positive")},
    "scale_up": {"tech": (False, "text"), "bandwidth_gb_s": (True, "number"),
                 "domain": (True, "count"), "latency_us": (False, "number"),
                 "multicast": (False, "bool")},
    "node": {"gpus": (True, "count"), "nics": (False, "count"), "nic_gbit_s": (False, "number"),
             "nic_latency_us": (False, "number")},
    "power": {"tdp_w": (True, "positive"), "idle_w": (True, "number")},
    "efficiency": {"gemm_max": (False, "fraction"), "memory_max": (False, "fraction"),
                   "memory_half_mib": (False, "number"), "overlap_slowdown": (False, "number"),
                   "attention": (False, "attention"), "scale_up_efficiency": (False, "fraction"),
                   "nic_efficiency": (False, "fraction"), "nvls_efficiency": (False, "fraction"),
                   "nvls_latency_us": (False, "number"), "nvls_fill_us": (False, "number")},
}
REQUIRED_SECTIONS = ("compute", "memory", "scale_up", "node")
"""`power` and `efficiency` may be left out: without power figures a report's
energy is null (Google publishes none for its TPUs)."""
ATTENTION_FIELDS = 5
SCHEMA_VERSION = 1


def _check_value(where: str, key: str, kind: str, value: Any) -> Any:
    def bad(what: str) -> GpuFileError:
        return GpuFileError(f"{where}: '{key}' {what}, got {value!r}")

    def number(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise bad("must be a number")
        if v < 0:
            raise bad("must not be negative")
        return float(v)

    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise bad("must be a non-empty string")
        return value
    if kind == "texts":
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
            raise bad("must be a list of names")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("must be true or false")
        return value
    if kind in ("int", "count"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad("must be a whole number >= 1")
        return value
    if kind == "number":
        return number(value)
    if kind == "positive":
        if number(value) == 0:
            raise bad("must be positive")
        return float(value)
    if kind == "fraction":
        if not 0 < number(value) <= 1:
            raise bad("must lie in (0, 1]")
        return float(value)
    if kind == "peaks":
        if not isinstance(value, dict):
            raise bad("must be a table of TFLOP/s per type")
        for t, v in value.items():
            if t not in PEAK_TYPES:
                raise GpuFileError(f"{where}: unknown key 'peak_tflops.{t}' (known: {', '.join(PEAK_TYPES)})")
            _check_value(where, f"peak_tflops.{t}", "positive", v)
        if "bf16" not in value and "f16" not in value:
            raise GpuFileError(f"{where}: missing field 'peak_tflops.bf16' (or f16)")
        return {t: float(v) for t, v in value.items()}
    if kind == "attention":
        if not isinstance(value, dict):
            raise bad("must be a table of kernels")
        out = []
        for kernel, row in value.items():
            if kernel not in ("flash2", "flash3"):
                raise GpuFileError(f"{where}: unknown key 'attention.{kernel}' (known: flash2, flash3)")
            if not isinstance(row, list) or len(row) != ATTENTION_FIELDS:
                raise GpuFileError(
                    f"{where}: 'attention.{kernel}' must be [fwd_max, fwd_overhead, bwd_max, "
                    f"bwd_overhead, head_dim_half], got {row!r}"
                )
            out.append((kernel, tuple(_check_value(where, f"attention.{kernel}", "number", x) for x in row)))
        return tuple(out)
    raise AssertionError(kind)


def parse_gpu(data: dict[str, Any], where: str, ref: str = "") -> GpuSpec:
    """A GpuSpec from a GPU file's parsed TOML; `where` names the file in errors."""
    sections = {"": {k: v for k, v in data.items() if not isinstance(v, dict)}}
    for k, v in data.items():
        if isinstance(v, dict):
            if k not in SCHEMA or k == "":
                raise GpuFileError(f"{where}: unknown section [{k}] (known: {', '.join(s for s in SCHEMA if s)})")
            sections[k] = v
    for section in REQUIRED_SECTIONS:
        if section not in sections:
            raise GpuFileError(f"{where}: missing section [{section}]")
    values: dict[str, dict[str, Any]] = {}
    for section, table in sections.items():
        schema = SCHEMA[section]
        dotted = f"{section}." if section else ""
        for key in table:
            if key not in schema:
                raise GpuFileError(f"{where}: unknown key '{dotted}{key}' (known: {', '.join(schema)})")
        for key, (required, _) in schema.items():
            if required and key not in table:
                raise GpuFileError(f"{where}: missing field '{dotted}{key}'")
        values[section] = {k: _check_value(where, dotted + k, schema[k][1], v) for k, v in table.items()}
    top, compute, memory = values[""], values["compute"], values["memory"]
    scale_up, node, power = values["scale_up"], values["node"], values.get("power", {})
    if top["schema"] != SCHEMA_VERSION:
        raise GpuFileError(f"{where}: 'schema' must be {SCHEMA_VERSION}, got {top['schema']}")
    if power and power["idle_w"] > power["tdp_w"]:
        raise GpuFileError(f"{where}: 'power.idle_w' ({power['idle_w']:g}) exceeds 'power.tdp_w' ({power['tdp_w']:g})")
    if "calibrated_as" in top and top["calibrated_as"] not in _bundled_files():
        raise GpuFileError(
            f"{where}: 'calibrated_as' must name a bundled GPU, got '{top['calibrated_as']}'"
        )
    eff = values.get("efficiency", {})
    us = 1e-6
    efficiency = GpuEfficiency(
        gemm_max=eff.get("gemm_max"),
        memory_max=eff.get("memory_max"),
        memory_half_bytes=eff["memory_half_mib"] * 2**20 if "memory_half_mib" in eff else None,
        overlap_slowdown=eff.get("overlap_slowdown"),
        attention=eff.get("attention", ()),
        scale_up_efficiency=eff.get("scale_up_efficiency"),
        nic_efficiency=eff.get("nic_efficiency"),
        nvls_efficiency=eff.get("nvls_efficiency"),
        nvls_latency_s=eff["nvls_latency_us"] * us if "nvls_latency_us" in eff else None,
        nvls_fill_s=eff["nvls_fill_us"] * us if "nvls_fill_us" in eff else None,
    )
    name = top["name"]
    return GpuSpec(
        name=name,
        peak_flops={t: v * 1e12 for t, v in compute["peak_tflops"].items()},
        hbm_bytes=memory["hbm_gib"] * 2**30,
        hbm_bandwidth=memory["hbm_tb_s"] * 1e12,
        scale_up_bandwidth=scale_up["bandwidth_gb_s"] * 1e9,
        scale_up_domain=scale_up["domain"],
        gpus_per_node=node["gpus"],
        nics_per_node=node.get("nics", 1),
        nic_bandwidth=node.get("nic_gbit_s", 0.0) * 1e9 / 8,
        sm_count=compute.get("sm_count", 0),
        architecture=top.get("architecture", ""),
        l2_bytes=compute.get("l2_mb", 0.0) * 2**20,
        clock_hz=compute.get("clock_mhz", 0.0) * 1e6,
        scale_up_tech=scale_up.get("tech", ""),
        scale_up_latency=scale_up.get("latency_us", 0.5) * us,
        multicast=scale_up.get("multicast", False),
        nic_latency=node.get("nic_latency_us", 1.0) * us,
        nics_stated="nics" in node and bool(node.get("nic_gbit_s")),
        tdp_w=power.get("tdp_w", 0.0),
        idle_w=power.get("idle_w", 0.0),
        calibration=top.get("calibrated_as", name),
        efficiency=efficiency,
        ref=ref or name,
    )


# ---------------------------------------------------------------------------
# Bundled GPUs
# ---------------------------------------------------------------------------


@cache
def _bundled_files() -> dict[str, str]:
    """Bundled GPU name -> its file's text."""
    folder = resources.files("charon_ir.target").joinpath("gpus")
    out = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".toml"):
            out[entry.name.removesuffix(".toml")] = entry.read_text()
    return out


@cache
def _bundled(name: str) -> GpuSpec:
    where = f"charon_ir/target/gpus/{name}.toml"
    try:
        data = tomllib.loads(_bundled_files()[name])
    except tomllib.TOMLDecodeError as e:
        raise GpuFileError(f"{where}: {e}") from None
    spec = parse_gpu(data, where)
    return replace(spec, source=where)


@cache
def _aliases() -> dict[str, str]:
    """Short names a user types (each bundled file's `aliases`)."""
    out = {}
    for name, text in _bundled_files().items():
        for alias in tomllib.loads(text).get("aliases", []):
            out[alias] = name
    return out


def gpu_names() -> list[str]:
    return sorted(_bundled_files())


def resolve_gpu_name(name: str) -> str:
    """The bundled GPU, GPU file or variant `name` stands for, as `load_gpu`
    stores it (raises UnknownGpuError or GpuFileError)."""
    table = _bundled_files()
    if name in table:
        return name
    if name in _aliases():
        return _aliases()[name]
    lowered = {k.lower(): k for k in table} | {k.lower(): v for k, v in _aliases().items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    if _looks_like_file(name) or split_variant(name)[1]:
        return load_gpu(name).ref
    raise UnknownGpuError(
        f"unknown GPU '{name}' (known: {', '.join(gpu_names())}; or a GPU file ending in .toml)"
    )


# ---------------------------------------------------------------------------
# Files and variants
# ---------------------------------------------------------------------------

VARIANT_KEYS: dict[str, str] = {
    "peak_flops_scale": "every peak FLOP/s multiplied by this factor",
    "bf16": "bf16 and f16 peak, FLOP/s",
    "f8": "fp8 peak, FLOP/s",
    "f4": "fp4 peak, FLOP/s",
    "hbm": "HBM capacity, bytes",
    "hbm_bw": "HBM bandwidth, bytes/s",
    "l2": "L2 cache, bytes",
    "sm_count": "streaming multiprocessors",
    "scale_up_bw": "scale-up (NVLink) bandwidth per GPU and direction, bytes/s",
    "scale_up_domain": "GPUs in one scale-up domain",
    "nic_bw": "bandwidth of one NIC per direction, bytes/s",
    "tdp": "board power at full load, W",
    "idle": "idle power, W",
    "power_cap": "board power limit, W: the clocks drop until full-load tensor work fits under it",
}
"""Keys of `NAME:key=value,...` and what each sets (SI units)."""
_VARIANT = re.compile(r"^(?P<base>.+?):(?P<overrides>[A-Za-z_0-9]+=[^,]*(,[A-Za-z_0-9]+=[^,]*)*)$")


def _looks_like_file(text: str) -> bool:
    return text.endswith(".toml")


def split_variant(text: str) -> tuple[str, str]:
    m = _VARIANT.match(text)
    return (m.group("base"), m.group("overrides")) if m else (text, "")


def _number_text(x: float) -> str:
    """The shortest text that reads back to `x`: 6.7e12, 141e9 -> 1.41e11, 2."""
    number = Decimal(repr(float(x))).normalize()
    if -5 < number.adjusted() < 6:
        return format(number, "f")
    return str(number).lower().replace("e+", "e")


def derive_gpu(base: GpuSpec, overrides: dict[str, float], where: str) -> GpuSpec:
    """`base` with `overrides` (VARIANT_KEYS) applied; its name and ref the
    canonical variant text, its calibration the base's."""
    for key, value in overrides.items():
        if key not in VARIANT_KEYS:
            raise GpuFileError(f"{where}: unknown key '{key}' (known: {', '.join(VARIANT_KEYS)})")
        if not math.isfinite(value) or value <= 0:
            raise GpuFileError(f"{where}: '{key}' must be a positive number, got {value!r}")
    spec = base
    peaks = dict(spec.peak_flops)
    if "peak_flops_scale" in overrides:
        peaks = {t: v * overrides["peak_flops_scale"] for t, v in peaks.items()}
    if "bf16" in overrides:
        peaks["bf16"] = peaks["f16"] = overrides["bf16"]
    for t in ("f8", "f4"):
        if t in overrides:
            peaks[t] = overrides[t]
    changes: dict[str, Any] = {"peak_flops": peaks}
    simple = {"hbm": "hbm_bytes", "hbm_bw": "hbm_bandwidth", "l2": "l2_bytes",
              "scale_up_bw": "scale_up_bandwidth", "nic_bw": "nic_bandwidth", "tdp": "tdp_w",
              "idle": "idle_w"}
    for key, attr in simple.items():
        if key in overrides:
            changes[attr] = float(overrides[key])
    for key in ("sm_count", "scale_up_domain"):
        if key in overrides:
            if not float(overrides[key]).is_integer():
                raise GpuFileError(f"{where}: '{key}' must be a whole number, got {overrides[key]!r}")
            changes[key] = int(overrides[key])
    if "nic_bw" in overrides:
        changes["nics_stated"] = True
    tdp = changes.get("tdp_w", spec.tdp_w)
    idle = changes.get("idle_w", spec.idle_w)
    if idle > tdp > 0 or (idle and not tdp):
        raise GpuFileError(f"{where}: idle power {idle:g} W exceeds the TDP {tdp:g} W")
    if "power_cap" in overrides:
        cap = overrides["power_cap"]
        if not tdp:
            raise GpuFileError(f"{where}: 'power_cap' needs the GPU's power figures ([power] in its file)")
        if cap <= idle:
            raise GpuFileError(f"{where}: 'power_cap' ({cap:g} W) must exceed the idle power ({idle:g} W)")
        if cap < tdp:
            clock = power_capped_clock(cap, tdp, idle)
            changes["peak_flops"] = {t: v * clock for t, v in peaks.items()}
            changes["tdp_w"] = cap
    text = ",".join(f"{k}={_number_text(v)}" for k, v in sorted(overrides.items()))
    ref = f"{base.ref}:{text}"
    return replace(spec, **changes, name=f"{base.name}:{text}", ref=ref)


def power_capped_clock(cap_w: float, tdp_w: float, idle_w: float) -> float:
    """The clock (a share of the uncapped one) at which full-load tensor work
    draws `cap_w`: dynamic power goes as f V^2 and DVFS lowers V with f, so as
    f^3 (docs/calibration.md, "Energy"); HBM keeps its own clock, so
    memory-bound kernels keep their speed."""
    return ((cap_w - idle_w) / (tdp_w - idle_w)) ** (1 / 3)


def with_power_cap(hardware: str, watts: float, flag: str = "--power-cap") -> str:
    """`hardware` capped at `watts` per GPU (the `power_cap` variant key)."""
    if not (isinstance(watts, (int, float)) and math.isfinite(watts) and watts > 0):
        raise CharonError(f"{flag} must be a positive number of watts, got {watts}")
    text = f"power_cap={_number_text(watts)}"
    spec = hardware if split_variant(hardware)[1] else f"{hardware}:"
    joined = f"{spec},{text}" if not spec.endswith(":") else spec + text
    try:
        load_gpu(joined)
    except GpuFileError as e:
        raise CharonError(f"{flag} {watts:g}: {str(e).split(': ', 1)[-1]}") from None
    return joined


def _parse_overrides(text: str, where: str) -> dict[str, float]:
    out = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        key = key.strip()
        try:
            out[key] = float(value)
        except ValueError:
            raise GpuFileError(f"{where}: '{key}' must be a number, got '{value}'") from None
        if key in VARIANT_KEYS and not math.isfinite(out[key]):
            raise GpuFileError(f"{where}: '{key}' must be a finite number, got '{value}'")
    return out


def load_gpu_file(path: str | Path) -> GpuSpec:
    """A user's GPU file; its ref is the absolute path."""
    p = Path(path)
    where = str(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise GpuFileError(f"GPU file '{where}' not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise GpuFileError(f"GPU file '{where}': cannot read ({e.__class__.__name__})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise GpuFileError(f"{where}: not valid TOML: {e}") from None
    spec = parse_gpu(data, where, ref=str(p.resolve()))
    if spec.name in _bundled_files() or spec.name in _aliases():
        raise GpuFileError(
            f"{where}: 'name' {spec.name!r} is a bundled GPU's; a file describing other hardware "
            "needs its own name (calibrated_as takes a bundled GPU's fitted efficiencies)"
        )
    return replace(spec, source=where)


@cache
def load_gpu(name: str) -> GpuSpec:
    """A bundled GPU by name or alias, a GPU file (`.toml`), or either with
    `:key=value,...` overrides (module docstring)."""
    base_text, overrides = split_variant(name)
    if overrides:
        base = load_gpu(base_text)
        return derive_gpu(base, _parse_overrides(overrides, f"GPU variant '{name}'"), f"GPU variant '{name}'")
    if _looks_like_file(name):
        return load_gpu_file(name)
    table = _bundled_files()
    key = name if name in table else None
    if key is None:
        key = resolve_gpu_name(name)
    return _bundled(key)


def field_names() -> list[str]:
    return [f.name for f in fields(GpuSpec)]


def check_fp8(gpu: GpuSpec, flag: str = "--precision fp8") -> None:
    """fp8 GEMMs need fp8 tensor cores: one line naming `flag` and the GPU otherwise."""
    if "f8" not in gpu.peak_flops:
        raise CharonError(f"{flag}: {gpu.name} has no fp8 tensor cores")
