"""charon-opt as a user meets it: start-up without torch, one-line errors."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

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
        # the option's error, not the verifier's on the i64 attribute it becomes
        (["-p", f"set-target{{hardware=H100 gpus={10**20}}}"],
         f"pass 'set-target': option 'gpus' ({10**20}) is out of the 64-bit integer range"),
        (["-p", f"set-target{{hardware=H100}},shard-tensor{{tp=-{10**20}}}"],
         f"pass 'shard-tensor': option 'tp' (-{10**20}) is out of the 64-bit integer range"),
        # scientific notation reaches the option as a number (xDSL read it as a word); a
        # float option takes any size
        (["-p", "set-target{hardware=H100},memory-analysis{limit-gb=1e-9}"],
         "memory-analysis: stage 0 needs"),
        (["-p", f"set-target{{hardware=H100}},memory-analysis{{limit-gb=1e21}},shard-tensor{{tp=1e30}}"],
         f"pass 'shard-tensor': option 'tp' ({10**30}) is out of the 64-bit integer range"),
        # xDSL kept the last value without a word
        (["-p", "shard-tensor{tp=2 tp=4}"], "charon-opt: error: pass 'shard-tensor': option 'tp' is given twice"),
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


@pytest.mark.parametrize(
    "args, line",
    [
        (["--frob"], "charon-opt: error: unrecognized arguments: --frob"),
        (["-t", "frob"], "charon-opt: error: argument -t/--target: invalid choice: 'frob'"),
    ],
)
def test_usage_errors_are_one_line(args, line):
    """argparse would print the whole usage before its error line."""
    out = charon_opt(str(EXAMPLES / "mlp.mlir"), *args)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), out.stderr


def test_unreadable_input_names_the_file(tmp_path):
    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b"\x00\xff garbage")
    out = charon_opt(str(binary))
    assert out.returncode == 1
    assert out.stderr == f"charon-opt: error: {binary}: not UTF-8 text (byte 1)\n"
    missing = tmp_path / "missing.mlir"
    out = charon_opt(str(missing))
    assert out.returncode == 1
    assert out.stderr == f"charon-opt: error: {missing}: No such file or directory\n"
    # a newline in the name is shown escaped: the diagnostic stays one line
    odd = tmp_path / "a\nb.mlir"
    out = charon_opt(str(odd))
    assert out.returncode == 1
    assert out.stderr == f"charon-opt: error: {tmp_path}/a\\nb.mlir: No such file or directory\n"


def test_output_file_in_a_missing_folder(tmp_path):
    dest = tmp_path / "missing" / "out.mlir"
    out = charon_opt(str(EXAMPLES / "mlp.mlir"), "-o", str(dest))
    assert out.returncode == 1
    assert out.stderr == f"charon-opt: error: {dest}: No such file or directory\n"
    assert list(tmp_path.iterdir()) == []


INTERNAL_ERROR = """
import charon_ir.tools.charon_opt as charon_opt

def boom(*args, **kwargs):
    raise ZeroDivisionError("an internal bug")

