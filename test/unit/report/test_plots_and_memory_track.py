"""`charon simulate --plot DIR --trace FILE`: three PNGs and a memory counter track
per stage that rises with each forward and falls with each backward."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from charon_ir.api import simulate
from charon_ir.errors import CharonError

EIGHT_LAYERS = str(Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir")


def test_plots_and_memory_counters(tmp_path):
    trace, plots = tmp_path / "trace.json", tmp_path / "plots"
    report = simulate(EIGHT_LAYERS, gpus=4, pp=4, global_batch=8, trace=trace, plot=plots)
    for name in ("timeline.png", "memory.png", "breakdown.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = json.loads(trace.read_text())["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    assert {e["pid"] for e in counters} == {0, 1, 2, 3}
    for stage in range(4):
        curve = [e["args"]["bytes"] for e in counters if e["pid"] == stage]
        # model states at the start and the end; under 1F1B stage s holds at most
        # pp - s forwards
        assert curve[0] == curve[-1] == min(curve)
        steps = sorted(set(curve))
        assert len(steps) - 1 == 4 - stage
    assert len(report["peak_memory_bytes"]) == 4


def test_global_batch_not_divisible_is_one_line():
    with pytest.raises(CharonError) as err:
        simulate(EIGHT_LAYERS, gpus=4, pp=2, global_batch=7)
    assert str(err.value) == "--global-batch 7 is not divisible by dp x micro-batch = 2 x 1 = 2"
    out = subprocess.run(
        [sys.executable, "-m", "charon_ir.cli", "simulate", "--model", EIGHT_LAYERS, "--gpus", "4",
         "--pp", "2", "--global-batch", "7"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 1 and out.stdout == ""
    # the line itself: an internal error is one line too
    assert out.stderr == "error: --global-batch 7 is not divisible by dp x micro-batch = 2 x 1 = 2\n"


def test_the_memory_plot_reaches_the_reported_peak(tmp_path, monkeypatch):
    """memory.png draws held bytes over time and, dashed, each stage's peak as the
    table reports it (held bytes plus the running micro-batch's working set)."""
    from charon_ir.report import plots

    saved = {}
    real_save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (saved.__setitem__(Path(path).name, fig),
                                                             real_save(fig, path)))
    report = simulate(EIGHT_LAYERS, gpus=4, pp=4, global_batch=8, plot=tmp_path / "plots")
    ax = saved["memory.png"].axes[0]
    tops = [max(line.get_ydata()) for line in ax.get_lines()]
    assert max(tops) == pytest.approx(max(report["peak_memory_bytes"]) / plots.GIB)
