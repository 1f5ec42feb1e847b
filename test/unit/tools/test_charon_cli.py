"""`charon`'s last line of defence: an exception that is not a CharonError (a bug,
not bad input) still ends in one line and a non-zero exit, unless CHARON_DEBUG asks
for the traceback; and bad input the commands share (usage errors, impossible
counts, unreadable IR, unwritable outputs) is one line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from charon_ir.cli import main as cli_main

SCRIPT = """
import sys
import charon_ir.api as api
import charon_ir.cli as cli

def boom(*args, **kwargs):
    raise ZeroDivisionError("an internal bug")

api.simulate = boom
sys.argv = ["charon", "simulate", "--model", "llama-3.1-8b", "--gpus", "8"]
cli.main()
"""


def run(debug: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CHARON_DEBUG"}
    if debug:
        env["CHARON_DEBUG"] = "1"
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)


def test_an_internal_error_is_one_line():
    r = run(debug=False)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr
    assert "internal error" in r.stderr and "ZeroDivisionError: an internal bug" in r.stderr


def test_charon_debug_shows_the_traceback():
    r = run(debug=True)
    assert r.returncode != 0
    assert "Traceback" in r.stderr


@pytest.mark.parametrize(
    "args, line",
    [
        (("simulate", "--model", "llama-3.1-8b", "--tp", "abc"),
         "error: charon simulate: Invalid value for '--tp': Input should be a valid integer, "
         "unable to parse string as an integer"),
        (("simulate",), "error: charon simulate: Missing option '--model'."),
        (("simulate", "--model", "llama-3.1-8b", "--zeroo", "1"), "error: charon simulate: No such option: --zeroo"),
        (("simulat",), "error: charon: No such command 'simulat'."),
        (("profile", "--device", "cpu", "--repeats", "0"),
         "error: charon profile: Invalid value for '--repeats': Input should be greater than or equal to 1"),
    ],
)
def test_usage_errors_are_one_line(charon_fails, args, line):
    """click's own errors (a mistyped flag or value, a missing option) are bad
    input like any other: one line, not the usage and a boxed message."""
    assert charon_fails(*args).startswith(line)


def test_help_still_prints_and_succeeds(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["charon", "simulate", "--help"])
    cli_main()  # returns: the console script exits 0
    assert "Usage: charon simulate" in capsys.readouterr().out


EIGHT_LAYERS = str(Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir")
MLP = str(Path(__file__).resolve().parents[3] / "examples/mlp.mlir")


@pytest.mark.parametrize(
    "args, line",
    [
        (("--gpus", "0"), "error: --gpus must be >= 1, got 0"),
        (("--tp", "0"), "error: --tp must be >= 1, got 0"),
        (("--tp", "-2"), "error: --tp must be >= 1, got -2"),
        (("--pp", "0"), "error: --pp must be >= 1, got 0"),
        (("--cp", "0"), "error: --cp must be >= 1, got 0"),
        (("--micro-batch", "0"), "error: --micro-batch must be >= 1, got 0"),
        (("--global-batch", "-8"), "error: --global-batch must be >= 0, got -8"),
        (("--dp", "-1"), "error: --dp must be >= 0, got -1"),
        # past an int32 the tracer's sizes overflowed inside torch
        (("--micro-batch", str(10**20)), f"error: --micro-batch must be <= 2147483647, got {10**20}"),
        (("--gpus", str(2**31)), f"error: --gpus must be <= 2147483647, got {2**31}"),
    ],
)
def test_simulate_counts_below_one_are_one_line(charon_fails, args, line):
    """Zero or negative degrees used to divide by zero (an internal error) or
    surface as another pass's option."""
    assert charon_fails("simulate", "--model", EIGHT_LAYERS, "--global-batch", "8", *args) == line


def test_simulate_gpus_in_partial_nodes_is_one_line(charon_fails):
    line = charon_fails("simulate", "--model", EIGHT_LAYERS, "--global-batch", "12",
                        "--gpus", "12", "--gpus-per-node", "8")
    assert line == "error: set-target: option 'gpus' (12) is not a whole number of 8-GPU nodes"


def test_simulate_hand_written_step_with_no_gpus(charon_fails):
    # set-target reads gpus=0 as "every GPU of the cluster": not what --gpus 0 means
    assert charon_fails("simulate", "--model", MLP, "--gpus", "0") == "error: --gpus must be >= 1, got 0"


@pytest.mark.parametrize(
    "text, line",
    [
        (b"\x00\xff garbage", "error: {path}: not UTF-8 text (byte 1)"),
        (b"", "error: {path}: the file is empty (expected a builtin.module)"),
        (b'builtin.module {\n  %a = sim.input "a" : tensor<4x8xbf16>\n'
         b"  %b = sim.matmul %a, %a : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>\n}\n",
         "error: {path}:3:3: 'sim.matmul' op contracting dims differ: lhs K = 8, rhs K = 4"),
    ],
)
def test_simulate_bad_mlir_names_file_line_and_op(charon_fails, tmp_path, text, line):
    path = tmp_path / "step.mlir"
    path.write_bytes(text)
    assert charon_fails("simulate", "--model", str(path), "--gpus", "1") == line.format(path=path)


