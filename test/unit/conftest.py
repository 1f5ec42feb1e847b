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


GPT3_PADDED = Path(__file__).with_name("gpt3_175b_padded_vocab.json")
"""GPT-3 175B's config, its vocabulary padded to 51200 as Megatron-LM pads it so
that tp = 8 divides it."""


@pytest.fixture(scope="session")
def gpt3_175b():
    """GPT-3 175B imported once per session by the torch frontend (fake tensors, no
    weights, sequence 2048; the memory and recompute tests share it). Tests clone it
    before running passes on it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from charon_ir.frontend import import_model

    return import_model(str(GPT3_PADDED), seq_len=2048, batch=1, mode="train", use_cache=False)
