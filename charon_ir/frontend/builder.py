"""Assemble the sim module of one step from the traced parts of a model.

    sim.input / sim.param ...                  (module level: step inputs, weights)
    sim.phase "forward"   { stem; sim.repeat per run of layers; head + loss }
    sim.phase "backward"  { head'; sim.repeat {reverse} per run; stem' }
    sim.phase "optimizer" { sim.optimizer_step "adamw" }
or, for serving, one `sim.phase "prefill"` or `"decode"` with the forward only.

A layer's weights are stacked over the layers of its run ([count, ...]) and reach
the layer body as `slices`; the activations a layer saves for its backward leave
the forward repeat stacked the same way and enter the backward repeat as slices.
Saved values that are only views of weights or of loop-invariant inputs are not
stacked: the backward re-derives them from the same weights (a view is free).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import fx
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region, SSAValue

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.frontend.convert import VIEW_OPS, GraphConverter, ImportSummary, Lazy, tensor_type, type_of
from charon_ir.frontend.dedupe import merge_duplicate_saved
from charon_ir.frontend.roles import param_role, weight_split
from charon_ir.frontend.tracing import Primal, TracedModel, TracedPart

INVARIANT_INPUTS = frozenset({"positions", "rope_cos", "rope_sin", "tokens", "labels", "layer_input"})
"""Inputs every part sees unchanged: a saved view of one is re-derived in the
backward, not stacked or yielded. A table per attention kind (Gemma 3's
`rope_cos.sliding_attention`) counts as its kind's; `layer_input.N` are what a
user module's stack passes to every layer besides the hidden state."""


def _view_chain(node: fx.Node) -> tuple[fx.Node, list[fx.Node]]:
    """The placeholder a node is a pure view of, and the view nodes in between
    (root first); (node, []) when it is not a view of a placeholder."""
    chain: list[fx.Node] = []
    cur = node
    while cur.op == "call_function" and hasattr(cur.target, "overloadpacket") and (
        cur.target.overloadpacket.__name__ in VIEW_OPS
    ) and not isinstance(cur.meta.get("val"), (list, tuple)):
        chain.append(cur)
        cur = cur.args[0]
    if cur.op == "placeholder":
        return cur, list(reversed(chain))
    return node, []


@dataclass
class SavedPlan:
    """How the backward gets each value the forward saved."""

    fwd_nodes: list[fx.Node]  # saved nodes, in the order of the fwd outputs
    stacked: list[fx.Node]  # those that must leave the forward as values


def _saved_plan(part: TracedPart, rebindable: set[str]) -> SavedPlan:
    out_node = next(n for n in part.fwd.graph.nodes if n.op == "output")
    saved = [n for n in out_node.args[0][part.num_outputs:] if isinstance(n, fx.Node)]
    placeholders = part.fwd_placeholders()
    stacked = []
    for node in saved:
        root, _ = _view_chain(node)
        if root.op == "placeholder" and part.primals[placeholders.index(root.name)].name in rebindable:
            continue
        if root.op == "placeholder" and part.primals[placeholders.index(root.name)].kind != "input":
            continue
        stacked.append(node)
    return SavedPlan(saved, stacked)


