"""parallel/sharding/rules.py: every op of the sim and coll dialects is laid out
by its declared factor rule (`ShardByRule`) or by a family pattern where factors
do not say it, but the few that need neither. An op laid out by neither keeps its
whole type on every rank, silently: a new op must get a rule (or a reason here)."""

import typing

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.examples import apply_pipeline, llama_layer, parse
from charon_ir.parallel.mesh import ensure_axis
from charon_ir.parallel.sharding.analysis import ShardingAnalysis
from charon_ir.parallel.sharding.layout import split
from charon_ir.parallel.sharding.materialise import materialise
from charon_ir.parallel.sharding.propagation import analyse, tally_replicated
from charon_ir.parallel.sharding.rules import ShardAttention, ShardByRule, ShardGeneric, default_rules

WITHOUT_A_RULE = {
    "sim.param": "a seed: the pass gives each weight its layout (Sharding.assign)",
    "sim.input": "a seed: the token ids are split (or not) by the pass",
    "sim.phase": "its results take the layout its yield gives them (ShardYield)",
    "sim.stage": "made by the pipeline pass, after the sharding passes",
    "coll.grid": "a declaration: no value",
    "coll.send": "made by the pipeline pass, after the sharding passes",
    "coll.recv": "made by the pipeline pass, after the sharding passes",
    "sim.off_stage": "made and canonicalized away inside the pipeline pass, after the sharding passes",
}

OPS = [*sim.Sim.operations, *coll.Coll.operations]


def family_patterns():
    st = ShardingAnalysis("tp", 2, "test")
    return [r for r in (*default_rules(st), ShardAttention(st), ShardGeneric(st)) if type(r) is not ShardByRule]


def declares_none(op: type) -> bool:
    """`sharding_rule()` says None for every op of the class (its annotation,
    resolved whether or not the dialect defers annotations)."""
    return typing.get_type_hints(op.sharding_rule).get("return") is type(None)


def test_every_op_has_a_rule_or_a_reason():
    families = family_patterns()
    without = set()
    for op in OPS:
        family = any(issubclass(op, rule.op_types) for rule in families)
        declared = issubclass(op, sim.HasShardingRule) and not declares_none(op)
        if not (family or declared):
            without.add(op.name)
    assert without == set(WITHOUT_A_RULE)


def test_the_factor_rule_is_the_default():
    # what a family pattern does not take goes by the op's declared rule
    st = ShardingAnalysis("tp", 2, "test")
    assert type(default_rules(st)[-1]) is ShardByRule
    by_rule = {op.name for op in OPS if issubclass(op, sim.HasShardingRule) and not declares_none(op)}
    assert {"sim.matmul", "sim.elementwise", "sim.norm", "sim.reduce", "sim.softmax", "sim.embedding",
            "coll.all_reduce", "coll.all_gather", "coll.reduce_scatter", "coll.all_to_all",
            "coll.broadcast"} == by_rule


def test_family_patterns_take_disjoint_op_kinds():
    # one family pattern per op kind: the order of the defaults decides nothing
    st = ShardingAnalysis("tp", 2, "test")
    for op in OPS:
        taking = [type(rule).__name__ for rule in default_rules(st)
                  if type(rule) is not ShardByRule and issubclass(op, rule.op_types)]
        assert len(taking) <= 1, (op.name, taking)


# -- the declared rule applied: a split factor splits the op's work -------------


def t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xbf16>"


