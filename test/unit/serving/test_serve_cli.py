"""`charon serve` end to end in a subprocess: the DESIGN.md section 7 keys, and
one-line errors with a non-zero exit on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SECTION_7_KEYS = ("ttft_s", "tpot_s", "itl_s", "e2e_s", "throughput_tokens_per_s", "peak_memory_bytes")
LLAMA70_TP8 = ("--model", "llama-3.1-70b", "--hardware", "H100-SXM5-80GB", "--tp", "8")


def charon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "charon_ir.cli", "serve", *args],
        capture_output=True, text=True, timeout=600,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]


def test_json_has_every_section_7_key(tmp_path):
    trace = tmp_path / "iterations.json"
    proc = charon(*LLAMA70_TP8, "--rate", "4", "--num-requests", "1000", "--input-len", "1024",
                  "--output-len", "256", "--json", "--trace-out", str(trace))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for key in SECTION_7_KEYS:
        assert key in report
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        assert set(report[key]) == {"p50", "p90", "p99", "mean"}
        assert 0 < report[key]["p50"] <= report[key]["p90"] <= report[key]["p99"]
    assert report["requests"] == 1000
    assert report["output_tokens"] == 256_000
    assert report["throughput_tokens_per_s"] > 0
    assert 0 < report["peak_memory_bytes"] < 80 * 2**30
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == report["replicas"][0]["iterations"]


def test_seed_makes_runs_reproducible():
    args = (*LLAMA70_TP8, "--rate", "8", "--num-requests", "200", "--length-dist", "lognormal", "--json")
    a, b = charon(*args, "--seed", "3"), charon(*args, "--seed", "3")
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["e2e_s"] == json.loads(b.stdout)["e2e_s"]


def test_table_output():
    proc = charon(*LLAMA70_TP8, "--batch", "16", "--input-len", "512", "--output-len", "64",
                  "--slo-ttft", "1", "--slo-tpot", "0.05")
    assert proc.returncode == 0, proc.stderr
    assert "TTFT" in proc.stdout and "goodput" in proc.stdout
    # without an SLO there is nothing to be within: no goodput line
    plain = charon(*LLAMA70_TP8, "--batch", "16", "--input-len", "512", "--output-len", "64")
    assert plain.returncode == 0, plain.stderr
    assert "throughput" in plain.stdout and "goodput" not in plain.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--model", "llama-3.1-70b", "--tp", "3", "--batch", "1"), "--tp 3 does not divide the 64 attention heads"),
        (("--model", "llama-3.1-405b", "--tp", "1", "--batch", "1"), "does not fit on H100-SXM5-80GB"),
        (("--model", "llama-3.1-70b", "--hardware", "Z900", "--tp", "8", "--batch", "1"), "Z900"),
        (("--model", "llama-9000b", "--batch", "1"), "unknown model 'llama-9000b'"),
        ((*LLAMA70_TP8, "--batch", "4", "--rate", "2", "--num-requests", "4"), "give one request source"),
        ((*LLAMA70_TP8, "--rate", "2"), "--rate needs --num-requests"),
        (LLAMA70_TP8, "give one request source"),
        ((*LLAMA70_TP8, "--batch", "4", "--router", "random"), "--router must be one of"),
        ((*LLAMA70_TP8, "--batch", "4", "--preemption", "drop"), "--preemption must be one of"),
        ((*LLAMA70_TP8, "--batch", "4", "--stage", "lunch:3"), "--stage 'lunch:3'"),
        ((*LLAMA70_TP8, "--rate", "1", "--num-requests", "2", "--prefill-replicas", "1"),
         "disaggregation needs --prefill-replicas and --decode-replicas"),
        ((*LLAMA70_TP8, "--batch", "1", "--input-len", "200000"), "more than the 131072-token context"),
        ((*LLAMA70_TP8, "--batch", "1", "--input-len", "100000", "--gpu-memory-utilization", "0.3"),
         "KV blocks"),
    ],
)
def test_bad_input_is_one_line(args, fragment):
    assert_one_line_error(charon(*args), fragment)


def test_malformed_trace_file(tmp_path):
    bad = tmp_path / "requests.jsonl"
    bad.write_text('{"arrival_s": 0, "input_tokens": 10, "output_tokens": 4}\n{"arrival_s": 1,\n')
    out = tmp_path / "t.json"
    proc = charon(*LLAMA70_TP8, "--trace", str(bad), "--trace-out", str(out))
    assert_one_line_error(proc, f"{bad}:2: not a JSON object")
    assert not out.exists()


SMALL = ("--model", "llama-3.1-8b", "--input-len", "128", "--output-len", "16")


@pytest.mark.parametrize(
    "args, line",
    [
        # NaN passed every `< 0` check and ran; infinity too
        (("--rate", "nan", "--num-requests", "4"), "error: --rate must be a finite number >= 0, got nan"),
        (("--rate", "inf", "--num-requests", "4"), "error: --rate must be a finite number >= 0, got inf"),
        # numpy's own error used to surface as an internal error
        (("--rate", "1", "--num-requests", "4", "--length-dist", "uniform", "--length-spread", "-1"),
         "error: --length-spread must be a finite number >= 0, got -1.0"),
        # these were accepted and ignored
        (("--batch", "4", "--prefill-replicas", "-1"),
         "error: --prefill-replicas and --decode-replicas must be >= 0, got -1 and 0"),
        (("--batch", "4", "--slo-ttft", "-1"), "error: --slo-ttft must be a finite number of seconds >= 0, got -1.0"),
        (("--batch", "4", "--slo-tpot", "nan"), "error: --slo-tpot must be a finite number of seconds >= 0, got nan"),
        # numpy's SeedSequence error was an internal error
        (("--rate", "1", "--num-requests", "4", "--seed", "-1"), "error: --seed must be >= 0, got -1"),
        # a spread past int64 wrapped to negative token counts and throughputs (exit 0)
        (("--rate", "4", "--num-requests", "10", "--length-dist", "lognormal", "--length-spread", "1e300"),
         "error: --length-spread 1e+300: lognormal lengths around 128 leave the range of token counts "
         "(up to 2^31); give a smaller spread"),
        # past the memory (killed), past the clock's digits (TTFT 0)
        (("--rate", "4", "--num-requests", "2000000000"),
         "error: --num-requests must be in 1..10,000,000 (a longer run: several), got 2000000000"),
        (("--rate", "1e-300", "--num-requests", "3"),
         "error: --rate 1e-300: 3 requests arrive over 1.04e+300 s, beyond 1e+09 s"),
        # accepted and ignored, or contradicting a trace's rule
        (("--batch", "4", "--draft-model", "llama-3.1-8b"),
         "error: --draft-model drafts for speculative decoding: give --speculative-k too"),
        (("--batch", "4", "--replicas", "3", "--prefill-replicas", "1", "--decode-replicas", "1"),
         "error: --replicas counts colocated replicas; with --prefill-replicas and --decode-replicas "
         "(disaggregated) give those alone"),
        (("--batch", "4", "--prefix-tokens", "100"),
         "error: --prefix-tokens and --prefix-groups go together (shared prefixes of that many tokens, "
         "over that many groups)"),
        (("--batch", "4", "--prefix-tokens", "2048", "--prefix-groups", "1"),
         "error: --prefix-tokens 2048 exceeds --input-len 128"),
        # checked with --rate only: accepted with --batch
        (("--batch", "4", "--length-dist", "bogus"),
         "error: --length-dist must be one of fixed, uniform, exponential, lognormal, zipf, got 'bogus'"),
        # a valid distribution was dropped without a word: a batch has fixed lengths
        (("--batch", "4", "--length-dist", "lognormal"),
         "error: --length-dist lognormal: lengths are drawn for the requests --rate sends; a static "
         "--batch has --input-len and --output-len, a --trace its own"),
        (("--batch", "4", "--length-spread", "-1"), "error: --length-spread must be a finite number >= 0, got -1.0"),
        (("--batch", "4", "--length-spread", "nan"), "error: --length-spread must be a finite number >= 0, got nan"),
        # a stage's N was not checked: empty, a TTFT of 4e16 s, a fetch cut to the prompt unseen
        (("--batch", "4", "--stage", "reasoning:"),
         "error: --stage 'reasoning:': expected KIND[:N] with KIND one of retrieval, remote_kv, reasoning and N "
         "a count (retrieval:DOCS, remote_kv:TOKENS, reasoning:TOKENS)"),
        (("--batch", "4", "--stage", "retrieval:99999999999999999999"),
         "error: --stage 'retrieval:99999999999999999999': N must be at most 100,000 documents"),
        (("--batch", "4", "--stage", "remote_kv:100000000"),
         "error: --stage 'remote_kv:100000000': fetches the KV of 100000000 prompt tokens, more than the "
         "longest prompt (128 tokens)"),
        # a prompt past the context on its own was blamed on the reasoning stage
        (("--batch", "4", "--input-len", "200000", "--stage", "reasoning:10"),
         "error: request 0: 200026 tokens, more than the 131072-token context of llama-3.1-8b"),
        (("--batch", "4", "--stage", "reasoning:200000"),
         "error: --stage 'reasoning:200000': request 0 would hold 200144 tokens (128 prompt + 16 output + "
         "200000 reasoning), more than the 131072-token context of llama-3.1-8b"),
        # one message for three options, without the value
        (("--batch", "4", "--block-size", "0"), "error: --block-size must be >= 1, got 0"),
        (("--batch", "4", "--max-batch-tokens", "0"), "error: --max-batch-tokens must be >= 1, got 0"),
        (("--batch", "4", "--max-num-seqs", "-1"), "error: --max-num-seqs must be >= 1, got -1"),
        # "--rate needs --num-requests" though it was given
        (("--rate", "2", "--num-requests", "0"),
         "error: --rate needs --num-requests >= 1 (the requests it sends), got 0"),
        # ran out of host memory after a while
        (("--batch", "4", "--replicas", "10000000"),
         "error: --replicas 10000000: 10,000,000 replicas x 1 GPUs (tp x pp x ep) = 10,000,000 GPUs, more "
         "than the 1,048,576 one run simulates"),
        (("--rate", "1", "--num-requests", "4", "--tp", "2", "--prefill-replicas", "100000000",
          "--decode-replicas", "100000000"),
         "error: --prefill-replicas 100000000 + --decode-replicas 100000000: 200,000,000 replicas x 2 GPUs "
         "(tp x pp x ep) = 400,000,000 GPUs, more than the 1,048,576 one run simulates"),
    ],
)
def test_bad_numbers_are_one_line(charon_fails, args, line):
    assert charon_fails("serve", *SMALL, *args) == line


def test_the_deployment_cap_counts_every_gpu():
    from charon_ir.errors import CharonError
    from charon_ir.serving.cluster import MAX_GPUS, Deployment

    Deployment(replicas=MAX_GPUS // 8).check_size(8)  # at the cap: runs
    with pytest.raises(CharonError, match=r"^--replicas 131073: 131,073 replicas x 8 GPUs"):
        Deployment(replicas=MAX_GPUS // 8 + 1).check_size(8)


def test_stages_in_range_run():
    from charon_ir.serving import serve

    report = serve("llama-3.1-8b", batch=2, input_len=128, output_len=16,
                   stages=("retrieval:8", "remote_kv:128", "reasoning:32"))
    assert report["output_tokens"] == 2 * (16 + 32)  # reasoning decodes more
    # a bare KIND is its base latency alone, as a trace stage without a count
    bare = serve("llama-3.1-8b", batch=2, input_len=128, output_len=16, stages=("retrieval",))
    assert bare["output_tokens"] == 2 * 16


def test_an_unknown_draft_model_names_its_option(charon_fails):
    line = charon_fails("serve", *SMALL, "--batch", "4", "--speculative-k", "2", "--draft-model", "nosuch")
    assert line.startswith("error: --draft-model nosuch: unknown model 'nosuch'; bundled models: "), line


def test_a_hand_written_step_is_not_a_serving_model(charon_fails):
    assert charon_fails("serve", "--model", "examples/llama_tiny_step.mlir", "--batch", "4") == (
        "error: --model examples/llama_tiny_step.mlir: serving builds its prefill and decode steps "
        "from a bundled name or a config.json, not a hand-written training step")


@pytest.mark.parametrize(
    "request_line, line",
    [
        # NaN arrivals used to stall the scheduler ("1 requests never finished")
        ('{"arrival_s": NaN, "input_tokens": 10, "output_tokens": 5}',
         "'arrival_s' must be a number of seconds in 0..1e+09, got nan"),
        # finite but beyond float64's microseconds: every latency printed as 0
        ('{"arrival_s": 1e308, "input_tokens": 10, "output_tokens": 5}',
         "'arrival_s' must be a number of seconds in 0..1e+09, got 1e+308"),
        # the request beyond the model's context names its line
        ('{"arrival_s": 0, "input_tokens": 200000, "output_tokens": 5}',
         "200005 tokens, more than the 131072-token context of llama-3.1-8b"),
        # int() of JSON's Infinity and NaN used to be an internal error
        ('{"arrival_s": 0, "input_tokens": Infinity, "output_tokens": 5}',
         "'input_tokens' must be an integer in 1..2^31, got inf"),
        ('{"arrival_s": 0, "input_tokens": 10, "output_tokens": NaN}',
         "'output_tokens' must be an integer in 1..2^31, got nan"),
        # printed as a 300-digit integer
        ('{"arrival_s": 0, "input_tokens": 10, "output_tokens": 1e300}',
         "'output_tokens' must be an integer in 1..2^31, got 1e+300"),
    ],
)
def test_non_finite_trace_numbers(charon_fails, tmp_path, request_line, line):
    trace = tmp_path / "requests.jsonl"
    trace.write_text(request_line + "\n")
    assert charon_fails("serve", "--model", "llama-3.1-8b", "--trace", str(trace)) == f"error: {trace}:1: {line}"


def test_trace_out_that_cannot_be_written_leaves_nothing(charon_fails, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    line = charon_fails("serve", *SMALL, "--batch", "2", "--trace-out", str(folder))
    assert line == f"error: --trace-out {folder}: is a directory, not a file"  # before the run
    # not even the temporary file written beside it
    assert list(tmp_path.rglob("*")) == [folder]


def test_trace_out_ending_in_a_separator_names_a_folder(charon_fails, tmp_path):
    # `Path("out/")` is `Path("out")`: without the check a file named `out` was written
    line = charon_fails("serve", *SMALL, "--batch", "2", "--trace-out", f"{tmp_path}/out/")
    assert line == f"error: --trace-out {tmp_path}/out/: is a directory, not a file"
    assert list(tmp_path.iterdir()) == []


def test_trace_file_with_stages(tmp_path):
    trace = tmp_path / "requests.jsonl"
    lines = [
        {"arrival_s": 0.0, "input_tokens": 2000, "output_tokens": 50,
         "stages": [{"kind": "retrieval", "documents": 10}, {"kind": "remote_kv", "tokens": 1500}]},
        {"arrival_s": 0.1, "input_tokens": 300, "output_tokens": 20,
         "stages": [{"kind": "reasoning", "tokens": 500}]},
        {"arrival_s": 0.2, "input_tokens": 900, "output_tokens": 10, "prefix_id": "sys", "prefix_tokens": 512},
        {"arrival_s": 0.3, "input_tokens": 900, "output_tokens": 10, "prefix_id": "sys", "prefix_tokens": 512},
    ]
    trace.write_text("\n".join(json.dumps(x) for x in lines))
    proc = charon(*LLAMA70_TP8, "--trace", str(trace), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["requests"] == 4
    assert report["output_tokens"] == 50 + 20 + 500 + 10 + 10  # reasoning decodes more


def test_the_same_command_prints_the_same_json_byte_for_byte():
    # the simulator's own wall-clock seconds are not in it (serve(timings=True) adds them)
    args = (*SMALL, "--rate", "16", "--num-requests", "50", "--length-dist", "lognormal", "--json")
    first, second = charon(*args), charon(*args)
    assert first.returncode == 0, first.stderr
    assert "simulator_wall_s" not in json.loads(first.stdout)
    assert first.stdout == second.stdout
