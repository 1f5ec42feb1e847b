"""The latency table priced through the pipeline obeys the bounds physics sets
(llama-3.1-70b, TP8 on H100; the table is cached on disk after its first build)."""

from __future__ import annotations

import pytest

from charon_ir.errors import CharonError
from charon_ir.serving.latency import ReplicaShape, step_model
from charon_ir.target.hardware import load_gpu

SHAPE = ReplicaShape("llama-3.1-70b", "H100-SXM5-80GB", tp=8)
PARAMS = 70_553_706_496


@pytest.fixture(scope="module")
def table():
    return step_model(SHAPE)


def test_weights_and_kv_per_gpu(table):
    assert table.weight_bytes_per_gpu == pytest.approx(2 * PARAMS / 8, rel=0.01)
    # 80 layers x (k, v) x one of 8 kv heads per GPU x 128 x 2 bytes
    assert table.kv_bytes_per_token_per_gpu == 80 * 2 * 1 * 128 * 2


def test_body_grows_with_tokens(table):
    ys = [table.body(t) for t in (1, 16, 256, 1024, 4096, 16384)]
    assert all(a <= b for a, b in zip(ys, ys[1:]))


def test_roofline_lower_bounds(table):
    gpu = load_gpu("H100")
    # a decode step reads every weight at least once
    assert table.iteration_time(1, 1, 1024) >= table.weight_bytes_per_gpu / gpu.hbm_bandwidth
    # a prefill does 2 x params FLOPs per token, split over 8 GPUs
    tokens = 4096
    assert table.prefill_time(tokens) >= 2 * PARAMS * tokens / 8 / gpu.peak("bf16")


def test_decode_attention_grows_with_context(table):
    assert table.iteration_time(64, 64, 64 * 8192) > table.iteration_time(64, 64, 64 * 512)


def test_per_head_kernel_reads_kv_once_per_query_head(table):
    per_head = step_model(ReplicaShape(**{**SHAPE.__dict__, "attention_kernel": "per-head"}))
    assert per_head.decode_attention_reads == 8  # 64 query heads over 8 kv heads
    assert per_head.body == table.body


@pytest.mark.parametrize("prompts, length", [(1, 16384), (64, 128), (4, 1000)])
def test_prefill_attention_by_tiles_matches_the_priced_step(table, prompts, length):
    """The curve is read off single prompts up to 4,096 tokens: by tiles it holds
    past the largest sample (attention grows with the square; read at the
    equivalent length it grew linearly, 3x short at 16k) and for batches of
    short prompts (their diagonal tiles and per-block overhead)."""
    from charon_ir.serving.latency import _sample, _split_step

    priced = _split_step(_sample(SHAPE, "prefill", length, prompts))[2]
    by_tiles = table.prefill_attention(prompts * table.chunk_tiles(length, 0))
    assert by_tiles == pytest.approx(priced, rel=0.25)


def test_a_chunk_after_cached_tokens_costs_its_tiles(table):
    # 128-token blocks: the first half of a 2,048-token prompt computes 8 x 9 / 2
    # tiles, the second half 8 x 8 more beside its own 36; each has 8 query blocks
    overhead = 8 * table.attention_block_overhead
    first, second = table.chunk_tiles(1024, 0), table.chunk_tiles(1024, 1024)
    assert (first, second) == pytest.approx((36 + overhead, 100 + overhead))
    assert first + second == pytest.approx(table.chunk_tiles(2048, 0))


@pytest.mark.parametrize(
    "shape, fragment",
    [
        (ReplicaShape("llama-3.1-70b", "H100", tp=3), "does not divide the 64 attention heads"),
        (ReplicaShape("llama-3.1-70b", "H100", tp=8, ep=2), "dense model"),
        (ReplicaShape("llama-3.1-70b", "H100", tp=8, precision="int3"), "--precision"),
        (ReplicaShape("llama-3.1-70b", "H100", tp=8, attention_kernel="magic"), "--attention-kernel"),
        (ReplicaShape("llama-3.1-405b", "H100", tp=1), "does not fit"),
    ],
)
def test_bad_shapes(shape, fragment):
    with pytest.raises(CharonError, match=fragment):
        step_model(shape)
