"""Published measurements the simulator is checked against (`published.json`, a
copy of the project's reference table: kernel, collective, training and
inference records with their sources), and `charon validate`'s machinery:
`training` maps training records to simulate runs, `runner` runs every record,
`report` prints them, `live` measures a step on this machine."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError, parse_json, read_text
from charon_ir.frontend.cache import cache_root


CATEGORY_GROUP = {
    "training": "training",
    "training_microbenchmark": "layer",
    "inference": "inference",
    "long_context_inference": "long-context",
    "kernel_microbenchmark": "kernel",
    "comm_microbenchmark": "comm",
    "training_memory": "memory",
}
"""The group (`charon validate --only`) each record category belongs to."""

REPORTED_GROUPS = {
    "long-context": "context-parallel prefills of a published paper whose setup is read from its "
    "abstract and introduction only (the rest assumed, named per record): each record's error is "
    "printed, not judged",
    "memory": "per-GPU peak memory, not time: the allocator's published peak reserved bytes against the "
    "step's allocations replayed through PyTorch's caching allocator (validation/memory.py); its own MAPE, "
    "not mixed with the times' (gated alone by `--only memory --max-mape`)",
}
"""Groups whose records are compared and printed but left out of the overall MAPE
and of `--max-mape` / `--max-error` (their own group's MAPE is printed), each with
the reason. `--only GROUP --max-mape` gates that group's own MAPE."""


def cache_directory() -> Path:
    """Where record configs and imported steps are kept between runs."""
    return cache_root() / "validation"


# Record hardware strings name the GPU loosely; the GPU table has one row per
# product. The PCIe A100 and the GH200 have no row of their own: they are the
# same silicon as the A100-SXM4 and the H200 (GH100, 132 SMs, 989 TFLOP/s).
_GPU_PATTERNS = (
    (r"A100.*40GB", "A100-SXM4-40GB"),
    (r"A100", "A100-SXM4-80GB"),
    (r"GH200", "H200-SXM-141GB"),
    (r"GB200", "GB200-per-GPU"),
    (r"B200", "B200-SXM-180GB"),
    (r"H100", "H100-SXM5-80GB"),
)


def record_gpu(record: dict[str, Any]) -> str:
    text = str(record["hardware"].get("gpu", ""))
    for pattern, name in _GPU_PATTERNS:
        if re.search(pattern, text):
            return name
    raise ValueError(f"record {record['id']}: no GPU type for '{text}'")


@cache
def published_records() -> tuple[dict[str, Any], ...]:
    text = resources.files("charon_ir.validation").joinpath("published.json").read_text()
    return tuple(json.loads(text))


def load_record_set(path: Path | None = None) -> tuple[dict[str, Any], ...]:
    """The records of a JSON file (a list of records in published.json's form),
    or the shipped ones."""
    if path is None:
        return published_records()
    text = read_text(path)
    data = parse_json(text, str(path), constants=True)
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise CharonError(f"{path}: expected a JSON list of records")
    if not data:
        raise CharonError(f"{path}: the list holds no records")
    first_of: dict[str, int] = {}
    for i, record in enumerate(data):
        missing = [k for k in RECORD_FIELDS if k not in record]
        if missing:
            raise CharonError(f"{path}: record {i} lacks {', '.join(missing)}")
        _check_record(record, f"{path}: record {i}")
        if record["id"] in first_of:
            # the runner matches results to records by id
            raise CharonError(f"{path}: record {i} repeats the id '{record['id']}' of record "
                              f"{first_of[record['id']]}")
        first_of[record["id"]] = i
    return tuple(data)


RECORD_FIELDS = {"id": str, "category": str, "model": dict, "hardware": dict, "strategy": dict,
                 "metric": str, "value": (int, float), "unit": str}
"""Every record's fields and their JSON types (a string, an object, a number)."""

TRAINING_FIELDS = (("hardware", "num_gpus"), ("model", "seq_len"), ("model", "layers"),
                   ("model", "hidden"), ("model", "heads"), ("model", "vocab"))
"""The numbers a training record cannot be reproduced without (positive integers)."""

JSON_TYPE = {str: "a string", dict: "a JSON object", (int, float): "a number"}

CATEGORY_FIELDS = {
    "kernel_microbenchmark": (("model", "head_dim", 1, False), ("model", "seq_len", 1, False),
                              ("model", "total_tokens", 1, False), ("model", "hidden", 1, False)),
    "comm_microbenchmark": (("model", "message_bytes", 1, False), ("strategy", "ranks", 2, False),
                            ("strategy", "nodes", 1, False)),
    "inference": (("strategy", "batch_size", 1, False), ("strategy", "input_len", 1, True),
                  ("strategy", "output_len", 1, True), ("strategy", "tp", 1, False),
                  ("strategy", "pp", 1, False)),
    "long_context_inference": (("strategy", "input_len", 1, True), ("strategy", "output_len", 1, True),
                               ("strategy", "tp", 1, True), ("strategy", "pp", 1, False),
                               ("strategy", "cp", 1, True)),
    # the integers validation/memory.py's memory_case reads
    "training_memory": (("strategy", "fsdp", 1, True), ("strategy", "tp", 1, True),
                        ("strategy", "pp", 1, True), ("strategy", "cp", 1, True),
                        ("strategy", "micro_batch", 1, True), ("strategy", "local_batch", 1, True),
                        ("strategy", "seq_len", 1, True), ("hardware", "num_gpus", 1, True),
                        ("strategy", "vp", 1, False), ("strategy", "microbatches", 1, False)),
}
"""(part, key, least value, required) of the integers the other records' runs read
(an attention record's fields when it is one; a GEMM's shape is `shape_MxNxK`)."""


LATENCY_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6}
"""A latency record's units, in that unit per second."""

