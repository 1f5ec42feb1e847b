"""The paged KV cache of one replica: fixed-size blocks, a free count, and a
prefix cache whose blocks requests share.

Blocks are counted, not named: which physical block holds which token does not
change any time the simulator predicts. The invariant the property tests check
is `used <= capacity` at every step.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

from charon_ir.errors import CharonError
from charon_ir.target.cluster import KV_TIER_NAMES, KVTier


def parse_kv_tiers(texts: tuple[str, ...]) -> tuple[KVTier, ...]:
    """`--kv-tier NAME:CAPACITY_GIB:BANDWIDTH_GBS[:LATENCY_US]`, repeatable, in
    the order blocks move down (HBM, then the first given, ...); per GPU."""
    tiers: list[KVTier] = []
    for text in texts:
        shown = text if len(text) <= 60 else f"{text[:57]}..."
        parts = text.split(":")
        usage = (f"--kv-tier '{shown}': expected NAME:CAPACITY_GIB:BANDWIDTH_GBS[:LATENCY_US] with NAME "
                 f"one of {', '.join(KV_TIER_NAMES)}")
        if len(parts) not in (3, 4) or parts[0] not in KV_TIER_NAMES:
            raise CharonError(usage)
        try:
            numbers = [float(p) for p in parts[1:]]
        except ValueError:
            raise CharonError(usage) from None
        capacity, bandwidth = numbers[0], numbers[1]
        latency = numbers[2] if len(numbers) > 2 else 0.0
        if not 0 < capacity < math.inf:
            raise CharonError(f"--kv-tier '{shown}': a tier needs a capacity > 0 GiB, got {parts[1]}")
        if not 0 < bandwidth < math.inf or not 0 <= latency < math.inf:
            raise CharonError(f"--kv-tier '{shown}': the bandwidth must be > 0 GB/s and the latency >= 0 us")
        if any(t.name == parts[0] for t in tiers):
            raise CharonError(f"--kv-tier '{shown}': {parts[0]} given twice")
        tiers.append(KVTier(parts[0], capacity * 2**30, bandwidth * 1e9, latency / 1e6))
    return tuple(tiers)


def merge_kv_tiers(declared: tuple[KVTier, ...], flags: tuple[KVTier, ...]) -> tuple[KVTier, ...]:
    """The cluster file's tiers (`kv_tier` blocks, in its order), each replaced
    by a `--kv-tier` of the same name; a flag's new tier goes below them."""
    given = {t.name: t for t in flags}
    merged = [given.pop(t.name, t) for t in declared]
    return tuple(merged + [t for t in flags if t.name in given])


@dataclass
class TierLevel:
    """One tier's share of a replica's prefix cache: blocks by prefix, LRU first."""

    tier: KVTier
    capacity: int
    used: int = 0
    peak: int = 0
    prefixes: OrderedDict[str, int] = field(default_factory=OrderedDict)
    hit_blocks: int = 0
    fetch_s: float = 0.0


@dataclass
class PrefixEntry:
    """A cached prefix: its blocks, and how many of them each request reading
    it uses. Blocks past the longest use can be evicted (from the tail, as
    vLLM's per-block LRU would)."""

    blocks: int
    uses: list[int] = field(default_factory=list)

    @property
    def pinned(self) -> int:
        return max(self.uses, default=0)


