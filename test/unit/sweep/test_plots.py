"""The sweep's plots (issue #30, item 11): with every point on the same GPU
count the frontier scatter is not a vertical strip, the breakdown's labels read
`recomp=none`, and its legend sits beside the bars."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from charon_ir.sweep import summarise  # noqa: E402
from charon_ir.sweep.analysis import plot_label, write_plots  # noqa: E402
from charon_ir.sweep.runner import run_sweep  # noqa: E402


def test_plots_of_one_gpu_count(tiny_space, tmp_path, monkeypatch):
    figures = {}
    real = Figure.savefig

    def keep(fig, path, *args, **kwargs):
        figures[str(path).rsplit("/", 1)[-1]] = fig
        return real(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    result = run_sweep(tiny_space, tier="fast")
    summary = summarise(result)
    write_plots(result.records, summary["pareto"], tmp_path, kind="training")
    pareto = figures["pareto.png"].axes[0]
    assert pareto.get_xlabel() == "peak memory per GPU (GiB), all on 8 GPUs"
    xs = pareto.collections[0].get_offsets()[:, 0]
    assert len(set(xs.tolist())) > 1  # spread, not one strip
    breakdown = figures["breakdown.png"]
    ax = breakdown.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels and all("=" in label for label in labels) and not any("recompnone" in label for label in labels)
    breakdown.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # beside the axes, over no bar


def test_plot_label():
    assert plot_label({"tp": 2, "recompute": "none", "sequence_parallel": True},
                      ["tp", "recompute", "sequence_parallel"]) == "tp=2 recomp=none sp=y"
