"""The recompute pass's selective-op policy (torchtitan's op-level selective
activation checkpointing): what each layer saves, what its backward re-runs, and
that the backward gains exactly the re-run ops' FLOPs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.frontend.metrics import phase_flops
from charon_ir.memory import Roots, layer_saved_values, phase_memory
from charon_ir.memory.megatron_reference import GptShape, gpt_step
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.fuse import FusePass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.recompute import RecomputePass, is_mm, op_level_saved, rewrote_nothing
from charon_ir.testing import parse_module

TINY_LLAMA = (Path(__file__).parents[2] / "lit/passes/Inputs/models/tiny-llama.mlir").read_text()
MARK = sim.RecomputeKind.SELECTIVE_OP


def selective_op(module):
    RecomputePass(policy="selective-op").apply(Context(), module)
    module.verify()
    return module


def tiny_llama(fuse: bool):
    module = parse_module(TINY_LLAMA)
    if fuse:  # flash attention, fused norms, RoPE and SwiGLU
        FusePass().apply(Context(), module)
    return module


def forward_repeat(module) -> sim.RepeatOp:
    return next(
        op for op in module.walk()
        if isinstance(op, sim.RepeatOp) and not op.reverse
        and isinstance(op.parent_op(), sim.PhaseOp) and op.parent_op().kind.data == sim.PhaseKind.FORWARD
    )


def clones(module) -> list:
    return [op for op in module.walk() if sim.recompute_kind(op) == MARK]


def flops(ops) -> float:
    return sum(op.flops() for op in ops if isinstance(op, sim.ComputeOp))


def test_the_layer_saves_its_input_every_other_matmul_and_the_flash_attention():
    """Llama's block: wq, wk, wv, wo, w1, w3, w2 in that order; the 1st, 3rd, 5th
    and 7th are saved (wq, wv, w1, w2, the last though no backward op reads it:
    the policy's cache holds it), with the flash attention's output and
    log-sum-exp; nothing else."""
    module = selective_op(tiny_llama(fuse=True))
    saved = layer_saved_values(forward_repeat(module))
    assert [d for d, _ in saved] == [
        "layer input tensor<1x24x64xbf16>",
        "sim.attention tensor<1x24x4x16xbf16>",
        "sim.matmul tensor<1x24x128xbf16>",  # w1
        "sim.matmul tensor<1x24x64xbf16>",  # wq
        "sim.matmul tensor<1x24x32xbf16>",  # wv
        "sim.matmul tensor<1x24x64xbf16>",  # w2
    ]
    lse = 4 * 1 * 24 * 4
    assert sum(b for _, b in saved) == 2 * 24 * (64 + 64 + 128 + 64 + 32 + 64) + lse


def test_the_odd_matmuls_are_saved_and_the_even_ones_rerun():
    module = tiny_llama(fuse=True)
    body = forward_repeat(module).body.block
    mms = [op for op in body.ops if is_mm(op)]
    assert len(mms) == 7
    assert [op for op in op_level_saved(body) if is_mm(op)] == mms[0::2]
    selective_op(module)
    rerun = [op for op in clones(module) if isinstance(op, sim.MatmulOp)]
    assert [op.result.type for op in rerun] == [op.result.type for op in mms[1::2]]  # wk, wo, w3
    # the flash attention is saved, never re-run
    assert not any(isinstance(op, sim.AttentionOp) for op in clones(module))


def test_a_non_flash_attention_is_rerun_and_not_saved():
    """The math SDPA path (bmm, softmax) is not in torchtitan's save list."""
    module = selective_op(tiny_llama(fuse=False))
    assert [op for op in clones(module) if isinstance(op, sim.AttentionOp)]
    assert not any("sim.attention" in d for d, _ in layer_saved_values(forward_repeat(module)))


@pytest.mark.parametrize("fuse", [True, False])
def test_the_backward_gains_exactly_the_rerun_ops_flops(fuse: bool):
    module = tiny_llama(fuse)
    rep = forward_repeat(module)
    fwd, bwd = phase_flops(module, "forward"), phase_flops(module, "backward")
    selective_op(module)
    rerun = clones(module)
    assert phase_flops(module, "forward") == fwd
    assert phase_flops(module, "backward") == pytest.approx(bwd + rep.trip_count * flops(rerun))
    # each re-run op is a forward op of the layer, the saved ones excepted
    body = forward_repeat(module).body.block
    kept = set(op_level_saved(body))
    layer_ops = Counter((op.name, op.flops()) for op in body.ops if isinstance(op, sim.ComputeOp) and op not in kept)
    rerun_ops = Counter((op.name, op.flops()) for op in rerun if isinstance(op, sim.ComputeOp))
    assert not rerun_ops - layer_ops


def test_the_rerun_stops_at_the_last_value_the_backward_reads():
    """The block's closing residual add feeds only the next layer: torch's
    early stop never re-runs it, and neither does the pass."""
    module = selective_op(tiny_llama(fuse=True))
    body = forward_repeat(module).body.block
    last_add = [op for op in body.ops if isinstance(op, sim.ElementwiseOp)][-1]
    add = sim.ElementwiseKind.ADD
    adds = [op for op in clones(module) if isinstance(op, sim.ElementwiseOp) and op.kind.data == add]
    assert last_add.kind.data == add and len(adds) == 1  # the attention residual only


def test_the_rerun_starts_where_the_backward_first_reads_a_saved_value():
    module = selective_op(tiny_llama(fuse=True))
    rev = next(op for op in module.walk() if isinstance(op, sim.RepeatOp) and op.reverse)
    ops = list(rev.body.block.ops)
    marked = [i for i, op in enumerate(ops) if sim.recompute_kind(op) == MARK]
    assert marked == list(range(marked[0], marked[0] + len(marked)))  # one run, in program order
    n_iter = len(rev.iter_init)
    saved_args = {
        arg for arg, outer in zip(rev.body.block.args[n_iter:], rev.slices)
        if isinstance(outer.owner, sim.PhaseOp)  # what the forward phase saved, not a weight
    }
    assert saved_args
    assert not any(v in saved_args for op in ops[: marked[0]] for v in op.operands)


def test_running_twice_is_running_once_and_marks_what_it_rewrote():
    once = selective_op(tiny_llama(fuse=True))
    assert str(selective_op(tiny_llama(fuse=True))) == str(selective_op(once))
    assert not rewrote_nothing(once)
    assert {sim.recompute_kind(op) for op in once.walk()} - {None} == {MARK}


def test_under_zero3_the_rerun_reads_the_backward_gathered_parameters():
    module = tiny_llama(fuse=True)
    DataParallelPass(dp=2, zero=3).apply(Context(), module)
    gathers = sum(isinstance(op, coll.AllGatherOp) for op in module.walk())
    selective_op(module)
    assert sum(isinstance(op, coll.AllGatherOp) for op in module.walk()) == gathers


def test_after_pipeline_every_stage_is_rewritten():
    module = tiny_llama(fuse=True)
    PipelinePass(pp=2, microbatches=2).apply(Context(), module)
    selective_op(module)
    stages = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]
    assert len(stages) == 2
    assert all(any(sim.recompute_kind(op) == MARK for op in stage.walk()) for stage in stages)


