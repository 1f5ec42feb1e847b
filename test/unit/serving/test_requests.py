"""Request sources: determinism, lengths, and one-line errors on bad traces."""

from __future__ import annotations

import json

import numpy as np
import pytest

from charon_ir.errors import CharonError
from charon_ir.serving.requests import poisson, read_trace, sample_lengths, static_batch


def test_poisson_is_deterministic_given_a_seed():
    a = poisson(4.0, 200, 512, 128, seed=7, length_distribution="lognormal")
    b = poisson(4.0, 200, 512, 128, seed=7, length_distribution="lognormal")
    c = poisson(4.0, 200, 512, 128, seed=8, length_distribution="lognormal")
    assert [(r.arrival_s, r.input_tokens) for r in a] == [(r.arrival_s, r.input_tokens) for r in b]
    assert [r.input_tokens for r in a] != [r.input_tokens for r in c]


def test_poisson_rate():
    requests = poisson(10.0, 5000, 16, 16, seed=1)
    assert requests[0].arrival_s == 0.0
    span = requests[-1].arrival_s
    assert 5000 / span == pytest.approx(10.0, rel=0.05)
    assert all(a.arrival_s <= b.arrival_s for a, b in zip(requests, requests[1:]))


@pytest.mark.parametrize("dist", ["fixed", "uniform", "exponential", "lognormal", "zipf"])
def test_length_distributions_are_positive(dist):
    x = sample_lengths(np.random.default_rng(0), 2000, 300, dist, 0.5)
    assert x.min() >= 1
    if dist in ("fixed", "uniform", "exponential", "lognormal"):
        assert x.mean() == pytest.approx(300, rel=0.1)


def test_static_batch():
    batch = static_batch(8, 128, 32)
    assert len(batch) == 8 and {r.arrival_s for r in batch} == {0.0}


def write(tmp_path, lines):
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_trace_with_stages_and_prefix(tmp_path):
    path = write(tmp_path, [
        json.dumps({"arrival_s": 1.5, "input_tokens": 100, "output_tokens": 10}),
        json.dumps({"arrival_time": 0.5, "input_tokens": 200, "output_tokens": 20,
                    "prefix_id": "sys", "prefix_tokens": 64,
                    "stages": [{"kind": "retrieval", "documents": 4},
                               {"kind": "reasoning", "tokens": 100}]}),
    ])
    requests = read_trace(path)
    assert [r.arrival_s for r in requests] == [0.5, 1.5]
    assert [r.id for r in requests] == [0, 1]
    assert requests[0].stages[0].kind == "retrieval" and requests[0].stages[0].amount == 4
    assert requests[0].prefix_tokens == 64


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("{not json", "trace.jsonl:2: not a JSON object"),
        ("[1, 2]", "trace.jsonl:2: a trace line must be a JSON object"),
        ('{"arrival_s": -1, "input_tokens": 5, "output_tokens": 5}', "'arrival_s' must be a number of seconds in 0..1e+09"),
        ('{"arrival_s": 0, "output_tokens": 5}', "'input_tokens' must be an integer in 1..2^31"),
        ('{"arrival_s": 0, "input_tokens": 5, "output_tokens": 0}', "'output_tokens' must be an integer in 1..2^31"),
        ('{"arrival_s": 0, "input_tokens": 5, "output_tokens": 5, "stages": [{"kind": "x"}]}', "stage kind 'x'"),
        # bounded as --stage is: 2e9 documents gave a TTFT of 800,000 s; a longer
        # remote KV than the prompt was cut to the prompt unseen
        ('{"arrival_s": 0, "input_tokens": 5, "output_tokens": 5, "stages": [{"kind": "retrieval", '
         '"documents": 2000000000}]}', "trace.jsonl:2: 'documents' must be at most 100,000, got 2000000000"),
        ('{"arrival_s": 0, "input_tokens": 5, "output_tokens": 5, "stages": [{"kind": "remote_kv", '
         '"tokens": 6}]}', "trace.jsonl:2: a remote_kv stage fetches more 'tokens' than 'input_tokens'"),
    ],
)
def test_malformed_trace_lines(tmp_path, line, fragment):
    good = json.dumps({"arrival_s": 0, "input_tokens": 5, "output_tokens": 5})
    with pytest.raises(CharonError) as info:
        read_trace(write(tmp_path, [good, line]))
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_empty_and_missing_trace(tmp_path):
    with pytest.raises(CharonError, match="holds no request"):
        read_trace(write(tmp_path, [""]))
    with pytest.raises(CharonError, match="cannot read trace"):
        read_trace(tmp_path / "nope.jsonl")


def test_the_example_trace_reads():
    """README's goodput command serves it."""
    from pathlib import Path

    requests = read_trace(Path(__file__).resolve().parents[3] / "examples" / "requests.jsonl")
    assert len(requests) == 40 and all(r.input_tokens >= r.prefix_tokens for r in requests)
    assert [r.arrival_s for r in requests] == sorted(r.arrival_s for r in requests)
