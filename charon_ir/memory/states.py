"""Model states of one stage: parameters, gradients and optimizer states, sharded
over data parallelism as ZeRO says (Rajbhandari et al. 2020).

Mixed precision as in the ZeRO paper and Megatron-LM: bf16 parameters (the IR's
element type, 2 B), bf16 gradients (GRAD_BYTES = 2, the paper's 2 + 2 + 12 = 16 B
per parameter; Megatron's fp32 gradient accumulation is `grad_bytes=4`), and for
Adam an fp32 master copy, m and v (12 B per parameter).

ZeRO stage 1 divides the optimizer states by dp, stage 2 also the gradients,
stage 3 also the parameters of the layers (those outside the layers, such as
the embedding, are gathered after the step and stay whole). The data-parallel
pass records dp and the stage on the module (`sim.data_parallel = #sim.data_parallel<dp = 4,
zero = 1, ...>`) and leaves the parameter types whole (the optimizer step reads `zero_shard` slices of them,
traced back here to the whole parameter); without that attribute dp = 1, zero = 0.
With expert parallelism the ep ranks are data-parallel replicas of everything but
the routed experts: dense states shard over dp x ep, expert states over dp.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue

from charon_ir.dialects import sim
from charon_ir.dialects.sim import DATA_PARALLEL_ATTR
from charon_ir.memory.tensors import is_alias_op, value_bytes
from charon_ir.parallel.experts import is_expert_weight
from charon_ir.parallel.mesh import context_parallel, grid_axes

GRAD_BYTES = 2
OPTIMIZER_STATE_BYTES: dict[sim.OptimizerKind, int] = {
    sim.OptimizerKind.ADAMW: 12, sim.OptimizerKind.ADAM: 12, sim.OptimizerKind.SGD: 8,
}
"""Per trainable parameter: fp32 master + m + v for Adam; master + momentum for SGD."""


@dataclass(frozen=True)
class DataParallel:
    dp: int = 1
    zero: int = 0
    ep: int = 1
    cp: int = 1
    """Context-parallel ranks hold whole weights: ZeRO shards over dp x cp."""

    @property
    def dense_replicas(self) -> int:
        """The group the dense weights' states shard over (data-parallel's)."""
        return self.dp * self.ep * self.cp

    @property
    def expert_replicas(self) -> int:
        return self.dp * self.cp

    @staticmethod
    def from_module(module: ModuleOp) -> DataParallel:
        attr = module.attributes.get(DATA_PARALLEL_ATTR)
        if not isinstance(attr, sim.DataParallelAttr):
            return DataParallel()
        axes = grid_axes(module)
        return DataParallel(attr.dp.data, attr.zero.data, axes.get("ep", 1), context_parallel(axes))


@dataclass(frozen=True)
class ModelStates:
    params: int
    grads: int
    optimizer: int
    trainable_elements: int


def is_layer_gemm_weight(param: SSAValue) -> bool:
    """Whether a parameter is a layer's GEMM weight: sliced into a `sim.repeat`
    whose body reads it (through views) as a `sim.matmul` operand, as a
    Transformer Engine linear's weight is (the embedding, the head and the norms
    are not TE modules' fp8 weights)."""

    def read_by_matmul(value: SSAValue) -> bool:
        for use in value.uses:
            op = use.operation
            if isinstance(op, sim.MatmulOp) or is_alias_op(op) and read_by_matmul(op.results[0]):
                return True
        return False

    for use in param.uses:
        rep = use.operation
        if isinstance(rep, sim.RepeatOp) and read_by_matmul(rep.body.block.args[use.index]):
            return True
    return False


def _unsharded(param: SSAValue) -> SSAValue:
    """The whole parameter behind a ZeRO shard the data-parallel pass feeds to
    the optimizer step (the stage divides by dp itself)."""
    owner = param.owner
    if isinstance(owner, sim.GenericOp) and owner.calls(sim.GenericCallee.ZERO_SHARD):
        return owner.inputs[list(owner.outputs).index(param)]
    return param


MASTER_BYTES = 4
"""The fp32 master copy among a parameter's optimizer states (OPTIMIZER_STATE_BYTES)."""

UNSHARDED_GRAD_BYTES = 4
"""FSDP2 accumulates a gradient it does not reduce yet in its reduce dtype
(`FSDPParam.to_accumulated_grad_if_needed`), fp32 under torchtitan's
`mixed_precision_reduce = "float32"`."""


