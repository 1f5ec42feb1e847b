"""Trace the parts of a model on fake tensors: the stem (embedding), each distinct
decoder layer once, and the head (final norm, LM head, loss).

A model is built from its HF config on the meta device (no memory, no weights);
its decoder layers are grouped into runs of identical layers (or of an identical
period of layers, for interleaved MoE stacks), and one representative of each
distinct layer is traced. Training parts go through aot_autograd, which hands us
the forward graph (outputs + saved activations) and the backward graph (saved
activations + output gradients -> input gradients) separately; serving parts go
through make_fx, forward only.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch._subclasses.fake_tensor import FakeTensorMode

from charon_ir.errors import CharonError, reason_of
from charon_ir.frontend import torch_ops
from charon_ir.frontend.metrics import MTP_PREFIX

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass
class Primal:
    """One input of a traced part: a parameter (by its canonical HF name), a buffer,
    or an activation/input of the step (by a role the assembler binds)."""

    kind: str  # "param" | "buffer" | "input"
    name: str
    tensor: torch.Tensor


@dataclass
class TracedPart:
    fwd: fx.GraphModule
    bwd: fx.GraphModule | None
    primals: list[Primal]
    num_outputs: int

    def fwd_placeholders(self) -> list[str]:
        return [n.name for n in self.fwd.graph.nodes if n.op == "placeholder"]


@dataclass
class LayerRun:
    """Layers start, start+1, ... as `count` repetitions of `period` (the layer
    indices of the representatives, one per position in the period)."""

    start: int
    period: list[int]
    count: int

    @property
    def end(self) -> int:
        return self.start + self.count * len(self.period)


@dataclass
class TracedModel:
    name: str
    family: str
    config: Any
    stem: TracedPart
    layers: dict[int, TracedPart]
    runs: list[LayerRun]
    head: TracedPart
    layer_prefix: str
    hf_param_count: int
    extras: list[str] = field(default_factory=list)
    """Names of stem outputs after the hidden state that every layer reads (cos, sin)."""
    mtp: TracedPart | None = None
    """The multi-token-prediction modules (DeepSeek-V3's), traced as one part
    after the stack: the stack's output, the tokens, the shared embedding and
    LM head in, their weighted loss out. None: the model has none, or serving."""


def _fake_like(t: torch.Tensor, dtype: torch.dtype | None = None, grad: bool = False) -> torch.Tensor:
    out = torch.empty(t.shape, dtype=dtype or t.dtype)
    if grad:
        out.requires_grad_(True)
    return out


MOE_FORWARDS = (
    ("transformers.models.llama4.modeling_llama4", "Llama4TextMoe", torch_ops.llama4_moe),
)
"""(module, class, forward) of the MoE layers whose HF forward runs every expert
on every token: replaced while tracing by a routed top-k forward."""


@contextlib.contextmanager
def _patched_for_tracing() -> Iterator[None]:
    """HF masking calls a data-dependent `.all()` to find packed sequences; we never
    pack, so answer "none" without looking at the data. A user's module calling
    F.scaled_dot_product_attention gets the opaque attention op instead; an MoE
    layer of `MOE_FORWARDS` routes its tokens."""
    patches: list[tuple[Any, str, Any]] = []
    try:
        import transformers.masking_utils as masking

        if hasattr(masking, "find_packed_sequence_indices"):
            patches.append((masking, "find_packed_sequence_indices", lambda *a, **k: None))
    except ImportError:
        pass
    patches.append((F, "scaled_dot_product_attention", torch_ops.sdpa_replacement))
    # MoE layers that compute every expert on every token in HF's code (no
    # experts interface to register): their forward as the model runs, if loaded
    for module_name, cls, forward in MOE_FORWARDS:
        if (loaded := sys.modules.get(module_name)) is not None:
            patches.append((getattr(loaded, cls), "forward", forward))
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    for obj, attr, new in patches:
        setattr(obj, attr, new)
    try:
        yield
    finally:
        for obj, attr, old in saved:
            setattr(obj, attr, old)


def trace_part(
    fn: Callable[..., Any],
    primals: list[Primal],
    train: bool,
) -> TracedPart:
    """Trace fn(*primal tensors) -> tensor or tuple of tensors."""
    tensors = [p.tensor for p in primals]
    graphs: dict[str, fx.GraphModule] = {}
    with _patched_for_tracing():
        if train:
            from functorch.compile import make_boxed_func
            from torch._functorch.aot_autograd import aot_function
            from torch._functorch.partitioners import default_partition

            def capture(kind: str):
                def compiler(gm: fx.GraphModule, example_inputs: Any) -> Any:
                    graphs[kind] = gm
                    return make_boxed_func(gm.forward)

                return compiler

            compiled = aot_function(
                fn, fw_compiler=capture("fwd"), bw_compiler=capture("bwd"),
                partition_fn=default_partition,
            )
            out = compiled(*tensors)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            if "bwd" not in graphs:  # backward compiled lazily: run it once
                diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
                torch.autograd.backward(diff, [torch.empty_like(o) for o in diff])
            return TracedPart(graphs["fwd"], graphs["bwd"], primals, len(outs))
        from torch.fx.experimental.proxy_tensor import make_fx

        def as_tuple(*values):
            out = fn(*values)
            return tuple(out) if isinstance(out, (list, tuple)) else (out,)

        with torch.no_grad():
            gm = make_fx(as_tuple)(*tensors)
        n_out = len(next(n for n in gm.graph.nodes if n.op == "output").args[0])
        return TracedPart(gm, None, primals, n_out)


def _reparametrized(model: nn.Module, primals: Sequence[Primal], values: Sequence[torch.Tensor]):
    from torch.nn.utils.stateless import _reparametrize_module

    mapping = {p.name: v for p, v in zip(primals, values) if p.kind in ("param", "buffer")}
    return _reparametrize_module(model, mapping, tie_weights=True, strict=False)


# ---------------------------------------------------------------------------
# Model families: where the embedding, layers and head of a HF model live
# ---------------------------------------------------------------------------


class Family:
    """Accessors for one layout of HF causal LM."""

    layer_prefix = ""

    def __init__(self, model: nn.Module):
        self.model = model

    def layers(self) -> nn.ModuleList: ...
    def stem(self, ids: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, ...]: ...
    def layer(self, layer: nn.Module, x: torch.Tensor, extras: Sequence[torch.Tensor], positions: torch.Tensor) -> torch.Tensor: ...
    def final(self, h: torch.Tensor) -> torch.Tensor: ...
    def stem_modules(self) -> list[nn.Module]: ...
    def head_modules(self) -> list[nn.Module]: ...

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """A training step's loss: the cross entropy of the logits (fp32)."""
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1))

    extras: list[str] = []
    stem_params: set[str] | None = None
    head_params: set[str] | None = None
    """The parameters and buffers (by name) the stem and head read, where their
    modules would claim more (a user module's stem and head are the whole module)."""
    head_tokens: torch.Tensor | None = None
    """The step's token ids while the head is traced, for a family whose head
    replays the model's forward (a user module's)."""


