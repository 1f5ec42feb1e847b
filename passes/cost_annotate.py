"""
Price every compute op and collective: attach `sim.cost = #sim.cost<...>` with the
time, FLOPs, bytes and the engine that priced it.

Options:
- engines: the fallback chain, tried in order (default `analytic`; e.g.
  `engines=db,predict,analytic`). An op no engine knows is an error.
- fp8-gemms: the GEMMs run on the fp8 tensor cores while the IR, traced in
  bf16, says bf16 (Transformer Engine's `fp8_autocast` in training, FP8 GEMMs in
  serving): every `sim.matmul` is priced by the analytic engine on the GPU's fp8
  rate, its one-byte operands at twice the HBM bandwidth; everything else as
  the engines say. A GPU without fp8 tensor cores is an error (default false).
- fp8-casts: with fp8-gemms, Transformer Engine's fp8 training: the layers' GEMMs
  (inside a `sim.repeat`) run in fp8 and each carries TE's cast and transpose
  kernels (`analytic.fp8_cast_time_s`: 2 bytes of HBM traffic per operand
  element); the GEMMs outside the layers (the output layer: llm-foundry's tied
  head, Megatron-Core's `output_layer`, not TE modules) stay 16-bit. Serving's
  fp8 weights and activations are not cast per GEMM (default false).
- fp8-recipe: with fp8-casts, how the casts find their scales: `delayed` (amax
  history: one pass), `current` (the tensor's own amax first: one more read),
  `mxfp8` or `blockwise` (block scales written beside the data); bytes per
  operand element in `analytic.FP8_CAST_BYTES_PER_OPERAND_ELEMENT` (default delayed).
- fp8-weight-casts: with fp8-casts, how often a GEMM's weight operand (a
  `sim.param`, or ZeRO's gathered `param_unpack`) is cast: `every` run (default;
  TE with `is_first_microbatch=None`, as llm-foundry calls it), `first-microbatch`
  (Megatron-Core's TE wrappers pass `is_first_microbatch`, set on each chunk's
  first micro-batch of a step by `set_is_first_microbatch`, and TE keeps the fp8
  weight and its transpose for the later ones: 1 / microbatches of the cast per
  run, microbatches from the module's `#sim.pipeline`), or `none` (fp8 parameters,
  `--fp8-param-gather`: the weights are stored in fp8, cast by the optimizer step,
  and TE reads them as they are).

Ops inside a `sim.repeat` are priced once: the cost is per iteration. On a
cluster of several node kinds each `sim.stage` is priced on the GPU and links of
its `node_kind` (set-target), and a collective over `pp` (a pipeline send, the
tied embedding's all-reduce) on the slowest links of the stages' kinds. Compute ops
are priced before collectives: a collective overlapped with GEMMs
(`--tp-comm-overlap`) is timed against the GEMMs' prices, whichever engine gave them.
"""

from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from charon_ir.dialects.coll import CollectiveOp
from charon_ir.dialects.sim import (
    COST_ATTR,
    NODE_KIND_ATTR,
    PIPELINE_ATTR,
    ComputeOp,
    CostAttr,
    GenericCallee,
    GenericOp,
    MatmulOp,
    ParamOp,
    PipelineAttr,
    RepeatOp,
    StageOp,
    is_generic,
    repeat_source,
)
from charon_ir.engines.analytic import FP8_RECIPES, AnalyticEngine, fp8_cast_time_s, fp8_gemm_target
from charon_ir.engines.base import ENGINES, CostEngine
from charon_ir.errors import CharonError
from charon_ir.target.target import Target


@dataclass
class PriceOp(RewritePattern):
    """Annotate one unpriced op of `kinds` with the first engine's answer."""

    engines: tuple[CostEngine, ...]
    target: Target
    kinds: tuple[type, ...] = (ComputeOp, CollectiveOp)
    across_stages: Target | None = None
    """Where stages sit on different node kinds: the target of collectives over `pp`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.kinds) or COST_ATTR in op.attributes:
            return
        target = self.target
        if self.across_stages is not None and isinstance(op, CollectiveOp) and "pp" in op.axis_names():
            target = self.across_stages
        for engine in self.engines:
            cost = engine.price(op, target)
            if cost is not None:
                op.attributes[COST_ATTR] = CostAttr(
                    cost.time_s, cost.flops, cost.bytes, cost.engine
                )
                rewriter.handle_operation_modification(op)
                return
        names = ",".join(e.name for e in self.engines)
        raise CharonError(f"cost-annotate: no engine of '{names}' can price {op.name}")


@dataclass
class PriceFp8Gemm(RewritePattern):
    """Annotate one unpriced GEMM with the analytic engine's time on the fp8
    tensor cores (`fp8_gemm_target`), plus, with `casts`, the cast and transpose
    kernels of its operands on the 16-bit `target`."""

    fp8_target: Target
    target: Target
    casts: bool = False
    recipe: str = "delayed"
    weight_share: float = 1.0
    """The part of a weight operand's cast paid per run (`fp8-weight-casts`)."""
    engine: AnalyticEngine = field(default_factory=AnalyticEngine)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, MatmulOp) or COST_ATTR in op.attributes:
            return
        if self.casts and not _in_layers(op):
            return  # not a TE module: priced 16-bit by the engines
        cost = self.engine.price_compute(op, self.fp8_target)
        time_s, nbytes = cost.time_s, cost.bytes
        if self.casts:
            shares = (self.weight_share if _is_weight(op.lhs) else 1.0,
                      self.weight_share if _is_weight(op.rhs) else 1.0)
            cast_s, cast_bytes = fp8_cast_time_s(op, self.target.gpu, self.recipe, shares)
            time_s, nbytes = time_s + cast_s, nbytes + cast_bytes
        op.attributes[COST_ATTR] = CostAttr(time_s, cost.flops, nbytes, cost.engine)
        rewriter.handle_operation_modification(op)