def test_a_step_without_layers_is_one_error():
    module = parse_module((Path(__file__).parents[3] / "examples/mlp.mlir").read_text())
    with pytest.raises(CharonError, match="^recompute: option 'policy=selective-op' needs the layers"):
        RecomputePass(policy="selective-op").apply(Context(), module)


def test_modules_with_selective_op_is_one_error():
    with pytest.raises(CharonError, match="^recompute: option 'modules' needs policy=selective, "
                                          "got policy=selective-op$"):
        RecomputePass(policy="selective-op", modules=("mlp",)).apply(Context(), tiny_llama(fuse=True))


@settings(max_examples=12, deadline=None)
@given(
    layers=st.integers(1, 3),
    tp=st.sampled_from([1, 2]),
    sp=st.booleans(),
    flash=st.booleans(),
    s=st.sampled_from([16, 64]),
)
def test_model_flops_stay_and_hardware_flops_are_model_plus_rerun(layers, tp, sp, flash, s):
    """For any GPT shape: the forward's FLOPs and the backward's own stay; the
    backward gains exactly the marked re-run ops' FLOPs (hardware FLOPs = model
    + recomputed); no saved op (odd matmul, flash attention, tensor-parallel
    reduce-scatter) is re-run, and each layer keeps what those ops made."""
    shape = GptShape(s=s, b=1, h=64, a=4, layers=layers, tp=tp, sp=sp and tp > 1)
    text = gpt_step(shape)
    if flash:
        text = text.replace("{causal, sim.dropout}", "{causal, flash}")
    module = parse_module(text)
    fwd, bwd = phase_flops(module, "forward"), phase_flops(module, "backward")
    body = forward_repeat(module).body.block
    kept = op_level_saved(body)
    selective_op(module)
    rerun = clones(module)
    model = fwd + bwd
    hardware = phase_flops(module, "forward") + phase_flops(module, "backward")
    assert phase_flops(module, "forward") == fwd
    assert hardware == pytest.approx(model + layers * flops(rerun))
    assert not any(isinstance(op, coll.ReduceScatterOp) for op in rerun)
    assert not any(isinstance(op, sim.AttentionOp) for op in rerun) or not flash
    saved = {d.split(" tensor")[0] for d, _ in layer_saved_values(forward_repeat(module))}
    assert saved >= {"layer input"} | {op.name for op in kept}


