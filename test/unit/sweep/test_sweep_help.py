"""`charon sweep --help` (issue #30, item 11): every flag says what it is, and a
flag of a few values shows them, not `<str>`."""

import typer

from charon_ir.cli import app


def sweep_params():
    return {p.name: p for p in typer.main.get_command(app).get_command(None, "sweep").params}


def test_every_sweep_flag_has_help():
    missing = [name for name, p in sweep_params().items() if name != "space_file" and not getattr(p, "help", "")]
    assert missing == []


def test_flags_of_a_few_values_show_them():
    params = sweep_params()
    assert params["recompute"].metavar == "none|selective|selective-op|full"
    assert params["zero"].metavar == "0|1|2|3"
    assert params["tier"].metavar == "screen|fast"
    assert params["sequence_parallel"].metavar == "true|false"