METRIC_UNITS = {
    "iteration_time": ("s",), "tokens_per_sec_per_gpu": ("tokens/s/GPU",),
    "achieved_tflops_per_gpu": ("TFLOP/s",), "MFU": ("%",),
    "layer_forward_plus_backward_time": ("ms",), "first_token_latency": tuple(LATENCY_UNITS),
    "output_tokens_per_sec_per_gpu": ("output tokens/s/GPU",), "output_tokens_per_sec": ("output tokens/s",),
    "attention_tflops": ("TFLOP/s",), "max_achievable_matmul_tflops": ("TFLOP/s",),
    "matmul_tflops": ("TFLOP/s",), "peak_reserved_memory_per_gpu": ("GiB",),
    "bus_bandwidth": ("GB/s",), "max_bus_bandwidth": ("GB/s",), "peak_bus_bandwidth": ("GB/s",),
}
"""The units each compared metric's value is read in: a record's `unit` is one of
them, alone or followed by a remark (`TFLOP/s per GPU`). The comparison converts
only a latency's unit, so an iteration time in ms would otherwise be read as s."""


def _check_unit(record: dict[str, Any], where: str) -> None:
    """One line unless a compared metric's `unit` is one its value is read in."""
    units = METRIC_UNITS.get(record["metric"])
    if units is None:  # a metric no run compares: reported as not compared
        return
    unit = record["unit"]
    if not any(unit == u or unit.startswith(u + " ") for u in units):
        raise CharonError(f"{where} ('{record['id']}'): metric '{record['metric']}' is read in "
                          f"{' or '.join(repr(u) for u in units)}, got 'unit' {json.dumps(unit)}")


def _check_gpu(record: dict[str, Any], where: str) -> None:
    try:
        record_gpu(record)
    except ValueError:
        raise CharonError(f"{where} ('{record['id']}'): 'hardware.gpu' names no GPU type of this "
                          f"project: {json.dumps(record['hardware'].get('gpu'))}") from None


