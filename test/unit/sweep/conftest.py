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
        # the settings as given, no framework's defaults: what these tests vary
        # is what they set (test_screen.py times megatron-core's on its own)
        "framework": "none",
    }


@pytest.fixture(scope="session")
def unflashed_step(tmp_path_factory) -> str:
    """The tiny step with its attention as traced rather than flash, so that the
    fuse pass's attention settings change it."""
    text = Path(TINY_STEP).read_text()
    assert "{causal, flash}" in text
    path = tmp_path_factory.mktemp("steps") / "llama_tiny_unflashed_step.mlir"
    path.write_text(text.replace("{causal, flash}", "{causal}"))
    return str(path)


@pytest.fixture(scope="session")
def deep_step(tmp_path_factory) -> str:
    """The tiny step with 8 layers instead of 2: enough for a 4-stage pipeline of
    2 chunks a stage. Only the layer stacks change: the leading 2 of every type
    outside the repeat bodies (a stacked weight or saved activation; inside a
    body the leading 2 is the micro-batch), the repeat counts and the
    parameters' layer ranges."""
    lines = []
    for line in Path(TINY_STEP).read_text().splitlines():
        if len(line) - len(line.lstrip()) < 6:  # not inside a repeat body
            line = line.replace("tensor<2x", "tensor<8x").replace("sim.repeat 2 ", "sim.repeat 8 ")
            line = line.replace("[0:2]", "[0:8]")
        lines.append(line)
    text = "\n".join(lines) + "\n"
    assert text.count("sim.repeat 8 ") == 2
    path = tmp_path_factory.mktemp("steps") / "llama_tiny_8_layers_step.mlir"
    path.write_text(text)
    return str(path)
