"""The routed experts' GEMMs as the frameworks run them, timed on this GPU (docs/calibration.md,
"Where the MoE step goes").

The frontends write a MoE layer's routed experts as one batched GEMM of the local experts
(`[E, rows, k] x [E, k, n]`), which Charon priced as such until `group-expert-gemms`;
Transformer Engine's GroupedLinear (Megatron-Core's `moe_grouped_gemm`) runs one cuBLAS GEMM
per expert, in fp8 each operand quantized on its own. bench/moe_gemm_report.py compares the
results with the engine's prices.
This measures, for the expert shapes of the bundled MoE records (rows per local expert from
their layout: ep x tokens x top-k / experts), each GEMM of a layer's forward and backward
(fc1, fc2; dgrad and wgrad) four ways:

- ``loop``: E back-to-back ``torch.mm`` (bf16), one per expert;
- ``bmm``: one ``torch.bmm`` of the E experts (what the simulator prices);
- ``grouped``: ``torch._grouped_mm`` (one kernel, CUTLASS grouped GEMM), where this torch has it;
- ``fp8_loop``: E ``torch._scaled_mm`` in float8_e4m3 with per-tensor scales (current scaling's
  GEMM), plus ``fp8_quant``: one operand's amax, scale and cast per expert (what current scaling
  runs before each GEMM).

Every variant is captured in a CUDA graph and timed by replaying it (the GPU's time, not the
host's launches: bench/host_launch_cost.py measures those). Times are the median of
``--repeats`` replays, in microseconds for the whole layer's E GEMMs. Usage:
    python bench/moe_gemm_bench.py --out moe_gemm.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable

import torch

# (name, local experts, rows per local expert, hidden, expert ffn, gated): rows from the
# records' layouts (validation/training.training_case): ep x tokens a rank x top-k / experts
SHAPES = (
    ("qwen3-30b-a3b h100 ep8 mbs2", 16, 4096, 2048, 768, True),
    ("gpt-oss-120b h100 ep8 mbs1", 16, 1024, 2880, 2880, True),
    ("deepseek-v3 h100 ep64 tp2", 4, 4096, 7168, 2048, True),
    ("deepseek-v3 b200 ep8 (shape on this GPU)", 32, 1024, 7168, 2048, True),
)


def _graph_time_us(fn: Callable[[], object], repeats: int) -> float:
    """Median GPU time of one replay of `fn` captured in a CUDA graph, in microseconds."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return statistics.median(samples)


def _gemms(rows: int, hidden: int, ffn: int, gated: bool) -> list[tuple[str, int, int, int]]:
    """(name, m, k, n) of each GEMM of one expert's forward and backward."""
    fc1 = 2 * ffn if gated else ffn
    return [
        ("fc1 fwd", rows, hidden, fc1),
        ("fc2 fwd", rows, ffn, hidden),
        ("fc2 dgrad", rows, hidden, ffn),
        ("fc2 wgrad", hidden, rows, ffn),
        ("fc1 dgrad", rows, fc1, hidden),
        ("fc1 wgrad", fc1, rows, hidden),
    ]


def _variant(fn_maker: Callable[[], Callable[[], object]], repeats: int) -> float | str:
    try:
        return _graph_time_us(fn_maker(), repeats)
    except Exception as e:  # a variant this torch/GPU lacks is reported, not fatal
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"


def measure_gemm(experts: int, m: int, k: int, n: int, repeats: int) -> dict:
    dev, bf16 = "cuda", torch.bfloat16
    a = torch.randn(experts, m, k, device=dev, dtype=bf16)
    b = torch.randn(experts, k, n, device=dev, dtype=bf16)
    out = torch.empty(experts, m, n, device=dev, dtype=bf16)
    flops = 2.0 * experts * m * k * n
    result: dict = {"m": m, "k": k, "n": n, "experts": experts, "gflop": flops / 1e9}

    def loop():
        def run():
            for e in range(experts):
                torch.mm(a[e], b[e], out=out[e])
        return run

    def bmm():
        return lambda: torch.bmm(a, b, out=out)

    def grouped():
        a2 = a.reshape(experts * m, k)
        bt = b.transpose(-2, -1).contiguous().transpose(-2, -1)  # column-major per expert
        offs = torch.arange(m, experts * m + 1, m, device=dev, dtype=torch.int32)
        return lambda: torch._grouped_mm(a2, bt, offs=offs, out_dtype=bf16)

    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev, dtype=torch.float32)

    def fp8_loop():
        a8 = a.to(f8)
        b8 = b.transpose(-2, -1).contiguous().to(f8)  # [E, n, k]: .t() is column-major

        def run():
            for e in range(experts):
                torch._scaled_mm(a8[e], b8[e].t(), scale_a=one, scale_b=one, out_dtype=bf16)
        return run

    def fp8_quant():
        q = torch.empty(experts, m, k, device=dev, dtype=f8)

        def run():
            for e in range(experts):
                scale = 448.0 / torch.amax(a[e].abs()).float().clamp(min=1e-12)
                q[e].copy_((a[e] * scale).to(f8))
        return run

    for name, maker in (("loop", loop), ("bmm", bmm), ("grouped", grouped), ("fp8_loop", fp8_loop),
                        ("fp8_quant", fp8_quant)):
        value = _variant(maker, repeats)
        result[f"{name}_us"] = value
        if isinstance(value, float) and name != "fp8_quant":
            result[f"{name}_tflops"] = flops / value / 1e6
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("moe_gemm_bench: needs a CUDA GPU")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "repeats": args.repeats,
              "layers": []}
    for name, experts, rows, hidden, ffn, gated in SHAPES:
        layer = {"name": name, "local_experts": experts, "rows": rows, "hidden": hidden, "ffn": ffn, "gemms": []}
        for gemm, m, k, n in _gemms(rows, hidden, ffn, gated):
            entry = {"gemm": gemm, **measure_gemm(experts, m, k, n, args.repeats)}
            layer["gemms"].append(entry)
            print(json.dumps({"layer": name, **entry}), flush=True)
            torch.cuda.empty_cache()
        report["layers"].append(layer)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
