"""`charon sweep` from the command line: flags as axes, JSON, one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY_STEP = str(Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_step.mlir")

CHARON = [sys.executable, "-m", "charon_ir.cli"]


@pytest.fixture
def charon(charon_cli):
    return charon_cli


def test_flags_sweep_prints_json_results_and_pareto(tmp_path, charon):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2",
                 "--pp", "1,2", "--db", str(tmp_path / "r.sqlite"), "--plot", str(tmp_path / "plots"),
                 "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert len(out["results"]) == 4 and out["pareto"]
    assert out["best"]["runner_up"] and out["best"]["why"]
    assert sorted(Path(p).name for p in out["plots"]) == ["breakdown.png", "pareto.png"]


def test_the_results_file_goes_beside_the_plots_else_in_the_working_directory(tmp_path, charon):
    """Without --db the results file is <space name>.sqlite in the --plot folder
    (made for it), else in the working directory; a space that runs nothing
    leaves neither the file nor the folder made for it."""
    flags = ["sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2", "--json"]
    run = charon(*flags, "--plot", str(tmp_path / "runs" / "a"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "runs" / "a" / "sweep.sqlite").is_file() and not (tmp_path / "sweep.sqlite").exists()
    run = charon(*flags, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "sweep.sqlite").is_file()
    none = charon(*flags[:-1], "--tp", "3", "--plot", str(tmp_path / "runs" / "b"), cwd=tmp_path)
    assert none.returncode == 1 and none.stderr.startswith("error: no configuration runs")
    assert not (tmp_path / "runs" / "b").exists()


def test_table_and_why(tmp_path, charon):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2",
                 "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "best 2 of 2 runnable" in run.stdout and "why:" in run.stdout


def test_bad_space_is_one_line(tmp_path, charon):
    space = tmp_path / "s.yaml"
    space.write_text("model: m\ntensor_parallel: [1, 2]\n")
    run = charon("sweep", str(space), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.startswith("error: ") and "unknown setting 'tensor_parallel'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite").exists()


def test_unknown_tier_is_one_line(tmp_path, charon):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2",
                 "--tier", "exact", "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip() == "error: --tier must be screen or fast, got 'exact'"
    assert not (tmp_path / "r.sqlite").exists()


def test_a_bad_value_is_one_line_naming_its_setting(charon_fails, tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text(f"model: {TINY_STEP}\ngpus: 8\ntp_comm_overlap: [false, maybe]\n")
    line = charon_fails("sweep", str(space), "--db", str(tmp_path / "s.sqlite"))
    assert line == f"error: {space}: 'tp_comm_overlap' must be true or false, got 'maybe'"
    assert not (tmp_path / "s.sqlite").exists()
    # a --kind that contradicts the file's
    assert charon_fails("sweep", str(space), "--kind", "serving") == (
        f"error: --kind serving: {space} is a training space (its 'kind')")
    # the training tiers were accepted and ignored by a serving sweep
    serving = Path(__file__).resolve().parents[3] / "examples" / "sweeps" / "serving.yaml"
    assert charon_fails("sweep", str(serving), "--tier", "fast", "--db", str(tmp_path / "s.sqlite")) == (
        "error: --tier: a serving sweep runs `charon serve` per point (the tiers are training's)")
    # the same value from a flag over the file names the setting only
    line = charon_fails("sweep", str(space), "--tp-comm-overlap", "perhaps", "--db", str(tmp_path / "s.sqlite"))
    assert line == "error: 'tp_comm_overlap' must be true or false, got 'perhaps'"


TINY_CONFIG = str(Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_config.json")


@pytest.mark.parametrize("kind, setting, values, error", [
    # each was counted as "1 illegal" and the sweep exited 0 without saying why
    ("training", "hardware", "[H100-SXM5-80GB, Z100]", "'hardware': unknown GPU 'Z100' (known: "),
    ("training", "recompute", "[none, bogus]", "'recompute' must be none, selective, selective-op or full, got 'bogus'"),
    ("training", "cluster", "[dgx-h100, BROKEN]",
     "'cluster': BROKEN:1:12: unexpected end of file (a '}' is missing?)"),
    ("training", "schedule", "[1f1b, 2f2b]", "'schedule' must be gpipe, 1f1b, interleaved, zb-h1 or empty, "
                                            "got '2f2b'"),
    ("training", "optimizer", "[fused, adamw9]", "'optimizer' must be fused, unfused-fp16 or unfused-bf16, "
                                                 "got 'adamw9'"),
    ("training", "attention_kernel", "flash9", "'attention_kernel' must be flash2, flash3, triton or empty, "
                                              "got 'flash9'"),
    ("training", "zero", "[0, 4]", "'zero' must be 0, 1, 2 or 3, got 4"),
    ("training", "engines", "analytic,magic", "'engines' must be a comma-separated list of analytic, db, "
                                              "predict, scaled or calibrated, got 'analytic,magic'"),
    ("training", "topology", "[fat_tree, torus]", "'topology' must be fat_tree, rail_fat_tree, fullflat or "
                                                 "empty, got 'torus'"),
    ("serving", "hardware", "[H100-SXM5-80GB, Z100]", "'hardware': unknown GPU 'Z100' (known: "),
    ("serving", "policy", "[static, greedy]", "'policy' must be continuous, static or empty, got 'greedy'"),
    ("serving", "precision", "fp4", "'precision' must be bf16 or fp8, got 'fp4'"),
    ("serving", "prefill_decode_split", "['', '1:0']", "'prefill_decode_split' must be 'P:D', counts >= 1 of "
                                                    "prefill and decode replicas, or empty, got '1:0'"),
    # serve has no cluster: the setting was carried by every point and ignored
    ("serving", "cluster", "dgx-h100", "'cluster' is not a setting of `charon serve` (it models the implicit "
                                       "cluster of one GPU type, 'hardware'), got 'dgx-h100'"),
    ("serving", "model", f"[{TINY_CONFIG}, llama-9000b]", "'model': unknown model 'llama-9000b'; bundled models:"),
])
def test_a_value_wrong_on_its_own_is_refused_before_the_sweep(charon_fails, tmp_path, kind, setting, values,
                                                             error):
    broken = tmp_path / "broken.cluster"
    broken.write_text("cluster x {\n")
    space = tmp_path / "s.yaml"
    workload = "gpus: 8\nglobal_batch: 16" if kind == "training" else "batch: 4"
    space.write_text(f"kind: {kind}\nmodel: {TINY_CONFIG}\n{workload}\n"
                     f"{setting}: {values.replace('BROKEN', str(broken))}\n")
    db = tmp_path / "s.sqlite"
    line = charon_fails("sweep", str(space), "--db", str(db))
    assert line.startswith(f"error: {space}: {error.replace('BROKEN', str(broken))}"), line
    assert not db.exists()


def test_a_flag_value_wrong_on_its_own_names_the_setting(charon_fails, tmp_path):
    line = charon_fails("sweep", "--model", TINY_CONFIG, "--gpus", "8", "--recompute", "none,bogus",
                        "--db", str(tmp_path / "r.sqlite"))
    assert line == "error: 'recompute' must be none, selective, selective-op or full, got 'bogus'"


def test_the_summary_says_why_points_were_pruned(tmp_path, charon):
    run = charon("sweep", "--model", TINY_CONFIG, "--gpus", "8", "--global-batch", "16", "--tp", "1,3",
                 "--pp", "1,3", "--recompute", "none,full", "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr  # pruning by design is no failure
    assert "(6 illegal, 2 ok)" in run.stdout
    # the rules, on one line, with how many points each pruned
    [line] = [line for line in run.stdout.splitlines() if line.startswith("illegal: ")]
    assert sorted(line.removeprefix("illegal: ").split("; ")) == [
        f"gpus 8 != tp x pp x cp x dp = {tp} x {pp} x 1 x ? (2 points)" for tp, pp in ((1, 3), (3, 1), (3, 3))]


def test_points_that_fail_are_printed_and_the_exit_status_says_so(monkeypatch, capsys, tmp_path):
    import charon_ir.serving

    real = charon_ir.serving.serve

    def serve(model, **options):
        if options["batch"] == 3:
            raise ZeroDivisionError("division by zero")
        return real(model, **options)

    monkeypatch.setattr(charon_ir.serving, "serve", serve)
    db = tmp_path / "r.sqlite"
    code, out = _run_in_process(monkeypatch, capsys, "sweep", "--kind", "serving", "--model", TINY_CONFIG,
                                "--batch", "2,3", "--input-len", "64", "--output-len", "8", "--db", str(db))
    assert code == 3 and "Traceback" not in out.err
    lines = out.err.splitlines()
    assert len(lines) == 2, out.err
    assert lines[0].startswith("error: point batch=3 failed: ZeroDivisionError: division by zero ("), lines[0]
    assert lines[1] == f"error: 1 point failed with an error; the others' results are in {db}"
    assert "(1 error, 1 ok)" in out.out and "best 1 of 1 runnable" in out.out
    # the other point's result is kept: a rerun evaluates nothing and fails the same way
    code, out = _run_in_process(monkeypatch, capsys, "sweep", "--kind", "serving", "--model", TINY_CONFIG,
                                "--batch", "2,3", "--input-len", "64", "--output-len", "8", "--db", str(db),
                                "--json")
    assert code == 3 and json.loads(out.out)["reused"] == 2
    assert out.err.splitlines()[0].startswith("error: point batch=3 failed: ZeroDivisionError")


# Bad input is one `error:` line naming what and where, exit 1, before the sweep
# runs: checked in this process by the `charon_fails` fixture (test/unit/conftest.py).

FLAGS = ("--model", TINY_STEP, "--gpus", "8", "--global-batch", "16")


def test_plot_onto_a_file_fails_before_the_sweep(charon_fails, tmp_path):
    plot = tmp_path / "plots"
    plot.write_text("not a folder")
    db = tmp_path / "r.sqlite"
    line = charon_fails("sweep", *FLAGS, "--db", str(db), "--plot", str(plot))
    assert line == f"error: --plot {plot}: exists and is not a directory"
    assert not db.exists() and plot.read_text() == "not a folder"


def _other_schema(path):
    import sqlite3

    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE results (a INTEGER)")


def _other_tables(path):
    import sqlite3

    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE people (name TEXT)")


DB_CASES = {
    "directory": (lambda p: p.mkdir(), "is a directory, not a file"),
    "text": (lambda p: p.write_text("model,tp\nllama,2\n" * 100), "not a sqlite file"),
    "one byte": (lambda p: p.write_bytes(b"x"), "not a sqlite file"),
    "other schema": (_other_schema, "its results table is not a sweep's (no column key"),
    "other tables": (_other_tables, "a sqlite file of other tables (people)"),
}


@pytest.mark.parametrize("case", DB_CASES)
def test_a_db_that_is_not_a_results_file_is_one_line_and_left_alone(charon_fails, tmp_path, case):
    make, reason = DB_CASES[case]
    db = tmp_path / "r.sqlite"
    make(db)
    before = None if db.is_dir() else db.read_bytes()
    line = charon_fails("sweep", *FLAGS, "--db", str(db))
    assert line.startswith(f"error: --db {db}: {reason}"), line
    assert (db.is_dir() if before is None else db.read_bytes() == before)
    assert not (tmp_path / "r.sqlite-wal").exists()


def test_a_db_name_ending_in_a_separator_is_a_folder(charon_fails, tmp_path):
    line = charon_fails("sweep", *FLAGS, "--db", f"{tmp_path}/r/")
    assert line == f"error: --db {tmp_path}/r/: is a directory, not a file"
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_results_file_or_folder_is_one_line(charon_fails, tmp_path, monkeypatch):
    """Root passes every permission bit, so the test says what os.access would say
    to a user (a read-only file; a folder sqlite cannot put its log in)."""
    from charon_ir.sweep import store

    db = tmp_path / "r.sqlite"
    db.write_bytes(b"")
    real = os.access
    for denied, line in ((db, f"error: --db {db}: the file is not writable"),
                         (tmp_path, f"error: --db {db}: directory {tmp_path} is not writable")):
        monkeypatch.setattr(store.os, "access", lambda path, mode, denied=denied, **kw: (
            not (mode & os.W_OK and Path(path) == denied) and real(path, mode, **kw)))
        assert charon_fails("sweep", *FLAGS, "--db", str(db)) == line
    assert db.read_bytes() == b""


def test_a_plot_folder_that_cannot_be_made_is_one_line(charon_fails, tmp_path, monkeypatch):
    """os.access says yes to root on /proc and read-only mounts: the check makes
    (and removes) a folder there instead."""
    from charon_ir.report import output

    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(output.tempfile, "mkdtemp", refuse)
    plot = tmp_path / "plots"
    assert charon_fails("sweep", *FLAGS, "--plot", str(plot), "--db", str(tmp_path / "r.sqlite")) == (
        f"error: --plot {plot}: {tmp_path} is not a writable directory")
    assert not (tmp_path / "r.sqlite").exists()


def test_a_binary_space_file_is_one_line(charon_fails, tmp_path):
    space = tmp_path / "s.yaml"
    space.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    line = charon_fails("sweep", str(space), "--db", str(tmp_path / "r.sqlite"))
    assert line == f"error: space file '{space}': not UTF-8 text (byte 0)"
    assert not (tmp_path / "r.sqlite").exists()


def test_a_space_file_that_is_a_directory_is_one_line(charon_fails, tmp_path):
    line = charon_fails("sweep", str(tmp_path), "--db", str(tmp_path / "r.sqlite"))
    assert line == f"error: space file '{tmp_path}': cannot read: Is a directory"


@pytest.mark.parametrize("text, error", [
    ("top: many\n", "'top' must be an integer >= 1 (rows of the ranked table), got 'many'"),
    ("top: 0\n", "'top' must be an integer >= 1 (rows of the ranked table), got 0"),
    ("gpu_hour_cost: 3\n", "'gpu_hour_cost' must map GPU names to dollars per hour, got 3"),
    ("gpu_hour_cost: {H100: cheap}\n", "'gpu_hour_cost' must map GPU names to dollars per hour, got {'H100': 'cheap'}"),
])
def test_a_bad_space_setting_names_the_file(charon_fails, tmp_path, text, error):
    space = tmp_path / "s.yaml"
    space.write_text(f"model: {TINY_STEP}\n{text}")
    assert charon_fails("sweep", str(space), "--db", str(tmp_path / "r.sqlite")) == f"error: {space}: {error}"


@pytest.mark.parametrize("flags, error", [
    (("--pareto", "foo"), "--pareto must be gpus, cost or energy for a training sweep, got 'foo'"),
    (("--pareto", "ttft"), "--pareto must be gpus, cost or energy for a training sweep, got 'ttft'"),
    (("--jobs", "-1"), "--jobs must be >= 1 (1: in-process), got -1"),
    (("--jobs", "0"), "--jobs must be >= 1 (1: in-process), got 0"),
    (("--limit", "-1"), "--limit must be >= 0 (0: no limit), got -1"),
    (("--top", "-1"), "--top must be >= 1 (0: the space's, 10), got -1"),
    (("--retime", "-2"), "--retime must be >= -1 (0: 10; -1: none), got -2"),
    (("--tier", "foo"), "--tier must be screen or fast, got 'foo'"),
    (("--tp", "1,,2"), "--tp: empty value in '1,,2' (a comma-separated list is an axis, e.g. 1,2,4)"),
    (("--micro-batch", "1,"), "--micro-batch: empty value in '1,' (a comma-separated list is an axis, e.g. 1,2,4)"),
    (("--tp", " "), "--tp: empty value in ' ' (a comma-separated list is an axis, e.g. 1,2,4)"),
    (("--kind", "inference"), "--kind must be training or serving, got 'inference'"),
    (("--ray", "--ray-address", "auto"),
     "--ray starts a local cluster and --ray-address joins one: give one of them"),
])
def test_a_bad_flag_is_one_line_naming_it(charon_fails, tmp_path, flags, error):
    db = tmp_path / "r.sqlite"
    assert charon_fails("sweep", *FLAGS, "--db", str(db), *flags) == f"error: {error}"
    assert not db.exists()


def test_a_serving_pareto_axis_is_ttft_or_tpot(charon_fails, tmp_path):
    line = charon_fails("sweep", "--kind", "serving", "--model", "llama-3.1-8b", "--batch", "8",
                        "--pareto", "gpus", "--db", str(tmp_path / "r.sqlite"))
    assert line == "error: --pareto must be ttft, tpot or energy for a serving sweep, got 'gpus'"


def test_no_space_file_and_no_model_is_one_line(charon_fails, tmp_path):
    line = charon_fails("sweep", "--gpus", "8", "--db", str(tmp_path / "r.sqlite"))
    assert line == "error: give a space file (e.g. examples/sweeps/training.yaml) or --model"


def test_a_ray_cluster_that_cannot_be_joined_is_one_line(charon_fails, tmp_path, monkeypatch):
    import types

    def init(**options):
        raise ConnectionError("Could not find any running Ray instance.\nPlease specify ...")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init)
    monkeypatch.setitem(sys.modules, "ray", fake)  # no cluster, and no Ray needed to test it
    line = charon_fails("sweep", *FLAGS, "--db", str(tmp_path / "r.sqlite"), "--ray-address", "auto")
    assert line == "error: --ray-address auto: cannot join a Ray cluster (Could not find any running Ray instance.)"
    assert not (tmp_path / "r.sqlite").exists()  # no results file for a sweep that never ran


@pytest.mark.parametrize("name", ["a/b", "..", "../up"])
def test_a_name_that_is_a_path_is_one_line(charon_fails, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    line = charon_fails("sweep", *FLAGS, "--name", name)
    assert line == (f"error: the sweep's name '{name}' is a path, not a name (the results go to "
                    f"<--plot folder or .>/<name>.sqlite; give --db for another place)")
    assert list(tmp_path.iterdir()) == []


def test_a_ray_address_nothing_answers_at_fails_at_once(charon_fails, tmp_path, monkeypatch):
    """Ray retries an address for minutes; the sweep asks it once, for a few
    seconds, before it writes anything."""
    import socket
    import types

    fake = types.SimpleNamespace(is_initialized=lambda: False,
                                 init=lambda **options: pytest.fail("ray.init on a dead address"))
    monkeypatch.setitem(sys.modules, "ray", fake)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    line = charon_fails("sweep", *FLAGS, "--db", str(tmp_path / "r.sqlite"),
                        "--ray-address", f"127.0.0.1:{port}")
    assert line == (f"error: --ray-address 127.0.0.1:{port}: cannot join a Ray cluster "
                    f"(nothing answers at 127.0.0.1:{port}: Connection refused)")
    assert not (tmp_path / "r.sqlite").exists()


def _run_in_process(monkeypatch, capsys, *args):
    from charon_ir import cli

    monkeypatch.setattr(sys, "argv", ["charon", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    return exit_info.value.code, capsys.readouterr()


NOTHING_RUNS = ("error: no configuration runs (1 illegal); the first point is illegal: "
                "parallel degrees, gpus and micro-batch must be >= 1")


def test_a_sweep_where_nothing_runs_fails_after_its_summary(monkeypatch, capsys, tmp_path):
    db, plot = tmp_path / "r.sqlite", tmp_path / "plots"
    code, out = _run_in_process(monkeypatch, capsys, "sweep", *FLAGS, "--tp", "0", "--db", str(db),
                                "--plot", str(plot))
    assert code == 1 and "Traceback" not in out.err
    assert out.err.splitlines() == [NOTHING_RUNS]
    assert "illegal: parallel degrees" in out.out  # the summary says why, the exit status that none runs
    # bad input leaves no file: the results file this run created holds no point that runs
    assert not db.exists() and not plot.exists()
    assert f"-> {db} (removed: no point runs)" in " ".join(out.out.split())
    # one that was there before (a resumed sweep) is kept
    db.write_bytes(b"")
    code, out = _run_in_process(monkeypatch, capsys, "sweep", *FLAGS, "--tp", "0", "--db", str(db))
    assert code == 1 and db.stat().st_size > 0


def test_a_sweep_where_nothing_runs_prints_its_json_then_fails(monkeypatch, capsys, tmp_path):
    code, out = _run_in_process(monkeypatch, capsys, "sweep", *FLAGS, "--tp", "0", "--json",
                                "--db", str(tmp_path / "r.sqlite"))
    assert code == 1
    assert json.loads(out.out)["counts"] == {"illegal": 1}
    assert out.err.splitlines() == [NOTHING_RUNS]


def test_a_limited_sweep_with_points_left_is_not_a_failure_yet(monkeypatch, capsys, tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text(f"model: {TINY_STEP}\ngpus: 8\nglobal_batch: 16\nmemory_limit_gb: 0.000001\ntp: [1, 2]\n")
    db = str(tmp_path / "r.sqlite")
    from charon_ir import cli

    monkeypatch.setattr(sys, "argv", ["charon", "sweep", str(space), "--db", db, "--limit", "1"])
    cli.main()  # returns: exit 0
    out = capsys.readouterr()
    assert "no configuration runs yet: 1 point left (rerun to continue)" in out.out and out.err == ""
    code, out = _run_in_process(monkeypatch, capsys, "sweep", str(space), "--db", db)
    assert code == 1
    assert out.err.splitlines() == ["error: no configuration runs (2 oom); the first point does not fit: "
                                    "memory-analysis (screened): stage 0 needs about 0.0 GiB of 0.0 GiB"]


@pytest.mark.parametrize("flags, error", [
    (("--seq-len", "1.5"), "'seq_len' must be an integer, got 1.5"),
    (("--gpus", "eight"), "'gpus' must be an integer, got 'eight'"),
    (("--tp", "true"), "'tp' must be an integer, got True"),
])
def test_a_value_of_the_wrong_type_is_one_line_not_truncated(charon_fails, tmp_path, flags, error):
    assert charon_fails("sweep", *FLAGS, "--db", str(tmp_path / "r.sqlite"), *flags) == f"error: {error}"


def test_the_later_settings_are_flags_too(tmp_path, charon):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "2",
                 "--sequence-parallel", "true", "--zero", "1", "--tp-comm-overlap", "false,true",
                 "--overlap-param-gather", "false,true", "--tier", "fast", "--json",
                 "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    configs = [r["config"] for r in json.loads(run.stdout)["results"]]
    assert sorted((c["tp_comm_overlap"], c["dp_overlap_param_gather"]) for c in configs) == [
        (False, False), (False, True), (True, False), (True, True)]


def test_a_flag_named_unlike_its_setting_is_named_in_its_error(charon_fails, tmp_path):
    line = charon_fails("sweep", "--model", TINY_STEP, "--overlap-param-gather", ",true",
                        "--db", str(tmp_path / "r.sqlite"))
    assert line.startswith("error: --overlap-param-gather: empty value in ',true'")


@pytest.mark.parametrize("address, probed", [
    ("10.0.0.1:6379", ("10.0.0.1", 6379)), ("ray://10.0.0.1:10001", ("10.0.0.1", 10001)),
    ("[::1]:6379", ("::1", 6379)), ("auto", None), ("ray://head", None),
])
def test_which_ray_addresses_are_probed(monkeypatch, address, probed):
    import socket

    from charon_ir.sweep.runner import _check_answers

    asked = []

    class Answer:
        def close(self):
            pass

    def connect(where, timeout):
        asked.append(where)
        return Answer()

    monkeypatch.setattr(socket, "create_connection", connect)
    _check_answers(address, "--ray-address")
    assert asked == ([probed] if probed else [])


def test_the_points_of_flag_axes_come_in_the_same_order_whatever_the_hash_seed(tmp_path):
    """The flags' axes were a frozenset: their order, and so the points', followed
    the string hash of the process."""
    orders = []
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-m", "charon_ir.cli", "sweep", *FLAGS, "--tp", "1,2", "--pp", "1,2",
             "--recompute", "none,full", "--db", str(tmp_path / f"{seed}.sqlite"), "--json"],
            capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert proc.returncode == 0, proc.stderr
        orders.append([r["key"] for r in json.loads(proc.stdout)["results"]])
    assert orders[0] == orders[1]


def test_cp_comm_type_is_an_axis(tmp_path, charon):
    """`--cp-comm-type p2p,a2a,a2a+p2p --hierarchical-cp 2,4`: p2p once, a2a+p2p at
    each inner group that divides cp (4 of 4 ranks is pruned), a2a pruned: its group
    of 4 does not divide the tiny model's 2 kv heads (Transformer Engine's a2a)."""
    run = charon("sweep", "--model", str(Path(TINY_STEP).with_name("llama_tiny_config.json")), "--gpus", "4",
                 "--cp", "4", "--cp-comm-type", "p2p,a2a,a2a+p2p", "--hierarchical-cp", "2,4", "--seq-len", "256",
                 "--framework", "none", "--tier", "fast", "--db", str(tmp_path / "r.sqlite"), "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["results"]
    ran = sorted((r["config"]["cp_comm_type"], r["config"]["hierarchical_cp"]) for r in rows if r["status"] == "ok")
    assert ran == [("a2a+p2p", 2), ("p2p", 0)]
    pruned = [r for r in rows if r["config"]["cp_comm_type"] == "a2a"]
    assert [r["status"] for r in pruned] == ["illegal"]
