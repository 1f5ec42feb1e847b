"""`charon`'s command group: commands load by name, `charon --help` lists them
from cli.COMMANDS without importing any."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import typer

from charon_ir import cli, commands


def test_each_summary_is_the_first_paragraph_of_its_commands_help():
    for name, (module, summary) in cli.COMMANDS.items():
        group = typer.Typer(add_completion=False)
        importlib.import_module(f"charon_ir.commands.{module}").register(group)
        (info,) = group.registered_commands
        assert info.name == name, module
        first = inspect.cleandoc(info.callback.__doc__ or "").split("\n\n")[0]
        assert first == summary, name


def test_every_command_module_is_listed():
    """A module under charon_ir/commands with `register(app)` but no entry in
    COMMANDS would be a command `charon` never offers."""
    registering = {info.name for info in pkgutil.iter_modules(commands.__path__)
                   if hasattr(importlib.import_module(f"charon_ir.commands.{info.name}"), "register")}
    assert registering == {module for module, _ in cli.COMMANDS.values()}


def test_the_listing_imports_no_command_and_running_one_imports_it():
    script = ("import sys\nfrom charon_ir import cli\nsys.argv = ['charon', *sys.argv[1:]]\n"
              "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
              "print(sorted(m for m in sys.modules if m.startswith('charon_ir.commands.')"
              " or m.partition('.')[0] in ('torch', 'transformers', 'ray', 'matplotlib')), file=sys.stderr)")
    listed = subprocess.run([sys.executable, "-c", script, "--help"], capture_output=True, text=True, check=True)
    assert "simulate" in listed.stdout and "export" in listed.stdout
    assert listed.stderr.strip() == "[]"
    help_of_one = subprocess.run([sys.executable, "-c", script, "serve", "--help"], capture_output=True,
                                 text=True, check=True)
    assert "--model" in help_of_one.stdout
    assert help_of_one.stderr.strip() == "['charon_ir.commands.serve']"


def test_a_mistyped_command_is_one_line(charon_cli):
    result = charon_cli("simulat")
    assert result.returncode == 2 and result.stderr.strip() == "error: charon: No such command 'simulat'."
