"""Every module a training configuration compiles to verifies, prints as IR that
parses back, and prints the same again: the passes keep SSA scoping. xDSL checks
no dominance and the simulator reads the in-memory IR, so a pass that leaves a
backward reading a value from inside the forward phase's region (not through the
phase's results) runs, and only `charon-opt ... | charon-opt ...` would notice:
`sim.phase`'s verifier and this round trip catch it here."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.api import TrainingConfig, build_training_module
from charon_ir.testing import parse_module

SMALL = dict(seq_len=256, micro_batch=1, memory_limit_gb=1e6)
"""A short sequence (the layers are loops: the IR's size does not depend on the
model's depth) and no memory limit (only the IR matters here)."""


@dataclass(frozen=True)
class Strategy:
    tp: int = 2
    pp: int = 1
    dp: int = 2
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    schedule: str = ""
    zero: int = 0
    overlap_param_gather: bool = False
    sequence_parallel: bool = False

    def config(self, model: str, recompute: str, fuse: bool, **extra) -> TrainingConfig:
        microbatches = 4
        return TrainingConfig(
            model=model, gpus=self.tp * self.pp * self.cp * self.dp, tp=self.tp, pp=self.pp,
            cp=self.cp, ep=self.ep, vpp=self.vpp, schedule=self.schedule, zero=self.zero,
            dp_overlap_param_gather=self.overlap_param_gather,
            sequence_parallel=self.sequence_parallel, global_batch=self.dp * microbatches,
            recompute=recompute, fuse=fuse, **SMALL, **extra,
        )


def assert_round_trips(config: TrainingConfig) -> None:
    _, module, _ = build_training_module(config)
    module.verify()
    text = str(module)
    again = parse_module(text)  # parses and verifies
    assert str(again) == text


POLICIES = ("none", "selective", "selective-op", "full")

MATRIX = [
    pytest.param(model, recompute, fuse, Strategy(pp=pp), id=f"{model}-{recompute}-fuse{int(fuse)}-pp{pp}")
    for model in ("llama-3.1-8b", "gpt3-6.7b")
    for recompute in POLICIES
    for fuse in (True, False)
    for pp in (1, 2)
    if model == "llama-3.1-8b" or recompute == "full"
]
"""RoPE (llama: the cos/sin tables are computed in the forward phase, around the
layer repeat, and the recomputed layer reads them) and learned positions (gpt3)."""

PARALLEL = [
    pytest.param(model, recompute, fuse, strategy, id=f"{name}-{recompute}")
    for name, model, fuse, strategy in (
        ("vpp2", "llama-3.1-8b", True, Strategy(pp=2, vpp=2)),
        ("zb-h1", "llama-3.1-8b", True, Strategy(pp=2, schedule="zb-h1")),
        ("cp2", "llama-3.1-8b", True, Strategy(cp=2)),
        ("zero3", "llama-3.1-8b", True, Strategy(zero=3)),
        ("zero3-pp2", "llama-3.1-8b", True, Strategy(pp=2, zero=3)),
        ("zero1-overlap-param-gather", "llama-3.1-8b", True, Strategy(zero=1, overlap_param_gather=True)),
        ("sp-pp2", "llama-3.1-8b", True, Strategy(pp=2, sequence_parallel=True)),
        ("mixtral-ep2-pp2", "mixtral-8x7b", True, Strategy(pp=2, ep=2)),
        ("mixtral-ep2-unfused", "mixtral-8x7b", False, Strategy(ep=2)),
    )
    for recompute in ("selective", "selective-op", "full")
]


@pytest.mark.parametrize("model, recompute, fuse, strategy", MATRIX + PARALLEL)
def test_module_prints_and_parses_back(model: str, recompute: str, fuse: bool, strategy: Strategy):
    assert_round_trips(strategy.config(model, recompute, fuse))


@st.composite
def strategies(draw) -> tuple[str, Strategy]:
    model = draw(st.sampled_from(["llama-3.1-8b", "gpt3-6.7b", "mixtral-8x7b"]))
    tp = draw(st.sampled_from([1, 2]))
    pp = draw(st.sampled_from([1, 2]))
    vpp = draw(st.sampled_from([1, 2])) if pp > 1 else 1
    schedule = draw(st.sampled_from(["", "gpipe", "zb-h1"])) if pp > 1 and vpp == 1 else ""
    dp = draw(st.sampled_from([1, 2]))
    ep = draw(st.sampled_from([1, dp])) if model == "mixtral-8x7b" else 1
    zero = draw(st.sampled_from([0, 1, 3]))
    return model, Strategy(
        tp=tp, pp=pp, dp=dp, cp=draw(st.sampled_from([1, 2])), ep=ep, vpp=vpp,
        schedule=schedule, zero=zero,
        overlap_param_gather=zero == 1 and dp > 1 and draw(st.booleans()),
        sequence_parallel=tp > 1 and draw(st.booleans()),
    )


@settings(max_examples=12, deadline=None)
@given(
    drawn=strategies(),
    recompute=st.sampled_from(POLICIES),
    fuse=st.booleans(),
    fuse_attention=st.booleans(),
)
def test_any_configuration_prints_and_parses_back(drawn, recompute, fuse, fuse_attention):
    model, strategy = drawn
    assert_round_trips(strategy.config(model, recompute, fuse, fuse_attention=fuse_attention))
