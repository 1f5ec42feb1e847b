"""`charon`: the user-facing command line (typer).

Each subcommand lives in `charon_ir/commands/<name>.py` and exposes
`register(app)`. A command's module is imported when that command runs (or
prints its own help), not at start-up: `charon --help` lists the commands from
COMMANDS alone, so it loads none of the simulator (and never torch).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from charon_ir import progress
from charon_ir.errors import CharonError, one_line, short_path

COMMANDS = {
    "simulate": ("simulate", "Simulate one training step and print the report."),
    "import": ("import_cmd", "Import a model as sim IR, without a GPU and without weights."),
    "calibrate": ("calibrate", "Print the calibration error of the analytic engine per published record;\n"
                  "with --profile, calibrate the `calibrated` engine from a measured trace."),
    "profile": ("profile", "Measure ops into the profile database; with --fit, report the predictor's error."),
    "serve": ("serve", "Simulate serving requests on replicas of a model and print the latency report."),
    "validate": ("validate", "Compare predictions with published (or, with --live, local; with\n"
                 "--profile, a trace's) measurements."),
    "sweep": ("sweep", "Sweep strategy and hardware axes; print the ranked table, the Pareto\n"
              "frontier and why the best configuration wins."),
    "export": ("export", "Write a training step as Chakra execution traces, one per rank."),
}
"""Each command -> its module under charon_ir.commands (whose `register(app)`
adds it) and the first paragraph of its help, which `charon --help` lists
without importing the module (test/unit/test_cli.py checks the two agree)."""

click_errors = importlib.import_module(typer.BadParameter.__module__)
"""The exceptions of the click typer runs on (its own copy in recent typer)."""


class LazyCommands(TyperGroup):
    """A group whose commands are imported by name when one is resolved: the
    listing of `charon --help` comes from COMMANDS."""

    listing = False
    """True while the group's own help is drawn: a command is its summary then."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if self.listing:
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name][1])
        if cmd_name not in self.commands:
            commands = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
            importlib.import_module(f"charon_ir.commands.{COMMANDS[cmd_name][0]}").register(commands)
            self.commands[cmd_name] = typer.main.get_command(commands)
        return self.commands[cmd_name]

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


app = typer.Typer(
    name="charon",
    help="Predict LLM training and serving time and memory on GPU clusters.",
    cls=LazyCommands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bars or spinners on stderr "
                               "(they are drawn only on a terminal)"),
) -> None:
    """Predict LLM training and serving time and memory on GPU clusters."""
    progress.QUIET = quiet


EXTRAS = {"torch": "frontend", "transformers": "frontend", "ray": "sweep", "megatron": "megatron"}
"""Top-level modules of the optional dependencies -> the extra that installs them
(pyproject's optional-dependencies). The frontend stays an extra: a bare `torch`
requirement makes pip pull a multi-GB CUDA build, and `.mlir` steps, `charon-opt`
and the cost engines run without it."""


def fail(message: str, code: int = 1) -> None:
    """Print one diagnostic line and exit non-zero."""
    print(one_line(f"error: {message}"), file=sys.stderr)
    raise SystemExit(code)


def internal_error(e: Exception) -> None:
    """A bug, not bad input: one line unless CHARON_DEBUG asks for the traceback."""
    if os.environ.get("CHARON_DEBUG"):
        raise e
    first = str(e).splitlines()[0] if str(e) else ""
    fail(f"internal error, please report it (CHARON_DEBUG=1 shows the traceback): "
         f"{type(e).__name__}: {first}")


def main() -> None:
    try:
        # not standalone: click's usage errors come here instead of being printed
        # as a multi-line box, so they too are one line
        code = app(prog_name="charon", standalone_mode=False)
    except getattr(click_errors, "NoArgsIsHelpError", ()) as e:
        e.show()  # `charon` alone: the help, as click prints it
        raise SystemExit(e.exit_code) from None
    except click_errors.UsageError as e:  # a mistyped flag, a missing option, a bad value
        where = e.ctx.command_path if e.ctx else "charon"
        fail(f"{where}: {' '.join(e.format_message().split())}", e.exit_code)
    except click_errors.ClickException as e:
        fail(" ".join(e.format_message().split()), e.exit_code)
    except typer.Abort:
        fail("aborted")
    except CharonError as e:
        fail(str(e))
    except OSError as e:
        if e.filename is None:
            internal_error(e)
        # a path the user gave that the system refuses (a 300-character name, a
        # folder without write permission): bad input, named, not a bug
        fail(f"{short_path(e.filename)}: {e.strerror or e}")
    except MemoryError:  # a configuration too large for this host, not a bug
        fail("out of host memory: the configuration is too large to simulate on this machine "
             "(fewer GPUs or replicas, or --tier fast, need less)")
    except ModuleNotFoundError as e:
        extra = EXTRAS.get((e.name or "").partition(".")[0])
        if extra is None:
            internal_error(e)
        command = " ".join(["charon", *[a for a in sys.argv[1:2] if not a.startswith("-")]])
        fail(f"{command} needs the '{extra}' extra (no module named '{e.name}'): "
             f"pip install 'charon-ir[{extra}]'")
    except Exception as e:  # a bug, not bad input: one line unless asked for more
        internal_error(e)
    else:
        # `raise typer.Exit(n)` in a command: click returns n when not standalone
        if isinstance(code, int) and code:
            raise SystemExit(code)


if __name__ == "__main__":
    main()
