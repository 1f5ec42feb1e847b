"""Megatron-Core's own model code as a frontend: `megatron:CONFIG` names a GPT
model that Megatron-Core builds and the tracer imports, so the kernels simulated
are those of Megatron-Core's `GPTModel` (its layer specs, its fused QKV and
gated FC1, its rotary embedding), not of a Hugging Face port.

CONFIG is a YAML or JSON file of Megatron-Core names: `TransformerConfig` fields
(num_layers, hidden_size, num_attention_heads, num_query_groups,
ffn_hidden_size, normalization, gated_linear_unit, add_bias_linear, ...) and
`GPTModel`'s (vocab_size, max_sequence_length, position_embedding_type,
share_embeddings_and_output_weights); `activation_func` is a name (silu, gelu,
squared_relu). `examples/megatron_gpt_tiny.yaml` is one.

How it runs without a GPU: Megatron-Core's parallel state is initialised over
torch's fake process group with the run's tensor-parallel size as its world
size, so its ColumnParallelLinear / RowParallelLinear / VocabParallelEmbedding
hold one rank's weights (the fused, group-interleaved linear_qkv split by query
groups, linear_fc1 by the ffn dim, linear_proj and linear_fc2 on their input
features) and the traced forward and backward are one rank's: the collectives
its mappings, linears and vocab-parallel cross entropy issue
(`torch.distributed.all_reduce`, `all_gather_into_tensor`,
`reduce_scatter_tensor`) are traced as `charon::` ops that become `coll.*` ops
on the mesh's `tp` axis. With sequence parallelism (the run's
`--sequence-parallel`) Megatron-Core's own all-gathers before the column-parallel
linears and reduce-scatters after the row-parallel ones are those ops. Its
CUDA-only calls are sent to the CPU while it is built and traced
(`torch.cuda.current_device()`, factory calls with `device="cuda"`, the
model-parallel RNG tracker, which only dropout reads); tensors it keeps as
plain attributes (the rotary `inv_freq`) become buffers so the tracer sees them
as inputs. The layer specs are Megatron-Core's local ones (no Transformer
Engine, which needs CUDA): the same GEMMs as TE's; attention is traced as the
one fused kernel TE's spec runs, not the local spec's baddbmm, softmax and bmm.

MoE (`num_moe_experts`, `moe_router_topk`, `moe_ffn_hidden_size`, optionally
`moe_shared_expert_intermediate_size`): Megatron-Core builds its `MoELayer` (its
`TopKRouter`, its `SequentialMLP` of local experts, its `SharedExpertMLP`), but
its dispatcher and experts read the token count of each expert (`.tolist()`,
`.cpu()`), which fake tensors do not have. So the experts' weights are stacked
into one `experts.gate_up_proj` [E, 2F, h] (`up_proj` when not gated) and one
`experts.down_proj` [E, h, F], the names by which the frontend gives them the
`expert` role, and the layer runs as the model does with balanced, dropless
routing: the router's linear and top-k, `sim.moe_dispatch` to per-expert
buffers, each expert's two GEMMs as one batched GEMM, `sim.moe_combine` back
weighted by the router's probabilities, plus the shared experts. Expert
parallelism is the run's (`--ep`, shard-expert), as for a Hugging Face MoE.

Under tensor parallelism an MoE model needs sequence parallelism (as
Megatron-Core's training does) and runs its experts split over the tp ranks
(expert tensor parallelism = tp, Megatron-Core's default): each rank routes its
own tokens, the buffers are all-gathered over tp before the experts and
reduce-scattered after.

Not supported, in one line each: MoE latent projections and MoE layer frequencies other than every
layer, a parallel degree set in the config (the run gives it).
Needs the `megatron` extra (`pip install charon-ir[megatron]`).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.overrides import TorchFunctionMode
from xdsl.dialects.builtin import ModuleOp, UnitAttr

from charon_ir.dialects.sim import SEQUENCE_PARALLEL_ATTR
from charon_ir.errors import CharonError
from charon_ir.frontend import torch_ops
from charon_ir.parallel.mesh import ensure_axis

ACTIVATIONS = {
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "relu": torch.nn.functional.relu,
    "squared_relu": lambda x: torch.pow(torch.nn.functional.relu(x), 2),
}

MODEL_FIELDS = ("vocab_size", "max_sequence_length", "position_embedding_type",
                "share_embeddings_and_output_weights", "rotary_percent", "rotary_base")


def _megatron():
    # Megatron-Core warns at import that Transformer Engine and Apex are absent:
    # expected here (the local specs run), so not shown
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import megatron.core as core
            import megatron.core.models.gpt  # noqa: F401
            import megatron.core.optimizer  # noqa: F401  (warns on import too)
        except ImportError:
            raise CharonError("megatron: Megatron-Core is not installed (pip install 'charon-ir[megatron]')") from None
    return core


class _CudaToCpu(TorchFunctionMode):
    """Factory calls that name a CUDA device make their tensor on the CPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        device = kwargs.get("device")
        if device is not None and "cuda" in str(device):
            kwargs = {**kwargs, "device": "cpu"}
        return func(*args, **kwargs)


