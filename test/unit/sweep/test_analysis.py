"""Ranking, the Pareto frontier and why the winner wins, on hand-made records."""

from charon_ir.sweep.analysis import explain, objectives, pareto_front, rank, runner_up, table_rows


def training(key, tokens, gpus, step, comm=0.0, **config):
    return {
        "key": key,
        "status": "ok",
        "config": {"gpus": gpus, "tp": 1, "pp": 1, **config},
        "metrics": {
            "tokens_per_s": tokens, "iteration_time_s": step, "mfu": 0.5, "max_peak_memory_bytes": 0,
            "breakdown": {"compute_s": step - comm, "exposed_comm_s": {"tp": comm}, "bubble_s": 0.0},
        },
    }


def test_frontier_trades_throughput_against_gpus():
    records = [
        training("a", 100, 8, 1.0),
        training("b", 180, 16, 1.0),
        training("c", 150, 16, 1.0),  # beaten by b: same GPUs, less throughput
        training("d", 90, 8, 1.0),  # beaten by a
        {"key": "e", "status": "oom", "config": {"gpus": 4}, "metrics": None},
    ]
    front = pareto_front(records, objectives("training"))
    assert [r["key"] for r in front] == ["b", "a"]
    assert [r["key"] for r in rank(records)] == ["b", "c", "a", "d"]


def test_why_names_the_settings_and_the_parts_that_differ():
    best = training("a", 120, 8, 1.0, comm=0.1, tp=2)
    other = training("b", 100, 8, 1.2, comm=0.4, tp=4)
    same = training("c", 120, 8, 1.0, comm=0.1, tp=2, zero=1)
    ranked = rank([other, same, best])
    # a point with the same numbers explains nothing: the runner-up is the next different one
    assert runner_up(ranked)["key"] == "b"
    why = explain(ranked[0], runner_up(ranked))
    assert "tp 2 vs 4" in why["why"] and "exposed tp comm 300.000 ms" in why["why"]
    parts = {p["part"]: p["delta_s"] for p in why["parts"]}
    assert round(parts["exposed tp comm"], 9) == -0.3 and round(parts["compute"], 9) == 0.1


def test_a_swept_overlap_setting_is_a_column_and_a_reason():
    best = training("a", 120, 8, 1.0, comm=0.1, tp=2, tp_comm_overlap=True, dp_bucket_mb=25)
    other = training("b", 100, 8, 1.2, comm=0.3, tp=2, tp_comm_overlap=False, dp_bucket_mb=25)
    assert "tp_comm_overlap y vs -" in explain(best, other)["why"]
    header, rows = table_rows(rank([other, best]), 2)
    # the setting that varies is a column; the one that does not is not
    assert "tp overlap" in header and "bucket MB" not in header
    assert [row[header.index("tp overlap")] for row in rows] == ["y", "-"]
