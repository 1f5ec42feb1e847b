"""The typed attributes passes leave for each other print and parse back."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType, bf16
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects import sim
from charon_ir.testing import make_context

amounts = st.floats(min_value=0.0, max_value=1e30, allow_nan=False, allow_infinity=False)


CONTEXT = make_context()


def parse_attribute(text: str):
    return Parser(CONTEXT, text).parse_attribute()


@settings(max_examples=60, deadline=None)
@given(amounts, amounts, amounts, st.sampled_from(["analytic", "db", "predict", "trace"]))
def test_a_cost_prints_what_it_parses_back_to(time_s, flops, nbytes, engine):
    cost = sim.CostAttr(time_s, flops, nbytes, engine)
    text = str(cost)
    again = parse_attribute(text)
    assert isinstance(again, sim.CostAttr) and str(again) == text
    # printed to 7 significant digits: the parsed fields are that close
    for field, value in (("time_s", time_s), ("flops", flops), ("bytes", nbytes)):
        assert getattr(again, field).data == pytest.approx(value, rel=1e-6, abs=0.0)
    assert again.engine.data == engine


@pytest.mark.parametrize("fields", [(-1e-9, 0.0, 0.0), (0.0, math.nan, 0.0), (0.0, 0.0, math.inf)])
def test_a_cost_is_never_negative_nor_unbounded(fields):
    with pytest.raises(VerifyException, match="must be finite and >= 0"):
        sim.CostAttr(*fields, "analytic")


@st.composite
def pipelines(draw):
    pp = draw(st.integers(1, 16))
    vpp = draw(st.integers(1, 4))
    layers = draw(st.lists(st.integers(0, 200), min_size=pp * vpp, max_size=pp * vpp))
    return pp, vpp, draw(st.sampled_from(sim.PIPELINE_SCHEDULES)), draw(st.integers(1, 4096)), layers


@settings(max_examples=60, deadline=None)
@given(pipelines(), st.integers(1, 4096))
def test_a_pipeline_parses_back_to_itself(fields, microbatches):
    pipeline = sim.PipelineAttr(*fields)
    assert parse_attribute(str(pipeline)) == pipeline
    again = pipeline.with_microbatches(microbatches)
    assert again.microbatches.data == microbatches
    assert (again.pp, again.vpp, again.schedule, again.layers) == (
        pipeline.pp, pipeline.vpp, pipeline.schedule, pipeline.layers)


def test_a_pipeline_gives_every_virtual_stage_its_layers():
    with pytest.raises(VerifyException, match="pp \\* vpp = 4 virtual stages"):
        sim.PipelineAttr(2, 2, "interleaved", 8, [4, 4])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4096), st.sampled_from([0, 1, 2, 3]), st.integers(1, 10_000), st.booleans(), st.booleans())
def test_data_parallel_settings_parse_back_to_themselves(dp, zero, bucket_mb, overlap, gather):
    gather = gather and zero in (1, 2)
    settings = sim.DataParallelAttr(dp, zero, bucket_mb, overlap, gather)
    assert parse_attribute(str(settings)) == settings


OP_KINDS = [
    (sim.PhaseKindAttr, sim.PhaseKind),
    (sim.NormKindAttr, sim.NormKind),
    (sim.ReduceKindAttr, sim.ReduceKind),
    (sim.ElementwiseKindAttr, sim.ElementwiseKind),
    (sim.OptimizerKindAttr, sim.OptimizerKind),
    (sim.AttentionKernelAttr, sim.AttentionKernel),
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(OP_KINDS).flatmap(lambda pair: st.tuples(st.just(pair[0]), st.sampled_from(list(pair[1])))))
def test_an_op_kind_parses_back_to_itself(attr_and_kind):
    attr_type, kind = attr_and_kind
    attr = attr_type(kind)
    assert str(attr) == f'#sim<{attr_type.name.removeprefix("sim.")} "{kind.value}">'
    assert parse_attribute(str(attr)) == attr
    # a bare word, as MLIR prints an enum, names the same kind
    assert parse_attribute(f"#sim<{attr_type.name.removeprefix('sim.')} {kind.value}>") == attr


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(list(sim.ElementwiseKind)), st.sampled_from(list(sim.ReduceKind)),
       st.sampled_from(list(sim.NormKind)))
def test_ops_print_their_kind_as_the_string_they_parse_from(elementwise, reduce, norm):
    text = (
        '%x = sim.input "x" : tensor<4x8xbf16>\n'
        '%w = sim.param "w" : tensor<8xbf16>\n'
        f'%e = sim.elementwise "{elementwise}" %x : tensor<4x8xbf16> -> tensor<4x8xbf16>\n'
        f'%r = sim.reduce "{reduce}" %e [1] : tensor<4x8xbf16> -> tensor<4xbf16>\n'
        f'%n = sim.norm "{norm}" %x, %w : tensor<4x8xbf16>, tensor<8xbf16>\n'
    )
    module = Parser(CONTEXT, text).parse_module()
    module.verify()
    kinds = [op.kind.data for op in module.ops if hasattr(op, "kind")]
    assert kinds == [elementwise, reduce, norm]
    assert all(type(k) in (sim.ElementwiseKind, sim.ReduceKind, sim.NormKind) for k in kinds)
    printed = str(module)
    for kind in (elementwise, reduce, norm):
        assert f'"{kind.value}"' in printed
    assert str(Parser(CONTEXT, printed).parse_module()) == printed


def test_a_builder_refuses_an_unknown_kind_naming_the_kinds():
    x = sim.InputOp("x", TensorType(bf16, [4, 8]))
    w = sim.ParamOp("w", TensorType(bf16, [8]))
    with pytest.raises(VerifyException, match=r"kind must be one of \['layer', 'rms'\], got 'batch'"):
        sim.NormOp("batch", x.result, w.result)
    with pytest.raises(VerifyException, match="kind must be one of .*got 'softplus'"):
        sim.ElementwiseOp("softplus", [x.result], x.result.type)
    with pytest.raises(VerifyException, match="kind must be one of .*got 'sideways'"):
        sim.PhaseOp("sideways", Region(Block()))
    with pytest.raises(VerifyException, match=r"kind must be one of \['max', 'mean', 'min', 'sum'\], got 'prod'"):
        sim.ReduceOp("prod", x.result, [1], TensorType(bf16, [4]))


def test_every_elementwise_kind_has_a_flop_count():
    assert set(sim.ELEMENTWISE_FLOPS) == set(sim.ElementwiseKind)
    assert set(sim.NormOp.KINDS) == set(sim.NormKind)
    assert set(sim.OptimizerStepOp.KINDS) == set(sim.OptimizerKind)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**45), min_size=len(sim.StageMemoryAttr.FIELDS),
                max_size=len(sim.StageMemoryAttr.FIELDS)))
def test_a_stage_memory_report_parses_back_to_itself(values):
    fields = dict(zip(sim.StageMemoryAttr.FIELDS, values))
    memory = sim.StageMemoryAttr(**fields)
    again = parse_attribute(str(memory))
    assert again == memory
    assert isinstance(again, sim.StageMemoryAttr)
    assert again.peak() == sum(fields[f] for f in ("params", "grads", "optimizer", "activations", "comm_buffers"))


def test_a_stage_memory_report_is_never_negative():
    fields = dict.fromkeys(sim.StageMemoryAttr.FIELDS, 0) | {"activations": -1}
    with pytest.raises(VerifyException, match="activations must be >= 0"):
        sim.StageMemoryAttr(**fields)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["shard-tensor", "shard-context", "sequence-parallel", "shard-expert",
                                        "shard-expert.etp"]),
                       st.floats(-1e30, 1e30, allow_nan=False), min_size=1))
def test_replicated_flops_parse_back_to_the_last_digit(by_pass):
    attr = sim.ReplicatedFlopsAttr(by_pass)
    again = parse_attribute(str(attr))
    assert isinstance(again, sim.ReplicatedFlopsAttr)
    assert again.by_pass() == by_pass  # exact: printed with repr's digits
    assert list(again.by_pass()) == list(by_pass)


def test_replicated_flops_are_finite():
    with pytest.raises(VerifyException, match="shard-tensor must be finite"):
        sim.ReplicatedFlopsAttr({"shard-tensor": math.inf})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["H100-SXM5-80GB", "GB200-per-GPU", "H100-SXM5-80GB:hbm=1.41e11"]), st.integers(1, 2**31),
       st.integers(1, 72), st.sampled_from(["", 'name = "two" nodes = 2', "a \\ b\nc"]))
def test_a_target_parses_back_to_itself(hardware, gpus, per_node, cluster):
    target = sim.TargetAttr(hardware, gpus, per_node, cluster)
    again = parse_attribute(str(target))
    assert again == target
    assert ("cluster" in str(target)) == bool(cluster)
