"""The cost-engine interface. An engine is a class with one method, `price`; it
returns a `Cost` for the ops it knows and None for the rest, so engines chain:
`cost-annotate{engines=db,predict,analytic}` asks each in turn."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.ir import Operation

from charon_ir.target.target import Target


@dataclass(frozen=True)
class Cost:
    time_s: float
    flops: float
    bytes: float
    engine: str


class CostEngine(abc.ABC):
    name: ClassVar[str]

    @abc.abstractmethod
    def price(self, op: Operation, target: Target) -> Cost | None:
        """The cost of `op` on `target`, or None if this engine does not know it."""


def _analytic() -> type[CostEngine]:
    from charon_ir.engines.analytic import AnalyticEngine

    return AnalyticEngine


def _db() -> type[CostEngine]:
    from charon_ir.engines.db import DbEngine

    return DbEngine


def _predict() -> type[CostEngine]:
    from charon_ir.engines.predict import PredictEngine

    return PredictEngine


def _scaled() -> type[CostEngine]:
    from charon_ir.engines.scaled import ScaledEngine

    return ScaledEngine


def _calibrated() -> type[CostEngine]:
    from charon_ir.engines.calibrated import CalibratedEngine

    return CalibratedEngine


ENGINES: dict[str, Callable[[], type[CostEngine]]] = {
    "analytic": _analytic,
    "db": _db,
    "predict": _predict,
    "scaled": _scaled,
    "calibrated": _calibrated,
}
"""Engine name -> lazy factory. Adding an engine adds one line here."""
