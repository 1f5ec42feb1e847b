"""The typed attributes passes leave for each other print and parse back."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, BoolAttr, Builtin, FloatData, IntAttr, StringAttr, TensorType, bf16
from xdsl.ir import Block, Dialect, Region
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from charon_ir.dialects import sim
from charon_ir.testing import make_context

amounts = st.floats(min_value=0.0, max_value=1e300, allow_nan=False, allow_infinity=False)
finite = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=24) | st.sampled_from(
    ['"', "\\", '\\"', 'a "b" \\ c', "\n\t\x00", "\\22"])
"""Any text, and the ones an escaping bug shows first: quotes, backslashes, control characters."""


@irdl_attr_definition
class EveryFieldAttr(sim.KeywordAttr):
    """A keyword attribute with a field of every declared type the base prints."""

    name = "kwtest.every"

    count: IntAttr = param_def()
    amount: FloatData = param_def()
    label: StringAttr = param_def()
    flag: BoolAttr = param_def()
    counts: ArrayAttr[IntAttr] = param_def()
    amounts: ArrayAttr[FloatData] = param_def()
    labels: ArrayAttr[StringAttr] = param_def()
    note: StringAttr = param_def()

    OPTIONAL = {"note": StringAttr("")}


CONTEXT = make_context()
CONTEXT.load_dialect(Dialect("kwtest", [], [EveryFieldAttr]))


def parse_attribute(text: str):
    return Parser(CONTEXT, text).parse_attribute()


def assert_round_trip(attr):
    """print -> parse -> print is a fixed point and every field parses back equal."""
    text = str(attr)
    again = parse_attribute(text)
    assert type(again) is type(attr)
    assert str(again) == text
    for name, _ in type(attr).get_irdl_definition().parameters:
        assert getattr(again, name) == getattr(attr, name), name
    assert again == attr


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**70), 2**70), finite, texts, st.booleans(), st.lists(st.integers(-(2**40), 2**40)),
       st.lists(finite, max_size=4), st.lists(texts, max_size=4), texts)
def test_every_field_type_prints_exactly(count, amount, label, flag, counts, amounts_, labels, note):
    attr = EveryFieldAttr(
        IntAttr(count), FloatData(amount), StringAttr(label), BoolAttr.from_bool(flag),
        ArrayAttr([IntAttr(c) for c in counts]), ArrayAttr([FloatData(a) for a in amounts_]),
        ArrayAttr([StringAttr(t) for t in labels]), StringAttr(note),
    )
    assert_round_trip(attr)
    # a float parses back to the same double, the sign of a zero included
    again = parse_attribute(str(attr))
    assert math.copysign(1.0, again.amount.data) == math.copysign(1.0, amount)
    assert ("note =" in str(attr)) == bool(note)  # an optional field at its default is left out


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_float_field_is_finite(value):
    # inf and nan have no float literal: refused when built, never printed
    with pytest.raises(VerifyException, match="#kwtest.every: amount must be finite"):
        EveryFieldAttr(IntAttr(0), FloatData(value), StringAttr(""), BoolAttr.from_bool(False),
                       ArrayAttr([]), ArrayAttr([]), ArrayAttr([]), StringAttr(""))


@pytest.mark.parametrize(("text", "message"), [
    ("#kwtest.every<count = 1>", "is missing the field amount"),
    ("#kwtest.every<size = 1>", "has no field size"),
    ("#kwtest.every<count = 1, count = 2>", "gives count twice"),
    ("#kwtest.every<count = true>", "Expected integer literal"),
    ('#kwtest.every<amount = "x">', "float literal expected"),
    ("#kwtest.every<label = 3>", "string literal expected"),
])
def test_a_keyword_attribute_names_what_it_cannot_parse(text, message):
    with pytest.raises(ParseError, match=message):
        parse_attribute(text)


@settings(max_examples=100, deadline=None)
@given(amounts, amounts, amounts, texts.filter(bool))
def test_a_cost_parses_back_to_the_last_digit(time_s, flops, nbytes, engine):
    cost = sim.CostAttr(time_s, flops, nbytes, engine)
    assert_round_trip(cost)
    again = parse_attribute(str(cost))
    assert (again.time_s.data, again.flops.data, again.bytes.data, again.engine.data) == (time_s, flops, nbytes, engine)


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
    assert_round_trip(pipeline)
    again = pipeline.with_microbatches(microbatches)
    assert again.microbatches.data == microbatches
    assert (again.pp, again.vpp, again.schedule, again.layers) == (
        pipeline.pp, pipeline.vpp, pipeline.schedule, pipeline.layers)


def test_a_pipeline_names_its_schedule_by_the_enum():
    pipeline = sim.PipelineAttr(2, 1, "zb-h1", 8, [1, 1])
    assert pipeline.schedule.data is sim.PipelineSchedule.ZB_H1
    assert 'schedule = "zb-h1"' in str(pipeline)
    with pytest.raises(VerifyException, match="must be one of .*got '2f2b'"):
        sim.PipelineAttr(2, 1, "2f2b", 8, [1, 1])
    with pytest.raises(ParseError, match="#sim.pipeline: schedule must be one of gpipe, 1f1b, interleaved, zb-h1, got 'ZB-H1'"):
        parse_attribute('#sim.pipeline<pp = 2, vpp = 1, schedule = "ZB-H1", microbatches = 8, layers = [1, 1]>')


def test_a_stage_refuses_a_node_kind_that_is_not_a_name():
    stage = sim.StageOp([0], Region(Block([sim.InputOp("a", TensorType(bf16, [4]))])))
    stage.verify()
    assert stage.node_kind() is None
    stage.attributes[sim.NODE_KIND_ATTR] = StringAttr("h100")
    stage.verify()
    assert stage.node_kind() == "h100"
    for bad in (IntAttr(3), StringAttr("")):
        stage.attributes[sim.NODE_KIND_ATTR] = bad
        with pytest.raises(VerifyException, match="sim.node_kind must be a node kind's name"):
            stage.verify()


def test_a_pipeline_gives_every_virtual_stage_its_layers():
    with pytest.raises(VerifyException, match="pp \\* vpp = 4 virtual stages"):
        sim.PipelineAttr(2, 2, "interleaved", 8, [4, 4])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4096), st.sampled_from([0, 1, 2, 3]), st.integers(1, 10_000), st.booleans(), st.booleans())
def test_data_parallel_settings_parse_back_to_themselves(dp, zero, bucket_mb, overlap, gather):
    gather = gather and zero in (1, 2)
    settings = sim.DataParallelAttr(dp, zero, bucket_mb, overlap, gather)
    assert_round_trip(settings)


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
@given(st.lists(st.integers(0, 2**45), min_size=len(sim.StageMemoryAttr.field_names()),
                max_size=len(sim.StageMemoryAttr.field_names())))
def test_a_stage_memory_report_parses_back_to_itself(values):
    fields = dict(zip(sim.StageMemoryAttr.field_names(), values))
    memory = sim.StageMemoryAttr(**fields)
    assert_round_trip(memory)
    again = parse_attribute(str(memory))
    assert again.peak() == sum(fields[f] for f in ("params", "grads", "optimizer", "activations", "comm_buffers"))


def test_a_stage_memory_report_is_never_negative():
    fields = dict.fromkeys(sim.StageMemoryAttr.field_names(), 0) | {"activations": -1}
    with pytest.raises(VerifyException, match="activations must be >= 0"):
        sim.StageMemoryAttr(**fields)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["shard-tensor", "shard-context", "sequence-parallel", "shard-expert",
                                        "shard-expert.etp"]) | texts.filter(bool),
                       finite, min_size=1))
def test_replicated_flops_parse_back_to_the_last_digit(by_pass):
    attr = sim.ReplicatedFlopsAttr(by_pass)
    again = parse_attribute(str(attr))
    assert str(again) == str(attr)
    assert isinstance(again, sim.ReplicatedFlopsAttr)
    assert again.by_pass() == by_pass  # exact: printed with repr's digits
    assert list(again.by_pass()) == list(by_pass)


def test_replicated_flops_are_equal_only_in_the_same_order():
    """Equality follows what is printed: the order the passes ran."""
    ab = sim.ReplicatedFlopsAttr({"shard-tensor": 1.0, "sequence-parallel": -2.0})
    ba = sim.ReplicatedFlopsAttr({"sequence-parallel": -2.0, "shard-tensor": 1.0})
    assert ab == sim.ReplicatedFlopsAttr({"shard-tensor": 1.0, "sequence-parallel": -2.0})
    assert ab != ba and str(ab) != str(ba)


def test_replicated_flops_name_each_pass_once():
    with pytest.raises(VerifyException, match="names a pass twice"):
        sim.ReplicatedFlopsAttr.new([ArrayAttr([StringAttr("a"), StringAttr("a")]),
                                     ArrayAttr([FloatData(1.0), FloatData(2.0)])])
    with pytest.raises(VerifyException, match="2 pass names for 1 counts"):
        sim.ReplicatedFlopsAttr.new([ArrayAttr([StringAttr("a"), StringAttr("b")]), ArrayAttr([FloatData(1.0)])])


@irdl_attr_definition
class PositiveAttr(sim.KeywordAttr):
    """A plugin's keyword attribute with a rule of its own."""

    name = "kwtest.positive"

    amount: FloatData = param_def()

    def verify_fields(self) -> None:
        if self.amount.data < 0:
            raise VerifyException("#kwtest.positive: amount must be >= 0")


