"""parallel/sharding/rules.py: every op of the sim and coll dialects is laid out
by its declared factor rule (`ShardByRule`) or by a family pattern where factors
do not say it, but the few that need neither. An op laid out by neither keeps its
whole type on every rank, silently: a new op must get a rule (or a reason here)."""

from charon_ir.dialects import coll, sim
from charon_ir.parallel.sharding.analysis import ShardingAnalysis
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
    """`sharding_rule()` says None for every op of the class (its annotation)."""
    return op.sharding_rule.__annotations__.get("return") == "None"


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
