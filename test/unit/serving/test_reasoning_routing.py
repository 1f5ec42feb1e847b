"""Reasoning with a token budget and model routing as stages (#27): a reasoning
stage decodes at most its budget before the answer; a small router model reads
every prompt on servers of its own before the large one answers; the JSON's
`stages` gives each stage's queue, and the Perfetto trace each request's wait."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.serving import serve
from charon_ir.serving.cluster import Deployment, run
from charon_ir.serving.metrics import answer_start_s, reasoning_report
from charon_ir.serving.requests import Request, Stage, read_trace
from charon_ir.serving.scheduler import SchedulerConfig
from charon_ir.serving.stages import StageModel, schedule_stages

from .conftest import synthetic_model

EXAMPLE = Path(__file__).parents[3] / "examples" / "serving" / "rag_reasoning.jsonl"
COMMON = dict(rate=40.0, num_requests=60, input_len=512, output_len=16)


def test_a_budget_cuts_reasoning_and_the_answer_starts_after_it():
    free = serve("llama-3.1-8b", stages=("reasoning:400",), **COMMON)
    capped = serve("llama-3.1-8b", stages=("reasoning:400",), reasoning_budget=100, **COMMON)
    assert free["output_tokens"] == 60 * (16 + 400) and capped["output_tokens"] == 60 * (16 + 100)
    assert capped["stages"]["reasoning"]["cut_by_budget"] == 60 and free["stages"]["reasoning"]["cut_by_budget"] == 0
    assert capped["stages"]["reasoning"]["tokens"]["mean"] == 100
    for report in (free, capped):
        r = report["stages"]["reasoning"]
        # the first token is a thinking one: the answer comes after the reasoning
        assert r["time_to_answer_s"]["mean"] > report["ttft_s"]["mean"] and r["reasoning_s"]["p50"] > 0
    assert capped["stages"]["reasoning"]["reasoning_s"]["mean"] < free["stages"]["reasoning"]["reasoning_s"]["mean"]


def test_a_trace_stage_keeps_its_own_tighter_budget(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"arrival_s": 0, "input_tokens": 64, "output_tokens": 4, "stages": [{"kind": "reasoning", "tokens": 300, "budget": 50}]}\n'
        '{"arrival_s": 0, "input_tokens": 64, "output_tokens": 4, "stages": [{"kind": "reasoning", "tokens": 300}]}\n')
    report = serve("llama-3.1-8b", trace=str(trace), reasoning_budget=120)
    assert report["output_tokens"] == (4 + 50) + (4 + 120)
    assert report["stages"]["reasoning"]["cut_by_budget"] == 2


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 40)), min_size=1, max_size=12))
def test_the_answer_starts_after_the_first_token_and_by_the_last(rows):
    """answer_start_s: the first token without reasoning; else the decode
    iteration that produced token `reasoning`, never past the finish."""
    requests = [Request(i, i * 0.01, 64, out, stages=[Stage("reasoning", thought)] if thought else [])
                for i, (thought, out) in enumerate(rows)]
    result = run(requests, synthetic_model(1.0e5), SchedulerConfig(), Deployment(), kv_blocks=4000)
    for seq, answer in zip(result.sequences, answer_start_s(result)):
        thought = seq.request.stages[0].amount if seq.request.stages else 0
        assert seq.first_token_s <= answer <= seq.finish_s
        assert (answer == seq.first_token_s) == (thought == 0)
    assert reasoning_report(result)["stages"] == sum(1 for t, _ in rows if t)


def test_a_lone_decision_takes_what_serving_it_on_the_router_takes():
    """The router's replicas are simulated as replicas: one request alone is
    decided in the time the router model serves that request (prefill + tokens - 1 decodes)."""
    report = serve("llama-3.1-8b", router_model="llama-3.1-8b", router_tokens=3, batch=1, input_len=512, output_len=16)
    alone = serve("llama-3.1-8b", batch=1, input_len=512, output_len=3, policy="continuous")
    routing = report["stages"]["routing"]
    assert routing["servers"] == 1 and routing["stages"] == 1 and routing["model"] == "llama-3.1-8b"
    assert routing["service_s"]["mean"] == pytest.approx(alone["e2e_s"]["mean"])
    assert routing["queueing_delay_s"]["mean"] == 0
    # then the large model prefills it: its TTFT is the decision plus its own prefill
    assert report["ttft_s"]["mean"] == pytest.approx(alone["e2e_s"]["mean"] + alone["ttft_s"]["mean"])


def test_the_router_batches_and_more_routers_wait_less():
    one = serve("llama-3.1-8b", router_model="llama-3.1-8b", router_tokens=3, **COMMON)
    routing = one["stages"]["routing"]
    assert routing["stages"] == 60 and 0 < routing["utilization"] <= 1
    assert one["config"]["router_model"] == "llama-3.1-8b"
    many = serve("llama-3.1-8b", router_model="llama-3.1-8b", router_tokens=3, stage_servers=("routing=8",), **COMMON)
    assert many["stages"]["routing"]["servers"] == 8
    assert many["stages"]["routing"]["queueing_delay_s"]["mean"] <= routing["queueing_delay_s"]["mean"]


def test_routing_is_not_queued_among_the_stage_servers():
    """schedule_stages passes a routing stage through: the router's replicas decide it."""
    requests = [Request(i, 0.0, 256, 8, stages=[Stage("retrieval", 4), Stage("routing", 2)]) for i in range(5)]
    staged, uses = schedule_stages(requests, StageModel(), 1e5, {"retrieval": 5, "routing": 1})
    assert {u.kind for u in uses} == {"retrieval"}
    assert all(s.ready_s == pytest.approx(StageModel().retrieval_base_s + 4 * StageModel().retrieval_per_document_s)
               for s in staged)


