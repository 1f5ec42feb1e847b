"""Shared fixtures."""

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context

from charon_ir.testing import make_context


@pytest.fixture
def ctx() -> Context:
    return make_context()


@pytest.fixture
def charon_fails(capsys, monkeypatch):
    """`charon ARGS` run in this process as the console script runs it (no
    interpreter start-up per case), checked against the rule for bad input: a
    non-zero exit, nothing on stdout, and one `error: ` line on stderr that is a
    diagnosis, not an internal error. Returns that line."""
    from charon_ir import cli

    def run(*args: str) -> str:
        monkeypatch.setattr(sys, "argv", ["charon", *args])
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
        out = capsys.readouterr()
        assert exit_info.value.code not in (0, None), out
        assert out.out == "", out.out
        assert "Traceback" not in out.err
        lines = out.err.splitlines()
        assert len(lines) == 1 and out.err.endswith("\n"), out.err
        assert lines[0].startswith("error: "), lines[0]
        assert "internal error" not in lines[0], lines[0]
        return lines[0]

    return run


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def charon_cli(monkeypatch, capsys):
    """`charon ARGS` run in this process (from the folder `cwd` when given) as the
    console script runs it: no interpreter and torch start-up per call (2-6 s)."""
    from charon_ir import cli

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["charon", *args])
        try:
            cli.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run
