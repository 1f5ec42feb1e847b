"""The sharding propagation: the rules walk the module once, in program order
(an op's operands are laid out before the op is: SSA defines each operand
before its reader, a block's arguments are laid out by its parent op, visited
before its body, and a region op's results by the yield ending its body;
test_sharding_propagation.py holds the walk to that), each deciding the layout of
its results and of the operands that do not fit. The walk only records (a
`ShardingAnalysis`'s `ShardingPlan`); the materialising patterns make it IR
afterwards. Then the replicated work (the group's FLOPs beyond the unsharded FLOPs) is tallied, op
by op. CHARON_DEBUG_SHARDING=1 prints the fallbacks and the replicated work per op."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import walk_with_multiplicity
from charon_ir.parallel.sharding.analysis import ShardingAnalysis
from charon_ir.parallel.sharding.materialise import materialise
from charon_ir.parallel.sharding.rules import ShardPattern, default_rules
from charon_ir.parallel.sharding.state import Sharding


@dataclass
class ApplyRules(RewritePattern):
    """Hands each op to the rules for its kind, in order (a pass's own first),
    until one takes it; which rules those are is found once per op class."""

    state: Sharding
    rules: Sequence[ShardPattern]
    by_class: dict[type[Operation], list[ShardPattern]] = field(default_factory=dict)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        rules = self.by_class.get(type(op))
        if rules is None:
            rules = self.by_class[type(op)] = [r for r in self.rules if issubclass(type(op), r.op_types)]
        for rule in rules:
            if op in self.state.done:
                return
            rule.match_and_rewrite(op, rewriter)


def analyse(st: Sharding, root: Operation, rules: Sequence[ShardPattern]) -> None:
    """Walk `root` with the pass's own `rules` (tried first) and the default ones."""
    try:
        PatternRewriteWalker(
            ApplyRules(st, [*rules, *default_rules(st)]), apply_recursively=False
        ).rewrite_region(root.regions[0])
    except CharonError as e:
        # the walker attaches the whole module to the error as notes: one line only
        raise CharonError(str(e)) from None


def propagate(st: ShardingAnalysis, root: Operation, rules: Sequence[ShardPattern]) -> None:
    """Propagate over `root` (`analyse`, then `materialise` the plan), and add the
    replicated work to `st.replicated_flops`."""
    analyse(st, root, rules)
    materialise(st.plan, root)
    tally_replicated(st, root)


def tally_replicated(st: Sharding, root: Operation) -> None:
    """Add the work each compute op of `root` does beyond its 1/size share to
    `st.replicated_flops`."""
    # whole where no rule splits it
    extras = [
        (op, (st.size * op.flops() - st.flops_before.get(op, 0.0)) * mult)
        for op, mult in walk_with_multiplicity(root)
        if isinstance(op, sim.ComputeOp)
    ]
    if os.environ.get("CHARON_DEBUG_SHARDING"):
        for line in st.fallbacks:
            print(f"{st.pass_name}: fallback: {line}", file=sys.stderr)
        for op, extra in extras:
            if abs(extra) > 1e-9:
                print(f"{st.pass_name}: replicated {extra:.0f} in {op.name} {op.op_kind()} "
                      f"{[str(r.type) for r in op.results]}", file=sys.stderr)
    st.replicated_flops += sum(extra for _, extra in extras)
