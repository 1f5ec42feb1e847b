"""Model configs: the bundled HF config.json files and user-given ones.

Nothing here imports torch: listing and validating a config is cheap, so the
CLI can reject a bad name or file before paying for `import torch`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from charon_ir.errors import CharonError, parse_json, read_text

def _bundled_dir():
    """The directory of the shipped configs (package data of charon_ir.frontend)."""
    return resources.files("charon_ir.frontend").joinpath("models")

SUPPORTED_MODEL_TYPES: dict[str, str] = {
    "llama": "llama",
    "mistral": "llama",
    "mixtral": "llama",
    "qwen2": "llama",
    "qwen2_moe": "llama",
    "qwen3": "llama",
    "qwen3_moe": "llama",
    "deepseek_v2": "llama",
    "deepseek_v3": "llama",
    "gemma2": "llama",
    "gemma3_text": "llama",
    "phi3": "llama",
    "olmo2": "llama",
    "olmoe": "llama",
    "granite": "llama",
    "cohere": "llama",
    "starcoder2": "llama",
    "nemotron": "llama",
    "gpt_oss": "llama",
    "llama4_text": "llama",
    "gpt_neox": "gpt_neox",
    "falcon": "falcon",
    "gpt2": "gpt2",
}
"""HF `model_type` -> the layout family the tracer knows (where the embedding,
the decoder layers and the head live)."""


def bundled_models() -> list[str]:
    """Names of the configs shipped with the package (`llama-3.1-8b`, ...)."""
    root = _bundled_dir()
    return sorted(
        p.name.removesuffix(".json") for p in root.iterdir() if p.name.endswith(".json")
    )


def _read_json(text: str, where: str) -> dict[str, Any]:
    data = parse_json(text, where, "config.json")
    if not isinstance(data, dict):
        raise CharonError(f"{where}: malformed config.json: expected a JSON object")
    return data


VLLM_PREFIX = "vllm:"
"""`vllm:MODEL`: the model class vLLM runs for MODEL's HF config (a bundled name or
a config.json), imported for serving (charon_ir/frontend/vllm.py)."""


MEGATRON_PREFIX = "megatron:"
"""`megatron:CONFIG`: a GPT model built by Megatron-Core from its own config
(charon_ir/frontend/megatron.py)."""


def load_megatron_config(model: str) -> tuple[str, dict[str, Any]]:
    """(display name, config dict) of `megatron:PATH`, a YAML or JSON mapping of
    Megatron-Core's TransformerConfig and GPTModel fields (read, not checked:
    Megatron-Core checks them when it builds the model)."""
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


def load_config(model: str | Path) -> tuple[str, dict[str, Any]]:
    """(display name, HF config dict without the `_`-prefixed notes) of a bundled
    name or a path to a config.json (`vllm:` before either: the same config, which
    vLLM's model class reads). Raises CharonError with one line on a bad input."""
    if isinstance(model, str) and model.startswith(VLLM_PREFIX):
        name, config = load_config(model.removeprefix(VLLM_PREFIX))
        return f"{VLLM_PREFIX}{name}", config
    path = Path(model)
    where = str(model)
    if path.is_dir() and (path / "config.json").is_file():  # a Hugging Face model folder
        path = path / "config.json"
        where = str(path)
    elif path.is_dir() and (isinstance(model, Path) or model not in bundled_models()):
        # a folder of a bundled model's name (`--plot llama-3.1-8b` makes one) is not the model
        raise CharonError(f"{model}: a folder without a config.json")
    if isinstance(model, Path) or str(model).endswith(".json") or path.is_file():
        if not path.is_file():
            raise CharonError(f"{model}: no such config file")
        data = _read_json(read_text(path, where), where)
        # absolute, not resolved: a Hugging Face cache's config.json links into its blobs
        name = path.stem if path.name != "config.json" else path.absolute().parent.name or "config"
    else:
        names = bundled_models()
        if model not in names:
            close = [n for n in names if str(model).lower() in n]
            hint = f" (did you mean {', '.join(close[:4])}?)" if close else ""
            raise CharonError(
                f"unknown model '{model}'{hint}; bundled models: {', '.join(names)}"
            )
        text = _bundled_dir().joinpath(f"{model}.json").read_text()
        data = _read_json(text, f"{model}.json")
        name = str(model)
    config = {k: v for k, v in data.items() if not k.startswith("_")}
    config = language_model_of(config)
    check_config(config, where if path.is_file() else name)
    for standard, own in ATTRIBUTE_MAPS.get(config["model_type"], {}).items():
        if own in config and standard not in config:
            config[standard] = config[own]  # as transformers' config reads it (GPT-2's n_head)
    return name, config


MULTIMODAL_TEXT_CONFIGS = frozenset({"llama4"})
"""model_types of multimodal configs whose language model is a supported causal
LM, given whole in their `text_config` (Llama 4's Llama4ForConditionalGeneration)."""


def language_model_of(config: dict[str, Any]) -> dict[str, Any]:
    """The config of a multimodal model's language model (its vision tower is
    not imported); any other config as it is."""
    text = config.get("text_config")
    if config.get("model_type") not in MULTIMODAL_TEXT_CONFIGS or not isinstance(text, dict):
        return config
    # the top level says whether the output head shares the embedding
    return {"tie_word_embeddings": config.get("tie_word_embeddings", False), **text}


def family_of(config: dict[str, Any], where: str) -> str:
    model_type = config.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        archs = ",".join(config.get("architectures") or []) or "?"
        raise CharonError(
            f"{where}: unsupported architecture {model_type!r} ({archs}); supported model_type: "
            f"{', '.join(sorted(SUPPORTED_MODEL_TYPES))}"
        )
    return SUPPORTED_MODEL_TYPES[model_type]


ARCHITECTURE_MODEL_TYPES: dict[str, str] = {
    "GPT2LMHeadModel": "gpt2",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Phi3ForCausalLM": "phi3",
    "Olmo2ForCausalLM": "olmo2",
    "OlmoeForCausalLM": "olmoe",
    "GraniteForCausalLM": "granite",
    "CohereForCausalLM": "cohere",
    "Starcoder2ForCausalLM": "starcoder2",
    "NemotronForCausalLM": "nemotron",
    "GptOssForCausalLM": "gpt_oss",
    "Llama4ForCausalLM": "llama4_text",
    "GPTNeoXForCausalLM": "gpt_neox",
    "FalconForCausalLM": "falcon",
}
"""For configs that name only `architectures` (no `model_type`)."""

ATTRIBUTE_MAPS: dict[str, dict[str, str]] = {
    "gpt2": {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
             "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
}
"""transformers' `attribute_map` (standard attribute -> the family's own key) of
the supported families whose configs name the standard attributes otherwise
(GPT2Config's); test_gpt2_config.py checks it against transformers. `load_config` fills
the standard names in, so every reader may use them."""

REQUIRED_FIELDS = (
    ("hidden_size", "n_embd"),
    ("num_hidden_layers", "n_layer"),
    ("num_attention_heads", "n_head"),
    ("vocab_size",),
)


MAX_LAYERS = 10_000
"""More layers than any model has: importing a billion (a typo) ran for hours."""
MAX_SIZE = 2**20
"""The largest width a config may give (hidden, vocabulary, FFN, heads, experts):
the largest models stay under 300,000 (Gemma 3's vocabulary, 262,144); a typo
beyond this made tensors whose byte counts overflow the IR's 64-bit integers."""
MAX_PARAMETERS = 10**15
"""A thousand times the largest model (DeepSeek-V3 and Kimi K2: ~1e12)."""
FFN_FIELDS = ("intermediate_size", "n_inner", "ffn_dim", "moe_intermediate_size", "intermediate_size_mlp")
"""Where the families' configs give an MLP's width (dense, or one expert's)."""
SIZE_FIELDS = (*FFN_FIELDS, "head_dim", "n_routed_experts", "num_local_experts", "num_experts_per_tok",
               "attention_chunk_size")
"""Optional sizes: a zero (a model without an MLP, a zero-width head) traced into
nonsense or a Python error deep in transformers."""
WIDTH_FIELDS = ("hidden_size", "n_embd", "num_attention_heads", "n_head", "num_key_value_heads",
                "vocab_size", *SIZE_FIELDS)
"""The fields `MAX_SIZE` bounds (every size but the layer count, `MAX_LAYERS`'s)."""


EXPERT_COUNT_FIELDS = ("num_local_experts", "n_routed_experts", "num_experts")
"""Where the families' configs give the routed experts (Mixtral, DeepSeek, Qwen-MoE)."""


def expert_count(config: dict[str, Any]) -> int:
    """The routed experts of a config; 0 for a dense model."""
    return next((int(config[k]) for k in EXPERT_COUNT_FIELDS if isinstance(config.get(k), int)), 0)


def check_config(config: dict[str, Any], where: str) -> None:
    """The fields every supported family needs, with sane values. Fills in
    `model_type` from `architectures` when only the latter is given."""
    if "model_type" not in config:
        archs = config.get("architectures")
        if not isinstance(archs, list) or not archs:
            raise CharonError(
                f"{where}: malformed config.json: neither 'model_type' nor 'architectures' is given"
            )
        if archs[0] not in ARCHITECTURE_MODEL_TYPES:
            raise CharonError(
                f"{where}: unsupported architecture {archs[0]!r}; supported: "
                f"{', '.join(sorted(ARCHITECTURE_MODEL_TYPES))}"
            )
        config["model_type"] = ARCHITECTURE_MODEL_TYPES[archs[0]]
    family_of(config, where)
    for keys in REQUIRED_FIELDS:
        key = next((k for k in keys if k in config), keys[0])
        value = config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise CharonError(
                f"{where}: malformed config.json: '{key}' must be a positive integer, got {value!r}"
            )
    heads = config.get("num_attention_heads", config.get("n_head"))
    hidden = config.get("hidden_size", config.get("n_embd"))
    kv_heads = config.get("num_key_value_heads")
    if kv_heads is not None and (not isinstance(kv_heads, int) or isinstance(kv_heads, bool)
                                 or kv_heads <= 0 or heads % kv_heads):
        raise CharonError(f"{where}: malformed config.json: 'num_key_value_heads' must be a positive "
                          f"integer dividing num_attention_heads {heads}, got {kv_heads!r}")
    if "head_dim" not in config and hidden % heads:
        raise CharonError(f"{where}: malformed config.json: hidden size {hidden} is not divisible by "
                          f"{heads} attention heads (and no 'head_dim' is given)")
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    if layers > MAX_LAYERS:
        raise CharonError(f"{where}: malformed config.json: {layers} layers; at most {MAX_LAYERS:,} "
                          "(the largest models have a few hundred)")
    for key in SIZE_FIELDS:  # null where a family derives it (GPT-2's n_inner: 4 x hidden)
        value = config.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise CharonError(f"{where}: malformed config.json: '{key}' must be a positive integer, "
                              f"got {value!r}")
    for key in WIDTH_FIELDS:
        value = config.get(key)
        if isinstance(value, int) and value > MAX_SIZE:
            raise CharonError(f"{where}: malformed config.json: '{key}' is {value:,}; at most {MAX_SIZE:,} "
                              "(the largest models stay under 300,000)")
    experts = expert_count(config)
    top_k = config.get("num_experts_per_tok")
    if experts and isinstance(top_k, int) and top_k > experts:
        raise CharonError(f"{where}: malformed config.json: 'num_experts_per_tok' {top_k} is more than "
                          f"the {experts} experts")
    ffn = max((config[k] for k in FFN_FIELDS if isinstance(config.get(k), int)), default=4 * hidden)
    vocab = config["vocab_size"]
    bound = layers * (4 * hidden * hidden + 3 * hidden * ffn * max(experts, 1)) + 2 * vocab * hidden
    if bound > MAX_PARAMETERS:
        raise CharonError(f"{where}: malformed config.json: about {bound:.1e} parameters; at most "
                          f"{MAX_PARAMETERS:.0e} (the largest models have ~1e12)")
    head_dim = config.get("head_dim")
    if isinstance(head_dim, int) and head_dim % 2:
        raise CharonError(f"{where}: malformed config.json: 'head_dim' {head_dim} is odd (rotary "
                          "embeddings rotate pairs of dimensions)")
