"""Context parallelism per request (`charon serve --cp-policy`): policies, the
prefill priced through shard-context, the pool's schedule (properties on a
synthetic step model), the Charon paper's two-request example, bad input."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.serving import context_parallel as cp
from charon_ir.serving import serve
from charon_ir.serving.latency import Curve, ReplicaShape
from charon_ir.serving.requests import Request, long_context

from .conftest import synthetic_model
from .test_serve_cli import assert_one_line_error, charon

TINY = "examples/llama_tiny_config.json"


# --- policies ------------------------------------------------------------------------


def test_fixed_policy():
    policy = cp.CPPolicy.parse("fixed:4")
    assert policy.degrees == (4,) and policy.largest == 4
    assert policy.degree_for(10) == policy.degree_for(10**6) == 4


def test_by_length_doubles_at_each_threshold():
    policy = cp.CPPolicy.parse("by-length:32768,131072")
    assert policy.largest == 4
    assert [policy.degree_for(n) for n in (1000, 32767, 32768, 131071, 131072)] == [1, 1, 2, 2, 4]


def test_by_length_with_degrees():
    policy = cp.CPPolicy.parse("by-length:0=2,65536=4")
    assert [policy.degree_for(n) for n in (1, 65535, 65536)] == [2, 2, 4]
    assert policy.all_degrees() == (2, 4)


def test_adaptive_takes_the_divisors_of_its_largest_degree():
    assert cp.CPPolicy.parse("adaptive:6").degrees == (1, 2, 3, 6)
    assert cp.CPPolicy.parse("adaptive").largest == cp.DEFAULT_ADAPTIVE_DEGREE


@pytest.mark.parametrize(("text", "ranks", "fragment"), [
    ("fixed:0", 0, "the degree must be an integer in 1..64, got '0'"),
    ("fixed:x", 0, "got 'x'"),
    ("fixed:", 0, "got ''"),
    ("sp:4", 0, "expected fixed:D"),
    ("by-length:", 0, "expected fixed:D"),
    ("by-length:65536=4,1024=2", 0, "the lengths must increase"),
    ("fixed:8", 4, "cp degree 8 exceeds the replica's 4 cp ranks"),
    ("by-length:0=2,65536=8", 6, "cp degree 8 exceeds the replica's 6 cp ranks"),
])
def test_bad_policies(text, ranks, fragment):
    with pytest.raises(CharonError, match="^--cp-policy") as e:
        cp.CPPolicy.parse(text, ranks)
    assert fragment in str(e.value) and "\n" not in str(e.value)


# --- the prefill priced through the training passes ----------------------------------


@pytest.fixture(scope="module")
def tiny_shape() -> ReplicaShape:
    return ReplicaShape(TINY, "H100-SXM5-80GB")


def test_zigzag_ring_splits_the_causal_work_evenly():
    """shard-context's load balancing: each of 4 ranks computes a quarter of the
    causal attention (an 8K prompt of llama-3.1-8b; the tiny model's kernels are
    all launch floor) and of the token-local work."""
    shape = ReplicaShape("llama-3.1-8b", "H100-SXM5-80GB")
    local1, attention1, comm1 = cp._price_prefill(shape, 1, "ring", 8192)
    local4, attention4, comm4 = cp._price_prefill(shape, 4, "ring", 8192)
    assert comm1 == 0.0 and comm4 > 0.0
    assert attention4 == pytest.approx(attention1 / 4, rel=0.15)
    assert local4 < local1 / 2


def test_fp8_prefill_runs_its_gemms_in_fp8():
    """--precision fp8 reaches the cp prefill's pricing as the step model's: the
    token-local work (GEMMs) is cheaper, attention and the ring are the same."""
    bf16 = cp._price_prefill(ReplicaShape("llama-3.1-8b", "H100-SXM5-80GB"), 2, "ring", 8192)
    fp8 = cp._price_prefill(ReplicaShape("llama-3.1-8b", "H100-SXM5-80GB", precision="fp8"), 2, "ring", 8192)
    assert fp8[0] < 0.8 * bf16[0]
    assert fp8[1:] == pytest.approx(bf16[1:])


def test_ulysses_pays_its_all_to_alls_on_the_critical_path(tiny_shape):
    ring = cp.prefill_table(tiny_shape, 2, "ring", 4096, 0.0, use_cache=False)
    ulysses = cp.prefill_table(tiny_shape, 2, "ulysses", 4096, 0.0, use_cache=False)
    n = 4096
    assert ulysses.time_s(n) == pytest.approx(
        ulysses.local(n) + ulysses.attention(n * n) + ulysses.comm(n))
    assert ring.time_s(n) == pytest.approx(ring.local(n) + max(ring.attention(n * n), ring.comm(n)))


def test_a_degree_that_is_no_power_of_two_is_priced(tiny_shape):
    """The samples are rounded up to whole zigzag chunks (2 x 3 of them)."""
    table = cp.prefill_table(tiny_shape, 3, "ring", 4096, 0.0, use_cache=False)
    assert all(n % 6 == 0 for n in table.local.xs)
    assert table.time_s(4000) > 0


def test_prefill_table_round_trips_through_json(tiny_shape):
    table = cp.prefill_table(tiny_shape, 2, "ring", 4096, 1e-9, use_cache=False)
    again = cp.PrefillTable.from_json(json.loads(json.dumps(table.to_json())))
    assert again == table
    assert table.time_s(4096) > table.time_s(1024) > 0


# --- the pool's schedule on a synthetic model --------------------------------------


def synthetic_tables(degrees) -> dict[int, cp.PrefillTable]:
    """Attention 1 s at 64K tokens on one rank, split over d; 10 % ring overhead."""
    return {
        d: cp.PrefillTable(d, "ring", Curve((1.0, 65536.0), (1e-3 / d, 0.5 / d)),
                           Curve((1.0, 65536.0**2), (0.0, 1.0 / d)),
                           Curve((1.0, 65536.0), (0.0, 0.1 / d if d > 1 else 0.0)))
        for d in degrees
    }


class FakeComms(cp.GroupComms):
    def combine_s(self, degree, sequences):
        return 0.0 if degree <= 1 else 1e-5 * degree

    def gather_bandwidth(self, degree):
        return 100e9


def run_pool(text: str, ranks: int, requests: list[Request], capacity: int = 2_000_000,
             layout: str = "distributed") -> cp.ContextParallelPool:
    policy = cp.CPPolicy.parse(text, ranks)
    comms = FakeComms("H100-SXM5-80GB", 1, ranks, 0.0, 1)
    pool = cp.ContextParallelPool(policy, ranks, synthetic_model(), synthetic_tables(policy.all_degrees()),
                                  comms, layout, capacity)
    pool.check_fits(requests)
    pool.run(requests)
    return pool


requests_strategy = st.lists(
    st.tuples(st.floats(0, 20), st.integers(1, 200_000), st.integers(1, 300)), min_size=1, max_size=25,
).map(lambda rows: [Request(i, a, n, o) for i, (a, n, o) in enumerate(sorted(rows))])


@settings(max_examples=60, deadline=None)
@given(requests_strategy, st.sampled_from(["fixed:4", "fixed:1", "by-length:8192,65536", "adaptive:4"]),
       st.sampled_from(["distributed", "gather"]), st.sampled_from([4, 6]))
def test_schedule_invariants(requests, text, layout, ranks):
    pool = run_pool(text, ranks, requests, layout=layout)
    assert len(pool.finished) == len(requests) and not pool.queue
    by_rank: dict[int, list[tuple[float, float]]] = {}
    gpu_s = 0.0
    for seq in pool.finished:
        r = seq.request
        assert seq.degree in pool.policy.all_degrees() and len(seq.ranks) == seq.degree
        length = pool._prefill_s(seq, seq.degree)
        gpu_s += length * seq.degree
        assert seq.prefill_start_s >= r.arrival_s - 1e-9
        assert seq.first_token_s == pytest.approx(seq.prefill_start_s + length)
        assert seq.finish_s >= seq.first_token_s
        if r.output_tokens > 1:  # at least one iteration per token after the first
            assert seq.finish_s - seq.first_token_s >= (r.output_tokens - 1) * 4.0e-3 * (1 - 1e-9)
        for i in seq.ranks:
            by_rank.setdefault(i, []).append((seq.prefill_start_s, seq.first_token_s))
    for intervals in by_rank.values():  # a rank prefills one group at a time
        intervals.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(intervals, intervals[1:]))
    assert pool.prefill_gpu_s == pytest.approx(gpu_s)
    for rank in pool.ranks:  # every share released, never above capacity
        assert rank.kv_used == 0 and rank.peak_kv <= rank.capacity
        assert rank.guests == 0 and not rank.leaders and rank.lead_base == pytest.approx(0.0, abs=1e-6)


def test_a_free_rank_backfills_behind_a_waiting_group():
    """Three ranks, two 64K prompts and a short one at t=0. fixed:2: the first
    takes ranks 0-1, the second waits for a pair, and so does the short one
    (every pair holds rank 1). by-length gives the short one a single rank: it
    backfills rank 2 at once, which the waiting pair does not need."""
    reqs = [Request(0, 0.0, 65536, 2), Request(1, 0.0, 65536, 2), Request(2, 0.0, 1000, 2)]
    fixed = {s.request.id: s for s in run_pool("fixed:2", 3, reqs).finished}
    dynamic = {s.request.id: s for s in run_pool("by-length:0=1,8192=2", 3, reqs).finished}
    assert fixed[2].prefill_start_s >= fixed[0].first_token_s - 1e-9
    assert dynamic[2].degree == 1 and dynamic[2].prefill_start_s == 0.0


@settings(max_examples=30, deadline=None)
@given(requests_strategy, st.sampled_from(["adaptive:4", "by-length:8192,65536", "fixed:4"]))
def test_every_request_finishes_when_the_cache_is_tight(requests, text):
    """Shares of a 200K prompt need 4 ranks of 60K tokens: groups wait for room,
    and the adaptive policy never narrows a request below the degree that fits."""
    pool = run_pool(text, 4, requests, capacity=60_000)
    assert len(pool.finished) == len(requests)
    assert all(r.peak_kv <= r.capacity and r.kv_used == 0 for r in pool.ranks)


def test_a_request_too_large_for_a_rank_is_refused():
    reqs = [Request(7, 0.0, 900_000, 10)]
    with pytest.raises(CharonError, match=r"request 7: 900000 prompt \+ 10 output tokens need 450,010 KV tokens"):
        run_pool("fixed:2", 2, reqs, capacity=400_000)
    run_pool("fixed:4", 4, reqs, capacity=400_000)  # a larger degree splits it enough


def test_long_context_generator_is_seeded_and_log_uniform():
    a, b = long_context(2000, 0.5, seed=3), long_context(2000, 0.5, seed=3)
    assert [(r.arrival_s, r.input_tokens) for r in a] == [(r.arrival_s, r.input_tokens) for r in b]
    lengths = [r.input_tokens for r in a]
    assert min(lengths) >= 4096 and max(lengths) <= 1048576
    below_64k = sum(n < 65536 for n in lengths) / len(lengths)
    assert below_64k == pytest.approx(math.log(16) / math.log(256), abs=0.04)
    with pytest.raises(CharonError):
        long_context(10, 0.0)


# --- the Charon paper's two-request example ------------------------------------------


TWO_REQUESTS = [
    {"arrival_s": 0.0, "input_tokens": 120000, "output_tokens": 256},
    {"arrival_s": 0.0, "input_tokens": 8000, "output_tokens": 256},
]


def test_dynamic_sp_cuts_the_latency_of_two_requests(tmp_path):
    """Six ranks (llama-3.1-8b, one H100 each): SP4 for every request leaves two
    ranks idle and serialises the requests; SP4 for the long one and SP2 for the
    short one runs both at once."""
    trace = tmp_path / "two.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in TWO_REQUESTS))
    report = serve("llama-3.1-8b", trace=str(trace), cp_ranks=6,
                   cp_policy=("fixed:4", "by-length:0=2,65536=4", "adaptive:4"))
    fixed, dynamic, adaptive = report["context_parallel"]
    assert fixed["degrees"] == {"4": 2} and dynamic["degrees"] == {"2": 1, "4": 1}
    assert adaptive["degrees"] == {"2": 1, "4": 1}
    assert dynamic["ttft_s"]["mean"] < 0.6 * fixed["ttft_s"]["mean"]
    assert dynamic["e2e_s"]["mean"] < fixed["e2e_s"]["mean"]
    # the long request is not delayed: it runs at SP4 from t=0 either way
    assert dynamic["ttft_s"]["p99"] <= fixed["ttft_s"]["p99"]
    assert dynamic["gpu_seconds"]["prefill"] <= fixed["gpu_seconds"]["prefill"] * 1.01
    assert report["ttft_s"] == fixed["ttft_s"] and report["config"]["cp_ranks"] == 6
    for key in ("energy_j", "tokens_per_joule"):
        assert key in report


# --- bad input on the command line ------------------------------------------------------


def test_the_summary_has_a_row_per_policy():
    proc = charon("--model", "llama-3.1-8b", "--trace", "examples/long_context/two_requests.jsonl",
                  "--cp-ranks", "6", "--cp-policy", "fixed:4", "--cp-policy", "by-length:0=2,65536=4")
    assert proc.returncode == 0, proc.stderr
    assert "SP4 x2" in proc.stdout and "SP2 x1" in proc.stdout and "by-len" in proc.stdout


@pytest.mark.parametrize(("args", "fragment"), [
    (("--cp-policy", "fixed:8", "--cp-ranks", "4"), "cp degree 8 exceeds the replica's 4 cp ranks"),
    (("--cp-policy", "fixed:2", "--cp-mode", "zigzag"), "--cp-mode must be one of ring, ulysses"),
    (("--cp-policy", "fixed:2", "--cp-kv", "host"), "--cp-kv must be one of distributed, gather"),
    (("--cp-ranks", "4",), "give --cp-policy too"),
    (("--cp-policy", "fixed:2", "--replicas", "2"), "it does not take --replicas"),
    (("--cp-policy", "fixed:2", "--cp-ranks", "-1"), "--cp-ranks must be >= 0"),
    (("--cp-policy", "fixed:3", "--cp-mode", "ulysses"),
     "--cp-mode ulysses with cp degree 3: shard-context: option 'cp' (3) does not divide the attention heads (32)"),
])
def test_bad_cp_flags_are_one_line(args, fragment):
    proc = charon("--model", "llama-3.1-8b", "--batch", "2", "--input-len", "4096", *args)
    assert_one_line_error(proc, fragment)


def test_sequences_ending_together_finish_in_the_order_they_began_to_decode():
    """Eight equal requests on one rank all end on the same decode iteration of their
    leader; they leave in the order they began to decode, whatever their objects'
    addresses (the heap was keyed by id(), so a tie finished in address order)."""
    orders = set()
    for trial in range(6):
        ballast = [bytearray(64 * (trial + 1)) for _ in range(50 * trial)]  # other addresses
        pool = run_pool("fixed:1", 1, [Request(i, 0.0, 1000, 50) for i in range(8)])
        started = sorted(pool.finished, key=lambda s: (s.first_token_s, s.request.id))
        ties = [s for s in pool.finished if s.finish_s == pool.finished[-1].finish_s]
        assert len(ties) > 1
        assert [s.request.id for s in ties] == [s.request.id for s in started if s in ties]
        orders.add(tuple(s.request.id for s in pool.finished))
        del ballast
    assert len(orders) == 1
