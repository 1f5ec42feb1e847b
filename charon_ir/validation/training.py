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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from charon_ir.api import configure
from charon_ir.errors import CharonError
from charon_ir.frameworks import DEFAULT_FRAMEWORK
from charon_ir.frontend.configs import bundled_models, check_config, load_config
from charon_ir.validation import record_gpu


class Unsupported(Exception):
    """A record this module cannot map to a simulate run (the message says why)."""


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


def source_of(record: dict[str, Any]) -> str:
    """The publication a record comes from, as a short key (the id's prefix)."""
    rid = record["id"]
    for prefix in ("narayanan21", "korthikanti22", "megatron_readme", "megatron_examples",
                   "nemo2407", "nemo_longseq", "mbridge", "mpt"):
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


def nemo_llama_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int, heads: int,
                     kv_heads: int, ffn: int) -> float:
    """NeMo's `FLOPsMeasurementCallback._llama2` (NVIDIA/NeMo
    nemo/collections/common/metrics/perf_metrics.py), the formula behind its
    "TFLOPS / GPU" tables: B s l h^2 (12 + 12 kv/heads + 18 ffn/h + 12 s/h +
    6 V/lh), V the unpadded vocabulary (`LLM_VOCAB_SIZE_MAP["llama2"]` 32000).
    Causal attention counted as full (the 12 s/h term), no recompute."""
    b, s, l, h, v = batch, seq, layers, hidden, vocab
    return b * s * l * h * h * (12 + 12 * kv_heads / heads + 18 * ffn / h + 12 * s / h + 6 * v / (l * h))


SOURCE_FLOPS: dict[str, str] = {
    "narayanan21": "eq. (3) of the paper, F = 96Bslh^2(1 + s/6h + V/16lh) (record notes)",
    "megatron_readme": "Megatron-LM num_floating_point_operations (training.py, r0.8.0): "
    "12Bslh^2(1 + kv/heads + s/h + ffn/h + V/2lh); MFU = TFLOP/s / 989",
    "nemo_longseq": "NeMo FLOPsMeasurementCallback._llama2 (common/metrics/perf_metrics.py): "
    "Bslh^2(12 + 12kv/heads + 18ffn/h + 12s/h + 6V/lh), V unpadded; causal attention counted full",
}


# ---------------------------------------------------------------------------
# Defaults for unstated fields
# ---------------------------------------------------------------------------

DEFAULT_MICRO_BATCH = 1
"""Megatron-LM's `--micro-batch-size` in its paper-era GPT-3 example
(examples/pretrain_gpt3_175B.sh: 1, with TP 8 x PP 16, fp16, activation
checkpointing); it divides every row's batch per data-parallel rank."""

DEFAULT_RECOMPUTE = "none"
"""No `--recompute-*` flag: Megatron-Core's default, and the README's H100 table
and the NeMo / Megatron-Bridge performance tables state no recomputation."""


def int_in(value: Any) -> int | None:
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


# ---------------------------------------------------------------------------
# Frameworks: the preset each record ran under
# ---------------------------------------------------------------------------

FRAMEWORK_OF_TEXT: tuple[tuple[str, str], ...] = (
    (r"DeepSpeed", "deepspeed-0.3"),
    (r"Megatron-LM \(2021\)|Megatron-LM PTD-P", "megatron-lm-2021"),
    (r"Megatron-LM \(2022\)|^Megatron-LM$", "megatron-lm-2022"),
    (r"llm-foundry|Composer", "llm-foundry"),
    (r"Megatron-Bridge|NeMo 2[5-9]\.", "megatron-bridge"),
    (r"NeMo 24\.", "nemo-24.07"),
    (r"Megatron-Core", "megatron-core"),
)
"""A record's `strategy.framework` text -> the `--framework` preset of that stack
(first match; `charon_ir.frameworks` lists the presets)."""


FRAMEWORK_OF_SOURCE: dict[str, str] = {
    "narayanan21": "megatron-lm-2021",
    "korthikanti22": "megatron-lm-2022",
    "megatron_readme": "megatron-core",
    "mpt": "llm-foundry",
}
"""The preset of a record that names no framework (Korthikanti's per-layer rows):
the code its publication ran."""


