"""The torch frontend: a model (HF config or nn.Module) to sim IR, without a GPU
and without weights.

    from charon_ir.frontend import import_model, param_count, forward_flops
    module = import_model("llama-3.1-8b", seq_len=4096, batch=1)

MODEL is a bundled name (`bundled_models()`), a path to an HF config.json, or an
nn.Module that maps token ids [batch, seq] to logits. torch is imported only when
a model is actually traced; a cached import needs neither torch nor transformers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.parser import Parser

from charon_ir.dialects.coll import Coll
from charon_ir.dialects import sim
from charon_ir.dialects.sim import Sim
from charon_ir.errors import CharonError
from charon_ir.frontend import cache as ir_cache
from charon_ir.frontend.configs import (
    MEGATRON_PREFIX,
    VLLM_PREFIX,
    bundled_models,
    family_of,
    load_config,
    load_megatron_config,
)
from charon_ir.frontend.metrics import compute_ops, forward_flops, mtp_param_count, op_count, param_count, phase_flops
from charon_ir.frontend.vllm_oplist import script_digest
from charon_ir.progress import status

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "ImportResult",
    "bundled_models",
    "compute_ops",
    "forward_flops",
    "import_model",
    "import_model_with_summary",
    "import_versions",
    "load_config",
    "mtp_param_count",
    "op_count",
    "param_count",
    "parse_ir",
    "phase_flops",
]

MODES = ("train", "prefill", "decode")
DTYPE_NAMES = ("bf16", "fp16", "fp32")
MAX_TOKENS = 2**31 - 1
"""Tokens one traced micro-batch may hold (the longest contexts are ~1e7 tokens)."""


@dataclass
class ImportResult:
    module: ModuleOp | None
    """None only when asked not to parse a cache hit (`parse=False`)."""
    name: str
    from_cache: bool
    seconds: float
    summary: list[str] = field(default_factory=list)
    hf_param_count: int | None = None
    cache_file: Path | None = None
    text: str | None = None
    """The IR as text, when it was printed or read anyway (cache write or hit)."""


def _check_options(seq_len: int, batch: int, mode: str, dtype: str) -> None:
    if mode not in MODES:
        raise CharonError(f"unknown mode '{mode}'; expected one of {', '.join(MODES)}")
    if dtype not in DTYPE_NAMES:
        raise CharonError(f"unknown dtype '{dtype}'; expected one of {', '.join(DTYPE_NAMES)}")
    if seq_len < 1 or batch < 1:
        raise CharonError(f"seq_len and batch must be >= 1, got seq_len={seq_len}, batch={batch}")
    if seq_len * batch > MAX_TOKENS:
        raise CharonError(f"sequence length x batch is {seq_len:,} x {batch:,} = {seq_len * batch:,} tokens; "
                          f"at most {MAX_TOKENS:,} (torch's and the IR's sizes are 64-bit)")


__all__ += ["MEGATRON_PREFIX", "VLLM_PREFIX"]


def _versions(megatron: bool = False, vllm: bool = False) -> dict[str, str]:
    out = {}
    for pkg in ("torch", "transformers", "xdsl") + (("megatron-core",) if megatron else ()):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "none"
    if vllm:
        # the vLLM environment is another Python: named by its path and the
        # tracing script's text (its packages are not read without running it)
        out["vllm-python"] = os.environ.get("CHARON_VLLM_PYTHON", "")
        out["vllm-oplist"] = script_digest()
    return out


def import_versions(model: str) -> dict[str, str]:
    """What an import of `model` depends on beyond its config and options, as
    the IR cache keys it: the frontend's version, the packages' (Megatron-Core's
    for a `megatron:` model) and, for vLLM's model code, its Python and the
    mapping's text. What is built from imported IR (a serving table) keys on it too."""
    model = str(model)
    return {**_versions(model.startswith(MEGATRON_PREFIX), model.startswith(VLLM_PREFIX)),
            "frontend": ir_cache.FRONTEND_VERSION}


def parse_ir(text: str) -> ModuleOp:
    """Parse IR text (as printed by the frontend: sim ops, and the `coll`
    collectives of model code that parallelises itself) into a module."""
    ctx = Context()
    for dialect in (Builtin, Sim, Coll):
        ctx.load_dialect(dialect)
    return Parser(ctx, text).parse_module()


