"""README's table of the bundled models: each full-size config's parameter count
against the one transformers builds from it, and its forward FLOPs per token
against the closed form.

    .venv/bin/python bench/model_table.py               # print the table
    .venv/bin/python bench/model_table.py --write-readme

The closed form is computed from transformers' own model (built on the meta
device, no weights), never from our IR: 2 x the weights a token multiplies (a
routed expert's scaled by top_k / experts; an untied input embedding and learned
positions are looked up, norms and biases not multiplied) plus causal attention,
per layer 2 x heads x (qk_dim + v_dim) x the keys a query sees on average
((S + 1) / 2, or fewer under a sliding window or in an attention chunk). The IR's count is every forward
op of a training step (`forward_flops`): the closed form's terms plus norms,
activations, softmax and the loss, hence a little above it.

A config with multi-token prediction (DeepSeek-V3's `num_nextn_predict_layers`)
trains MTP modules transformers does not build: their weights are counted apart
(`+N MTP` beside the IR's count, which without them equals transformers'), and
the closed form adds per module 2 x (its 2h -> h projection, a block shaped like
the model's last layer, the shared LM head) plus one layer's attention.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = "<!-- model-table:begin -->", "<!-- model-table:end -->"
SEQ = 4096


def mean_keys(seq: int, window: int, chunk: int = 0) -> float:
    """Keys a causal query sees on average over a sequence of `seq` tokens: the
    `window` latest, or those of its own chunk of `chunk` tokens (Llama 4)."""
    if chunk and chunk < seq:
        whole, rest = divmod(seq, chunk)
        return (whole * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2) / seq
    if not window or window >= seq:
        return (seq + 1) / 2
    return (window * (window + 1) / 2 + (seq - window) * window) / seq


def layer_chunks(config) -> list[int]:
    """Each layer's attention chunk (0: none): Llama 4's "chunked_attention" layers."""
    layers = config.num_hidden_layers
    chunk = getattr(config, "attention_chunk_size", None) or 0
    types = getattr(config, "layer_types", None) or []
    return [chunk if t == "chunked_attention" else 0 for t in types[:layers]] or [0] * layers


def layer_windows(config) -> list[int]:
    layers = config.num_hidden_layers
    window = getattr(config, "sliding_window", None) or 0
    types = getattr(config, "layer_types", None)
    if types:
        return [window if t == "sliding_attention" else 0 for t in types[:layers]]
    if window and getattr(config, "use_sliding_window", True):
        return [window] * layers
    return [0] * layers


def multiplied_weights(params, config) -> float:
    """Weights a token multiplies among named parameters (routed experts scaled by
    top_k / experts; vectors, norms and biases, are not multiplied)."""
    experts = next((getattr(config, k) for k in ("n_routed_experts", "num_local_experts", "num_experts")
                    if getattr(config, k, None)), 0)
    top_k = getattr(config, "num_experts_per_tok", 0) or 0
    multiplied = 0.0
    for name, p in params:
        if ".experts." in f".{name}" and experts:
            if p.dim() >= 2:
                multiplied += p.numel() * top_k / experts
        elif p.dim() >= 2:
            multiplied += p.numel()
    return multiplied


def closed_form_flops_per_token(model, seq: int) -> float:
    config = model.config
    embedding = model.get_input_embeddings().weight
    tied = getattr(config, "tie_word_embeddings", False)
    params = [(n, p) for n, p in model.named_parameters() if not ((p is embedding and not tied) or "wpe" in n)]
    multiplied = multiplied_weights(params, config)
    heads = config.num_attention_heads
    if getattr(config, "qk_nope_head_dim", None):
        qk, v = config.qk_nope_head_dim + config.qk_rope_head_dim, config.v_head_dim
    else:
        qk = v = getattr(config, "head_dim", None) or config.hidden_size // heads
    per_layer = [2 * heads * (qk + v) * mean_keys(seq, w, c) for w, c in zip(layer_windows(config), layer_chunks(config))]
    mtp = 0.0
    if depth := getattr(config, "num_nextn_predict_layers", 0) or 0:
        block = multiplied_weights(list(model.model.layers[-1].named_parameters()), config)
        projection = 2 * config.hidden_size * config.hidden_size
        mtp = depth * (2 * (projection + block + model.lm_head.weight.numel()) + per_layer[-1])
    return 2 * multiplied + sum(per_layer) + mtp


def row(name: str) -> dict:
    import torch

    from charon_ir.frontend import forward_flops, import_model, load_config, mtp_param_count, param_count
    from charon_ir.frontend.tracing import build_hf_model

    _, config = load_config(name)
    model = build_hf_model(config, torch.bfloat16, name)
    hf_params = sum(p.numel() for p in model.parameters())
    closed = closed_form_flops_per_token(model, SEQ)
    start = time.perf_counter()
    module = import_model(name, seq_len=SEQ, batch=1)
    seconds = time.perf_counter() - start
    mtp_params = mtp_param_count(module)
    ir_params = param_count(module) - mtp_params
    per_token = forward_flops(module) / SEQ
    return {"model": name, "type": config.get("model_type"), "params": ir_params, "mtp_params": mtp_params,
            "hf_params": hf_params, "flops": per_token, "closed": closed, "seconds": seconds}


def table(rows: list[dict]) -> str:
    lines = [
        f"| model | model_type | parameters (IR) | = transformers' | forward GFLOP/token (seq {SEQ}) | closed form | IR / closed form |",
        "|---|---|---:|:---:|---:|---:|---:|",
    ]
    for r in rows:
        same = "yes" if r["params"] == r["hf_params"] else f"no ({r['hf_params']:,})"
        mtp = f" (+{r['mtp_params']:,} MTP)" if r["mtp_params"] else ""
        lines.append(f"| {r['model']} | {r['type']} | {r['params']:,}{mtp} | {same} | {r['flops'] / 1e9:.2f} | "
                     f"{r['closed'] / 1e9:.2f} | {r['flops'] / r['closed'] - 1:+.2%} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-readme", action="store_true", help="replace the table between README's markers")
    parser.add_argument("--models", default="", help="comma-separated names (default: every bundled model)")
    args = parser.parse_args()
    from charon_ir.frontend import bundled_models

    names = args.models.split(",") if args.models else bundled_models()
    rows = []
    for name in names:
        rows.append(row(name))
        print(f"{name}: {rows[-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if args.write_readme:
        readme = README.read_text()
        if BEGIN not in readme or END not in readme:
            print(f"README.md has no {BEGIN} ... {END} markers", file=sys.stderr)
            return 1
        readme = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}\n{END}", readme,
                        flags=re.S)
        README.write_text(readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
