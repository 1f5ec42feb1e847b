"""`charon sweep` from the command line: flags as axes, JSON, one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

TINY_STEP = str(Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_step.mlir")

CHARON = [sys.executable, "-m", "charon_ir.cli"]


def charon(*args, cwd):
    return subprocess.run([*CHARON, *args], capture_output=True, text=True, cwd=cwd, env=os.environ.copy())


def test_flags_sweep_prints_json_results_and_pareto(tmp_path):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2",
                 "--pp", "1,2", "--db", str(tmp_path / "r.sqlite"), "--plot", str(tmp_path / "plots"),
                 "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert len(out["results"]) == 4 and out["pareto"]
    assert out["best"]["runner_up"] and out["best"]["why"]
    assert sorted(Path(p).name for p in out["plots"]) == ["breakdown.png", "pareto.png"]


def test_table_and_why(tmp_path):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2",
                 "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "best 2 of 2 runnable" in run.stdout and "why:" in run.stdout


def test_bad_space_is_one_line(tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text("model: m\ntensor_parallel: [1, 2]\n")
    run = charon("sweep", str(space), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.startswith("error: ") and "unknown setting 'tensor_parallel'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite").exists()


def test_unknown_tier_is_one_line(tmp_path):
    run = charon("sweep", "--model", TINY_STEP, "--gpus", "8", "--global-batch", "16", "--tp", "1,2",
                 "--tier", "exact", "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip() == "error: --tier must be screen or fast, got 'exact'"
    assert not (tmp_path / "r.sqlite").exists()


def test_a_bad_value_is_one_line_naming_its_setting(tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text(f"model: {TINY_STEP}\ngpus: 8\ntp_comm_overlap: [false, maybe]\n")
    run = charon("sweep", str(space), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip() == "error: 'tp_comm_overlap' must be true or false, got 'maybe'"
    assert not (tmp_path / "s.sqlite").exists()


def test_an_unknown_optimizer_is_pruned_by_its_rule(tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text(f"model: {TINY_STEP}\ngpus: 8\nglobal_batch: 16\noptimizer: [fused, adamw9]\n")
    run = charon("sweep", str(space), "--tier", "fast", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    results = {r["config"]["optimizer"]: r for r in json.loads(run.stdout)["results"]}
    assert results["fused"]["status"] == "ok"
    assert results["adamw9"]["status"] == "illegal"
    assert results["adamw9"]["error"] == "optimizer must be fused, unfused-fp16, unfused-bf16, got 'adamw9'"
