"""
Expert parallelism for mixture-of-experts layers on the `ep` axis of `coll.grid @mesh`.

Options:
- ep: ranks the routed experts are spread over (default 1: nothing to do). Each
  holds experts / ep of them.
- etp: expert tensor parallelism (default 1): each expert's ffn dim is also split
  over the `tp` axis (column-parallel gate/up, row-parallel down, an all_reduce of
  the expert outputs before they go home). After `shard-tensor{experts=false}`
  (tp ranks holding whole experts), etp 1 folds the tp ranks into the expert
  group, as Megatron-Core's MoE parallel folding carves the ep x etp expert grid
  out of tp x dp: the mesh's `ep` axis is ep / tp, the all_to_alls run over
  ["ep", "tp"] (ep neighbouring ranks), each rank dispatches the 1/tp of the
  tokens sequence parallelism gave it and receives only tokens routed to its
  experts, and no tp collective touches the experts.
- capacity-factor: 0 (default) keeps the balanced, dropless routing the model was
  imported with (capacity = tokens * top_k / experts per expert); c > 0 pads every
  expert's buffer to c times that, and the padding is reported as replicated work.
- dispatcher: how the all_to_alls run, Megatron-Core's `moe_token_dispatcher_type`:
  `alltoall` (default: NCCL, every (token, expert) copy travels) or `flex` (DeepEP /
  HybridEP: a token goes once to each destination node over the network and once
  to each destination rank over NVLink; the a2a ops get `top_k`).
- groups, groups-per-token: group-limited routing (DeepSeek-V3's `n_group` 8,
  `topk_group` 4: a token's experts within 4 of 8 groups); 0: none. `flex`
  gains from it (fewer destination nodes); `routing=random` reads it (the load's
  spread).
- routing: `balanced` (default) gives every rank the mean load, tokens * top_k /
  ep rows; `random` is Megatron-Core's `moe_router_force_load_balancing` (the
  router's logits replaced by normal random draws, `RandomSTE` in
  megatron/core/transformer/moe/moe_utils.py), which the Megatron-Bridge MoE
  benchmarks run dropless: each token's top_k experts are a uniform draw, so the
  ranks' loads scatter about the mean, and the slowest rank, which every combine
  waits for, sets the pace. Its expected load (`expected_max_rank_load`, a closed
  form of the draw's statistics) sizes the simulated rank's expert buffers; the
  rows above the mean are reported as replicated work. Ignored with a
  capacity-factor (the buffers are padded to it).

The ep ranks are data-parallel ranks for everything but the routed experts: each
brings its own tokens. After `sim.moe_dispatch` fills the per-expert buffers
[experts, capacity, h] of its own tokens, an all_to_all sends each expert's rows to
the rank that holds it, which then sees [experts / ep, capacity * ep, h]; before
`sim.moe_combine` another all_to_all brings them back (the backward mirrors both).
Per token and per call each all_to_all moves tokens * top_k * h * 2 bytes (bf16),
(ep - 1) / ep of it off the rank. With a `tp` axis the tp ranks hold the same
tokens here; Megatron-Core's MoE layer takes the sequence-parallel input, so each
dispatches its 1/tp of them: the a2a ops get `token_replicas` = tp. The router, attention and the shared experts stay
dense. FLOPs per rank are unchanged (dropless): the group does ep ranks' worth of
work, as without expert parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, erf, exp, pi, sqrt
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter

from charon_ir.dialects import sim
from charon_ir.dialects.sim import EXPERT_TP_ATTR
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import (
    multiplicity,
    record_replicated_flops,
    replicated_flops,
    walk_with_multiplicity,
)
from charon_ir.parallel.experts import expert_weight_dims
from charon_ir.parallel.mesh import ensure_axis, grid_axes, refuse_after_data_parallel, refuse_axis_twice
from charon_ir.parallel.sharding.analysis import ShardingAnalysis
from charon_ir.parallel.sharding.conversions import Step, StepKind
from charon_ir.parallel.sharding.layout import REPLICATED, retype, shape, split, weight_layouts, with_shape
from charon_ir.parallel.sharding.propagation import propagate
from charon_ir.parallel.sharding.rules import ShardAttention, ShardGeneric, ShardPattern
from charon_ir.parallel.sharding.state import Sharding


@dataclass
class DispatchToExperts(ShardPattern):
    """After a dispatch: all_to_all the per-expert buffers to the experts' owners."""

    op_types: tuple[type[Operation], ...] = (sim.MoeDispatchOp,)
    capacity: int = 0
    route: dict[str, Attribute] | None = None
    """The a2a ops' routing attributes (`coll.all_to_all`'s top_k, groups, ...)."""
    folded: int = 1
    """tp ranks folded into the expert group (etp 1 under tp): each dispatches the
    rows of its own 1/folded of the tokens."""

    def shard_op(self, op: sim.MoeDispatchOp, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        for i in range(len(op.operands)):
            if not st.shard(st.operand(op, i)).replicated:
                st.use(op, i, REPLICATED)
        e, c, h = shape(op.result)
        if self.capacity:
            c = self.capacity
            st.assign(op.result, REPLICATED, (e, c, h))
        ep = st.size
        steps: list[Step] = []
        if self.folded > 1:
            # the rows of this rank's sequence-parallel share of the tokens (free)
            c //= self.folded
            steps.append(Step(StepKind.SLICE, (e, c, h), callee=LOCAL_ROWS))
        steps.append(Step(StepKind.ALL_TO_ALL, (e // ep, c * ep, h), 0, 1, tuple((self.route or {}).items())))
        sent = st.convert_with(op.result, steps, split(0, ep, "experts"))
        for use in list(op.result.uses):
            st.read(use.operation, use.index, sent)


LOCAL_ROWS = sim.GenericCallee.MOE_LOCAL_ROWS
"""With tp folded into the expert group: the rows of a rank's own 1/tp of the
tokens in a per-expert buffer of the tp group's tokens, and back. Free: Megatron
dispatches and combines the sequence-parallel share itself; the IR's router and
combine run on the tp group's tokens, of which the combine's output is sliced to
that share (sequence parallelism), so the rows never travel."""


def _to_tokens(st: Sharding, value, cache: dict, route: dict[str, Attribute] | None = None, folded: int = 1):
    """all_to_all expert outputs [experts/ep, capacity*ep, h] back to the ranks
    their tokens came from: [experts, capacity, h]."""
    if value in cache:
        return cache[value]
    s = st.shard(value)
    if s.dim != 0:
        return st.convert(value, REPLICATED)
    e, c, h = st.rank_shape(value)
    ep = st.size
    steps = [Step(StepKind.ALL_TO_ALL, (e * ep, c // ep, h), 1, 0, tuple((route or {}).items()))]
    if folded > 1:
        steps.append(Step(StepKind.SLICE, (e * ep, c // ep * folded, h), callee=LOCAL_ROWS))
    back = st.convert_with(value, steps, REPLICATED)
    cache[value] = back
    return back


@dataclass
class CombineFromExperts(ShardPattern):
    """Before a combine (and the router-weight gradient): all_to_all the expert
    outputs back. The forward saves the returned buffers for its backward, as
    Megatron's token unpermutation does."""

    op_types: tuple[type[Operation], ...] = (sim.MoeCombineOp, sim.GenericOp)
    cache: dict[SSAValue, SSAValue] | None = None
    route: dict[str, Attribute] | None = None
    folded: int = 1

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, sim.GenericOp) and not op.calls(sim.GenericCallee.MOE_COMBINE_WEIGHT_GRAD):
            return
        super().match_and_rewrite(op, rewriter)

    def shard_op(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        cache = self.cache if self.cache is not None else {}
        for i, v in enumerate(op.operands):
            cur = st.operand(op, i)
            if isinstance(v.type, TensorType) and len(shape(v)) == 3 and st.shard(cur).dim == 0:
                back = _to_tokens(st, cur, cache, self.route, self.folded)
                st.read(op, i, back)
                block = op.parent_block()
                last = block.last_op if block else None
                if isinstance(last, sim.YieldOp) and isinstance(op, sim.MoeCombineOp):
                    for j, y in enumerate(last.operands):
                        if y is v:
                            st.read(last, j, back)
            elif not st.shard(cur).replicated:
                st.use(op, i, REPLICATED)


def expected_max_standard_normal(n: int, steps: int = 4000) -> float:
    """E[max of n independent standard normal draws]: the integral of
    x n phi(x) Phi(x)^(n-1) over x (trapezoid rule on [-12, 12]); 0 for n = 1."""
    if n < 2:
        return 0.0
    lo, hi = -12.0, 12.0
    width = (hi - lo) / steps
    total = 0.0
    for i in range(steps + 1):
        x = lo + i * width
        density = n * exp(-x * x / 2) / sqrt(2 * pi) * (0.5 * (1 + erf(x / sqrt(2)))) ** (n - 1)
        total += x * density * (0.5 if i in (0, steps) else 1.0)
    return total * width


def expected_max_rank_load(tokens: int, top_k: int, experts: int, ep: int,
                           groups: int = 0, groups_per_token: int = 0) -> float:
    """E[the most loaded rank's (token, expert) pairs] / the mean, when each of the
    ep group's `tokens` picks its top_k of `experts` uniformly at random (Megatron's
    forced load balancing: normal random logits), experts / ep on each rank.

    A rank's load is the sum over tokens of Y, the number of a token's experts on
    that rank: hypergeometric (top_k draws from `experts`, experts / ep of them the
    rank's), mean top_k / ep, variance top_k (m/E)(1 - m/E)(E - k)/(E - 1). With
    group-limited routing (the token's top_k within groups_per_token of `groups`
    groups, picked uniformly as iid logits do) and a rank inside one group, Y is
    0 unless the rank's group is picked, then hypergeometric over the picked
    groups' experts. Over many tokens the loads are normal (central limit), and
    the ep loads sum to tokens * top_k: exchangeable normals with that constraint
    are iid normals of variance var * ep / (ep - 1) less their mean, so the
    expected maximum is the mean + that deviation x E[max of ep standard normals].
    1.0 for ep = 1."""
    if ep < 2 or tokens < 1:
        return 1.0
    m = experts / ep
    mean_y = top_k * m / experts

    def hypergeometric_moments(population: float) -> tuple[float, float]:
        p = m / population
        mean = top_k * p
        var = top_k * p * (1 - p) * (population - top_k) / (population - 1) if population > 1 else 0.0
        return mean, var

    group_size = experts // groups if groups else 0
    if groups and group_size % m == 0 and groups_per_token < groups:
        picked = groups_per_token / groups
        mean_in, var_in = hypergeometric_moments(groups_per_token * group_size)
        var_y = picked * (var_in + mean_in ** 2) - mean_y ** 2
    else:
        var_y = hypergeometric_moments(experts)[1]
    mean_load = tokens * mean_y
    spread = sqrt(tokens * var_y * ep / (ep - 1))
    return 1.0 + spread * expected_max_standard_normal(ep) / mean_load


def _carries_capacity(value: SSAValue, experts: int, capacity: int) -> bool:
    """Whether `value` has an [.., experts, capacity, ..] pair of dims."""
    dims = shape(value)
    return any(dims[p] == experts and dims[p + 1] == capacity for p in range(len(dims) - 1))


def _expert_region(dispatches: list[sim.MoeDispatchOp], experts: int, capacity: int) -> list[SSAValue]:
    """Values whose rows are the dispatched buffers' rows, up to the combines: the
    expert activations, also where a phase or a repeat passes them on (saved for
    the backward). Found by data flow, not by shape alone: a matmul whose lhs is
    transposed sums over the rows (a weight gradient [experts, out, in]), so its
    result is no expert activation even where out happens to equal the capacity
    (Mixtral's gate_up [4, 1024, 256] at 2048 tokens, top-2 of 4 experts)."""
    region: list[SSAValue] = []
    seen: set[SSAValue] = set()
    work: list[SSAValue] = [d.result for d in dispatches]
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if isinstance(user, (sim.MoeCombineOp, sim.MoeDispatchOp)) or (
                sim.is_generic(user, sim.GenericCallee.MOE_COMBINE_WEIGHT_GRAD)
            ):
                continue
            if isinstance(user, sim.YieldOp):
                parent = user.parent_op()
                reached = [parent.results[use.index]] if parent is not None else []
            elif isinstance(user, sim.RepeatOp):
                reached = [user.body.block.args[use.index]]
            elif isinstance(user, sim.MatmulOp) and not (use.index == 0 and user.transpose_lhs is None):
                # rows come from the lhs only; a transposed lhs is contracted
                reached = []
            else:
                reached = list(user.results)
            for r in reached:
                if r not in seen and isinstance(r.type, TensorType) and _carries_capacity(r, experts, capacity):
                    seen.add(r)
                    region.append(r)
                    work.append(r)
    return region


def _scale_capacity(region: list[SSAValue], experts: int, capacity: int, new_capacity: int) -> None:
    """Give every [.., experts, capacity, ..] value of the expert region its
    group-wide capacity, so the propagation can split it on the experts:
    [experts, capacity * ep] split ep ways on dim 0."""
    for k, value in enumerate(region):
        dims = list(shape(value))
        for p in range(len(dims) - 1):
            if dims[p] == experts and dims[p + 1] == capacity:
                dims[p + 1] = new_capacity
                region[k] = retype(value, with_shape(value.type, dims))
                break


def _expert_flops(region: list[SSAValue]) -> float:
    """FLOPs of one step of the experts' own ops: those computing or reading the
    expert activations (their weight gradients too), not the dispatch and the
    combine, which read the tokens."""
    ops = {v.owner for v in region if isinstance(v.owner, sim.ComputeOp)}
    ops |= {u.operation for v in region for u in v.uses if isinstance(u.operation, sim.ComputeOp)}
    ops = {o for o in ops if not isinstance(o, (sim.MoeDispatchOp, sim.MoeCombineOp)) and not sim.is_generic(
        o, sim.GenericCallee.MOE_COMBINE_WEIGHT_GRAD)}
    return sum(o.flops() * multiplicity(o) for o in ops)  # pyright: ignore[reportAttributeAccessIssue]


def _expert_optimizer_flops(module: ModuleOp, params: list[sim.ParamOp]) -> float:
    """FLOPs of the optimizer steps on the routed experts' weights."""
    expert_values = {p.result for p in params}
    total = 0.0
    for o in module.walk():
        if isinstance(o, sim.OptimizerStepOp):
            per_element = o.KINDS[o.kind.data]
            total += per_element * sum(sim.numel(v) for v in o.operands if v in expert_values)
    return total


def _token_flops(module: ModuleOp) -> float:
    """FLOPs of one rank's step on its tokens: everything but the optimizer."""
    return sum(
        o.flops() * mult for o, mult in walk_with_multiplicity(module)
        if isinstance(o, sim.ComputeOp) and not isinstance(o, sim.OptimizerStepOp)
    )


@dataclass(frozen=True)
class ShardExpertPass(ModulePass):
    name = "shard-expert"

    ep: int = 1
    etp: int = 1
    capacity_factor: float = 0.0
    dispatcher: Literal["alltoall", "flex"] = "alltoall"
    groups: int = 0
    groups_per_token: int = 0
    routing: Literal["balanced", "random"] = "balanced"

    def _route(self, op: ModuleOp, experts: int, top_k: int, folded: int = 1) -> dict[str, Attribute]:
        """The routing attributes of the a2a ops (see the module docstring)."""
        if (self.groups == 0) != (self.groups_per_token == 0) or self.groups < 0 or not (
            self.groups == 0 or (experts % self.groups == 0 and top_k <= self.groups_per_token
                                 * (experts // self.groups) and self.groups_per_token <= self.groups)
        ):
            raise CharonError(
                f"shard-expert: options 'groups' ({self.groups}) and 'groups-per-token' "
                f"({self.groups_per_token}) must divide the {experts} experts into groups of "
                f"which groups-per-token hold the top-{top_k}"
            )
        route: dict[str, Attribute] = {}
        tp = grid_axes(op).get("tp", 1)
        if tp > 1 and folded == 1:
            route["token_replicas"] = IntegerAttr(tp, 64)
        if self.dispatcher == "flex":
            route["top_k"] = IntegerAttr(top_k, 64)
            if self.groups:
                route["groups"] = IntegerAttr(self.groups, 64)
                route["groups_per_token"] = IntegerAttr(self.groups_per_token, 64)
        return route

    def _folded(self, op: ModuleOp) -> int:
        """The tp ranks folded into the expert group: tp when etp is 1 and
        shard-tensor left the experts whole (`experts=false`), else 1."""
        tp = grid_axes(op).get("tp", 1)
        done = op.attributes.get(EXPERT_TP_ATTR)
        if self.etp == 1 and tp > 1 and done is not None and done.value.data == 1:  # pyright: ignore
            return tp
        return 1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.ep < 1 or self.etp < 1:
            raise CharonError(f"shard-expert: options 'ep' ({self.ep}) and 'etp' ({self.etp}) must be >= 1")
        if self.capacity_factor < 0:
            raise CharonError(f"shard-expert: option 'capacity-factor' must be >= 0, got {self.capacity_factor}")
        refuse_axis_twice(op, "ep", self.name)
        refuse_after_data_parallel(op, self.name)
        dispatches = [d for d in op.walk() if isinstance(d, sim.MoeDispatchOp)]
        if not dispatches:
            raise CharonError("shard-expert: the module has no sim.moe_dispatch (no routed experts)")
        experts, capacity, _ = shape(dispatches[0].result)
        tokens, top_k = shape(dispatches[0].indices)
        if experts % self.ep:
            raise CharonError(
                f"shard-expert: option 'ep' ({self.ep}) does not divide the experts ({experts})"
            )
        weights = []
        layouts = weight_layouts(op)
        for p in op.body.block.ops:
            if isinstance(p, sim.ParamOp):
                dims = expert_weight_dims(p, layouts.get(p.sym_name.data, True))
                if dims is not None:
                    weights.append((p, dims))
                    if dims[1] is not None and shape(p.result)[dims[1]] % self.etp:
                        raise CharonError(
                            f"shard-expert: option 'etp' ({self.etp}) does not divide the expert ffn size "
                            f"({shape(p.result)[dims[1]]}) of '{p.sym_name.data}'"
                        )
        folded = self._folded(op)
        before = _token_flops(op)
        region_flops = optimizer_flops = 0.0
        if self.ep > 1:
            route = self._route(op, experts, top_k, folded)
            new_capacity = capacity
            if self.capacity_factor > 0:
                new_capacity = max(1, ceil(self.capacity_factor * tokens * top_k / experts))
            elif self.routing == "random":
                # the slowest rank's rows: each rank dispatches its 1/folded of the tokens
                load = expected_max_rank_load(self.ep * tokens // folded, top_k, experts, self.ep,
                                              self.groups, self.groups_per_token)
                # rows are whole per source rank: the nearest count, never under the mean
                new_capacity = max(capacity, round(capacity * load / folded) * folded)
            if new_capacity % folded or self.ep % folded:
                raise CharonError(
                    f"shard-expert: etp 1 folds the {folded} tp ranks into the expert group: they must "
                    f"divide option 'ep' ({self.ep}) and the rows per expert ({new_capacity})"
                )
            ensure_axis(op, "ep", self.ep // folded, self.name)
            region = _expert_region(dispatches, experts, capacity)
            optimizer_flops = _expert_optimizer_flops(op, [p for p, _ in weights])
            region_flops = _expert_flops(region) + optimizer_flops
            _scale_capacity(region, experts, capacity, new_capacity * self.ep // folded)
            st = ShardingAnalysis("ep", self.ep, self.name, hints={"experts": {experts}},
                                  group_axes=("ep", "tp") if folded > 1 else ())
            for p, (edim, _) in weights:
                st.assign(p.result, split(edim, self.ep, "experts"))
            propagate(st, op, [
                DispatchToExperts(st, capacity=new_capacity if new_capacity != capacity else 0,
                                  route=route, folded=folded),
                CombineFromExperts(st, cache={}, route=route, folded=folded),
                ShardAttention(st), ShardGeneric(st),
            ])
        ep_flops = _token_flops(op)
        if folded > 1:
            # shard-tensor counted the whole experts' work on the tp group's tokens
            # as replicated on its tp ranks; folded, each rank works on its own rows
            entries = replicated_flops(op)
            record_replicated_flops(op, "shard-tensor", entries.get("shard-tensor", 0.0)
                                    - (folded - 1) * region_flops)
            ep_flops += (1 - 1 / folded) * (region_flops - optimizer_flops)
        if self.etp > 1:
            done = op.attributes.get(EXPERT_TP_ATTR)
            if done is not None:
                if done.value.data != self.etp:  # pyright: ignore[reportAttributeAccessIssue]
                    raise CharonError(
                        f"shard-expert: option 'etp' ({self.etp}) differs from the expert tensor "
                        f"parallelism already applied ({done.value.data})"  # pyright: ignore
                    )
            else:
                ensure_axis(op, "tp", self.etp, self.name)
                # the experts' own tensor parallelism only lays values out: recorded,
                # then materialised, as the ep split above
                tp = ShardingAnalysis("tp", self.etp, self.name, hints={"ffn": set()})
                tp.snapshot(op)
                for p, (_, fdim) in weights:
                    if fdim is None:
                        continue  # a bias added after the down projection's all_reduce
                    tp.hints["ffn"].add(shape(p.result)[fdim])
                    tp.assign(p.result, split(fdim, self.etp, "ffn"))
                propagate(tp, op, [ShardAttention(tp), ShardGeneric(tp)])
                record_replicated_flops(op, f"{self.name}.etp", tp.replicated_flops)
        op.attributes[EXPERT_TP_ATTR] = IntegerAttr(self.etp, 64)
        if self.ep > 1:
            # ep ranks bring their own tokens: the group does ep ranks' work on them
            # with or without expert parallelism, so what is beyond it is capacity
            # padding. The optimizer is left out: each rank updates its own experts,
            # so the group updates every expert once, where ep replicas would have
            # ep times (less work, not replicated work: tests state it apart)
            record_replicated_flops(op, self.name, self.ep * (ep_flops - before))
