"""
Training records of `published.json` as `simulate` runs.

A record states a model's dimensions, the GPUs, the parallel strategy and one
measured number. `training_case` turns it into an HF-style config.json (written
to a cache directory) plus the keyword arguments of `charon_ir.api.simulate`,
and turns the measured number into an iteration time:

- `iteration_time` records are compared as they are;
- `tokens_per_sec_per_gpu` records: time = global batch x seq / (tokens/s/GPU x GPUs);
- `achieved_tflops_per_gpu` and `MFU` records: time = F / (GPUs x TFLOP/s), where F
  is the FLOP count of one step *by the source's own formula* (`SOURCE_FLOPS`),
  never the simulator's: the sources count FLOPs differently (Narayanan's eq. 3
  includes the recompute forward, Megatron-Core's formula does not).

Fields a record leaves unstated get the defaults of `DEFAULTS`, listed with the
reason in docs/calibration.md; every case carries the assumptions it made, so the
output can show which numbers rest on them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from charon_ir.engines.calibration import record_gpu


class Unsupported(Exception):
    """A record this module cannot map to a simulate run (the message says why)."""


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


def source_of(record: dict[str, Any]) -> str:
    """The publication a record comes from, as a short key (the id's prefix)."""
    rid = record["id"]
    for prefix in ("narayanan21", "korthikanti22", "megatron_readme", "mpt"):
        if rid.startswith(prefix):
            return prefix
    return rid.split("_")[0]


def narayanan_eq3_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan et al. 2021, eq. (3): F = 96 B s l h^2 (1 + s/6h + V/16lh). It
    counts the recompute forward (4 forward passes' worth of matmuls)."""
    b, s, l, h, v = batch, seq, layers, hidden, vocab
    return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


def megatron_core_flops(
    batch: int, seq: int, layers: int, hidden: int, vocab: int, heads: int, kv_heads: int,
    ffn: int, swiglu: bool = False,
) -> float:
    """Megatron-LM `num_floating_point_operations` (megatron/training/training.py,
    r0.8.0), the formula its logged "TFLOP/s/GPU" divides by: 3 x forward matmul
    FLOPs (no recompute), causal attention counted as full (s/h term)."""
    b, s, l, h, v = batch, seq, layers, hidden, vocab
    gated = 1.5 if swiglu else 1.0
    attention = 1 + kv_heads / heads + s / h
    mlp = ffn / h * gated
    logits = v / (2 * l * h)
    return 12 * b * s * l * h * h * (attention + mlp + logits)


SOURCE_FLOPS: dict[str, str] = {
    "narayanan21": "eq. (3) of the paper, F = 96Bslh^2(1 + s/6h + V/16lh) (record notes)",
    "megatron_readme": "Megatron-LM num_floating_point_operations (training.py, r0.8.0): "
    "12Bslh^2(1 + kv/heads + s/h + ffn/h + V/2lh); MFU = TFLOP/s / 989",
}


# ---------------------------------------------------------------------------
# Defaults for unstated fields
# ---------------------------------------------------------------------------

DEFAULT_MICRO_BATCH = 1
"""Megatron-LM's `--micro-batch-size` in its paper-era GPT-3 example
(examples/pretrain_gpt3_175B.sh: 1, with TP 8 x PP 16, fp16, activation
checkpointing); it divides every row's batch per data-parallel rank."""

DEFAULT_RECOMPUTE_MEGATRON_CORE = "none"
"""Megatron-Core's default (no `--recompute-*` flag): the README's H100 table
states no recomputation."""


def _int_in(value: Any) -> int | None:
    """The integer a field holds, or leads with ("8 (assumed, ...)" -> 8)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = re.match(r"\s*(\d+)", value)
        if m:
            return int(m.group(1))
    return None


def _recompute(strategy: dict[str, Any], source: str, assumptions: list[str]) -> str:
    text = str(strategy.get("recompute", "")).lower()
    if strategy.get("activation_checkpointing") is True:
        return "full"
    if strategy.get("activation_checkpointing") is False:
        return "none"
    if text.startswith("full"):
        if "assumed" in text:
            assumptions.append("recompute full (assumed by the record)")
        return "full"
    if text.startswith("selective"):
        return "selective"
    if "baseline" in text or text in ("none", "false"):
        return "none"
    assumptions.append(f"recompute {DEFAULT_RECOMPUTE_MEGATRON_CORE} (not stated)")
    return DEFAULT_RECOMPUTE_MEGATRON_CORE


def _sequence_parallel(strategy: dict[str, Any], source: str, tp: int, assumptions: list[str]) -> bool:
    if "sequence_parallel" not in strategy and source == "megatron_readme":
        # the strong-scaling rows state no flags; they are the weak-scaling runs' setup
        strategy = {"sequence_parallel": "likely, as the weak-scaling rows"}
    value = strategy.get("sequence_parallel", False)
    if isinstance(value, bool):
        return value and tp > 1
    if "likely" in str(value).lower() and tp > 1:
        assumptions.append("sequence parallel (likely, not stated)")
        return True
    return False


def _distributed_optimizer(strategy: dict[str, Any], source: str, assumptions: list[str]) -> int:
    """ZeRO stage 1 where the run used Megatron's distributed optimizer: its
    `--overlap-param-gather` is refused without `--use-distributed-optimizer`
    (megatron/training/arguments.py)."""
    overlaps = strategy.get("overlaps")
    if overlaps is None and source == "megatron_readme":
        assumptions.append("distributed optimizer (as the weak-scaling rows)")
        return 1
    return 1 if "overlap-param-gather" in str(overlaps or "") else 0


def _overlap_param_gather(strategy: dict[str, Any], source: str, assumptions: list[str]) -> bool:
    """Megatron-Core's `--overlap-param-gather` where the record states it; the
    strong-scaling rows, which state no flags, as the weak-scaling ones."""
    overlaps = strategy.get("overlaps")
    if overlaps is None and source == "megatron_readme":
        assumptions.append("overlap-param-gather (as the weak-scaling rows)")
        return True
    return "overlap-param-gather" in str(overlaps or "")


def _tp_comm_overlap(strategy: dict[str, Any], source: str, sequence_parallel: bool,
                     assumptions: list[str]) -> bool:
    """Megatron-Core's `--tp-comm-overlap` where the record states it (it needs
    sequence parallelism); the strong-scaling rows, which state no flags, as the
    weak-scaling ones."""
    if not sequence_parallel:
        return False
    overlaps = strategy.get("overlaps")
    if overlaps is None and source == "megatron_readme":
        assumptions.append("tp-comm-overlap (as the weak-scaling rows)")
        return True
    return "tp-comm-overlap" in str(overlaps or "")


def megatron_core_bucket_mb(dp: int, element_bytes: int = 2) -> int:
    """Megatron-Core's gradient bucket when `--ddp-bucket-size` is not given:
    max(40M, 1M x dp) parameters (megatron/core/distributed/
    distributed_data_parallel.py, r0.8), in MiB of bf16 gradients."""
    return -(-max(40_000_000, 1_000_000 * dp) * element_bytes // 2**20)


# ---------------------------------------------------------------------------
# Model configs
# ---------------------------------------------------------------------------


def _is_llama(model: dict[str, Any]) -> bool:
    arch = str(model.get("arch", "")).lower()
    return any(word in arch for word in ("llama", "swiglu", "gqa", "rmsnorm"))


def padded_vocab(vocab: int, tp: int) -> int:
    """Megatron pads the vocabulary to a multiple of 128 x TP
    (`--make-vocab-size-divisible-by 128`), so the head splits evenly."""
    multiple = 128 * tp
    return -(-vocab // multiple) * multiple


def hf_config(model: dict[str, Any], tp: int) -> dict[str, Any]:
    """An HF config.json for a record's model dimensions: GPT-style models (MHA,
    GeLU MLP, LayerNorm; MPT too, whose ALiBi and bias-free layers change no
    matmul) as GPT-2, SwiGLU/GQA ones as Llama."""
    layers, hidden, heads = model["layers"], model["hidden"], model["heads"]
    kv_heads = model.get("kv_heads") or heads
    ffn = model.get("ffn") or 4 * hidden
    seq = model["seq_len"]
    vocab = model["vocab"] if tp == 1 else padded_vocab(model["vocab"], tp)
    if _is_llama(model):
        return {
            "model_type": "llama", "architectures": ["LlamaForCausalLM"],
            "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "intermediate_size": ffn, "vocab_size": vocab,
            "max_position_embeddings": seq, "tie_word_embeddings": False,
        }
    # MPT's MLP is nn.GELU(approximate='none') (llm-foundry MPTMLP); Megatron's
    # fused bias-GeLU is the tanh form, HF GPT-2's `gelu_new`
    activation = "gelu" if "mpt" in str(model.get("arch", "")).lower() else "gelu_new"
    return {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
        "activation_function": activation, "n_layer": layers, "n_embd": hidden,
        "n_head": heads, "n_inner": ffn, "n_positions": seq, "n_ctx": seq,
        "vocab_size": vocab, "tie_word_embeddings": True,
    }


def config_path(config: dict[str, Any], directory: Path) -> Path:
    """The config written once under `directory`, named by its content's hash."""
    text = json.dumps(config, sort_keys=True, indent=1)
    name = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = directory / f"record-{name}" / "config.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # a unique temporary name: parallel validation workers may write the
        # same record's config at once (the content is the same)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


