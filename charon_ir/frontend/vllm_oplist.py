"""vLLM's model code traced to a neutral op list: the script `charon_ir.frontend.vllm`
runs with the Python of a vLLM environment (CHARON_VLLM_PYTHON), since vLLM pins
versions of transformers and lark that this project's environment does not hold.

    PYTHON vllm_oplist.py CONFIG.json --dtype bf16 --step prefill:512,512 --step decode:8:4096

It builds the vLLM model class of an HF config.json (vLLM's own registry picks it:
`LlamaForCausalLM` of `vllm.model_executor.models.llama`, ...) on fake tensors,
with one rank and vLLM's compilation off (the eager model, as `enforce_eager`),
and traces with `make_fx`, for each step,
- the stem: the token embedding of the step's flattened tokens [T];
- every decoder layer: `layer(positions, hidden, residual)` -> (hidden, residual),
  the first with no residual as vLLM's model runs it; consecutive layers whose
  op lists are the same (names relative to the layer) are folded into one run;
- the head: the final norm and `compute_logits` of the last token of each sequence
  (vLLM's model normalises every token before its runner picks the last ones: one
  norm of [T, hidden] more, as the Hugging Face import also leaves out).
Each step's attention metadata is vLLM's for that batch (query_start_loc,
seq_lens, ...): a prefill step of prompts of given lengths, or a decode step of
one token per sequence reading a KV cache of `context` tokens. Traced on fake
tensors the attention op does not read it; it is written beside the ops, with
each attention layer's heads and window, for the mapping on the other side.

One JSON document goes to stdout (FORMAT); a failure is one line on stderr
(`vllm_oplist: ...`) and exit status 1. The module imports only the standard
library: torch and vLLM load in `main`, so the serialisation is unit-tested
without vLLM.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import operator
import os
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

FORMAT = "charon-vllm-ops-1"
"""Version of the document; `charon_ir.frontend.vllm` refuses another."""

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def script_digest() -> str:
    """What an imported vLLM model depends on, on the importing side: this
    script's text and that of the mapping beside it (`vllm.py`)."""
    digest = hashlib.sha256()
    for path in (__file__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vllm.py")):
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


class OpListError(Exception):
    """A step or an argument the op list cannot say (one line)."""


# --- steps and their attention metadata --------------------------------------


def parse_step(text: str) -> dict[str, Any]:
    """`prefill:L1,L2,...` (one prompt per length) or `decode:BATCH:CONTEXT` (one
    new token per sequence, attention over CONTEXT cached tokens, the new one
    included) -> the step, with vLLM's attention metadata fields."""
    mode, _, rest = text.partition(":")
    try:
        if mode == "prefill":
            query_lens = [int(x) for x in rest.split(",")]
            seq_lens = list(query_lens)
        elif mode == "decode":
            batch, context = (int(x) for x in rest.split(":"))
            query_lens, seq_lens = [1] * batch, [context] * batch
        else:
            raise ValueError
    except ValueError:
        raise OpListError(f"step {text!r}: expected prefill:LEN[,LEN...] or decode:BATCH:CONTEXT") from None
    if not query_lens or min(query_lens) < 1 or min(seq_lens) < 1:
        raise OpListError(f"step {text!r}: lengths must be >= 1")
    starts = [0]
    for n in query_lens:
        starts.append(starts[-1] + n)
    return {
        "mode": mode,
        "num_reqs": len(query_lens),
        "num_actual_tokens": starts[-1],
        "query_start_loc": starts,
        "seq_lens": seq_lens,
        "max_query_len": max(query_lens),
        "max_seq_len": max(seq_lens),
    }


# --- fx graphs to JSON -------------------------------------------------------


def op_name(target: Any) -> str:
    """`aten.mm.default`, `vllm.unified_attention_with_output.default`, `getitem`."""
    if target is operator.getitem:
        return "getitem"
    name = str(target)
    if hasattr(target, "_schema") or hasattr(target, "overloadpacket"):
        return name
    return getattr(target, "__name__", name)


def encode_arg(arg: Any, names: dict[Any, str]) -> Any:
    """An fx argument as JSON: a node as {"ref": name}; a dtype, device, layout or
    memory format as {"dtype"|"device"|"enum": text}; vLLM's layer name (a str or
    its LayerName wrapper) as itself; numbers, strings, None, lists as they are."""
    import torch
    from torch import fx

    if isinstance(arg, fx.Node):
        return {"ref": names[arg]}
    if isinstance(arg, (bool, int, float, str)) or arg is None:
        if isinstance(arg, float) and arg != arg:  # NaN: not JSON
            raise OpListError("a NaN argument")
        return arg
    if isinstance(arg, (list, tuple)):
        return [encode_arg(a, names) for a in arg]
    if isinstance(arg, torch.dtype):
        return {"dtype": str(arg).removeprefix("torch.")}
    if isinstance(arg, torch.device):
        return {"device": str(arg)}
    if isinstance(arg, (torch.layout, torch.memory_format)):
        return {"enum": str(arg).removeprefix("torch.")}
    real = getattr(arg, "real_obj", arg)  # a FakeScriptObject around vLLM's LayerName
    if isinstance(getattr(real, "value", None), str):
        return real.value
    raise OpListError(f"an argument of type {type(arg).__name__} ({str(arg)[:80]})")


def tensor_meta(value: Any) -> Any:
    """{"shape", "dtype"} of a tensor, a list of them for a tuple, None otherwise."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, (list, tuple)):
        return [tensor_meta(v) for v in value]
    return None


def graph_to_part(graph: Any, inputs: Sequence[dict[str, Any]], annotate: Callable[[Any], dict] | None = None) -> dict:
    """One traced graph as {"inputs", "ops", "outputs"}: `inputs` name its
    placeholders in order ({"kind": "param"|"buffer"|"input", "name"}); each
    call becomes {"id", "op", "args", "kwargs", "out"} (`out`: shapes and
    dtypes); `annotate(node)` adds "attrs" to an op (an attention layer's heads)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise OpListError(f"{len(placeholders)} graph inputs for {len(inputs)} names")
    names: dict[Any, str] = {}
    part_inputs = []
    for node, spec in zip(placeholders, inputs):
        names[node] = spec["name"]
        part_inputs.append({**spec, **(tensor_meta(node.meta.get("val")) or {})})
    ops = []
    outputs: list[Any] = []
    for node in graph.nodes:
        if node.op == "call_function":
            names[node] = f"%{len(ops)}"
            record = {"id": names[node], "op": op_name(node.target),
                      "args": encode_arg(list(node.args), names),
                      "kwargs": {k: encode_arg(v, names) for k, v in node.kwargs.items()},
                      "out": tensor_meta(node.meta.get("val"))}
            attrs = annotate(node) if annotate else None
            if attrs:
                record["attrs"] = attrs
            ops.append(record)
        elif node.op == "output":
            outputs = encode_arg(node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]], names)
        elif node.op != "placeholder":
            raise OpListError(f"graph node {node.name} ({node.op}): only calls are written")
    return {"inputs": part_inputs, "ops": ops, "outputs": outputs}


