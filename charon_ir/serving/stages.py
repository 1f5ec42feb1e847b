"""Stages of a multi-stage request (HERMES-style pipelines) besides the LLM's
own prefill and decode:

- retrieval: a vector-store lookup on CPUs before the prompt reaches the model;
  latency = fixed cost + the query embedding + a scan cost per document fetched.
- remote_kv: the KV cache of `tokens` context tokens fetched from a slower memory
  tier (CPU DRAM over PCIe, or a remote store over the network) instead of being
  prefilled; the request waits for the transfer, then prefills only the rest.
- reasoning: `tokens` of hidden chain of thought decoded before the answer (a
  long decode), so the request decodes `tokens` more, at most its `budget`
  (`--reasoning-budget`: thinking is cut there and the answer starts).
- routing: a small model (`--router-model`) reads the prompt and decodes
  `amount` decision tokens before the large one answers. Its servers are
  replicas of the router batching continuously like the large one's
  (cluster.RouterPool, run by the same scheduler): not priced here.

The constants are defaults of the CLI flags, typical of FAISS-IVF on a server CPU
and PCIe Gen5 host memory; they are inputs, not measurements of this project.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from charon_ir.errors import CharonError
from charon_ir.serving.requests import Request
from charon_ir.target.hardware import HOST_LINK_BYTES_S


@dataclass(frozen=True)
class StageModel:
    retrieval_base_s: float = 2.0e-3
    """Query embedding and index probe of one retrieval."""
    retrieval_per_document_s: float = 0.4e-3
    """Fetching and re-ranking one document."""
    remote_kv_bandwidth: float = HOST_LINK_BYTES_S
    """Bytes/s from the slower tier to one GPU (PCIe Gen5 x16, effective)."""
    remote_kv_latency_s: float = 50e-6

    @staticmethod
    def over(tiers) -> StageModel:
        """remote_kv stages fetched from the `remote` KV tier when one is declared
        (its bandwidth and latency per GPU), else over the defaults."""
        remote = next((t for t in tiers if t.name == "remote"), None)
        if remote is None:
            return StageModel()
        return StageModel(remote_kv_bandwidth=remote.bandwidth, remote_kv_latency_s=remote.latency_s)


@dataclass(frozen=True)
class StagedRequest:
    """What the stages change of a request before the replica sees it."""

    ready_s: float
    """When the prompt (and any fetched KV) reaches the router."""
    prefill_tokens: int
    """Tokens to prefill (the input minus the KV fetched from the slower tier)."""
    fetched_tokens: int
    output_tokens: int


def apply_stages(request: Request, model: StageModel, kv_bytes_per_token: float) -> StagedRequest:
    delay = 0.0
    fetched = 0
    extra_output = 0
    for stage in request.stages:
        if stage.kind == "retrieval":
            delay += model.retrieval_base_s + stage.amount * model.retrieval_per_document_s
        elif stage.kind == "remote_kv":
            tokens = min(stage.amount, request.input_tokens - 1)
            fetched += tokens
            delay += model.remote_kv_latency_s + tokens * kv_bytes_per_token / model.remote_kv_bandwidth
        elif stage.kind == "reasoning":
            extra_output += stage.decoded_tokens
    fetched = min(fetched, request.input_tokens - 1)
    return StagedRequest(
        request.arrival_s + delay,
        request.input_tokens - fetched,
        fetched,
        request.output_tokens + extra_output,
    )


# --- stages as resources: servers and queues ----------------------------------------

RESOURCE_KINDS = ("retrieval", "remote_kv", "routing")
"""Stages served by a pool of servers of their own: retrieval by vector-DB
workers, remote_kv by the slower tier's transfer links (each at
`remote_kv_bandwidth`), routing by the router model's replicas (simulated as
replicas, cluster.RouterPool). Reasoning decodes on the replica, which queues it."""
QUEUED_HERE = ("retrieval", "remote_kv")
"""The resources schedule_stages queues itself."""
MAX_STAGE_SERVERS = 1_000_000


def parse_stage_servers(texts: tuple[str, ...]) -> dict[str, int]:
    """`--stage-servers retrieval=4,remote_kv=2` (repeatable) as {kind: servers}."""
    servers: dict[str, int] = {}
    for text in texts:
        shown = text if len(text) <= 60 else f"{text[:57]}..."
        for item in text.split(","):
            name, eq, count = item.partition("=")
            if name not in RESOURCE_KINDS:
                raise CharonError(f"--stage-servers '{shown}': unknown resource '{name[:40]}'; "
                                  f"resources: {', '.join(RESOURCE_KINDS)}")
            if not eq or not (count.isascii() and count.isdigit()) or len(count) > 7 \
                    or not 1 <= int(count) <= MAX_STAGE_SERVERS:
                raise CharonError(f"--stage-servers '{shown}': {name} needs =N servers, N in "
                                  f"1..{MAX_STAGE_SERVERS:,}")
            if name in servers:
                raise CharonError(f"--stage-servers '{shown}': {name} given twice")
            servers[name] = int(count)
    return servers


@dataclass(frozen=True)
class StageUse:
    """One stage of one request on a server of its resource."""

    kind: str
    request: int
    server: int
    ready_s: float
    """When the request reached the stage (its queue)."""
    start_s: float
    end_s: float


def stage_service_s(stage, request: Request, model: StageModel, kv_bytes_per_token: float) -> float:
    if stage.kind == "retrieval":
        return model.retrieval_base_s + stage.amount * model.retrieval_per_document_s
    if stage.kind == "remote_kv":
        tokens = min(stage.amount, request.input_tokens - 1)
        return model.remote_kv_latency_s + tokens * kv_bytes_per_token / model.remote_kv_bandwidth
    return 0.0  # reasoning decodes on the replica; routing runs on the router's (cluster.RouterPool)


def schedule_stages(requests: list[Request], model: StageModel, kv_bytes_per_token: float,
                    servers: dict[str, int]) -> tuple[list[StagedRequest], list[StageUse]]:
    """Every request's stages in order, a resource's stages first come, first
    served on the first of its servers to be free (M/G/c); stages without
    servers take their service time alone. The staged requests, in the order given."""
    free = {kind: [(0.0, k) for k in range(n)] for kind, n in servers.items() if kind in QUEUED_HERE}
    ready = [0.0] * len(requests)
    uses: list[StageUse] = []
    events = [(r.arrival_s, i, 0) for i, r in enumerate(requests)]
    heapq.heapify(events)
    while events:
        t, i, j = heapq.heappop(events)
        request = requests[i]
        if j == len(request.stages):
            ready[i] = t
            continue
        stage = request.stages[j]
        service = stage_service_s(stage, request, model, kv_bytes_per_token)
        if stage.kind in free:
            free_at, server = heapq.heappop(free[stage.kind])
            start = max(t, free_at)
            end = start + service
            heapq.heappush(free[stage.kind], (end, server))
            uses.append(StageUse(stage.kind, request.id, server, t, start, end))
        else:
            end = t + service
        heapq.heappush(events, (end, i, j + 1))
    staged = []
    for r, t in zip(requests, ready):
        plain = apply_stages(r, model, kv_bytes_per_token)
        staged.append(StagedRequest(t, plain.prefill_tokens, plain.fetched_tokens, plain.output_tokens))
    return staged, uses
