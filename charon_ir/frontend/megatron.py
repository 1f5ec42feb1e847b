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
torch's fake process group (world size 1: the model is built whole, and the
passes shard it as for any model); its CUDA-only calls are sent to the CPU while
it is built and traced (`torch.cuda.current_device()`, factory calls with
`device="cuda"`, the model-parallel RNG tracker, which only dropout reads);
tensors it keeps as plain attributes (the rotary `inv_freq`) become buffers so
the tracer sees them as inputs. The layer specs are Megatron-Core's local ones
(no Transformer Engine, which needs CUDA): the same GEMMs as TE's; attention is
traced as the one fused kernel TE's spec runs, not the local spec's baddbmm,
softmax and bmm.

Not supported, in one line each: Megatron-Core MoE layers (their token counts
per expert are data-dependent), tensor-parallel world sizes above 1 at import.
Needs the `megatron` extra (`pip install charon-ir[megatron]`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import nn
from torch.overrides import TorchFunctionMode

from charon_ir.errors import CharonError, parse_json, read_text
from charon_ir.frontend import MEGATRON_PREFIX, torch_ops

ACTIVATIONS = {
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "relu": torch.nn.functional.relu,
    "squared_relu": lambda x: torch.pow(torch.nn.functional.relu(x), 2),
}

MODEL_FIELDS = ("vocab_size", "max_sequence_length", "position_embedding_type",
                "share_embeddings_and_output_weights", "rotary_percent", "rotary_base")


def load_megatron_config(model: str) -> tuple[str, dict[str, Any]]:
    """(display name, config dict) of `megatron:PATH`."""
    path = Path(model.removeprefix(MEGATRON_PREFIX))
    text = read_text(path)
    if path.suffix in (".yaml", ".yml"):
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise CharonError(f"{path}: not a Megatron config (YAML: {str(e).splitlines()[0][:200]})") from None
    else:
        config = parse_json(text, str(path), "Megatron config")
    if not isinstance(config, dict):
        raise CharonError(f"{path}: a Megatron config is a mapping of TransformerConfig and GPTModel fields")
    return f"{MEGATRON_PREFIX}{path.stem}", config


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
    """Megatron-Core's CUDA-only calls sent to the CPU, for building and tracing."""
    _megatron()
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    from megatron.core.tensor_parallel import random as mrandom
    from megatron.core.transformer.dot_product_attention import DotProductAttention
    from megatron.core.utils import GlobalMemoryBuffer

    saved = (torch.cuda.current_device, mrandom.CudaRNGStatesTracker.fork, RotaryEmbedding.forward,
             GlobalMemoryBuffer.get_tensor, DotProductAttention.forward)
    DotProductAttention.forward = _fused_attention
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
    try:
        # Megatron-Core's deprecation notes (tp_group, cuda_graph_scope) are for its own users
        with _CudaToCpu(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        (torch.cuda.current_device, mrandom.CudaRNGStatesTracker.fork, RotaryEmbedding.forward,
         GlobalMemoryBuffer.get_tensor, DotProductAttention.forward) = saved


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


def _parallel_state() -> None:
    """Megatron-Core's model-parallel groups over torch's fake process group,
    world size 1 (once per process)."""
    import torch.distributed as dist
    from megatron.core import parallel_state

    if not dist.is_initialized():
        from torch.testing._internal.distributed.fake_pg import FakeStore

        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=1)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(tensor_model_parallel_size=1, create_gloo_process_groups=False)


class MegatronLM(nn.Module):
    """A GPTModel as the tracer takes a model: token ids [b, s] -> logits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0).expand_as(ids)
        return self.model(ids, positions, None)


def build_megatron_model(config: dict[str, Any], where: str) -> MegatronLM:
    _megatron()
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    config = dict(config)
    if config.get("num_moe_experts"):
        raise CharonError(f"{where}: Megatron-Core MoE layers are not imported (their token counts per expert "
                          "are data-dependent under fake tensors); import the model's Hugging Face config instead")
    for key in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"):
        if config.get(key, 1) != 1:
            raise CharonError(f"{where}: {key} {config[key]}: the model is imported whole; give the degrees to "
                              "charon simulate (--tp, --pp, --cp)")
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
    _parallel_state()
    with on_cpu():
        try:
            transformer = TransformerConfig(
                **config, activation_func=ACTIVATIONS[activation], use_cpu_initialization=True,
                params_dtype=torch.bfloat16, bf16=True, perform_initialization=False,
            )
            spec = get_gpt_layer_local_spec(normalization=transformer.normalization)
            with torch.device("meta"):
                model = GPTModel(transformer, spec, **model_kwargs)
        except CharonError:
            raise
        except Exception as e:
            first = str(e).splitlines()[0] if str(e) else ""
            raise CharonError(f"{where}: Megatron-Core refused the config: {type(e).__name__}: {first[:300]}") from None
    _tensors_as_buffers(model)
    return MegatronLM(model)


def _tensors_as_buffers(model: nn.Module) -> None:
    """Tensors a module keeps as plain attributes (RotaryEmbedding's inv_freq)
    registered as non-persistent buffers: the tracer binds buffers as inputs."""
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
                delattr(module, name)
                module.register_buffer(name, value, persistent=False)