def relative(part: dict, prefix: str) -> str:
    """A layer's part as text with its own prefix (`model.layers.7.`) taken out of
    every name: equal texts are layers that compute the same ops."""
    return json.dumps(part, sort_keys=True).replace(prefix, "<layer>.")


def fold_layers(parts: Sequence[dict], prefixes: Sequence[str]) -> list[dict]:
    """Consecutive layers whose ops are the same (names relative to the layer) as
    runs {"first", "count", "prefix", "part"}: the part is the run's first layer's."""
    runs: list[dict] = []
    last = None
    for i, (part, prefix) in enumerate(zip(parts, prefixes)):
        text = relative(part, prefix)
        if runs and text == last:
            runs[-1]["count"] += 1
            continue
        runs.append({"first": i, "count": 1, "prefix": prefix, "part": part})
        last = text
    return runs


# --- vLLM --------------------------------------------------------------------


def _vllm_config(config_path: str, dtype: str, max_len: int, folder: str):
    """vLLM's config of the model: vLLM reads a model folder's config.json."""
    from vllm.config import CompilationConfig, ModelConfig, VllmConfig
    from vllm.config.compilation import CompilationMode

    with open(config_path) as f:
        config = json.load(f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    model = ModelConfig(model=folder, skip_tokenizer_init=True, dtype=DTYPES[dtype], max_model_len=max_len,
                        enforce_eager=True)
    return VllmConfig(model_config=model, compilation_config=CompilationConfig(mode=CompilationMode.NONE))


def _one_rank() -> None:
    """vLLM's tensor, pipeline and data parallel groups of one rank (gloo)."""
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    with socket.socket() as s:  # a free port for the one-rank group's store
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                 distributed_init_method=f"tcp://127.0.0.1:{port}", backend="gloo")
    initialize_model_parallel(1, 1)


def _eager_linears(model: Any) -> None:
    """vLLM's CPU linears call `layer.cpu_linear`, which weight loading sets (to a
    oneDNN or a plain F.linear): with no weights loaded, F.linear."""
    import torch.nn.functional as F

    for module in model.modules():
        if hasattr(module, "quant_method") and not hasattr(module, "cpu_linear"):
            module.cpu_linear = lambda x, weight, bias=None: F.linear(x, weight, bias)


