"""The distinct compute ops of the shipped training steps
(`profile.shipped.SHIPPED_STEPS`), built as `charon simulate` builds them: what
`charon profile --shipped-steps` measures. Apart from `profile.shipped`, which
the db engine reads, because building a step needs the whole pipeline."""

from __future__ import annotations

from collections.abc import Iterable

from charon_ir.api import TrainingConfig, build_training_module
from charon_ir.profile.collect import OpSet
from charon_ir.profile.shipped import SHIPPED_STEPS


def shipped_steps_opset(names: Iterable[str] | None = None):
    """The distinct compute ops of `SHIPPED_STEPS` (or of the steps `names`),
    each built as `charon simulate` builds it, without a memory limit."""
    opset = OpSet()
    for name in SHIPPED_STEPS if names is None else names:
        fields = SHIPPED_STEPS[name]
        _, module, _ = build_training_module(TrainingConfig(**fields, memory_limit_gb=1e9))
        opset.add_module(module)
    return opset