def test_a_keyword_attribute_keeps_the_shared_checks_beside_its_own():
    """`verify_fields` is the subclass's hook; the finite check still runs."""
    with pytest.raises(VerifyException, match="amount must be >= 0"):
        PositiveAttr(FloatData(-1.0))
    with pytest.raises(VerifyException, match="amount must be finite"):
        PositiveAttr(FloatData(math.inf))
    assert PositiveAttr(FloatData(2.0)).amount.data == 2.0


def test_a_keyword_attribute_cannot_override_verify():
    """A plugin that overrode `verify` would skip the shared checks: refused when
    its class is defined."""
    with pytest.raises(TypeError, match="states its rules in verify_fields"):
        class SkipsChecksAttr(sim.KeywordAttr):  # noqa: F841
            name = "kwtest.skips"

            def verify(self) -> None:
                pass


def test_replicated_flops_are_finite():
    with pytest.raises(VerifyException, match="shard-tensor must be finite"):
        sim.ReplicatedFlopsAttr({"shard-tensor": math.inf})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["H100-SXM5-80GB", "GB200-per-GPU", "H100-SXM5-80GB:hbm=1.41e11"]) | texts.filter(bool),
       st.integers(1, 2**31), st.integers(1, 72), st.sampled_from(["", 'name = "two" nodes = 2', "a \\ b\nc"]) | texts)