class LlamaFamily(Family):
    """model.model.{embed_tokens, rotary_emb, layers, norm} + model.lm_head: the
    layout of most HF causal LMs (Llama, Mistral, Qwen, DeepSeek, Gemma, Phi-3,
    OLMo, Granite, Cohere, StarCoder2, Nemotron, GPT-OSS, ...). Subclasses rename
    the parts."""

    inner = "model"
    embed = "embed_tokens"
    stack = "layers"
    norm = "norm"
    head = "lm_head"
    layer_prefix = "model.layers"
    extras = ["rope_cos", "rope_sin"]

    def __init__(self, model: nn.Module):
        super().__init__(model)
        config = getattr(model, "config", None)
        # Gemma 3 keeps one rotary table per attention kind (sliding, full)
        types = getattr(config, "layer_types", None)
        if types and "layer_type" in inspect.signature(self._inner().rotary_emb.forward).parameters:
            self.rope_types = sorted(set(types))
            self.extras = [f"rope_{part}.{kind}" for kind in self.rope_types for part in ("cos", "sin")]
        else:
            self.rope_types = []

    def _inner(self) -> nn.Module:
        return getattr(self.model, self.inner)

    def layers(self):
        return getattr(self._inner(), self.stack)

    def stem(self, ids, positions):
        inner = self._inner()
        h = getattr(inner, self.embed)(ids)
        # Granite scales the embeddings in the model's forward, not in a module
        multiplier = getattr(self.model.config, "embedding_multiplier", None)
        if multiplier is not None and multiplier != 1.0:
            h = h * multiplier
        if self.rope_types:
            return (h, *(t for kind in self.rope_types for t in inner.rotary_emb(h, positions, kind)))
        rope = inner.rotary_emb(h, positions)
        if isinstance(rope, torch.Tensor):
            # one table (DeepSeek-V2's complex freqs_cis) instead of cos and sin
            self.extras = ["rope_freqs"]
            return h, rope
        return (h, *rope)

    def rope_of(self, layer: nn.Module, extras: Sequence[torch.Tensor]) -> Any:
        """The rotary table(s) `layer` reads, from the stem's extras."""
        if self.rope_types:
            kind = self.rope_types.index(layer.self_attn.layer_type)
            return tuple(extras[2 * kind: 2 * kind + 2])
        return extras[0] if len(extras) == 1 else tuple(extras)

    def layer(self, layer, x, extras, positions):
        out = layer(x, attention_mask=None, position_ids=positions, position_embeddings=self.rope_of(layer, extras))
        return out[0] if isinstance(out, tuple) else out

    def final(self, h):
        logits = getattr(self.model, self.head)(getattr(self._inner(), self.norm)(h))
        # what the CausalLM's forward does to the logits after the head
        config = self.model.config
        if (scaling := getattr(config, "logits_scaling", None)) not in (None, 1.0):  # Granite
            logits = logits / scaling
        if (scale := getattr(config, "logit_scale", None)) not in (None, 1.0):  # Cohere
            logits = logits * scale
        if (cap := getattr(config, "final_logit_softcapping", None)) is not None:  # Gemma 2 and 3
            logits = torch.tanh(logits / cap) * cap
        return logits

    def mtp_shared_modules(self) -> list[nn.Module]:
        """What the MTP modules share with the model: the embedding and the LM head."""
        return [getattr(self._inner(), self.embed), getattr(self.model, self.head)]

    def mtp_loss(self, modules, h, tokens, extras, positions, labels):
        """The weighted mean of the MTP depths' losses. Depth k predicts the token
        k + 1 ahead from the token k ahead: the shifted sequences are one token
        shorter per depth, which the step's tokens stand in for."""
        embed, head = getattr(self._inner(), self.embed), getattr(self.model, self.head)
        total = None
        for module in modules:
            x = module.eh_proj(torch.cat([module.enorm(embed(tokens)), module.hnorm(h)], dim=-1))
            h = self.layer(module.block, x, extras, positions)
            logits = head(module.norm(h))
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1))
            total = loss if total is None else total + loss
        return total * (MTP_LOSS_WEIGHT / len(modules))

    def stem_modules(self):
        return [getattr(self._inner(), self.embed), self._inner().rotary_emb]

    def head_modules(self):
        return [getattr(self._inner(), self.norm), getattr(self.model, self.head)]


