"""The routed experts' GEMMs measured (bench/moe_gemm_bench.py's JSON) against the
analytic engine's prices: docs/calibration.md's table "The routed experts' GEMMs,
measured" is this script's output. Per layer (the six GEMMs of its experts'
forward and backward), measured over priced:

- loop / grouped: E back-to-back `torch.mm` over the price of E GEMMs of one
  expert's shape (a `grouped` matmul, what `group-expert-gemms` marks);
- grouped_mm / grouped: `torch._grouped_mm` over the same price;
- loop / batched, bmm / batched: over the price of one batched GEMM;
- fp8 loop / fp8 grouped: E per-tensor `torch._scaled_mm` over the grouped price on
  the fp8 tensor cores (`fp8_gemm_target`).

Usage: .venv/bin/python bench/moe_gemm_report.py test/data/gpu/moe_gemm-h100.json test/data/gpu/moe_gemm-h200.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from charon_ir.engines.analytic import AnalyticEngine, fp8_gemm_target
from charon_ir.profile.device import gpu_table_name
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target
from charon_ir.testing import expert_matmul


def layer_ratios(layer: dict, target: Target) -> dict[str, float]:
    engine, fp8 = AnalyticEngine(), fp8_gemm_target(target, "bench/moe_gemm_report.py")
    priced = {"grouped": 0.0, "batched": 0.0, "fp8": 0.0}
    measured = {"loop": 0.0, "grouped_mm": 0.0, "bmm": 0.0, "fp8_loop": 0.0}
    for gemm in layer["gemms"]:
        shape = (gemm["experts"], gemm["m"], gemm["k"], gemm["n"])
        priced["grouped"] += engine.price(expert_matmul(*shape, True), target).time_s * 1e6
        priced["batched"] += engine.price(expert_matmul(*shape, False), target).time_s * 1e6
        priced["fp8"] += engine.price(expert_matmul(*shape, True), fp8).time_s * 1e6
        measured["loop"] += gemm["loop_us"]
        measured["grouped_mm"] += gemm["grouped_us"]
        measured["bmm"] += gemm["bmm_us"]
        measured["fp8_loop"] += gemm["fp8_loop_us"]
    return {
        "loop / grouped": measured["loop"] / priced["grouped"],
        "grouped_mm / grouped": measured["grouped_mm"] / priced["grouped"],
        "loop / batched": measured["loop"] / priced["batched"],
        "bmm / batched": measured["bmm"] / priced["batched"],
        "fp8 loop / fp8 grouped": measured["fp8_loop"] / priced["fp8"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.files:
        report = json.loads(path.read_text())
        gpu = gpu_table_name(report["device"])
        target = Target(load_gpu(gpu), gpus=1, gpus_per_node=8)
        print(f"{path} ({gpu}, torch {report['torch']})")
        for layer in report["layers"]:
            ratios = layer_ratios(layer, target)
            print(f"  {layer['name']:42s} " + "  ".join(f"{k} {v:.3f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