def _opaque_experts(model: Any) -> None:
    """vLLM's MoE layers as the one op vLLM's GPU path records (`vllm.moe_forward`):
    on the CPU vLLM calls the experts' kernel directly, which weight loading
    sets up (`moe_kernel`), so with no weights it cannot run."""
    import torch

    for module in model.modules():
        if hasattr(module, "_forward_entry") and hasattr(module, "routed_experts"):
            module._forward_entry = (torch.ops.vllm.moe_forward if getattr(module, "_shared_experts", None) is None
                                     else torch.ops.vllm.moe_forward_shared)


def _experts_attrs(model: Any, names: dict[int, str]) -> dict[str, dict]:
    """Each MoE layer's routing and expert weights, by its layer name."""
    import torch

    out = {}
    for module in model.modules():
        experts = getattr(module, "routed_experts", None)
        if experts is None or not hasattr(module, "layer_name"):
            continue
        weights = {k: names[id(getattr(experts, k))] for k in ("w13_weight", "w2_weight", "w13_bias", "w2_bias")
                   if isinstance(getattr(experts, k, None), torch.Tensor)}
        gate = getattr(module, "gate", None)
        if gate is not None:  # the runner computes the router logits itself (Qwen3-MoE): from these
            weights["gate_weight"] = names[id(gate.weight)]
            if isinstance(getattr(gate, "bias", None), torch.Tensor):
                weights["gate_bias"] = names[id(gate.bias)]
        out[module.layer_name] = {
            "layer": module.layer_name, "num_experts": int(experts.global_num_experts), "top_k": int(experts.top_k),
            "renormalize": bool(getattr(experts, "renormalize", False)),
            "scoring_func": str(getattr(experts, "scoring_func", "softmax")),
            "activation": str(getattr(experts, "activation", "silu")).split(".")[-1].lower(),
            "grouped_topk": bool(getattr(experts, "use_grouped_topk", False)), "weights": weights}
    return out


def _attention_attrs(model: Any) -> Callable[[Any], dict]:
    """An annotator: a vLLM attention op gets its layer's heads, head size and
    window (read off the `Attention` module its layer name names)."""
    from vllm.model_executor.layers.attention.attention import Attention

    layers = {m.layer_name: m for m in model.modules() if isinstance(m, Attention)}

    experts: dict[str, dict] | None = None

    def annotate(node) -> dict:
        nonlocal experts
        if op_name(node.target).startswith("vllm.moe_forward"):
            if experts is None:
                names = {id(t): n for n, t in reversed([*model.named_parameters(), *model.named_buffers()])}
                experts = _experts_attrs(model, names)
            name = node.args[4]
            name = getattr(getattr(name, "real_obj", name), "value", getattr(name, "real_obj", name))
            if name not in experts:
                raise OpListError(f"MoE op of unknown layer {name!r}")
            return experts[name]
        if not op_name(node.target).startswith("vllm.unified_attention"):
            return {}
        name = node.args[4] if len(node.args) > 4 else node.kwargs.get("layer_name")
        real = getattr(name, "real_obj", name)
        name = getattr(real, "value", real)
        layer = layers.get(name)
        if layer is None:
            raise OpListError(f"attention op of unknown layer {name!r}")
        return {"layer": name, "num_heads": layer.num_heads, "num_kv_heads": layer.num_kv_heads,
                "head_size": layer.head_size, "head_size_v": getattr(layer, "head_size_v", layer.head_size),
                "scale": float(layer.impl.scale) if hasattr(layer.impl, "scale") else None,
                "sliding_window": layer.sliding_window or 0,
                "causal": str(getattr(layer, "attn_type", "decoder")).lower().endswith("decoder")}

    return annotate


def trace_model(config_path: str, dtype: str, steps: Sequence[dict]) -> dict:
    """The document of `steps` of the model of the HF config at `config_path`."""
    max_len = max(step["max_seq_len"] for step in steps)
    with tempfile.TemporaryDirectory(prefix="charon-vllm-") as folder:
        return _trace(_vllm_config(config_path, dtype, max_len, folder), dtype, steps)