MTP_LOSS_WEIGHT = 0.3
"""DeepSeek-V3's lambda, the MTP losses' weight (0.3 for its first 10T tokens, then
0.1; a scalar multiply either way)."""


class MultiTokenPrediction(nn.Module):
    """One multi-token-prediction module of DeepSeek-V3 (its technical report,
    section 2.2; its checkpoint's layer 61): the previous depth's hidden state and
    the embedding of the token k ahead, each RMS-normed, concatenated and
    projected back to the hidden size (`eh_proj`, [h, 2h]), one decoder layer of
    the model's own kind, and a norm before the LM head. The embedding and the
    head are the model's (shared, as the report has them)."""

    def __init__(self, config: Any, layer: nn.Module, norm: Callable[[], nn.Module]):
        super().__init__()
        self.enorm, self.hnorm = norm(), norm()
        self.eh_proj = nn.Linear(2 * config.hidden_size, config.hidden_size, bias=False)
        self.block = layer
        self.norm = norm()


def attach_mtp_modules(model: nn.Module, dtype: torch.dtype) -> None:
    """Give `model` (as `model.mtp`) the `num_nextn_predict_layers` MTP modules its
    config asks for, each block a decoder layer built as layer num_hidden_layers + k
    (DeepSeek-V3's MoE layers); nothing for a config without them."""
    config = getattr(model, "config", None)
    depth = getattr(config, "num_nextn_predict_layers", 0) or 0
    inner = getattr(model, "model", None)
    if not depth or inner is None or not hasattr(inner, "layers") or not hasattr(inner, "norm"):
        return
    layer_cls, norm_cls = type(inner.layers[-1]), type(inner.norm)
    eps = getattr(config, "rms_norm_eps", 1e-6)
    with torch.device("meta"):
        modules = [MultiTokenPrediction(config, layer_cls(config, config.num_hidden_layers + k),
                                        lambda: norm_cls(config.hidden_size, eps=eps))
                   for k in range(depth)]
    model.mtp = nn.ModuleList(modules).to(dtype)


class GPTNeoXFamily(LlamaFamily):
    """model.gpt_neox.{embed_in, rotary_emb, layers, final_layer_norm} + model.lm_head."""

    inner = "gpt_neox"
    embed = "embed_in"
    norm = "final_layer_norm"
    layer_prefix = "gpt_neox.layers"


