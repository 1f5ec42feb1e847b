"""What a sharding propagation knows and asks for.

`Sharding` is what the rules see: the layout of each value, the hints that guide
views, and the requests a rule makes (lay an operand out so, give a result this
layout, all-reduce row statistics). It leaves open what a request does:
- `ShardingAnalysis` (analysis.py) only records them; patterns materialise the
  record afterwards (materialise.py). Every sharding pass works so.
  (test_sharding_materialise.py holds the result to a state that makes each
  request's IR at once, as the walk reaches the op, as the passes did before.)"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from math import prod

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import walk_with_multiplicity
from charon_ir.parallel.sharding.conversions import Step
from charon_ir.parallel.sharding.layout import REPLICATED, Shard, reshape_groups, shape

Value = Hashable
"""An SSA value, or a planned conversion of one (`ShardingAnalysis`)."""


class Partition(ABC):
    """How an op runs on one rank where that takes ops of its own, beyond laying
    its operands and results out (ring attention's steps around the ring). It is
    applied once the op reads its operands as laid out and its results have their
    per-rank types; its ops are made through `rewriter`."""

    @abstractmethod
    def rewrite(self, op: Operation, rewriter: PatternRewriter) -> None: ...

    @abstractmethod
    def stand_in(self, op: Operation, index: int) -> SSAValue | None:
        """What the op's readers read for result `index` once rewritten (the
        merge of the ring's steps); None before."""


@dataclass
class Sharding(ABC):
    """The layout of each value over one grid axis, and what guides the rules;
    what a request does is the subclass's (`ShardingAnalysis` records it)."""

    axis: str
    size: int
    pass_name: str
    group_axes: tuple[str, ...] = ()
    """The grid axes whose ranks form the group of `size` (default: `axis` alone;
    shard-expert's experts folded over tensor parallelism: ("ep", "tp"))."""
    shards: dict[Value, Shard] = field(default_factory=dict)
    """The layout of each value not whole on every rank."""
    converted: dict[tuple[Value, Shard], Value] = field(default_factory=dict)
    """(value, layout without its tag) -> the value converted to it."""
    fallbacks: list[str] = field(default_factory=list)
    """Ops whose operands were gathered whole because no rule fits (CHARON_DEBUG_SHARDING)."""
    hints: dict[str, set[int]] = field(default_factory=dict)
    """tag -> sizes (unsharded) a dim of that kind can have; guides views."""
    gather_first: frozenset[str] = frozenset({"seq"})
    """In a matmul whose operands are split on incompatible dims, gather the operand
    with one of these tags (Megatron-SP gathers the sequence, never a weight)."""
    done: set[Operation] = field(default_factory=set)
    replicated_flops: float = 0.0
    flops_before: dict[Operation, float] = field(default_factory=dict)

    # -- layouts and shapes ------------------------------------------------------

    def shard(self, value: Value) -> Shard:
        return self.shards.get(value, REPLICATED)

    @property
    def axes(self) -> list[str]:
        return list(self.group_axes or (self.axis,))

    def local_shape(self, full: Sequence[int], s: Shard, what: str = "") -> list[int]:
        out = list(full)
        if s.dim is not None and s.tag == "capacity":
            # per-expert buffers of the local tokens: ceil(tokens * k / experts)
            out[s.dim] = -(-out[s.dim] // s.factor)
        elif s.dim is not None:
            if out[s.dim] % s.factor:
                raise CharonError(
                    f"{self.pass_name}: option '{self.axis}' ({s.factor}) does not divide "
                    f"dim {s.dim} ({out[s.dim]}) of {what or 'a tensor'}"
                )
            out[s.dim] //= s.factor
        return out

    @abstractmethod
    def full_shape(self, value: Value) -> list[int]:
        """The unsharded shape of `value`."""

    @abstractmethod
    def rank_shape(self, value: Value) -> list[int]:
        """The per-rank shape of `value`."""

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

    # -- requests (what each does: the subclass) --------------------------------

    @abstractmethod
    def operand(self, op: Operation, index: int) -> Value:
        """What operand `index` of `op` reads now (after the conversions asked for)."""

    def operand_of(self, op: Operation, value: SSAValue) -> Value:
        """`operand` of the first use of `value` by `op`."""
        return self.operand(op, next(i for i, v in enumerate(op.operands) if v is value))

    def layout_of(self, op: Operation, value: SSAValue) -> Shard:
        """The layout in which `op` reads its operand `value` now."""
        return self.shard(self.operand_of(op, value))

    def convert(self, value: Value, want: Shard) -> Value:
        """`value` laid out as `want` (the collective or slice that does it comes
        right after the value's definition, once per (value, layout))."""
        have = self.shard(value)
        if (have.dim, have.factor, have.partial) == (want.dim, want.factor, want.partial):
            return value
        key = (value, replace(want, tag=""))
        if key not in self.converted:
            self.converted[key] = self.conversion(value, have, want)
        return self.converted[key]

    @abstractmethod
    def conversion(self, value: Value, have: Shard, want: Shard) -> Value:
        """`value`, laid out `have`, converted to `want` (`convert`'s work, asked
        once per value and layout)."""

    @abstractmethod
    def use(self, op: Operation, index: int, want: Shard) -> None:
        """Make operand `index` of `op` have layout `want`."""

    @abstractmethod
    def convert_with(self, value: Value, steps: Sequence[Step], layout: Shard) -> Value:
        """`value` through `steps` a rule chose itself (shard-expert's routed
        all_to_all), right after the value's definition, ending laid out as `layout`."""

    @abstractmethod
    def read(self, op: Operation, index: int, value: Value) -> None:
        """Operand `index` of `op` reads `value` (what `convert_with` returned)."""

    @abstractmethod
    def use_value(self, op: Operation, value: SSAValue, want: Shard) -> None:
        """Make every use of `value` by `op` have layout `want` (operands by name:
        IRDL orders a subclass's operands before its base class's)."""

    @abstractmethod
    def assign(self, value: SSAValue, s: Shard, local: Sequence[int] | None = None) -> None:
        """Give `value` (a result or block argument not laid out yet) layout `s`
        and its per-rank shape: `local` where the rule derives it from its
        operands' per-rank shapes (`rank_shape`), else its unsharded shape split
        by `s`."""

    def assign_results(self, op: Operation, result_shards: Sequence[Shard], scale_cost: bool) -> None:
        """`assign` each tensor result of `op`; `scale_cost`: a generic's FLOPs and
        bytes shrink with its results."""
        for r, s in zip(op.results, result_shards):
            if isinstance(r.type, TensorType):
                self.assign(r, s)

    @abstractmethod
    def row_stats(self, op: Operation, index: int, dim: int, count: int) -> None:
        """`count` fp32 statistics per row of operand `index` of `op` (split on
        `dim`), all-reduced over the group before `op`."""

    @abstractmethod
    def mark_grad_sync(self, value: Value) -> None:
        """`value` is a gradient all-reduced over the group: a data-parallel pass
        may fold that all_reduce into its own gradient reduction."""

    @abstractmethod
    def partition(self, op: Operation, how: Partition) -> None:
        """`op` runs as `how` builds it, after its operands and results are laid
        out as asked."""

    def resolve_partials(self, op: Operation) -> None:
        for i, v in enumerate(op.operands):
            s = self.shard(self.operand(op, i))
            if isinstance(v.type, TensorType) and s.partial:
                self.use(op, i, replace(s, partial=False))

    def gather_all(self, op: Operation, reason: str) -> None:
        """Fallback: make every operand whole (correct, but moves data)."""
        for i, v in enumerate(op.operands):
            if isinstance(v.type, TensorType) and not self.shard(self.operand(op, i)).replicated:
                self.use(op, i, REPLICATED)
                self.fallbacks.append(f"{op.name}: {reason}")

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

