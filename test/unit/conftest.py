"""Shared fixtures."""

import sys

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
