"""Latency metrics of a serving run, as DESIGN.md section 7 names them.

- TTFT: first token - arrival (arrival before any retrieval stage: the user's
  clock).
- TPOT: (finish - first token) / (output tokens - 1), per request with >= 2.
- ITL: the gap between consecutive token deliveries, over all tokens; with
  speculative decoding a delivery carries several tokens and its gap is spread
  over them.
- E2E: finish - arrival.
Each is summarised as {p50, p90, p99, mean} in seconds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from charon_ir.serving.cluster import RunResult
from charon_ir.serving.stages import StageUse


def summary(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "mean": 0.0}
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "mean": float(values.mean())}


def inter_token_latencies(result: RunResult) -> np.ndarray:
    ends = [np.asarray(r.decode_end_s) for r in result.replicas]
    parts = []
    for seq in result.sequences:
        previous = seq.first_token_s
        rate = result.replicas[seq.segments[-1][0]].rate if seq.segments else 1.0
        for replica, first, last in seq.segments:
            times = ends[replica][first:last + 1]
            if times.size == 0:
                continue
            gaps = np.diff(times, prepend=previous)
            parts.append(gaps / rate)
            previous = times[-1]
    return np.concatenate(parts) if parts else np.zeros(0)


def latency_metrics(result: RunResult) -> dict[str, Any]:
    seqs = result.sequences
    arrival = np.array([s.request.arrival_s for s in seqs])
    first = np.array([s.first_token_s for s in seqs])
    finish = np.array([s.finish_s for s in seqs])
    outputs = np.array([s.output for s in seqs])
    multi = outputs > 1
    tpot = (finish[multi] - first[multi]) / (outputs[multi] - 1)
    return {
        "ttft": first - arrival,
        "tpot_per_request": np.where(multi, (finish - first) / np.maximum(outputs - 1, 1), 0.0),
        "tpot": tpot,
        "e2e": finish - arrival,
        "itl": inter_token_latencies(result),
        "output_tokens": int(outputs.sum()),
        "input_tokens": int(sum(s.request.input_tokens for s in seqs)),
    }


def kv_utilization(result: RunResult, points: int = 100) -> dict[str, Any]:
    """Mean and peak fraction of KV blocks in use (time-weighted over busy time),
    and a timeline of `points` samples per replica."""
    out = []
    for r in result.replicas:
        if not r.kv_samples:
            out.append({"replica": r.index, "mean": 0.0, "peak": 0.0, "timeline": []})
            continue
        t = np.array([s[0] for s in r.kv_samples])
        used = np.array([s[1] for s in r.kv_samples], dtype=float) / r.kv.capacity
        dt = np.diff(t, prepend=t[0])
        mean = float((used * dt).sum() / dt.sum()) if dt.sum() > 0 else float(used.mean())
        step = max(1, len(t) // points)
        timeline = [[float(a), float(b)] for a, b in zip(t[::step], used[::step])]
        out.append({"replica": r.index, "mean": mean, "peak": float(r.kv.peak / r.kv.capacity),
                    "timeline": timeline})
    return {
        "mean": float(np.mean([o["mean"] for o in out])),
        "peak": float(max(o["peak"] for o in out)),
        "per_replica": out,
    }


def goodput(metrics: dict[str, Any], duration_s: float, slo_ttft_s: float, slo_tpot_s: float) -> dict[str, Any]:
    """Requests per second that met every SLO given (0 = no SLO on that metric)."""
    ok = np.ones(metrics["ttft"].size, dtype=bool)
    if slo_ttft_s > 0:
        ok &= metrics["ttft"] <= slo_ttft_s
    if slo_tpot_s > 0:
        ok &= metrics["tpot_per_request"] <= slo_tpot_s
    return {
        "slo_ttft_s": slo_ttft_s or None,
        "slo_tpot_s": slo_tpot_s or None,
        "requests_meeting_slo": int(ok.sum()),
        "fraction_meeting_slo": float(ok.mean()) if ok.size else 0.0,
        "goodput_requests_per_s": float(ok.sum() / duration_s) if duration_s > 0 else 0.0,
    }


def chrome_trace(result: RunResult) -> dict[str, Any]:
    """Iterations per replica as Chrome/Perfetto complete events; resource
    stages per server; the router model's replicas; each request's waits."""
    events: list[dict[str, Any]] = []

    def replica_iterations(replicas, first_pid: int, label: str) -> None:
        for n, r in enumerate(replicas):
            events.append({"name": "process_name", "ph": "M", "pid": first_pid + n,
                           "args": {"name": f"{label} {r.index} ({r.role})"}})
            for it in r.records or []:
                kind = "prefill" if it.prefill_tokens and not it.decodes else \
                    "decode" if not it.prefill_tokens else "mixed"
                events.append({
                    "name": kind, "ph": "X", "pid": first_pid + n, "tid": 0,
                    "ts": it.start_s * 1e6, "dur": (it.end_s - it.start_s) * 1e6,
                    "args": {"tokens": it.tokens, "prefill_tokens": it.prefill_tokens,
                             "decodes": it.decodes, "kv_blocks": it.kv_blocks},
                })

    replica_iterations(result.replicas, 0, "replica")
    # resource stages: one process per resource, a thread per server; the wait
    # in the queue is the span's `queued_s`
    kinds = sorted({u.kind for u in result.stage_uses or []})
    for n, kind in enumerate(kinds):
        pid = len(result.replicas) + n
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"stage {kind}"}})
        for u in result.stage_uses or []:
            if u.kind == kind:
                events.append({"name": kind, "ph": "X", "pid": pid, "tid": u.server,
                               "ts": u.start_s * 1e6, "dur": (u.end_s - u.start_s) * 1e6,
                               "args": {"request": u.request, "queued_s": u.start_s - u.ready_s}})
    pid = len(result.replicas) + len(kinds)
    # a request's waits for the router and the model, and its reasoning: async spans (they overlap)
    if result.stage_uses is not None or result.router is not None or \
            any(reasoning_tokens(s) for s in result.sequences):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "requests"}})
        spans = [(s, "queued for the model", s.ready_s, s.admitted_s) for s in result.sequences]
        spans += [(s, "reasoning", s.first_token_s, a) for s, a in zip(result.sequences, answer_start_s(result))
                  if reasoning_tokens(s)]
        spans += [(s, "queued for the router", s.ready_s, s.admitted_s) for s in
                  (result.router.sequences if result.router is not None else ())]
        for seq, name, begin, end in spans:
            common = {"name": name, "cat": "request", "pid": pid, "tid": 0, "id": seq.request.id}
            events.append({**common, "ph": "b", "ts": begin * 1e6, "args": {"request": seq.request.id}})
            events.append({**common, "ph": "e", "ts": end * 1e6})
        pid += 1
    if result.router is not None:
        replica_iterations(result.router.replicas, pid, "router replica")
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def stage_report(uses: list[StageUse], servers: dict[str, int], duration_s: float) -> dict[str, Any]:
    """Per resource: servers, stages served, utilisation over the run, queueing
    delay and service time ({p50, p90, p99, mean})."""
    out: dict[str, Any] = {}
    for kind, n in servers.items():
        mine = [u for u in uses if u.kind == kind]
        wait = np.array([u.start_s - u.ready_s for u in mine])
        service = np.array([u.end_s - u.start_s for u in mine])
        out[kind] = {
            "servers": n,
            "stages": len(mine),
            "utilization": float(service.sum() / (n * duration_s)) if duration_s > 0 else 0.0,
            "queueing_delay_s": summary(wait),
            "service_s": summary(service),
        }
    return out


def reasoning_tokens(seq) -> int:
    return sum(st.decoded_tokens for st in seq.request.stages if st.kind == "reasoning")


def answer_start_s(result: RunResult) -> list[float]:
    """When each sequence's first answer token came: the token after its
    reasoning (the first token when it does not reason). Token 0 comes with the
    prefill, the others with decode iterations, `rate` per iteration."""
    ends = [r.decode_end_s for r in result.replicas]
    out = []
    for seq in result.sequences:
        thought = reasoning_tokens(seq)
        if not thought:
            out.append(seq.first_token_s)
            continue
        rate = result.replicas[seq.segments[-1][0]].rate if seq.segments else 1.0
        iteration = math.ceil(thought / rate)  # the decode iteration that gives token `thought`
        when = seq.finish_s
        for replica, first, last in seq.segments:
            if iteration <= last - first + 1:
                when = ends[replica][first + iteration - 1]
                break
            iteration -= last - first + 1
        out.append(when)
    return out


def router_report(router: RunResult, duration_s: float) -> dict[str, Any]:
    """The router model's replicas as a stage: a decision's wait from its
    request reaching them to its prefill, and its prefill + decode after that."""
    seqs = router.sequences
    busy = sum(r.busy_s for r in router.replicas)
    return {
        "servers": len(router.replicas),
        "stages": len(seqs),
        "utilization": float(busy / (len(router.replicas) * duration_s)) if duration_s > 0 else 0.0,
        "queueing_delay_s": summary(np.array([s.admitted_s - s.ready_s for s in seqs])),
        "service_s": summary(np.array([s.finish_s - s.admitted_s for s in seqs])),
    }


def model_stage_report(result: RunResult, duration_s: float) -> dict[str, Any]:
    """The answering model as a stage: its replicas as servers, a request's wait
    from reaching the router (after the stages before it) to its first prefill
    chunk, and the replicas' busy share."""
    wait = np.array([s.admitted_s - s.ready_s for s in result.sequences])
    busy = sum(r.busy_s for r in result.replicas)
    return {
        # a replica runs as pp x ep engines (cluster.run): its busy share is theirs
        "servers": len({r.physical for r in result.replicas}),
        "stages": len(result.sequences),
        "utilization": float(busy / (len(result.replicas) * duration_s)) if duration_s > 0 else 0.0,
        "queueing_delay_s": summary(wait),
    }


