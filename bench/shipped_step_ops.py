"""Write the shipped training steps (`charon_ir.profile.shipped.SHIPPED_STEPS`) as
.mlir files, one per step, for `charon profile --ops-from` on a machine whose torch
or transformers differ from the pinned ones (a GPU image): the ops it measures are
then exactly the ones the pinned frontend builds, the keys the engines look up.

    .venv/bin/python bench/shipped_step_ops.py .gpu/ops
"""

from __future__ import annotations

import sys
from pathlib import Path

from charon_ir.api import TrainingConfig, build_training_module
from charon_ir.profile.shipped import SHIPPED_STEPS


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} FOLDER")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for i, (name, fields) in enumerate(SHIPPED_STEPS.items()):
        _, module, _ = build_training_module(TrainingConfig(**fields, memory_limit_gb=1e9))
        path = out / f"step{i}.mlir"
        path.write_text(f"// {name}\n" + str(module) + "\n")
        print(f"{path}: {name}")


if __name__ == "__main__":
    main()