def test_the_rag_reasoning_example_shows_every_stages_queue(tmp_path):
    trace_out = tmp_path / "rag.json"
    report = serve("llama-3.1-8b", trace=str(EXAMPLE), stage_servers=("retrieval=1",),
                   router_model="llama-3.1-8b", reasoning_budget=1024, trace_out=trace_out)
    stages = report["stages"]
    assert list(stages) == ["retrieval", "routing", "llm", "reasoning"]
    for name in ("retrieval", "routing", "llm"):
        assert 0 < stages[name]["utilization"] <= 1 and stages[name]["queueing_delay_s"]["p99"] >= 0
    reasoning = [s for r in read_trace(EXAMPLE) for s in r.stages if s.kind == "reasoning"]
    assert stages["reasoning"]["stages"] == len(reasoning)
    events = json.loads(trace_out.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"stage retrieval", "requests", "router replica 0 (both)"} <= names
    begins = [e for e in events if e["ph"] == "b"]
    ends = [e for e in events if e["ph"] == "e"]
    assert len(begins) == len(ends) == 2 * 300 + len(reasoning)  # the model's and the router's queue
    assert sum(e["name"] == "reasoning" for e in begins) == len(reasoning)


@pytest.mark.parametrize("args, message", [
    (("--stage-servers", "routing=2"), "--stage-servers routing=N and --router-tokens are the router's: give --router-model too"),
    (("--router-model", "no-such-model"), "--router-model no-such-model: "),
    (("--router-model", "llama-3.1-8b", "--router-tokens", "0"), "--router-tokens must be in 1..4096, got 0"),
    (("--reasoning-budget", "64"), "--reasoning-budget caps reasoning stages, and no request has one"),
    (("--stage", "reasoning:64", "--reasoning-budget", "-1"), "--reasoning-budget must be in 1..2^31 tokens, got -1"),
    (("--router-model", "llama-3.1-405b"), "--router-model llama-3.1-405b: llama-3.1-405b does not fit on H100-SXM5-80GB"),
    (("--cp-policy", "fixed:2", "--router-model", "llama-3.1-8b"), "it does not take --router-model"),
])
def test_bad_stage_options_are_one_line(charon_fails, args, message):
    line = charon_fails("serve", "--model", "llama-3.1-8b", "--batch", "2", *args)
    assert message in line


@pytest.mark.parametrize("stage, message", [
    ('{"kind": "reasoning", "tokens": 10, "budgt": 5}', "a reasoning stage takes 'kind', 'tokens' and 'budget', not 'budgt'"),
    ('{"kind": "retrieval", "documents": 4, "budget": 5}', "a retrieval stage takes 'kind', 'documents', not 'budget'"),
    ('{"kind": "reasoning", "tokens": 10, "budget": 0}', "'budget' must be an integer in 1..2^31, got 0"),
])
def test_bad_trace_stage_is_one_line(charon_fails, tmp_path, stage, message):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0, "input_tokens": 8, "output_tokens": 4, "stages": [' + stage + ']}\n')
    line = charon_fails("serve", "--model", "llama-3.1-8b", "--trace", str(trace))
    assert f"{trace}:1: {message}" in line


def test_the_retrieval_cost_is_an_input():
    report = serve("llama-3.1-8b", stages=("retrieval:10",), stage_servers=("retrieval=1",),
                   retrieval_cost="5:1.5", **COMMON)
    assert report["stages"]["retrieval"]["service_s"]["mean"] == pytest.approx(5e-3 + 10 * 1.5e-3)


@pytest.mark.parametrize("args, message", [
    (("--stage", "retrieval:4", "--retrieval-cost", "2"), "--retrieval-cost '2': expected BASE_MS:PER_DOCUMENT_MS"),
    (("--stage", "retrieval:4", "--retrieval-cost", "2:-1"), "--retrieval-cost '2:-1': expected BASE_MS:PER_DOCUMENT_MS"),
    (("--stage", "retrieval:4", "--retrieval-cost", "nan:1"), "--retrieval-cost 'nan:1': expected"),
    (("--retrieval-cost", "2:0.4"), "--retrieval-cost prices retrieval stages, and no request has one"),
])
def test_bad_retrieval_cost_is_one_line(charon_fails, args, message):
    assert message in charon_fails("serve", "--model", "llama-3.1-8b", "--batch", "2", *args)


def test_the_cluster_files_gpu_serves_unless_hardware_is_given(charon_fails, tmp_path):
    cluster = tmp_path / "a100.cluster"
    cluster.write_text("node { gpu = A100-SXM4-40GB gpus = 8 }\n")
    line = charon_fails("serve", "--model", "llama-3.1-70b", "--batch", "1", "--cluster", str(cluster))
    assert "does not fit on A100-SXM4-40GB" in line
    line = charon_fails("serve", "--model", "llama-3.1-70b", "--batch", "1", "--cluster", str(cluster),
                        "--hardware", "H100-SXM5-80GB")
    assert "does not fit on H100-SXM5-80GB" in line
    line = charon_fails("serve", "--model", "llama-3.1-8b", "--batch", "1", "--cluster", str(cluster),
                        "--power-cap", "300")
    assert "--power-cap with --cluster: cap the cluster file's GPU" in line


def test_the_llm_stage_counts_replicas_not_their_pipeline_engines():
    report = serve("llama-3.1-8b", pp=2, replicas=2, stages=("reasoning:32",), **COMMON)
    assert report["stages"]["llm"]["servers"] == 2 and 0 < report["stages"]["llm"]["utilization"] <= 1
