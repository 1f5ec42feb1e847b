"""Framework presets: the settings a user leaves unset come from the stack's
documented defaults, a setting given wins, and every decided setting says where
its value came from."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.api import TrainingConfig, configure, lowering_options
from charon_ir.errors import CharonError
from charon_ir.frameworks import (
    DEFAULT_FRAMEWORK,
    FRAMEWORKS,
    expert_launches_per_gemm,
    field_defaults,
    megatron_core_bucket_mb,
    preset_settings,
)


def test_the_default_is_megatron_core():
    assert DEFAULT_FRAMEWORK == "megatron-core"
    config, report = configure("m", gpus=64, tp=8, pp=2)
    assert report["name"] == "megatron-core"
    assert config.sequence_parallel and config.tp_comm_overlap
    assert config.zero == 1 and config.dp_overlap and config.dp_overlap_param_gather
    assert config.dp_bucket_mb == megatron_core_bucket_mb(4) == 77
    assert config.grad_bytes == 4


def test_none_is_the_bare_simulator():
    config, report = configure("m", "none", gpus=64, tp=8, pp=2)
    assert config == TrainingConfig(model="m", gpus=64, tp=8, pp=2)
    assert all(entry["from"] == "default" for entry in report["settings"].values())


def test_defaults_follow_the_layout():
    """Sequence parallelism only with tp > 1; tp-comm overlap only under it; the
    distributed optimizer not beside FSDP; parameter gathers overlapped only
    where a sharded optimizer gathers them."""
    single, _ = configure("m", gpus=8)
    assert not single.sequence_parallel and not single.tp_comm_overlap
    fsdp, _ = configure("m", gpus=8, fsdp=True)
    assert fsdp.zero == 0 and not fsdp.dp_overlap_param_gather
    no_sp, _ = configure("m", gpus=8, tp=8, sequence_parallel=False)
    assert not no_sp.tp_comm_overlap
    zero0, _ = configure("m", gpus=16, zero=0)
    assert not zero0.dp_overlap_param_gather
    # Megatron-Core's bucket counts the dp x cp group's ranks: max(40M, 1M x 16 x 4)
    cp, _ = configure("m", gpus=512, tp=8, cp=4)
    assert cp.dp_bucket_mb == megatron_core_bucket_mb(64) == 123


def test_fp8_recipe_by_stack_and_gpu():
    assert configure("m", "nemo-24.07", precision="fp8")[0].fp8_recipe == "delayed"
    assert configure("m", "megatron-bridge", precision="fp8")[0].fp8_recipe == "current"
    blackwell = configure("m", "megatron-bridge", precision="fp8", hardware="B200-SXM-180GB")[0]
    assert blackwell.fp8_recipe == "mxfp8"
    # under bf16 no recipe is decided
    _, report = configure("m", "megatron-bridge")
    assert report["settings"]["fp8_recipe"]["from"] == "default"


def test_expert_launches_follow_te_grouped_linear():
    """Per local expert, a layer's six expert GEMM ops launch 6 GEMMs; fp8 adds the
    quantization of 4 tensors per expert: 3 kernels each under current scaling
    (amax, scale, cast), 1 under MXFP8, none per expert under delayed scaling."""
    assert expert_launches_per_gemm("bf16", "delayed") == 1.0
    assert expert_launches_per_gemm("fp8", "delayed") == 1.0
    assert expert_launches_per_gemm("fp8", "current") * 6 == pytest.approx(18)
    assert expert_launches_per_gemm("fp8", "mxfp8") * 6 == pytest.approx(10)


def test_moe_host_settings_only_with_experts():
    """Megatron-Core's stacks run experts eagerly per expert and sync on the
    dispatch; the settings are decided only where experts are spread (ep > 1) and
    price nothing until a host cost per launch is given."""
    moe, report = configure("m", "megatron-bridge", gpus=16, ep=8, precision="fp8")
    assert moe.expert_launches == pytest.approx(3.0) and moe.moe_host_sync and moe.host_launch_s == 0.0
    assert report["settings"]["moe_host_sync"]["from"] == "framework megatron-bridge"
    dense, report = configure("m", "megatron-core", gpus=16)
    assert dense.expert_launches == 0.0 and not dense.moe_host_sync
    assert report["settings"]["expert_launches"]["from"] == "default"
    bare, _ = configure("m", "none", gpus=16, ep=8)
    assert bare.expert_launches == 0.0 and not bare.moe_host_sync


def test_megatron_core_dispatch_is_synchronous():
    """Megatron-Core's token dispatchers wait for each expert all_to_all unless
    overlap_moe_expert_parallel_comm is set: its presets turn the free overlap off
    where experts are spread, lower it as synchronous, and a flag wins."""
    for name in ("megatron-core", "nemo-24.07", "megatron-bridge"):
        moe, report = configure("m", name, gpus=16, ep=8)
        assert not moe.moe_a2a_overlap
        assert report["settings"]["moe_a2a_overlap"]["from"] == f"framework {name}"
        assert lowering_options(moe)["sync_expert_a2a"] is True
    dense, _ = configure("m", "megatron-core", gpus=16)
    assert dense.moe_a2a_overlap and lowering_options(dense)["sync_expert_a2a"] is False
    for name in ("none", "deepspeed", "fsdp2"):
        assert configure("m", name, gpus=16, ep=8)[0].moe_a2a_overlap
    overlapped, report = configure("m", "megatron-bridge", gpus=16, ep=8, moe_a2a_overlap=True)
    assert overlapped.moe_a2a_overlap and report["settings"]["moe_a2a_overlap"]["from"] == "flag"


def test_megatron_core_non_interleaved_pipeline_waits_for_its_sends():
    """Megatron-Core's 1F1B without interleaving waits on every batched
    isend/irecv (`_communicate(wait_on_reqs=True)`); overlap_p2p_comm reaches only
    the interleaved schedule: its presets turn the free overlap off with pp > 1 and
    no vpp, lower the sends as blocking, and a flag wins."""
    for name in ("megatron-core", "nemo-24.07", "megatron-bridge"):
        piped, report = configure("m", name, gpus=16, pp=4)
        assert not piped.pp_send_overlap
        assert report["settings"]["pp_send_overlap"]["from"] == f"framework {name}"
        assert "wait_on_reqs=True" in report["settings"]["pp_send_overlap"]["why"]
        assert lowering_options(piped)["blocking"] == ("pp",)
        interleaved, report = configure("m", name, gpus=16, pp=4, vpp=2)
        assert interleaved.pp_send_overlap and report["settings"]["pp_send_overlap"]["from"] == "default"
        assert lowering_options(interleaved)["blocking"] == ()
    flat, _ = configure("m", "megatron-core", gpus=16)
    assert flat.pp_send_overlap and lowering_options(flat)["blocking"] == ()
    for name in ("none", "fsdp2"):
        assert configure("m", name, gpus=16, pp=4)[0].pp_send_overlap
    # DeepSpeed's pipeline engine sends with a blocking dist.send
    for name in ("deepspeed-0.3", "deepspeed"):
        assert not configure("m", name, gpus=16, pp=4)[0].pp_send_overlap
        assert configure("m", name, gpus=16)[0].pp_send_overlap
    free, report = configure("m", "megatron-core", gpus=16, pp=4, pp_send_overlap=True)
    assert free.pp_send_overlap and report["settings"]["pp_send_overlap"]["from"] == "flag"
    waited, _ = configure("m", "megatron-core", gpus=16, pp=4, vpp=2, pp_send_overlap=False)
    assert lowering_options(waited)["blocking"] == ("pp",)
    # Megatron-LM 2022 waits for pp by this one setting too, which its flag overrides
    old, report = configure("m", "megatron-lm-2022", gpus=16, pp=4)
    assert lowering_options(old)["blocking"] == ("pp",) and report["settings"]["pp_send_overlap"]["from"] == "framework megatron-lm-2022"
    freed, _ = configure("m", "megatron-lm-2022", gpus=16, pp=4, pp_send_overlap=True)
    assert lowering_options(freed)["blocking"] == ()


@pytest.mark.parametrize("options, message", [
    (dict(moe_a2a_overlap=False), "--no-moe-a2a-overlap needs --ep > 1 (it waits for the expert all-to-alls)"),
    (dict(pp_send_overlap=False), "--no-pp-send-overlap needs --pp > 1 (it decides whether a stage waits for its sends)"),
    (dict(pp_send_overlap=True), "--pp-send-overlap needs --pp > 1 (it decides whether a stage waits for its sends)"),
])
def test_an_overlap_flag_the_layout_cannot_use_is_refused(options, message):
    """Given where nothing is sent over ep or pp, the flag is a mistake; a preset's
    value there passes (the presets decide both settings whatever the layout)."""
    for name in ("megatron-core", "deepspeed", "none"):
        with pytest.raises(CharonError, match=re.escape(message)):
            configure("m", name, gpus=16, **options)
    assert configure("m", "megatron-core", gpus=16, ep=8, pp=2, **options)[0]
    assert configure("m", "deepspeed", gpus=16)[0].pp_send_overlap  # preset, pp 1: default kept


def test_an_overlap_flag_the_layout_cannot_use_is_one_line(charon_fails):
    assert charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8", "--no-pp-send-overlap") == (
        "error: --no-pp-send-overlap needs --pp > 1 (it decides whether a stage waits for its sends)")
    assert charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8", "--no-moe-a2a-overlap") == (
        "error: --no-moe-a2a-overlap needs --ep > 1 (it waits for the expert all-to-alls)")


def test_megatron_lm_2021_and_2022_differ_in_the_tp_all_reduce():
    old, _ = configure("m", "megatron-lm-2021", gpus=8, tp=8)
    new, _ = configure("m", "megatron-lm-2022", gpus=8, tp=8)
    assert lowering_options(old)["blocking"] == ("tp",) and lowering_options(new)["blocking"] == ()
    for config in (old, new):
        assert not config.fuse_attention and not config.dp_overlap and config.optimizer == "unfused-fp16"
        assert config.zero == 0 and not config.sequence_parallel


def test_report_says_where_each_setting_came_from():
    _, report = configure("m", gpus=16, tp=2, sequence_parallel=False, dp_bucket_mb=50)
    settings_ = report["settings"]
    assert settings_["sequence_parallel"] == {"value": False, "from": "flag"}
    assert settings_["dp_bucket_mb"] == {"value": 50, "from": "flag"}
    assert settings_["zero"]["from"] == "framework megatron-core"
    assert "use-distributed-optimizer" in settings_["zero"]["why"]
    assert settings_["blocking_comm"] == {"value": [], "from": "default"}
    assert set(settings_) == set(preset_settings())


def test_unknown_framework_and_option_are_one_line_errors():
    with pytest.raises(CharonError, match=r"^--framework must be one of .*megatron-core.*, got 'megatron-9'$"):
        configure("m", "megatron-9")
    with pytest.raises(CharonError, match=r"^unknown training option\(s\): tensor_parallel$"):
        configure("m", tensor_parallel=8)


SETTING_VALUES = {
    "sequence_parallel": st.booleans(), "zero": st.sampled_from([0, 1, 2]),
    "dp_overlap": st.booleans(), "dp_bucket_mb": st.integers(1, 512),
    "tp_comm_overlap": st.booleans(), "optimizer": st.sampled_from(["fused", "unfused-fp16"]),
    "grad_bytes": st.sampled_from([2, 4]), "fuse_attention": st.booleans(),
    "fp8_recipe": st.sampled_from(["delayed", "current", "mxfp8"]),
}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(FRAMEWORKS)), chosen=st.dictionaries(
    st.sampled_from(sorted(SETTING_VALUES)), st.none(), max_size=len(SETTING_VALUES)),
       tp=st.sampled_from([1, 2, 8]), data=st.data())
def test_a_setting_given_always_wins(name, chosen, tp, data):
    given_ = {key: data.draw(SETTING_VALUES[key]) for key in chosen}
    config, report = configure("m", name, gpus=64, tp=tp, precision="fp8", **given_)
    for key, value in given_.items():
        assert getattr(config, key) == value
        if key in report["settings"]:
            assert report["settings"][key]["from"] == "flag"
    # and what no one decided is TrainingConfig's default
    defaults = field_defaults(TrainingConfig)
    decided = {k for k, v in report["settings"].items() if v["from"] != "default"} | set(given_)
    for key in set(preset_settings()) - decided:
        assert getattr(config, key) == defaults[key]