@contextlib.contextmanager
def on_cpu() -> Iterator[None]:
    """Megatron-Core's CUDA-only calls sent to the CPU and its collectives
    traced as `charon::` ops, for building and tracing."""
    _megatron()
    import megatron.core.tensor_parallel.layers as layers
    import megatron.core.tensor_parallel.mappings as mappings
    import megatron.core.tensor_parallel.utils as tp_utils
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    from megatron.core.tensor_parallel import random as mrandom
    from megatron.core.transformer.dot_product_attention import DotProductAttention
    from megatron.core.transformer.moe.moe_layer import MoELayer
    from megatron.core.utils import GlobalMemoryBuffer

    saved = (torch.cuda.current_device, mrandom.CudaRNGStatesTracker.fork, RotaryEmbedding.forward,
             GlobalMemoryBuffer.get_tensor, DotProductAttention.forward, dist.all_reduce, MoELayer.forward)
    # the modules that bound torch's all-gather / reduce-scatter at import
    bound = [(m, name, getattr(m, name)) for m in (mappings, layers, tp_utils)
             for name in ("dist_all_gather_func", "dist_reduce_scatter_func") if hasattr(m, name)]
    DotProductAttention.forward = _fused_attention
    MoELayer.forward = _moe_forward
    # the global buffer (DotProductAttention's baddbmm input) outlives a trace:
    # each request gets a tensor of its own, as the first request of a run does
    GlobalMemoryBuffer.get_tensor = lambda self, shape, dtype, name, mem_alloc_context=None: torch.empty(
        shape, dtype=dtype)
    torch.cuda.current_device = lambda: "cpu"
    # the tracker forks a CUDA RNG state around dropout; no dropout runs here
    mrandom.CudaRNGStatesTracker.fork = lambda self, name=None: contextlib.nullcontext()
    # the rotary table is memoised (lru_cache) across calls: a table from one
    # trace's fake tensors must not reach the next
    RotaryEmbedding.forward = getattr(RotaryEmbedding.forward, "__wrapped__", RotaryEmbedding.forward)
    dist.all_reduce = _all_reduce
    for module, name, _ in bound:
        setattr(module, name, _all_gather_into if "gather" in name else _reduce_scatter_into)
    try:
        # Megatron-Core's deprecation notes (tp_group, cuda_graph_scope) are for its own users
        with _CudaToCpu(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        (torch.cuda.current_device, mrandom.CudaRNGStatesTracker.fork, RotaryEmbedding.forward,
         GlobalMemoryBuffer.get_tensor, DotProductAttention.forward, dist.all_reduce, MoELayer.forward) = saved
        for module, name, value in bound:
            setattr(module, name, value)


class _Issued:
    """What a collective issued with `async_op=True` returns: its wait orders
    nothing (the IR orders the collective by the data it reads and writes)."""

    def wait(self) -> None:
        return None


def _group_axis(group) -> tuple[str, int]:
    """(mesh axis, size) of a Megatron-Core process group: its tensor-parallel
    group is the mesh's `tp` axis."""
    from megatron.core import parallel_state

    size = group.size() if group is not None else dist.get_world_size()
    if size > 1 and group is not None and group != parallel_state.get_tensor_model_parallel_group():
        raise CharonError(f"megatron: a collective over a group of {size} ranks that is not the "
                          "tensor-parallel group is not imported")
    return "tp", size


def _all_reduce(tensor, op=None, group=None, async_op=False):
    """`torch.distributed.all_reduce` (a sum or, for the vocab-parallel cross
    entropy's logit max, a max: the same traffic), in place as torch's."""
    axis, size = _group_axis(group)
    if size > 1:
        tensor.copy_(torch_ops.all_reduce(tensor, axis))
    return _Issued() if async_op else None


def _all_gather_into(output, input, group=None, async_op=False):
    """`all_gather_into_tensor`: the ranks' inputs along dim 0, into `output`."""
    axis, size = _group_axis(group)
    output.copy_(torch_ops.all_gather(input, axis, 0, size) if size > 1 else input)
    return _Issued() if async_op else None


def _reduce_scatter_into(output, input, op=None, group=None, async_op=False):
    """`reduce_scatter_tensor`: this rank's 1/size of the sum along dim 0, into `output`."""
    axis, size = _group_axis(group)
    output.copy_(torch_ops.reduce_scatter(input, axis, 0, size) if size > 1 else input)
    return _Issued() if async_op else None


def _fused_attention(self, query, key, value, attention_mask, attn_mask_type=None, attention_bias=None,
                     packed_seq_params=None):
    """DotProductAttention as the fused kernel Transformer Engine's spec runs
    (`TEDotProductAttention`), on Megatron's [s, b, heads, d] layout: one
    opaque attention op (through the KV cache when serving), where the local
    spec computes baddbmm, softmax and bmm."""
    from megatron.core.transformer.enums import AttnMaskType

    if attention_bias is not None or packed_seq_params is not None:
        raise CharonError("megatron: attention bias and packed sequences are not imported")
    causal = (attn_mask_type or self.attn_mask_type) == AttnMaskType.causal
    sq, b = query.shape[0], query.shape[1]
    out = torch_ops.attend(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), causal)
    return out.transpose(0, 1).reshape(sq, b, -1)


