"""A configuration that does not fit in memory (DESIGN.md section 7): `charon
simulate --json` prints the whole report, timed as if memory were unlimited, with
"fits": false and the memory diagnostic under "oom", then the diagnostic on one
stderr line, and exits 1; without --json only the diagnostic; the Python API
raises it unless asked `allow_oom=True`."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from charon_ir.api import simulate
from charon_ir.errors import CharonError

EIGHT_LAYERS = Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir"
DESIGN_KEYS = ("iteration_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "peak_memory_bytes",
               "breakdown", "engines")
OOM_LINE = r"memory-analysis: stage 0 needs \d+\.\d GiB of 80\.0 GiB: optimizer states [\d.]+ GiB, "


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    """EIGHT_LAYERS grown to 512 layers of 4096 x 4096: 8.6e9 parameters, whose
    AdamW states alone (~96 GiB) do not fit one H100."""
    text = re.sub(r"(?<![0-9if])64(?![0-9])", "4096", EIGHT_LAYERS.read_text())
    text = text.replace("<8x", "<512x").replace("sim.repeat 8 ", "sim.repeat 512 ")
    path = tmp_path_factory.mktemp("oom") / "big.mlir"
    path.write_text(text)
    return str(path)


def charon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "charon_ir.cli", "simulate", *args],
                          capture_output=True, text=True, timeout=300)


def test_json_reports_every_key_then_fails_with_one_line(big):
    out = charon("--model", big, "--gpus", "1", "--global-batch", "1", "--json")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1
    assert re.match("error: " + OOM_LINE, out.stderr)
    report = json.loads(out.stdout)
    for key in DESIGN_KEYS:
        assert key in report
    assert report["iteration_time_s"] > 0 and report["tokens_per_s"] > 0
    assert report["fits"] is False
    oom = report["oom"]
    assert oom["stage"] == 0 and oom["capacity_bytes"] == 80 * 2**30
    assert oom["peak_bytes"] == max(report["peak_memory_bytes"]) > oom["capacity_bytes"]
    assert [c["what"] for c in oom["largest"]][0] == "optimizer states" and len(oom["largest"]) == 3
    assert "error: " + oom["message"] + "\n" == out.stderr


def test_without_json_only_the_diagnostic(big):
    out = charon("--model", big, "--gpus", "1", "--global-batch", "1")
    assert out.returncode == 1 and out.stdout == ""
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1
    assert re.match("error: " + OOM_LINE, out.stderr)


def test_api_raises_unless_allowed(big):
    with pytest.raises(CharonError, match="^" + OOM_LINE):
        simulate(big, gpus=1, global_batch=1)
    report = simulate(big, gpus=1, global_batch=1, allow_oom=True)
    assert report["fits"] is False and report["oom"]["stage"] == 0
    # the same step with ZeRO-3 over 8 GPUs fits
    fitting = simulate(big, gpus=8, global_batch=8, zero=3, allow_oom=True)
    assert fitting["fits"] is True and "oom" not in fitting


def test_fitting_json_says_fits():
    out = charon("--model", str(EIGHT_LAYERS), "--gpus", "2", "--global-batch", "4", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["fits"] is True and "oom" not in report
    for key in DESIGN_KEYS:
        assert key in report
