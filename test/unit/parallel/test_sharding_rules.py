"""parallel/sharding/rules.py: every op of the sim and coll dialects has a
sharding rule, but the few that need none. An op without one keeps its whole
type on every rank, silently: a new op must get a rule (or a reason here)."""

from charon_ir.dialects import coll, sim
from charon_ir.parallel.sharding.rules import ShardAttention, ShardGeneric, default_rules
from charon_ir.parallel.sharding.analysis import ShardingAnalysis

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


def test_every_op_has_a_rule_or_a_reason():
    st = ShardingAnalysis("tp", 2, "test")
    rules = [*default_rules(st), ShardAttention(st), ShardGeneric(st)]
    ops = [*sim.Sim.operations, *coll.Coll.operations]
    without = {op.name for op in ops if not any(issubclass(op, rule.op_types) for rule in rules)}
    assert without == set(WITHOUT_A_RULE)


def test_default_rules_take_disjoint_op_kinds():
    # one rule per op kind: the order of the defaults decides nothing
    st = ShardingAnalysis("tp", 2, "test")
    ops = [*sim.Sim.operations, *coll.Coll.operations]
    for op in ops:
        taking = [type(rule).__name__ for rule in default_rules(st) if issubclass(op, rule.op_types)]
        assert len(taking) <= 1, (op.name, taking)
