"""The pipeline pass and its schedules, executed by the interpreter: the bubble is
whatever waiting the exact per-stage orders imply, never a closed form."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import Float64Type, FloatAttr

from charon_ir.dialects import event, sim
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.pipeline import PipelinePass, even_split
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.flatten import KIND_COMPUTE, flatten_all
from charon_ir.runtime.interpreter import run
from charon_ir.testing import make_context, parse_module


def uniform_model(layers: int) -> str:
    """Only layers (no embedding, no head): every stage does the same work."""
    h = 256
    return f"""
    %x = sim.input "tokens" {{tokens}} : tensor<1x128x{h}xbf16>
    %ws = sim.param "w" : tensor<{layers}x{h}x{h}xbf16>
    %f:2 = sim.phase "forward" -> tensor<1x128x{h}xbf16>, tensor<{layers}x1x128x{h}xbf16> {{
      %r:2 = sim.repeat {layers} iter(%x : tensor<1x128x{h}xbf16>) slices(%ws : tensor<{layers}x{h}x{h}xbf16>) -> (tensor<1x128x{h}xbf16>, tensor<{layers}x1x128x{h}xbf16>) {{
      ^bb0(%a: tensor<1x128x{h}xbf16>, %w: tensor<{h}x{h}xbf16>):
        %y = sim.matmul %a, %w : (tensor<1x128x{h}xbf16>, tensor<{h}x{h}xbf16>) -> tensor<1x128x{h}xbf16>
        sim.yield %y, %a : tensor<1x128x{h}xbf16>, tensor<1x128x{h}xbf16>
      }}
      sim.yield %r#0, %r#1 : tensor<1x128x{h}xbf16>, tensor<{layers}x1x128x{h}xbf16>
    }}
    %b = sim.phase "backward" -> tensor<{layers}x{h}x{h}xbf16> {{
      %g = sim.elementwise "fill" %f#0 : tensor<1x128x{h}xbf16> -> tensor<1x128x{h}xbf16>
      %rb:2 = sim.repeat {layers} iter(%g : tensor<1x128x{h}xbf16>) slices(%f#1, %ws : tensor<{layers}x1x128x{h}xbf16>, tensor<{layers}x{h}x{h}xbf16>) {{reverse}} -> (tensor<1x128x{h}xbf16>, tensor<{layers}x{h}x{h}xbf16>) {{
      ^bb0(%d: tensor<1x128x{h}xbf16>, %a: tensor<1x128x{h}xbf16>, %w: tensor<{h}x{h}xbf16>):
        %dx = sim.matmul %d, %w {{transpose_rhs}} : (tensor<1x128x{h}xbf16>, tensor<{h}x{h}xbf16>) -> tensor<1x128x{h}xbf16>
        %dw = sim.matmul %a, %d {{transpose_lhs}} : (tensor<1x128x{h}xbf16>, tensor<1x128x{h}xbf16>) -> tensor<1x{h}x{h}xbf16>
        %dwv = sim.view %dw : tensor<1x{h}x{h}xbf16> -> tensor<{h}x{h}xbf16>
        sim.yield %dx, %dwv : tensor<1x128x{h}xbf16>, tensor<{h}x{h}xbf16>
      }}
      sim.yield %rb#1 : tensor<{layers}x{h}x{h}xbf16>
    }}
    """


def lowered(text: str, **pipeline):
    ctx = make_context()
    module = parse_module(text, ctx)
    PipelinePass(**pipeline).apply(ctx, module)
    module.verify()
    pp = pipeline["pp"]
    SetTargetPass(hardware="H100", gpus=pp).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass().apply(ctx, module)
    module.verify()
    return module


def uniform_times(module, t_matmul: float = 1.0) -> None:
    """Every matmul takes `t_matmul`; everything else (the loss gradient seed,
    communication) none."""
    for op in module.walk():
        if isinstance(op, event.ComputeOp):
            t = t_matmul if op.label.data == "matmul" else 0.0
            op.duration_s = FloatAttr(t, Float64Type())
        elif isinstance(op, event.CommOp):
            op.duration_s = FloatAttr(0.0, Float64Type())
        elif isinstance(op, sim.ComputeOp):
            raise AssertionError("sim op left after lowering")


def bubble_fraction(module) -> float:
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    timeline = run(flatten_all(programs))
    busy = [
        sum(e - s for s, e in timeline.intervals(KIND_COMPUTE, program=i))
        for i in range(len(programs))
    ]
    assert max(busy) == pytest.approx(min(busy))  # uniform stages
    return 1 - busy[0] / timeline.makespan


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 6), st.integers(0, 6), st.integers(1, 2))
def test_1f1b_bubble_is_exact(p, extra, layers_per_stage):
    m = p + extra
    module = lowered(uniform_model(p * layers_per_stage), pp=p, microbatches=m, schedule="1f1b")
    uniform_times(module)
    assert bubble_fraction(module) == pytest.approx((p - 1) / (m + p - 1), rel=1e-9)


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 4), st.integers(1, 3), st.sampled_from([2, 3]))
def test_interleaved_bubble_is_exact(p, k, v):
    m = p * k
    module = lowered(uniform_model(p * v), pp=p, vpp=v, microbatches=m, schedule="interleaved")
    uniform_times(module)
    assert bubble_fraction(module) == pytest.approx((p - 1) / (v * m + p - 1), rel=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.integers(2, 6), st.integers(0, 6), st.integers(1, 2))
def test_zb_h1_bubble_is_exact(p, extra, layers_per_stage):
    """The uniform model's backward is one input-gradient and one weight-gradient
    matmul per layer: T_F = T_B = T_W, so ZB-H1's bubble (p - 1)(T_F + T_B - T_W)
    is a third of 1F1B's (p - 1)(T_F + T_B + T_W) at the same micro-batches."""
    m = p + extra
    module = lowered(uniform_model(p * layers_per_stage), pp=p, microbatches=m, schedule="zb-h1")
    uniform_times(module)
    assert bubble_fraction(module) == pytest.approx((p - 1) / (3 * m + p - 1), rel=1e-9)


