"""Progress on stderr (issue #30, item 10): drawn on a terminal only, never with
--quiet, one display at a time."""

from __future__ import annotations

import io
import sys

import pytest

from charon_ir import progress
from charon_ir.progress import progress_bar, status


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch):
    """A terminal for stderr, set where the test body calls it: pytest puts its own
    capture back on sys.stderr between a fixture and the test."""
    monkeypatch.setattr(progress, "QUIET", False)
    monkeypatch.setattr(progress, "ACTIVE", 0)
    err = Terminal()

    def attach() -> Terminal:
        monkeypatch.setattr(sys, "stderr", err)
        return err

    return attach


def test_a_bar_counts_on_a_terminal(terminal):
    terminal = terminal()
    with progress_bar(3, "validate: training records") as advance:
        for _ in range(3):
            advance()
    text = terminal.getvalue()
    assert "validate: training records" in text and "3/3" in text and "ETA" in text


def test_nothing_when_quiet_or_not_a_terminal(terminal, monkeypatch):
    terminal = terminal()
    monkeypatch.setattr(progress, "QUIET", True)
    with progress_bar(3, "quiet") as advance, status("quiet too"):
        advance()
    assert terminal.getvalue() == ""
    monkeypatch.setattr(progress, "QUIET", False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe or a file
    with progress_bar(3, "piped") as advance:
        advance()
    assert sys.stderr.getvalue() == ""


def test_one_display_at_a_time(terminal):
    terminal = terminal()
    with progress_bar(2, "outer") as advance:
        with status("an import inside"):
            advance()
        assert progress.ACTIVE == 1
    assert "an import inside" not in terminal.getvalue() and progress.ACTIVE == 0


def test_charon_quiet_turns_it_off(charon_cli, monkeypatch):
    from pathlib import Path

    monkeypatch.setattr(progress, "QUIET", False)
    mlp = Path(__file__).parents[2] / "examples" / "mlp.mlir"
    assert charon_cli("--quiet", "simulate", "--model", str(mlp), "--json").returncode == 0
    assert progress.QUIET
