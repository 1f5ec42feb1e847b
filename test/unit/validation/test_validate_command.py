"""`charon validate`: records through the simulator, per-record error and MAPE,
never a crash on a record it cannot reproduce."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from charon_ir.cli import app
from charon_ir.validation import published_records
from charon_ir.validation.runner import run_training, summarize, validate


def records(*ids: str) -> list[dict]:
    by_id = {r["id"]: r for r in published_records()}
    return [by_id[i] for i in ids]


def test_a_small_training_record_is_reproduced(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "ir"))
    [result] = run_training(records("megatron_readme_h100_weak_1.7B"), jobs=1)
    assert result.status == "ok", result.note
    assert abs(result.error) < 0.25
    assert "micro-batch 1 (not stated)" in result.note


def test_kernel_and_comm_records_reuse_the_calibration():
    results = validate(published_records(), only="comm")
    assert results and all(r.group == "comm" for r in results)
    assert all(r.status == "ok" and abs(r.error) <= 0.10 for r in results)
    overall = summarize(results)[-1]
    assert overall.group == "all" and overall.compared == len(results)


def test_inference_records_never_crash():
    results = validate(published_records(), only="inference")
    assert len(results) == sum(1 for r in published_records() if r["category"] == "inference")
    assert all(r.status in ("ok", "unsupported", "failed") for r in results)


def test_set_file_and_json(tmp_path):
    path = tmp_path / "set.json"
    path.write_text(json.dumps(records("mamf_NVIDIA_H100_SXM", "korthikanti22_t4_22B_layer_full_recompute")))
    result = CliRunner().invoke(app, ["validate", "--set", str(path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    status = {r["id"]: r["status"] for r in out["records"]}
    assert status == {"mamf_NVIDIA_H100_SXM": "ok",
                      "korthikanti22_t4_22B_layer_full_recompute": "unsupported"}
    assert out["summary"][-1]["compared"] == 1


def test_bad_input_is_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    result = CliRunner().invoke(app, ["validate", "--set", str(path)])
    assert result.exit_code != 0
    result = CliRunner().invoke(app, ["validate", "--only", "everything"])
    assert result.exit_code != 0