@dataclass(frozen=True)
class StateBytes:
    """Per tensor the model states hold: parameter value -> bytes per rank."""

    params: dict[SSAValue, int]
    """Every parameter the block declares (the whole stack of a layer weight)."""
    gathered: dict[SSAValue, int]
    """Of `params`: the gathered copy ZeRO-3 keeps beside the shard
    (`zero3_keep_gathered`)."""
    grads: dict[SSAValue, int]
    optimizer: dict[SSAValue, int]
    """Of the trainable parameters (those the optimizer phase updates)."""
    optimizer_tensors: dict[SSAValue, int]
    """How many fp32 tensors a trainable parameter's optimizer states are (Adam:
    master, m and v; m and v when the shard is the master copy)."""
    masters: frozenset[SSAValue] = frozenset()
    """The trainable parameters whose optimizer states hold the fp32 master copy
    (all but the fp32 shards of `fp32_param_shards`)."""


def model_states(block: Block, data_parallel: DataParallel, grad_bytes: int = GRAD_BYTES,
                 fp8_params: bool = False, zero3_keep_gathered: bool = False,
                 fp32_param_shards: bool = False) -> ModelStates:
    """Bytes of the parameters `block` declares, and of the gradients and optimizer
    states of those its optimizer phase updates (`state_bytes` per parameter,
    which gives the options' meaning)."""
    states = state_bytes(block, data_parallel, grad_bytes, fp8_params, zero3_keep_gathered, fp32_param_shards)
    elements = sum(sim.numel(p) for p in states.grads)
    return ModelStates(sum(states.params.values()), sum(states.grads.values()),
                       sum(states.optimizer.values()), elements)


