"""Per-iteration latency of one replica, built once from the priced IR.

Pricing every decode step through the xDSL pipeline would take seconds per
step; a serving run has 10^5 steps. So, as Vidur does with its profiled
operators, the step is priced through the real pipeline at a few sizes

    import (prefill / decode IR) -> fuse -> shard-tensor{tp} [-> shard-expert{ep}]
        -> set-target -> cost-annotate [-> FP8 GEMM / KV re-pricing]

and the op times are split into families whose cost depends on one size each,
then interpolated:

- body(T): every op of the embedding and the decoder layers except attention,
  TP collectives included. A server flattens its batch to [tokens, hidden], so
  this depends only on T, the tokens in the batch (prefill chunks and decode
  tokens alike); it is read off single-sequence prefill steps of T tokens.
- head(S): final norm and LM head (ops after the layer loop) for the last token
  of each of the S sequences in the batch. The prefill IR prices it for one
  sequence (reading the LM head weight dominates); each further sequence adds
  its GEMM FLOPs at the tensor-core rate.
- attention: decode attention reads the KV cache, so its cost is a function of
  the context tokens summed over the batch. Prefill attention is a function of
  the flash kernel's tile count (compute_efficiency.attention_tiles: the BxB
  tiles a chunk of q tokens after k cached ones computes, causal mask aligned to
  the end, plus the per-query-block overhead), summed over the batch's chunks;
  the curve is read off single prompts at their own tile counts. Vidur reads its
  curve at the equivalent prompt of sqrt(sum q_i^2) tokens instead, which drops
  each short chunk's diagonal tile and block overhead (768 prompts of 128 tokens
  compute 1.8x the tiles of one 3,547-token prompt), and, read past the largest
  sample, grows linearly where attention grows with the square (a 32k prompt's
  attention was 5x short).

Tables are cached on disk (next to the IR cache), keyed by the model config,
the replica's shape and the source of the engines, so a warm run builds none.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
from bisect import bisect_right
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import charon_ir
from charon_ir.api import load_model_module, make_pass
from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import COST_ATTR
from charon_ir.engines.analytic import AnalyticEngine
from charon_ir.engines.compute_efficiency import attention_constants, attention_tiles
from charon_ir.errors import CharonError, one_line, reason_of
from charon_ir.frontend import import_versions, load_config, prefetch_steps
from charon_ir.frontend.cache import cache_root
from charon_ir.frontend.configs import expert_count, family_of
from charon_ir.passes import shard_tensor
from charon_ir.progress import progress_bar
from charon_ir.target.hardware import check_fp8, load_gpu
from charon_ir.target.target import Target

PREFILL_LENGTHS = (1, 16, 64, 128, 256, 512, 1024, 2048, 4096)
"""Single-sequence prefill lengths priced: body(T) and head(S) are read off these
(one sequence, so every GEMM has M = tokens, as in a server's flattened batch).
Spaced by 2x from 64 on: body(T) bends from the weight-read floor to compute-bound
between 64 and 1024 tokens, and a chord over a 4x gap overestimated it by up to
11 % there (llama-2-7b on A100 at 128 tokens: 12.7 ms interpolated, 11.4 ms priced)."""
DECODE_SAMPLES = ((1, 1024), (16, 1024), (64, 4096))
"""(batch, context) of the decode steps priced for decode attention."""
PRECISIONS = ("bf16", "fp8")
ATTENTION_KERNELS = ("fused", "per-head")
HEAD_GEMM_EFFICIENCY = 0.7
"""Tensor-core efficiency of the LM head GEMM of a batch of last tokens."""
TABLE_VERSION = "serving-latency-3"
"""Bump when the way tables are built changes."""


@dataclass(frozen=True)
class ReplicaShape:
    """What a latency table depends on: the model, the GPU and the parallelism of
    one replica."""

    model: str
    hardware: str
    tp: int = 1
    pp: int = 1
    ep: int = 1
    precision: str = "bf16"
    attention_kernel: str = "fused"
    """Decode attention: "fused" reads each KV head once per step (FlashAttention,
    FlashInfer, TensorRT-LLM's XQA); "per-head" reads it once per query head, as
    masked multi-head attention kernels without GQA support do (TensorRT-LLM
    before XQA), so GQA buys memory but not decode bandwidth."""

    @property
    def gpus(self) -> int:
        """GPUs of one replica: `shard-expert` adds an `ep` axis beside `tp`, so
        the replica is ep groups of tp GPUs per pipeline stage; attention runs
        data-parallel across the ep groups, the experts are split over them."""
        return self.tp * self.pp * self.ep


@dataclass(frozen=True)
class Curve:
    """A piecewise-linear function through sorted sample points, extended
    linearly past both ends (compute-bound growth beyond the largest sample)."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __call__(self, x: float) -> float:
        xs, ys = self.xs, self.ys
        if len(xs) == 1:
            return ys[0]
        i = bisect_right(xs, x)
        i = min(max(i, 1), len(xs) - 1)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        # never below the smallest sample: a kernel has a floor
        return max(y, ys[0]) if x >= xs[0] else ys[0]

    @staticmethod
    def through(points: dict[float, float]) -> Curve:
        xs = tuple(sorted(points))
        return Curve(xs, tuple(points[x] for x in xs))


@dataclass(frozen=True)
class StepTimeModel:
    """Seconds of one iteration of a replica, from the three curves."""

    body: Curve
    head_s: float
    """Final norm + LM head for one sequence."""
    head_s_per_extra_sequence: float
    decode_attention: Curve
    prefill_attention: Curve
    """Seconds by prefill tiles (prefill_chunk_tiles)."""
    attention_block_overhead: float
    """The flash kernel's per-query-block cost, in tiles (AttentionConstants.fwd_overhead)."""
    decode_attention_reads: float
    """How many times decode attention reads each KV head (see
    ReplicaShape.attention_kernel): 1, or the query heads per KV head."""
    p2p_s_per_token: float
    """Pipeline-parallel activation hand-off per token and stage boundary."""
    pp: int
    weight_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    workspace_bytes_per_token: float
    """Activation bytes live per batch token at the peak of a layer."""
    hbm_bytes: float
    shape: ReplicaShape

    def iteration_time(
        self,
        tokens: int,
        sequences: int,
        decode_context: int,
        prefill_tiles: float = 0.0,
    ) -> float:
        """One forward over `tokens` batch tokens of `sequences` sequences:
        `decode_context` cached tokens read by decode attention, `prefill_tiles`
        the attention tiles of the prefill chunks (see chunk_tiles)."""
        if tokens <= 0:
            return 0.0
        t = self.body(tokens) + self.head_s + self.head_s_per_extra_sequence * (sequences - 1)
        if decode_context > 0:
            t += self.decode_attention(decode_context) * self.decode_attention_reads
        if prefill_tiles > 0:
            t += self.prefill_attention(prefill_tiles)
        if self.pp > 1:
            t += (self.pp - 1) * self.p2p_s_per_token * tokens
        return t

    def prefill_time(self, prompt: int) -> float:
        """A prompt of `prompt` tokens alone in a batch, one chunk."""
        return self.iteration_time(prompt, 1, 0, self.chunk_tiles(prompt, 0))

    def chunk_tiles(self, chunk: int, cached: int) -> float:
        return prefill_chunk_tiles(chunk, cached, self.attention_block_overhead)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = asdict(self.shape)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> StepTimeModel:
        """The table `to_json` wrote; ValueError when a number is not a finite,
        non-negative float (a cache entry edited or damaged: NaN or negative
        latencies would stall the scheduler) or a curve's samples are not sorted."""
        curves = {k: parse_curve(k, d[k]) for k in ("body", "decode_attention", "prefill_attention")}
        rest = {k: v for k, v in d.items() if k not in curves and k != "shape"}
        for key, value in rest.items():
            _check_amount(key, value)
        shape = ReplicaShape(**d["shape"])
        if not isinstance(rest.get("pp"), int) or rest["pp"] != shape.pp:
            raise ValueError(f"pp {rest.get('pp')!r} is not the shape's {shape.pp}")
        return StepTimeModel(**curves, **rest, shape=shape)


def _check_amount(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(f"'{key}' is {value!r}, not a finite non-negative number")


def parse_curve(key: str, d: Any) -> Curve:
    """The curve a cached table stores under `key` ({"xs": sizes, "ys": times});
    ValueError naming `key` if it is not a valid curve."""
    xs, ys = tuple(d["xs"]), tuple(d["ys"])
    if not xs or len(xs) != len(ys):
        raise ValueError(f"'{key}' has {len(xs)} sizes and {len(ys)} times")
    for value in xs + ys:
        _check_amount(key, value)
    if any(b <= a for a, b in zip(xs, xs[1:])):
        raise ValueError(f"'{key}' sizes are not increasing")
    return Curve(xs, ys)


def prefill_chunk_tiles(chunk: int, cached: int, block_overhead: float) -> float:
    """The flash-attention tiles of `chunk` query tokens after `cached` ones, and
    `block_overhead` tiles per query block: what the kernel's time is
    proportional to at full waves (compute_efficiency.attention_efficiency)."""
    _, computed, query_blocks = attention_tiles(chunk, cached + chunk, causal=True)
    return computed + block_overhead * query_blocks


# --- building a table through the pipeline -----------------------------------


def price_module(module, ctx, shape: ReplicaShape):
    """Prices an imported serving step in place for one replica's shape: the
    serving kernels fused, split over its tp and ep, every op given its cost."""
    # serving engines run flash attention and fused norm / rope / SwiGLU kernels
    make_pass("fuse").apply(ctx, module)
    if shape.tp > 1:
        make_pass("shard-tensor", tp=shape.tp).apply(ctx, module)
    if shape.ep > 1:
        make_pass("shard-expert", ep=shape.ep).apply(ctx, module)
    make_pass("set-target", hardware=shape.hardware, gpus=shape.tp * shape.ep).apply(ctx, module)
    if shape.precision == "fp8":
        check_fp8(load_gpu(shape.hardware))
    # TensorRT-LLM's FP8 GEMMs: cost-annotate's fp8-gemms
    make_pass("cost-annotate", engines=("analytic",), fp8_gemms=shape.precision == "fp8").apply(ctx, module)
    if shape.precision == "fp8":
        _reprice_fp8_cache(module)


def _reprice_fp8_cache(module) -> None:
    """The FP8 KV cache of FP8 serving on bf16 IR: attention that reads the cache
    (decode) is priced again with the KV bytes halved (as a doubled bandwidth).
    The GEMMs are cost-annotate's (`fp8-gemms`); norms, activations and
    collectives stay 16-bit."""
    target = Target.from_module(module)
    kv_target = replace(target, gpu=replace(target.gpu, hbm_bandwidth=2.0 * target.gpu.hbm_bandwidth))
    engine = AnalyticEngine()
    for op in module.walk():
        if isinstance(op, sim.AttentionOp) and sim.shape_of(op.q)[1] == 1:
            cost = engine.price_compute(op, kv_target)
            op.attributes[COST_ATTR] = sim.CostAttr(cost.time_s, cost.flops, cost.bytes, cost.engine)


def _split_step(module) -> tuple[float, float, float, float]:
    """(body, head, attention, peak activation bytes of one op) of a priced step."""
    phase = next(op for op in module.body.block.ops if isinstance(op, sim.PhaseOp))
    body = head = attention = 0.0
    largest = 0.0
    after_layers = False

    def cost(op) -> float:
        attr = op.attributes.get(COST_ATTR)
        return attr.time_s.data if isinstance(attr, sim.CostAttr) else 0.0

    for op in phase.body.block.ops:
        if isinstance(op, sim.RepeatOp):
            n = op.count.value.data
            for inner in op.body.block.ops:
                if isinstance(inner, (sim.AttentionOp, sim.KVCacheReadOp, sim.KVCacheWriteOp)):
                    attention += n * cost(inner)
                else:
                    body += n * cost(inner)
                if isinstance(inner, sim.ComputeOp):
                    for r in inner.results:
                        largest = max(largest, sim.tensor_bytes(r))
            after_layers = True
        elif isinstance(op, (sim.ComputeOp, coll.CollectiveOp)):
            if after_layers:
                head += cost(op)
            else:
                body += cost(op)
    return body, head, attention, largest


def _param_bytes(module) -> float:
    return sum(sim.tensor_bytes(op.result) for op in module.walk() if isinstance(op, sim.ParamOp))


def _sample(shape: ReplicaShape, mode: str, seq_len: int, batch: int):
    ctx, module = load_model_module(shape.model, seq_len=seq_len, batch=batch, mode=mode)
    price_module(module, ctx, shape)
    return module


def _kv_bytes_per_token(config: dict[str, Any], shape: ReplicaShape) -> float:
    layers = int(config["num_hidden_layers"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or config["hidden_size"] // heads)
    if config.get("kv_lora_rank"):  # MLA caches the compressed latent and the rope key
        per_layer = int(config["kv_lora_rank"]) + int(config.get("qk_rope_head_dim") or 64)
    else:
        # kv heads are split across TP ranks, or replicated when there are fewer
        per_layer = 2 * math.ceil(kv_heads / shape.tp) * head_dim
    element = 1.0 if shape.precision == "fp8" else 2.0
    return math.ceil(layers / shape.pp) * per_layer * element


def check_shape(config: dict[str, Any], shape: ReplicaShape) -> None:
    heads = int(config["num_attention_heads"])
    for flag, n in (("--tp", shape.tp), ("--pp", shape.pp), ("--ep", shape.ep)):
        if n < 1:
            raise CharonError(f"{flag} must be >= 1, got {n}")
    if heads % shape.tp:
        raise CharonError(
            f"--tp {shape.tp} does not divide the {heads} attention heads of {shape.model}"
        )
    layers = int(config["num_hidden_layers"])
    if shape.pp > layers:
        raise CharonError(f"--pp {shape.pp} exceeds the {layers} layers of {shape.model}")
    experts = expert_count(config)
    if shape.ep > 1 and (not experts or experts % shape.ep):
        what = f"the {experts} experts" if experts else "a dense model (no experts)"
        raise CharonError(f"--ep {shape.ep} does not divide {what} of {shape.model}")
    if shape.precision not in PRECISIONS:
        raise CharonError(f"--precision must be one of {', '.join(PRECISIONS)}, got '{shape.precision}'")


def estimated_weight_bytes(config: dict[str, Any], shape: ReplicaShape) -> float:
    """Weights per GPU from the config alone (dense or MoE decoder, untied head),
    to reject a model that cannot fit before pricing anything. A lower bound:
    norms and biases are left out."""
    h = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or h // heads)
    layers = int(config["num_hidden_layers"])
    attention = 2 * h * heads * head_dim + 2 * h * kv_heads * head_dim
    experts = expert_count(config)
    # GPT-2, GPT-NeoX and Falcon have two MLP matrices (up, down), the gated families three;
    # GPT-2's width is n_inner, null for 4 x hidden
    matrices = 2 if family_of(config, shape.model) in ("gpt2", "gpt_neox", "falcon") else 3
    width = next((int(config[k]) for k in ("intermediate_size", "n_inner", "ffn_dim") if config.get(k)), 4 * h)
    if experts:
        ffn = int(config.get("moe_intermediate_size") or width)
        mlp = experts * matrices * h * ffn / shape.ep
    else:
        mlp = matrices * h * width
    vocab = int(config["vocab_size"]) * h * (1 if config.get("tie_word_embeddings") else 2)
    element = 1.0 if shape.precision == "fp8" else 2.0
    return (layers * (attention + mlp) / shape.tp / shape.pp
            + vocab / shape.tp) * element


def build_step_model(shape: ReplicaShape) -> StepTimeModel:
    """Price the sample steps through the pipeline and fit the curves."""
    _, config = load_config(shape.model)
    check_shape(config, shape)
    gpu = load_gpu(shape.hardware)
    body: dict[float, float] = {}
    decode_attention: dict[float, float] = {}
    prefill_attention: dict[float, float] = {}
    params = 0.0
    largest_per_token = 0.0
    # Only the attention of the decode samples is used: their other ops have
    # shapes [batch, 1, hidden], which the GEMM model reads as `batch` separate
    # products of one row, not one GEMM of `batch` rows.
    samples = len(DECODE_SAMPLES) + len(PREFILL_LENGTHS)
    # a model source that traces many steps at once (vLLM's, in its own Python) does so now
    prefetch_steps(shape.model, [("decode", context, batch) for batch, context in DECODE_SAMPLES]
                   + [("prefill", n, 1) for n in PREFILL_LENGTHS])
    with progress_bar(samples, f"serve: pricing {shape.model}'s steps (cached after)") as advance:
        for batch, context in DECODE_SAMPLES:
            module = _sample(shape, "decode", context, batch)
            decode_attention[batch * context] = _split_step(module)[2]
            advance()
        block_overhead = attention_constants(gpu).fwd_overhead
        for n in PREFILL_LENGTHS:
            module = _sample(shape, "prefill", n, 1)
            body[n], head_s, attention_s, largest = _split_step(module)
            # prompts within one query block compute one tile: the curve keeps the
            # full block's time (the shorter ones' are no larger)
            tiles = prefill_chunk_tiles(n, 0, block_overhead)
            prefill_attention[tiles] = max(prefill_attention.get(tiles, 0.0), attention_s)
            largest_per_token = max(largest_per_token, largest / n)
            params = _param_bytes(module)
            advance()
    hidden = int(config["hidden_size"])
    vocab_per_gpu = int(config["vocab_size"]) / shape.tp
    act_bytes = 1.0 if shape.precision == "fp8" else 2.0
    link_bw = gpu.scale_up_bandwidth or gpu.scale_out_bandwidth_per_gpu
    weight_bytes = params / shape.pp * (0.5 if shape.precision == "fp8" else 1.0)
    return StepTimeModel(
        body=Curve.through(body),
        head_s=head_s,
        head_s_per_extra_sequence=2.0 * hidden * vocab_per_gpu * (0.5 if shape.precision == "fp8" else 1.0)
        / (gpu.peak("bf16") * HEAD_GEMM_EFFICIENCY),
        decode_attention=Curve.through(decode_attention),
        prefill_attention=Curve.through(prefill_attention),
        attention_block_overhead=block_overhead,
        decode_attention_reads=1.0,
        p2p_s_per_token=hidden * act_bytes / link_bw if link_bw else 0.0,
        pp=shape.pp,
        weight_bytes_per_gpu=weight_bytes,
        kv_bytes_per_token_per_gpu=_kv_bytes_per_token(config, shape),
        # a layer's working set: a few of its largest tensors live at once
        workspace_bytes_per_token=4.0 * largest_per_token,
        hbm_bytes=gpu.hbm_bytes,
        shape=shape,
    )


# --- on-disk cache --------------------------------------------------------------


def serving_cache_dir() -> Path:
    """Where priced serving tables are cached (under the IR cache's root)."""
    return cache_root() / "serving"


PRICING_PASSES = ("fuse", "shard_tensor", "shard_expert", "set_target", "cost_annotate")
"""The passes `price_module` runs (their files, beside shard_tensor.py)."""


def source_files() -> list[Path]:
    """The code a table depends on: the engines, this module, the passes that
    price a step and the sharding rules and propagation shard-tensor and
    shard-expert run (parallel/sharding/)."""
    root = Path(charon_ir.__file__).resolve().parent
    passes = Path(shard_tensor.__file__).resolve().parent
    return (sorted((root / "engines").glob("*.py")) + sorted((root / "parallel" / "sharding").glob("*.py"))
            + [Path(__file__)] + [passes / f"{name}.py" for name in PRICING_PASSES])


def _sources_digest() -> str:
    """Hash of `source_files`: a change to an engine or to a sharding pass
    invalidates every cached table."""
    digest = hashlib.sha256(TABLE_VERSION.encode())
    for f in source_files():
        try:
            digest.update(f.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()


def table_key(shape: ReplicaShape) -> str:
    """The cache key of a replica shape's priced table: what priced it (model
    config, shape, GPU spec, the code, the import environment)."""
    _, config = load_config(shape.model)
    # the spec itself, not its name: a user's GPU file may change under one path
    gpu = load_gpu(shape.hardware)
    # the imported IR's own identity: a table priced from IR that a new frontend,
    # torch or vLLM environment would import differently is stale with it
    payload = json.dumps(
        {"config": config, "shape": asdict(shape), "gpu": gpu.name if gpu.ref == gpu.name else repr(gpu),
         "code": _sources_digest(), "import": import_versions(shape.model)},
        sort_keys=True, default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


_MEMO: dict[ReplicaShape, StepTimeModel] = {}


def step_model(shape: ReplicaShape, use_cache: bool = True) -> StepTimeModel:
    """The latency table of `shape`: from memory, the disk cache, or built.
    The attention kernel only scales decode attention: one table serves both."""
    kernel = shape.attention_kernel
    if kernel not in ATTENTION_KERNELS:
        raise CharonError(
            f"--attention-kernel must be one of {', '.join(ATTENTION_KERNELS)}, got '{kernel}'"
        )
    shape = replace(shape, attention_kernel="fused")
    if shape in _MEMO:
        return _with_kernel(_MEMO[shape], kernel)
    _, config = load_config(shape.model)
    check_shape(config, shape)
    gpu = load_gpu(shape.hardware)  # an unknown GPU fails here, before any import
    weights = estimated_weight_bytes(config, shape)
    if weights > gpu.hbm_bytes:
        raise CharonError(
            f"{shape.model} does not fit on {gpu.name} with tp={shape.tp} pp={shape.pp}: "
            f"about {weights / 2**30:.0f} GiB of weights per GPU, {gpu.hbm_bytes / 2**30:.0f} GiB of HBM"
        )
    path = serving_cache_dir() / f"{table_key(shape)}.json" if use_cache else None
    model = None
    if path is not None and path.is_file():
        try:
            model = StepTimeModel.from_json(json.loads(path.read_text()))
            if model.shape != shape:
                raise ValueError(f"it holds the table of {model.shape}")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OSError) as e:
            model = None  # a damaged entry: a miss, built again and replaced
            print(one_line(f"warning: serving latency cache {path}: {reason_of(e, 200)}; "
                           "rebuilding it"), file=sys.stderr)
    if model is None:
        model = build_step_model(shape)
        if path is not None:
            write_atomically(path, json.dumps(model.to_json()))
    _MEMO[shape] = model
    return _with_kernel(model, kernel)


def _with_kernel(model: StepTimeModel, kernel: str) -> StepTimeModel:
    if kernel == "fused":
        return model
    _, config = load_config(model.shape.model)
    heads = int(config["num_attention_heads"])
    group = heads // int(config.get("num_key_value_heads") or heads)
    return replace(model, decode_attention_reads=float(group),
                   shape=replace(model.shape, attention_kernel=kernel))


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file and a rename: a reader never
    sees half a table."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs time