def framework_of(record: dict[str, Any]) -> str | None:
    """The framework preset a record ran under: its `strategy.framework`, else
    its publication's; None when neither says (the caller assumes the default)."""
    text = str(record["strategy"].get("framework", ""))
    for pattern, name in FRAMEWORK_OF_TEXT:
        if re.search(pattern, text):
            return name
    return FRAMEWORK_OF_SOURCE.get(source_of(record))


def _recompute(strategy: dict[str, Any], assumptions: list[str]) -> str:
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
    assumptions.append(f"recompute {DEFAULT_RECOMPUTE} (not stated)")
    return DEFAULT_RECOMPUTE


def _stated_settings(strategy: dict[str, Any], tp: int) -> dict[str, Any]:
    """The settings a record states itself (its framework's preset decides the
    rest): sequence parallelism, the ZeRO stage or FSDP, Megatron-Core's overlap
    flags as listed in `overlaps`."""
    stated: dict[str, Any] = {}
    sequence_parallel = strategy.get("sequence_parallel")
    if isinstance(sequence_parallel, bool):
        stated["sequence_parallel"] = sequence_parallel and tp > 1
    if "FULL_SHARD" in str(strategy.get("fsdp", "")) or "ZeRO-3" in str(strategy.get("zero") or ""):
        stated["fsdp"] = True
        stated["zero"] = 0
    overlaps = strategy.get("overlaps")
    if overlaps is not None:
        # `--overlap-param-gather` is refused without `--use-distributed-optimizer`
        # (megatron/training/arguments.py)
        gather = "overlap-param-gather" in str(overlaps)
        stated["zero"] = 1 if gather else 0
        stated["dp_overlap_param_gather"] = gather
        stated["dp_overlap"] = "overlap-grad-reduce" in str(overlaps)
        if "tp-comm-overlap" not in str(overlaps):
            stated["tp_comm_overlap"] = False
    return stated


MBRIDGE_PERF_CONFIGS: dict[tuple[str, str], dict[str, Any]] = {
    ("deepseek-v3", "H100"): {"moe_dispatcher": "flex", "recompute": "selective",
                              "recompute_modules": ("mla_up_proj", "mlp"),
                              "pp_layout": (1, *[2] * 30, 0), "moe_routing": "random"},
    ("deepseek-v3", "B200"): {"moe_dispatcher": "flex", "recompute": "selective",
                              "recompute_modules": ("mla_up_proj",),
                              "pp_layout": (4, *[4] * 14, 1), "moe_routing": "random"},
    ("deepseek-v3", "GB200"): {"moe_dispatcher": "flex", "recompute": "selective",
                               "recompute_modules": ("mla_up_proj",),
                               "pp_layout": (4, *[4] * 14, 1), "moe_routing": "random"},
    ("qwen3-30b-a3b", "H100"): {"moe_dispatcher": "flex", "moe_routing": "random"},
    ("gpt-oss-120b", "H100"): {"recompute": "selective", "recompute_modules": ("layernorm", "moe_act"),
                               "micro_batch": 1, "moe_routing": "random"},
}
"""What the Megatron-Bridge performance configs behind its performance-summary
tables set beyond the layout a row states, by (model, GPU): DeepSeek-V3 on
every GPU and Qwen3-30B-A3B on H100 run `moe_token_dispatcher_type="flex"` with
`moe_flex_dispatcher_backend="hybridep"` (NVIDIA-NeMo/Megatron-Bridge
scripts/performance/configs/deepseek/deepseek_workload_base_configs.py and
qwen/qwen3_workload_base_configs.py); GPT-OSS-120B's set none (NCCL all-to-all).
Their `recompute_modules` (selective recompute of named sub-blocks): DeepSeek-V3
H100 ["mla_up_proj", "mlp"], B200 and GB200 BF16 ["mla_up_proj"]; GPT-OSS-120B
H100 ["layernorm", "moe_act"] (gpt_oss/gpt_oss_workload_base_configs.py);
Qwen3-30B-A3B H100 none. Every MoE row runs dropless with
`moe_router_force_load_balancing=True` (the table's footnote: "force-balance tokens
across experts"; `set_qwen3_common_configs` in qwen/qwen3_llm_pretrain.py: "required
for token dropless"): random router logits, `moe_routing="random"`. GPT-OSS-120B H100's micro-batch is 1: its config
`GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1` sets none and inherits
`micro_batch_size=1` from `BASE_GPT_OSS_120B_CONFIG` (GBS 512, EP 8; 07eea52),
where the record's micro-batch 4 x grad-accum 2 x dp 16 is 128, not its global
batch 512 (`batch_doubt`). Their `expert_tensor_parallel_size=1` is the
megatron-bridge preset's. DeepSeek-V3 on H100 (pp 8 x vp 4) sets
`layout="Et|(tt|)*30mL"` (deepseek/deepseek_llm_pretrain.py): the embedding and one
layer, thirty chunks of two, and the MTP module and the loss alone on the last
chunk. B200 (pp 16) and GB200 (pp 4 x vp 4) pass `layout=None`, and the recipe
(`recipes/deepseek/deepseek_v3.py`, `_deepseek_v3_common`) then takes its
`layout_map` entry for (pp, vp) = (16, 1) and (4, 4): the embedding and four
layers, fourteen chunks of four, one layer with the MTP module and the loss. Without
a layout the 61 layers could not run on 16 stages: Megatron-Core's
`get_num_layers_to_build` asserts "num_layers should be divisible by
pipeline_model_parallel_size"."""


