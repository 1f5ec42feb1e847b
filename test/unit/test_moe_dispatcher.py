"""`moe_dispatcher`, `moe_routing`: which shard-expert options a training run's pass plan gets."""

import pytest

from charon_ir.api import TrainingConfig, pass_plan
from charon_ir.errors import CharonError


def expert_options(**options) -> dict:
    config = TrainingConfig(gpus=64, pp=1, ep=8, seq_len=256, global_batch=64, **options)
    return next(o for name, o in pass_plan(config) if name == "shard-expert")


def test_flex_takes_the_group_limited_routing_of_the_config():
    # DeepSeek-V3's HF config: n_group 8, topk_group 4
    assert expert_options(model="deepseek-v3", moe_dispatcher="flex") == {
        "ep": 8, "dispatcher": "flex", "groups": 8, "groups_per_token": 4}
    # Qwen3's routing has no groups
    assert expert_options(model="qwen3-30b-a3b", moe_dispatcher="flex") == {"ep": 8, "dispatcher": "flex"}


def test_alltoall_is_the_default_and_leaves_the_pass_as_it_was():
    assert expert_options(model="deepseek-v3") == {"ep": 8}


def test_an_unknown_dispatcher_is_one_line():
    with pytest.raises(CharonError, match="--moe-dispatcher must be alltoall, flex, got 'deepep'"):
        expert_options(model="deepseek-v3", moe_dispatcher="deepep")


def test_random_routing_takes_the_group_limited_routing_with_either_dispatcher():
    # forced load balancing draws within DeepSeek-V3's groups: the load's spread reads them
    assert expert_options(model="deepseek-v3", moe_routing="random") == {
        "ep": 8, "routing": "random", "groups": 8, "groups_per_token": 4}
    assert expert_options(model="qwen3-30b-a3b", moe_dispatcher="flex", moe_routing="random") == {
        "ep": 8, "dispatcher": "flex", "routing": "random"}


def test_an_unknown_routing_is_one_line():
    with pytest.raises(CharonError, match="moe_routing must be balanced, random, got 'skewed'"):
        expert_options(model="deepseek-v3", moe_routing="skewed")


@pytest.mark.parametrize("option, value, message", [
    ("moe_routing", "skewed", "moe_routing must be balanced, random, got 'skewed'"),
    ("moe_dispatcher", "deepep", "--moe-dispatcher must be alltoall, flex, got 'deepep'"),
])
def test_an_unknown_moe_option_is_refused_without_expert_parallelism(option, value, message):
    config = TrainingConfig(gpus=8, pp=1, ep=1, seq_len=256, global_batch=64, model="qwen3-30b-a3b",
                            **{option: value})
    with pytest.raises(CharonError, match=message):
        pass_plan(config)
