"""
Which device's measurements price an op.

A measurement is stored under the name of the device it ran on: `cpu`, or for a
GPU the row of the bundled GPU table it matches (`H100-SXM5-80GB`; the raw CUDA
name when none matches). A lookup prices for the module's target GPU by default,
so measurements taken on an H100 price a module targeting `H100`. Setting
`CHARON_PROFILE_DEVICE` (e.g. to `cpu`) prices with that device's measurements
instead, whatever the target: the way to use a profile taken on this machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata

from charon_ir.target.hardware import gpu_names
from charon_ir.target.target import Target

DEVICE_ENV = "CHARON_PROFILE_DEVICE"


def lookup_device(target: Target) -> str:
    return os.environ.get(DEVICE_ENV) or target.gpu.name


@contextmanager
def pricing_device(device: str) -> Iterator[None]:
    """Price with `device`'s measurements inside the block (`DEVICE_ENV` set, then
    put back as it was, unset included)."""
    previous = os.environ.get(DEVICE_ENV)
    os.environ[DEVICE_ENV] = device
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DEVICE_ENV, None)
        else:
            os.environ[DEVICE_ENV] = previous


def installed_torch_version() -> str | None:
    """torch's version from its package metadata: no `import torch` (seconds)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def gpu_table_name(cuda_name: str) -> str:
    """The GPU table row a CUDA device name (`NVIDIA H100 80GB HBM3`) is, or the
    CUDA name itself when no single row matches."""
    words = set(re.split(r"[\s\-_]+", cuda_name.upper()))
    candidates = [n for n in gpu_names() if n.split("-")[0].upper() in words]
    pcie = "PCIE" in words
    candidates = [n for n in candidates if ("PCIE" in n.upper()) == pcie] or candidates
    sizes = re.findall(r"(\d+)\s*GB", cuda_name.upper())
    if sizes:
        candidates = [n for n in candidates if f"{sizes[0]}GB" in n.upper()] or candidates
    return candidates[0] if len(candidates) == 1 else cuda_name
