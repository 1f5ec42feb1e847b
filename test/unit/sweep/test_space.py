"""Spaces: expansion, normalisation, stable keys and the pruning rules."""

from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.sweep.space import (
    ModelShape,
    config_key,
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
    ],
)
def test_illegal_points_name_the_rule(settings, rule):
    assert rule in illegal_training(point(**settings), LLAMA)


def test_legal_point():
    assert illegal_training(point(gpus=8, tp=2, pp=2, global_batch=16), LLAMA) == ""


def test_states_bound_is_sixteen_bytes_per_parameter_sharded_by_zero():
    base = {"tp": 2, "pp": 2, "ep": 1, "dp": 4}
    assert states_lower_bound({**base, "zero": 0}, LLAMA) == 16 * 10**9 // 4
    assert states_lower_bound({**base, "zero": 1}, LLAMA) == int(10**9 / 4 * (2 + 2 + 3))
    assert states_lower_bound({**base, "zero": 3}, LLAMA) == int(10**9 / 4 * 4)
    assert states_lower_bound({**base, "zero": 0}, None) == 0


def test_bad_spaces_are_one_line_errors(tmp_path):
    with pytest.raises(CharonError, match="unknown setting 'tensor_parallel'"):
        load_space({"model": "m", "tensor_parallel": [1, 2]})
    with pytest.raises(CharonError, match="'model' is required"):
        load_space({"tp": [1, 2]})
    with pytest.raises(CharonError, match="axis 'tp' has no values"):
        load_space({"model": "m", "tp": []})
    bad = tmp_path / "bad.yaml"
    bad.write_text("tp: [1, 2\n")
    with pytest.raises(CharonError, match="bad.yaml:.*not valid YAML"):
        load_space(bad)


def test_example_spaces_load():
    training = load_space(EXAMPLES / "training.yaml")
    assert training.kind == "training" and len(training.points()) >= 1000
    serving = load_space(EXAMPLES / "serving.yaml")
    assert serving.kind == "serving" and serving.points()