MBRIDGE_CONFIG_CONFLICTS: dict[tuple[str, str], str] = {
    ("deepseek-v3", "H100"): (
        "moe_a2a_overlap not settled (megatron-bridge preset: off): Megatron-Bridge "
        "scripts/performance/configs/deepseek/deepseek_llm_pretrain.py @ 0132842 calls "
        "set_moe_a2a_overlap_overrides (overlap_moe_expert_parallel_comm=True, delay_wgrad_compute=True) "
        "for both H100 configs, deepseek_workload_base_configs.py @ 0426418 sets moe_a2a_overlap=False, "
        "deepseek_v3_llm_pretrain.py @ 27dfb3d applies moe_a2a_1f1b_overrides only under its a2a_1f1b "
        "argument (H100 FP8 default False); which revision the 25.09 container ran is not pinned"),
}
"""Settings of a Megatron-Bridge performance row that the revisions of its config
read disagree on, by (model, GPU): the row runs the preset's value and its notes
name the conflict (docs/calibration.md, "Expert all-to-alls waited for")."""


NEMO_LAUNCHER_CONFIGS: dict[tuple[str, str], dict[str, Any]] = {
    ("nemotron-4 340b", "H100"): {"grad_bytes": 2},
}
"""What the NeMo Framework Launcher's training config of a NeMo 24.07 record's model
sets beyond the layout the row states, where it departs from the nemo-24.07 preset:
Nemotron-4 340B's `optim: {name: mcore_distributed_optim, grad_sync_dtype: bf16}`
(NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/nemotron/
nemotron_340b.yaml, commit 3be81fc), which NeMo 1.0 turns into
`grad_reduce_in_fp32=False` (megatron_base_model.py
`setup_mcore_distributed_parallel`: `grad_reduce_in_fp32=(optim.grad_sync_dtype ==
'fp32')`): bf16 gradient buffers, not the preset's fp32 main gradients."""


NEMO_LONGSEQ_CONFIGS: dict[tuple[str, str], dict[str, Any]] = {
    ("llama-2-7b", "H100"): {"micro_batch": 1, "recompute": "none"},
}
"""What the NeMo long-sequence table's runs left unstated (its rows give the layout,
and a later revision of the page the global batch), from the NeMo Framework
Launcher's training config of the model, the one its performance runs start from:
Llama-2-7B `micro_batch_size: 1` and `activations_checkpoint_granularity: null`
with `activations_checkpoint_num_layers: 0`, no recomputation
(NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/llama/llama2_7b.yaml).
Both are also what a 4K-1024K row must run at to fit: micro-batch 2 is predicted
over 80 GB at 4K and 16K."""