class FalconFamily(LlamaFamily):
    """model.transformer.{word_embeddings, rotary_emb, h, ln_f} + model.lm_head;
    a layer takes ALiBi biases (None: rotary Falcons) before its mask."""

    inner = "transformer"
    embed = "word_embeddings"
    stack = "h"
    norm = "ln_f"
    layer_prefix = "transformer.h"

    def __init__(self, model: nn.Module):
        if getattr(model.config, "alibi", False):
            raise CharonError("falcon with ALiBi ('alibi': true) is not supported: only rotary Falcons "
                              "(Falcon-7B/40B/180B and later) import")
        super().__init__(model)

    def layer(self, layer, x, extras, positions):
        out = layer(x, None, None, position_ids=positions, position_embeddings=self.rope_of(layer, extras))
        return out[0] if isinstance(out, tuple) else out


class GPT2Family(Family):
    """model.transformer.{wte, wpe, h, ln_f} + model.lm_head (tied to wte)."""

    layer_prefix = "transformer.h"
    extras = []

    def layers(self):
        return self.model.transformer.h

    def stem(self, ids, positions):
        t = self.model.transformer
        return (t.wte(ids) + t.wpe(positions),)

    def layer(self, layer, x, extras, positions):
        out = layer(x)
        return out[0] if isinstance(out, tuple) else out

    def final(self, h):
        return self.model.lm_head(self.model.transformer.ln_f(h))

    def stem_modules(self):
        return [self.model.transformer.wte, self.model.transformer.wpe]

    def head_modules(self):
        return [self.model.transformer.ln_f, self.model.lm_head]


FAMILIES: dict[str, type[Family]] = {
    "llama": LlamaFamily, "gpt2": GPT2Family, "gpt_neox": GPTNeoXFamily, "falcon": FalconFamily,
}


SDPA_ATTENTION = frozenset({"falcon"})
"""model_types that pick their attention class from a table of their own, not
from HF's AttentionInterface: built for "sdpa", whose
F.scaled_dot_product_attention call `_patched_for_tracing` makes the opaque
attention op."""


