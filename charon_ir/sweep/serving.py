"""Serving points: `charon_ir.serving.serve` per point.

A serving point is cheap next to a training one (an analytical step-time model
and a request-level scheduler, no IR pipeline), so nothing is shared between
points. `serve` sizes weights and KV cache before it schedules a request, so a
deployment that cannot fit fails at once and is recorded as out of memory."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

from charon_ir.errors import CharonError
from charon_ir import serving
from charon_ir.sweep.evaluate import STATUS_ERROR, STATUS_ILLEGAL, STATUS_OK, STATUS_OOM, Clock, record
from charon_ir.sweep.hardware import point_hardware
from charon_ir.sweep.space import Point

OOM_MARKERS = ("does not fit", "no memory", "no block")
"""How serve's memory planner words a deployment that does not fit."""


def serve_options(config: dict[str, Any]) -> dict[str, Any]:
    """ServingConfig keywords of a point."""
    options: dict[str, Any] = {
        "hardware": point_hardware(config),
        "tp": config["tp"],
        "pp": config["pp"],
        "ep": config["ep"],
        "precision": config["precision"],
        "input_len": config["input_len"],
        "output_len": config["output_len"],
        "batch": config["batch"],
        "rate": config["rate"],
        "num_requests": config["num_requests"],
        "policy": config["policy"],
        "max_num_seqs": config["max_num_seqs"],
    }
    split = config["prefill_decode_split"]
    if split:
        prefill, decode = (int(x) for x in split.split(":"))
        options.update(prefill_replicas=prefill, decode_replicas=decode)
    else:
        options["replicas"] = config["replicas"]
    return options


def summarise_serving(report: dict[str, Any]) -> dict[str, Any]:
    replicas = report.get("replicas") or []
    return {
        "ttft_s": report["ttft_s"],
        "tpot_s": report["tpot_s"],
        "itl_s": report.get("itl_s"),
        "e2e_s": report.get("e2e_s"),
        "throughput_tokens_per_s": report["throughput_tokens_per_s"],
        "throughput_tokens_per_s_per_gpu": report.get("throughput_tokens_per_s_per_gpu"),
        "requests_per_s": report.get("requests_per_s"),
        "peak_memory_bytes": report.get("peak_memory_bytes"),
        "max_peak_memory_bytes": report.get("peak_memory_bytes") or 0,
        # as serve counts them (the ranking counts tp x pp x replicas from the settings)
        "reported_gpus": sum(int(r.get("gpus", 0)) for r in replicas) or None,
        "energy_j": report.get("energy_j"),
        "tokens_per_joule": report.get("tokens_per_joule"),
    }


class ServingEvaluator:
    def evaluate(self, points: list[Point]) -> Iterator[dict]:
        for point in points:
            if point.pruned:
                yield record(point, STATUS_ILLEGAL, error=point.pruned)
                continue
            clock = Clock()
            try:
                report = serving.serve(point.config["model"], **serve_options(point.config))
            except CharonError as e:
                message = str(e)
                status = STATUS_OOM if any(m in message for m in OOM_MARKERS) else STATUS_ERROR
                yield record(point, status, error=message, **clock.spent())
                continue
            except Exception as e:  # noqa: BLE001 - a simulator bug must not stop a sweep
                where = traceback.extract_tb(e.__traceback__)[-1]
                message = f"{type(e).__name__}: {e} ({where.filename}:{where.lineno})"
                yield record(point, STATUS_ERROR, error=message, **clock.spent())
                continue
            yield record(point, STATUS_OK, metrics=summarise_serving(report), **clock.spent())
