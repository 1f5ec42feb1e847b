"""charon-opt as a user meets it: start-up without torch, one-line errors."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def charon_opt(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "charon_ir.tools.charon_opt", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_startup_does_not_import_torch():
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "charon_ir.tools.charon_opt", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert "xdsl" in imported
    assert not any(name == "torch" or name.startswith("torch.") for name in imported)


def test_a_full_simulation_does_not_import_torch():
    code = (
        "import sys\n"
        "from charon_ir.tools.charon_opt import main\n"
        "try:\n"
        f"    main([{str(EXAMPLES / 'transformer_layer.mlir')!r}, '-p', 'set-target{{hardware=H100}}', '-t', 'simulate'])\n"
        "finally:\n"
        "    assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert '"iteration_time_s"' in out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["-p", "set-target{hardware=Z1}"], "unknown GPU 'Z1'"),
        (["-p", "nosuchpass"], "Unrecognized passes: ['nosuchpass']"),
        (["-p", "set-target{hardwar=H100}"], 'Provided arguments ["hardwar"] not found'),
        (["-t", "simulate"], "the module has no target"),
    ],
)
def test_errors_are_one_line_without_traceback(args, message):
    out = charon_opt(str(EXAMPLES / "mlp.mlir"), *args)
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_output_file_is_not_written_on_error(tmp_path):
    dest = tmp_path / "out.json"
    out = charon_opt(str(EXAMPLES / "mlp.mlir"), "-t", "simulate", "-o", str(dest))
    assert out.returncode == 1
    assert not dest.exists()
    out = charon_opt(str(EXAMPLES / "mlp.mlir"), "-p", "set-target{hardware=H100}", "-t", "simulate", "-o", str(dest))
    assert out.returncode == 0, out.stderr
    assert '"iteration_time_s"' in dest.read_text()