def test_memory_analysis_counts_the_saved_values_and_the_rerun_working_set():
    """Each layer keeps, beyond full recompute's layer input, exactly what the
    policy saves; the backward's peak holds all of it and, at once, every
    re-made value its first layer's backward reads."""
    memory = {}
    for policy in ("none", "selective-op", "full"):
        module = tiny_llama(fuse=True)
        RecomputePass(policy=policy).apply(Context(), module)
        memory[policy] = phase_memory(module.body.block, Roots())
        if policy == "selective-op":
            rep = forward_repeat(module)
            per_layer = sum(b for d, b in layer_saved_values(rep) if not d.startswith("layer input"))
            rev = next(op for op in module.walk() if isinstance(op, sim.RepeatOp) and op.reverse)
            roots, rerun = Roots(), set(clones(module))
            remade = {
                roots.root(v) for op in rev.body.block.ops if op not in rerun
                for inner in op.walk() for v in inner.operands if v.owner in rerun
            }
            working_set = sum(roots.size(k) for k in remade)
    assert memory["selective-op"].saved - memory["full"].saved == rep.trip_count * per_layer
    assert memory["full"].saved < memory["selective-op"].saved < memory["none"].saved
    assert working_set > 0
    assert memory["selective-op"].backward_peak >= memory["selective-op"].saved + working_set


def test_a_body_of_two_layers_counts_each_layers_matmuls_from_zero(tmp_path, monkeypatch):
    """Alternating sliding and full attention make a repeat body of two layers;
    torchtitan checkpoints each transformer block on its own, its matmul count
    starting at 0: each layer saves wq, wv, w1, w2 and its flash attention (the
    body's 14 matmuls counted as one run would save 7)."""
    pytest.importorskip("torch")
    from charon_ir.frontend import import_model  # the frontend imports torch
    from charon_ir.frontend.configs import load_config

    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "cache"))
    _, config = load_config("qwen3-8b")
    config.update(num_hidden_layers=4, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=96, vocab_size=256, use_sliding_window=True, sliding_window=16,
                  max_window_layers=2, layer_types=["sliding_attention", "full_attention"] * 2)
    path = tmp_path / "two-layer-period.json"
    path.write_text(json.dumps(config))
    module = import_model(path, seq_len=32, batch=1, mode="train", use_cache=False)
    FusePass().apply(Context(), module)
    body = forward_repeat(module).body.block
    assert sum(isinstance(op, sim.AttentionOp) for op in body.ops) == 2
    saved = op_level_saved(body)
    assert sum(is_mm(op) for op in body.ops) == 14
    assert sum(is_mm(op) for op in saved) == 8
    assert sum(isinstance(op, sim.AttentionOp) for op in saved) == 2


def test_a_moe_layer_saves_its_expert_parallel_all_to_alls_and_reruns_the_router(tmp_path, monkeypatch):
    """torchtitan's MoE versions: the expert-parallel all-to-alls are saved (not
    re-run in the backward) and the router's gate is re-run without counting as
    an `aten.mm`: Mixtral's wq, wk, wv, wo, gate save wq and wv."""
    pytest.importorskip("torch")
    from charon_ir.frontend import import_model  # the frontend imports torch
    from charon_ir.frontend.configs import load_config
    from charon_ir.parallel.examples import apply_pipeline

    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "cache"))
    _, config = load_config("mixtral-8x7b")
    config.update(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=96, vocab_size=256, num_local_experts=4, num_experts_per_tok=2)
    path = tmp_path / "tiny-mixtral.json"
    path.write_text(json.dumps(config))
    module = apply_pipeline(import_model(path, seq_len=32, batch=1, mode="train", use_cache=False),
                            "shard-expert{ep=2},fuse")
    body = forward_repeat(module).body.block
    saved = op_level_saved(body)
    mms = [op for op in body.ops if is_mm(op)]
    assert len(mms) == 5 and [op for op in mms if op in saved] == [mms[0], mms[2]]
    a2a = [op for op in body.ops if isinstance(op, coll.AllToAllOp)]
    assert a2a and all(op in saved for op in a2a)
    selective_op(module)
    assert not [op for op in clones(module) if isinstance(op, coll.AllToAllOp)]
