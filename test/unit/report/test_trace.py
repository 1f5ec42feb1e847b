"""The trace loads in Perfetto's JSON importer: every event has the Chrome
trace-event fields with the right types, and complete events match the timeline."""

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

REQUIRED = {"X": {"name": str, "ph": str, "ts": float, "dur": float, "pid": int, "tid": int},
            "M": {"name": str, "ph": str, "pid": int, "tid": int, "args": dict}}


def test_trace_follows_the_chrome_trace_event_schema(tmp_path):
    trace = tmp_path / "new" / "trace.json"  # missing folders are created
    out = subprocess.run(
        [sys.executable, "-m", "charon_ir.cli", "simulate", "--model",
         str(EXAMPLES / "transformer_layer.mlir"), "--hardware", "H100", "--json",
         "--trace", str(trace)],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    data = json.loads(trace.read_text())
    events = data["traceEvents"]
    for ev in events:
        for key, typ in REQUIRED[ev["ph"]].items():
            assert isinstance(ev[key], typ), (key, ev)
    complete = [e for e in events if e["ph"] == "X"]
    # every timed event is in the trace; zero-time joins and barriers are not
    assert 0 < len(complete) <= report["events"]
    assert sum(e["dur"] for e in complete if e["cat"] == "compute") == __import__("pytest").approx(
        report["streams"]["compute"]["busy_s"] * 1e6
    )
    assert max(e["ts"] + e["dur"] for e in complete) == __import__("pytest").approx(
        report["iteration_time_s"] * 1e6
    )
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads == {"compute", "comm_tp"}


def test_no_trace_file_on_error(tmp_path):
    trace = tmp_path / "trace.json"
    out = subprocess.run(
        [sys.executable, "-m", "charon_ir.cli", "simulate", "--model",
         str(EXAMPLES / "mlp.mlir"), "--hardware", "Z9", "--trace", str(trace)],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "unknown GPU 'Z9'" in out.stderr
    assert not trace.exists()


def test_a_trace_that_cannot_be_written_is_one_line(tmp_path):
    """The API's callers (charon-opt -t simulate, sweeps) get a CharonError, not an
    OSError, and nothing is left in the folder."""
    import pytest

    from charon_ir.errors import CharonError
    from charon_ir.report.trace import write_trace

    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    with pytest.raises(CharonError) as info:
        write_trace(a_file / "t.json", [])
    assert str(info.value) == f"cannot write {a_file / 't.json'}: File exists"
    with pytest.raises(CharonError) as info:
        write_trace(tmp_path, [])
    assert str(info.value) == f"{tmp_path}: is a directory, not a regular file; refusing to replace it"
    # nor its temporary file, written beside it
    assert list(tmp_path.iterdir()) == [a_file]
    assert not list(tmp_path.parent.glob(f".{tmp_path.name}.*"))