def one_op(kind: str, a: int, b: int, c: int) -> tuple[str, type]:
    """A module of one op of `kind` reading the input %x (dims a, b, c or a, b)
    and a weight or second input."""
    if kind == "matmul":  # [a, b] x [b, c]
        return (f'%x = sim.input "x" : {t(a, b)}\n%w = sim.param "w" : {t(b, c)}\n'
                f"%y = sim.matmul %x, %w : ({t(a, b)}, {t(b, c)}) -> {t(a, c)}\n"), sim.MatmulOp
    if kind == "bmm":  # [a, b, c] x [a, c, b], lhs transposed
        return (f'%x = sim.input "x" : {t(a, c, b)}\n%w = sim.input "w" : {t(a, c, b)}\n'
                f"%y = sim.matmul %x, %w {{transpose_lhs}} : ({t(a, c, b)}, {t(a, c, b)}) -> {t(a, b, b)}\n"), sim.MatmulOp
    if kind == "elementwise":  # broadcast of [b, c] against [a, b, c]
        return (f'%x = sim.input "x" : {t(a, b, c)}\n%w = sim.input "w" : {t(1, b, c)}\n'
                f'%y = sim.elementwise "mul" %x, %w : {t(a, b, c)}, {t(1, b, c)} -> {t(a, b, c)}\n'), sim.ElementwiseOp
    if kind == "norm":
        return (f'%x = sim.input "x" : {t(a, b, c)}\n%w = sim.param "w" : {t(c)}\n'
                f'%y = sim.norm "rms" %x, %w : {t(a, b, c)}, {t(c)}\n'), sim.NormOp
    if kind == "reduce":
        return (f'%x = sim.input "x" : {t(a, b, c)}\n'
                f'%y = sim.reduce "sum" %x [1] : {t(a, b, c)} -> {t(a, c)}\n'), sim.ReduceOp
    return f'%x = sim.input "x" : {t(a, b)}\n%y = sim.softmax %x dim 1 : {t(a, b)}\n', sim.SoftmaxOp


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["matmul", "bmm", "elementwise", "norm", "reduce", "softmax"]),
    units=st.lists(st.integers(1, 4), min_size=3, max_size=3),
    ways=st.sampled_from([2, 4]),
    dim=st.integers(0, 2),
)
def test_splitting_an_operand_on_a_factor_splits_the_work(kind, units, ways, dim):
    # sharding by the declared rule keeps the group's total FLOPs: each rank
    # does 1/ways of the op, none of it replicated
    text, op_kind = one_op(kind, *(ways * u for u in units))
    module = parse(text)
    ensure_axis(module, "tp", ways, "test")
    op = next(o for o in module.walk() if isinstance(o, op_kind))
    x = op.operands[0]
    rule = op.sharding_rule()
    dim %= len(sim.shape_of(x))
    assume(rule.operands[0][dim] not in rule.need_replication)
    state = ShardingAnalysis("tp", ways, "test")
    state.snapshot(module)
    whole = op.flops()
    state.assign(x, split(dim, ways, "x"))
    analyse(state, module, [])
    # the result: split where the rule keeps the factor, a partial sum where it sums it
    factor, result = rule.operands[0][dim], state.shard(op.results[0])
    if factor in rule.reduction:
        assert result.partial and result.dim is None
    else:
        assert not result.partial and rule.results[0][result.dim] == factor
    materialise(state.plan, module)
    tally_replicated(state, module)
    assert op.flops() * ways == whole
    assert state.replicated_flops == 0


def test_a_rule_that_does_not_describe_its_op_is_one_error(monkeypatch):
    """A (plugin) op whose declared rule has the wrong number of entries or
    factors is refused by name before the propagation trusts it."""
    matmul_rule = sim.MatmulOp.sharding_rule
    monkeypatch.setattr(sim.MatmulOp, "sharding_rule", lambda op: matmul_rule(op)._replace(operands=((("m",),))))
    with pytest.raises(CharonError, match=r"^'sim.matmul': its sharding rule does not describe it \(1 operand"):
        apply_pipeline(parse(llama_layer(16, 64, 4, 2, 16, 96)), "shard-tensor{tp=2}")
    monkeypatch.setattr(sim.MatmulOp, "sharding_rule",
                        lambda op: matmul_rule(op)._replace(results=(("m",),)))
    with pytest.raises(CharonError, match=r"1 factors for a rank-2 tensor"):
        apply_pipeline(parse(llama_layer(16, 64, 4, 2, 16, 96)), "shard-tensor{tp=2}")