PERF_CONFIG_LABEL: dict[str, str] = {
    "mbridge": "performance config",
    "nemo2407": "performance config",
    "nemo_longseq": "not stated; NeMo-Framework-Launcher llama2_7b.yaml",
}
"""How a case's notes name where a setting of `_perf_config` came from."""


def batch_doubt(strategy: dict[str, Any], dp: int, global_batch: int) -> str | None:
    """Why a record's own batch fields contradict each other (micro-batch x
    grad-accum x dp is not its global batch), or None when they agree or it
    states no grad-accum."""
    micro_batch, grad_accum = int_in(strategy.get("micro_batch")), int_in(strategy.get("grad_accum"))
    if not micro_batch or not grad_accum or micro_batch * grad_accum * dp == global_batch:
        return None
    return (f"the record's micro-batch {micro_batch} x grad-accum {grad_accum} x dp {dp} = "
            f"{micro_batch * grad_accum * dp}, not its global batch {global_batch}")


def _perf_config(record: dict[str, Any], hardware: str) -> dict[str, Any]:
    configs = {"mbridge": MBRIDGE_PERF_CONFIGS, "nemo2407": NEMO_LAUNCHER_CONFIGS,
               "nemo_longseq": NEMO_LONGSEQ_CONFIGS}.get(source_of(record))
    if configs is None:
        return {}
    return dict(configs.get(_config_key(record, hardware), {}))


def _config_key(record: dict[str, Any], hardware: str) -> tuple[str, str]:
    """(model, GPU), as the per-row config tables are keyed."""
    return str(record["model"].get("name", "")).lower(), hardware.split("-")[0].upper()


FP8_RECIPE_OF_TEXT: tuple[tuple[str, str], ...] = (
    (r"FP8-CS|current", "current"),
    (r"FP8-MX|MXFP8", "mxfp8"),
    (r"blockwise", "blockwise"),
    (r"hybrid|delayed|FP8-DS", "delayed"),
)
"""A record's precision text -> the fp8 recipe it names; none named: the preset's."""


def _precision(strategy: dict[str, Any]) -> dict[str, Any]:
    text = str(strategy.get("precision", ""))
    if "fp8" not in text.lower():
        return {"precision": "bf16"}
    for pattern, recipe in FP8_RECIPE_OF_TEXT:
        if re.search(pattern, text, re.IGNORECASE):
            return {"precision": "fp8", "fp8_recipe": recipe}
    return {"precision": "fp8"}


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


BUNDLED_MODEL_OF_NAME: dict[str, str] = {
    "deepseek-v3": "deepseek-v3",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "gpt-oss-120b": "gpt-oss-120b",
}
"""Records whose model a few dimensions cannot describe (MoE routing, MLA, sliding
windows): their published config, bundled with the frontend, by the record's
model name in lower case. Used only where its layers and hidden size agree."""


def _bundled_config(model: dict[str, Any]) -> dict[str, Any] | None:
    name = BUNDLED_MODEL_OF_NAME.get(str(model.get("name", "")).lower())
    if name is None or name not in bundled_models():
        return None
    _, config = load_config(name)
    if (config.get("num_hidden_layers"), config.get("hidden_size")) != (model["layers"], model["hidden"]):
        return None
    return config


def _is_squared_relu(model: dict[str, Any]) -> bool:
    return "squared-relu" in str(model.get("arch", "")).lower()


