"""The bad-input contract under fuzzing (issue #30, item 12): whatever the flags
and however an .mlir, .cluster or config.json file is mutated, `charon` either
exits 0 with a valid report, or exits 1 or 2 with one `error:` line: no
traceback, no "internal error", and no file changed but the outputs named.

The runs are in-process (no interpreter start-up per example); the example
counts keep the whole file near a minute on the 2-CPU machine."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MLP = (EXAMPLES / "mlp.mlir").read_text()
TINY_STEP = (EXAMPLES / "llama_tiny_step.mlir").read_text()
CLUSTER = (EXAMPLES / "clusters" / "dgx-h100.cluster").read_text()
CONFIG = json.loads((EXAMPLES / "llama_tiny_config.json").read_text())

def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() and "cache" not in p.relative_to(folder).parts}


def charon(workdir: Path, *args: str, outputs: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """`charon ARGS` in this process from `workdir`, checked against the contract;
    returns (exit status, stdout, stderr)."""
    from charon_ir import cli

    before, examples = snapshot(workdir), snapshot(EXAMPLES)
    out, err = io.StringIO(), io.StringIO()
    argv, cwd = sys.argv, os.getcwd()
    sys.argv = ["charon", *args]
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv = argv
        os.chdir(cwd)
    stdout, stderr = out.getvalue(), err.getvalue()
    event(f"exit {code}")  # --hypothesis-show-statistics: how many examples ran, how many failed
    assert "Traceback" not in stderr and "internal error" not in stderr, (args, stderr)
    if code == 0:
        report = json.loads(stdout)
        assert math.isfinite(report["iteration_time_s"]) and report["iteration_time_s"] > 0, report
    else:
        assert code in (1, 2), (args, code, stderr)
        errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and stderr.endswith("\n") and len(errors[0]) <= 500, (args, stderr)
    after = snapshot(workdir)
    changed = {name for name in after if before.get(name) != after[name]} | (before.keys() - after.keys())
    assert changed <= {*outputs, *(f"{o}-wal" for o in outputs)}, (args, changed)
    assert snapshot(EXAMPLES) == examples
    return code, stdout, stderr


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CHARON_PROFILE_DB", str(tmp_path / "cache" / "profile.db"))
    return tmp_path


COUNTS = st.one_of(st.integers(-3, 20), st.sampled_from([0, 2**31, 10**12, 2**63]))
FLAG_VALUES = {
    "--gpus": COUNTS, "--tp": COUNTS, "--pp": COUNTS, "--dp": COUNTS, "--cp": COUNTS, "--vpp": COUNTS,
    "--micro-batch": COUNTS, "--global-batch": COUNTS, "--seq-len": COUNTS, "--zero": COUNTS,
    "--bucket-mb": st.one_of(COUNTS, st.sampled_from(["1e308", "nan", "-1", "0.5"])),
    "--recompute": st.sampled_from(["none", "selective", "full", "all", ""]),
    "--schedule": st.sampled_from(["1f1b", "gpipe", "interleaved", "zb-h1", "2f2b"]),
    "--hardware": st.sampled_from(["H100", "A100", "B200", "Z100", "H100:hbm_bw=-1", "H100:hbm_bw=1e400", ""]),
    "--precision": st.sampled_from(["bf16", "fp8", "fp4"]),
    "--engines": st.sampled_from(["analytic", "db,analytic", "predict,analytic", "magic"]),
    "--tier": st.sampled_from(["fast", "fine", "slow"]),
    "--framework": st.sampled_from(["none", "megatron-core", "deepspeed-9"]),
    "--power-cap": st.sampled_from(["0", "300", "-5", "1e308"]),
}


@fuzz(40)
@given(flags=st.dictionaries(st.sampled_from(sorted(FLAG_VALUES)), st.just(None), max_size=4).flatmap(
    lambda keys: st.fixed_dictionaries({k: FLAG_VALUES[k] for k in keys})))
def test_simulate_flags(workdir, flags):
    args = [str(a) for pair in flags.items() for a in pair]
    charon(workdir, "simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--json", *args)


def mutate(text: str, data: st.DataObject) -> str:
    """One edit of the kind a typo or a bad tool makes: a character replaced, a
    span deleted, a line repeated, a number changed."""
    kind = data.draw(st.sampled_from(["char", "delete", "line", "number"]))
    if kind == "number":
        import re

        numbers = [m for m in re.finditer(r"\d+(\.\d+)?", text)]
        m = numbers[data.draw(st.integers(0, len(numbers) - 1))]
        new = data.draw(st.sampled_from(["0", "-1", "1e308", "99999999999999999999", "3", "1.5", "nan"]))
        return text[: m.start()] + new + text[m.end():]
    if kind == "line":
        lines = text.splitlines(keepends=True)
        i = data.draw(st.integers(0, len(lines) - 1))
        return "".join(lines[: i + 1] + [lines[i]] * data.draw(st.integers(1, 3)) + lines[i + 1:])
    i = data.draw(st.integers(0, len(text) - 1))
    if kind == "delete":
        return text[:i] + text[i + data.draw(st.integers(1, 40)):]
    return text[:i] + data.draw(st.sampled_from(list("{}()[]<>%=,:\"x0-.\n\x00é"))) + text[i + 1:]


@fuzz(40)
@given(data=st.data())
def test_simulate_a_mutated_mlir(workdir, data):
    step = workdir / "step.mlir"
    step.write_text(mutate(data.draw(st.sampled_from([MLP, TINY_STEP])), data))
    charon(workdir, "simulate", "--model", str(step), "--gpus", "8", "--json", "--trace", "t.json",
           outputs=("t.json",))


@fuzz(40)
@given(data=st.data())
def test_simulate_on_a_mutated_cluster(workdir, data):
    cluster = workdir / "c.cluster"
    cluster.write_text(mutate(CLUSTER, data))
    charon(workdir, "simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--cluster", str(cluster),
           "--gpus", "8", "--json")


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2**40), st.floats(allow_nan=False),
                        st.text(max_size=5), st.lists(st.integers(0, 3), max_size=2))


@fuzz(15)
@given(edits=st.dictionaries(st.sampled_from(sorted(CONFIG)), JSON_VALUES, min_size=1, max_size=2))
def test_simulate_a_mutated_config(workdir, edits):
    config = workdir / "config.json"
    config.write_text(json.dumps({**CONFIG, **edits}))
    charon(workdir, "simulate", "--model", str(config), "--gpus", "8", "--json")


PIPELINES = st.sampled_from([
    "", "set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events",
    "shard-tensor{tp=2},set-target{hardware=H100 gpus=8},cost-annotate",
    "pipeline{pp=2},data-parallel{dp=2}", "recompute{policy=full},fuse", "memory-analysis",
    "set-target{hardware=H100},cost-annotate,lower-to-events,fuse",
])


@fuzz(30)
@given(data=st.data(), pipeline=PIPELINES)
def test_charon_opt_on_a_mutated_mlir(tmp_path, data, pipeline):
    """charon-opt: exit 0 with IR on stdout, or exit 1/2 with one error line."""
    from charon_ir.tools.charon_opt import main

    step = tmp_path / "step.mlir"
    step.write_text(mutate(data.draw(st.sampled_from([MLP, TINY_STEP])), data))
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main([str(step), *(["-p", pipeline] if pipeline else [])])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    event(f"exit {code}")
    stderr = err.getvalue()
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    if code == 0:
        assert out.getvalue().startswith("builtin.module"), out.getvalue()[:200]
    else:
        assert code in (1, 2) and len(stderr.splitlines()) == 1 and len(stderr) <= 520, stderr
