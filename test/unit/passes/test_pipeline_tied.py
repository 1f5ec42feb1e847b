"""Tied input and output embeddings over a pipeline (Megatron-LM's
`share_embeddings_and_output_weights`): the first and the last stage each hold the
weight, its gradient and its optimizer states, and sum their partial gradients over
the embedding group (the two end stages) once per step, before the optimizer."""

from pathlib import Path

import pytest

from charon_ir.dialects import coll, event, sim
from charon_ir.engines.collectives import collective_plan
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.memory import analyze_memory
from charon_ir.memory.states import GRAD_BYTES, OPTIMIZER_STATE_BYTES, DataParallel, model_states
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.passes.shard_context import ShardContextPass
from charon_ir.runtime.flatten import flatten_all
from charon_ir.runtime.interpreter import run
from charon_ir.target.target import Target
from charon_ir.testing import make_context, parse_module

LIT = Path(__file__).resolve().parents[2] / "lit/passes/Inputs"
EIGHT_LAYERS_TIED = (LIT / "eight_layers_tied.mlir").read_text()
"""Eight layers between an embedding and a head sharing `embed` (1000 x 64)."""
TINY_GPT = (LIT / "models/tiny-gpt.mlir").read_text()
"""The frontend's import of a 2-layer GPT-2: `transformer.wte.weight` (256 x 64) tied."""
TINY_LLAMA = (LIT / "models/tiny-llama.mlir").read_text()
"""Separate `model.embed_tokens.weight` and `lm_head.weight`."""
ADAMW = OPTIMIZER_STATE_BYTES["adamw"]


def staged(text: str, pp: int, dp: int = 1, zero: int = 0, cp: int = 1, **pipeline):
    ctx = make_context()
    module = parse_module(text, ctx)
    if cp > 1:
        ShardContextPass(cp=cp).apply(ctx, module)
    PipelinePass(pp=pp, microbatches=pipeline.pop("microbatches", 2 * pp), **pipeline).apply(ctx, module)
    DataParallelPass(dp=dp, zero=zero).apply(ctx, module)
    module.verify()
    return ctx, module


def stages(module) -> list[sim.StageOp]:
    return [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]


def params(stage: sim.StageOp) -> dict[str, int]:
    return {op.sym_name.data: sim.numel(op.result) for op in stage.body.block.ops if isinstance(op, sim.ParamOp)}


def trainable(stage: sim.StageOp) -> int:
    return model_states(stage.body.block, DataParallel()).trainable_elements


def embedding_sums(stage: sim.StageOp) -> list[coll.AllReduceOp]:
    return [op for op in stage.walk() if isinstance(op, coll.AllReduceOp) and op.axis_names() == ["pp"]]


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_both_ends_hold_the_tied_weight_its_gradient_and_optimizer_states(zero):
    wte = 256 * 64
    _, one = staged(TINY_GPT, pp=1, dp=2, zero=zero)
    _, two = staged(TINY_GPT, pp=2, dp=2, zero=zero)
    first, last = stages(two)
    assert params(first)["transformer.wte.weight"] == params(last)["transformer.wte.weight"] == wte
    assert "transformer.wpe.weight" not in params(last)  # positions: the first stage's alone
    (whole,) = stages(one)
    assert trainable(first) + trainable(last) == trainable(whole) + wte
    # states: one more copy of the weight's, sharded over dp as ZeRO says
    (m1,) = analyze_memory(one)
    m2 = analyze_memory(two)
    dp = 2
    assert sum(m.params for m in m2) == m1.params + 2 * wte
    assert sum(m.grads for m in m2) == m1.grads + GRAD_BYTES * wte // (dp if zero >= 2 else 1)
    assert sum(m.optimizer for m in m2) == m1.optimizer + ADAMW * wte // (dp if zero >= 1 else 1)


def test_context_parallel_sums_the_partials_over_cp_then_the_ends():
    """shard-context sums each weight gradient over cp (`coll.grad_sync`, folded
    into data-parallel's dp x cp reduction); a tied weight's partials are summed
    over the pipeline's ends after that."""
    _, one = staged(TINY_GPT, pp=1, cp=2)
    _, two = staged(TINY_GPT, pp=2, cp=2)
    first, last = stages(two)
    for stage in (first, last):
        (total,) = embedding_sums(stage)
        assert total.subgroup_positions() == (0, 1)
    (whole,) = stages(one)
    assert trainable(first) + trainable(last) == trainable(whole) + 256 * 64


def test_each_end_keeps_its_own_partial_of_the_gradient():
    _, module = staged(EIGHT_LAYERS_TIED, pp=4)
    first, middle, last = stages(module)
    grads = {}
    for stage in (first, last):
        (step,) = [op for op in stage.walk() if isinstance(op, sim.OptimizerStepOp)]
        i = [p.owner.sym_name.data for p in step.params].index("embed")  # pyright: ignore
        total = step.grads[i].owner
        assert isinstance(total, coll.AllReduceOp)
        phase = total.input.owner
        assert isinstance(phase, sim.PhaseOp) and phase.kind.data == "backward"
        term = phase.body.block.last_op
        assert isinstance(term, sim.YieldOp)
        grads[stage] = term.values[list(phase.outputs).index(total.input)].owner
    # the embedding's partial on the first stage, the head's on the last
    assert isinstance(grads[first], sim.GenericOp) and grads[first].callee.data == "embedding_backward"
    assert isinstance(grads[last], sim.ViewOp) and isinstance(grads[last].input.owner, sim.MatmulOp)
    assert "embed" not in params(middle) and not embedding_sums(middle)
    assert trainable(first) + trainable(middle) * 2 + trainable(last) == 2 * 1000 * 64 + 8 * 64 * 64