def _annotate(module: ModuleOp, name: str, mode: str, seq_len: int, batch: int, dtype: str, summary, hf_count: int | None) -> None:
    attrs: dict[str, Any] = {
        sim.MODEL_ATTR: StringAttr(name),
        sim.MODE_ATTR: StringAttr(mode),
        sim.SEQ_LEN_ATTR: IntegerAttr(seq_len, 64),
        sim.BATCH_ATTR: IntegerAttr(batch, 64),
        sim.DTYPE_ATTR: StringAttr(dtype),
        sim.FRONTEND_ATTR: StringAttr(ir_cache.FRONTEND_VERSION),
    }
    if hf_count is not None:
        attrs[sim.HF_PARAM_COUNT_ATTR] = IntegerAttr(hf_count, 64)
    # aten ops that became no op at all, and those priced only as sim.generic:
    # listed so that nothing disappears silently
    attrs[sim.FREE_OPS_ATTR] = DictionaryAttr({k: IntegerAttr(v, 64) for k, v in sorted(summary.free.items())})
    attrs[sim.GENERIC_OPS_ATTR] = DictionaryAttr({k: IntegerAttr(v, 64) for k, v in sorted(summary.generic.items())})
    module.attributes.update(attrs)


def prefetch_steps(model: str, steps: list[tuple[str, int, int]], dtype: str = "bf16") -> None:
    """Trace the serving steps (mode, seq_len, batch) of `model` ahead, all in one
    go where its source gains by it: vLLM's model code (`vllm:`) starts vLLM once
    for all of them, not once per step. Steps already in the IR cache are
    skipped; any other model: nothing to do (each import traces its own step)."""
    if not model.startswith(VLLM_PREFIX):
        return
    _, config = load_config(model)
    versions = _versions(vllm=True)
    missing = [s for s in steps if ir_cache.read(ir_cache.cache_key(
        {"vllm": config}, {"seq_len": s[1], "batch": s[2], "mode": s[0], "dtype": dtype}, versions)) is None]
    if missing:
        from charon_ir.frontend.tracing import StepShape
        from charon_ir.frontend.vllm import prefetch

        with status(f"tracing {len(missing)} steps of {model} in vLLM's Python (once)"):
            prefetch(config, [StepShape(mode, batch, seq_len) for mode, seq_len, batch in missing], dtype)


