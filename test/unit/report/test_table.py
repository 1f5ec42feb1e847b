"""The terminal tables: a summary, and one row per pipeline stage whatever the
number of streams (a 16-stage run stays one screen tall)."""

from io import StringIO

from rich.console import Console

from charon_ir.report.table import _framework_defaults, print_report


def report(stages: int) -> dict:
    per_stage = [
        {"compute_s": 1.0 + i, "exposed_comm_s": {"tp": 0.25, "pp": 0.001 * i}, "bubble_s": 0.5}
        for i in range(stages)
    ]
    streams = {}
    for i in range(stages):
        for lane in ("compute", "comm_tp", "comm_pp_send", "comm_pp_recv", "comm_dp"):
            streams[f"stage{i}/{lane}"] = {"busy_s": 1.0, "utilization": 0.5}
    return {
        "iteration_time_s": 4.0, "tokens_per_s": 1e6, "tflops_per_gpu": 300.0, "mfu": 0.3,
        "breakdown": {**per_stage[-1], "stage": stages - 1}, "stages": per_stage, "streams": streams,
        "engines": {"analytic": 10}, "gpus": 64, "hardware": "H100-SXM5-80GB",
        "peak_memory_bytes": [2**30 * (70 - i) for i in range(stages)],
    }


def render(r: dict) -> str:
    out = StringIO()
    print_report(r, Console(file=out, width=100))
    return out.getvalue()


def test_one_row_per_stage_not_per_stream():
    text = render(report(16))
    assert "stream stage" not in text
    rows = [line for line in text.splitlines() if line.startswith("│") and line.split("│")[1].strip().isdigit()]
    assert [int(r.split("│")[1]) for r in rows] == list(range(16))
    assert "peak memory per GPU" in text and "70.0 GiB" in text
    assert "compute (stage 15)" in text


def test_no_stage_table_without_a_pipeline():
    text = render(report(1))
    assert "per pipeline stage" not in text
    assert "iteration time" in text


def test_waited_for_pipeline_sends_are_named_among_the_framework_defaults():
    settings = {"pp_send_overlap": {"value": False, "from": "framework megatron-core"},
                "zero": {"value": 1, "from": "framework megatron-core"}}
    assert _framework_defaults({"name": "megatron-core", "settings": settings}) == (
        "megatron-core: waited-for pipeline sends, ZeRO-1")
    settings["pp_send_overlap"] = {"value": True, "from": "default"}
    assert _framework_defaults({"name": "megatron-core", "settings": settings}) == "megatron-core: ZeRO-1"


def test_a_step_of_unknown_tokens_says_why_it_has_no_throughput():
    """Hand-written IR whose inputs carry no `{tokens}` marker: the table says so
    instead of leaving the tokens/s row out."""
    r = report(1) | {"tokens_per_s": None}
    text = render(r)
    assert "no sim.input marked {tokens}" in text
    assert "no sim.input marked" not in render(report(1))


def test_the_replayed_reserved_bytes_sit_next_to_the_peak():
    """`peak_reserved_bytes` (the caching allocator's replay) is a summary row and
    a column of the stage table; a report without it has neither."""
    r = report(4)
    r["peak_reserved_bytes"] = [2**30 * (75 - i) for i in range(4)]
    text = render(r)
    assert "peak reserved per GPU" in text and "75.0 GiB" in text
    assert "reserved" in text.split("per pipeline stage")[1] and "72.0" in text
    assert "reserved" not in render(report(4))


def test_a_reserved_peak_past_the_gpus_memory_is_marked():
    """`reserved_fits` false on a stage (its replay ran past the GPU's memory):
    the summary row names the stage and the replay's out-of-memory, the stage
    table marks its reserved figure; stages that fit are not marked."""
    r = report(4)
    r["peak_reserved_bytes"] = [2**30 * (75 + 3 * i) for i in range(4)]
    r["reserved_fits"] = [True, True, False, False]
    text = render(r)
    assert "reserved past the memory" in text and "stage 2, 3: the replay runs out of memory" in text
    r["reserved_oom"] = {"stage": 2, "reserved_bytes": 81 * 2**30, "capacity_bytes": 80 * 2**30}
    assert "stage 2, 3: 81.0 of 80.0 GiB (stage 2)" in render(r)
    del r["reserved_oom"]
    assert "84.0 OOM" in text and "81.0 OOM" in text and "78.0 OOM" not in text
    r["reserved_fits"] = [True] * 4
    assert "OOM" not in render(r) and "out of memory" not in render(r)
