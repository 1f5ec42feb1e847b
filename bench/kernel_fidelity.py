"""The analytic engine against the shipped GPU kernel measurements
(`python bench/kernel_fidelity.py [--gpu H100-SXM5-80GB]`).

For every distinct compute op of the shipped training steps
(`charon_ir.profile.shipped.SHIPPED_STEPS`) that the shipped database measured
on the GPU, the measured time over the analytic engine's, per op kind: median
and 10th/90th percentiles of the ratio, and the summed times (each distinct op
once, not weighted by how often a step runs it). Reads the shipped file itself,
rows the engines leave out included (`shipped.SHIPPED_MAX_SPREAD`), and no user database.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict

from rows import print_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H100-SXM5-80GB")
    parser.add_argument("--json", action="store_true", help="rows as JSON")
    args = parser.parse_args()

    from charon_ir.api import TrainingConfig, build_training_module
    from charon_ir.dialects.sim import ComputeOp
    from charon_ir.engines.analytic import AnalyticEngine
    from charon_ir.profile.key import OpKey, is_free_view
    from charon_ir.profile.shipped import SHIPPED_DB, SHIPPED_STEPS
    from charon_ir.profile.store import ProfileStore, latest_by_key
    from charon_ir.target.target import Target

    with ProfileStore.open_shipped(SHIPPED_DB) as store:
        table = latest_by_key(store.measurements(args.gpu))
    if not table:
        print(f"no shipped measurements for {args.gpu}", file=sys.stderr)
        return 1
    engine = AnalyticEngine()
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    seen: set[OpKey] = set()
    for fields in SHIPPED_STEPS.values():
        _, module, _ = build_training_module(TrainingConfig(**fields, hardware=args.gpu, memory_limit_gb=1e9))
        target = Target.from_module(module)
        for op in module.walk():
            if not isinstance(op, ComputeOp) or is_free_view(op):
                continue
            key = OpKey.of(op)
            if key in seen or key not in table:
                continue
            seen.add(key)
            cost = engine.price(op, target)
            if cost is not None and cost.time_s > 0:
                pairs[key.kind].append((table[key].time_s, cost.time_s))

    rows = []
    for kind, v in sorted(pairs.items(), key=lambda kv: -sum(m for m, _ in kv[1])):
        ratios = sorted(m / a for m, a in v)
        deciles = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else [ratios[0]] * 9
        rows.append((kind, str(len(v)), f"{statistics.median(ratios):.2f}", f"{deciles[0]:.2f}",
                     f"{deciles[-1]:.2f}", f"{sum(m for m, _ in v) * 1e3:.2f}", f"{sum(a for _, a in v) * 1e3:.2f}"))
    measured = sum(m for v in pairs.values() for m, _ in v)
    analytic = sum(a for v in pairs.values() for _, a in v)
    rows.append(("all", str(sum(len(v) for v in pairs.values())), "", "", "",
                 f"{measured * 1e3:.1f}", f"{analytic * 1e3:.1f}"))
    print_rows(f"measured / analytic per distinct op on {args.gpu} (shipped kernels)",
               ("kind", "ops", "median", "p10", "p90", "measured ms", "analytic ms"), rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
