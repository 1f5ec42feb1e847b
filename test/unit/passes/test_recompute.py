"""The recompute pass: what it saves, what it adds to backward, and that it never
rewrites its own output."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context

from charon_ir.dialects import sim
from charon_ir.frontend.metrics import phase_flops
from charon_ir.memory import layer_saved_values
from charon_ir.memory.megatron_reference import GptShape, gpt_module, gpt_step
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.recompute import RecomputePass, rewrote_nothing
from charon_ir.testing import parse_module

SHAPE = GptShape(s=128, b=2, h=256, a=4, layers=3)


def recompute(module, policy: str):
    RecomputePass(policy=policy).apply(Context(), module)
    module.verify()
    return module


def forward_repeats(module) -> list[sim.RepeatOp]:
    return [
        op for op in module.walk()
        if isinstance(op, sim.RepeatOp) and not op.reverse
        and isinstance(op.parent_op(), sim.PhaseOp) and op.parent_op().kind.data == sim.PhaseKind.FORWARD
    ]


def body_flops(rep: sim.RepeatOp) -> float:
    return sum(op.flops() for op in rep.body.block.walk() if isinstance(op, sim.ComputeOp))


def test_none_changes_nothing_but_the_policy_record():
    module = gpt_module(SHAPE)
    before = str(module)
    recompute(module, "none")
    assert str(module).replace(' attributes {sim.recompute_policy = #sim<recompute_policy "none">}', "") == before


def test_selective_adds_one_attention_forward_per_layer():
    module = gpt_module(SHAPE)
    fwd, bwd = phase_flops(module, "forward"), phase_flops(module, "backward")
    attention = next(op for op in module.walk() if isinstance(op, sim.AttentionOp))
    recompute(module, "selective")
    assert phase_flops(module, "forward") == fwd
    assert phase_flops(module, "backward") == pytest.approx(bwd + SHAPE.layers * attention.flops())
    clones = [op for op in module.walk() if isinstance(op, sim.AttentionOp)]
    assert len(clones) == 2  # the forward one and its recomputation in the backward body
    grad = next(op for op in module.walk() if isinstance(op, sim.AttentionGradOp))
    assert grad.out.owner is clones[1]


def test_full_adds_exactly_one_forward_of_each_layer():
    module = gpt_module(SHAPE)
    layer = body_flops(forward_repeats(module)[0])
    fwd, bwd = phase_flops(module, "forward"), phase_flops(module, "backward")
    recompute(module, "full")
    assert phase_flops(module, "forward") == fwd
    assert phase_flops(module, "backward") == pytest.approx(bwd + SHAPE.layers * layer)
    (rep,) = forward_repeats(module)
    # the forward now stacks only the layer input
    assert len(rep.outputs) == 2
    assert [d.split(" tensor")[0] for d, _ in layer_saved_values(rep)] == ["layer input"]


@pytest.mark.parametrize("policy", ["selective", "full"])
def test_running_twice_is_running_once(policy: str):
    once = str(recompute(gpt_module(SHAPE), policy))
    twice = str(recompute(recompute(gpt_module(SHAPE), policy), policy))
    assert once == twice


def test_selective_leaves_flash_attention_alone():
    text = gpt_step(SHAPE).replace("{causal, sim.dropout}", "{causal, flash}")
    module = parse_module(text)
    before = str(module)
    recompute(module, "selective")
    assert not any(sim.RECOMPUTE_ATTR in op.attributes for op in module.walk())
    # what the sweep relies on to share such a point with the one of no recompute
    assert rewrote_nothing(module)
    policy = ' attributes {sim.recompute_policy = #sim<recompute_policy "selective">}'
    assert str(module).replace(policy, "") == before


@pytest.mark.parametrize("policy, rewrites", [("none", False), ("selective", True), ("full", True)])
def test_rewrote_nothing_is_true_only_without_a_rewrite(policy: str, rewrites: bool):
    module = recompute(gpt_module(SHAPE), policy)
    assert rewrote_nothing(module) is not rewrites
    kinds = {sim.recompute_kind(op) for op in module.walk()} - {None}
    assert kinds == ({sim.RecomputeKind(policy)} if rewrites else set())


def test_full_after_pipeline_rewrites_every_stage():
    module = gpt_module(GptShape(s=64, b=1, h=128, a=2, layers=4))
    PipelinePass(pp=2, microbatches=2).apply(Context(), module)
    recompute(module, "full")
    reps = forward_repeats(module)
    assert len(reps) == 2
    for rep in reps:
        assert len(rep.outputs) == 2 and sim.recompute_kind(rep) == sim.RecomputeKind.FULL


@settings(max_examples=12, deadline=None)
@given(
    layers=st.integers(1, 3),
    tp=st.sampled_from([1, 2, 4]),
    sp=st.booleans(),
    policy=st.sampled_from(["none", "selective", "full"]),
    a=st.sampled_from([4, 8]),
    s=st.sampled_from([16, 64]),
)
def test_saved_bytes_follow_the_formula_for_any_shape(layers, tp, sp, policy, a, s):
    shape = GptShape(s=s, b=1, h=64, a=a, layers=layers, tp=tp, sp=sp and tp > 1)
    module = recompute(gpt_module(shape), policy)
    saved = sum(b for _, b in layer_saved_values(forward_repeats(module)[0]))
    assert saved == shape.per_layer_formula(policy)


@pytest.mark.parametrize("policy", ["selective", "full"])
def test_gpt3_175b_frontend_keeps_flops_right(gpt3_175b, policy: str):
    module = gpt3_175b.clone()
    rep = forward_repeats(module)[0]
    layer = body_flops(rep)
    attention = next(op for op in rep.body.block.ops if isinstance(op, sim.AttentionOp)).flops()
    bwd = phase_flops(module, "backward")
    recompute(module, policy)
    added = phase_flops(module, "backward") - bwd
    per_layer = layer if policy == "full" else attention
    assert added == pytest.approx(rep.trip_count * per_layer)


def test_full_under_zero3_reuses_the_backward_parameter_gather():
    from charon_ir.dialects import coll
    from charon_ir.passes.data_parallel import DataParallelPass

    module = gpt_module(SHAPE)
    DataParallelPass(dp=2, zero=3).apply(Context(), module)
    gathers = sum(isinstance(op, coll.AllGatherOp) for op in module.walk())
    recompute(module, "full")
    assert sum(isinstance(op, coll.AllGatherOp) for op in module.walk()) == gathers


def test_full_saves_only_the_layer_input_of_a_fused_import():
    """A forward that yields one value twice (a norm's rstd; the fused norm's
    input, once for its backward recomputation) keeps no unread copy after full
    recompute: the second phase result `_replace` left unread is dropped with
    the rest, and each stage saves per layer its layer input only."""
    from pathlib import Path

    from charon_ir.memory.liveness import Roots, phase_memory
    from charon_ir.passes.fuse import FusePass

    path = Path(__file__).parents[2] / "lit/passes/Inputs/models/tiny-llama.mlir"
    module = parse_module(path.read_text())
    FusePass().apply(Context(), module)
    PipelinePass(pp=2, microbatches=2).apply(Context(), module)
    recompute(module, "full")
    for stage in (op for op in module.body.block.ops if isinstance(op, sim.StageOp)):
        per_layer = [d for d, _ in phase_memory(stage.body.block, Roots()).saved_values if "layers" in d]
        assert per_layer == ["layer input tensor<1x24x64xbf16>, x1 layers"]
