"""PyTorch's CUDA caching allocator, replayed: the bytes it reserves for a
sequence of allocations and frees.

    allocator = CachingAllocator()
    a = allocator.malloc(3 << 20, stream=0)
    allocator.free(a)
    allocator.peak_reserved        # 20 MiB: one segment of the large pool

    replay(events) -> AllocatorStats   (events: ALLOC / FREE tuples, program order)

What `torch.cuda.memory_stats()['reserved_bytes.all.peak']` counts is the
segments the allocator took from cudaMalloc, most at once; the program's tensors
(`allocated_bytes`) hold part of them, the rest is cached free blocks no request
could use. The rules are those of `DeviceCachingAllocator` in
c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, read at commit 001074d2;
docs/calibration.md names each function), with its default configuration
(no `max_split_size_mb`, no `roundup_power2_divisions`, no garbage-collection
threshold, `expandable_segments` off):

- a request is rounded up to a multiple of 512 B (`round_size`);
- it goes to the small pool when it is at most 1 MiB, else the large pool
  (`get_pool`); a pool's free blocks are searched per stream: a block freed by
  one stream is never handed to another (`BlockComparatorSize` orders by stream,
  then size, then address, and `get_free_block` takes the first block of the
  request's stream at least as large: best fit, the lowest address on a tie);
- with no such block, a new segment: 2 MiB for the small pool, 20 MiB for a
  large request under 10 MiB, else the request rounded up to 2 MiB
  (`get_allocation_size`);
- a block larger than the request is split when the remainder is at least
  512 B (small pool) or more than 1 MiB (large pool); the request takes the
  front (`should_split`, `alloc_found_block`); unsplit, the block is handed out
  whole and counts whole as allocated;
- a freed block merges with its free neighbours of the same segment
  (`free_block`, `try_merge_blocks`);
- segments are never returned, except when a new one would take the device past
  its capacity: then every cached segment with no allocated block is released
  and the allocation retried (`release_cached_blocks`); a request that still does
  not fit is recorded (`over_capacity`) and allocated anyway, where PyTorch
  raises its out-of-memory error.

Not modelled: `record_stream` (a block freed while another stream uses it is
cached only once that stream's work is done; FSDP2 frees across streams without
it), CUDA graphs' private pools, and the options above.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MIN_BLOCK = 512
"""`kMinBlockSize`: every request is rounded up to a multiple of it."""
SMALL_SIZE = 1 << 20
"""`kSmallSize`: the largest request of the small pool."""
SMALL_BUFFER = 2 << 20
"""`kSmallBuffer`: a small-pool segment."""
LARGE_BUFFER = 20 << 20
"""`kLargeBuffer`: a segment for a large request under MIN_LARGE_ALLOC."""
MIN_LARGE_ALLOC = 10 << 20
"""`kMinLargeAlloc`: from here a large request gets a segment of its own size."""
ROUND_LARGE = 2 << 20
"""`kRoundLarge`: a segment of its own size is rounded up to it."""

ALLOC: Literal["alloc"] = "alloc"
FREE: Literal["free"] = "free"

Event = tuple[str, int, int, int]
"""(ALLOC, key, bytes, stream) or (FREE, key, 0, 0): `key` names an allocation
until its free."""


def round_size(nbytes: int) -> int:
    """`round_size`: bytes rounded up to a multiple of 512, at least 512."""
    return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """`get_allocation_size`: the segment a rounded request that no cached block
    fits makes the allocator cudaMalloc."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


def is_small(size: int) -> bool:
    """`get_pool`: a rounded request of at most 1 MiB goes to the small pool."""
    return size <= SMALL_SIZE


def should_split(block_size: int, size: int, small: bool) -> bool:
    """`should_split`: whether a free block of `block_size` serving a request of
    `size` leaves its remainder as a free block of its own."""
    remaining = block_size - size
    return remaining >= MIN_BLOCK if small else remaining > SMALL_SIZE


class Block:
    """A range of one segment: allocated, or cached free in its pool."""

    __slots__ = ("addr", "size", "stream", "small", "allocated", "prev", "next")

    def __init__(self, addr: int, size: int, stream: int, small: bool) -> None:
        self.addr = addr
        self.size = size
        self.stream = stream
        self.small = small
        self.allocated = False
        self.prev: Block | None = None
        self.next: Block | None = None

    @property
    def whole_segment(self) -> bool:
        return self.prev is None and self.next is None