MOE_UNSUPPORTED = {
    "moe_latent_size": "MoE latent projections are not imported (they need Transformer Engine)",
    "moe_expert_capacity_factor": "routing is dropless here; the run gives a capacity factor "
                                  "(shard-expert's capacity-factor)",
    "moe_router_num_groups": "group-limited routing is not imported",
}
"""MoE fields that change what a layer computes and are not imported -> why."""


def _check_moe(config: dict[str, Any], where: str, tp: int, sequence_parallel: bool) -> None:
    """Refuse, in one line, an MoE config the traced MoE layer would not follow."""
    experts, top_k = config["num_moe_experts"], config.get("moe_router_topk", 2)
    if tp > 1 and not sequence_parallel:
        raise CharonError(f"{where}: Megatron-Core trains an MoE model under tensor parallelism (tp {tp}) "
                          "with sequence parallelism only (--sequence-parallel)")
    if not isinstance(experts, int) or isinstance(experts, bool) or experts < 1:
        raise CharonError(f"{where}: num_moe_experts {experts!r}: a number of experts >= 1")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= experts:
        raise CharonError(f"{where}: moe_router_topk {top_k!r}: between 1 and num_moe_experts ({experts})")
    for key, why in MOE_UNSUPPORTED.items():
        if config.get(key):
            raise CharonError(f"{where}: {key} {config[key]}: {why}")
    if config.get("moe_layer_freq", 1) != 1:
        raise CharonError(f"{where}: moe_layer_freq {config['moe_layer_freq']!r}: only every layer MoE is imported")
    dispatcher = config.get("moe_token_dispatcher_type", "alltoall")
    if dispatcher != "alltoall":
        raise CharonError(f"{where}: moe_token_dispatcher_type {dispatcher!r}: the run gives the dispatcher "
                          "(charon simulate --moe-dispatcher)")


