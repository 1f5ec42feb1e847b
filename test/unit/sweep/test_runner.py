"""Running sweeps: the results file, resuming, interrupts and executors."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.sweep import run_sweep, sweep
from charon_ir.sweep import evaluate as evaluate_module
from charon_ir.sweep import runner as runner_module
from charon_ir.errors import CharonError
from charon_ir.sweep.store import ResultStore, simulator_fingerprint
from charon_ir.sweep.space import LATER_SETTINGS, load_space


def metrics_by_key(records):
    return {r["key"]: (r["status"], r["metrics"]) for r in records}


def test_results_stream_to_sqlite_in_wal_mode(tiny_space, tmp_path):
    db = tmp_path / "r.sqlite"
    result = run_sweep(tiny_space, db=db)
    assert result.counts == {"ok": 16, "illegal": 8}
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("SELECT count(*) FROM results").fetchone()[0] == 24


def test_rerun_recomputes_nothing_stored(tiny_space, tmp_path, monkeypatch):
    db = tmp_path / "r.sqlite"
    first = run_sweep(tiny_space, db=db, limit=5)
    assert first.counts.get("ok") == 5
    stored = {r["key"] for r in first.records}
    asked: list[str] = []
    retimed: list[str] = []
    real = evaluate_module.TrainingEvaluator.evaluate

    def spy(self, points):
        # the sweep's own pass; the fast tier's re-timing of the best screened
        # points refines their records, once
        (asked if self.tier == "screen" else retimed).extend(p.key for p in points)
        return real(self, points)

    monkeypatch.setattr(evaluate_module.TrainingEvaluator, "evaluate", spy)
    second = run_sweep(tiny_space, db=db)
    assert not stored & set(asked)
    # the limited run enumerated the points up to its fifth: what it stored is reused
    assert len(asked) == 11 and second.reused == len(first.records) and second.counts == {"ok": 16, "illegal": 8}
    assert retimed and all(r["metrics"]["tier"] == "fast" for r in second.records if r["key"] in retimed)
    asked.clear()
    retimed.clear()
    third = run_sweep(tiny_space, db=db)
    assert asked == [] and retimed == [] and third.evaluated == 0


def test_results_another_simulator_stored_are_timed_again(tiny_space, tmp_path, monkeypatch):
    db = tmp_path / "r.sqlite"
    first = run_sweep(tiny_space, db=db, tier="fast")
    # the same sweep after an upgrade (or a recalibration): nothing of the old
    # version's is reused, every point is timed again and replaces its row
    monkeypatch.setattr(runner_module, "simulator_fingerprint", lambda *inputs: "next-version")
    second = run_sweep(tiny_space, db=db, tier="fast")
    assert (second.reused, second.stale, second.evaluated) == (0, 24, 24)
    assert metrics_by_key(second.records).keys() == metrics_by_key(first.records).keys()
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT DISTINCT simulator FROM results").fetchall() == [("next-version",)]
    third = run_sweep(tiny_space, db=db, tier="fast")
    assert (third.reused, third.stale, third.evaluated) == (24, 0, 0)


def test_an_edited_model_file_makes_its_stored_results_stale(tiny_space, tmp_path):
    model = tmp_path / "step.mlir"
    model.write_text(open(tiny_space["model"]).read())
    space = {**tiny_space, "model": str(model), "tp": [1, 2], "recompute": ["none"], "zero": [0]}
    first = run_sweep(space, db=tmp_path / "r.sqlite", tier="fast")
    assert runner_module._input_files(load_space(space).points()) == {model}
    model.write_text(model.read_text() + "// edited\n")
    second = run_sweep(space, db=tmp_path / "r.sqlite", tier="fast")
    assert second.stale == second.evaluated == len(first.records) and second.reused == 0


def test_a_results_file_from_before_the_simulator_column_is_timed_again(tmp_path):
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE results (key TEXT PRIMARY KEY, kind TEXT NOT NULL, config TEXT NOT NULL,"
                    " status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', metrics TEXT,"
                    " seconds REAL NOT NULL DEFAULT 0, cpu_seconds REAL NOT NULL DEFAULT 0)")
        con.execute("INSERT INTO results (key, kind, config, status) VALUES ('k', 'training', '{}', 'ok')")
    store = ResultStore(db, simulator=simulator_fingerprint())
    assert store.stored_keys() == set() and store.stale_keys() == {"k"} and store.get() == []
    store.close()
    # read without a simulator (bench/bench_sweep.py): every row
    assert [r["key"] for r in ResultStore(db).get()] == ["k"]


def test_records_read_without_their_configs_are_the_same_records(tiny_space, tmp_path):
    """`get(configs=False)`, what the sweep reads back (each record's config is
    its point's), is `get()` with the configs left undecoded."""
    db = tmp_path / "r.sqlite"
    result = run_sweep({**tiny_space, "tp": [1, 2]}, db=db, tier="screen")
    store = ResultStore(db)
    full, bare = store.get(), store.get(configs=False)
    assert [r["config"] for r in bare] == [None] * len(full)
    assert [{**r, "config": None} for r in full] == bare
    by_key = {r["key"]: r for r in full}
    assert all(r == by_key[r["key"]] for r in result.records)


def test_a_tampered_row_or_an_unwritable_file_is_one_line(tiny_space, tmp_path):
    db = tmp_path / "r.sqlite"
    run_sweep({**tiny_space, "tp": [1]}, db=db, tier="fast")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE results SET metrics = '{bad' WHERE rowid = 1")
    with pytest.raises(CharonError, match=r"--db .*r.sqlite: the row of point \w+ is not a sweep's record"):
        ResultStore(db).get()
    # valid JSON of the wrong types: named by the row, not a failure in the ranking
    for config, metrics, what in (
            ("[]", '{"tokens_per_s": 1.0}', "its config is not an object"),
            ("{}", "[1, 2]", "its metrics are not an object"),
            ("{}", '{"tokens_per_s": "fast"}', "metric 'tokens_per_s' is 'fast', not a number"),
            ("{}", '{"ttft_s": {"p90": "slow"}}', "metric 'ttft_s' is {'p90': 'slow'}, not a number"),
            ("{}", '{"gpus": true}', "metric 'gpus' is True, not a number")):
        with sqlite3.connect(db) as con:
            con.execute("UPDATE results SET config = ?, metrics = ? WHERE rowid = 1", (config, metrics))
        with pytest.raises(CharonError) as info:
            ResultStore(db).get()
        assert f"is not a sweep's record ({what}); give another --db" in str(info.value)
    store = ResultStore(db)
    store.db.execute("PRAGMA query_only = ON")  # as a read-only mount or an immutable file
    with pytest.raises(CharonError, match=r"--db .*r.sqlite: cannot write to it \(attempt to write"):
        store.put([{"key": "k", "config": {}, "status": "ok"}], "training")


def test_the_fingerprint_follows_the_profile_database_only_when_asked(tmp_path, tiny_space):
    profile = tmp_path / "profile.db"
    profile.write_bytes(b"x")
    with_db = simulator_fingerprint(profile)
    assert with_db != simulator_fingerprint() == simulator_fingerprint()
    profile.write_bytes(b"xy")  # re-profiled
    assert simulator_fingerprint(profile) != with_db
    points = load_space(tiny_space).points()
    assert runner_module._profile_db(points) is None
    assert runner_module._profile_db(load_space({**tiny_space, "engines": "db,analytic"}).points()) is not None


SLOW_SWEEP = """
import sys, time
from charon_ir.sweep import evaluate, run_sweep
real = evaluate.TrainingEvaluator._time
def slow(self, module, config):
    time.sleep(0.15)  # so that the kill lands mid-sweep
    return real(self, module, config)
evaluate.TrainingEvaluator._time = slow
run_sweep({space!r}, db={db!r}, tier="fast")
"""


def test_killed_sweep_resumes_where_it_stopped(tiny_space, tmp_path, monkeypatch):
    db = str(tmp_path / "r.sqlite")
    child = subprocess.Popen([sys.executable, "-c", SLOW_SWEEP.format(space=tiny_space, db=db)])
    deadline = time.time() + 60
    done = 0
    while time.time() < deadline and child.poll() is None:
        time.sleep(0.1)
        if os.path.exists(db):
            try:
                with sqlite3.connect(db) as con:
                    done = con.execute("SELECT count(*) FROM results WHERE status = 'ok'").fetchone()[0]
            except sqlite3.OperationalError:  # the file exists before its table does
                continue
            if done >= 3:
                break
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert 3 <= done < 16, "the sweep finished before it could be killed"
    with sqlite3.connect(db) as con:
        stored = {k for (k,) in con.execute("SELECT key FROM results")}
    asked: list[str] = []
    real = evaluate_module.TrainingEvaluator.evaluate
    monkeypatch.setattr(evaluate_module.TrainingEvaluator, "evaluate",
                        lambda self, points: asked.extend(p.key for p in points) or real(self, points))
    result = run_sweep(tiny_space, db=db, tier="fast")
    assert not stored & set(asked)
    assert result.counts == {"ok": 16, "illegal": 8}


def test_a_results_file_from_before_the_later_settings_resumes(tiny_space, tmp_path):
    db = tmp_path / "r.sqlite"
    run_sweep(tiny_space, db=db, tier="fast")
    # the file as it was written before the later settings existed
    with sqlite3.connect(db) as con:
        for key, config in con.execute("SELECT key, config FROM results").fetchall():
            old = {k: v for k, v in json.loads(config).items() if k not in LATER_SETTINGS}
            con.execute("UPDATE results SET config = ? WHERE key = ?", (json.dumps(old, sort_keys=True), key))
    # a new axis over one of them: its default's points are the stored ones
    result = run_sweep({**tiny_space, "dp_overlap": [True, False]}, db=db, tier="fast")
    assert result.reused == 24 and result.evaluated == 24
    assert result.counts == {"ok": 32, "illegal": 16}
    # every record, stored then or now, spells the new setting out (the table's column)
    assert sorted(r["config"]["dp_overlap"] for r in result.records) == [False] * 24 + [True] * 24


def test_process_pool_gives_in_process_results(tiny_space, tmp_path):
    space = {**tiny_space, "recompute": "none"}
    local = run_sweep(space)
    pooled = run_sweep(space, db=tmp_path / "p.sqlite", jobs=2)
    assert pooled.executor == "pool of 2"
    assert metrics_by_key(pooled.records) == metrics_by_key(local.records)


def test_summary_json_shape(tiny_space):
    summary = sweep(tiny_space)
    assert set(summary) >= {"results", "pareto", "best"}
    assert len(summary["results"]) == 24
    # all points use 8 GPUs: the frontier is the fastest point alone
    assert [p["key"] for p in summary["pareto"]] == [summary["ranking"][0]]
    assert summary["best"]["why"]


def test_example_space_prunes_before_running():
    points = load_space(os.path.join(os.path.dirname(__file__), "../../../examples/sweeps/training.yaml")).points()
    assert len(points) >= 1000
    assert any("needs pp > 1" in p.pruned for p in points)


@pytest.mark.parametrize("options, error", [
    ({"jobs": 0}, "--jobs must be >= 1"),
    ({"limit": -1}, "--limit must be >= 0"),
    ({"retime": -2}, "--retime must be >= -1"),
    ({"sample": -1}, "sample must be >= 0"),
    ({"pareto_axis": "tpot"}, "--pareto must be gpus, cost or energy for a training sweep"),
])
def test_bad_options_fail_before_the_results_file_is_made(tiny_space, tmp_path, options, error):
    from charon_ir.errors import CharonError

    db = tmp_path / "r.sqlite"
    with pytest.raises(CharonError, match=error):
        sweep(tiny_space, db=db, **options)
    assert not db.exists()


@given(recomputes=st.lists(st.sampled_from(["none", "selective", "full"]), min_size=1, max_size=30),
       pps=st.lists(st.sampled_from([1, 2]), min_size=30, max_size=30))
@settings(max_examples=60, deadline=None)
def test_retime_batches_are_builds(recomputes, pps):
    """The re-timing's tasks: the points in order, one task per build, never cut
    between points that differ only in their recompute policy (one build where
    the policy rewrites nothing), and no two neighbours of one build apart."""
    from charon_ir.sweep.space import Point

    points = [Point({"pp": pp, "recompute": r}, f"k{i}") for i, (r, pp) in enumerate(zip(recomputes, pps))]
    batches = runner_module._builds(points)
    assert [p for b in batches for p in b] == points
    assert all(len({p.config["pp"] for p in b}) == 1 for b in batches)
    for before, after in zip(batches, batches[1:]):
        assert before[-1].config["pp"] != after[0].config["pp"]


def test_a_sweep_starts_without_the_last_ones_outcomes(tiny_space):
    """The fast tier keeps outcomes by configuration within a sweep; the next sweep
    in the same process (another model file, profile database or device) must not
    read them."""
    from charon_ir.sweep.workers import evaluator

    stale = evaluator("training", "fast")._outcomes
    stale["a configuration of the last sweep"] = ("ok", "", {"iteration_time_s": -1.0})
    run_sweep(tiny_space, tier="fast")
    assert "a configuration of the last sweep" not in evaluator("training", "fast")._outcomes