charon_opt.verify_located = boom
charon_opt.main([{path!r}])
"""


@pytest.mark.parametrize("debug", [False, True])
def test_an_internal_error_is_one_line_unless_debugging(debug):
    """A bug (not bad input) used to escape as a traceback; as in `charon`, it is
    one line unless CHARON_DEBUG asks for the traceback."""
    env = {k: v for k, v in os.environ.items() if k != "CHARON_DEBUG"}
    if debug:
        env["CHARON_DEBUG"] = "1"
    code = INTERNAL_ERROR.format(path=str(EXAMPLES / "mlp.mlir"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 1
    if debug:
        assert "Traceback" in out.stderr
    else:
        assert out.stderr == ("charon-opt: error: internal error, please report it (CHARON_DEBUG=1 shows "
                              "the traceback): ZeroDivisionError: an internal bug\n")


def _nested_repeats(depth: int) -> str:
    lines = ["builtin.module {", '  %x0 = sim.input "x" : tensor<4xbf16>']
    for i in range(depth):
        lines += [f"  %r{i} = sim.repeat 2 iter(%x{i} : tensor<4xbf16>) slices( : ) -> (tensor<4xbf16>) {{",
                  f"  ^bb{i}(%x{i + 1}: tensor<4xbf16>):"]
    lines += [f"  sim.yield %x{depth} : tensor<4xbf16>"]
    for i in reversed(range(depth)):
        lines += ["  }"] + ([f"  sim.yield %r{i} : tensor<4xbf16>"] if i else [])
    return "\n".join(lines + ["}"]) + "\n"


def test_regions_nested_past_the_recursion_limit_are_one_line(tmp_path):
    """xDSL parses, verifies and prints recursively: a RecursionError was an
    internal error."""
    deep = tmp_path / "deep.mlir"
    deep.write_text(_nested_repeats(150))
    out = charon_opt(str(deep), "-t", "mlir")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == (
        f"charon-opt: error: {deep}: regions nest too deeply (past Python's recursion limit of 1000)")


def test_a_program_that_unrolls_past_the_event_budget_is_refused(tmp_path):
    """Loops nested in loops multiply: 40 levels of 2 iterations (or one count of
    1e18) filled the memory before anything was said."""
    nested = tmp_path / "nested.mlir"
    nested.write_text(_nested_repeats(40))
    out = charon_opt(str(nested), "-p", "set-target{hardware=H100},cost-annotate,lower-to-events", "-t", "simulate")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == (
        "charon-opt: error: interpreter: a loop of 2 iterations unrolls to 1.1e+12 events and iterations, "
        "over the 20,000,000 one simulation holds (nested or huge loop counts)")
    huge = tmp_path / "huge.mlir"
    huge.write_text(
        'builtin.module {\n  event.program @p ranks 1 {\n    event.stream @compute compute\n'
        "    %s = event.wait()\n    %l = event.loop 1000000000000000000 iter(%s) {\n"
        "    ^bb0(%t: !event.token):\n      %a = event.compute \"mm\" on @compute duration 1.0 after(%t)\n"
        "      event.yield %a\n    }\n  }\n}\n")
    out = charon_opt(str(huge), "-p", "set-target{hardware=H100}", "-t", "simulate")
    assert out.returncode == 1
    assert "a loop of 1,000,000,000,000,000,000 iterations unrolls to 1e+18 events and" in out.stderr


def test_scientific_numbers_become_decimals_outside_quotes():
    from charon_ir.tools.charon_opt import decimal_numbers

    assert decimal_numbers('a{x=1e-9 c="runs/1e5 x.cluster"},b{y=[1e2,3] z=2.5E+1}') == (
        'a{x=0.000000001 c="runs/1e5 x.cluster"},b{y=[100,3] z=25}')


def test_a_huge_value_makes_an_error_line_of_at_most_500_characters(capsys):
    from charon_ir.tools.charon_opt import main

    with pytest.raises(SystemExit) as info:
        main([str(EXAMPLES / "mlp.mlir"), "-p", "no-such-pass-" + "x" * 2_000])
    err = capsys.readouterr().err
    assert info.value.code == 1 and err.count("\n") == 1
    line = err.rstrip("\n")
    assert line.startswith("charon-opt: error: ") and line.endswith("…") and len(line) == 500


@dataclasses.dataclass(frozen=True)
class MoveInputLast(ModulePass):
    """A broken pass: the module's first op (an input the phases read) moved to the
    end, so it is used before it is defined, which xDSL's verifier does not see."""

    name = "move-input-last"

    def apply(self, ctx, op: ModuleOp) -> None:
        first = op.body.block.first_op
        assert first is not None
        first.detach()
        op.body.block.add_op(first)


@dataclasses.dataclass(frozen=True)
class UntransposeMatmul(ModulePass):
    """A broken pass: the first matmul's `transpose_rhs` dropped, so its operands'
    contracting dimensions no longer agree."""

    name = "untranspose-matmul"

    def apply(self, ctx, op: ModuleOp) -> None:
        matmul = next(o for o in op.walk() if o.name == "sim.matmul")
        del matmul.properties["transpose_rhs"]


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    from charon_ir.tools.charon_opt import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


@pytest.mark.parametrize("broken, line", [
    (MoveInputLast, "charon-opt: error: move-input-last: produced invalid IR (a bug, please report it): "
                    "'sim.matmul' op operand %x is used before it is defined"),
    (UntransposeMatmul, "charon-opt: error: untranspose-matmul: produced invalid IR (a bug, please report "
                        "it): 'sim.matmul' op contracting dims differ"),
])
def test_the_module_is_verified_after_every_pass_and_the_pass_named(capsys, monkeypatch, broken, line):
    from charon_ir.registry import ALL_PASSES

    monkeypatch.setitem(ALL_PASSES, broken.name, lambda: broken)
    mlp = str(EXAMPLES / "mlp.mlir")
    code, out, err = run_main(capsys, mlp, "-p", f"{broken.name},set-target{{hardware=H100}}")
    assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith(line), err
    # --no-verify-each: the module goes on unverified, to the printer
    from charon_ir.tools.charon_opt import main

    main([mlp, "-p", broken.name, "--no-verify-each"])
    out = capsys.readouterr()
    assert out.err == "" and "sim.matmul" in out.out
