"""The TensorRT-LLM records of published.json (static-batch throughput and
first-token latency) reproduced by `reproduce_inference_record`, with the MAPE
printed (`pytest -s`) and held to the issue's target."""

from __future__ import annotations

import pytest

from charon_ir.serving.validation import inference_records, mape, reproduce_inference_record

MAPE_TARGET = 15.0


def trtllm_records():
    return [r for r in inference_records() if "TensorRT-LLM" in r["source"]["title"]]


def test_there_are_trtllm_records():
    metrics = {r["metric"] for r in trtllm_records()}
    assert "first_token_latency" in metrics
    assert metrics & {"output_tokens_per_sec_per_gpu", "output_tokens_per_sec"}


def test_trtllm_mape():
    error, rows = mape(trtllm_records())
    print()
    for record_id, published, predicted, err in rows:
        print(f"{record_id:42s} published {published:9.1f} predicted {predicted:9.1f} error {err:5.1f}%")
    print(f"MAPE over {len(rows)} TensorRT-LLM records: {error:.1f}%")
    assert error <= MAPE_TARGET


def test_unknown_metric_is_one_line():
    from charon_ir.errors import CharonError

    record = dict(trtllm_records()[0], metric="joules_per_token")
    with pytest.raises(CharonError, match="joules_per_token"):
        reproduce_inference_record(record)