class StackedExperts(nn.Module):
    """A `SequentialMLP`'s local experts as the model runs them, one batched
    GEMM per projection over balanced per-expert buffers: `gate_up_proj`
    ([E, 2F, h], gate then up as Megatron's gated linear_fc1; `up_proj` [E, F, h]
    ungated) and `down_proj` ([E, h, F]), with their biases ([E, out]) when the
    experts have them."""

    def __init__(self, experts: nn.Module, config: Any):
        super().__init__()
        first = experts.local_experts[0]
        count = len(experts.local_experts)
        fc1, fc2 = first.linear_fc1, first.linear_fc2
        self.gated = bool(config.gated_linear_unit)
        self.activation = config.activation_func
        self.up_name = "gate_up_proj" if self.gated else "up_proj"
        for name, linear in ((self.up_name, fc1), ("down_proj", fc2)):
            weight = linear.weight
            self.register_parameter(name, nn.Parameter(weight.new_empty((count, *weight.shape))))
            bias = getattr(linear, "bias", None)
            if isinstance(bias, torch.Tensor) and bias.numel():
                self.register_parameter(f"{name}_bias", nn.Parameter(bias.new_empty((count, *bias.shape))))

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        out = torch.bmm(x, getattr(self, name).transpose(1, 2))
        bias = getattr(self, f"{name}_bias", None)
        return out if bias is None else out + bias.unsqueeze(1)

    def forward(self, tokens: torch.Tensor, index: torch.Tensor, probs: torch.Tensor, tp: int = 1) -> torch.Tensor:
        """Under tensor parallelism (sequence-parallel tokens, expert tensor
        parallelism = tp, Megatron-Core's default) each rank routes its own
        tokens, the tp ranks' buffers are all-gathered (every rank computes its
        1/tp of every expert's ffn on all of them) and the outputs
        reduce-scattered back, as its all-to-all dispatcher does."""
        buffers = torch_ops.moe_dispatch(tokens, index, getattr(self, self.up_name).shape[0])
        if tp > 1:
            buffers = torch_ops.all_gather(buffers, "tp", 1, tp)
        hidden = self._linear(buffers, self.up_name)
        if self.gated:
            gate, up = hidden.chunk(2, dim=-1)
            hidden = self.activation(gate) * up
        else:
            hidden = self.activation(hidden)
        out = self._linear(hidden, "down_proj")
        if tp > 1:
            out = torch_ops.reduce_scatter(out, "tp", 1, tp)
        return torch_ops.moe_combine(out, index, probs.to(hidden.dtype))


def _stack_experts(model: nn.Module) -> None:
    """Every MoE layer's `SequentialMLP` replaced by its `StackedExperts`."""
    from megatron.core.transformer.moe.moe_layer import MoELayer

    for layer in [m for m in model.modules() if isinstance(m, MoELayer)]:
        layer.experts = StackedExperts(layer.experts, layer.config)


def _route(logits: torch.Tensor, config: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities, expert indices) [tokens, k] of the router's logits, as
    Megatron-Core's `topk_routing_with_score_function` computes them."""
    k = config.moe_router_topk
    if config.moe_router_score_function == "sigmoid":
        probs, index = torch.topk(torch.sigmoid(logits.float()), k, dim=-1)
        if k > 1:
            probs = probs / (probs.sum(dim=-1, keepdim=True) + 1e-20)
    elif config.moe_router_pre_softmax:
        probs, index = torch.topk(torch.softmax(logits.float(), dim=-1), k, dim=-1)
    else:
        top, index = torch.topk(logits, k, dim=-1)
        probs = torch.softmax(top.float(), dim=-1)
    if config.moe_router_topk_scaling_factor:
        probs = probs * config.moe_router_topk_scaling_factor
    return probs, index