@pytest.mark.parametrize("flag", [("--seq-len", "-1"), ("--micro-batch", "4"), ("--schedule", "gpipe"),
                                  ("--no-fuse",), ("--tier", "bogus")])
def test_flags_a_hand_written_step_cannot_take_are_one_line(charon_fails, flag):
    """It is simulated as written: these shape what the passes build, and were
    silently ignored."""
    assert charon_fails("simulate", "--model", MLP, "--gpus", "1", *flag) == (
        f"error: {flag[0] if flag[0] != '--no-fuse' else '--fuse/--no-fuse'}: {MLP} is simulated as "
        "written (no flag asks for a pass): its shapes, kernels and schedule are the file's")


TINY = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json")
WAITED_BY_THE_PRESET = {
    "moe_a2a_overlap": ("simulate", "--model", "qwen3-30b-a3b", "--gpus", "8", "--ep", "8", "--seq-len", "256",
                        "--global-batch", "8", "--json"),
    "pp_send_overlap": ("simulate", "--model", TINY, "--hardware", "A100-SXM4-80GB", "--gpus", "4", "--tp", "2",
                        "--pp", "2", "--seq-len", "256", "--global-batch", "8", "--micro-batch", "1", "--json"),
}


@pytest.mark.parametrize("setting", sorted(WAITED_BY_THE_PRESET))
def test_an_overlap_flag_overrides_the_presets_wait(charon_cli, setting):
    """--moe-a2a-overlap / --pp-send-overlap win over the Megatron-Core preset's
    synchronous expert all-to-alls / waited-for pipeline sends (the report says
    where the value came from), and the step is faster for it."""
    flag = "--" + setting.replace("_", "-")
    free = json.loads(charon_cli(*WAITED_BY_THE_PRESET[setting], flag).stdout)
    waited = json.loads(charon_cli(*WAITED_BY_THE_PRESET[setting]).stdout)
    assert free["framework"]["settings"][setting] == {"value": True, "from": "flag"}
    assert waited["framework"]["settings"][setting]["value"] is False
    assert free["iteration_time_s"] < waited["iteration_time_s"]


@pytest.mark.parametrize("setting", sorted(WAITED_BY_THE_PRESET))
def test_an_overlap_flag_on_a_hand_written_step_is_one_line(charon_fails, setting):
    flag = "--" + setting.replace("_", "-")
    assert charon_fails("simulate", "--model", MLP, "--gpus", "1", "--no-" + flag[2:]) == (
        f"error: {flag}/--no-{flag[2:]}: {MLP} is simulated as written (no flag asks "
        "for a pass): its shapes, kernels and schedule are the file's")


@pytest.mark.parametrize(
    "model, flag, make_path, line",
    [
        (EIGHT_LAYERS, "--trace", lambda tmp: tmp / "a-file" / "t.json",
         "error: --trace {path}: {parent} is not a writable directory"),
        (EIGHT_LAYERS, "--trace", lambda tmp: tmp, "error: --trace {path}: is a directory, not a file"),
        # a name ending in a separator is a folder (a file named `new` was written)
        (EIGHT_LAYERS, "--trace", lambda tmp: f"{tmp}/new/", "error: --trace {path}: is a directory, not a file"),
        (EIGHT_LAYERS, "--plot", lambda tmp: tmp / "a-file", "error: --plot {path}: exists and is not a directory"),
        # a hand-written step is simulated as written, on its own path
        (MLP, "--trace", lambda tmp: tmp / "a-file" / "t.json",
         "error: --trace {path}: {parent} is not a writable directory"),
        (MLP, "--trace", lambda tmp: tmp, "error: --trace {path}: is a directory, not a file"),
        # an empty trace path was taken for no trace, an empty plot folder for "."
        (EIGHT_LAYERS, "--trace", lambda tmp: "", "error: --trace: an empty path"),
        (EIGHT_LAYERS, "--plot", lambda tmp: "", "error: --plot: an empty path"),
    ],
)
def test_simulate_unwritable_output_fails_before_the_run(charon_fails, tmp_path, model, flag, make_path, line):
    """Checked before anything is simulated (it used to be an internal error
    after the whole run), and nothing is left behind."""
    (tmp_path / "a-file").write_text("not a folder")
    before = sorted(tmp_path.rglob("*"))
    path = make_path(tmp_path)
    args = ("simulate", "--model", model, "--gpus", "2", "--global-batch", "4", flag, str(path))
    assert charon_fails(*args) == line.format(path=path, parent=Path(path).parent)
    assert sorted(tmp_path.rglob("*")) == before


def test_a_step_whose_kernel_counts_overflow_the_event_counters(charon_fails):
    """An attention at a 2^31-token sequence counts 2e21 FLOPs: with --json (which
    times a step that does not fit) lower-to-events failed on its i64 attribute."""
    tiny = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json")
    assert charon_fails("simulate", "--model", tiny, "--gpus", "1", "--seq-len", "2147483647", "--json") == (
        "error: lower-to-events: 'sim.attention' counts 2.36e+21 FLOPs, beyond the 64-bit counters of an "
        "event (a sequence or batch this large is not a step)")


