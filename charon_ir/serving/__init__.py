"""Inference serving simulation: `charon serve` (DESIGN.md section 7).

    latency.py    per-iteration latency of a replica, priced once through the pipeline
    requests.py   request sources: static batch, Poisson, JSONL trace, length distributions
    kv_cache.py   paged KV blocks and the prefix cache
    scheduler.py  one replica: continuous (vLLM-style) or static batching
    cluster.py    replicas, router, prefill/decode disaggregation, the event loop
    stages.py     multi-stage requests: retrieval, remote KV, reasoning
    context_parallel.py  long-context serving: cp groups formed per request (--cp-policy)
    metrics.py    TTFT/TPOT/ITL/E2E, goodput, KV utilisation, Chrome trace
    validation.py reproducing published inference records
"""

from charon_ir.serving.api import ServingConfig, serve
from charon_ir.serving.validation import reproduce_inference_record

__all__ = ["ServingConfig", "reproduce_inference_record", "serve"]