def _moe_forward(self, hidden_states, intermediate_tensors=None, padding_mask=None):
    """MoELayer's forward as the model runs it, on balanced, dropless routing:
    the shared experts, the router's linear and top-k, the stacked experts
    between `sim.moe_dispatch` and `sim.moe_combine` (expert parallelism's
    all-to-alls are the run's, shard-expert's)."""
    if intermediate_tensors is not None or padding_mask is not None:
        raise CharonError("megatron: partial MoE forwards (CUDA graphs) and padding masks are not imported")
    s, b, h = hidden_states.shape
    tokens = hidden_states.reshape(s * b, h)
    shared = self.shared_experts(hidden_states) if self.use_shared_expert else None
    router = self.router
    weight = router.weight.float() if self.config.moe_router_dtype == "fp32" else router.weight
    logits = torch.nn.functional.linear(tokens.to(weight.dtype), weight, getattr(router, "bias", None))
    probs, index = _route(logits, self.config)
    output = self.experts(tokens, index, probs, self.config.tensor_model_parallel_size).reshape(s, b, h)
    if shared is not None:
        output = output + shared
    return output, None


def _parallel_state(tp: int) -> None:
    """Megatron-Core's model-parallel groups over torch's fake process group of
    `tp` ranks, this process rank 0 (initialised again when the size changes)."""
    from megatron.core import parallel_state

    if parallel_state.model_parallel_is_initialized():
        if parallel_state.get_tensor_model_parallel_world_size() == tp and dist.get_world_size() == tp:
            return
        parallel_state.destroy_model_parallel()
    if dist.is_initialized() and dist.get_world_size() != tp:
        dist.destroy_process_group()
    if not dist.is_initialized():
        from torch.testing._internal.distributed.fake_pg import FakeStore

        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=tp)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp, create_gloo_process_groups=False)


class MegatronLM(nn.Module):
    """A GPTModel as the tracer takes a model: token ids [b, s] -> logits (one
    rank's share of the vocabulary under tensor parallelism)."""

    def __init__(self, model: nn.Module, tp: int = 1):
        super().__init__()
        self.model = model
        self.tp = tp

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0).expand_as(ids)
        return self.model(ids, positions, None)

    def charon_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The training loss the tracer takes in place of its own cross entropy:
        under tensor parallelism, Megatron-Core's vocab-parallel cross entropy
        (per-token max, sum of exponentials and target logit all-reduced over
        tp), which the logits of one rank's vocabulary need."""
        if self.tp == 1:
            return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                                     labels.reshape(-1))
        from megatron.core.tensor_parallel import vocab_parallel_cross_entropy

        return vocab_parallel_cross_entropy(logits, labels).mean()


BUILD_SETTINGS: dict[str, tuple[Any, ...]] = {
    "bf16": (True,),
    "params_dtype": ("bfloat16", "bf16", "torch.bfloat16"),
    "use_cpu_initialization": (True, False),
    "perform_initialization": (False, True),
}
"""TransformerConfig fields the importer sets (bf16 weights, built on the meta
device, never initialised) -> the values a config may state for them: the first
is the importer's; where a config's other value would change nothing traced
(initialisation on the CPU or not, at all or not), it is accepted too."""