def test_a_hand_written_step_takes_no_sequence_length(charon_fails):
    """With a pass flag the step is sharded, never resized: --seq-len was ignored."""
    step = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_step.mlir")
    assert charon_fails("simulate", "--model", step, "--gpus", "8", "--pp", "2", "--global-batch", "16",
                        "--seq-len", "100000") == (
        f"error: --seq-len: {step} is a hand-written step: its sequence length is the file's shapes' "
        "(the passes shard them, they do not resize them)")


@pytest.mark.parametrize(
    "args, line",
    [
        # the pipeline pass named its own options ('microbatches' is no flag)
        (("--pp", "2"), "error: the 1f1b schedule (the default with --pp) needs at least --pp 2 "
                        "micro-batches in flight: --global-batch 4 / (dp 4 x --micro-batch 1) = 1 micro-batches"),
        (("--pp", "2", "--schedule", "zb-h1"), "error: --schedule zb-h1 needs at least --pp 2 micro-batches "
                                               "in flight: --global-batch 4 / (dp 4 x --micro-batch 1) = 1 micro-batches"),
        (("--pp", "2", "--vpp", "2", "--schedule", "1f1b"),
         "error: --vpp 2 runs the interleaved schedule, not --schedule 1f1b"),
        (("--pp", "2", "--schedule", "zigzag"),
         "error: --schedule must be one of gpipe, 1f1b, interleaved, zb-h1, got 'zigzag'"),
        (("--pp", "2", "--vpp", "2", "--global-batch", "12"),
         "error: the interleaved schedule (the default with --vpp) needs the micro-batches divisible by --pp 2: "
         "--global-batch 12 / (dp 4 x --micro-batch 1) = 3 micro-batches"),
    ],
)
def test_schedule_errors_name_the_flags(charon_fails, args, line):
    assert charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8", *args) == line


def test_a_cluster_names_the_gpu_unless_hardware_is_given(charon_fails):
    """`--cluster dgx-a100` alone was refused: the --hardware default (H100)
    contradicted the cluster's GPU."""
    import json

    tiny = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json")
    args = ("simulate", "--model", tiny, "--seq-len", "256", "--cluster", "dgx-a100", "--gpus", "8")
    proc = subprocess.run([sys.executable, "-m", "charon_ir.cli", *args, "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hardware"] == "A100-SXM4-80GB"
    assert charon_fails(*args, "--hardware", "H100") == (
        "error: set-target: option 'hardware' (H100-SXM5-80GB) differs from the GPU of cluster "
        "'dgx-a100' (A100-SXM4-80GB)")


def test_a_value_with_a_newline_stays_on_one_line(charon_fails):
    assert charon_fails("simulate", "--model", "no\nsuch", "--gpus", "8").startswith(
        "error: unknown model 'no\\nsuch'; bundled models: ")
    # any character `str.splitlines` breaks at, not only a newline
    assert charon_fails("simulate", "--model", "no\u2028such", "--gpus", "8").startswith(
        "error: unknown model 'no\\u2028such'; bundled models: ")


def test_running_out_of_host_memory_is_one_line(charon_fails, monkeypatch):
    """A configuration too large for this host (10^8 ranks enumerated by the fine
    tier, 10^7 serving replicas) ended in an internal error naming MemoryError."""
    import charon_ir.api as api

    def too_large(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(api, "simulate", too_large)
    assert charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8") == (
        "error: out of host memory: the configuration is too large to simulate on this machine "
        "(fewer GPUs or replicas, or --tier fast, need less)")


@pytest.mark.parametrize("model", [MLP, str(Path(__file__).resolve().parents[3] / "examples/transformer_layer.mlir")])
def test_a_hand_written_step_without_layers_takes_no_parallel_flags(charon_fails, model):
    """It failed in the pipeline pass ("the forward phase has no sim.repeat of layers
    to split"), which no flag had asked for."""
    assert charon_fails("simulate", "--model", model, "--gpus", "2", "--tp", "2") == (
        f"error: {model} has no stack of layers (a sim.repeat in a forward phase) for the passes that "
        "parallel-strategy and batch flags ask for; without them it is simulated as written")


def test_a_huge_value_makes_an_error_line_of_at_most_500_characters(charon_fails):
    mlp = str(Path(__file__).resolve().parents[3] / "examples" / "mlp.mlir")
    line = charon_fails("simulate", "--model", mlp, "--hardware", "x" * 2_000)
    assert line.startswith("error: set-target: option 'hardware': unknown GPU 'xxx")
    assert line.endswith("…") and len(line) == 500


def test_simulate_no_mtp_of_a_hand_written_step_is_one_line(charon_fails):
    # the MTP modules are the frontend's: IR already holds them or not
    assert charon_fails("simulate", "--model", MLP, "--no-mtp") == (
        f"error: --no-mtp: {MLP} is already IR, with what it holds (`charon import --no-mtp` imports a "
        "model without its MTP modules)")