def build_hf_model(config_dict: dict[str, Any], dtype: torch.dtype, where: str = "config.json") -> nn.Module:
    """The HF model of a config, on the meta device, with our attention and experts
    (`where` names the config in errors)."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    torch_ops.register_hf_implementations()
    transformers.logging.set_verbosity_error()
    kwargs = dict(config_dict)
    model_type = kwargs.pop("model_type")
    try:
        config = AutoConfig.for_model(model_type, **kwargs)
    except Exception as e:  # ValueError, TypeError, huggingface_hub's StrictDataclass* errors
        raise CharonError(f"{where}: malformed config.json for {model_type}: {reason_of(e)}") from None
    config._attn_implementation = "sdpa" if model_type in SDPA_ATTENTION else torch_ops.IMPLEMENTATION
    if hasattr(config, "_experts_implementation"):
        config._experts_implementation = torch_ops.IMPLEMENTATION
    for attr in ("attn_pdrop", "resid_pdrop", "embd_pdrop", "attention_dropout", "hidden_dropout"):
        if hasattr(config, attr):
            setattr(config, attr, 0.0)
    config.use_cache = False
    with torch.device("meta"):
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        except Exception as e:  # HF raises many kinds on a bad config
            what = str(e).splitlines()[0] if str(e) else type(e).__name__
            if isinstance(e, KeyError):  # a lookup table of HF's: an activation, a rope type, ...
                what = f"a value it does not know: {what} (e.g. 'hidden_act')"
            raise CharonError(f"{where}: cannot build {model_type} from its config.json: {what}") from None
    model.eval()
    return model


LAYER_KIND_ATTRIBUTES = ("sliding_window", "layer_type", "is_sliding", "attention_type", "use_rope",
                         "attention_chunk_size")
"""Attributes by which HF layers of the same weights compute differently: a
sliding-window layer beside a full one (Mistral, Gemma 2/3, GPT-OSS), a NoPE or
chunked-attention layer (Llama 4). Layers that differ in them are traced apart."""


def _layer_kind(layer: nn.Module) -> tuple:
    kind = []
    for name, m in layer.named_modules():
        for attr in LAYER_KIND_ATTRIBUTES:
            value = getattr(m, attr, None)
            if isinstance(value, (bool, int, float, str)):
                kind.append((name, attr, value))
    return tuple(kind)


def _layer_signature(layer: nn.Module) -> tuple:
    return (
        type(layer).__name__,
        tuple((n, tuple(p.shape), p.dtype) for n, p in layer.named_parameters()),
        tuple(type(m).__name__ for m in layer.modules()),
        _layer_kind(layer),
    )


def group_layers(signatures: Sequence[Any], max_period: int = 4) -> list[LayerRun]:
    """Split a stack into runs of a repeated period of layers, greedily covering
    as many layers as possible with the shortest period."""
    runs: list[LayerRun] = []
    i, n = 0, len(signatures)
    while i < n:
        best_period, best_count = 1, 1
        for period in range(1, max_period + 1):
            if i + period > n:
                break
            count = 1
            while i + (count + 1) * period <= n and list(signatures[i + count * period: i + (count + 1) * period]) == list(signatures[i: i + period]):
                count += 1
            if count > 1 and count * period > best_count * best_period:
                best_period, best_count = period, count
        runs.append(LayerRun(i, list(range(i, i + best_period)), best_count))
        i += best_period * best_count
    return runs


@dataclass
class StepShape:
    mode: str  # train | prefill | decode
    batch: int
    seq_len: int

    @property
    def tokens_in(self) -> int:
        """Tokens this step feeds through the layers."""
        return 1 if self.mode == "decode" else self.seq_len


TORCH_TRACE_LOGGERS = ("torch._subclasses.fake_tensor",)
"""Loggers that print a traceback of their own (`log.exception`) before re-raising
an op's failure under fake tensors (a top-k past the expert count, a tensor too
large to size): the tracer turns the exception into one line, so they stay quiet."""


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """TORCH_TRACE_LOGGERS silenced while a model is traced (by any frontend:
    its caller turns the failure into one line)."""
    loggers = [logging.getLogger(name) for name in TORCH_TRACE_LOGGERS]
    was = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, disabled in zip(loggers, was):
            lg.disabled = disabled


def trace_hf_model(name: str, config_dict: dict[str, Any], family_name: str, shape: StepShape, dtype_name: str,
                   mtp: bool = True) -> TracedModel:
    """Build the HF model of a config on the meta device and trace its parts;
    a training step of a config with multi-token prediction modules
    (`num_nextn_predict_layers`) trains them too unless `mtp` is False."""
    model = build_hf_model(config_dict, DTYPES[dtype_name], name)
    if shape.mode == "train" and mtp:
        attach_mtp_modules(model, DTYPES[dtype_name])
    try:
        with quiet_torch_logs():
            return trace_parts(name, family_name, FAMILIES[family_name](model), shape, None)
    except CharonError:
        raise
    except Exception as e:  # an architecture variant the tracer does not handle
        first = str(e).splitlines()[0] if str(e) else ""
        raise CharonError(f"cannot trace {name}: {type(e).__name__}: {first}") from None


class _ReachedStack(Exception):
    """Raised by the first layer's pre-hook: the stem ends where the stack begins."""

    def __init__(self, args: tuple, kwargs: dict):
        super().__init__("the stem reached the layer stack")
        self.args_, self.kwargs_ = args, kwargs


@dataclass
class LayerStack:
    """A user module's stack of layers, found by running it once: `path` names the
    ModuleList (or Sequential); every layer is called once, in order, on the
    previous layer's output, with the same other arguments (`args`, `kwargs`:
    tensors among them are the layers' extra inputs, in `extra_slots` order)."""

    path: str
    layers: nn.ModuleList | nn.Sequential
    args: tuple
    kwargs: dict
    hidden_slot: tuple[str, int | str]
    """Where a layer takes the hidden state: ("arg", position) or ("kwarg", name)
    (Megatron-Core passes `hidden_states=`)."""
    extra_slots: list[tuple[str, int | str]]
    tuple_output: int | None
    """None when a layer returns its hidden state; else the length of the tuple
    whose first element it is."""
    stem_names: set[str]
    head_names: set[str]


def _primary(output: Any) -> torch.Tensor | None:
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    return None


