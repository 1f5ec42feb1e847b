"""A small training space on the tiny hand-written Llama step (no torch, no
import cache): 8 GPUs, tp x pp x recompute x zero; tp = 3 cannot tile 8 GPUs,
so 8 of its 24 points are pruned by rule and 16 run."""

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TINY_STEP = str(EXAMPLES / "llama_tiny_step.mlir")


@pytest.fixture
def tiny_space() -> dict:
    return {
        "kind": "training",
        "name": "tiny",
        "model": TINY_STEP,
        "gpus": 8,
        "global_batch": 16,
        "tp": [1, 2, 3],
        "pp": [1, 2],
        "recompute": ["none", "full"],
        "zero": [0, 1],
    }