def import_model_with_summary(
    model: str | Path | nn.Module,
    *,
    seq_len: int = 2048,
    batch: int = 1,
    mode: str = "train",
    dtype: str = "bf16",
    use_cache: bool = True,
    parse: bool = True,
    mtp: bool = True,
    tp: int = 1,
    sequence_parallel: bool = False,
) -> ImportResult:
    """Like `import_model`, also saying how the aten ops were mapped and whether
    the cache answered. With `parse=False` a cache hit returns only the text (the
    CLI copies it out without paying for the parser)."""
    start = time.perf_counter()
    _check_options(seq_len, batch, mode, dtype)
    if not isinstance(model, (str, Path)):
        return _import_module(model, seq_len=seq_len, batch=batch, mode=mode, dtype=dtype, start=start)
    megatron = isinstance(model, str) and model.startswith(MEGATRON_PREFIX)
    vllm = isinstance(model, str) and model.startswith(VLLM_PREFIX)
    if vllm and mode == "train":
        raise CharonError(f"{model}: vLLM's model code is imported for serving (--mode prefill or decode); "
                          f"a training step imports {model.removeprefix(VLLM_PREFIX)}")
    if (tp != 1 or sequence_parallel) and not megatron:
        raise CharonError(f"{model}: only a megatron: model is imported at a tensor-parallel size (tp {tp}); "
                          "the passes split any other")
    if sequence_parallel and tp == 1:
        raise CharonError("sequence parallelism needs a tensor-parallel size above 1")
    if megatron:
        name, config = load_megatron_config(model)
    else:
        name, config = load_config(model)
    options: dict[str, Any] = {"seq_len": seq_len, "batch": batch, "mode": mode, "dtype": dtype}
    if not mtp:
        options["mtp"] = False
    if tp != 1:
        options.update(tp=tp, sequence_parallel=sequence_parallel)
    source = {"megatron": config} if megatron else {"vllm": config} if vllm else config
    key = ir_cache.cache_key(source, options, _versions(megatron, vllm))
    if use_cache and (text := ir_cache.read(key)) is not None:
        if not parse:
            return ImportResult(None, name, True, time.perf_counter() - start,
                                cache_file=ir_cache.cache_path(key), text=text)
        try:
            module = parse_ir(text)
        except Exception:  # a stale or damaged entry: import again below
            module = None
        if module is not None:
            return ImportResult(module, name, True, time.perf_counter() - start,
                                cache_file=ir_cache.cache_path(key), text=text)
    from charon_ir.frontend.builder import ModuleBuilder
    from charon_ir.frontend.tracing import StepShape, trace_hf_model, trace_user_module

    # a cold import takes 10-40 s (torch, then one decoder layer traced): say so on a terminal
    with status(f"importing {name} ({mode}, seq {seq_len}, batch {batch}): tracing one decoder layer; "
                "cached after"):
        if megatron:
            from charon_ir.frontend.megatron import build_megatron_model, on_cpu, on_tensor_parallel_mesh

            with on_cpu():
                traced = trace_user_module(build_megatron_model(config, model, tp, sequence_parallel),
                                           StepShape(mode, batch, seq_len), dtype)
        elif vllm:
            from charon_ir.frontend.vllm import trace_vllm_model

            traced = trace_vllm_model(name, config, StepShape(mode, batch, seq_len), dtype)
        else:
            traced = trace_hf_model(name, config, family_of(config, name), StepShape(mode, batch, seq_len), dtype,
                                    mtp)
        builder = ModuleBuilder(traced, mode)
        module = builder.build()
        if tp != 1:  # a megatron: model, imported as one tp rank
            on_tensor_parallel_mesh(module, tp, sequence_parallel)
    _annotate(module, name, mode, seq_len, batch, dtype, builder.summary, traced.hf_param_count)
    module.verify()
    text = str(module)
    path = ir_cache.write(key, text) if use_cache else None
    return ImportResult(module, name, False, time.perf_counter() - start, builder.summary.lines(),
                        traced.hf_param_count, path, text)


def _import_module(module: nn.Module, *, seq_len: int, batch: int, mode: str, dtype: str, start: float) -> ImportResult:
    from charon_ir.frontend.builder import ModuleBuilder
    from charon_ir.frontend.tracing import StepShape, trace_user_module

    name = type(module).__name__
    traced = trace_user_module(module, StepShape(mode, batch, seq_len), dtype)
    builder = ModuleBuilder(traced, mode)
    ir = builder.build()
    _annotate(ir, name, mode, seq_len, batch, dtype, builder.summary, traced.hf_param_count)
    ir.verify()
    return ImportResult(ir, name, False, time.perf_counter() - start, builder.summary.lines(), traced.hf_param_count)


def import_model(
    model: str | Path | nn.Module,
    *,
    seq_len: int = 2048,
    batch: int = 1,
    mode: str = "train",
    dtype: str = "bf16",
    use_cache: bool = True,
    mtp: bool = True,
    tp: int = 1,
    sequence_parallel: bool = False,
) -> ModuleOp:
    """Import a model as sim IR.

    mode "train": forward, backward and an AdamW optimizer phase over `batch`
    sequences of `seq_len` tokens; "prefill": one forward over the prompt, writing
    the KV cache; "decode": one token per sequence attending to `seq_len` cached
    tokens. Bundled names and config files are cached on disk (CHARON_CACHE_DIR,
    default ~/.cache/charon/ir); nn.Modules are traced every time. A training
    step of a config with multi-token prediction (DeepSeek-V3's
    `num_nextn_predict_layers`) trains its MTP modules after the stack, unless
    `mtp` is False. A `megatron:` model is built and traced as one rank of `tp`
    tensor-parallel ranks (with Megatron-Core's `sequence_parallel`): its
    weights and activations are that rank's, its collectives `coll.*` ops on
    the `tp` axis of the module's `coll.grid @mesh`.
    """
    return import_model_with_summary(
        model, seq_len=seq_len, batch=batch, mode=mode, dtype=dtype, use_cache=use_cache, mtp=mtp,
        tp=tp, sequence_parallel=sequence_parallel,
    ).module