def _is_weight(value: SSAValue) -> bool:
    """Whether a GEMM operand is a model weight: a `sim.param`, a layer's slice of
    one (a `sim.repeat` block argument), or ZeRO's gathered copy (`param_unpack`)."""
    source = repeat_source(value)
    return source is not None and (
        isinstance(source.owner, ParamOp) or is_generic(source.owner, GenericCallee.PARAM_UNPACK))


def _in_layers(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, RepeatOp):
            return True
        parent = parent.parent_op()
    return False


@dataclass(frozen=True)
class CostAnnotatePass(ModulePass):
    name = "cost-annotate"

    engines: tuple[str, ...] | str = ("analytic",)
    fp8_gemms: bool = False
    fp8_casts: bool = False
    fp8_recipe: str = "delayed"
    fp8_weight_casts: Literal["every", "first-microbatch", "none"] = "every"

    def engine_chain(self) -> tuple[CostEngine, ...]:
        names = (self.engines,) if isinstance(self.engines, str) else self.engines
        chain = []
        for n in names:
            if n not in ENGINES:
                raise CharonError(
                    f"cost-annotate: option 'engines': unknown engine '{n}' "
                    f"(known: {', '.join(ENGINES)})"
                )
            chain.append(ENGINES[n]()())
        return tuple(chain)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        chain = self.engine_chain()
        target = Target.from_module(op)
        if self.fp8_casts and not self.fp8_gemms:
            raise CharonError("cost-annotate: option 'fp8-casts' needs fp8-gemms=true")
        if self.fp8_recipe not in FP8_RECIPES:
            raise CharonError(f"cost-annotate: option 'fp8-recipe' must be one of "
                              f"{', '.join(FP8_RECIPES)}, got '{self.fp8_recipe}'")
        placed = [s for s in op.body.block.ops
                  if isinstance(s, StageOp) and NODE_KIND_ATTR in s.attributes]
        if not target.heterogeneous or not placed:
            self.price(op.body, chain, target)
            return
        kinds = tuple(dict.fromkeys(_node_kind(s) for s in placed))
        assert target.cluster is not None
        for stage in placed:
            if _node_kind(stage) not in target.cluster.kind_names():
                raise CharonError(
                    f"cost-annotate: sim.stage {list(stage.stage_ids())}: {NODE_KIND_ATTR} "
                    f"'{_node_kind(stage)}' is no kind of cluster '{target.cluster.name}' "
                    f"(kinds: {', '.join(target.cluster.kind_names())})")
        for stage in placed:
            own = target.on_node_kind(_node_kind(stage))
            self.price(stage.body, chain, own, target.across(kinds, own.gpu))
        self.price(op.body, chain, target)  # anything outside the stages

    def weight_share(self, region: Region) -> float:
        """The part of a weight's fp8 cast paid per GEMM run (`fp8-weight-casts`)."""
        if self.fp8_weight_casts == "none":
            return 0.0
        module = region.parent_op()
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op()
        pipeline = module.attributes.get(PIPELINE_ATTR) if module is not None else None
        if self.fp8_weight_casts == "first-microbatch" and isinstance(pipeline, PipelineAttr):
            return 1 / pipeline.microbatches.data
        return 1.0

    def price(self, region: Region, chain: tuple[CostEngine, ...], target: Target,
              across_stages: Target | None = None) -> None:
        # compute first: a collective overlapped with GEMMs (--tp-comm-overlap)
        # is priced by the GEMMs' own times, whichever engine gave them
        compute: list[RewritePattern] = [PriceOp(chain, target, (ComputeOp,))]
        if self.fp8_gemms:
            fp8_target = fp8_gemm_target(target, "cost-annotate: option 'fp8-gemms'")
            compute.insert(0, PriceFp8Gemm(fp8_target, target, self.fp8_casts, self.fp8_recipe,
                                           self.weight_share(region)))
        for patterns in (compute, [PriceOp(chain, target, across_stages=across_stages)]):
            PatternRewriteWalker(
                GreedyRewritePatternApplier(patterns, dce_enabled=False),
                apply_recursively=False,
            ).rewrite_region(region)


def _node_kind(stage: StageOp) -> str:
    kind = stage.node_kind()
    if kind is None:  # the stage's verifier refuses it in parsed IR; this is built IR
        raise CharonError(f"cost-annotate: a sim.stage's '{NODE_KIND_ATTR}' must be a node kind's name")
    return kind
