"""What one sharding propagation knows: the layout of each value (`Conversions`),
what guides the rules (hints for views, the operand to gather first, the layout
a repeat carries), the ops handled, and the FLOPs before the pass, against which
the replicated work is tallied."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import prod

from xdsl.ir import Attribute, Operation, SSAValue

from charon_ir.dialects import sim
from charon_ir.parallel.accounting import walk_with_multiplicity
from charon_ir.parallel.sharding.conversions import Conversions
from charon_ir.parallel.sharding.layout import Shard, reshape_groups, retype, shape, with_shape


@dataclass
class ShardingState(Conversions):
    """What one propagation knows: the shard of each value, the conversions already
    made, and the replicated work so far."""

    hints: dict[str, set[int]] = field(default_factory=dict)
    """tag -> sizes (unsharded) a dim of that kind can have; guides views."""
    gather_first: frozenset[str] = frozenset({"seq"})
    """In a matmul whose operands are split on incompatible dims, gather the operand
    with one of these tags (Megatron-SP gathers the sequence, never a weight)."""
    carried: Callable[[SSAValue, Shard], Shard] | None = None
    """Shard wanted for a value carried around a `sim.repeat` (default: its init's)."""
    done: set[Operation] = field(default_factory=set)
    replicated_flops: float = 0.0
    flops_before: dict[Operation, float] = field(default_factory=dict)

    # -- types ---------------------------------------------------------------

    def retype(self, value: SSAValue, t: Attribute) -> SSAValue:
        """`value` with type `t` (`retype`), keeping the shard recorded for it."""
        new = retype(value, t)
        if new is not value and value in self.shards:
            self.shards[new] = self.shards.pop(value)
        return new

    def assign(self, value: SSAValue, s: Shard, full: Sequence[int] | None = None) -> SSAValue:
        """Give `value` shard `s` and its per-rank type; `full` is its unsharded
        shape (default: its type now). Returns the retyped value."""
        full = list(full if full is not None else shape(value))
        value = self.retype(value, with_shape(value.type, self.local_shape(full, s, self._describe(value))))
        if s.replicated:
            self.shards.pop(value, None)
        else:
            self.shards[value] = s
        return value

    @staticmethod
    def _describe(value: SSAValue) -> str:
        owner = value.owner
        if isinstance(owner, (sim.ParamOp, sim.InputOp)):
            return f"'{owner.sym_name.data}'"
        if isinstance(owner, Operation):
            return f"the result of {owner.name}"
        return "a block argument"

    def snapshot(self, root: Operation) -> None:
        """Remember every op's FLOPs before the pass changes any type."""
        self.flops_before = {
            op: op.flops() for op, _ in walk_with_multiplicity(root) if isinstance(op, sim.ComputeOp)
        }

    # -- reshape mapping -----------------------------------------------------

    def map_dim_through(self, dst: Sequence[int], sources: Sequence[Sequence[int]], s: Shard) -> int | None:
        """The result dim a split moves to through a view that says which input
        dims each result dim is made of (`sim.view` dims, a generic view's
        `view_dims`): the one made of the split dim, the outermost that divides
        (a known unit first: heads of heads x head_dim) when a reshape splits it."""
        assert s.dim is not None
        made_of = [j for j, group in enumerate(sources) if s.dim in group]
        hinted = self.hints.get(s.tag, set())
        for j in made_of:
            if dst[j] in hinted and dst[j] % s.factor == 0:
                return j
        for j in made_of:
            if dst[j] % s.factor == 0 and dst[j] > 1:
                return j
        return None

    def map_dim(self, src_full: Sequence[int], dst_full: Sequence[int], s: Shard) -> int | None:
        """The dim of `dst_full` that carries split dim `s.dim` of `src_full` through
        a view (or a view-like generic), or None."""
        assert s.dim is not None
        f = s.factor
        hinted = self.hints.get(s.tag, set())

        def kept(k: int) -> bool:
            # a leading dim the reshape leaves in place (the batch) is not the image
            # of a later split dim, even when its size is a head count
            return not (k < s.dim and k < len(src_full) and dst_full[k] == src_full[k]
                        and all(dst_full[i] == src_full[i] for i in range(k)))

        groups = reshape_groups(src_full, dst_full) if prod(src_full) == prod(dst_full) else None
        if groups is not None:
            for gi, gj in groups:
                if s.dim not in gi:
                    continue
                if len(gi) == 1 or len(gj) == 1:
                    for j in gj:
                        if dst_full[j] % f == 0 and dst_full[j] > 1:
                            if len(gi) == 1 and len(gj) > 1 and hinted:
                                # a split of the dim: prefer the part that is a
                                # known unit (heads of heads x head_dim)
                                pick = [k for k in gj if dst_full[k] in hinted and dst_full[k] % f == 0]
                                if pick:
                                    return pick[0]
                            return j
                    return None
                pick = [k for k in gj if dst_full[k] in hinted and dst_full[k] % f == 0 and kept(k)]
                if pick:
                    return pick[0]
                same = [k for k in gj if dst_full[k] == src_full[s.dim]]
                if same:
                    return same[0]
                return None
        pick = [k for k, n in enumerate(dst_full) if n in hinted and n % f == 0 and kept(k)]
        if pick:
            return pick[0]
        if s.dim < len(dst_full) and dst_full[s.dim] == src_full[s.dim]:
            return s.dim
        same = [k for k, n in enumerate(dst_full) if n == src_full[s.dim]]
        return same[0] if len(same) == 1 else None