def _stack_candidates(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """ModuleLists and Sequentials of two or more blocks, the largest (by
    parameters) first: the stack of a model holds most of its weights, the
    experts of one MoE layer far fewer."""
    found = []
    for name, m in module.named_modules():
        if isinstance(m, (nn.ModuleList, nn.Sequential)) and len(m) >= 2 and name:
            size = sum(p.numel() for p in m.parameters())
            if size:
                found.append((size, name, m))
    found.sort(key=lambda t: -t[0])
    return [(name, m) for _, name, m in found]


class _UsedTensors(torch.overrides.TorchFunctionMode):
    """Records which parameters and buffers (by name) each torch function reads,
    into the set `phase[0]` points to: the stem's before the first layer, the
    head's after the last."""

    def __init__(self, names: dict[int, str], phase: list[set[str] | None]):
        super().__init__()
        self.names, self.phase = names, phase

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = self.phase[0]
        if target is not None:
            for a in torch.utils._pytree.tree_leaves((args, kwargs)):
                if isinstance(a, torch.Tensor) and id(a) in self.names:
                    target.add(self.names[id(a)])
        return func(*args, **kwargs)


def find_layer_stack(model: nn.Module, shape: StepShape, param_dtype: torch.dtype | None) -> LayerStack | None:
    """Run `model` once on fake tensors and return the first candidate stack whose
    layers chain (layer i+1 reads layer i's output, with the same other inputs);
    None when no ModuleList or Sequential does."""
    candidates = _stack_candidates(model)
    if not candidates:
        return None
    names: dict[int, str] = {}
    fakes: list[Primal] = []
    with FakeTensorMode():
        for pname, p in model.named_parameters():
            dtype = param_dtype if param_dtype is not None and p.is_floating_point() else p.dtype
            fakes.append(Primal("param", pname, _fake_like(p, dtype)))
        for bname, b in model.named_buffers():
            fakes.append(Primal("buffer", bname, _fake_like(b)))
        for f in fakes:
            names[id(f.tensor)] = f.name
        ids = torch.empty((shape.batch, shape.tokens_in), dtype=torch.long)
        for path, layers in candidates:
            stack = _probe(model, path, layers, fakes, names, ids)
            if stack is not None:
                return stack
    return None


def _probe(model, path, layers, fakes, names, ids) -> LayerStack | None:
    calls: list[tuple[int, tuple, dict]] = []
    outputs: list[Any] = []
    stem: set[str] = set()
    head: set[str] = set()
    phase: list[set[str] | None] = [stem]
    handles = []
    n = len(layers)
    for i, layer in enumerate(layers):
        def pre(_m, args, kwargs, _i=i):
            calls.append((_i, args, kwargs))
            phase[0] = None
        def post(_m, args, kwargs, output, _i=i):
            outputs.append(output)
            phase[0] = head if _i == n - 1 else None
        handles.append(layer.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(layer.register_forward_hook(post, with_kwargs=True))
    try:
        with torch.no_grad(), _patched_for_tracing(), _reparametrized(model, fakes, [f.tensor for f in fakes]):
            with _UsedTensors(names, phase):
                model(ids)
    except Exception:
        return None
    finally:
        for h in handles:
            h.remove()
    if [c[0] for c in calls] != list(range(n)) or len(outputs) != n:
        return None
    first_args, first_kwargs = calls[0][1], calls[0][2]
    # the hidden state is what the second layer takes from the first's output
    second_args, second_kwargs = calls[1][1], calls[1][2]
    produced = _primary(outputs[0])
    hidden = next((("arg", j) for j, a in enumerate(second_args) if a is produced), None) or next(
        (("kwarg", k) for k, v in second_kwargs.items() if v is produced), None)
    if produced is None or hidden is None:
        return None

    def slots_of(args: tuple, kwargs: dict) -> dict:
        return {**{("arg", j): a for j, a in enumerate(args)}, **{("kwarg", k): v for k, v in kwargs.items()}}

    first = slots_of(first_args, first_kwargs)
    if not isinstance(first.get(hidden), torch.Tensor):
        return None
    for (_, args, kwargs), prev in zip(calls[1:], outputs):
        these = slots_of(args, kwargs)
        if these.keys() != first.keys() or these[hidden] is not _primary(prev):
            return None
        for slot, value in these.items():
            if slot == hidden or value is first[slot]:
                continue
            if isinstance(value, torch.Tensor) or isinstance(first[slot], torch.Tensor) or value != first[slot]:
                return None
    extras = [slot for slot, v in first.items() if slot != hidden and isinstance(v, torch.Tensor)]
    last = outputs[-1]
    tuple_output = None if isinstance(last, torch.Tensor) else len(last)
    return LayerStack(path, layers, first_args, first_kwargs, hidden, extras, tuple_output, stem, head)


class UserModuleFamily(Family):
    """A user's nn.Module mapping token ids to logits. Its stack of layers is
    found, not assumed (`find_layer_stack`): the stem is the forward up to the
    first layer's call, a layer is one call of a block with the extra inputs the
    stack passes to every layer, the head is the forward after the last layer.
    A module without such a stack is traced whole as the stem; the head then only
    computes the loss."""

    def __init__(self, model: nn.Module, stack: LayerStack | None):
        super().__init__(model)
        self.stack = stack
        self.layer_prefix = stack.path if stack else "layers"
        self.extras = [f"layer_input.{i}" for i in range(len(stack.extra_slots))] if stack else []
        if stack:
            self.stem_params = stack.stem_names
            # the head replays the stem's ops (dead, dropped): it reads its weights too
            self.head_params = stack.stem_names | stack.head_names

    def layers(self):
        return self.stack.layers if self.stack else nn.ModuleList()

    def _forward(self, ids):
        out = self.model(ids)
        if hasattr(out, "logits"):
            out = out.logits
        elif isinstance(out, (tuple, list)):
            out = out[0]
        return out

    def stem(self, ids, positions):
        if self.stack is None:
            return (self._forward(ids),)

        def stop(_m, args, kwargs):
            raise _ReachedStack(args, kwargs)

        handle = self.stack.layers[0].register_forward_pre_hook(stop, with_kwargs=True)
        try:
            self._forward(ids)
        except _ReachedStack as reached:
            args, kwargs = reached.args_, reached.kwargs_
        else:
            raise CharonError(f"{type(self.model).__name__}: the layer stack '{self.stack.path}' was not called")
        finally:
            handle.remove()
        def at(slot):
            kind, k = slot
            return args[k] if kind == "arg" else kwargs[k]

        return (at(self.stack.hidden_slot), *(at(slot) for slot in self.stack.extra_slots))

    def _call_args(self, x, extras):
        args, kwargs = list(self.stack.args), dict(self.stack.kwargs)
        for (kind, k), value in zip([self.stack.hidden_slot, *self.stack.extra_slots], [x, *extras]):
            if kind == "arg":
                args[k] = value
            else:
                kwargs[k] = value
        return args, kwargs

    def layer(self, layer, x, extras, positions):
        args, kwargs = self._call_args(x, extras)
        return _primary(layer(*args, **kwargs))

    def final(self, h):
        if self.stack is None:
            return h
        # the forward again, its layers skipped: each hands its hidden input on,
        # the last returns h; what the stem computed is dead and dropped
        n, arity = len(self.stack.layers), self.stack.tuple_output

        hidden_kind, hidden_key = self.stack.hidden_slot

        def skip(last: bool):
            def forward(*args, **kwargs):
                out = h if last else (args[hidden_key] if hidden_kind == "arg" else kwargs[hidden_key])
                return out if arity is None else (out, *(None for _ in range(arity - 1)))
            return forward

        saved = [layer.forward for layer in self.stack.layers]
        for i, layer in enumerate(self.stack.layers):
            layer.forward = skip(i == n - 1)
        try:
            return self._forward(self.head_tokens)
        finally:
            for layer, fwd in zip(self.stack.layers, saved):
                layer.forward = fwd

    def stem_modules(self):
        return [self.model]

    def head_modules(self):
        return [] if self.stack is None else [self.model]

    def loss(self, logits, labels):
        # a module whose logits need a loss of their own (Megatron-Core's share
        # of a tensor-parallel vocabulary) states it as `charon_loss`
        own = getattr(self.model, "charon_loss", None)
        return own(logits, labels) if callable(own) else super().loss(logits, labels)


def trace_user_module(module: nn.Module, shape: StepShape, dtype_name: str) -> TracedModel:
    try:
        with quiet_torch_logs():
            stack = find_layer_stack(module, shape, DTYPES[dtype_name])
            return trace_parts(type(module).__name__, "module", UserModuleFamily(module, stack), shape, DTYPES[dtype_name])
    except CharonError:
        raise
    except Exception as e:
        raise CharonError(
            f"cannot trace {type(module).__name__}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        ) from None


def trace_parts(name: str, family_name: str, family: Family, shape: StepShape, param_dtype: torch.dtype | None) -> TracedModel:
    """Trace the stem, one representative of each distinct layer, and the head.
    `param_dtype` casts floating-point weights (a user's fp32 module to bf16)."""
    model = family.model
    canonical = {}
    for pname, p in model.named_parameters():
        canonical.setdefault(id(p), pname)
    hf_count = sum(p.numel() for pname, p in model.named_parameters() if not pname.startswith(MTP_PREFIX))
    train = shape.mode == "train"
    b, s = shape.batch, shape.tokens_in
    mode = FakeTensorMode()

    def primals_of(modules: Sequence[nn.Module], only: set[str] | None = None) -> list[Primal]:
        seen: set[int] = set()
        out: list[Primal] = []
        names = {id(m): n for n, m in model.named_modules()}
        for m in modules:
            for p in m.parameters():
                if id(p) not in seen and (only is None or canonical[id(p)] in only):
                    seen.add(id(p))
                    dtype = param_dtype if param_dtype is not None and p.is_floating_point() else p.dtype
                    out.append(Primal("param", canonical[id(p)], _fake_like(p, dtype, grad=train)))
            prefix = names[id(m)]
            for bname, buf in m.named_buffers():
                full = f"{prefix}.{bname}" if prefix else bname
                if only is None or full in only:
                    out.append(Primal("buffer", full, _fake_like(buf)))
        return out

    context = shape.seq_len if shape.mode == "decode" else 0
    with mode, torch_ops.serving(shape.mode, context):
        ids = torch.empty((b, s), dtype=torch.long)
        positions = torch.empty((b, s), dtype=torch.long)

        stem_primals = primals_of(family.stem_modules(), family.stem_params) + [Primal("input", "tokens", ids), Primal("input", "positions", positions)]

        def stem_fn(*values):
            with _reparametrized(model, stem_primals, values):
                return family.stem(values[-2], values[-1])

        stem = trace_part(stem_fn, stem_primals, train)
        with torch.no_grad():
            with _reparametrized(model, stem_primals, [p.tensor for p in stem_primals]):
                stem_outs = family.stem(ids, positions)
        hidden = _fake_like(stem_outs[0], grad=train)
        extra_tensors = [_fake_like(t) for t in stem_outs[1:]]

        layers_list = family.layers()
        signatures = [_layer_signature(layer) for layer in layers_list]
        runs = group_layers(signatures)
        traced_layers: dict[int, TracedPart] = {}
        by_signature: dict[Any, int] = {}
        for run in runs:
            for idx in run.period:
                sig = signatures[idx]
                if sig in by_signature:
                    continue
                by_signature[sig] = idx
                layer = layers_list[idx]
                lp = primals_of([layer]) + [Primal("input", "hidden", hidden)]
                lp += [Primal("input", e, t) for e, t in zip(family.extras, extra_tensors)]
                lp += [Primal("input", "positions", positions)]

                def layer_fn(*values, _layer=layer, _lp=lp):
                    n_extra = len(family.extras)
                    x = values[-2 - n_extra]
                    extras = values[len(values) - 1 - n_extra: len(values) - 1]
                    with _reparametrized(model, _lp, values):
                        return family.layer(_layer, x, extras, values[-1])

                traced_layers[idx] = trace_part(layer_fn, lp, train)
        # every layer of a run maps to the traced representative of its signature
        for run in runs:
            run.period = [by_signature[signatures[i]] for i in run.period]

        head_primals = primals_of(family.head_modules(), family.head_params)
        replays = family.head_params is not None
        if replays:
            head_primals.append(Primal("input", "tokens", ids))
        head_primals.append(Primal("input", "hidden", hidden))
        if train:
            head_primals.append(Primal("input", "labels", torch.empty((b, s), dtype=torch.long)))

        def head_logits(values, last_token_only: bool):
            n = len(head_primals)
            hidden_in = values[n - 2] if train else values[n - 1]
            if last_token_only:
                hidden_in = hidden_in[:, -1:, :]
            if replays:
                family.head_tokens = values[n - 3] if train else values[n - 2]
            try:
                with _reparametrized(model, head_primals, values):
                    return family.final(hidden_in)
            finally:
                family.head_tokens = None

        if train:
            def head_fn(*values):
                return family.loss(head_logits(values, False), values[-1])
        else:
            def head_fn(*values):
                return head_logits(values, True)

        head = trace_part(head_fn, head_primals, train)
        mtp = None
        if train and (modules := list(getattr(model, MTP_PREFIX.rstrip("."), []))):
            mtp_primals = primals_of([*family.mtp_shared_modules(), *modules])
            mtp_primals += [Primal("input", "hidden", hidden), Primal("input", "tokens", ids)]
            mtp_primals += [Primal("input", e, t) for e, t in zip(family.extras, extra_tensors)]
            mtp_primals += [Primal("input", "positions", positions),
                            Primal("input", "labels", torch.empty((b, s), dtype=torch.long))]

            def mtp_fn(*values):
                n_extra = len(family.extras)
                h, tokens = values[-4 - n_extra], values[-3 - n_extra]
                extras, positions_in, labels = values[-2 - n_extra: -2], values[-2], values[-1]
                with _reparametrized(model, mtp_primals, values):
                    return family.mtp_loss(modules, h, tokens, extras, positions_in, labels)

            mtp = trace_part(mtp_fn, mtp_primals, train)
    return TracedModel(name, family_name, getattr(model, "config", None), stem, traced_layers, runs, head,
                       family.layer_prefix, hf_count, list(family.extras), mtp)