def reasoning_report(result: RunResult) -> dict[str, Any]:
    """Reasoning decoded on the model's replicas: tokens thought, how many hit
    their budget, and the time from the first (thinking) token to the first
    answer token."""
    stages = [st for s in result.sequences for st in s.request.stages if st.kind == "reasoning"]
    reasoning = [s for s in result.sequences if reasoning_tokens(s)]
    answers = dict(zip(map(id, result.sequences), answer_start_s(result)))
    return {
        "stages": len(stages),
        "tokens": summary(np.array([st.decoded_tokens for st in stages], dtype=float)),
        "cut_by_budget": sum(1 for st in stages if st.budget and st.amount > st.budget),
        "reasoning_s": summary(np.array([answers[id(s)] - s.first_token_s for s in reasoning])),
        "time_to_answer_s": summary(np.array([answers[id(s)] - s.request.arrival_s for s in reasoning])),
    }


def tier_report(result: RunResult, scheduler) -> list[dict[str, Any]]:
    """Per --kv-tier level, over the replicas: its capacity, peak use, the prefix
    tokens it served back to HBM and the seconds those copies took."""
    out = []
    for i, tier in enumerate(scheduler.kv_tiers):
        levels = [r.kv.tiers[i] for r in result.replicas if r.kv.tiers]
        block_bytes = result.replicas[0].kv.block_bytes
        out.append({
            "name": tier.name,
            "capacity_bytes_per_gpu": tier.capacity_bytes,
            "bandwidth_bytes_per_s": tier.bandwidth,
            "latency_s": tier.latency_s,
            "peak_bytes_per_gpu": max(lv.peak for lv in levels) * block_bytes,
            "hit_tokens": sum(lv.hit_blocks for lv in levels) * scheduler.block_size,
            "fetch_s": sum(lv.fetch_s for lv in levels),
        })
    return out
