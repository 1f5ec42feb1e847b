"""
Megatron tensor parallelism on the `tp` axis of `coll.grid @mesh`.

Options:
- tp: ranks in a tensor-parallel group (default 1: nothing to do).
- experts: split the routed experts' ffn dim too (default true: Megatron-Core's
  default expert tensor parallelism, `--expert-tensor-parallel-size` = tp); false
  leaves them whole, for `shard-expert{etp=1}` to fold the tp ranks into the
  expert-parallel group (Megatron-Bridge's MoE recipes, etp 1).

Weights are split by the role and split the frontend gave them (`#sim.role<...>`,
`#sim.split<...>`), never by their names: q/k/v, gate and up projections
column-wise (output features), output and down projections row-wise (input
features), the embedding and the LM head on the vocabulary, MoE experts on their
ffn dim; norms, routers and low-rank projections (MLA's q_a/kv_a) have no split
and stay whole. Weights stacked by
a `sim.repeat` ([layers, ...]) are split on the same dim one further. From there
the split propagates (`charon_ir.parallel.sharding`): activations between a
column- and a row-parallel matmul are split on heads or the ffn dim, attention
runs on the local heads, and a row-parallel matmul leaves a partial sum that is
all-reduced where something other than a sum reads it; in the backward the input
gradients of the column-parallel matmuls are all-reduced the same way. The
propagation only records these layouts (`ShardingAnalysis.plan`, no IR change);
rewrite patterns then give each value its per-rank type and insert the
collectives (`charon_ir.parallel.sharding.materialise`).

GQA: with tp larger than the kv heads, each rank keeps one kv head (shared by
tp / kv_heads ranks; the duplicated k/v work is reported as replicated, and the
gradient of a shared head is all-reduced over the whole tp group, a slight
overestimate of its true group of tp / kv_heads ranks). The vocabulary-parallel
cross-entropy all-reduces its per-token max, sum of exponentials and target logit
(fp32) instead of gathering the logits. A vocabulary tp does not divide is padded
to a multiple of 128 * tp, as Megatron does. Weights read as [in, out] (GPT-2's
Conv1D) are split on the matching dims.

The work left whole on every rank is recorded in `sim.replicated_flops`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.passes import ModulePass

from charon_ir.dialects import sim
from charon_ir.dialects.sim import EXPERT_TP_ATTR, ParamRole, TENSOR_PARALLEL_ATTR, WeightSplit
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import record_replicated_flops
from charon_ir.parallel.experts import expert_weight_dims
from charon_ir.parallel.mesh import ensure_axis, find_grid
from charon_ir.parallel.sharding.analysis import ShardingAnalysis
from charon_ir.parallel.sharding.layout import Shard, retype, shape, split, weight_layouts, with_shape
from charon_ir.parallel.sharding.materialise import materialise
from charon_ir.parallel.sharding.propagation import analyse, tally_replicated
from charon_ir.parallel.sharding.rules import ShardAttention, ShardGeneric


@dataclass(frozen=True)
class WeightRule:
    dim: int
    tag: str


def weight_rule(param: sim.ParamOp, out_first: bool = True) -> WeightRule | None:
    """Where tensor parallelism splits `param`, from its role and split (set by
    the frontend, `#sim.role<...>` and `#sim.split<...>`): the embedding and the
    head on the vocabulary, a column weight (and its bias) on its output
    features, a row weight on its input features, a routed expert on its ffn
    dim; heads for attention weights, the ffn otherwise. `out_first`: the weight
    is [out, in] (nn.Linear, used with transpose_rhs); False for GPT-2's Conv1D
    [in, out]."""
    role, split = param.param_role(), param.weight_split()
    lead = 1 if param.is_stacked() else 0
    if role in (ParamRole.EMBEDDING, ParamRole.HEAD):
        return WeightRule(lead, "vocab")
    if role == ParamRole.EXPERT:
        # HF's stacked experts (gate_up_proj [E, 2I, h], down_proj [E, h, I], or
        # [E, h, 2I] and [E, I, h] read [in, out]) and their biases ([E, 2I] split,
        # [E, h] added after the all_reduce, whole)
        dims = expert_weight_dims(param, out_first)
        return None if dims is None or dims[1] is None else WeightRule(dims[1], "ffn")
    if split is None:
        return None
    tag = "heads" if role == ParamRole.ATTENTION else "ffn"
    bias = len(shape(param.result)) - lead == 1
    out_dim, in_dim = (lead, lead + 1) if out_first else (lead + 1, lead)
    if split in (WeightSplit.COLUMN, WeightSplit.KV):
        return WeightRule(lead if bias else out_dim, tag)
    return None if bias else WeightRule(in_dim, tag)


def pad_vocabulary(module: ModuleOp, vocab: int, padded: int) -> None:
    """Megatron pads the vocabulary to a multiple of 128 * tp: every tensor with a
    vocabulary dim (tables, logits, their gradients) gets the padded size."""

    def pad(value) -> None:
        t = value.type
        if isinstance(t, TensorType) and vocab in t.get_shape():
            retype(value, with_shape(t, [padded if d == vocab else d for d in t.get_shape()]))

    for op in module.walk():
        for r in op.results:
            pad(r)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    pad(arg)


def model_dims(module: ModuleOp) -> dict[str, int]:
    """Heads, kv heads of the first attention op; 0 when there is none."""
    for op in module.walk():
        if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp)):
            return {"heads": shape(op.q)[2], "kv_heads": shape(op.k)[2], "seq": shape(op.q)[1]}
    return {"heads": 0, "kv_heads": 0, "seq": 0}


def _refuse_a_second_run(module: ModuleOp) -> None:
    """A second shard-tensor split the split shapes again (a hand-written rank
    of TP 8 became 64-way). A tp axis that shard-expert{etp} added first is not
    one: shard-tensor then shards the rest of the model."""
    grid = find_grid(module)
    tp_axis = grid is not None and "tp" in grid.axis_sizes()
    if TENSOR_PARALLEL_ATTR in module.attributes or (tp_axis and EXPERT_TP_ATTR not in module.attributes):
        raise CharonError("shard-tensor: the module is already sharded along grid axis 'tp'")


@dataclass(frozen=True)
class ShardTensorPass(ModulePass):
    name = "shard-tensor"

    tp: int = 1
    experts: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.tp < 1:
            raise CharonError(f"shard-tensor: option 'tp' must be >= 1, got {self.tp}")
        if self.tp == 1:
            return
        st = self.analyse(op)
        materialise(st.plan, op)
        tally_replicated(st, op)
        record_replicated_flops(op, self.name, st.replicated_flops)
        op.attributes[TENSOR_PARALLEL_ATTR] = IntegerAttr(self.tp, 64)

    def analyse(self, op: ModuleOp) -> ShardingAnalysis:
        """The tp grid axis, the padded vocabulary and the weights' splits, then
        the propagation's record of every value's layout (no other IR change)."""
        tp = self.tp
        _refuse_a_second_run(op)
        dims = model_dims(op)
        heads, kv_heads = dims["heads"], dims["kv_heads"]
        if heads and heads % tp:
            raise CharonError(
                f"shard-tensor: option 'tp' ({tp}) does not divide the attention heads ({heads})"
            )
        kv_factor = tp
        if kv_heads and kv_heads % tp:
            if tp % kv_heads:
                raise CharonError(
                    f"shard-tensor: option 'tp' ({tp}) neither divides nor is a multiple of "
                    f"the kv heads ({kv_heads})"
                )
            kv_factor = kv_heads  # each kv head lives on tp / kv_heads ranks
        ensure_axis(op, "tp", tp, self.name)
        st = ShardingAnalysis("tp", tp, self.name)
        st.snapshot(op)
        layouts = weight_layouts(op)
        vocab = next(
            (shape(p.result)[-2] for p in op.body.block.ops if isinstance(p, sim.ParamOp)
             and p.param_role() in (ParamRole.EMBEDDING, ParamRole.HEAD) and not p.is_stacked()),
            0,
        )
        if vocab % tp:
            # as Megatron's --make-vocab-size-divisible-by 128: the padding rows are
            # work each rank does beyond the model's (reported as replicated)
            pad_vocabulary(op, vocab, -(-vocab // (128 * tp)) * 128 * tp)
        seeds: list[tuple[sim.ParamOp, Shard]] = []
        experts_settled = op.attributes.get(EXPERT_TP_ATTR) is not None or not self.experts
        if not self.experts and op.attributes.get(EXPERT_TP_ATTR) is None:
            op.attributes[EXPERT_TP_ATTR] = IntegerAttr(1, 64)
        sizes: dict[str, set[int]] = {"heads": {heads, kv_heads} - {0}}
        for param in op.body.block.ops:
            if not isinstance(param, sim.ParamOp):
                continue
            name = param.sym_name.data
            full = shape(param.result)
            rule = weight_rule(param, layouts.get(name, True))
            if rule is None:
                continue
            if experts_settled and expert_weight_dims(param) is not None:
                continue  # shard-expert chose the experts' tensor parallelism (etp)
            factor = kv_factor if param.weight_split() == WeightSplit.KV else tp
            if factor == 1:
                continue  # a single kv head (MQA): every rank keeps it whole
            if full[rule.dim] % factor:
                what = {"vocab": "the vocabulary", "ffn": "the ffn hidden size"}.get(rule.tag, f"dim {rule.dim}")
                raise CharonError(
                    f"shard-tensor: option 'tp' ({tp}) does not divide {what} ({full[rule.dim]}) "
                    f"of '{name}'"
                )
            sizes.setdefault(rule.tag, set()).add(full[rule.dim])
            seeds.append((param, split(rule.dim, factor, rule.tag)))
        if not seeds:
            # adding the grid alone would report a TP run identical to tp=1
            names = [p.sym_name.data for p in op.body.block.ops if isinstance(p, sim.ParamOp)]
            raise CharonError(
                f"shard-tensor: option 'tp' ({tp}) splits no weight: none has a split "
                f"(#sim.split<column|kv|row>) or the role embedding, head or expert (the frontend "
                f"sets them); the module's: "
                f"{', '.join(names[:6]) or 'none'}{', ...' if len(names) > 6 else ''}"
            )
        st.hints = sizes
        for param, s in seeds:
            st.assign(param.result, s)
        if op.attributes.get(EXPERT_TP_ATTR) is None and any(
            expert_weight_dims(p) for p, _ in seeds
        ):
            op.attributes[EXPERT_TP_ATTR] = IntegerAttr(tp, 64)
        vocab_split = any(s.tag == "vocab" and s.dim is not None for _, s in seeds)
        split_results = {}
        if vocab_split:
            # the embedding's weight gradient: each rank scatters into its rows (not
            # the position embedding's: that table stays whole)
            tables = {shape(p.result)[0] for p, s in seeds if s.tag == "vocab"}
            split_results["aten.embedding_dense_backward"] = (
                lambda g: split(0, tp, "vocab") if shape(g.results[0])[0] in tables else None
            )
        analyse(st, op, [ShardAttention(st), ShardGeneric(st, split_results=split_results)])
        return st
