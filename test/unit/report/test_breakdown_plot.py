"""simulate --plot's breakdown.png (issue #30, item 11): one tick per pipeline
stage, at whole numbers, and the legend beside the bars."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

STEP = Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_step.mlir"


def test_stage_ticks_are_whole_and_the_legend_covers_no_bar(charon_cli, tmp_path, monkeypatch):
    figures = {}
    real = Figure.savefig

    def keep(fig, path, *args, **kwargs):
        figures[Path(str(path)).name] = fig
        return real(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    run = charon_cli("simulate", "--model", str(STEP), "--gpus", "8", "--pp", "2", "--global-batch", "16",
                     "--plot", str(tmp_path / "plots"))
    assert run.returncode == 0, run.stderr
    [fig] = [f for name, f in figures.items() if "breakdown" in name]
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == [0, 1]
    fig.canvas.draw()
    assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1
