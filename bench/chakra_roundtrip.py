"""Export a training step's Chakra traces, import them back and simulate both,
in memory (no text IR): the check behind docs/interop.md's round-trip table.

    .venv/bin/python bench/chakra_roundtrip.py --gpus 64 --tp 8 --pp 2 --sequence-parallel \
        --seq-len 4096 --global-batch 256 --micro-batch 1 --ranks 0,8      # make demo's step

The first rank given is imported (its pipeline's traces come with it); both
steps are simulated on the fine tier and compared.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--hardware", default="H100-SXM5-80GB")
    parser.add_argument("--gpus", type=int, default=8)
    for flag in ("tp", "pp", "dp"):
        parser.add_argument(f"--{flag}", type=int, default=0 if flag == "dp" else 1)
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--global-batch", type=int, default=0)
    parser.add_argument("--micro-batch", type=int, default=1)
    parser.add_argument("--ranks", required=True, help="ranks to export, comma-separated; the first is imported")
    args = parser.parse_args()

    from charon_ir import api
    from charon_ir.interop.chakra_export import Exporter
    from charon_ir.interop.chakra_import import import_chakra
    from charon_ir.runtime.simulate_target import simulate_module

    ranks = [int(r) for r in args.ranks.split(",")]
    config, _ = api.configure(args.model, hardware=args.hardware, gpus=args.gpus, tp=args.tp, pp=args.pp,
                              dp=args.dp, sequence_parallel=args.sequence_parallel, seq_len=args.seq_len,
                              global_batch=args.global_batch, micro_batch=args.micro_batch)
    ctx, module, _ = api.build_training_module(config)
    api.make_pass("lower-to-events", **api.lowering_options(config)).apply(ctx, module)
    with tempfile.TemporaryDirectory() as directory:
        Exporter(module).write(directory, ranks)
        original = simulate_module(ctx, module, tier="fine")
        start = time.perf_counter()
        imported = import_chakra(f"{directory}/charon.{ranks[0]}.et")
        print(f"import: {sum(1 for _ in imported.walk()):,} ops in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    for name, options in (("set-target", {"hardware": args.hardware, "gpus": args.gpus}), ("cost-annotate", {}),
                          ("lower-to-events", {})):
        api.make_pass(name, **options).apply(ctx, imported)
    again = simulate_module(ctx, imported, tier="fine")
    print(f"simulated in {time.perf_counter() - start:.1f} s")
    for what, report in (("original", original), ("imported", again)):
        b = report["breakdown"]
        print(f"{what}: step {report['iteration_time_s']:.6f} s, compute {b['compute_s']:.6f} s, "
              f"exposed {dict((k, round(float(v), 6)) for k, v in b['exposed_comm_s'].items())}, "
              f"bubble {float(b['bubble_s']):.6f} s")
    print(f"step error {100 * (again['iteration_time_s'] / original['iteration_time_s'] - 1):+.3f} %; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
