"""`charon simulate --framework`: the preset fills what the flags leave unset, a
flag given (its `--no-` form too) wins, and the report says which is which."""

from __future__ import annotations

import json
import sys

import pytest

from charon_ir import cli

STEP = ["--model", "examples/llama_tiny_step.mlir", "--gpus", "8", "--tp", "2", "--pp", "2",
        "--global-batch", "8", "--json"]


def simulate_json(monkeypatch, capsys, *args: str) -> dict:
    monkeypatch.setattr(sys, "argv", ["charon", "simulate", *STEP, *args])
    try:
        cli.main()
    except SystemExit as e:
        assert e.code in (0, None), capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_the_default_framework_is_megatron_core(monkeypatch, capsys):
    report = simulate_json(monkeypatch, capsys)
    framework = report["framework"]
    assert framework["name"] == "megatron-core" and framework["summary"].startswith("Megatron-Core")
    settings = framework["settings"]
    assert settings["sequence_parallel"] == {
        "value": True, "from": "framework megatron-core", "why": settings["sequence_parallel"]["why"]}
    assert settings["zero"]["value"] == 1 and settings["dp_overlap_param_gather"]["value"]


def test_a_flag_overrides_the_preset(monkeypatch, capsys):
    report = simulate_json(monkeypatch, capsys, "--no-sequence-parallel", "--bucket-mb", "50",
                           "--no-overlap-grad-reduce")
    settings = report["framework"]["settings"]
    assert settings["sequence_parallel"] == {"value": False, "from": "flag"}
    assert settings["tp_comm_overlap"]["value"] is False  # it needs sequence parallelism
    assert settings["dp_bucket_mb"] == {"value": 50, "from": "flag"}
    assert settings["dp_overlap"] == {"value": False, "from": "flag"}


def test_none_is_the_flags_alone(monkeypatch, capsys):
    bare = simulate_json(monkeypatch, capsys, "--framework", "none")
    assert all(entry["from"] == "default" for entry in bare["framework"]["settings"].values())
    assert bare["framework"]["settings"]["zero"]["value"] == 0
    core = simulate_json(monkeypatch, capsys)
    assert bare["iteration_time_s"] != core["iteration_time_s"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--framework", "megatron"], "error: --framework must be one of none, megatron-core, nemo-24.07, "
         "megatron-bridge, megatron-lm-2021, megatron-lm-2022, deepspeed-0.3, deepspeed, fsdp2, llm-foundry, "
         "got 'megatron'"),
        (["--precision", "fp8", "--fp8-recipe", "nvfp4"],
         "error: cost-annotate: option 'fp8-recipe' must be one of delayed, current, mxfp8, blockwise, got 'nvfp4'"),
    ],
)
def test_bad_framework_settings_are_one_line(charon_fails, args, line):
    assert charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8", *args) == line


def test_a_hand_written_step_as_written_takes_no_framework(charon_fails):
    line = charon_fails("simulate", "--model", "examples/llama_tiny_step.mlir", "--framework", "nemo-24.07")
    assert line.startswith("error: --framework: examples/llama_tiny_step.mlir is simulated as written")
