"""Invariants of the scheduler over random workloads and configurations:

- no request is lost or served twice;
- KV blocks in use never exceed the capacity (and none leak);
- a request's TTFT is at least the time its prefill takes alone.
"""

from __future__ import annotations

import builtins
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charon_ir.serving import scheduler
from charon_ir.serving.cluster import Deployment, run
from charon_ir.serving.requests import Request, Stage
from charon_ir.serving.scheduler import SchedulerConfig
from charon_ir.serving.stages import StageModel, apply_stages

from .conftest import synthetic_model

MODEL = synthetic_model()
STAGES = StageModel()


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 30))
    chunked = draw(st.booleans())
    policy = draw(st.sampled_from(["continuous", "continuous", "static"]))
    max_batch_tokens = draw(st.sampled_from([256, 1024, 8192])) if chunked else 8192
    groups = draw(st.integers(0, 3))
    requests = []
    t = 0.0
    for i in range(n):
        t += draw(st.floats(0.0, 0.3))
        prompt = draw(st.integers(1, 3000))
        prefix = draw(st.integers(0, prompt)) if groups else 0
        stages = draw(st.lists(st.sampled_from([
            Stage("retrieval", 5), Stage("remote_kv", 600), Stage("reasoning", 50)]), max_size=2))
        requests.append(Request(i, t, prompt, draw(st.integers(1, 200)),
                                f"p{i % groups}" if groups and prefix else "", prefix, stages))
    config = SchedulerConfig(
        policy=policy,
        block_size=draw(st.sampled_from([4, 16])),
        max_batch_tokens=max_batch_tokens,
        max_num_seqs=draw(st.sampled_from([2, 8, 256])),
        chunked_prefill=chunked,
        preemption=draw(st.sampled_from(["recompute", "swap"])),
        speculative_k=draw(st.sampled_from([0, 0, 3])),
        acceptance_rate=draw(st.floats(0.0, 1.0)),
    )
    largest = max(r.input_tokens + r.output_tokens + 100 for r in requests)
    # small caches force preemption; never smaller than one request
    kv_blocks = -(-largest // config.block_size) + draw(st.integers(0, 200))
    if draw(st.booleans()) and policy == "continuous":
        deployment = Deployment(prefill_replicas=draw(st.integers(1, 2)),
                                decode_replicas=draw(st.integers(1, 2)))
    else:
        deployment = Deployment(replicas=draw(st.integers(1, 3)),
                                router=draw(st.sampled_from(["round-robin", "least-loaded"])))
    return requests, config, deployment, kv_blocks


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_scheduler_invariants(case):
    requests, config, deployment, kv_blocks = case
    result = run(requests, MODEL, config, deployment, kv_blocks, record_iterations=True,
                 hardware="H100-SXM5-80GB")

    # no request lost or served twice
    served = Counter(s.request.id for r in result.replicas for s in r.finished)
    assert set(served) == {r.id for r in requests}
    assert max(served.values()) == 1
    for seq in result.sequences:
        assert 0 <= seq.first_token_s <= seq.finish_s
        assert seq.generated >= seq.output - 1e-9

    # KV blocks in use never exceed capacity, and none leak
    for replica in result.replicas:
        assert replica.kv.peak <= replica.kv.capacity
        assert all(it.kv_blocks <= replica.kv.capacity for it in replica.records or [])
        assert all(used <= replica.kv.capacity for _, used in replica.kv_samples)
        cached = sum(e.blocks for e in replica.kv.prefixes.values())
        assert replica.kv.used == cached
        assert all(not e.uses for e in replica.kv.prefixes.values())

    # TTFT >= the request's stages plus its prefill alone, less what the prefix
    # cache or a slower KV tier saved it
    for seq in result.sequences:
        r = seq.request
        staged = apply_stages(r, STAGES, MODEL.kv_bytes_per_token_per_gpu)
        cached = r.prefix_tokens // config.block_size * config.block_size if r.prefix_id else 0
        saved = min(max(cached, staged.fetched_tokens), r.input_tokens - 1)
        alone = (staged.ready_s - r.arrival_s) + MODEL.prefill_time(r.input_tokens - saved)
        assert seq.first_token_s - r.arrival_s >= alone * (1 - 1e-9)


def test_preemption_happens_and_is_survived():
    """A cache barely larger than one request: many preemptions, nothing lost."""
    requests = [Request(i, 0.0, 500, 300) for i in range(12)]
    for mode in ("recompute", "swap"):
        config = SchedulerConfig(block_size=16, preemption=mode)
        result = run(requests, MODEL, config, Deployment(), kv_blocks=120)
        assert sum(r.preemptions for r in result.replicas) > 0
        assert len(result.replicas[0].finished) == 12


def test_deterministic():
    requests = [Request(i, i * 0.01, 100 + 37 * i % 900, 50 + i % 70) for i in range(50)]
    a = run(requests, MODEL, SchedulerConfig(), Deployment(replicas=2, router="least-loaded"), 2000)
    b = run(requests, MODEL, SchedulerConfig(), Deployment(replicas=2, router="least-loaded"), 2000)
    assert [s.finish_s for s in a.sequences] == [s.finish_s for s in b.sequences]


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_where_sequences_live_in_memory_changes_nothing(monkeypatch, mode):
    """The decode heaps ordered the sequences due at one iteration by id(), their
    memory addresses: under swap preemption one `charon serve` could differ from
    the next. With id() reversed every request is served as before."""
    requests = [Request(i, 0.0, 500, 300) for i in range(12)]  # simultaneous: their decodes tie
    config = SchedulerConfig(block_size=16, preemption=mode)

    def served() -> list[tuple[int, float, int]]:
        result = run(requests, MODEL, config, Deployment(), kv_blocks=120)
        return sorted((s.request.id, s.finish_s, s.preemptions) for s in result.sequences)

    plain = served()
    monkeypatch.setattr(scheduler, "id", lambda obj: -builtins.id(obj), raising=False)
    assert served() == plain


def test_a_preempted_sequence_does_not_take_its_blocks_straight_back():
    """Without chunked prefill, recompute preemption under KV pressure: a victim
    readmitted in a prefill-only iteration took back the blocks decode growth had
    just freed, to be preempted by the next iteration (a loop of ~460 preemptions
    per request). The admission watermark leaves headroom beside running ones."""
    requests = [Request(i, i * 0.25, 4096, 512) for i in range(40)]
    for chunked in (True, False):
        config = SchedulerConfig(block_size=16, preemption="recompute", chunked_prefill=chunked)
        # 800 blocks hold three such requests: 4,066 preemptions without chunking
        result = run(requests, MODEL, config, Deployment(), kv_blocks=800)
        preemptions = sum(r.preemptions for r in result.replicas)
        assert 0 < preemptions < len(requests), (chunked, preemptions)
        assert len(result.replicas[0].finished) == len(requests)