# ---------------------------------------------------------------------------
# Records -> cases
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingCase:
    id: str
    source: str
    config: dict[str, Any]
    """The HF config.json of the record's model."""
    options: dict[str, Any]
    """Keyword arguments of `charon_ir.api.simulate` (besides the model)."""
    measured_iteration_s: float
    measured_text: str
    """The record's own number, as published (`137 TFLOP/s per GPU`)."""
    assumptions: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> int:
        return self.options["gpus"]


def _measured_iteration_s(record: dict[str, Any], source: str, tokens: int, gpus: int,
                          dims: dict[str, Any]) -> float:
    metric, value = record["metric"], float(record["value"])
    if metric == "iteration_time":
        return value
    if metric == "tokens_per_sec_per_gpu":
        return tokens / (value * gpus)
    if metric in ("achieved_tflops_per_gpu", "MFU"):
        tflops = value
        if metric == "MFU":
            peak = record["hardware"].get("peak_dense_tflops", {}).get("bf16")
            if not peak:
                raise Unsupported("MFU record without a bf16 peak to convert it")
            tflops = value / 100 * peak
        flops = _source_flops(source)(dims)
        return flops / (gpus * tflops * 1e12)
    raise Unsupported(f"metric '{metric}' is not a step time, a throughput or a FLOP rate")


