"""Fixtures of the serving tests: a synthetic step-time model (no IR, so that
property tests run thousands of schedules in seconds)."""

from __future__ import annotations

import pytest

from charon_ir.serving.latency import Curve, ReplicaShape, StepTimeModel


def synthetic_model(kv_bytes_per_token: float = 1.0e5) -> StepTimeModel:
    """A 7B-like replica on one H100: weight-read floor, then compute-bound."""
    return StepTimeModel(
        body=Curve((1.0, 64.0, 512.0, 4096.0), (4.0e-3, 4.2e-3, 9.0e-3, 60.0e-3)),
        head_s=1.0e-4,
        head_s_per_extra_sequence=1.0e-7,
        decode_attention=Curve((1024.0, 262144.0), (3.0e-4, 20.0e-3)),
        # by tiles: one 128-token block (1 + 0.81), a 4,096-token prompt (528 + 32 x 0.81)
        prefill_attention=Curve((1.81, 553.92), (3.0e-4, 12.0e-3)),
        attention_block_overhead=0.81,
        decode_attention_reads=1.0,
        p2p_s_per_token=0.0,
        pp=1,
        weight_bytes_per_gpu=13.5e9,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token,
        workspace_bytes_per_token=6.0e4,
        hbm_bytes=80 * 2**30,
        shape=ReplicaShape("synthetic-7b", "H100-SXM5-80GB"),
    )


@pytest.fixture
def model() -> StepTimeModel:
    return synthetic_model()