def state_bytes(block: Block, data_parallel: DataParallel, grad_bytes: int = GRAD_BYTES,
                fp8_params: bool = False, zero3_keep_gathered: bool = False,
                fp32_param_shards: bool = False) -> StateBytes:
    """Bytes of each parameter `block` declares, and of the gradients and
    optimizer states of those its optimizer phase updates. `fp8_params`: the layers' GEMM
    weights are kept in fp8 (Transformer Engine's fp8 primary weights, NeMo's
    `fp8_params` / Megatron's `--fp8-param-gather`), one byte an element; the
    fp32 master copy stays in the optimizer states. `zero3_keep_gathered`: under
    ZeRO-3 the layers' parameters, once gathered, stay gathered to the end of the
    step (beside their shards), and every gradient accumulates unsharded in fp32
    until the step's last backward reduce-scatters it: FSDP2 under PyTorch's
    pipelining, as torchtitan runs it (`reshard_after_forward=False` with pp; the
    schedule's `backward_maybe_with_nosync` turns off resharding after backward
    and gradient sync for every backward but the last). `fp32_param_shards`:
    under ZeRO-3 a trainable parameter's shard is the fp32 master copy the
    optimizer updates, and mixed precision casts it to bf16 only for the
    all-gather (FSDP2: `FSDPParam` keeps the sharded parameter in its original
    dtype and casts to `param_dtype` for the all-gather input): each layer
    parameter's shard counts 4 bytes an element, and its optimizer states hold no
    master copy (Adam: m and v, 8 bytes). The weights outside the layers are
    counted whole in bf16 (gathered) with their fp32 shard among the optimizer
    states as before, the same bytes."""
    zero, ep = data_parallel.zero, data_parallel.ep
    fp32_shards = fp32_param_shards and zero >= 3

    def in_layers(value: SSAValue) -> bool:
        return any(isinstance(use.operation, sim.RepeatOp) for use in value.uses)

    def replicas(value: SSAValue) -> int:
        """The data-parallel group a parameter's states shard over."""
        if ep > 1 and is_expert_weight(value):
            return data_parallel.expert_replicas
        return data_parallel.dense_replicas

    def shard(nbytes: int, value: SSAValue, stage: int) -> int:
        return -(-nbytes // replicas(value)) if zero >= stage else nbytes

    def param_bytes(value: SSAValue) -> int:
        # ZeRO-3 keeps the layers' weights sharded (each layer gathers its own
        # before it runs); the weights outside the layers are gathered after the
        # step and stay whole (data-parallel)
        nbytes = value_bytes(value)
        if fp8_params and is_layer_gemm_weight(value):
            nbytes = sim.numel(value.type)  # pyright: ignore[reportArgumentType]
        if in_layers(value):
            sharded = sim.numel(value.type) * MASTER_BYTES if fp32_shards else nbytes  # pyright: ignore[reportArgumentType]
            return shard(sharded, value, 3) + (nbytes if zero3_keep_gathered and zero >= 3 else 0)
        return nbytes

    params = {op.result: param_bytes(op.result) for op in block.ops if isinstance(op, sim.ParamOp)}
    gathered = {}
    if zero3_keep_gathered and zero >= 3:
        gathered = {p: sim.numel(p.type) if fp8_params and is_layer_gemm_weight(p) else value_bytes(p)  # pyright: ignore[reportArgumentType]
                    for p in params if in_layers(p)}
    trainable: dict[SSAValue, sim.OptimizerKind] = {}
    for op in block.walk():
        if isinstance(op, sim.OptimizerStepOp):
            for p in op.params:
                trainable.setdefault(_unsharded(p), op.kind.data)
    if zero3_keep_gathered and zero >= 3:
        # the step's peak is before the last backward: its sharded gradients
        # are not made yet (the last step's were freed by zero_grad)
        grads = {p: sim.numel(p) * UNSHARDED_GRAD_BYTES for p in trainable}
    else:
        grads = {p: shard(sim.numel(p) * grad_bytes, p, 2) for p in trainable}

    def per_element(value: SSAValue, kind: sim.OptimizerKind) -> int:
        # a layer parameter's fp32 shard is its master copy (counted with the parameters)
        return OPTIMIZER_STATE_BYTES[kind] - (MASTER_BYTES if fp32_shards and in_layers(value) else 0)

    optimizer = {p: shard(sim.numel(p) * per_element(p, k), p, 1) for p, k in trainable.items()}
    tensors = {p: per_element(p, k) // MASTER_BYTES for p, k in trainable.items()}
    masters = frozenset(p for p in trainable if not (fp32_shards and in_layers(p)))
    return StateBytes(params, gathered, grads, optimizer, tensors, masters)


def _layers(param: SSAValue) -> int:
    """How many layers a parameter stacks: the count of the repeat it is sliced
    into, else 1."""
    for use in param.uses:
        rep = use.operation
        if isinstance(rep, sim.RepeatOp) and use.index >= len(rep.iter_init) and rep.trip_count > 0:
            return rep.trip_count
    return 1


@dataclass(frozen=True)
class StateTensors:
    """The model-state tensors a framework allocates, bytes each, in the order
    it allocates them (`state_tensors`)."""

    at_start: list[int]
    """Allocated before the first step: the parameters, the gradient buffers and
    the fp32 master copies (built with the optimizer)."""
    at_first_step: list[int]
    """Allocated by the first step's optimizer step, after its backward: the
    optimizer's moments (Adam's exp_avg and exp_avg_sq, SGD's momentum), which
    torch.optim, Apex's and Transformer Engine's FusedAdam create lazily."""


def state_tensors(states: StateBytes, zero: int) -> StateTensors:
    """The model-state tensors a framework allocates, bytes each (for the caching
    allocator's replay, `allocations.stage_events`).

    When: the fp32 master copy is made when the optimizer is built (Megatron-Core's
    `DistributedOptimizer._build_model_and_main_param_groups`,
    `shard_model_param.clone().float()`, and `Float16OptimizerWithFloat16Params`;
    FSDP2's fp32 shard is the parameter itself); the moments are made at the
    first `step()` (torch/optim/adam.py `Adam._init_group`, "Lazy state
    initialization", which AdamW shares; Apex's and Transformer Engine's
    FusedAdam likewise: `FusedAdam.step`'s "State initialization",
    `initialize_state`, transformer_engine/pytorch/optimizers/fused_adam.py at
    NVIDIA/TransformerEngine 04912bf, and apex/optimizers/fused_adam.py at
    NVIDIA/apex 004da4e; Megatron-Core's `init_state_fn`
    runs only when a checkpoint's states are loaded).

    How many: the parameters and gradients under ZeRO < 3 are one contiguous
    buffer each (Megatron-Core DDP's `_ParamAndGradBuffer`); the fp32 master
    shards and each moment are one tensor per parameter (per layer of a stacked
    layer weight), as Megatron-Core's distributed optimizer and torch.optim keep
    them. Under ZeRO-3 (FSDP2, one sharded tensor per parameter): per parameter
    of each layer its shard (and its gathered copy where kept), its gradient and
    each optimizer state."""

    def split(nbytes: int, parts: int) -> list[int]:
        return [-(-nbytes // parts)] * parts if nbytes > 0 else []

    at_start: list[int] = []
    if zero < 3:
        at_start += [n for n in (sum(states.params.values()), sum(states.grads.values())) if n]
    else:
        for p, nbytes in states.params.items():
            gathered = states.gathered.get(p, 0)
            at_start += split(nbytes - gathered, _layers(p)) + split(gathered, _layers(p))
        for p, nbytes in states.grads.items():
            at_start += split(nbytes, _layers(p))
    at_first_step: list[int] = []
    for p, nbytes in states.optimizer.items():
        layers, count = _layers(p), max(1, states.optimizer_tensors[p])
        tensor = -(-nbytes // (layers * count))
        masters = 1 if p in states.masters and count > 1 else 0
        at_start += [tensor] * (layers * masters)
        at_first_step += [tensor] * (layers * (count - masters))  # each layer's m then v
    return StateTensors(at_start, at_first_step)