@dataclass
class BlockManager:
    capacity: int
    block_size: int
    used: int = 0
    peak: int = 0
    prefixes: OrderedDict[str, PrefixEntry] = field(default_factory=OrderedDict)
    """Cached prompt prefixes, least recently used first."""
    tiers: list[TierLevel] = field(default_factory=list)
    """Levels below HBM (--kv-tier): evicted prefix blocks move down, LRU at each;
    past the last they are dropped."""
    block_bytes: float = 0.0
    """KV bytes of one block on one GPU (what a tier stores and moves)."""

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise CharonError("the KV cache has no block: the model leaves no memory for it")

    def blocks_for(self, tokens: float) -> int:
        return -int(-tokens // self.block_size)

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def evictable(self) -> int:
        return sum(e.blocks - e.pinned for e in self.prefixes.values())

    def can_allocate(self, blocks: int) -> bool:
        return blocks <= self.free + self.evictable()

    def allocate(self, blocks: int) -> bool:
        """Take `blocks`, evicting unused cached prefix blocks if needed; False
        (and nothing taken) when they cannot be had."""
        if blocks <= 0:
            return True
        if blocks > self.free:
            if not self.can_allocate(blocks):
                return False
            for key in list(self.prefixes):
                entry = self.prefixes[key]
                evict = min(entry.blocks - entry.pinned, blocks - self.free)
                entry.blocks -= evict
                self.used -= evict
                if entry.blocks == 0:
                    del self.prefixes[key]
                if self.tiers and evict:
                    self._spill(key, evict, 0)
                if blocks <= self.free:
                    break
        self.used += blocks
        self.peak = max(self.peak, self.used)
        assert self.used <= self.capacity
        return True

    def _spill(self, key: str, blocks: int, level: int) -> None:
        """`blocks` of prefix `key` into tier `level`, pushing its least recently
        used blocks one level down when it is full."""
        if level >= len(self.tiers):
            return
        tier = self.tiers[level]
        tier.prefixes[key] = tier.prefixes.get(key, 0) + blocks
        tier.prefixes.move_to_end(key)
        tier.used += blocks
        while tier.used > tier.capacity:
            oldest = next(iter(tier.prefixes))
            move = min(tier.prefixes[oldest], tier.used - tier.capacity)
            tier.prefixes[oldest] -= move
            tier.used -= move
            if tier.prefixes[oldest] == 0:
                del tier.prefixes[oldest]
            self._spill(oldest, move, level + 1)
        tier.peak = max(tier.peak, tier.used)

    def fetch_prefix(self, prefix_id: str, want_blocks: int, recompute_s=None) -> float:
        """Bring blocks of `prefix_id` beyond those in HBM back from the tiers,
        nearest first, up to `want_blocks` in HBM and as HBM has room; the
        seconds the copies take (each tier's latency and blocks over its
        bandwidth). `recompute_s(tokens)`: a tier whose copy would take longer
        than prefilling those tokens again is not read (nor any below it)."""
        entry = self.prefixes.get(prefix_id)
        have = entry.blocks if entry is not None else 0
        seconds = 0.0
        for tier in self.tiers:
            n = min(tier.prefixes.get(prefix_id, 0), want_blocks - have)
            if n <= 0:
                continue
            dt = tier.tier.latency_s + n * self.block_bytes / tier.tier.bandwidth
            if recompute_s is not None and dt >= recompute_s(n * self.block_size):
                break
            if entry is None:
                entry = self.prefixes[prefix_id] = PrefixEntry(0)
            entry.uses.append(have)  # pinned while room is made for the rest
            got = self.allocate(n)
            entry.uses.remove(have)
            if not got:
                break
            # an entry holding no block yet may have been dropped while room was made
            self.prefixes[prefix_id] = entry
            # making room spilled HBM blocks into the tiers, which may have pushed
            # this prefix's own blocks further down: fetch what is still here
            still = min(n, tier.prefixes.get(prefix_id, 0))
            if still < n:
                self.release(n - still)
                if still == 0:
                    continue
                n, dt = still, tier.tier.latency_s + still * self.block_bytes / tier.tier.bandwidth
            tier.prefixes[prefix_id] -= n
            if tier.prefixes[prefix_id] == 0:
                del tier.prefixes[prefix_id]
            tier.used -= n
            entry.blocks += n
            have += n
            tier.hit_blocks += n
            tier.fetch_s += dt
            seconds += dt
        if entry is not None and entry.blocks == 0:
            del self.prefixes[prefix_id]
        return seconds

    def release(self, blocks: int) -> None:
        self.used -= blocks
        assert self.used >= 0

    # --- prefix cache -----------------------------------------------------------

    def lookup_prefix(self, prefix_id: str, max_blocks: int) -> int:
        """Blocks of `prefix_id` already cached, at most `max_blocks`; a request
        that gets any holds them until drop_hold."""
        entry = self.prefixes.get(prefix_id)
        blocks = min(entry.blocks, max_blocks) if entry is not None else 0
        if blocks <= 0:
            return 0
        self.prefixes.move_to_end(prefix_id)
        entry.uses.append(blocks)
        return blocks

    def publish_prefix(self, prefix_id: str, prefix_tokens: int) -> int:
        """After a prefill, keep the whole blocks of its prefix for later
        requests; returns the blocks now owned by the cache (the request's own
        blocks shrink by as many), held for the request."""
        blocks = prefix_tokens // self.block_size
        if not prefix_id or blocks == 0 or prefix_id in self.prefixes:
            return 0
        self.prefixes[prefix_id] = PrefixEntry(blocks, [blocks])
        return blocks

    def drop_hold(self, prefix_id: str, blocks: int) -> None:
        entry = self.prefixes.get(prefix_id)
        if entry is not None and blocks in entry.uses:
            entry.uses.remove(blocks)
