"""Disaggregated serving with prefill and decode replicas on different GPUs."""

from __future__ import annotations

import pytest

from charon_ir.serving import serve

COMMON = dict(prefill_replicas=1, decode_replicas=1, rate=4.0, num_requests=24, input_len=512,
              output_len=64)


def test_decode_replicas_run_on_their_own_gpu() -> None:
    same = serve("llama-3.1-8b", hardware="H100", **COMMON)
    fast = serve("llama-3.1-8b", hardware="H100", decode_hardware="H100:hbm_bw=6.7e12", **COMMON)
    roles = {r["role"]: r["hardware"] for r in fast["replicas"]}
    assert roles == {"prefill": "H100", "decode": "H100:hbm_bw=6.7e12"}
    # the first token comes from the prefill replica, on the same GPU in both
    assert fast["ttft_s"]["mean"] == pytest.approx(same["ttft_s"]["mean"])
    # decode is memory-bound: twice the HBM bandwidth, a shorter time per output token
    assert fast["tpot_s"]["mean"] < 0.8 * same["tpot_s"]["mean"]


def test_decode_memory_is_planned_on_the_decode_gpu() -> None:
    report = serve("llama-3.1-8b", hardware="H100", decode_hardware="H200", **COMMON)
    assert report["decode_memory"]["hardware"] == "H200"
    assert report["decode_memory"]["kv_capacity_bytes_per_gpu"] > report["memory"]["kv_capacity_bytes_per_gpu"]
    assert report["config"]["decode_hardware"] == "H200"
    assert report["energy_j"] > 0


def test_decode_hardware_needs_disaggregation(charon_fails) -> None:
    line = charon_fails("serve", "--model", "llama-3.1-8b", "--decode-hardware", "H20", "--batch", "2")
    assert "--decode-hardware places the decode replicas of a disaggregated deployment" in line


def test_unknown_decode_hardware_is_one_line(charon_fails) -> None:
    line = charon_fails("serve", "--model", "llama-3.1-8b", "--prefill-replicas", "1", "--decode-replicas", "1",
                        "--decode-hardware", "Z9", "--rate", "1", "--num-requests", "2")
    assert "unknown GPU 'Z9'" in line
