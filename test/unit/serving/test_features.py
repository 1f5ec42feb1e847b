"""Each scheduling feature moves the metrics the way it should (synthetic step
model, so these run in milliseconds)."""

from __future__ import annotations

import numpy as np
import pytest

from charon_ir.serving import metrics
from charon_ir.serving.cluster import Deployment, run
from charon_ir.serving.latency import Curve
from charon_ir.serving.requests import Request, Stage
from charon_ir.serving.scheduler import SchedulerConfig

from .conftest import synthetic_model

MODEL = synthetic_model()


def workload(n=40, prompt=1000, output=100, gap=0.02, **extra):
    return [Request(i, i * gap, prompt, output, **extra) for i in range(n)]


def summary(result):
    m = metrics.latency_metrics(result)
    return {k: float(np.mean(m[k])) for k in ("ttft", "tpot", "e2e")}


def test_curve_interpolates_and_extends():
    c = Curve((1.0, 10.0, 100.0), (1.0, 2.0, 11.0))
    assert c(1.0) == 1.0 and c(5.5) == pytest.approx(1.5) and c(200.0) == pytest.approx(21.0)
    assert c(0.5) == 1.0  # never below the smallest sample


@pytest.mark.parametrize("k, a, expected", [(0, 0.5, 1.0), (4, 1.0, 5.0), (3, 0.5, 1.875)])
def test_tokens_per_speculative_step(k, a, expected):
    assert SchedulerConfig(speculative_k=k, acceptance_rate=a).tokens_per_decode == pytest.approx(expected)


def test_speculative_decoding_cuts_tpot():
    plain = summary(run(workload(), MODEL, SchedulerConfig(), Deployment(), 10_000))
    spec = summary(run(workload(), MODEL, SchedulerConfig(speculative_k=4, acceptance_rate=0.8),
                       Deployment(), 10_000))
    assert spec["tpot"] < 0.6 * plain["tpot"]


def test_prefix_cache_cuts_ttft():
    cold = summary(run(workload(prompt=3000), MODEL, SchedulerConfig(), Deployment(), 20_000))
    shared = workload(prompt=3000, prefix_id="system", prefix_tokens=2800)
    warm = summary(run(shared, MODEL, SchedulerConfig(), Deployment(), 20_000))
    assert warm["ttft"] < 0.5 * cold["ttft"]


def test_more_replicas_cut_queueing():
    heavy = workload(n=200, gap=0.002)
    one = summary(run(heavy, MODEL, SchedulerConfig(), Deployment(replicas=1), 20_000))
    four = summary(run(heavy, MODEL, SchedulerConfig(), Deployment(replicas=4, router="least-loaded"), 20_000))
    assert four["e2e"] < one["e2e"]


def test_disaggregation_pays_a_kv_transfer():
    result = run(workload(n=5, gap=1.0), MODEL, SchedulerConfig(),
                 Deployment(prefill_replicas=1, decode_replicas=1), 20_000, hardware="H100-SXM5-80GB")
    for seq in result.sequences:
        assert seq.prefill_replica == 0 and seq.replica == 1
        decode_start = result.replicas[1].decode_end_s[seq.segments[0][1]]
        assert decode_start > seq.first_token_s


def test_stages_delay_and_lengthen():
    base = workload(n=1)
    staged = workload(n=1)
    staged[0].stages = [Stage("retrieval", 10), Stage("reasoning", 400)]
    a = run(base, MODEL, SchedulerConfig(), Deployment(), 20_000).sequences[0]
    b = run(staged, MODEL, SchedulerConfig(), Deployment(), 20_000).sequences[0]
    assert b.first_token_s - a.first_token_s == pytest.approx(2e-3 + 10 * 0.4e-3, rel=1e-6)
    assert b.output == a.output + 400


def test_remote_kv_skips_prefill():
    full = workload(n=1, prompt=4000)
    fetched = workload(n=1, prompt=4000)
    fetched[0].stages = [Stage("remote_kv", 3500)]
    a = run(full, MODEL, SchedulerConfig(), Deployment(), 20_000).sequences[0]
    b = run(fetched, MODEL, SchedulerConfig(), Deployment(), 20_000).sequences[0]
    assert b.first_token_s < a.first_token_s


def test_static_batching_waits_for_the_batch():
    requests = [Request(0, 0.0, 100, 500), Request(1, 0.01, 100, 10)]
    static = run(requests, MODEL, SchedulerConfig(policy="static"), Deployment(), 20_000)
    continuous = run(requests, MODEL, SchedulerConfig(), Deployment(), 20_000)
    # static: the second request waits for the first batch to end
    assert static.sequences[1].first_token_s > static.sequences[0].finish_s - 1e-12
    assert continuous.sequences[1].finish_s < continuous.sequences[0].finish_s


def test_static_batch_overhead_is_charged_once_per_batch():
    requests = [Request(0, 0.0, 128, 1), Request(1, 0.0, 128, 1)]
    base = run(requests, MODEL, SchedulerConfig(policy="static"), Deployment(), 20_000)
    charged = run(requests, MODEL, SchedulerConfig(policy="static", batch_overhead_s=3.7e-3),
                  Deployment(), 20_000)
    for a, b in zip(base.sequences, charged.sequences):
        assert b.first_token_s - a.first_token_s == pytest.approx(3.7e-3)
    # continuous batching ignores it: a server's per-request setup overlaps other steps
    cont = run(requests, MODEL, SchedulerConfig(batch_overhead_s=3.7e-3), Deployment(), 20_000)
    plain = run(requests, MODEL, SchedulerConfig(), Deployment(), 20_000)
    assert [s.first_token_s for s in cont.sequences] == [s.first_token_s for s in plain.sequences]


def test_negative_batch_overhead_is_rejected():
    from charon_ir.errors import CharonError

    with pytest.raises(CharonError, match="batch_overhead_s"):
        SchedulerConfig(batch_overhead_s=-1.0).check()


def test_goodput_counts_slo_misses():
    result = run(workload(n=100, gap=0.001), MODEL, SchedulerConfig(), Deployment(), 20_000)
    m = metrics.latency_metrics(result)
    loose = metrics.goodput(m, 10.0, 100.0, 1.0)
    tight = metrics.goodput(m, 10.0, float(np.median(m["ttft"])), 0.0)
    assert loose["requests_meeting_slo"] == 100
    assert 0 < tight["requests_meeting_slo"] < 100
