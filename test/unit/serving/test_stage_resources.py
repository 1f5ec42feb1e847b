"""Stages as resources (`--stage-servers`): a resource's stages queue first come,
first served on its servers; utilisation and queueing delay in the JSON and the
Perfetto trace; bad input in one line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.serving.requests import Request, Stage
from charon_ir.serving.stages import (
    StageModel,
    apply_stages,
    parse_stage_servers,
    schedule_stages,
)

from .test_serve_cli import assert_one_line_error, charon

MODEL = StageModel()
KV_BYTES = 1.0e5


def test_parse():
    assert parse_stage_servers(("retrieval=4,remote_kv=1",)) == {"retrieval": 4, "remote_kv": 1}
    assert parse_stage_servers(("retrieval=2", "remote_kv=3")) == {"retrieval": 2, "remote_kv": 3}


@pytest.mark.parametrize(("text", "fragment"), [
    ("vector-db=4", "unknown resource 'vector-db'; resources: retrieval, remote_kv"),
    ("reasoning=2", "unknown resource 'reasoning'"),
    ("retrieval", "retrieval needs =N servers"),
    ("retrieval=0", "retrieval needs =N servers"),
    ("retrieval=x", "retrieval needs =N servers"),
    ("retrieval=2,retrieval=3", "retrieval given twice"),
])
def test_bad_servers(text, fragment):
    with pytest.raises(CharonError) as e:
        parse_stage_servers((text,))
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_one_server_serialises_simultaneous_retrievals():
    requests = [Request(i, 0.0, 100, 10, stages=[Stage("retrieval", 10)]) for i in range(4)]
    service = MODEL.retrieval_base_s + 10 * MODEL.retrieval_per_document_s
    staged, uses = schedule_stages(requests, MODEL, KV_BYTES, {"retrieval": 1})
    assert [s.ready_s for s in staged] == pytest.approx([service * (i + 1) for i in range(4)])
    assert [u.start_s - u.ready_s for u in uses] == pytest.approx([service * i for i in range(4)])


stage_lists = st.lists(st.sampled_from([Stage("retrieval", 5), Stage("retrieval", 50), Stage("remote_kv", 64),
                                        Stage("reasoning", 10)]), max_size=3)
request_lists = st.lists(st.tuples(st.floats(0, 1), stage_lists), min_size=1, max_size=30).map(
    lambda rows: [Request(i, a, 100, 10, stages=list(s)) for i, (a, s) in enumerate(sorted(rows, key=lambda r: r[0]))])


@settings(max_examples=80, deadline=None)
@given(request_lists, st.integers(1, 4), st.integers(1, 3))
def test_queues_hold_their_servers(requests, retrieval, links):
    servers = {"retrieval": retrieval, "remote_kv": links}
    staged, uses = schedule_stages(requests, MODEL, KV_BYTES, servers)
    plain = [apply_stages(r, MODEL, KV_BYTES) for r in requests]
    for s, p, r in zip(staged, plain, requests):
        # queueing only delays; what the stages change of the request is the same
        assert s.ready_s >= p.ready_s - 1e-12 and s.ready_s >= r.arrival_s
        assert (s.prefill_tokens, s.fetched_tokens, s.output_tokens) == \
            (p.prefill_tokens, p.fetched_tokens, p.output_tokens)
    for kind, n in servers.items():
        mine = sorted((u for u in uses if u.kind == kind), key=lambda u: u.start_s)
        assert all(u.start_s >= u.ready_s - 1e-12 for u in mine)
        for u in mine:  # never more stages at once than servers
            assert sum(v.start_s <= u.start_s < v.end_s for v in mine) <= n
        by_server: dict[int, list] = {}
        for u in mine:
            by_server.setdefault(u.server, []).append(u)
        for spans in by_server.values():
            assert all(b.start_s >= a.end_s - 1e-12 for a, b in zip(spans, spans[1:]))
        # first come, first served: a stage that queued earlier starts no later
        assert all(a.start_s <= b.start_s + 1e-12 for a in mine for b in mine if a.ready_s < b.ready_s)


@settings(max_examples=30, deadline=None)
@given(request_lists)
def test_enough_servers_is_no_queue(requests):
    staged, uses = schedule_stages(requests, MODEL, KV_BYTES, {"retrieval": 100, "remote_kv": 100})
    for s, r in zip(staged, requests):
        assert s.ready_s == pytest.approx(apply_stages(r, MODEL, KV_BYTES).ready_s)
    assert all(u.start_s == u.ready_s for u in uses)


def test_rag_trace_reports_queueing_in_json_and_perfetto(tmp_path):
    trace = tmp_path / "iterations.json"
    proc = charon("--model", "llama-3.1-8b", "--rate", "400", "--num-requests", "400", "--input-len", "512",
                  "--output-len", "32", "--stage", "retrieval:20", "--stage", "reasoning:64",
                  "--stage-servers", "retrieval=2", "--json", "--trace-out", str(trace))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    retrieval = report["stages"]["retrieval"]
    assert retrieval["servers"] == 2 and retrieval["stages"] == 400
    assert 0 < retrieval["utilization"] <= 1
    assert retrieval["service_s"]["mean"] == pytest.approx(2e-3 + 20 * 0.4e-3)
    # 400 requests/s of 10 ms on two servers (twice their rate): the queue grows
    assert retrieval["queueing_delay_s"]["p99"] > 10 * retrieval["service_s"]["mean"]
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e.get("name") == "retrieval" and e["ph"] == "X"]
    assert len(spans) == 400 and {e["tid"] for e in spans} == {0, 1}
    assert any(e["args"]["queued_s"] > 0 for e in spans)


def test_unknown_resource_on_the_command_line_is_one_line():
    proc = charon("--model", "llama-3.1-8b", "--batch", "2", "--stage", "retrieval:4",
                  "--stage-servers", "vectordb=2")
    assert_one_line_error(proc, "--stage-servers 'vectordb=2': unknown resource 'vectordb'")