def test_a_target_parses_back_to_itself(hardware, gpus, per_node, cluster):
    target = sim.TargetAttr(hardware, gpus, per_node, cluster)
    assert_round_trip(target)
    assert ("cluster" in str(target)) == bool(cluster)


@given(st.sampled_from(list(sim.GenericCallee)), texts)
def test_a_generic_is_one_of_charons_callees_only_by_its_member(callee, other):
    """Charon's own callees print as the string literal they always had and are
    recognised after a round trip; any other text stays a valid callee that is
    none of them."""
    t = TensorType(bf16, [4])
    ours = sim.GenericOp(callee, [], [t], 0.0, 0.0)
    text = str(ours)
    assert f'sim.generic "{callee.value}"()' in text
    again = Parser(CONTEXT, text).parse_module().body.block.first_op
    assert sim.is_generic(again, callee) and not sim.is_generic(again, *(set(sim.GenericCallee) - {callee}))
    theirs = sim.GenericOp(other, [], [t], 0.0, 0.0)
    assert not sim.is_generic(theirs)
    assert sim.is_generic(theirs, *sim.GenericCallee) == (other in set(sim.GenericCallee))


def test_a_stacked_parameter_says_so_by_its_property_not_its_name():
    stacked = sim.ParamOp("layers.w", TensorType(bf16, [3, 8, 8]), stacked=True)
    named = sim.ParamOp("model.layers[0:3].w", TensorType(bf16, [3, 8, 8]))
    assert stacked.is_stacked() and not named.is_stacked()
    assert str(stacked).startswith('%0 = sim.param "layers.w" {stacked} :')
    with pytest.raises(VerifyException, match="a stacked parameter needs a leading layers dim"):
        sim.ParamOp("w", TensorType(bf16, []), stacked=True).verify()


def test_the_token_input_is_marked_not_named():
    from_frontend = sim.InputOp("tokens", TensorType(bf16, [2, 16]), tokens=True)
    named_only = sim.InputOp("tokens", TensorType(bf16, [2, 16]))
    assert from_frontend.is_tokens() and not named_only.is_tokens()
    assert str(from_frontend) == '%0 = sim.input "tokens" {tokens} : tensor<2x16xbf16>'
    again = Parser(CONTEXT, str(from_frontend)).parse_module().body.block.first_op
    assert isinstance(again, sim.InputOp) and again.is_tokens()
