"""A sweep over a `megatron:CONFIG` model: its shape read from Megatron-Core's
names (no torch), its points pruned by the rules Megatron-Core and the frontend
apply (tp divides the query groups; an MoE model under tp needs sequence
parallelism and takes no ep beside it)."""

from __future__ import annotations

import pytest

from charon_ir.errors import CharonError
from charon_ir.sweep.space import ModelShape, check_value, illegal_training, normalise

GPT = "megatron:examples/megatron_gpt_tiny.yaml"
MOE = "megatron:examples/megatron_moe_tiny.yaml"


def point(model: str, **settings):
    return normalise("training", {"model": model, "seq_len": 256, "global_batch": 8, **settings})


def test_the_shape_is_read_from_megatron_names():
    assert ModelShape.of(GPT) == ModelShape(layers=4, heads=8, kv_heads=4, experts=0, params=0, context=512,
                                            megatron=True)
    assert ModelShape.of(MOE).experts == 8


@pytest.mark.parametrize("model, settings, rule", [
    (GPT, {"gpus": 8, "tp": 8}, "tp 8 does not divide Megatron-Core's 4 query groups"),
    (MOE, {"gpus": 2, "tp": 2}, "tp 2: a megatron: MoE model under tp needs sequence_parallel (as Megatron-Core's)"),
    (MOE, {"gpus": 4, "tp": 2, "sequence_parallel": True, "ep": 2},
     "ep 2 with tp 2: not on a megatron: model (its tp collectives beside the all-to-alls)"),
    (MOE, {"gpus": 6, "ep": 3, "global_batch": 6}, "ep 3 does not divide 8 experts"),
    (GPT, {"gpus": 2, "ep": 2}, "ep 2 does not divide 0 experts"),
])
def test_illegal_points_name_the_rule(model, settings, rule):
    assert illegal_training(point(model, **settings), ModelShape.of(model)) == rule


def test_legal_points():
    assert illegal_training(point(GPT, gpus=4, tp=2, pp=2), ModelShape.of(GPT)) == ""
    assert illegal_training(point(MOE, gpus=2, ep=2), ModelShape.of(MOE)) == ""
    assert illegal_training(point(MOE, gpus=2, tp=2, sequence_parallel=True), ModelShape.of(MOE)) == ""


def test_a_missing_config_is_one_line():
    with pytest.raises(CharonError, match="'model': .*no-such.yaml") as err:
        check_value("training", "model", "megatron:no-such.yaml", {})
    assert "\n" not in str(err.value)
