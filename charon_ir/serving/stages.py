"""Stages of a multi-stage request (HERMES-style pipelines) besides the LLM's
own prefill and decode:

- retrieval: a vector-store lookup on CPUs before the prompt reaches the model;
  latency = fixed cost + the query embedding + a scan cost per document fetched.
- remote_kv: the KV cache of `tokens` context tokens fetched from a slower memory
  tier (CPU DRAM over PCIe, or a remote store over the network) instead of being
  prefilled; the request waits for the transfer, then prefills only the rest.
- reasoning: `tokens` of hidden chain of thought decoded before the answer (a
  long decode), so the request decodes `tokens` more.

The constants are defaults of the CLI flags, typical of FAISS-IVF on a server CPU
and PCIe Gen5 host memory; they are inputs, not measurements of this project.
"""

from __future__ import annotations

from dataclasses import dataclass

from charon_ir.serving.requests import Request

STAGE_KINDS = ("retrieval", "remote_kv", "reasoning")
MAX_RETRIEVAL_DOCUMENTS = 100_000
"""Documents one retrieval stage fetches and re-ranks at most: re-rankers take
the top 10 to 1,000 of a first-stage search; 10^5 (40 s at the default cost per
document) is past any RAG pipeline, and beyond it the TTFT is the retrieval's."""


@dataclass(frozen=True)
class StageModel:
    retrieval_base_s: float = 2.0e-3
    """Query embedding and index probe of one retrieval."""
    retrieval_per_document_s: float = 0.4e-3
    """Fetching and re-ranking one document."""
    remote_kv_bandwidth: float = 25e9
    """Bytes/s from the slower tier to one GPU (PCIe Gen5 x16, effective)."""
    remote_kv_latency_s: float = 50e-6


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
            extra_output += stage.amount
    fetched = min(fetched, request.input_tokens - 1)
    return StagedRequest(
        request.arrival_s + delay,
        request.input_tokens - fetched,
        fetched,
        request.output_tokens + extra_output,
    )
