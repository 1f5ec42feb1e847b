"""The scheduler of one replica: vLLM-style continuous batching over a paged KV
cache, or static batching.

Continuous batching (`policy="continuous"`), each iteration:
1. decoding sequences that cross a block boundary get a block; when none is
   free, the latest-admitted running sequence is preempted (recomputed: its
   blocks freed and its prompt plus generated tokens prefilled again later; or
   swapped: its blocks copied to host memory over PCIe and back when room
   returns);
2. decodes take one token each from the token budget (`max_batch_tokens`); with
   chunked prefill, prompts being prefilled and then waiting requests (FCFS)
   fill the rest in chunks; without it, a prefill-only iteration runs whenever a
   waiting prompt fits, and decodes wait (vLLM's default without chunking);
3. the iteration's time comes from the replica's StepTimeModel.

Static batching (`policy="static"`): a batch is formed only when the replica is
empty, its KV reserved for the whole output up front; it prefills at once and
decodes until its longest sequence ends, finished ones kept as padding.

Decoding sequences are not touched every iteration (10^5 iterations times the
batch would dominate the run time): each decode segment records where it
started (decode iteration, context, tokens generated) and events keyed by decode
iteration (needs a block, finishes) sit in heaps. Decode iterations are counted
apart from iterations, since prefill-only iterations do not advance decodes.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from charon_ir.errors import CharonError
from charon_ir.serving.kv_cache import BlockManager, KVTier, TierLevel
from charon_ir.serving.latency import StepTimeModel
from charon_ir.serving.requests import Request
from charon_ir.target.hardware import HOST_LINK_BYTES_S

POLICIES = ("continuous", "static")
PREEMPTION_MODES = ("recompute", "swap")
ROLES = ("both", "prefill", "decode")
"""What a replica runs: everything, or one side of a disaggregated deployment."""


@dataclass
class SchedulerConfig:
    policy: str = "continuous"
    block_size: int = 16
    max_batch_tokens: int = 8192
    max_num_seqs: int = 256
    chunked_prefill: bool = True
    preemption: str = "recompute"
    speculative_k: int = 0
    acceptance_rate: float = 0.7
    host_bandwidth: float = HOST_LINK_BYTES_S
    """Bytes/s of swapping KV blocks to and from host memory (PCIe)."""
    kv_tiers: tuple[KVTier, ...] = ()
    """Memory levels below HBM for evicted prefix-cache blocks (--kv-tier)."""
    batch_overhead_s: float = 0.0
    """Static batching: host time of the runtime call that runs one batch,
    outside the engine's forward passes (buffer and sampler setup, the sampling
    step after the last forward, the final synchronisations), charged once on
    the batch's first iteration. 0 for a continuous-batching server, whose
    per-request setup overlaps the steps of the others. See
    validation.TRTLLM_GPTSESSION_CALL_OVERHEAD_S."""

    def check(self) -> None:
        if self.policy not in POLICIES:
            raise CharonError(f"--policy must be one of {', '.join(POLICIES)}, got '{self.policy}'")
        if self.preemption not in PREEMPTION_MODES:
            raise CharonError(
                f"--preemption must be one of {', '.join(PREEMPTION_MODES)}, got '{self.preemption}'"
            )
        for flag, value in (("--block-size", self.block_size), ("--max-batch-tokens", self.max_batch_tokens),
                            ("--max-num-seqs", self.max_num_seqs)):
            if value < 1:
                raise CharonError(f"{flag} must be >= 1, got {value}")
        if self.speculative_k < 0 or not 0.0 <= self.acceptance_rate <= 1.0:
            raise CharonError("--speculative-k must be >= 0 and --acceptance-rate in [0, 1]")
        if self.batch_overhead_s < 0:
            raise CharonError(f"batch_overhead_s must be >= 0, got {self.batch_overhead_s}")

    @property
    def tokens_per_decode(self) -> float:
        """Tokens a sequence gains per decode iteration: 1, or with speculative
        decoding the expected accepted drafts plus the verifier's own token,
        (1 - a^(k+1)) / (1 - a)."""
        k, a = self.speculative_k, self.acceptance_rate
        if k == 0:
            return 1.0
        if a >= 1.0:
            return float(k + 1)
        return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(eq=False)
class Sequence:
    """A request on its way through a replica."""

    request: Request
    prompt: int
    """Context tokens whose KV must exist before decoding: input (+ generated
    tokens after a recompute preemption)."""
    fetched: int
    """Tokens of the prompt whose KV came from elsewhere (a slower tier, a
    prefill replica): allocated, never computed."""
    output: int
    skip: int = 0
    """Prompt tokens not computed by this prefill (fetched + prefix-cache hit)."""
    prefilled: int = 0
    generated: float = 0.0
    held: int = 0
    """KV blocks this sequence owns."""
    shared: int = 0
    """Blocks of a cached prefix it reads."""
    prefix_hold: str = ""
    version: int = 0
    decoding: bool = False
    j0: int = 0
    c0: float = 0.0
    g0: float = 0.0
    ready_s: float = 0.0
    """When it reached the router, after the stages before the model."""
    admitted_s: float = -1.0
    """When its first prefill chunk was scheduled (the end of its wait for the model)."""
    first_token_s: float = -1.0
    finish_s: float = -1.0
    segments: list[tuple[int, int, int]] = field(default_factory=list)
    """(replica, first, last decode iteration) of each decode segment."""
    preemptions: int = 0
    replica: int = -1
    prefill_replica: int = -1


@dataclass
class IterationRecord:
    start_s: float
    end_s: float
    tokens: int
    prefill_tokens: int
    decodes: int
    kv_blocks: int


ADMISSION_WATERMARK = 0.01
"""Share of the KV blocks a new sequence must leave free when others are running:
vLLM's `BlockSpaceManager.can_allocate` (v0, `watermark=0.01`), which keeps a
sequence that decode growth just preempted from taking its blocks straight back
in a prefill-only iteration, to be preempted again by the next one."""


class StagePipeline:
    """The pipeline stages a replica's `pp` virtual engines share. An iteration of
    `dt` seconds crosses them in turn, dt / pp on each, and waits for a stage
    still busy with another engine's iteration: in steady state the engines
    interleave without waiting, but a burst fills the pipeline first (the second
    engine's first iteration ends dt / pp after the first's). Even shares are an
    approximation: the LM head, sampling and a static batch's host overhead run
    once, on the last stage or the host, which a small decode batch notices."""

    def __init__(self, stages: int):
        self.free_at = [0.0] * stages

    def run(self, now: float, dt: float) -> float:
        """When an iteration of `dt` seconds issued at `now` leaves the last stage."""
        t, per_stage = now, dt / len(self.free_at)
        for j, free in enumerate(self.free_at):
            t = max(t, free) + per_stage
            self.free_at[j] = t
        return t


class Replica:
    def __init__(
        self,
        index: int,
        model: StepTimeModel,
        config: SchedulerConfig,
        kv_blocks: int,
        role: str = "both",
        draft: StepTimeModel | None = None,
        on_prefilled: Callable[[Sequence, float], None] | None = None,
        record_iterations: bool = False,
    ):
        self.index = index
        self.physical = index
        """The replica this is a virtual engine of (pipeline parallelism)."""
        self.pipeline: StagePipeline | None = None
        """The stages it shares with the replica's other virtual engines (pp > 1)."""
        self.model = model
        self.config = config
        self.role = role
        self.draft = draft
        self.on_prefilled = on_prefilled
        self.kv = BlockManager(kv_blocks, config.block_size)
        self.fetch_s = 0.0
        """Seconds of prefix blocks copied up from the tiers, charged to the next iteration."""
        if config.kv_tiers:
            self.kv.block_bytes = config.block_size * model.kv_bytes_per_token_per_gpu
            for tier in config.kv_tiers:
                blocks = int(tier.capacity_bytes // self.kv.block_bytes)
                if blocks < 1:
                    raise CharonError(f"--kv-tier {tier.name}: {tier.capacity_bytes / 2**30:g} GiB per GPU holds no "
                                      f"{config.block_size}-token block ({self.kv.block_bytes:,.0f} bytes)")
                self.kv.tiers.append(TierLevel(tier, blocks))
        self.watermark_blocks = int(ADMISSION_WATERMARK * kv_blocks)
        self.rate = config.tokens_per_decode if role != "prefill" else 1.0
        self.spec_tokens = config.speculative_k + 1 if role != "prefill" else 1
        self.waiting: deque[Sequence] = deque()
        self.swapped: deque[Sequence] = deque()
        self.handed_over: deque[Sequence] = deque()
        """Prefilled elsewhere, waiting for blocks to start decoding here."""
        self.running: dict[int, Sequence] = {}
        """Admission order; the last one is preempted first."""
        self.prefilling: dict[int, Sequence] = {}
        self.decoders = 0
        self.context_base = 0.0
        """Sum over decoders of (c0 - j0 x rate): their context at decode
        iteration j sums to context_base + decoders x j x rate."""
        # (decode iteration, request id, id(seq), version): entries due at the same
        # iteration in request order (by id() alone their order was the
        # sequences' memory addresses, and a run could differ from the next)
        self.finish_heap: list[tuple[int, int, int, int]] = []
        self.block_heap: list[tuple[int, int, int, int]] = []
        self.decode_iteration = 0
        self.decode_end_s: list[float] = []
        self.finished: list[Sequence] = []
        self.static_padding = 0
        self.static_padding_context = 0.0
        self.busy_s = 0.0
        self.iterations = 0
        self.preemptions = 0
        self.kv_samples: list[tuple[float, int]] = []
        self.records: list[IterationRecord] | None = [] if record_iterations else None

    # --- load, for the router ----------------------------------------------------

    @property
    def load(self) -> int:
        return len(self.waiting) + len(self.swapped) + len(self.handed_over) + len(self.running)

    @property
    def has_work(self) -> bool:
        return bool(self.running or self.waiting or self.swapped or self.handed_over)

    # --- entry points -------------------------------------------------------------

    def submit(self, seq: Sequence) -> None:
        seq.replica = self.index
        # checked on every replica, so that a decode replica of a disaggregated
        # deployment can always take what a prefill replica hands over
        total = seq.prompt + seq.output
        if self.kv.blocks_for(total) > self.kv.capacity:
            raise CharonError(
                f"request {seq.request.id} needs {self.kv.blocks_for(total)} KV blocks "
                f"({total} tokens), more than the {self.kv.capacity} of a replica"
            )
        if not (self.config.chunked_prefill or self.config.policy == "static") \
                and seq.prompt > self.config.max_batch_tokens:
            raise CharonError(
                f"request {seq.request.id} has {seq.prompt} prompt tokens, more than "
                f"--max-batch-tokens {self.config.max_batch_tokens} without chunked prefill"
            )
        self.waiting.append(seq)

    def hand_over(self, seq: Sequence) -> None:
        """A sequence prefilled on another replica whose KV has arrived."""
        seq.replica = self.index
        seq.skip = seq.fetched = seq.prompt
        self.handed_over.append(seq)

    # --- one iteration ------------------------------------------------------------

    def step(self, now: float) -> float | None:
        """Run one iteration starting at `now`; its end, or None when idle."""
        extra_s = 0.0
        if self.config.policy == "static":
            if not self.running:
                self._form_static_batch()
                if self.running:
                    extra_s += self.config.batch_overhead_s
        else:
            extra_s += self._admit_handed_over_and_swapped()
            extra_s += self._grow_decode_blocks()
        decodes = self.decoders
        budget = self.config.max_batch_tokens - decodes * self.spec_tokens
        chunks = self._prefill_chunks(budget, decodes)
        if chunks is None:  # a prefill-only iteration (no chunked prefill)...
            alone = self._prefill_chunks(self.config.max_batch_tokens, 0)
            if alone:
                chunks, decodes = alone, 0
            else:  # ...unless the prompt could not get its blocks after all
                chunks = []
        if not chunks and not decodes:
            return None
        pad = self.static_padding if decodes else 0
        decode_tokens = (decodes + pad) * self.spec_tokens
        prefill_tokens = sum(c for _, c in chunks)
        tokens = decode_tokens + prefill_tokens
        context = (
            self.context_base + decodes * self.decode_iteration * self.rate + self.static_padding_context
            if decodes else 0.0
        )
        tiles = sum(self.model.chunk_tiles(c, s.skip + s.prefilled) for s, c in chunks)
        dt = self.model.iteration_time(tokens, decodes + pad + len(chunks), int(context), tiles)
        if decodes and self.draft is not None and self.config.speculative_k:
            dt += self.config.speculative_k * self.draft.iteration_time(
                decodes + pad, decodes + pad, int(context)
            )
        dt += extra_s + self.fetch_s
        self.fetch_s = 0.0
        end = self.pipeline.run(now, dt) if self.pipeline is not None else now + dt
        self.busy_s += dt
        self.iterations += 1
        if self.records is not None:
            self.records.append(IterationRecord(now, end, tokens, prefill_tokens, decodes, self.kv.used))
        if decodes:
            self.decode_end_s.append(end)
            self._finish_decodes(end)
            self.decode_iteration += 1
        for seq, chunk in chunks:
            if seq.admitted_s < 0:
                seq.admitted_s = now
            seq.prefilled += chunk
            if seq.skip + seq.prefilled >= seq.prompt:
                self._prefill_done(seq, end)
        if self.static_padding and not self.decoders:
            self.static_padding, self.static_padding_context = 0, 0.0
        self.kv_samples.append((end, self.kv.used))
        return end

    # --- admission ------------------------------------------------------------------

    def _prefill_chunks(self, budget: int, decodes: int) -> list[tuple[Sequence, int]] | None:
        """Chunks to prefill this iteration. None: without chunked prefill,
        prefills must run alone this iteration (call again with decodes=0)."""
        config = self.config
        chunked = config.chunked_prefill and config.policy == "continuous"
        if config.policy == "static":
            return [(s, s.prompt - s.skip - s.prefilled) for s in self.prefilling.values()] \
                if not decodes else []
        if not chunked and decodes and self._prompt_fits_alone():
            return None
        chunks: list[tuple[Sequence, int]] = []
        order = list(self.prefilling.values())
        for i, seq in enumerate(order):
            if budget <= 0:
                break
            if id(seq) not in self.prefilling:
                continue  # preempted below for an earlier one
            remaining = seq.prompt - seq.skip - seq.prefilled
            chunk = min(remaining, budget) if chunked else remaining
            if chunk > budget:
                break
            while not self._cover(seq, seq.skip + seq.prefilled + chunk):
                # partly prefilled prompts holding the cache could all wait on
                # each other: the latest admitted gives way (recomputed later)
                later = [s for s in order[i + 1:] if id(s) in self.prefilling]
                if not later:
                    break
                self._preempt(later[-1])
            else:
                chunks.append((seq, chunk))
                budget -= chunk
                continue
            break
        if self.swapped:
            return chunks  # swapped sequences go back in before new ones
        while self.waiting and budget > 0 and len(self.running) < config.max_num_seqs:
            seq = self.waiting[0]
            chunk = self._first_chunk(seq, budget, chunked, use_prefix=True)
            if chunk is None and seq.prefix_hold:
                # a hit pins the whole cached prefix, which could otherwise be
                # evicted to make room: try again without it
                self._drop_prefix(seq)
                chunk = self._first_chunk(seq, budget, chunked, use_prefix=False)
            if chunk is None:
                self._drop_prefix(seq)
                break
            self.waiting.popleft()
            self.running[id(seq)] = seq
            self.prefilling[id(seq)] = seq
            chunks.append((seq, chunk))
            budget -= chunk
        return chunks

    def _first_chunk(self, seq: Sequence, budget: int, chunked: bool, use_prefix: bool) -> int | None:
        """The first chunk of a waiting sequence, its blocks taken; None if it
        does not fit the budget or the cache."""
        if use_prefix:
            self._look_up_prefix(seq)
        remaining = seq.prompt - seq.skip - seq.prefilled
        chunk = min(remaining, budget) if chunked else remaining
        if chunk > budget or not self._admits(seq, seq.skip + seq.prefilled + chunk):
            return None
        if not self._cover(seq, seq.skip + seq.prefilled + chunk):
            return None
        return chunk

    def _admits(self, seq: Sequence, tokens: float) -> bool:
        """Whether a waiting sequence may take the blocks for `tokens`: beside
        running ones, only above the watermark (alone, always: it would otherwise
        wait for ever)."""
        need = self.kv.blocks_for(tokens) - seq.held - seq.shared
        return not self.running or self.kv.can_allocate(need + self.watermark_blocks)

    def _prompt_fits_alone(self) -> bool:
        if self.prefilling:
            return True
        if not self.waiting or len(self.running) >= self.config.max_num_seqs:
            return False
        seq = self.waiting[0]
        return seq.prompt - seq.skip <= self.config.max_batch_tokens and self._admits(seq, seq.prompt)

    def _look_up_prefix(self, seq: Sequence) -> None:
        r = seq.request
        if seq.prefix_hold or not r.prefix_id or seq.prefilled:
            return
        # the shared part is at most this request's own prefix, and one prompt
        # token is always computed (its logits give the first output token)
        bs = self.kv.block_size
        want = min(r.prefix_tokens, seq.prompt - 1) // bs
        if self.kv.tiers:  # blocks evicted to a slower tier come back, priced by where they are
            self.fetch_s += self.kv.fetch_prefix(r.prefix_id, want, self._recompute_s)
        blocks = self.kv.lookup_prefix(r.prefix_id, want)
        if blocks:
            seq.prefix_hold = r.prefix_id
            seq.shared = blocks
            seq.skip = max(seq.skip, blocks * bs)

    def _recompute_s(self, tokens: int) -> float:
        """What prefilling `tokens` again would add to an iteration: the layers'
        work on them, not the head or a floor the iteration pays anyway."""
        return self.model.prefill_time(tokens) - self.model.prefill_time(1)

    def _drop_prefix(self, seq: Sequence) -> None:
        if seq.prefix_hold:
            self.kv.drop_hold(seq.prefix_hold, seq.shared)
            seq.prefix_hold, seq.shared = "", 0
            seq.skip = seq.fetched

    def _cover(self, seq: Sequence, tokens: float) -> bool:
        """Give `seq` the blocks for `tokens` context tokens, if they can be had."""
        need = self.kv.blocks_for(tokens) - seq.held - seq.shared
        if need <= 0:
            return True
        if not self.kv.allocate(need):
            return False
        seq.held += need
        return True

    def _form_static_batch(self) -> None:
        config = self.config
        while self.waiting and len(self.running) < config.max_num_seqs:
            seq = self.waiting[0]
            if not self._cover(seq, seq.prompt + seq.output):
                break
            self.waiting.popleft()
            self.running[id(seq)] = seq
            self.prefilling[id(seq)] = seq

    def _admit_handed_over_and_swapped(self) -> float:
        """Start decoding what came from a prefill replica, then what was
        swapped out; returns the seconds of host-to-device copies."""
        extra = 0.0
        while self.handed_over and len(self.running) < self.config.max_num_seqs:
            seq = self.handed_over[0]
            if not self._cover(seq, seq.prompt + self.rate):
                break
            self.handed_over.popleft()
            self.running[id(seq)] = seq
            self._start_decode(seq, seq.prompt, seq.generated)
        while self.swapped and len(self.running) < self.config.max_num_seqs:
            seq = self.swapped[0]
            blocks = seq.held
            seq.held = 0
            if not self._cover(seq, blocks * self.kv.block_size):
                seq.held = blocks
                break
            self.swapped.popleft()
            extra += self._copy_s(blocks)
            self.running[id(seq)] = seq
            self._start_decode(seq, seq.c0, seq.g0)
        return extra

    def _copy_s(self, blocks: int) -> float:
        nbytes = blocks * self.kv.block_size * self.model.kv_bytes_per_token_per_gpu
        return nbytes / self.config.host_bandwidth

    # --- decoding ---------------------------------------------------------------------

    def _start_decode(self, seq: Sequence, context: float, generated: float) -> None:
        j = self.decode_iteration
        seq.decoding = True
        seq.j0, seq.c0, seq.g0 = j, context, generated
        self.decoders += 1
        self.context_base += context - j * self.rate
        iterations = max(1, math.ceil((seq.output - generated) / self.rate - 1e-9))
        heapq.heappush(self.finish_heap, (j + iterations - 1, seq.request.id, id(seq), seq.version))
        self._push_block_need(seq)

    def _push_block_need(self, seq: Sequence) -> None:
        covered = (seq.held + seq.shared) * self.kv.block_size
        j_need = seq.j0 + math.floor((covered - seq.c0) / self.rate + 1e-9)
        heapq.heappush(self.block_heap, (max(j_need, self.decode_iteration), seq.request.id, id(seq), seq.version))

    def _context_after(self, seq: Sequence, j: int) -> float:
        return seq.c0 + (j - seq.j0 + 1) * self.rate

    def _generated_before(self, seq: Sequence, j: int) -> float:
        return seq.g0 + (j - seq.j0) * self.rate

    def _stop_decode(self, seq: Sequence) -> None:
        j = self.decode_iteration
        if j > seq.j0:
            seq.segments.append((self.index, seq.j0, j - 1))
        seq.decoding = False
        seq.version += 1
        self.decoders -= 1
        self.context_base -= seq.c0 - seq.j0 * self.rate

    def _due(self, heap: list[tuple[int, int, int, int]]) -> Iterator[Sequence]:
        """Pop `heap`'s entries due by this decode iteration (those the caller
        pushes meanwhile included), yielding each sequence that still decodes as
        it did when its entry was pushed: a sequence preempted, finished or
        pushed again since leaves a stale entry behind."""
        j = self.decode_iteration
        while heap and heap[0][0] <= j:
            _, _, key, version = heapq.heappop(heap)
            seq = self.running.get(key)
            if seq is not None and seq.version == version and seq.decoding:
                yield seq

    def _grow_decode_blocks(self) -> float:
        j = self.decode_iteration
        extra = 0.0
        for seq in self._due(self.block_heap):
            while not self._cover(seq, self._context_after(seq, j)):
                victim = self.running[next(reversed(self.running))]
                extra += self._preempt(victim)
                if victim is seq:
                    break
            else:
                self._push_block_need(seq)
        return extra

    def _preempt(self, seq: Sequence) -> float:
        """Take `seq` off the GPU; the seconds its blocks take to copy out."""
        del self.running[id(seq)]
        self.preemptions += 1
        seq.preemptions += 1
        self.prefilling.pop(id(seq), None)
        was_decoding = seq.decoding
        if was_decoding:
            generated = self._generated_before(seq, self.decode_iteration)
            context = seq.c0 + (self.decode_iteration - seq.j0) * self.rate
            self._stop_decode(seq)
        seq.version += 1
        if was_decoding and self.config.preemption == "swap":
            blocks = seq.held
            self.kv.release(blocks)
            self._drop_prefix_keep_blocks(seq)
            seq.c0, seq.g0 = context, generated
            self.swapped.append(seq)
            return self._copy_s(seq.held)
        # recompute: the prompt and every token generated so far are prefilled
        # again when the sequence is readmitted
        self.kv.release(seq.held)
        seq.held = 0
        self._drop_prefix(seq)
        if was_decoding:
            seq.generated = generated
            seq.prompt = int(context)
        seq.skip = seq.fetched = min(seq.fetched, seq.prompt)
        seq.prefilled = 0
        self.waiting.appendleft(seq)
        return 0.0

    def _drop_prefix_keep_blocks(self, seq: Sequence) -> None:
        # a swapped sequence copies its shared prefix blocks out as its own (the
        # cache keeps its copy)
        if seq.prefix_hold:
            self.kv.drop_hold(seq.prefix_hold, seq.shared)
            seq.held += seq.shared
            seq.prefix_hold, seq.shared = "", 0

    def _finish_decodes(self, end: float) -> None:
        for seq in self._due(self.finish_heap):
            self._stop_decode(seq)
            seq.generated = float(seq.output)
            self._finish(seq, end)

    def _finish(self, seq: Sequence, end: float) -> None:
        seq.finish_s = end
        del self.running[id(seq)]
        if self.config.policy == "static":
            self.static_padding += 1
            self.static_padding_context += seq.prompt + seq.output
        self.kv.release(seq.held)
        seq.held = 0
        self._drop_prefix(seq)
        self.finished.append(seq)

    def _prefill_done(self, seq: Sequence, end: float) -> None:
        del self.prefilling[id(seq)]
        r = seq.request
        if r.prefix_id and r.prefix_tokens and not seq.prefix_hold:
            taken = self.kv.publish_prefix(r.prefix_id, min(r.prefix_tokens, seq.prompt - 1))
            if taken:
                seq.held -= taken
                seq.shared = taken
                seq.prefix_hold = r.prefix_id
        if seq.first_token_s < 0:
            seq.first_token_s = end
        seq.generated += 1.0  # the prefill's logits give the next token
        if seq.generated >= seq.output:
            self._finish(seq, end)
            return
        if self.role == "prefill":
            del self.running[id(seq)]
            self.kv.release(seq.held)
            seq.held = 0
            self._drop_prefix(seq)
            assert self.on_prefilled is not None
            self.on_prefilled(seq, end)
            return
        self._start_decode(seq, seq.prompt, seq.generated)
