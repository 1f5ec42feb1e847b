"""Host cost of issuing GPU work from eager PyTorch, measured (docs/calibration.md, MoE host).

What a per-expert MoE layer costs the host is a count of calls times a cost per call; this
measures the cost per call on the machine it runs on, with the GPU kept out of the way (tiny
tensors, so the host, not the GPU, sets the wall time):

- ``launch``: one small elementwise kernel (``torch.add``), the floor of an eager op;
- ``mm``: one cuBLAS GEMM (``torch.mm`` into a preallocated tensor's shape), tiny;
- ``split_empty``: ``torch.split`` + ``torch.empty``, the per-expert Python TE's grouped linear
  runs besides its GEMMs (NVIDIA/TransformerEngine #1499);
- ``grouped_linear``: a grouped linear as TE's ``_GroupedLinear`` runs it in bf16 - the input
  split by ``m_splits``, one GEMM per local expert forward into one preallocated output, two
  backward (dgrad, wgrad) - for E local experts: host time per layer forward and backward, and
  the kernels each launches (counted with torch.profiler), so host time per launch follows
  (TE's own Python around the GEMMs, its quantization in fp8, is not in it);
- ``sync``: a device-to-host read of a small tensor (``tokens_per_expert.tolist()``) on an idle GPU.

Each value is the median of ``--repeats`` samples of ``--calls`` calls. Usage:
    python bench/host_launch_cost.py --device cuda --out host_launch.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch


def _median_per_call(fn, calls: int, repeats: int, sync) -> float:
    """Seconds per call of ``fn``: the wall time of ``calls`` calls and a final sync."""
    for _ in range(3):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def _kernels_per_call(fn, device: str) -> int | None:
    """GPU kernels one call of ``fn`` launches, counted by torch.profiler."""
    if device != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(
        1
        for event in prof.events()
        if event.device_type == torch.autograd.DeviceType.CUDA and "memcpy" not in event.name.lower()
        and "memset" not in event.name.lower()
    )


def _grouped_linear(experts: int, rows: int, k: int, n: int, device: str, dtype):
    """A closure running one grouped linear forward + backward as TE's _GroupedLinear does:
    the input split by m_splits, one GEMM per expert into its slice of one preallocated
    output (no concatenation), and in the backward one dgrad and one wgrad GEMM per expert
    written in place (no autograd, whose accumulation adds kernels TE does not run)."""
    weights = [torch.randn(n, k, device=device, dtype=dtype) for _ in range(experts)]
    wgrads = [torch.empty(n, k, device=device, dtype=dtype) for _ in range(experts)]
    x = torch.randn(rows * experts, k, device=device, dtype=dtype)
    out = torch.empty(rows * experts, n, device=device, dtype=dtype)
    dx = torch.empty(rows * experts, k, device=device, dtype=dtype)
    grad = torch.randn(rows * experts, n, device=device, dtype=dtype)
    m_splits = [rows] * experts

    def forward_only():
        for p, o, w in zip(torch.split(x, m_splits), torch.split(out, m_splits), weights):
            torch.mm(p, w.t(), out=o)

    def forward_backward():
        forward_only()
        for g, p, d, w, wg in zip(torch.split(grad, m_splits), torch.split(x, m_splits),
                                  torch.split(dx, m_splits), weights, wgrads):
            torch.mm(g, w, out=d)  # dgrad
            torch.mm(g.t(), p, out=wg)  # wgrad

    return forward_only, forward_backward


def measure(device: str, calls: int, repeats: int) -> dict:
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    a = torch.randn(16, 16, device=device, dtype=dtype)
    b = torch.randn(16, 16, device=device, dtype=dtype)
    x = torch.randn(64, 16, device=device, dtype=dtype)
    result: dict = {
        "device": torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "cpu",
        "host": platform.node(),
        "cpu": platform.processor(),
        "torch": torch.__version__,
        "calls": calls,
        "repeats": repeats,
        "per_call_us": {},
        "grouped_linear": [],
    }
    per_call = result["per_call_us"]
    per_call["launch"] = 1e6 * _median_per_call(lambda: torch.add(a, b), calls, repeats, sync)
    per_call["mm"] = 1e6 * _median_per_call(lambda: torch.mm(a, b), calls, repeats, sync)
    per_call["split_empty"] = 1e6 * _median_per_call(
        lambda: (torch.split(x, [16, 16, 16, 16]), torch.empty(16, 16, device=device, dtype=dtype)),
        calls,
        repeats,
        sync,
    )
    counts = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6], device=device)
    per_call["sync"] = 1e6 * _median_per_call(lambda: counts.tolist(), max(calls // 10, 10), repeats, sync)
    for experts in (1, 4, 8, 16, 32):
        # tiny rows: the host sets the pace, so wall time per layer is the host's
        forward_only, forward_backward = _grouped_linear(experts, 16, 64, 64, device, dtype)
        layer_calls = max(calls // (4 * experts), 5)
        fwd = _median_per_call(forward_only, layer_calls, repeats, sync)
        fwd_bwd = _median_per_call(forward_backward, layer_calls, repeats, sync)
        entry = {
            "local_experts": experts,
            "forward_us": 1e6 * fwd,
            "forward_backward_us": 1e6 * fwd_bwd,
            "forward_kernels": _kernels_per_call(forward_only, device),
            "forward_backward_kernels": _kernels_per_call(forward_backward, device),
        }
        if entry["forward_backward_kernels"]:
            entry["us_per_kernel_forward_backward"] = entry["forward_backward_us"] / entry["forward_backward_kernels"]
        result["grouped_linear"].append(entry)
        print(json.dumps(entry), flush=True)
    return result


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--calls", type=_positive, default=2000)
    parser.add_argument("--repeats", type=_positive, default=5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    result = measure(args.device, args.calls, args.repeats)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["per_call_us"], indent=1))


if __name__ == "__main__":
    main()
