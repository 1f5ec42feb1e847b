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
((S + 1) / 2, or fewer under a sliding window). The IR's count is every forward
op of a training step (`forward_flops`): the closed form's terms plus norms,
activations, softmax and the loss, hence a little above it.
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


def mean_keys(seq: int, window: int) -> float:
    """Keys a causal query sees on average over a sequence of `seq` tokens."""
    if not window or window >= seq:
        return (seq + 1) / 2
    return (window * (window + 1) / 2 + (seq - window) * window) / seq


def layer_windows(config) -> list[int]:
    layers = config.num_hidden_layers
    window = getattr(config, "sliding_window", None) or 0
    types = getattr(config, "layer_types", None)
    if types:
        return [window if t == "sliding_attention" else 0 for t in types[:layers]]
    if window and getattr(config, "use_sliding_window", True):
        return [window] * layers
    return [0] * layers


def closed_form_flops_per_token(model, seq: int) -> float:
    config = model.config
    experts = next((getattr(config, k) for k in ("n_routed_experts", "num_local_experts", "num_experts")
                    if getattr(config, k, None)), 0)
    top_k = getattr(config, "num_experts_per_tok", 0) or 0
    embedding = model.get_input_embeddings().weight
    tied = getattr(config, "tie_word_embeddings", False)
    multiplied = 0.0
    for name, p in model.named_parameters():
        if (p is embedding and not tied) or "wpe" in name:
            continue
        if p.dim() < 2 and "experts" not in name:
            continue
        if ".experts." in name and experts:
            if p.dim() >= 2:
                multiplied += p.numel() * top_k / experts
        elif p.dim() >= 2:
            multiplied += p.numel()
    heads = config.num_attention_heads
    if getattr(config, "qk_nope_head_dim", None):
        qk, v = config.qk_nope_head_dim + config.qk_rope_head_dim, config.v_head_dim
    else:
        qk = v = getattr(config, "head_dim", None) or config.hidden_size // heads
    attention = sum(2 * heads * (qk + v) * mean_keys(seq, w) for w in layer_windows(config))
    return 2 * multiplied + attention


def row(name: str) -> dict:
    import torch

    from charon_ir.frontend import forward_flops, import_model, load_config, param_count
    from charon_ir.frontend.tracing import build_hf_model

    _, config = load_config(name)
    model = build_hf_model(config, torch.bfloat16, name)
    hf_params = sum(p.numel() for p in model.parameters())
    closed = closed_form_flops_per_token(model, SEQ)
    start = time.perf_counter()
    module = import_model(name, seq_len=SEQ, batch=1)
    seconds = time.perf_counter() - start
    ir_params = param_count(module)
    per_token = forward_flops(module) / SEQ
    return {"model": name, "type": config.get("model_type"), "params": ir_params, "hf_params": hf_params,
            "flops": per_token, "closed": closed, "seconds": seconds}


def table(rows: list[dict]) -> str:
    lines = [
        f"| model | model_type | parameters (IR) | = transformers' | forward GFLOP/token (seq {SEQ}) | closed form | IR / closed form |",
        "|---|---|---:|:---:|---:|---:|---:|",
    ]
    for r in rows:
        same = "yes" if r["params"] == r["hf_params"] else f"no ({r['hf_params']:,})"
        lines.append(f"| {r['model']} | {r['type']} | {r['params']:,} | {same} | {r['flops'] / 1e9:.2f} | "
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