def hf_config(model: dict[str, Any], tp: int) -> dict[str, Any]:
    """An HF config.json for a record's model dimensions: GPT-style models (MHA,
    GeLU MLP, LayerNorm; MPT too, whose ALiBi and bias-free layers change no
    matmul) as GPT-2, SwiGLU/GQA ones as Llama, squared-ReLU ones as Nemotron;
    MoE models as their bundled config (`BUNDLED_MODEL_OF_NAME`). Raises
    Unsupported for a model the frontend cannot import."""
    if model.get("moe") or model.get("active_params_b"):
        config = _bundled_config(model)
        if config is None:
            raise Unsupported(f"MoE model {model.get('name')!r}: no bundled config of its dimensions")
        return _importable(config)
    layers, hidden, heads = model["layers"], model["hidden"], model["heads"]
    kv_heads = int_in(model.get("kv_heads")) or heads
    ffn = int_in(model.get("ffn")) or 4 * hidden
    seq = model["seq_len"]
    vocab = model["vocab"] if tp == 1 else padded_vocab(model["vocab"], tp)
    if _is_squared_relu(model):
        # Nemotron-4 (NeMo's NemotronConfig): squared ReLU without a gate,
        # LayerNorm1P, half the head dims rotated, no biases, untied embeddings
        return _importable({
            "model_type": "nemotron", "architectures": ["NemotronForCausalLM"], "hidden_act": "relu2",
            "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "intermediate_size": ffn, "vocab_size": vocab, "partial_rotary_factor": 0.5,
            "max_position_embeddings": seq, "tie_word_embeddings": False,
        })
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


def _importable(config: dict[str, Any]) -> dict[str, Any]:
    """`config`, or Unsupported naming why the frontend refuses its family."""
    try:
        check_config(dict(config), "the record's model")
    except CharonError as e:
        raise Unsupported(f"the frontend cannot import it yet: {e}") from None
    return config


def config_path(config: dict[str, Any], directory: Path, prefix: str = "record") -> Path:
    """The config written once under `directory`, in a folder named by `prefix`
    and its content's hash."""
    text = json.dumps(config, sort_keys=True, indent=1)
    name = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = directory / f"{prefix}-{name}" / "config.json"
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
    """Keyword arguments of `charon_ir.api.simulate` (besides the model and the
    framework): what the record states, and the defaults of `DEFAULT_*` for what
    it leaves out that no framework decides."""
    framework: str
    """The `--framework` preset of the record's stack (`framework_of`)."""
    measured_iteration_s: float
    measured_text: str
    """The record's own number, as published (`137 TFLOP/s per GPU`)."""
    assumptions: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> int:
        return self.options["gpus"]

    @property
    def settings(self) -> dict[str, Any]:
        """Every TrainingConfig setting of the run: the record's, then its
        framework's preset, then the defaults."""
        config, _ = configure("", self.framework, **self.options)
        return {f.name: getattr(config, f.name) for f in fields(config) if f.name != "model"}


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
    if source == "nemo_longseq":
        return lambda d: nemo_llama_flops(
            d["batch"], d["seq"], d["layers"], d["hidden"], d["vocab"], d["heads"], d["kv_heads"], d["ffn"],
        )
    if source == "megatron_readme":
        return lambda d: megatron_core_flops(
            d["batch"], d["seq"], d["layers"], d["hidden"], d["padded_vocab"], d["heads"],
            d["kv_heads"], d["ffn"], d["swiglu"],
        )
    raise Unsupported(f"no FLOP formula known for source '{source}'")


def case_options(case: TrainingCase) -> dict[str, Any]:
    """The case's `api.simulate` options, with the memory check reported, not
    enforced: a published run did fit, so the time is compared even where
    memory-analysis disagrees, and the row is flagged."""
    return dict(case.options, memory_limit_gb=1e9)


