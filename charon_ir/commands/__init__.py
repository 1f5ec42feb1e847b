"""Subcommands of `charon`; each module has `register(app)`."""

from typing import Any


def on_command_line(ctx: Any, name: str) -> bool:
    """Whether the user typed option `name` (not its default): a flag that does not
    apply is an error only when given. By the source's name: typer's context may
    carry a click of its own, whose ParameterSource is not click's."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"
