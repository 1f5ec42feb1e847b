"""The screening tier times one layer class on one GPU: a point on a cluster of
several node kinds (pipeline stages on different GPUs) goes to the fast tier."""

from charon_ir.api import TrainingConfig
from charon_ir.sweep.screen import screenable


def test_a_cluster_of_several_kinds_is_not_screened():
    plain = TrainingConfig(model="llama-3.1-8b", cluster="dgx-h100", tp=8, pp=2, gpus=16)
    mixed = TrainingConfig(model="llama-3.1-8b", cluster="hetero-h100-b200", tp=8, pp=2, gpus=16)
    assert screenable(plain) and not screenable(mixed)
