"""The Python API: the same runs as the command line, returning the report dict."""

from __future__ import annotations

from pathlib import Path

from charon_ir.errors import CharonError


def simulate_file(
    path: str | Path,
    *,
    hardware: str,
    gpus: int = 8,
    gpus_per_node: int = 0,
    engines: tuple[str, ...] = ("analytic",),
    trace: str | Path | None = None,
) -> dict:
    """Parse a `sim` module, target it, price it, lower it and interpret it."""
    from xdsl.utils.exceptions import ParseError, VerifyException

    from charon_ir.lowering.lower_to_events import LowerToEventsPass
    from charon_ir.passes.cost_annotate import CostAnnotatePass
    from charon_ir.passes.set_target import SetTargetPass
    from charon_ir.runtime.simulate_target import simulate_module
    from charon_ir.testing import make_context, parse_module

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise CharonError(f"cannot read {path}: {e.strerror}") from None
    ctx = make_context()
    try:
        module = parse_module(text, ctx)
    except ParseError as e:
        loc = e.span.get_location()
        raise CharonError(f"{path}:{loc.line}:{loc.col}: {e.msg}") from None
    except VerifyException as e:
        raise CharonError(f"{path}: {str(e).splitlines()[0]}") from None
    SetTargetPass(hardware=hardware, gpus=gpus, gpus_per_node=gpus_per_node).apply(ctx, module)
    CostAnnotatePass(engines=engines).apply(ctx, module)
    LowerToEventsPass().apply(ctx, module)
    return simulate_module(ctx, module, trace=str(trace) if trace else None)