@pytest.mark.parametrize("pp", [2, 4])
def test_the_embedding_group_is_the_first_and_last_stage(pp):
    """One all-reduce per end stage, in the optimizer phase, over positions 0 and
    pp-1 of the pp axis: a 2-rank group moving the closed form 2(n-1)/n S = S."""
    _, module = staged(EIGHT_LAYERS_TIED, pp=pp, dp=2, zero=1)
    ends = stages(module)[0], stages(module)[-1]
    for stage in ends:
        (total,) = embedding_sums(stage)
        assert total.subgroup_positions() == (0, pp - 1) and total.group_size() == 2
        assert total.payload_bytes() == 1000 * 64 * 2
        assert total.ring_bytes_per_rank() == 2 * (2 - 1) / 2 * total.payload_bytes()
        phase = total.parent_op()
        assert isinstance(phase, sim.PhaseOp) and phase.kind.data == "optimizer"
        # ZeRO-1 shards the summed gradient, and data-parallel reduced the partial
        # over dp in the backward, before the sum
        assert any(sim.is_generic(u.operation, sim.GenericCallee.ZERO_SHARD) for u in total.result.uses)
        backward = total.input.owner
        assert isinstance(backward, sim.PhaseOp)
        term = backward.body.block.last_op
        assert isinstance(term, sim.YieldOp)
        partial = term.values[list(backward.outputs).index(total.input)]
        buckets = [u.operation for u in partial.uses if isinstance(u.operation, sim.GenericOp)]
        assert [b.callee.data for b in buckets] == [sim.GenericCallee.GRAD_BUCKET]
        assert any(isinstance(u.operation, coll.ReduceScatterOp) and u.operation.axis_names() == ["dp"]
                   for r in buckets[0].results for u in r.uses)


@pytest.mark.parametrize("gpus_per_node,link", [(8, "scale-up"), (2, "scale-out")])
def test_the_sum_is_priced_as_a_two_rank_all_reduce_after_the_backward(gpus_per_node, link):
    pp, dp = 4, 2
    ctx, module = staged(EIGHT_LAYERS_TIED, pp=pp, dp=dp, zero=1)
    SetTargetPass(hardware="H100", gpus=pp * dp, gpus_per_node=gpus_per_node).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    target = Target.from_module(module)
    # grid dp x pp: stage s of data-parallel rank 0 is global rank s
    plan = collective_plan("all_reduce", 1000 * 64 * 2, (0, pp - 1), target.topology)
    whole_axis = collective_plan("all_reduce", 1000 * 64 * 2, tuple(range(pp)), target.topology)
    assert plan.time_s != whole_axis.time_s
    LowerToEventsPass().apply(ctx, module)
    module.verify()
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    for program in programs:
        sums = [op for op in program.walk() if isinstance(op, event.CommOp) and op.stream.string_value() == "comm_pp"]
        if program.sym_name.data not in ("stage0", f"stage{pp - 1}"):
            assert not sums
            continue
        (total,) = sums
        assert total.group_size() == 2
        assert total.link_kind() == link
        assert total.byte_count() == 1000 * 64 * 2
        assert total.duration_s.value.data == pytest.approx(plan.time_s, rel=1e-12)
        # after everything the step's backwards issued (the barrier), before the step
        (barrier,) = [d.owner for d in total.operands]
        assert isinstance(barrier, event.BarrierOp)
    # the interpreter: every step on an end stage starts after the sum ends, and
    # the sum after every event issued before it
    flat = flatten_all(programs)
    timeline = run(flat)
    for p in (0, pp - 1):
        mine = [i for i in range(flat.num_events) if int(flat.event_program[i]) == p]  # pyright: ignore
        (total,) = [i for i in mine if flat.streams[flat.stream[i]] == "comm_pp" and flat.labels[i] == "all_reduce"]
        steps = [i for i in mine if flat.labels[i] == "optimizer_step"]
        assert steps and min(timeline.start[steps]) >= timeline.end[total]
        assert max(timeline.end[i] for i in mine if i < total) <= timeline.start[total]

def test_one_stage_keeps_the_sum():
    _, module = staged(EIGHT_LAYERS_TIED, pp=1)
    (stage,) = stages(module)
    assert not embedding_sums(stage)
    assert trainable(stage) == 1000 * 64 + 8 * 64 * 64


def test_one_stage_of_two_chunks_is_refused():
    """It would hold the tied weight twice (and send to itself)."""
    with pytest.raises(CharonError, match=r"option 'vpp' \(2\) needs 'pp' >= 2"):
        staged(EIGHT_LAYERS_TIED, pp=1, vpp=2, schedule="interleaved", microbatches=2)


def test_untied_embeddings_stay_on_their_own_stage():
    _, one = staged(TINY_LLAMA, pp=1)
    _, two = staged(TINY_LLAMA, pp=2)
    first, last = stages(two)
    assert "model.embed_tokens.weight" in params(first) and "model.embed_tokens.weight" not in params(last)
    assert "lm_head.weight" in params(last) and "lm_head.weight" not in params(first)
    assert not embedding_sums(first) and not embedding_sums(last)
    (whole,) = stages(one)
    assert trainable(first) + trainable(last) == trainable(whole)

