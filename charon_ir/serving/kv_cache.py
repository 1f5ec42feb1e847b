"""The paged KV cache of one replica: fixed-size blocks, a free count, and a
prefix cache whose blocks requests share.

Blocks are counted, not named: which physical block holds which token does not
change any time the simulator predicts. The invariant the property tests check
is `used <= capacity` at every step.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from charon_ir.errors import CharonError


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
                if blocks <= self.free:
                    break
        self.used += blocks
        self.peak = max(self.peak, self.used)
        assert self.used <= self.capacity
        return True

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
