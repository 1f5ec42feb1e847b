"""`fuse_backward`: each fused kernel's backward as one kernel, a what-if off by
default (docs/calibration.md, "Fused backward kernels"): a config field that
sets the fuse pass's option, a simulate flag, a validate flag, and refused where
nothing is fused."""

import json
from pathlib import Path

import pytest

from charon_ir.api import TrainingConfig, configure, pass_plan
from charon_ir.errors import CharonError


def fuse_options(**options) -> dict:
    config = TrainingConfig(model="llama-3.1-8b", gpus=8, seq_len=256, **options)
    return dict(pass_plan(config))["fuse"]


def test_fuse_option():
    assert fuse_options(fuse_backward=True) == {"attention": True, "backward": True}
    assert "backward" not in fuse_options()


def test_no_preset_turns_it_on():
    for name in ("megatron-core", "megatron-bridge", "nemo-24.07", "megatron-lm-2022", "fsdp2", "deepspeed", "none"):
        config, _ = configure("llama-3.1-8b", name, gpus=8)
        assert not config.fuse_backward, name


def test_refused_without_fuse():
    with pytest.raises(CharonError, match=r"--fuse-backward needs --fuse"):
        configure("llama-3.1-8b", gpus=8, fuse=False, fuse_backward=True)
    assert configure("llama-3.1-8b", gpus=8, fuse_backward=True)[0].fuse_backward


def test_refused_without_fuse_is_one_line(charon_fails):
    assert charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8", "--no-fuse", "--fuse-backward") == (
        "error: --fuse-backward needs --fuse (it fuses the backward of the fused kernels)")


def test_validate_flag_applies_to_training_records_only(charon_fails):
    assert charon_fails("validate", "--only", "memory", "--fuse-backward").startswith(
        "error: --fuse-backward applies to training records")
    assert charon_fails("validate", "--live", "--fuse-backward").startswith("error: --live measures a step")


def test_simulate_flag_prices_the_fused_backward(charon_cli):
    """The flag reaches the pass: fewer passes over the activations, a shorter step."""
    tiny = Path(__file__).parents[2] / "examples" / "llama_tiny_config.json"
    args = ["simulate", "--model", str(tiny), "--gpus", "1", "--seq-len", "2048", "--global-batch", "1", "--json"]
    runs = [charon_cli(*args), charon_cli(*args, "--fuse-backward")]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    pieces, fused = (json.loads(r.stdout) for r in runs)
    assert fused["iteration_time_s"] < pieces["iteration_time_s"]
    assert fused["flops_per_gpu"] == pieces["flops_per_gpu"]
