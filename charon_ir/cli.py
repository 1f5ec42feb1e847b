"""`charon`: the user-facing command line (typer).

Each subcommand lives in `charon_ir/commands/<name>.py` and exposes
`register(app)`; heavy imports (torch, the frontend) happen inside the command
body, so `charon --help` stays fast.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from charon_ir.errors import CharonError

COMMAND_MODULES = ("simulate", "import_cmd", "calibrate", "profile", "serve", "validate", "sweep")
"""Modules under charon_ir.commands, each adding its subcommands to the app."""

app = typer.Typer(
    name="charon",
    help="Predict LLM training and serving time and memory on GPU clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Predict LLM training and serving time and memory on GPU clusters."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"charon_ir.commands.{_name}").register(app)


def fail(message: str) -> None:
    """Print one diagnostic line and exit non-zero."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def main() -> None:
    try:
        app()
    except CharonError as e:
        fail(str(e))
    except Exception as e:  # a bug, not bad input: one line unless asked for more
        if os.environ.get("CHARON_DEBUG"):
            raise
        first = str(e).splitlines()[0] if str(e) else ""
        fail(f"internal error, please report it (CHARON_DEBUG=1 shows the traceback): "
             f"{type(e).__name__}: {first}")


if __name__ == "__main__":
    main()
