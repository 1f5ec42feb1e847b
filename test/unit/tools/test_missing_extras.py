"""An install without extras (`pip install charon-ir`): every command that needs
one says which in one line (issue #30, item 7). Run in a fresh interpreter
where torch, transformers and ray cannot be imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCKED = ("torch", "transformers", "ray")
RUN = ("import sys\n"
       f"for name in {BLOCKED!r}: sys.modules[name] = None  # `import name` raises ModuleNotFoundError\n"
       "from charon_ir.cli import main\n"
       "sys.argv = ['charon', *sys.argv[1:]]\n"
       "main()\n")


def charon_without_extras(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {"CHARON_CACHE_DIR": str(tmp_path / "cache"), "CHARON_PROFILE_DB": str(tmp_path / "p.db"),
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)


@pytest.mark.parametrize("args", [
    ("simulate", "--model", "llama-3.1-8b", "--gpus", "8"),
    ("serve", "--model", "llama-3.1-8b", "--batch", "1", "--input-len", "8", "--output-len", "2"),
    ("import", "llama-3.1-8b"),
])
def test_a_command_needing_the_frontend_names_the_extra(tmp_path, args):
    proc = charon_without_extras(tmp_path, *args)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"error: charon {args[0]} needs the 'frontend' extra (no module named 'torch'): "
                           "pip install 'charon-ir[frontend]'\n")


def test_an_mlir_step_runs_without_extras(tmp_path):
    from pathlib import Path

    step = Path(__file__).parents[3] / "examples" / "llama_tiny_step.mlir"
    proc = charon_without_extras(tmp_path, "simulate", "--model", str(step), "--gpus", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"iteration_time_s"' in proc.stdout