def build_megatron_model(config: dict[str, Any], where: str, tp: int = 1,
                         sequence_parallel: bool = False) -> MegatronLM:
    """The GPTModel of `config` as rank 0 of `tp` tensor-parallel ranks (with
    Megatron-Core's sequence parallelism if asked)."""
    _megatron()
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    config = dict(config)
    experts = config.get("num_moe_experts")
    if experts:
        _check_moe(config, where, tp, sequence_parallel)
    for key in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                "expert_model_parallel_size", "sequence_parallel"):
        # taken out: a degree of 1 (or sequence_parallel false) is the default
        # the run's options replace, and TransformerConfig is given tp and SP below
        value = config.pop(key, None)
        if (value is True) if key == "sequence_parallel" else (value not in (None, 1)):
            raise CharonError(f"{where}: {key} {value}: the run gives the parallel degrees "
                              "(charon simulate --tp, --sequence-parallel, --pp, --cp, --ep)")
    for key, built in BUILD_SETTINGS.items():
        # what the importer gives TransformerConfig itself: stated as it builds,
        # taken out (not passed twice); stated otherwise, refused in one line
        if key in config and (value := config.pop(key)) not in built:
            raise CharonError(f"{where}: {key} {value!r}: the import builds the model with {key} {built[0]!r} "
                              "(bf16 weights on the meta device, never initialised)")
    activation = config.pop("activation_func", "gelu")
    if activation not in ACTIVATIONS:
        raise CharonError(f"{where}: activation_func {activation!r}: one of {', '.join(ACTIVATIONS)}")
    model_kwargs = {k: config.pop(k) for k in MODEL_FIELDS if k in config}
    for key in ("vocab_size", "max_sequence_length"):
        if key not in model_kwargs:
            raise CharonError(f"{where}: missing {key}")
    known = set(TransformerConfig.__dataclass_fields__)
    unknown = sorted(set(config) - known)
    if unknown:
        raise CharonError(f"{where}: unknown field(s) {', '.join(unknown)} (neither TransformerConfig's nor GPTModel's)")
    heads, groups = config.get("num_attention_heads"), config.get("num_query_groups")
    if isinstance(heads, int) and isinstance(groups, int) and groups > 0 and heads % groups:
        raise CharonError(f"{where}: num_attention_heads ({heads}) must be a multiple of num_query_groups ({groups})")
    config.setdefault("attention_dropout", 0.0)
    config.setdefault("hidden_dropout", 0.0)
    if tp < 1:
        raise CharonError(f"{where}: tensor-parallel size {tp} must be >= 1")
    _parallel_state(tp)
    with on_cpu():
        try:
            transformer = TransformerConfig(
                **config, activation_func=ACTIVATIONS[activation], use_cpu_initialization=True,
                tensor_model_parallel_size=tp, sequence_parallel=sequence_parallel,
                params_dtype=torch.bfloat16, bf16=True, perform_initialization=False,
            )
            spec = get_gpt_layer_local_spec(num_experts=experts or None, normalization=transformer.normalization)
            with torch.device("meta"), _norms_on_local_tokens(sequence_parallel):
                model = GPTModel(transformer, spec, **model_kwargs)
                _stack_experts(model)
        except CharonError:
            raise
        except Exception as e:
            first = str(e).splitlines()[0] if str(e) else ""
            raise CharonError(f"{where}: Megatron-Core refused the config: {type(e).__name__}: {first[:300]}") from None
    _tensors_as_buffers(model)
    return MegatronLM(model, tp)


@contextlib.contextmanager
def _norms_on_local_tokens(sequence_parallel: bool) -> Iterator[None]:
    """The local spec's torch norms under sequence parallelism, which Megatron-Core
    asserts against (its finalize step would not all-reduce their weight
    gradients without the `sequence_parallel` mark TE's and Apex's norms set):
    the same norm, run on this rank's tokens, its weights so marked."""
    from megatron.core.transformer.torch_norm import WrappedTorchNorm

    if not sequence_parallel:
        yield
        return
    wrapped = WrappedTorchNorm.__new__

    def local_norm(cls, config, hidden_size, *args, **kwargs):
        whole = copy.copy(config)
        whole.sequence_parallel = False
        norm = wrapped(cls, whole, hidden_size, *args, **kwargs)
        for param in norm.parameters():
            param.sequence_parallel = True
        return norm

    WrappedTorchNorm.__new__ = local_norm
    try:
        yield
    finally:
        WrappedTorchNorm.__new__ = wrapped


def on_tensor_parallel_mesh(module: ModuleOp, tp: int, sequence_parallel: bool) -> None:
    """The imported rank's collectives name the `tp` axis of `coll.grid @mesh`:
    the module gets that grid, which also tells shard-tensor that it is split;
    a sequence-parallel import is marked so, for sequence-parallel to leave it."""
    ensure_axis(module, "tp", tp, "megatron")
    if sequence_parallel:
        module.attributes[SEQUENCE_PARALLEL_ATTR] = UnitAttr()


def _tensors_as_buffers(model: nn.Module) -> None:
    """Tensors a module keeps as plain attributes (RotaryEmbedding's inv_freq)
    registered as non-persistent buffers: the tracer binds buffers as inputs."""
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
                delattr(module, name)
                module.register_buffer(name, value, persistent=False)
