"""`charon profile` from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
HAS_CUDA = torch.cuda.is_available()

STEP = """
builtin.module {
  %x = sim.input "x" : tensor<128x64xf32>
  %w = sim.param "w" : tensor<64x64xf32>
  %m = sim.matmul %x, %w : (tensor<128x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
  %s = sim.elementwise "silu" %m : tensor<128x64xf32> -> tensor<128x64xf32>
  %g = sim.generic "aten.sort"(%s) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<128x64xf32>) -> tensor<128x64xf32>
}
"""


def test_default_sweep_is_the_sweep_modules():
    from charon_ir.commands.profile import DEFAULT_SWEEP
    from charon_ir.profile.sweep import DEFAULT_FACTORS

    assert tuple(float(f) for f in DEFAULT_SWEEP.split(",")) == DEFAULT_FACTORS


@pytest.fixture
def charon(charon_cli):
    return charon_cli


def test_profile_then_fit(tmp_path: Path, charon):
    step = tmp_path / "step.mlir"
    step.write_text(STEP)
    db = tmp_path / "p.db"
    result = charon("profile", "--device", "cpu", "--ops-from", str(step), "--db", str(db),
                    "--repeats", "2", "--warmup", "1", "--sweep", "2", "--fit")
    assert result.returncode == 0, result.stderr
    assert "cpu (torch " in result.stderr and "measured " in result.stderr
    assert "not measured x1 (priced by the next engine): aten.sort" in result.stderr
    assert "matmul" in result.stdout and "per op kind on cpu" in result.stdout
    again = charon("profile", "--device", "cpu", "--ops-from", str(step), "--db", str(db), "--sweep", "2")
    assert again.returncode == 0 and "measured 0," in again.stderr


def test_refresh_below_measures_the_small_rows_again(tmp_path: Path, charon):
    """A row stored as faster than --refresh-below (a kernel timed at PyTorch's
    launch rate before CUDA graphs) is measured again and replaced; the others stay."""
    import sqlite3

    step = tmp_path / "step.mlir"
    step.write_text(STEP)
    db = tmp_path / "p.db"
    first = charon("profile", "--device", "cpu", "--ops-from", str(step), "--db", str(db), "--sweep", "",
                   "--repeats", "2", "--warmup", "1")
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE measurement SET time_s = 1e-12 WHERE kind = 'matmul'")
    again = charon("profile", "--device", "cpu", "--ops-from", str(step), "--db", str(db), "--sweep", "",
                   "--repeats", "2", "--warmup", "1", "--refresh-below", "1e-9")
    assert again.returncode == 0, again.stderr
    assert "measured 1, already in the database 1," in again.stderr
    with sqlite3.connect(db) as conn:
        (matmul,) = conn.execute("SELECT time_s FROM measurement WHERE kind = 'matmul'").fetchone()
    assert matmul > 1e-9


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "error: charon profile: pass --device cpu|cuda to measure, or --fit"),
        (("--fit", "--db", "{bad}"), "error: profile database {bad} is not a valid Charon profile database: file is not a database"),
        (("--device", "cpu", "--ops-from", "{missing}"), "error: {missing}: cannot read: No such file or directory"),
        (("--device", "tpu", "--db", "{new}"), "error: --device tpu: expected cpu, cuda or cuda:N"),
        # float("nan") parsed, passed `> 0`'s negation, and failed inside the sweep
        (("--device", "cpu", "--sweep", "2,nan", "--db", "{new}"),
         "error: --sweep '2,nan': factors must be finite numbers > 0"),
        (("--device", "cpu", "--ops-from", "{binary}", "--db", "{new}"),
         "error: {binary}: not UTF-8 text (byte 1)"),
        # were accepted and ignored (the step's shapes are the file's), or stored blank
        (("--device", "cpu", "--ops-from", "{step}", "--seq-len", "99", "--db", "{new}"),
         "error: --seq-len shapes the step --model imports; the ops of --ops-from (or the bundled "
         "step) have their own shapes"),
        (("--device", "cpu", "--device-name", "  ", "--db", "{new}"),
         "error: --device-name must name a device (it keys the measurements), got a blank"),
        (("--device", "cpu", "--model", "llama-3.1-8b", "--batch", "0", "--db", "{new}"),
         "error: --batch must be >= 1, got 0"),
        (("--device", "cpu", "--refresh-below", "-1", "--db", "{new}"),
         "error: --refresh-below must be a number of seconds >= 0, got -1.0"),
        (("--fit", "--shipped-steps", "--db", "{new}"),
         "error: charon profile: --ops-from, --model and --shipped-steps need --device cpu|cuda"),
        (("--device", "cpu", "--shipped-steps", "--ops-from", "{step}", "--db", "{new}"),
         "error: charon profile: pass one of --ops-from, --model and --shipped-steps"),
        # a name ending in a separator names a folder (a file named `new.db` was written)
        (("--device", "cpu", "--db", "{new}/"), "error: --db {new}/: is a directory, not a file"),
        pytest.param(
            ("--device", "cuda", "--ops-from", "{step}", "--db", "{new}"),
            "error: --device cuda: torch sees no CUDA device on this machine",
            marks=pytest.mark.skipif(HAS_CUDA, reason="this machine has a CUDA device"),
            id="cuda-absent",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], message: str, charon):
    paths = {"bad": tmp_path / "bad.db", "missing": tmp_path / "missing.mlir", "new": tmp_path / "new.db",
             "binary": tmp_path / "binary.mlir", "step": tmp_path / "step.mlir"}
    paths["bad"].write_bytes(b"random bytes, not sqlite" * 100)
    paths["binary"].write_bytes(b"\x00\xff garbage")
    paths["step"].write_text(STEP)
    result = charon("profile", *(a.format(**paths) for a in args))
    assert result.returncode == 1
    assert result.stderr.strip() == message.format(**paths)
    # checked before the database is opened: no file, no "profiling ..." line
    assert not paths["new"].exists()


def test_the_bar_says_what_it_counts(tmp_path: Path, charon, monkeypatch):
    """The header counts ops; the bar counts measurements (each op not yet in the
    database, once a round): its label says so, and its total is their product."""
    from rich.progress import Progress

    seen = []
    real_update = Progress.update

    def update(self, task, **kw):
        if "description" in kw:
            seen.append((kw["description"], kw.get("total")))
        return real_update(self, task, **kw)

    monkeypatch.setattr(Progress, "update", update)
    step = tmp_path / "step.mlir"
    step.write_text(STEP)
    result = charon("profile", "--device", "cpu", "--ops-from", str(step), "--db", str(tmp_path / "p.db"),
                    "--repeats", "2", "--warmup", "1", "--sweep", "2")
    assert result.returncode == 0, result.stderr
    ((label, total),) = seen
    words = label.split()
    ops, rounds = int(words[1]), int(words[4])
    assert label == f"measuring {ops} ops x {rounds} rounds on cpu" and total == ops * rounds


def test_a_budget_measures_the_models_ops_first_and_leaves_the_rest(tmp_path: Path, charon):
    """--budget stops starting ops once spent: the first op of the plan (the
    model's) is measured, the variants after it wait for a later run, which
    resumes where this one stopped."""
    step = tmp_path / "step.mlir"
    step.write_text(STEP)
    db = tmp_path / "p.db"
    args = ("profile", "--device", "cpu", "--ops-from", str(step), "--db", str(db), "--repeats", "1",
            "--warmup", "0", "--sweep", "2")
    first = charon(*args, "--budget", "1e-9")
    assert first.returncode == 0, first.stderr
    assert "--budget 1e-09 s reached: 7 ops left unmeasured; run again to measure them" in first.stderr
    assert "measured 1," in first.stderr
    rest = charon(*args)
    assert rest.returncode == 0 and "already in the database 1" in rest.stderr
