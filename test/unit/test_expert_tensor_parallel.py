"""`etp`: expert tensor parallelism as Megatron-Core sets it (default tp), and
etp 1 under tp folding the tp ranks into the expert group (Megatron-Bridge)."""

import pytest

from charon_ir.api import TrainingConfig, configure, pass_plan
from charon_ir.errors import CharonError


def plan(**options) -> dict[str, dict]:
    config = TrainingConfig(model="deepseek-v3", gpus=64, seq_len=256, global_batch=64, **options)
    return dict(pass_plan(config))


def test_etp_tp_is_the_default_experts_split_over_tp():
    for etp in (0, 2):
        passes = plan(tp=2, ep=8, sequence_parallel=True, etp=etp)
        assert passes["shard-tensor"] == {"tp": 2}
        assert passes["shard-expert"] == {"ep": 8}
        assert passes["data-parallel"]["dp"] == 32 // 8


def test_etp_1_folds_tp_into_the_expert_group():
    passes = plan(tp=2, ep=8, sequence_parallel=True, etp=1)
    assert passes["shard-tensor"] == {"tp": 2, "experts": False}
    assert passes["shard-expert"] == {"ep": 8, "etp": 1}
    # 32 dense replicas; the ep group of 8 is 4 ep positions x 2 tp ranks: 8 replicas of it
    assert passes["data-parallel"]["dp"] == 8


def test_etp_1_without_tp_or_experts_changes_nothing():
    assert plan(ep=8, etp=1)["shard-expert"] == {"ep": 8}
    assert "shard-expert" not in plan(tp=2, etp=1)


@pytest.mark.parametrize(("options", "message"), [
    (dict(tp=4, ep=2, etp=1), "--etp 1 folds the --tp 4 ranks into the expert group: --ep 2 must be a multiple of --tp"),
    (dict(tp=4, ep=8, etp=2), "--etp must be 1 or --tp (4), got 2"),
    (dict(tp=1, ep=8, etp=-1), "--etp must be 1 or --tp (1), got -1"),
])
def test_bad_etp_is_one_line(options, message):
    with pytest.raises(CharonError) as err:
        plan(**options)
    assert str(err.value) == message


def test_presets():
    """megatron-core: etp = tp (arguments.py's default); megatron-bridge: 1 (its MoE
    configs); a flag wins; no preset decides it for a dense run."""
    common = dict(gpus=64, tp=2, seq_len=256, global_batch=64)
    core, settings = configure("deepseek-v3", "megatron-core", ep=8, **common)
    assert core.etp == 2 and settings["settings"]["etp"]["from"] == "framework megatron-core"
    bridge, settings = configure("deepseek-v3", "megatron-bridge", ep=8, **common)
    assert bridge.etp == 1 and settings["settings"]["etp"]["from"] == "framework megatron-bridge"
    flag, settings = configure("deepseek-v3", "megatron-bridge", ep=8, etp=2, **common)
    assert flag.etp == 2 and settings["settings"]["etp"]["from"] == "flag"
    dense, _ = configure("llama-3.1-8b", "megatron-bridge", **common)
    assert dense.etp == 0


def test_cli_flag(charon_cli):
    result = charon_cli("simulate", "--model", "deepseek-v3", "--gpus", "64", "--tp", "4", "--ep", "2",
                        "--etp", "1", "--seq-len", "256")
    assert result.returncode == 1 and not result.stdout
    assert result.stderr.strip().splitlines() == [
        "error: --etp 1 folds the --tp 4 ranks into the expert group: --ep 2 must be a multiple of --tp"]
