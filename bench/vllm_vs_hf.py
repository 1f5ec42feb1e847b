"""vLLM's model code against the Hugging Face import of the same config
(`CHARON_VLLM_PYTHON=... python bench/vllm_vs_hf.py [--model llama-3.1-8b] [--tp 1]`).

Prints, for `vllm:MODEL` and MODEL:
- the FLOPs of a prefill step (one prompt of 512 tokens) and of a decode step
  (16 sequences reading 1,024 cached tokens), by op kind;
- `charon serve` on H100-SXM5-80GB (Poisson 4 requests/s, 200 requests, 1,024
  in / 256 out): TTFT and TPOT, p50 and mean;
- the priced time of the decoder layers' GEMMs in the serving table's body at 16
  tokens (where the fused QKV and gate/up GEMMs vLLM runs differ from HF's three and two).
Needs the vLLM environment (charon_ir/frontend/vllm.py); the first run traces in it (~1-2 min).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

from rows import print_rows

from charon_ir import serve
from charon_ir.api import load_model_module
from charon_ir.dialects import sim
from charon_ir.dialects.sim import COST_ATTR
from charon_ir.frontend import phase_flops
from charon_ir.serving.latency import ReplicaShape, price_module

HARDWARE = "H100-SXM5-80GB"
STEPS = (("prefill", 512, 1), ("decode", 1024, 16))
KINDS = (sim.MatmulOp, sim.AttentionOp, sim.ElementwiseOp, sim.ReduceOp, sim.EmbeddingOp)


def flops_rows(model: str) -> list[list[str]]:
    rows = []
    for mode, seq, batch in STEPS:
        _, ours = load_model_module(f"vllm:{model}", seq_len=seq, batch=batch, mode=mode)
        _, hf = load_model_module(model, seq_len=seq, batch=batch, mode=mode)
        for kind in (None, *KINDS):
            a, b = phase_flops(ours, mode, kind), phase_flops(hf, mode, kind)
            rel = f"{(a / b - 1) * 100:+.3f}%" if b else "-"
            rows.append([f"{mode} {batch}x{seq}", kind.__name__ if kind else "all", f"{a / 1e9:,.3f}",
                         f"{b / 1e9:,.3f}", rel])
    return rows


def gemm_rows(model: str, tp: int) -> list[list[str]]:
    rows = []
    for name in (f"vllm:{model}", model):
        ctx, module = load_model_module(name, seq_len=16, batch=1, mode="prefill")
        price_module(module, ctx, ReplicaShape(name, HARDWARE, tp))
        by_width: dict[int, float] = defaultdict(float)
        for repeat in (op for op in module.walk() if isinstance(op, sim.RepeatOp)):
            for op in repeat.body.block.ops:
                if isinstance(op, sim.MatmulOp) and isinstance(cost := op.attributes.get(COST_ATTR), sim.CostAttr):
                    by_width[sim.shape_of(op.results[0])[-1]] += repeat.count.value.data * cost.time_s.data
        rows += [[name, f"N={n}", f"{t * 1e3:.3f}"] for n, t in sorted(by_width.items())]
        rows.append([name, "all GEMMs", f"{sum(by_width.values()) * 1e3:.3f}"])
    return rows


def serve_rows(model: str, tp: int) -> list[list[str]]:
    options = dict(hardware=HARDWARE, tp=tp, rate=4.0, num_requests=200, input_len=1024, output_len=256)
    ours, hf = serve(f"vllm:{model}", **options), serve(model, **options)
    rows = []
    for metric in ("ttft_s", "tpot_s"):
        for q in ("p50", "mean"):
            a, b = ours[metric][q], hf[metric][q]
            rows.append([metric, q, f"{a * 1e3:.3f}", f"{b * 1e3:.3f}", f"{(a / b - 1) * 100:+.2f}%"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--flops-only", action="store_true", help="only the FLOPs table (no serving runs)")
    args = parser.parse_args()
    if not os.environ.get("CHARON_VLLM_PYTHON"):
        sys.exit("set CHARON_VLLM_PYTHON to the Python of a vLLM environment")
    serving = [] if args.flops_only else serve_rows(args.model, args.tp)  # every serving step in one vLLM run
    print_rows(f"FLOPs per step, vllm:{args.model} and {args.model}",
               ("step", "ops", "vllm GFLOP", "HF GFLOP", "vllm / HF"), flops_rows(args.model), args.json)
    if args.flops_only:
        return
    print_rows(f"charon serve on {HARDWARE}, tp {args.tp}", ("metric", "", "vllm ms", "HF ms", "vllm / HF"),
               serving, args.json)
    print_rows(f"decoder-layer GEMMs of the serving body at 16 tokens, tp {args.tp}", ("model", "GEMM", "ms"),
               gemm_rows(args.model, args.tp), args.json)


if __name__ == "__main__":
    main()