@dataclass(frozen=True)
class AllocatorStats:
    """What a replay ends with (bytes)."""

    peak_reserved: int
    """`reserved_bytes.all.peak`: most segment bytes held at once."""
    peak_allocated: int
    """`allocated_bytes.all.peak`: most bytes of blocks handed out at once (each
    block's rounded, possibly unsplit, size)."""
    reserved: int
    allocated: int
    segments: int
    """Segments held at the end."""
    released: int = 0
    """Segments released to make room under the capacity."""
    over_capacity: bool = False
    """A request found no room under the capacity even with the cache released
    (PyTorch: CUDA out of memory)."""


class CachingAllocator:
    """One device's caching allocator. `capacity`: the device's bytes, past which
    a new segment first releases the cached ones (None: never)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        # (small, stream) -> sorted (size, addr) of the free blocks; addr -> block
        self._free: dict[tuple[bool, int], list[tuple[int, int]]] = {}
        self._blocks: dict[int, Block] = {}
        self._next_addr = 0
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0
        self.segments = self.released = 0
        self.over_capacity = False

    # -- the pools --------------------------------------------------------

    def _pool(self, block: Block) -> list[tuple[int, int]]:
        return self._free.setdefault((block.small, block.stream), [])

    def _cache(self, block: Block) -> None:
        insort(self._pool(block), (block.size, block.addr))

    def _uncache(self, block: Block) -> None:
        pool = self._pool(block)
        del pool[bisect_left(pool, (block.size, block.addr))]

    # -- segments ---------------------------------------------------------

    def _new_segment(self, nbytes: int, stream: int, small: bool) -> Block:
        if self.capacity is not None and self.reserved + nbytes > self.capacity:
            self.release_cached()
            if self.reserved + nbytes > self.capacity:
                self.over_capacity = True
        block = Block(self._next_addr, nbytes, stream, small)
        self._next_addr += nbytes
        self._blocks[block.addr] = block
        self.reserved += nbytes
        self.segments += 1
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return block

    def release_cached(self) -> None:
        """`release_cached_blocks`: return every cached segment none of whose
        blocks is allocated (a free block that is a whole segment)."""
        for pool in self._free.values():
            keep = []
            for size, addr in pool:
                block = self._blocks[addr]
                if block.whole_segment:
                    del self._blocks[addr]
                    self.reserved -= size
                    self.segments -= 1
                    self.released += 1
                else:
                    keep.append((size, addr))
            pool[:] = keep

    # -- requests ---------------------------------------------------------

    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """The block a request of `nbytes` on `stream` gets."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        # best fit: the smallest cached block of the pool and stream at least
        # as large, the lowest address on a tie
        pool = self._free.get((small, stream))
        block = None
        if pool:
            i = bisect_left(pool, (size, -1))
            if i < len(pool):
                block = self._blocks[pool.pop(i)[1]]
        if block is None:
            block = self._new_segment(segment_size(size), stream, small)
        if should_split(block.size, size, small):
            rest = Block(block.addr + size, block.size - size, stream, small)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._blocks[rest.addr] = rest
            self._cache(rest)
        block.allocated = True
        self.allocated += block.size
        if self.allocated > self.peak_allocated:
            self.peak_allocated = self.allocated
        return block

    def free(self, block: Block) -> None:
        """Cache `block` in its pool, merged with its free neighbours."""
        if not block.allocated:
            raise ValueError(f"block at {block.addr} freed twice")
        block.allocated = False
        self.allocated -= block.size
        del self._blocks[block.addr]
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._uncache(neighbour)
                del self._blocks[neighbour.addr]
                if neighbour is block.prev:
                    block.addr, block.prev = neighbour.addr, neighbour.prev
                    if block.prev is not None:
                        block.prev.next = block
                else:
                    block.next = neighbour.next
                    if block.next is not None:
                        block.next.prev = block
                block.size += neighbour.size
        self._blocks[block.addr] = block
        self._cache(block)

    def stats(self) -> AllocatorStats:
        return AllocatorStats(self.peak_reserved, self.peak_allocated, self.reserved, self.allocated,
                              self.segments, self.released, self.over_capacity)


def replay(events: Iterable[Event], capacity: int | None = None,
           allocator: CachingAllocator | None = None) -> AllocatorStats:
    """Run `events` in order through `allocator` (a fresh one by default); a FREE
    of a key with no live ALLOC is a ValueError."""
    allocator = allocator or CachingAllocator(capacity)
    live: dict[int, Block] = {}
    for kind, key, nbytes, stream in events:
        if kind == ALLOC:
            if key in live:
                raise ValueError(f"allocation {key} made twice without a free")
            live[key] = allocator.malloc(nbytes, stream)
        else:
            block = live.pop(key, None)
            if block is None:
                raise ValueError(f"free of allocation {key}, which is not live")
            allocator.free(block)
    return allocator.stats()