def _trace(vllm_config: Any, dtype: str, steps: Sequence[dict]) -> dict:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils.stateless import _reparametrize_module
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context
    from vllm.model_executor.model_loader.utils import get_model_architecture

    model_class, architecture = get_model_architecture(vllm_config.model_config)
    doc: dict[str, Any] = {"format": FORMAT, "architecture": architecture,
                           "model_class": f"{model_class.__module__}.{model_class.__qualname__}",
                           "versions": {"vllm": _version("vllm"), "torch": torch.__version__},
                           "dtype": dtype, "steps": []}
    with set_current_vllm_config(vllm_config):
        _one_rank()
        act = getattr(torch, DTYPES[dtype])
        with FakeTensorMode(allow_non_fake_inputs=True), _default_dtype(act):
            # weights in the model's dtype, as vLLM's loader builds them
            model = model_class(vllm_config=vllm_config)
            _eager_linears(model)
            _opaque_experts(model)
            inner = model.model
            layers = list(inner.layers)
            from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding

            # `embed_tokens` in most classes, `embedding` in GPT-OSS's
            embedding = next(m for m in inner.children() if isinstance(m, VocabParallelEmbedding))
            hidden = int(vllm_config.model_config.get_hidden_size())
            annotate = _attention_attrs(model)
            # canonical names: a weight the head shares with the embedding is the embedding's
            names = {id(t): n for n, t in reversed([*model.named_parameters(), *model.named_buffers()])}

            def trace(fn: Callable, modules: Sequence[Any], inputs: list[tuple[str, Any]]) -> dict:
                """`fn(*inputs)` with the modules' weights and buffers as the graph's first inputs."""
                state: dict[str, Any] = {}
                for m in modules:
                    for t in [*m.parameters(), *m.buffers()]:
                        state.setdefault(names[id(t)], t)
                keys = list(state)

                def flat(*values):
                    with _reparametrize_module(model, dict(zip(keys, values[:len(keys)]))):
                        return fn(*values[len(keys):])

                specs = [{"kind": "param" if isinstance(state[k], torch.nn.Parameter) else "buffer", "name": k}
                         for k in keys]
                specs += [{"kind": "input", "name": n} for n, _ in inputs]
                with set_forward_context(None, vllm_config):
                    gm = make_fx(flat, tracing_mode="fake")(*state.values(), *(t for _, t in inputs))
                return graph_to_part(gm.graph, specs, annotate)

            for step in steps:
                tokens, reqs = step["num_actual_tokens"], step["num_reqs"]
                ids = torch.zeros(tokens, dtype=torch.long)
                positions = torch.zeros(tokens, dtype=torch.long)
                # distinct tensors: one passed twice would be one graph input
                h, res = torch.empty(tokens, hidden, dtype=act), torch.empty(tokens, hidden, dtype=act)
                stem = trace(inner.embed_input_ids, [embedding], [("ids", ids)])
                parts, prefixes = [], []
                for i, layer in enumerate(layers):
                    if i == 0:  # vLLM's model hands the first layer no residual
                        part = trace(lambda p, x, _l=layer: _l(p, x, None), [layer],
                                     [("positions", positions), ("hidden", h)])
                    else:
                        part = trace(layer, [layer], [("positions", positions), ("hidden", h), ("residual", res)])
                    parts.append(part)
                    prefixes.append(f"model.layers.{i}.")
                last, last_res = torch.empty(reqs, hidden, dtype=act), torch.empty(reqs, hidden, dtype=act)

                def head(x, r):
                    normed, _ = inner.norm(x, r)
                    return model.compute_logits(normed)

                head_part = trace(head, [inner.norm, model.lm_head], [("hidden", last), ("residual", last_res)])
                doc["steps"].append({**step, "stem": stem, "layers": fold_layers(parts, prefixes),
                                     "num_layers": len(layers), "head": head_part})
    return doc


@contextlib.contextmanager
def _default_dtype(dtype: Any) -> Iterator[None]:
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return version(f"{package}-cpu") if package == "vllm" else "none"


def describe(error: BaseException) -> str:
    """One line: the error, its message, and the line of code that raised it (a
    bare `assert` of vLLM's says nothing else)."""
    first = str(error).splitlines()[0][:300] if str(error) else ""
    frames = traceback.extract_tb(error.__traceback__)
    where = ""
    if frames:
        frame = frames[-1]
        path = frame.filename.replace(os.sep, "/")
        path = path[path.rfind("/vllm/") + 1:] if "/vllm/" in path else os.path.basename(path)
        where = f" at {path}:{frame.lineno}" + (f" ({frame.line.strip()[:120]})" if frame.line else "")
    return f"{type(error).__name__}{': ' + first if first else ''}{where}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", help="an HF config.json")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--step", action="append", required=True, help="prefill:L1,L2,... or decode:BATCH:CONTEXT")
    args = parser.parse_args(argv)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    try:
        steps = [parse_step(s) for s in args.step]
        doc = trace_model(args.config, args.dtype, steps)
    except OpListError as e:
        print(f"vllm_oplist: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # vLLM refused the config or an op failed on fake tensors
        print(f"vllm_oplist: {describe(e)}", file=sys.stderr)
        return 1
    json.dump(doc, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    # run as a file, its folder leads sys.path: `import vllm` would find the
    # importing side's charon_ir/frontend/vllm.py there, not vLLM
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.exit(main())
