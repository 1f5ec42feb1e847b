"""Chrome / Perfetto trace of an interpreted timeline (the JSON trace-event format).

One process per rank class (pipeline stage), one thread per stream; each event is a
complete event (`ph: "X"`) with microsecond `ts` and `dur`. Load the file in
https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from charon_ir.report.output import atomic_output
from charon_ir.runtime.program import KIND_JOIN
from charon_ir.runtime.timeline import Timeline


def trace_events(timelines: list[Timeline]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    pid_base = 0
    for tl in timelines:
        program = tl.program
        for index, info in enumerate(program.programs):
            events.append(
                {"name": "process_name", "ph": "M", "pid": pid_base + index, "tid": 0,
                 "args": {"name": f"{info.name} ({info.ranks} GPUs)"}}
            )
        for tid, stream in enumerate(program.streams):
            events.append(
                {"name": "thread_name", "ph": "M", "pid": pid_base + program.stream_program[tid],
                 "tid": tid, "args": {"name": stream}}
            )
        for i in range(program.num_events):
            if program.kind[i] == KIND_JOIN:
                continue
            stream = int(program.stream[i])
            args: dict[str, Any] = {}
            if program.flops[i]:
                args["flops"] = float(program.flops[i])
            if program.bytes[i]:
                args["bytes"] = float(program.bytes[i])
            events.append(
                {
                    "name": program.labels[i],
                    "cat": program.streams[stream],
                    "ph": "X",
                    "ts": float(tl.start[i]) * 1e6,
                    "dur": float(tl.end[i] - tl.start[i]) * 1e6,
                    "pid": pid_base + program.stream_program[stream],
                    "tid": stream,
                    "args": args,
                }
            )
        pid_base += len(program.programs)
    return events


def memory_counters(memory: dict[int, list[tuple[float, int]]]) -> list[dict[str, Any]]:
    """A counter track per stage: device memory (bytes per GPU) over time."""
    return [
        {"name": "memory", "ph": "C", "ts": t * 1e6, "pid": index, "tid": 0,
         "args": {"bytes": b}}
        for index, points in sorted(memory.items())
        for t, b in points
    ]


def write_trace(path: str | Path, timelines: list[Timeline],
                memory: dict[int, list[tuple[float, int]]] | None = None) -> None:
    """Write atomically: a failed run never leaves a partial trace behind."""
    path = Path(path)
    events = trace_events(timelines) + (memory_counters(memory) if memory else [])
    payload = {"traceEvents": events, "displayTimeUnit": "ms"}
    with atomic_output(path) as tmp, open(tmp, "w") as f:
        json.dump(payload, f)