def _check_record(record: dict[str, Any], where: str) -> None:
    """One line naming the record and the field whose type is wrong: the runner
    reads them without asking again."""
    for key, kind in RECORD_FIELDS.items():
        value = record[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CharonError(f"{where}: '{key}' must be {JSON_TYPE[kind]}, got {json.dumps(value)}")
    # a measurement is a time, a rate or a size: NaN, infinite, zero or negative compares nothing
    if not math.isfinite(record["value"]) or record["value"] <= 0:
        raise CharonError(f"{where} ('{record['id']}'): 'value' must be a finite number > 0, "
                          f"got {json.dumps(record['value'])}")
    _check_unit(record, where)
    if record["category"] not in CATEGORY_GROUP:
        raise CharonError(f"{where} ('{record['id']}'): unknown category '{record['category']}' "
                          f"(known: {', '.join(CATEGORY_GROUP)})")
    for part, key, minimum, required in CATEGORY_FIELDS.get(record["category"], ()):
        value = record[part].get(key)
        if value is None and not required:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise CharonError(f"{where} ('{record['id']}'): {record['category']} record needs "
                              f"'{part}.{key}' as an integer >= {minimum}, got {json.dumps(value)}")
    if (record["category"] == "inference" and record["metric"].startswith("output_tokens_per_sec")
            and "batch_size" not in record["strategy"]):
        raise CharonError(f"{where} ('{record['id']}'): an inference throughput record needs "
                          "'strategy.batch_size' (its static batch)")
    if record["category"] == "long_context_inference":
        # one prompt prefilled by cp ranks of tp x pp GPUs: its first-token latency
        if record["metric"] != "first_token_latency":
            raise CharonError(f"{where} ('{record['id']}'): a long-context record compares "
                              f"'first_token_latency', got metric '{record['metric']}'")
        strategy = record["strategy"]
        degrees = [strategy["tp"], strategy.get("pp") or 1, strategy["cp"]]
        gpus = record["hardware"].get("num_gpus")
        if math.prod(degrees) != gpus:
            raise CharonError(f"{where} ('{record['id']}'): tp x pp x cp = {' x '.join(map(str, degrees))} "
                              f"is not 'hardware.num_gpus' ({json.dumps(gpus)})")
    # context-parallel ranks are a degree of their own (dp counts replicas)
    degrees = [record["strategy"].get(k, 1 if k == "cp" else None) for k in ("tp", "pp", "cp", "dp")]
    if record["category"] == "training" and all(isinstance(d, int) and not isinstance(d, bool)
                                                for d in degrees):
        gpus = record["hardware"].get("num_gpus")
        if math.prod(degrees) != gpus:
            raise CharonError(f"{where} ('{record['id']}'): tp x pp x cp x dp = "
                              f"{' x '.join(map(str, degrees))} is not 'hardware.num_gpus' ({json.dumps(gpus)})")
    if record["category"] == "comm_microbenchmark":
        op = str(record["strategy"].get("op", "allreduce")).replace("_", "")
        if op != "allreduce":  # nccl-tests' all_reduce_perf is the one compared
            raise CharonError(f"{where} ('{record['id']}'): comm records compare all_reduce bus "
                              f"bandwidth, got op '{record['strategy'].get('op')}'")
    if record["category"] not in ("training", "training_microbenchmark"):
        _check_gpu(record, where)
        return
    # a per-layer record is simulated as its step (validation/layers.py)
    kind = record["category"].replace("_", " ")
    fields = TRAINING_FIELDS
    if record["category"] == "training_microbenchmark":
        fields += (("strategy", "micro_batch"),)
    for part, key in fields:
        value = record[part].get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CharonError(f"{where} ('{record['id']}'): {kind} record needs '{part}.{key}' "
                              f"as an integer >= 1, got {json.dumps(value)}")
    if record["category"] == "training_microbenchmark":
        # the forward / backward split it is compared on (validation/layers.py)
        others = record.get("other_metrics", {})
        if not isinstance(others, dict):
            raise CharonError(f"{where} ('{record['id']}'): 'other_metrics' must be a JSON object, "
                              f"got {json.dumps(others)}")
        for key in ("forward_ms", "backward_ms"):
            value = others.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise CharonError(f"{where} ('{record['id']}'): 'other_metrics.{key}' must be a "
                                  f"number >= 0, got {json.dumps(value)}")
    _check_gpu(record, where)
