"""PNG plots of one simulated step: timeline overview, memory over time, time
breakdown per stage (matplotlib, Agg: no display needed)."""

from __future__ import annotations

from pathlib import Path

from charon_ir.report.output import atomic_output, cannot_write
from charon_ir.runtime.program import KIND_JOIN
from charon_ir.runtime.timeline import Timeline

GIB = 2**30


def _save(fig, path: Path) -> None:
    """Atomically: a failed run leaves no half-written PNG."""
    with atomic_output(path, ".png") as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")


def write_plots(directory: str | Path, timeline: Timeline, report: dict,
                memory: dict[int, list[tuple[float, int]]] | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cannot_write(out, e) from None
    program = timeline.program
    written = []

    # 1. timeline: one row per stream, compute blue, communication orange
    names = timeline.stream_names()
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(names) + 1.5))
    for s in range(len(names)):
        bars = [
            (float(timeline.start[i]), float(timeline.end[i] - timeline.start[i]))
            for i in range(program.num_events)
            if program.stream[i] == s and program.kind[i] != KIND_JOIN
        ]
        color = "tab:blue" if program.stream_kinds[s] == 1 else "tab:orange"
        ax.broken_barh(bars, (s - 0.4, 0.8), facecolors=color)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"timeline: {report['iteration_time_s']:.4g} s per step")
    path = out / "timeline.png"
    _save(fig, path)
    plt.close(fig)
    written.append(path)

    # 2. memory over time per stage
    if memory:
        fig, ax = plt.subplots(figsize=(10, 4))
        peaks = report.get("peak_memory_bytes") or []
        for index, points in sorted(memory.items()):
            ts = [t for t, _ in points] + [report["iteration_time_s"]]
            bs = [b / GIB for _, b in points] + [points[-1][1] / GIB]
            (line,) = ax.step(ts, bs, where="post", label=program.programs[index].name)
            if index < len(peaks):
                # the analysis' peak (the table's) adds the running micro-batch's
                # working set, which the curve of held bytes leaves out
                ax.axhline(peaks[index] / GIB, color=line.get_color(), linestyle="--", linewidth=0.8,
                           label=f"{program.programs[index].name} peak (with the working set)")
        ax.set_xlabel("seconds")
        ax.set_ylabel("GiB per GPU")
        ax.set_title("memory: model states + saved activations of in-flight micro-batches; dashed: peak")
        if len(memory) <= 16:
            ax.legend(fontsize=7, ncol=2)
        path = out / "memory.png"
        _save(fig, path)
        plt.close(fig)
        written.append(path)

    # 3. breakdown per stage
    stages = report["stages"]
    axes = sorted({a for st in stages for a in st["exposed_comm_s"]})
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(stages) + 3), 4))
    x = range(len(stages))
    bottom = [0.0] * len(stages)
    for label, values in (
        [("compute", [st["compute_s"] for st in stages])]
        + [(f"exposed {a}", [st["exposed_comm_s"].get(a, 0.0) for st in stages]) for a in axes]
        + [("bubble / wait", [st["bubble_s"] for st in stages])]
    ):
        ax.bar(x, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(list(x))  # stages are whole numbers (matplotlib put ticks at -0.25 ... 1.25)
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("seconds")
    ax.set_title("time breakdown per stage")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, over none
    path = out / "breakdown.png"
    _save(fig, path)
    plt.close(fig)
    written.append(path)
    return written