def test_zb_h1_splits_each_backward_into_input_and_weight_gradients():
    """Every stage runs the same matmuls as under 1F1B, and the B items carry
    only the input-gradient matmuls: each W item is one matmul per layer."""
    p, m, layers = 3, 5, 2
    counts = {}
    for schedule in ("1f1b", "zb-h1"):
        module = lowered(uniform_model(p * layers), pp=p, microbatches=m, schedule=schedule)
        programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
        flat = flatten_all(programs)
        counts[schedule] = sorted(flat.labels).count("matmul")
    assert counts["zb-h1"] == counts["1f1b"] == p * layers * m * 3


def test_gpipe_bubble():
    p, m = 4, 8
    module = lowered(uniform_model(8), pp=p, microbatches=m, schedule="gpipe")
    uniform_times(module)
    assert bubble_fraction(module) == pytest.approx((p - 1) / (m + p - 1))


def test_even_split_gives_the_remainder_to_the_middle():
    assert even_split(10, 4) == [2, 3, 3, 2]
    assert even_split(8, 4) == [2, 2, 2, 2]
    assert sum(even_split(126, 16)) == 126


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(pp=16), "exceed the model's 8 layers"),
        (dict(pp=4, microbatches=2), "'microbatches' is 2, 'pp' is 4"),
        (dict(pp=4, microbatches=3, schedule="zb-h1"), "schedule 'zb-h1' needs at least as many"),
        (dict(pp=2, vpp=2, schedule="zb-h1", microbatches=4), "needs schedule=interleaved"),
        (dict(pp=2, layers=(3, 4)), "must give 2 stages of >= 0 layers summing to the model's 8 layers"),
        (dict(pp=2, layers=(9, -1)), "must give 2 stages of >= 0 layers summing to the model's 8 layers"),
        (dict(pp=2, schedule="zigzag"), "unknown schedule 'zigzag'"),
        (dict(pp=2, vpp=2, schedule="interleaved", microbatches=3), "divisible by 'pp'"),
    ],
)
def test_bad_options_are_one_line(options, message):
    ctx = make_context()
    module = parse_module(uniform_model(8), ctx)
    with pytest.raises(CharonError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        PipelinePass(**options).apply(ctx, module)
    assert "\n" not in str(err.value) and str(err.value).startswith("pipeline:")


def test_two_stage_1f1b_golden_makespan_and_busy_times():
    """pp=2, m=4, one layer per stage: forward 1 s (one matmul), backward 2 s (two);
    1F1B makes (m + p - 1) x (F + B) = 15 s, each compute stream busy m x 3 = 12 s."""
    module = lowered(uniform_model(2), pp=2, microbatches=4, schedule="1f1b")
    uniform_times(module)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    timeline = run(flatten_all(programs))
    assert timeline.makespan == 15.0
    busy = timeline.stream_busy()
    assert busy == {
        "stage0/compute": 12.0,
        "stage0/comm_pp_send": 0.0,
        "stage0/comm_pp_recv": 0.0,
        "stage1/compute": 12.0,
        "stage1/comm_pp_recv": 0.0,
        "stage1/comm_pp_send": 0.0,
    }


def test_a_stage_of_no_layers_holds_only_what_follows_them():
    """`layers=8,0`: Megatron's layout `...|L` (the loss, or MTP and loss, alone on
    the last stage): the first stage computes all 8 layers' matmuls, the last none."""
    module = lowered(uniform_model(8), pp=2, layers=(8, 0), microbatches=2)
    uniform_times(module)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    timeline = run(flatten_all(programs))
    busy = [sum(e - s for s, e in timeline.intervals(KIND_COMPUTE, program=i)) for i in range(len(programs))]
    # 8 layers x 3 matmuls (forward, dX, dW) x 2 micro-batches on the first stage
    assert busy == [pytest.approx(48.0), 0.0]


def embedded_model(extra_backward: str = "", slices: str = "%f#1, %ws") -> str:
    """Four layers after a vocabulary-parallel embedding (its tp all-reduce) and a
    rotary-like table every layer reads; `extra_backward` goes before the backward
    layers."""
    t = "tensor<1x16x32xbf16>"
    return f"""
    coll.grid @mesh(axes = ["tp"], shape = 2)
    %ids = sim.input "tokens" {{tokens}} : tensor<1x16xi64>
    %pos = sim.input "positions" : {t}
    %table = sim.param "embed" : tensor<500x32xbf16>
    %ws = sim.param "w" : tensor<4x32x32xbf16>
    %f:2 = sim.phase "forward" -> {t}, tensor<4x1x16x32xbf16> {{
      %e = sim.embedding %table, %ids : (tensor<500x32xbf16>, tensor<1x16xi64>) -> {t}
      %x = coll.all_reduce %e on @mesh ["tp"] : {t}
      %rot = sim.elementwise "cos" %pos : {t} -> {t}
      %r:2 = sim.repeat 4 iter(%x : {t}) slices(%ws : tensor<4x32x32xbf16>) -> ({t}, tensor<4x1x16x32xbf16>) {{
      ^bb0(%a: {t}, %w: tensor<32x32xbf16>):
        %y = sim.matmul %a, %w : ({t}, tensor<32x32xbf16>) -> {t}
        %z = sim.elementwise "mul" %y, %rot : {t}, {t} -> {t}
        sim.yield %z, %a : {t}, {t}
      }}
      sim.yield %r#0, %r#1 : {t}, tensor<4x1x16x32xbf16>
    }}
    %b = sim.phase "backward" -> tensor<4x32x32xbf16> {{
      %g = sim.elementwise "fill" %f#0 : {t} -> {t}
      {extra_backward}
      %rb:2 = sim.repeat 4 iter(%g : {t}) slices({slices} : tensor<4x1x16x32xbf16>, tensor<4x32x32xbf16>) {{reverse}} -> ({t}, tensor<4x32x32xbf16>) {{
      ^bb0(%d: {t}, %a: {t}, %w: tensor<32x32xbf16>):
        %dx = sim.matmul %d, %w {{transpose_rhs}} : ({t}, tensor<32x32xbf16>) -> {t}
        %dw = sim.matmul %a, %d {{transpose_lhs}} : ({t}, {t}) -> tensor<1x32x32xbf16>
        %dwv = sim.view %dw : tensor<1x32x32xbf16> -> tensor<32x32xbf16>
        sim.yield %dx, %dwv : {t}, tensor<32x32xbf16>
      }}
      sim.yield %rb#1 : tensor<4x32x32xbf16>
    }}
    sim.phase "optimizer" {{
      sim.optimizer_step "adamw"(%ws : tensor<4x32x32xbf16>) grads(%b : tensor<4x32x32xbf16>)
      sim.yield
    }}
    """


def stages_of(text: str, **pipeline) -> list[sim.StageOp]:
    ctx = make_context()
    module = parse_module(text, ctx)
    PipelinePass(**pipeline).apply(ctx, module)
    module.verify()
    return [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]


def names_in(stage: sim.StageOp) -> list[str]:
    return [op.name for op in stage.walk()]


def test_a_later_stage_runs_neither_the_embedding_nor_its_collective():
    """The layers' input arrives by coll.recv on stage 1: the embedding and its tp
    all-reduce (communication, which dead-code elimination keeps) are stage 0's
    alone; the table every layer reads is computed on both; no off-stage value is
    left."""
    first, second = stages_of(embedded_model(), pp=2)
    assert names_in(first).count("sim.embedding") == 1 and names_in(first).count("coll.all_reduce") == 1
    assert "sim.embedding" not in names_in(second) and "coll.all_reduce" not in names_in(second)
    assert "coll.recv" in names_in(second)
    for stage in (first, second):
        assert [o.sym_name.data for o in stage.walk() if isinstance(o, sim.ParamOp)] == (
            ["embed", "w"] if stage is first else ["w"])
        assert names_in(stage).count("sim.elementwise") >= 2  # the table (cos), the layer's mul
        assert "sim.off_stage" not in names_in(stage)


def test_work_another_stage_runs_that_a_kept_op_still_reads_is_one_line():
    """The backward layers slice a copy of their weights made before them (the last
    stage's part of the backward): stage 0 cannot hand it off to stage 1."""
    text = embedded_model(
        extra_backward='%wc = sim.elementwise "copy" %ws : tensor<4x32x32xbf16> -> tensor<4x32x32xbf16>',
        slices="%f#1, %wc",
    )
    with pytest.raises(CharonError) as e:
        stages_of(text, pp=2)
    assert str(e.value) == ("pipeline: cannot move work off this stage: 'sim.repeat' still reads "
                            "a value another stage computes")
