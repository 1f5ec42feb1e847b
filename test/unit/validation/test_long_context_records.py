"""The long-context records of published.json (Yang et al. 2024, context-parallel
prefill of Llama3 405B): reproduced through `serve --cp-policy`, printed with
their error, and kept out of the overall MAPE and the gates."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.frontend import load_config
from charon_ir.serving.validation import long_context_terms, model_with_context
from charon_ir.validation import REPORTED_GROUPS, load_record_set, published_records
from charon_ir.validation.report import format_results, results_json
from charon_ir.validation.runner import RecordResult, gate_failure, run_inference, summarize, validate

LONG_CONTEXT_IDS = ("yang24cp_405b_128k_16hosts", "yang24cp_405b_1m_16hosts", "yang24cp_405b_128k_1host")


def long_context_records() -> list[dict]:
    return [r for r in published_records() if r["category"] == "long_context_inference"]


def test_the_records_carry_their_provenance():
    records = {r["id"]: r for r in long_context_records()}
    assert set(records) == set(LONG_CONTEXT_IDS)
    for r in records.values():
        assert "2411.01783" in r["source"]["url"]
        assert r["provenance"].startswith("read")
        assert r["recalled_fields"], "every assumed field is named"
        s = r["strategy"]
        assert s["tp"] * s["pp"] * s["cp"] == r["hardware"]["num_gpus"]
    assert records["yang24cp_405b_1m_16hosts"]["strategy"]["input_len"] == 1048576


def test_only_inference_keeps_its_records():
    """`--only inference` runs the TensorRT-LLM records alone, as before."""
    selected = [r for r in published_records() if r["category"] == "inference"]
    assert len(selected) == 19
    assert all(r["category"] != "long_context_inference" for r in selected)


def test_model_with_context_raises_only_the_context(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    assert model_with_context("llama-3.1-405b", 131072) == "llama-3.1-405b"
    path = model_with_context("llama-3.1-405b", 1048577)
    _, raised = load_config(path)
    _, bundled = load_config("llama-3.1-405b")
    assert raised["max_position_embeddings"] == 1048577
    assert {k: v for k, v in raised.items() if k != "max_position_embeddings"} == \
        {k: v for k, v in bundled.items() if k != "max_position_embeddings"}
    assert model_with_context("llama-3.1-405b", 1048577) == path  # written once


def test_the_128k_record_is_reproduced_and_its_terms_named():
    """The 16-host 128K prefill through serve's cp path: a prediction, in
    seconds, that is the prefill table's token-local + attention (the ring is
    overlapped with attention)."""
    [record] = [r for r in long_context_records() if r["id"] == "yang24cp_405b_128k_16hosts"]
    [result] = run_inference([record])
    assert result.status == "ok", result.note
    assert result.group == "long-context"
    assert result.error is not None and 0.5 < result.predicted < 20
    assert "ring cp 16 x tp 8 (fp8)" in result.note and "attention" in result.note
    assert result.note == long_context_terms(record)


def _result(rid: str, group: str, error: float) -> RecordResult:
    return RecordResult(id=rid, group=group, source=rid.split("_")[0], status="ok", quantity="s",
                        measured=1.0, predicted=1.0 + error)


@settings(max_examples=50, deadline=None)
@given(gated=st.lists(st.floats(-0.5, 0.5), min_size=1, max_size=6),
       reported=st.lists(st.floats(-0.99, 10.0), min_size=1, max_size=4))
def test_reported_records_never_move_the_overall_mape_or_a_gate(gated, reported):
    base = [_result(f"trt_{i}", "inference", e) for i, e in enumerate(gated)]
    extra = [_result(f"yang24cp_{i}", "long-context", e) for i, e in enumerate(reported)]
    alone, both = summarize(base), summarize(base + extra)
    assert both[-1] == alone[-1]
    [row] = [s for s in both if s.group == "long-context" and s.source == "all"]
    assert row.compared == len(reported)
    assert row.mape == pytest.approx(sum(abs(e) for e in reported) / len(reported))
    for gate in (dict(max_mape=0.3), dict(max_error=0.4)):
        assert gate_failure(base + extra, both, **gate) == gate_failure(base, alone, **gate)


def test_the_report_names_the_reported_group():
    results = [_result("trt_0", "inference", 0.1), _result("yang24cp_0", "long-context", 0.5)]
    text = format_results(results, summarize(results))
    assert "-- long-context" in text and "+50.0%" in text
    assert REPORTED_GROUPS["long-context"] in text
    assert json.dumps(results_json(results, summarize(results))["reported_groups"]) == \
        json.dumps({"long-context": REPORTED_GROUPS["long-context"]})


def test_a_selection_of_inference_leaves_out_long_context():
    results = validate([r for r in published_records() if r["id"] in LONG_CONTEXT_IDS], only="inference")
    assert results == []


@pytest.mark.parametrize("change, fragment", [
    (dict(metric="output_tokens_per_sec", unit="output tokens/s"), "a long-context record compares 'first_token_latency'"),
    (dict(strategy={"tp": 8, "pp": 1, "cp": 4, "input_len": 131072, "output_len": 1}),
     "tp x pp x cp = 8 x 1 x 4 is not 'hardware.num_gpus' (128)"),
    (dict(strategy={"tp": 8, "input_len": 131072, "output_len": 1}),
     "needs 'strategy.cp' as an integer >= 1, got null"),
    (dict(strategy={"tp": 8, "cp": 16, "input_len": 0, "output_len": 1}),
     "needs 'strategy.input_len' as an integer >= 1, got 0"),
])
def test_a_bad_long_context_record_is_one_line(tmp_path, charon_fails, change, fragment):
    record = {**long_context_records()[0], **change}
    path = tmp_path / "set.json"
    path.write_text(json.dumps([record]))
    with pytest.raises(CharonError, match="record 0"):
        load_record_set(path)
    line = charon_fails("validate", "--set", str(path))
    assert fragment in line, line
