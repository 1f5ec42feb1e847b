"""The caching allocator's rules (`charon_ir.memory.allocator`): rounding, pools,
segment sizes, best fit, splitting and merging, per-stream pools, the release
under a capacity; and its invariants over random sequences."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.memory.allocator import (
    ALLOC,
    FREE,
    LARGE_BUFFER,
    SMALL_BUFFER,
    CachingAllocator,
    Event,
    replay,
    round_size,
    segment_size,
    should_split,
)

MiB = 1 << 20


@pytest.mark.parametrize(("request_bytes", "rounded"), [
    (1, 512), (512, 512), (513, 1024), (1000, 1024), (MiB + 1, MiB + 512),
])
def test_requests_round_up_to_512_bytes(request_bytes: int, rounded: int):
    assert round_size(request_bytes) == rounded
    allocator = CachingAllocator()
    assert allocator.malloc(request_bytes).size == rounded
    assert allocator.allocated == rounded


@pytest.mark.parametrize(("request_bytes", "segment"), [
    (512, SMALL_BUFFER), (MiB, SMALL_BUFFER),  # the small pool: 2 MiB segments
    (MiB + 512, LARGE_BUFFER), (10 * MiB - 512, LARGE_BUFFER),  # 1 to 10 MiB: 20 MiB
    (10 * MiB, 10 * MiB), (10 * MiB + 1, 12 * MiB), (33 * MiB, 34 * MiB),  # own size, to 2 MiB
])
def test_segment_sizes(request_bytes: int, segment: int):
    assert segment_size(round_size(request_bytes)) == segment
    allocator = CachingAllocator()
    allocator.malloc(request_bytes)
    assert allocator.reserved == segment and allocator.segments == 1


def test_small_and_large_requests_use_separate_pools():
    """A freed 20 MiB large segment does not serve a small request: that takes a
    2 MiB segment of its own."""
    allocator = CachingAllocator()
    allocator.free(allocator.malloc(2 * MiB))
    allocator.malloc(4096)
    assert allocator.reserved == LARGE_BUFFER + SMALL_BUFFER and allocator.segments == 2


def test_split_thresholds():
    assert should_split(SMALL_BUFFER, SMALL_BUFFER - 512, small=True)
    assert not should_split(SMALL_BUFFER, SMALL_BUFFER - 511, small=True)
    assert should_split(LARGE_BUFFER, LARGE_BUFFER - MiB - 512, small=False)
    assert not should_split(LARGE_BUFFER, LARGE_BUFFER - MiB, small=False)  # remainder must be > 1 MiB


def test_an_unsplit_block_is_allocated_whole():
    """A 19.5 MiB request in a cached 20 MiB block leaves 0.5 MiB, too little to
    split off in the large pool: the whole block counts as allocated."""
    allocator = CachingAllocator()
    allocator.free(allocator.malloc(4 * MiB))
    block = allocator.malloc(LARGE_BUFFER - MiB // 2)
    assert block.size == LARGE_BUFFER and allocator.allocated == LARGE_BUFFER
    assert allocator.segments == 1


def test_split_blocks_coalesce_on_free():
    """Three requests carve one 20 MiB segment; freed in any order they merge
    back into one free block that serves a request of the whole segment."""
    allocator = CachingAllocator()
    a, b, c = (allocator.malloc(3 * MiB) for _ in range(3))
    assert allocator.segments == 1 and (a.addr, b.addr, c.addr) == (0, 3 * MiB, 6 * MiB)
    for block in (b, a, c):
        allocator.free(block)
    whole = allocator.malloc(LARGE_BUFFER)
    assert whole.addr == 0 and allocator.segments == 1 and allocator.reserved == LARGE_BUFFER


def test_a_free_block_between_allocated_ones_does_not_merge():
    allocator = CachingAllocator()
    a, b, c = (allocator.malloc(3 * MiB) for _ in range(3))
    allocator.free(b)
    # 6 MiB do not fit the 3 MiB hole: they come from the segment's free tail
    d = allocator.malloc(6 * MiB)
    assert d.addr == 9 * MiB and allocator.segments == 1
    del a, c


def test_best_fit_takes_the_smallest_free_block_that_fits():
    """Of cached blocks of 40, 24 and 30 MiB, a 23 MiB request takes the 24 MiB
    one (whose remainder of 1 MiB is not split off)."""
    allocator = CachingAllocator()
    blocks = [allocator.malloc(n * MiB) for n in (40, 24, 30)]
    for block in blocks:
        allocator.free(block)
    chosen = allocator.malloc(23 * MiB)
    assert chosen.addr == blocks[1].addr and chosen.size == 24 * MiB
    assert allocator.segments == 3


def test_best_fit_breaks_a_tie_by_the_lowest_address():
    allocator = CachingAllocator()
    blocks = [allocator.malloc(12 * MiB) for _ in range(2)]
    for block in reversed(blocks):
        allocator.free(block)
    assert allocator.malloc(12 * MiB).addr == blocks[0].addr


def test_blocks_are_cached_per_stream():
    """A block freed by stream 1 is not handed to stream 0, which gets a new
    segment; stream 1 reuses its own."""
    allocator = CachingAllocator()
    allocator.free(allocator.malloc(64 * MiB, stream=1))
    allocator.malloc(64 * MiB, stream=0)
    assert allocator.segments == 2 and allocator.reserved == 128 * MiB
    allocator.malloc(64 * MiB, stream=1)
    assert allocator.segments == 2


def test_a_segment_past_the_capacity_releases_the_cached_ones_first():
    """With 100 MiB of device, a cached 64 MiB segment is released (not one of
    which a block is allocated) so that a 60 MiB request fits."""
    allocator = CachingAllocator(capacity=100 * MiB)
    keep = allocator.malloc(4 * MiB)  # a 20 MiB segment, partly allocated
    allocator.free(allocator.malloc(64 * MiB))
    allocator.malloc(70 * MiB)
    assert allocator.released == 1 and not allocator.over_capacity
    assert allocator.reserved == allocator.peak_reserved == LARGE_BUFFER + 70 * MiB
    allocator.malloc(64 * MiB)  # no cached segment left to release: PyTorch would raise OOM
    assert allocator.over_capacity
    del keep


def test_replay_refuses_a_free_of_what_is_not_live():
    with pytest.raises(ValueError, match="free of allocation 7, which is not live"):
        replay([(ALLOC, 1, 100, 0), (FREE, 7, 0, 0)])
    with pytest.raises(ValueError, match="allocation 1 made twice"):
        replay([(ALLOC, 1, 100, 0), (ALLOC, 1, 100, 0)])


# -- invariants over random sequences -------------------------------------

SIZES = st.one_of(st.integers(1, 4096), st.integers(4096, 2 * MiB), st.integers(2 * MiB, 64 * MiB))


@st.composite
def sequences(draw) -> list[Event]:
    """Allocations of random sizes on two streams, freed in a random order."""
    events: list[Event] = []
    live: list[int] = []
    for key in range(draw(st.integers(1, 60))):
        events.append((ALLOC, key, draw(SIZES), draw(st.integers(0, 1))))
        live.append(key)
        while live and draw(st.booleans()):
            events.append((FREE, live.pop(draw(st.integers(0, len(live) - 1))), 0, 0))
    return events


@settings(max_examples=200, deadline=None)
@given(sequences())
def test_reserved_covers_allocated_at_every_point_and_stays_within_the_segments_asked(events: list[Event]):
    """Reserved >= allocated after every event; and reserved never exceeds what
    the segments of the rounded requests would be were none reused (each
    request a segment of its own), since segments are only made for requests
    no cached block fits."""
    allocator = CachingAllocator()
    live, requested = {}, {}
    own_segments = 0
    for kind, key, nbytes, stream in events:
        if kind == ALLOC:
            live[key], requested[key] = allocator.malloc(nbytes, stream), nbytes
            own_segments += segment_size(round_size(nbytes))
        else:
            allocator.free(live.pop(key))
        assert all(block.size >= round_size(requested[k]) for k, block in live.items())
        assert allocator.reserved >= allocator.allocated == sum(b.size for b in live.values())
        assert allocator.reserved <= own_segments
    assert allocator.peak_reserved >= allocator.peak_allocated


@settings(max_examples=100, deadline=None)
@given(sequences())
def test_a_replay_is_deterministic(events: list[Event]):
    assert replay(events) == replay(list(events))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200 * MiB), st.integers(1, 50), st.integers(0, 3))
def test_equal_alloc_free_pairs_reserve_one_segment(nbytes: int, pairs: int, stream: int):
    events: list[Event] = []
    for key in range(pairs):
        events += [(ALLOC, key, nbytes, stream), (FREE, key, 0, 0)]
    stats = replay(events)
    assert stats.segments == 1 and stats.peak_reserved == segment_size(round_size(nbytes))
    assert stats.allocated == 0 and stats.reserved == stats.peak_reserved


@settings(max_examples=200, deadline=None)
@given(sequences())
def test_reserved_is_the_live_blocks_plus_the_cached_ones(events: list[Event]):
    """Every reserved byte is in an allocated block or a cached free block: the
    segments are exactly tiled."""
    allocator = CachingAllocator()
    live = {}
    for kind, key, nbytes, stream in events:
        if kind == ALLOC:
            live[key] = allocator.malloc(nbytes, stream)
        else:
            allocator.free(live.pop(key))
    cached = sum(size for pool in allocator._free.values() for size, _ in pool)
    assert allocator.allocated == sum(b.size for b in live.values())
    assert allocator.reserved == allocator.allocated + cached