class ModuleBuilder:
    def __init__(self, traced: TracedModel, mode: str):
        self.traced = traced
        self.mode = mode
        self.summary = ImportSummary()
        self.top = Block()
        self.inputs: dict[str, SSAValue] = {}
        self.params: dict[str, SSAValue] = {}  # canonical or stacked name -> value
        self.param_order: list[str] = []
        self.invariant = INVARIANT_INPUTS | {e for e in traced.extras if e.partition(".")[0] in INVARIANT_INPUTS}

    # -- module-level values ------------------------------------------------

    def input(self, name: str, type_: TensorType) -> SSAValue:
        if name not in self.inputs:
            op = sim.InputOp(name, type_, tokens=name == "tokens")
            self.top.add_op(op)
            self.inputs[name] = op.results[0]
        return self.inputs[name]

    def param(self, name: str, type_: TensorType) -> SSAValue:
        if name not in self.params:
            rank = len(type_.get_shape())
            # a stacked parameter is named by its layers' range, `prefix[start:end].local`
            op = sim.ParamOp(name, type_, param_role(name, rank), weight_split(name, rank), stacked="[" in name)
            self.top.add_op(op)
            self.params[name] = op.results[0]
            self.param_order.append(name)
        return self.params[name]

    def primal_value(self, primal: Primal) -> SSAValue:
        t = type_of(primal.tensor)
        if primal.kind == "param":
            return self.param(primal.name, t)
        if primal.kind == "buffer":
            return self.input(f"buffer:{primal.name}", t)
        return self.input(primal.name, t)

    def stacked_name(self, run_start: int, position: int, period: int, end: int, primal: Primal, layer_idx: int) -> str:
        prefix = f"{self.traced.layer_prefix}.{layer_idx}."
        local = primal.name.removeprefix(prefix)
        step = f":{period}" if period > 1 else ""
        return f"{self.traced.layer_prefix}[{run_start + position}:{end}{step}].{local}"

    # -- parts --------------------------------------------------------------

    def bindings(self, part: TracedPart, values: dict[str, SSAValue | Lazy | None]) -> dict[str, SSAValue | Lazy | None]:
        """Placeholder name -> value for the forward graph, from primal names."""
        return {ph: values.get(p.name) for ph, p in zip(part.fwd_placeholders(), part.primals)}

    def run_fwd(self, conv: GraphConverter, part: TracedPart, values: dict[str, SSAValue | Lazy | None]) -> tuple[list[Lazy | None], list[Lazy | None]]:
        outs = conv.run(part.fwd.graph, self.bindings(part, values))
        return outs[: part.num_outputs], outs[part.num_outputs:]

    def run_bwd(
        self,
        conv: GraphConverter,
        part: TracedPart,
        values: dict[str, SSAValue | Lazy | None],
        saved: dict[str, SSAValue],
        tangents: Sequence[SSAValue | None],
    ) -> dict[str, Lazy | None]:
        """Convert the backward graph; returns primal name -> gradient."""
        assert part.bwd is not None
        fwd_nodes = {n.name: n for n in part.fwd.graph.nodes}
        placeholders = part.fwd_placeholders()
        primal_by_ph = dict(zip(placeholders, part.primals))
        bind: dict[str, SSAValue | Lazy | None] = {}
        tangent_iter = iter(tangents)
        replay = GraphConverter(conv.block, ImportSummary())
        for node in part.bwd.graph.nodes:
            if node.op != "placeholder":
                continue
            name = node.name
            if name.startswith("tangents_"):
                bind[name] = next(tangent_iter, None)
            elif name in saved:  # before primals: a saved layer input is per layer
                bind[name] = saved[name]
            elif name in primal_by_ph:
                bind[name] = values.get(primal_by_ph[name].name)
            else:  # a view of a weight or an invariant input: redo the views
                root, chain = _view_chain(fwd_nodes[name])
                replay.bind(root, values[primal_by_ph[root.name].name])
                for view in chain:
                    replay.on_view(view, view.target.overloadpacket.__name__)
                bind[name] = replay.env[fwd_nodes[name]]
        grads = conv.run(part.bwd.graph, bind)
        return {p.name: g for p, g in zip(part.primals, grads)}

    # -- the step ----------------------------------------------------------

    def build(self) -> ModuleOp:
        tm = self.traced
        # inputs and weights outside the layers, in a stable order
        for part in self.outer_parts():
            for p in part.primals:
                if p.kind != "input" or p.name in ("tokens", "positions", "labels"):
                    self.primal_value(p)
        run_slices: list[list[tuple[Primal, str, SSAValue]]] = []
        for run in tm.runs:
            slices = []
            for pos, idx in enumerate(run.period):
                for p in tm.layers[idx].primals:
                    if p.kind == "input":
                        continue
                    stacked_t = tensor_type((run.count, *p.tensor.shape), p.tensor.dtype)
                    name = self.stacked_name(run.start, pos, len(run.period), run.end, p, idx)
                    value = self.param(name, stacked_t) if p.kind == "param" else self.input(f"buffer:{name}", stacked_t)
                    slices.append((p, name, value))
            run_slices.append(slices)
        try:
            if self.mode == "train":
                self.build_train(run_slices)
            else:
                self.build_serving(run_slices)
        except NotImplementedError as e:  # a graph node the converter has no sim op for
            raise CharonError(f"cannot import {tm.name}: no sim op for {e}") from None
        module = ModuleOp(Region(self.top))
        merge_duplicate_saved(module)
        return module

    def outer_parts(self) -> list[TracedPart]:
        """The parts outside the layer repeats: stem, head, and the MTP modules."""
        tm = self.traced
        return [tm.stem, tm.head, *([tm.mtp] if tm.mtp is not None else [])]

    def common_values(self) -> dict[str, SSAValue | Lazy | None]:
        values: dict[str, SSAValue | Lazy | None] = {}
        for part in self.outer_parts():
            for p in part.primals:
                if p.kind == "param":
                    values[p.name] = self.params[p.name]
                elif p.kind == "buffer":
                    values[p.name] = self.inputs[f"buffer:{p.name}"]
                elif p.name in self.inputs:
                    values[p.name] = self.inputs[p.name]
        return values

    def forward_body(self, block: Block, run_slices, keep_saved: bool):
        """Stem, layer repeats and head into `block`; returns (head outputs, saved values to yield, bookkeeping)."""
        tm = self.traced
        conv = GraphConverter(block, self.summary)
        values = self.common_values()
        stem_outs, stem_saved = self.run_fwd(conv, tm.stem, values)
        hidden = conv.materialize(stem_outs[0])
        for name, entry in zip(tm.extras, stem_outs[1:]):
            values[name] = conv.materialize(entry)
        yielded: list[SSAValue] = []
        record: dict = {"stem_saved": [], "runs": [], "head_saved": [], "mtp_saved": [], "mtp_loss": None}
        if keep_saved:
            plan = _saved_plan(tm.stem, self.invariant)
            for node in plan.stacked:
                idx = plan.fwd_nodes.index(node)
                record["stem_saved"].append((node.name, len(yielded)))
                yielded.append(conv.materialize(stem_saved[idx]))
        for run, slices in zip(tm.runs, run_slices):
            body = Block(arg_types=[hidden.type, *[self._slice_type(v) for _, _, v in slices]])
            body_conv = GraphConverter(body, self.summary)
            h: SSAValue = body.args[0]
            arg_iter = iter(body.args[1:])
            per_iter: list[SSAValue] = []
            run_record = []
            for pos, idx in enumerate(run.period):
                part = tm.layers[idx]
                local = dict(values)
                for p in part.primals:
                    if p.kind != "input":
                        local[p.name] = next(arg_iter)
                local["hidden"] = h
                outs, saved = self.run_fwd(body_conv, part, local)
                h = body_conv.materialize(outs[0])
                if keep_saved:
                    plan = _saved_plan(part, self.invariant)
                    names = []
                    for node in plan.stacked:
                        names.append(node.name)
                        per_iter.append(body_conv.materialize(saved[plan.fwd_nodes.index(node)]))
                    run_record.append(names)
            body.add_op(sim.YieldOp(h, *per_iter))
            repeat = sim.RepeatOp(
                run.count, [hidden], [v for _, _, v in slices], Region(body),
                [hidden.type, *[self._stacked_type(run.count, v) for v in per_iter]],
            )
            block.add_op(repeat)
            hidden = repeat.results[0]
            record["runs"].append((run_record, len(yielded)))
            yielded.extend(repeat.results[1:])
        values["hidden"] = hidden
        head_outs, head_saved = self.run_fwd(conv, tm.head, values)
        if keep_saved:
            plan = _saved_plan(tm.head, self.invariant)
            for node in plan.stacked:
                record["head_saved"].append((node.name, len(yielded)))
                yielded.append(conv.materialize(head_saved[plan.fwd_nodes.index(node)]))
        if tm.mtp is not None and keep_saved:
            # the multi-token-prediction modules read the stack's output too
            mtp_outs, mtp_saved = self.run_fwd(conv, tm.mtp, values)
            record["mtp_loss"] = conv.materialize(mtp_outs[0])
            plan = _saved_plan(tm.mtp, self.invariant)
            for node in plan.stacked:
                record["mtp_saved"].append((node.name, len(yielded)))
                yielded.append(conv.materialize(mtp_saved[plan.fwd_nodes.index(node)]))
        return conv, head_outs, yielded, record, values

    @staticmethod
    def _slice_type(stacked: SSAValue) -> TensorType:
        t = stacked.type
        assert isinstance(t, TensorType)
        return TensorType(t.element_type, list(t.get_shape())[1:])

    @staticmethod
    def _stacked_type(count: int, v: SSAValue) -> TensorType:
        t = v.type
        assert isinstance(t, TensorType)
        return TensorType(t.element_type, [count, *t.get_shape()])

    def build_serving(self, run_slices) -> None:
        block = Block()
        conv, head_outs, _, _, _ = self.forward_body(block, run_slices, keep_saved=False)
        logits = conv.materialize(head_outs[0])
        block.add_op(sim.YieldOp(logits))
        self.top.add_op(sim.PhaseOp(self.mode, Region(block), [logits.type]))

    def build_train(self, run_slices) -> None:
        tm = self.traced
        fwd_block = Block()
        conv, head_outs, yielded, record, values = self.forward_body(fwd_block, run_slices, keep_saved=True)
        loss = conv.materialize(head_outs[0])
        if record["mtp_loss"] is not None:
            total = sim.ElementwiseOp(sim.ElementwiseKind.ADD, [loss, record["mtp_loss"]], loss.type)
            fwd_block.add_op(total)
            loss = total.results[0]
        # values the layers read besides their weights (RoPE cos/sin) live inside
        # the forward phase: the backward sees them only as the phase's results
        extras = [values[name] for name in tm.extras]
        first_extra = len(yielded)
        yielded = [*yielded, *extras]
        fwd_block.add_op(sim.YieldOp(loss, *yielded))
        fwd = sim.PhaseOp(sim.PhaseKind.FORWARD, Region(fwd_block), [loss.type, *[v.type for v in yielded]])
        self.top.add_op(fwd)
        saved_results = fwd.results[1:]
        values = dict(values)
        for i, name in enumerate(tm.extras):
            values[name] = saved_results[first_extra + i]

        grad_loss = self.input("grad_loss", loss.type)  # d(loss)/d(loss): 1, or the loss scale
        # the phase value was created after the phase op; move the input before it
        grad_loss.owner.detach()
        self.top.insert_op_before(grad_loss.owner, fwd)

        bwd_block = Block()
        bconv = GraphConverter(bwd_block, self.summary)
        grads: dict[str, list[SSAValue]] = {}

        def add_grad(name: str, g: Lazy | None, conv_: GraphConverter) -> None:
            if g is not None:
                grads.setdefault(name, []).append(conv_.materialize(g))

        head_saved = {name: saved_results[i] for name, i in record["head_saved"]}
        head_grads = self.run_bwd(bconv, tm.head, values, head_saved, [grad_loss])
        for p in tm.head.primals:
            if p.kind == "param":
                add_grad(p.name, head_grads[p.name], bconv)
        dh = bconv.materialize(head_grads["hidden"])
        if tm.mtp is not None:
            mtp_saved = {name: saved_results[i] for name, i in record["mtp_saved"]}
            mtp_grads = self.run_bwd(bconv, tm.mtp, values, mtp_saved, [grad_loss])
            for p in tm.mtp.primals:
                if p.kind == "param":
                    add_grad(p.name, mtp_grads[p.name], bconv)
            both = sim.ElementwiseOp(sim.ElementwiseKind.ADD, [dh, bconv.materialize(mtp_grads["hidden"])], dh.type)
            bwd_block.add_op(both)
            dh = both.results[0]

        for run, slices, (run_record, first) in reversed(list(zip(tm.runs, run_slices, record["runs"]))):
            stacked_saved = [saved_results[first + i] for i in range(sum(len(r) for r in run_record))]
            body = Block(arg_types=[dh.type, *[self._slice_type(v) for _, _, v in slices], *[self._slice_type(v) for v in stacked_saved]])
            body_conv = GraphConverter(body, self.summary)
            n_slices = len(slices)
            slice_args = list(body.args[1: 1 + n_slices])
            saved_args = list(body.args[1 + n_slices:])
            # per period position: its params' block args and its saved block args
            pos_params: list[dict[str, SSAValue]] = []
            it = iter(slice_args)
            for idx in run.period:
                pos_params.append({p.name: next(it) for p in tm.layers[idx].primals if p.kind != "input"})
            pos_saved: list[dict[str, SSAValue]] = []
            it2 = iter(saved_args)
            for names in run_record:
                pos_saved.append({n: next(it2) for n in names})
            g = body.args[0]
            per_iter_grads: dict[tuple[int, str], SSAValue] = {}
            for pos in reversed(range(len(run.period))):
                part = tm.layers[run.period[pos]]
                local = dict(values)
                local.update(pos_params[pos])
                part_grads = self.run_bwd(body_conv, part, local, pos_saved[pos], [g])
                g = body_conv.materialize(part_grads["hidden"])
                for p in part.primals:
                    if p.kind == "param" and part_grads[p.name] is not None:
                        per_iter_grads[(pos, p.name)] = body_conv.materialize(part_grads[p.name])
            ordered = []
            names = []
            # slices are in (position, primal) order; keep that order for the grads
            k = 0
            for pos, idx in enumerate(run.period):
                for p in tm.layers[idx].primals:
                    if p.kind == "input":
                        continue
                    _, stacked_name, _ = slices[k]
                    k += 1
                    if (pos, p.name) in per_iter_grads:
                        ordered.append(per_iter_grads[(pos, p.name)])
                        names.append(stacked_name)
            body.add_op(sim.YieldOp(g, *ordered))
            repeat = sim.RepeatOp(
                run.count, [dh], [v for _, _, v in slices] + stacked_saved, Region(body),
                [dh.type, *[self._stacked_type(run.count, v) for v in ordered]], reverse=True,
            )
            bwd_block.add_op(repeat)
            dh = repeat.results[0]
            for name, r in zip(names, repeat.results[1:]):
                grads.setdefault(name, []).append(r)

        stem_saved = {name: saved_results[i] for name, i in record["stem_saved"]}
        tangents: list[SSAValue | None] = [dh]
        stem_grads = self.run_bwd(bconv, tm.stem, values, stem_saved, tangents)
        for p in tm.stem.primals:
            if p.kind == "param":
                add_grad(p.name, stem_grads[p.name], bconv)

        # a weight used twice (tied embedding and LM head) sums its gradients
        final: list[tuple[str, SSAValue]] = []
        for name in self.param_order:
            parts = grads.get(name)
            if not parts:
                continue
            total = parts[0]
            for extra in parts[1:]:
                add = sim.ElementwiseOp(sim.ElementwiseKind.ADD, [total, extra], total.type)
                bwd_block.add_op(add)
                total = add.results[0]
            final.append((name, total))
        bwd_block.add_op(sim.YieldOp(*[g for _, g in final]))
        bwd = sim.PhaseOp(sim.PhaseKind.BACKWARD, Region(bwd_block), [g.type for _, g in final])
        self.top.add_op(bwd)

        opt_block = Block()
        # (variadic results, if the op has them, are left empty: nothing in one
        # step reads the updated weights)
        n_results = len(sim.OptimizerStepOp.get_irdl_definition().results)
        opt_block.add_op(sim.OptimizerStepOp.build(
            operands=[[self.params[n] for n, _ in final], list(bwd.results)],
            result_types=[[]] * n_results,
            properties={"kind": sim.OptimizerKindAttr(sim.OptimizerKind.ADAMW)},
        ))
        opt_block.add_op(sim.YieldOp())
        self.top.add_op(sim.PhaseOp(sim.PhaseKind.OPTIMIZER, Region(opt_block)))