def _source_flops(source: str) -> Callable[[dict[str, Any]], float]:
    if source == "narayanan21":
        return lambda d: narayanan_eq3_flops(d["batch"], d["seq"], d["layers"], d["hidden"], d["vocab"])
    if source == "megatron_readme":
        return lambda d: megatron_core_flops(
            d["batch"], d["seq"], d["layers"], d["hidden"], d["padded_vocab"], d["heads"],
            d["kv_heads"], d["ffn"], d["swiglu"],
        )
    raise Unsupported(f"no FLOP formula known for source '{source}'")


def training_case(record: dict[str, Any]) -> TrainingCase:
    """The simulate run of one training record (raises Unsupported)."""
    if record["category"] != "training":
        raise Unsupported(f"category '{record['category']}' is not a training step")
    source = source_of(record)
    model, hardware, strategy = record["model"], record["hardware"], record["strategy"]
    assumptions: list[str] = []
    gpus = int(hardware["num_gpus"])
    for key in ("tp", "pp"):
        value = strategy.get(key)
        degree = _int_in(value)
        if value is not None and (degree is None or degree < 1):  # ran as 1 with only a note
            raise Unsupported(f"strategy.{key} {value!r} is not a degree >= 1")
    tp = _int_in(strategy.get("tp")) or 1
    pp = _int_in(strategy.get("pp")) or 1
    for key in ("tp", "pp", "dp"):
        if isinstance(strategy.get(key), str):
            assumptions.append(f"{key} {strategy[key]}")
    if gpus % (tp * pp):
        raise Unsupported(f"{gpus} GPUs do not divide by tp x pp = {tp} x {pp}")
    dp = gpus // (tp * pp)
    global_batch = _int_in(strategy.get("global_batch"))
    if not global_batch:
        raise Unsupported("no global batch")
    micro_batch = _int_in(strategy.get("micro_batch"))
    if micro_batch is None:
        micro_batch = DEFAULT_MICRO_BATCH
        assumptions.append(f"micro-batch {DEFAULT_MICRO_BATCH} (not stated)")
    vpp = _int_in(strategy.get("interleaved_virtual_stages")) or 1
    zero_text = str(strategy.get("zero") or "")
    fsdp = "FULL_SHARD" in str(strategy.get("fsdp", "")) or "ZeRO-3" in zero_text
    zero = 0 if fsdp else _distributed_optimizer(strategy, source, assumptions)
    precision = "fp8" if "fp8" in str(strategy.get("precision", "")).lower() else "bf16"
    seq = int(model["seq_len"])
    sequence_parallel = _sequence_parallel(strategy, source, tp, assumptions)
    options: dict[str, Any] = {
        "hardware": record_gpu(record),
        "gpus": gpus,
        "gpus_per_node": int(hardware.get("gpus_per_node") or 8),
        "tp": tp, "pp": pp, "dp": dp, "vpp": vpp,
        "sequence_parallel": sequence_parallel,
        "tp_comm_overlap": _tp_comm_overlap(strategy, source, sequence_parallel, assumptions),
        "fsdp": fsdp,
        "zero": zero,
        "seq_len": seq,
        "global_batch": global_batch,
        "micro_batch": micro_batch,
        "recompute": _recompute(strategy, source, assumptions),
        "precision": precision,
    }
    if source == "megatron_readme":
        options["dp_bucket_mb"] = megatron_core_bucket_mb(dp)
    if zero == 1 and _overlap_param_gather(strategy, source, assumptions):
        options["dp_overlap_param_gather"] = True
    if source in ("narayanan21", "korthikanti22") and "DeepSpeed" not in str(strategy.get("framework", "")):
        # Megatron-LM 2021-22, `DDP_impl local`: `allreduce_gradients()` after
        # `forward_backward_func` in `train_step`, one all-reduce per buffer
        options["dp_overlap"] = False
        # its pipeline (megatron/p2p_communication.py `_communicate`): a TP-
        # replicated tensor crosses stages as 1/tp slices all-gathered on arrival
        # (`scatter_gather_tensors_in_pipeline`, on by default; Narayanan et al.
        # 2021, sec. 4.1), and every batched isend/irecv is waited for
        # (`req.wait()`, then `torch.cuda.synchronize()`)
        options["pipeline_scatter_gather"] = True
        blocking = ["pp"]
        if source == "narayanan21":
            # Megatron-LM 2021 (v2.x, megatron/mpu/layers.py): the column-parallel
            # backward all-reduce is `copy_to_tensor_model_parallel_region`'s plain
            # `torch.distributed.all_reduce`; the async one that overlaps it with
            # the weight-gradient GEMM (`--no-async-tensor-model-parallel-allreduce`)
            # came with the 2022 code Korthikanti et al. ran
            blocking.insert(0, "tp")
        options["blocking_comm"] = tuple(blocking)
        # Megatron-LM's Float16OptimizerWithFloat16Params (megatron/optimizer/
        # optimizer.py) around apex FusedAdam: fp16 gradients copied to fp32 main
        # gradients and unscaled, the gradient norm, then the fp32 -> fp16 copy,
        # each its own kernel; fp16 as the era's example scripts (`--fp16`)
        options["optimizer"] = "unfused-fp16"
        # its local DDP adds each micro-batch's weight gradients into the
        # contiguous gradient buffer in a kernel of its own (`param.main_grad.
        # add_(param.grad.data)`, megatron/model/distributed.py), fp16 buffer: 6 B
        # per parameter; gradient-accumulation fusion came in mid-2022
        options["unfused_grad_accumulation"] = True
    if "triton" in str(strategy.get("framework", "")).lower():
        # llm-foundry's benchmark runs: `--attn_impl triton` by default
        # (scripts/train/benchmarking/submit_benchmarks.py)
        options["attention_kernel"] = "triton"
    config = hf_config(model, tp)
    dims = {
        "batch": global_batch, "seq": seq, "layers": model["layers"], "hidden": model["hidden"],
        "vocab": model["vocab"], "padded_vocab": padded_vocab(model["vocab"], tp),
        "heads": model["heads"], "kv_heads": model.get("kv_heads") or model["heads"],
        "ffn": model.get("ffn") or 4 * model["hidden"], "swiglu": _is_llama(model),
    }
    measured = _measured_iteration_s(record, source, global_batch * seq, gpus, dims)
    return TrainingCase(
        id=record["id"], source=source, config=config, options=options,
        measured_iteration_s=measured,
        measured_text=f"{record['value']:g} {record['unit']}",
        assumptions=tuple(assumptions),
    )
