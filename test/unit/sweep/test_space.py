"""Spaces: expansion, normalisation, stable keys and the pruning rules."""

from dataclasses import replace
from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.sweep.space import (
    LATER_SETTINGS,
    TRAINING_DEFAULTS,
    ModelShape,
    config_key,
    illegal_serving,
    illegal_training,
    load_space,
    normalise,
    states_lower_bound,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "sweeps"


def point(**settings):
    return normalise("training", {"model": "m", **settings})


def test_expansion_dedupes_equivalent_points(tiny_space):
    space = load_space({**tiny_space, "sequence_parallel": [True, False]})
    points = space.points()
    # sequence parallelism without tp is the same run as without it: one point
    assert space.size == 48
    assert len(points) == 40
    assert len({p.key for p in points}) == len(points)


def test_key_ignores_spelling_and_order():
    a = point(tp=2, pp=2, gpus=8, sequence_parallel="true")
    b = normalise("training", {"gpus": "8", "pp": 2, "sequence_parallel": True, "tp": 2, "model": "m"})
    assert config_key(a) == config_key(b)
    assert a["dp"] == 2  # derived, so dp=0 and dp=2 are one point
    assert config_key(a) == config_key(point(tp=2, pp=2, gpus=8, dp=2, sequence_parallel=True))


def test_settings_default_as_simulate_does():
    """A point's settings default as TrainingConfig's, and its framework as
    `charon simulate`'s, whose preset then fills what the space leaves unset."""
    from charon_ir.api import TrainingConfig
    from charon_ir.frameworks import DEFAULT_FRAMEWORK

    simulate = TrainingConfig(model="")
    assert TRAINING_DEFAULTS["framework"] == DEFAULT_FRAMEWORK
    for key, default in TRAINING_DEFAULTS.items():
        if key == "framework":
            continue
        expected = getattr(simulate, key)
        if key in ("engines", "blocking_comm"):  # comma-separated in a point
            expected = ",".join(expected)
        assert default == expected and type(default) is type(expected), key


def test_every_setting_a_preset_decides_is_a_point_setting():
    """A preset setting the sweep does not carry would be dropped from its points
    silently (their TrainingConfig at the default, unlike `charon simulate`'s)."""
    from charon_ir.frameworks import preset_settings

    assert set(preset_settings()) <= set(TRAINING_DEFAULTS)
    assert set(preset_settings()) - set(LATER_SETTINGS) <= {
        "sequence_parallel", "zero", "fsdp", "recompute", "fuse"}  # those results files always had


def test_points_follow_their_framework_as_simulate_does():
    from charon_ir.api import configure
    from charon_ir.sweep.evaluate import training_config

    given = {"model": "llama-3.1-8b", "gpus": 16, "tp": 2, "pp": 2, "global_batch": 64}
    for framework in ("megatron-core", "none", "megatron-lm-2021"):
        space = load_space({"kind": "training", "name": "f", **given, "framework": framework})
        (point,) = space.points()
        expected, _ = configure(given["model"], framework, **{k: v for k, v in given.items() if k != "model"})
        assert training_config(point.config) == replace(expected, dp=4), framework  # dp derived
    # a setting the space gives wins over the preset
    space = load_space({"kind": "training", "name": "f", **given, "sequence_parallel": False})
    (point,) = space.points()
    assert not point.config["sequence_parallel"] and not point.config["tp_comm_overlap"]


PINNED = {"model": "llama-3.1-8b", "gpus": 16, "tp": 2, "pp": 2, "sequence_parallel": True, "zero": 1,
          "global_batch": 64, "recompute": "selective", "nic_speed": "400Gb/s"}


def test_keys_from_before_the_later_settings_still_hold():
    """The key this point had before LATER_SETTINGS existed: results files
    written then resume, whether the later settings are left out or spelled at
    their defaults."""
    assert config_key(point(**PINNED)) == "68fa19f5cabd0d05cf78"
    at_defaults = {k: TRAINING_DEFAULTS[k] for k in LATER_SETTINGS}
    assert config_key(point(**PINNED, **at_defaults)) == "68fa19f5cabd0d05cf78"


@pytest.mark.parametrize(
    "setting, value",
    [("fuse_attention", False), ("attention_kernel", "flash3"), ("tp_comm_overlap", True),
     ("pipeline_scatter_gather", True), ("dp_bucket_mb", 100), ("dp_overlap", False),
     ("dp_overlap_param_gather", True),
     ("optimizer", "unfused-bf16"), ("memory_limit_gb", 40), ("unfused_grad_accumulation", True)],
)
def test_a_later_setting_away_from_its_default_is_another_point(setting, value):
    config = point(**PINNED, **{setting: value})
    assert config[setting] == value
    assert config_key(config) != config_key(point(**PINNED))


@pytest.mark.parametrize(
    "settings, ignored",
    [
        # pipeline: no activation crosses stages whole on several tp ranks
        ({"gpus": 8, "tp": 1, "pp": 2}, {"pipeline_scatter_gather": True}),
        ({"gpus": 8, "tp": 2, "pp": 1}, {"pipeline_scatter_gather": True}),
        # fuse does not run: neither flash attention nor its kernel
        ({"gpus": 8, "fuse": False}, {"fuse_attention": False, "attention_kernel": "flash3"}),
        ({"gpus": 8, "fuse_attention": False}, {"attention_kernel": "triton"}),
        # data-parallel does nothing for one replica
        ({"gpus": 2, "tp": 2, "zero": 1},
         {"dp_bucket_mb": 100, "dp_overlap": False, "dp_overlap_param_gather": True}),
    ],
)
def test_settings_that_cannot_matter_share_a_key(settings, ignored):
    assert config_key(point(**settings, **ignored)) == config_key(point(**settings))


LLAMA = ModelShape(layers=8, heads=8, kv_heads=2, experts=0, params=10**9)


@pytest.mark.parametrize(
    "settings, rule",
    [
        ({"gpus": 8, "tp": 3}, "gpus 8 != tp x pp x cp x dp"),
        ({"gpus": 8, "tp": 2, "vpp": 2}, "vpp 2 needs pp > 1"),
        ({"gpus": 8, "global_batch": 12, "micro_batch": 2}, "not divisible by dp x micro-batch"),
        ({"gpus": 16, "tp": 16}, "tp 16 does not divide 8 heads"),
        ({"gpus": 16, "pp": 16, "global_batch": 16}, "exceeds 8 layers"),
        ({"gpus": 8, "ep": 2}, "ep 2 does not divide 0 experts"),
        ({"gpus": 8, "pp": 4, "global_batch": 4}, "1f1b' needs at least as many micro-batches"),
        ({"gpus": 8, "recompute": "some"}, "recompute must be"),
        ({"gpus": 8, "optimizer": "adamw9"}, "optimizer must be fused, unfused-fp16, unfused-bf16, got 'adamw9'"),
        ({"gpus": 8, "attention_kernel": "flash9"}, "attention_kernel must be flash2, flash3, triton or empty"),
        # a combination simulate refuses: a failed point (exit 3) of an ordinary cross product
        ({"gpus": 8, "attention_kernel": "flash3", "hardware": "A100-SXM4-80GB"},
         "attention kernel 'flash3' (FlashAttention-3) runs on Hopper GPUs only; A100-SXM4-80GB is Ampere (GA100)"),
        ({"gpus": 8, "dp_bucket_mb": 0}, "dp_bucket_mb must be >= 1, got 0"),
        ({"gpus": 8, "zero": 3, "dp_overlap_param_gather": True}, "dp_overlap_param_gather needs zero 1 or 2"),
        ({"gpus": 8, "tp": 2, "tp_comm_overlap": True}, "tp_comm_overlap needs tp > 1 and sequence_parallel"),
        ({"gpus": 8, "tp": 1, "sequence_parallel": True, "tp_comm_overlap": True}, "tp_comm_overlap needs tp > 1"),
        # context parallelism as Transformer Engine runs it (LLAMA: 8 heads, 2 kv heads)
        ({"gpus": 8, "cp": 4, "cp_comm_type": "a2a+p2p"},
         "hierarchical_cp 0 must divide cp 4 and lie strictly between 1 and it (cp_comm_type a2a+p2p)"),
        ({"gpus": 8, "cp": 4, "cp_comm_type": "a2a+p2p", "hierarchical_cp": 3}, "hierarchical_cp 3 must divide cp 4"),
        ({"gpus": 8, "cp": 4, "cp_comm_type": "a2a+p2p", "hierarchical_cp": 4}, "hierarchical_cp 4 must divide cp 4"),
        ({"gpus": 8, "cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_cp": 4},
         "cp_comm_type a2a+p2p: its all-to-all group of 4 does not divide 8 heads / 2 KV heads a tp rank holds"),
        ({"gpus": 16, "cp": 16, "cp_comm_type": "a2a"},
         "cp_comm_type a2a: its all-to-all group of 16 does not divide 8 heads / 2 KV heads a tp rank holds"),
        ({"gpus": 8, "cp": 4, "cp_comm_type": "a2a"},  # TE splits the kv heads as the queries'
         "cp_comm_type a2a: its all-to-all group of 4 does not divide 8 heads / 2 KV heads a tp rank holds"),
        ({"gpus": 8, "tp": 2, "cp": 4, "cp_comm_type": "a2a+p2p", "hierarchical_cp": 2},
         "cp_comm_type a2a+p2p: its all-to-all group of 2 does not divide 4 heads / 1 KV heads a tp rank holds"),
    ],
)
def test_illegal_points_name_the_rule(settings, rule):
    assert rule in illegal_training(point(**settings), LLAMA)


def test_serving_combinations_serve_refuses_are_pruned():
    """They were run and stored as errors (serve's checks): an input length a
    model of the sweep cannot take, a split of a static batch."""
    shape = ModelShape(layers=8, heads=8, kv_heads=2, experts=0, params=10**9, context=4096)
    config = normalise("serving", {"model": "m", "batch": 4, "input_len": 4000, "output_len": 256})
    assert illegal_serving(config, shape) == "input_len + output_len = 4256 exceeds the 4096-token context"
    assert illegal_serving({**config, "output_len": 96}, shape) == ""
    # serve refused it: a static batch is not disaggregated (policy static, the default of a batch)
    split = {**config, "output_len": 96, "prefill_decode_split": "1:1"}
    assert illegal_serving(split, shape) == "prefill_decode_split 1:1 needs continuous batching (policy continuous)"
    assert illegal_serving({**split, "policy": "continuous"}, shape) == ""


def test_legal_point():
    assert illegal_training(point(gpus=8, tp=2, pp=2, global_batch=16), LLAMA) == ""
    assert illegal_training(point(gpus=8, cp=8, cp_comm_type="a2a+p2p", hierarchical_cp=2), LLAMA) == ""
    assert illegal_training(point(gpus=8, cp=2, cp_comm_type="a2a"), LLAMA) == ""


def test_cp_comm_type_is_a_point_setting():
    """--cp-comm-type and --hierarchical-cp are settings of a point: they count
    only where they can matter (cp > 1; the inner group under a2a+p2p), and at
    their defaults keep the keys points had before them."""
    ring = point(gpus=8, cp=8)
    assert config_key(point(gpus=8, cp=8, cp_comm_type="p2p", hierarchical_cp=0)) == config_key(ring)
    assert config_key(point(gpus=8, cp=8, cp_comm_type="p2p", hierarchical_cp=2)) == config_key(ring)
    assert config_key(point(gpus=8, cp_comm_type="a2a")) == config_key(point(gpus=8))
    keys = {config_key(point(gpus=8, cp=8, cp_comm_type=kind, hierarchical_cp=inner))
            for kind, inner in (("p2p", 0), ("a2a", 0), ("a2a+p2p", 2), ("a2a+p2p", 4))}
    assert len(keys) == 4
    space = load_space({"kind": "training", "name": "cp", "model": "llama-3.1-8b", "gpus": 8, "cp": 8,
                        "cp_comm_type": ["p2p", "a2a", "a2a+p2p"], "hierarchical_cp": [2, 4]})
    assert len(space.points()) == 4  # p2p and a2a once each
    with pytest.raises(CharonError, match="'cp_comm_type' must be p2p, a2a or a2a\\+p2p, got 'ring'"):
        load_space({"kind": "training", "name": "cp", "model": "llama-3.1-8b", "gpus": 8, "cp": 8,
                    "cp_comm_type": ["ring"]}).points()


def test_states_bound_is_sixteen_bytes_per_parameter_sharded_by_zero():
    base = {"tp": 2, "pp": 2, "ep": 1, "dp": 4}
    assert states_lower_bound({**base, "zero": 0}, LLAMA) == 16 * 10**9 // 4
    assert states_lower_bound({**base, "zero": 1}, LLAMA) == int(10**9 / 4 * (2 + 2 + 3))
    assert states_lower_bound({**base, "zero": 3}, LLAMA) == int(10**9 / 4 * 4)
    # FSDP2's fp32 shards are the master copy: 4 + 2 + 8 B, sharded (memory-analysis counts no less)
    assert states_lower_bound({**base, "zero": 3, "fp32_param_shards": True}, LLAMA) == int(10**9 / 4 * 14 / 4)
    assert states_lower_bound({**base, "zero": 0}, None) == 0
    # --fsdp spells ZeRO-3: bounded as ZeRO-3 even before `normalise` rewrites it
    assert states_lower_bound({**base, "zero": 0, "fsdp": True}, LLAMA) == int(10**9 / 4 * 4)


def test_bad_spaces_are_one_line_errors(tmp_path):
    with pytest.raises(CharonError, match="unknown setting 'tensor_parallel'"):
        load_space({"model": "m", "tensor_parallel": [1, 2]})
    with pytest.raises(CharonError, match="'model' is required"):
        load_space({"tp": [1, 2]})
    with pytest.raises(CharonError, match="axis 'tp' has no values"):
        load_space({"model": "m", "tp": []})
    with pytest.raises(CharonError, match=r"^'tp_comm_overlap' must be true or false, got 'maybe'$"):
        load_space({"model": "step.mlir", "tp_comm_overlap": [False, "maybe"]}).points()
    with pytest.raises(CharonError, match=r"^'dp_bucket_mb' must be an integer, got 'big'$"):
        load_space({"model": "step.mlir", "dp_bucket_mb": "big"}).points()
    # counts, sizes and rates are never negative: an input error, not an illegal point
    for key, value in (("global_batch", -16), ("memory_limit_gb", -1), ("rate", -1.0)):
        kind = "serving" if key == "rate" else "training"
        with pytest.raises(CharonError, match=rf"^'{key}' must be .* >= 0, got {value}$"):
            load_space({"kind": kind, "model": "step.mlir", key: value}).points()
    bad = tmp_path / "bad.yaml"
    bad.write_text("tp: [1, 2\n")
    with pytest.raises(CharonError, match="bad.yaml:.*not valid YAML"):
        load_space(bad)
    # a file's value errors name the file; a name that is no name is refused
    typo = tmp_path / "typo.yaml"
    typo.write_text("model: step.mlir\ntp: [abc]\n")
    with pytest.raises(CharonError, match=r"typo.yaml: 'tp' must be an integer, got 'abc'$"):
        load_space(typo).points()
    with pytest.raises(CharonError, match=r"^space: 'name' must be a non-empty string .* got None$"):
        load_space({"model": "step.mlir", "name": None})


def test_example_spaces_load():
    training = load_space(EXAMPLES / "training.yaml")
    assert training.kind == "training" and len(training.points()) >= 1000
    serving = load_space(EXAMPLES / "serving.yaml")
    assert serving.kind == "serving" and serving.points()