def training_case(record: dict[str, Any]) -> TrainingCase:
    """The simulate run of one training record (raises Unsupported): the record's
    stated layout, batch and settings, under its framework's preset."""
    if record["category"] != "training":
        raise Unsupported(f"category '{record['category']}' is not a training step")
    source = source_of(record)
    model, hardware, strategy = record["model"], record["hardware"], record["strategy"]
    assumptions: list[str] = []
    framework = framework_of(record)
    if framework is None:
        framework = DEFAULT_FRAMEWORK
        assumptions.append(f"framework {DEFAULT_FRAMEWORK} (not stated)")
    gpus = int(hardware["num_gpus"])
    for key in ("tp", "pp", "cp", "ep"):
        value = strategy.get(key)
        degree = int_in(value)
        if value is not None and (degree is None or degree < 1):  # ran as 1 with only a note
            raise Unsupported(f"strategy.{key} {value!r} is not a degree >= 1")
    tp = int_in(strategy.get("tp")) or 1
    pp = int_in(strategy.get("pp")) or 1
    cp = int_in(strategy.get("cp")) or 1
    ep = int_in(strategy.get("ep")) or 1
    for key in ("tp", "pp", "dp"):
        if isinstance(strategy.get(key), str):
            assumptions.append(f"{key} {strategy[key]}")
    if gpus % (tp * pp * cp):
        raise Unsupported(f"{gpus} GPUs do not divide by tp x pp x cp = {tp} x {pp} x {cp}")
    dp = gpus // (tp * pp * cp)
    global_batch = int_in(strategy.get("global_batch"))
    if not global_batch:
        raise Unsupported(f"no global batch (strategy.global_batch {strategy.get('global_batch')!r})")
    if isinstance(strategy["global_batch"], str):  # a figure with where it was read
        assumptions.append(f"global batch {strategy['global_batch']}")
    micro_batch = int_in(strategy.get("micro_batch"))
    if micro_batch is None:
        micro_batch = DEFAULT_MICRO_BATCH
        assumptions.append(f"micro-batch {DEFAULT_MICRO_BATCH} (not stated)")
    vpp = int_in(strategy.get("interleaved_virtual_stages", strategy.get("vp"))) or 1
    seq = int(model["seq_len"])
    options: dict[str, Any] = {
        "hardware": record_gpu(record),
        "gpus": gpus,
        "gpus_per_node": int_in(hardware.get("gpus_per_node")) or 0,
        "tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "vpp": vpp,
        "seq_len": seq,
        "global_batch": global_batch,
        "micro_batch": micro_batch,
        "recompute": _recompute(strategy, assumptions),
        **_precision(strategy),
        **_stated_settings(strategy, tp),
    }
    perf_config = _perf_config(record, options["hardware"])
    label = PERF_CONFIG_LABEL.get(source, "performance config")
    if "recompute" in perf_config:
        assumptions[:] = [a for a in assumptions if not a.startswith("recompute ")]
        modules = ",".join(perf_config.get("recompute_modules", ()))
        assumptions.append(f"recompute {perf_config['recompute']} {modules} ({label})".replace("  ", " "))
    doubt = batch_doubt(strategy, dp, global_batch)
    if "micro_batch" in perf_config:
        assumptions[:] = [a for a in assumptions if not a.startswith("micro-batch ")]
        assumptions.append(f"micro-batch {perf_config['micro_batch']} ({label}"
                           + (f"; {doubt})" if doubt else ")"))
    elif doubt:
        assumptions.append(f"batch doubt: {doubt}")
    if "pp_layout" in perf_config:
        assumptions.append(f"pp layout {','.join(map(str, perf_config['pp_layout']))} ({label})")
    if source == "mbridge":
        conflict = MBRIDGE_CONFIG_CONFLICTS.get(_config_key(record, options["hardware"]))
        if conflict:
            assumptions.append(conflict)
    options.update(perf_config)
    config = hf_config(model, tp)
    dims = {
        "batch": global_batch, "seq": seq, "layers": model["layers"], "hidden": model["hidden"],
        "vocab": model["vocab"], "padded_vocab": padded_vocab(model["vocab"], tp),
        "heads": model["heads"], "kv_heads": int_in(model.get("kv_heads")) or model["heads"],
        "ffn": int_in(model.get("ffn")) or 4 * model["hidden"], "swiglu": _is_llama(model),
    }
    measured = _measured_iteration_s(record, source, global_batch * seq, gpus, dims)
    return TrainingCase(
        id=record["id"], source=source, config=config, options=options, framework=framework,
        measured_iteration_s=measured,
        measured_text=f"{record['value']:g} {record['unit']}",
        assumptions=tuple(assumptions),
    )
