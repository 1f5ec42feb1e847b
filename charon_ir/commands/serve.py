"""`charon serve`: predict TTFT, TPOT, ITL, E2E and throughput of LLM serving
(DESIGN.md section 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from charon_ir.commands import on_command_line
from charon_ir.errors import CharonError
from charon_ir.serving import serve
from charon_ir.target.hardware import with_power_cap

Opt = typer.Option


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)


def serve_command(
    ctx: typer.Context,
    model: Annotated[str, Opt("--model", help="bundled name, config.json or a model folder; vllm:NAME for vLLM's model class of it (CHARON_VLLM_PYTHON)")],
    hardware: Annotated[str, Opt("--hardware", help="GPU: a name (H100-SXM5-80GB), a GPU file (.toml) or a variant (H100:hbm_bw=6.7e12); with --cluster: the cluster's")] = "H100-SXM5-80GB",
    cluster: Annotated[str, Opt("--cluster", help="a .cluster file or preset: its kv_tier blocks are the KV levels below HBM (--kv-tier replaces one)")] = "",
    power_cap: Annotated[float, Opt("--power-cap", help="board power limit per GPU, W: lower clocks and speed (docs/calibration.md, Energy)")] = 0.0,
    tp: Annotated[int, Opt("--tp", help="tensor parallel per replica")] = 1,
    pp: Annotated[int, Opt("--pp", help="pipeline stages per replica")] = 1,
    ep: Annotated[int, Opt("--ep", help="expert parallel per replica (MoE)")] = 1,
    precision: Annotated[str, Opt("--precision", help="bf16 | fp8 (weights, activations, KV)")] = "bf16",
    attention_kernel: Annotated[str, Opt("--attention-kernel", help="fused (GQA-aware) | per-head (KV read per query head)")] = "fused",
    input_len: Annotated[int, Opt("--input-len", help="prompt tokens (mean with a distribution)")] = 1024,
    output_len: Annotated[int, Opt("--output-len", help="output tokens (mean with a distribution)")] = 256,
    batch: Annotated[int, Opt("--batch", help="a static batch of this many requests at t=0")] = 0,
    rate: Annotated[float, Opt("--rate", help="Poisson arrivals per second (0: all at t=0)")] = 0.0,
    num_requests: Annotated[int, Opt("--num-requests", help="requests of the Poisson source")] = 0,
    trace: Annotated[Path | None, Opt("--trace", help="JSONL trace of requests")] = None,
    length_dist: Annotated[str, Opt("--length-dist", help="fixed | uniform | exponential | lognormal | zipf")] = "fixed",
    length_spread: Annotated[float, Opt("--length-spread", help="CV (lognormal), half-width/mean (uniform), exponent (zipf)")] = 0.5,
    prefix_tokens: Annotated[int, Opt("--prefix-tokens", help="shared prompt prefix tokens (prefix caching)")] = 0,
    prefix_groups: Annotated[int, Opt("--prefix-groups", help="distinct shared prefixes")] = 0,
    stage: Annotated[list[str] | None, Opt("--stage", help="add a stage to every request: retrieval:DOCS, remote_kv:TOKENS, reasoning:TOKENS (repeatable)")] = None,
    kv_tier: Annotated[list[str] | None, Opt("--kv-tier", help="a level below HBM for evicted prefix-cache blocks, per GPU: NAME:CAPACITY_GIB:BANDWIDTH_GBS[:LATENCY_US], NAME dram|ssd|remote, in order (repeatable)")] = None,
    stage_servers: Annotated[list[str] | None, Opt("--stage-servers", help="servers of a resource stage, queued first come first served: retrieval=N,remote_kv=N,routing=N (repeatable)")] = None,
    reasoning_budget: Annotated[int, Opt("--reasoning-budget", help="the most tokens a reasoning stage decodes before the answer starts (0: no cap)")] = 0,
    router_model: Annotated[str, Opt("--router-model", help="a small model that reads every prompt and decides before --model answers (routing servers: --stage-servers routing=N, default 1)")] = "",
    router_tokens: Annotated[int, Opt("--router-tokens", help="tokens the router decodes per decision")] = 1,
    retrieval_cost: Annotated[str, Opt("--retrieval-cost", help="one retrieval on a vector-DB server: BASE_MS:PER_DOCUMENT_MS (default 2:0.4)")] = "",
    replicas: Annotated[int, Opt("--replicas", help="replicas behind the router")] = 1,
    router: Annotated[str, Opt("--router", help="round-robin | least-loaded")] = "round-robin",
    prefill_replicas: Annotated[int, Opt("--prefill-replicas", help="disaggregated prefill replicas")] = 0,
    decode_replicas: Annotated[int, Opt("--decode-replicas", help="disaggregated decode replicas")] = 0,
    decode_hardware: Annotated[str, Opt("--decode-hardware", help="GPU of the decode replicas (disaggregated; default: --hardware)")] = "",
    prefill_kind: Annotated[str, Opt("--prefill-kind", help="with a --cluster of several node kinds: the kind the prefill replicas run on (default: the first)")] = "",
    decode_kind: Annotated[str, Opt("--decode-kind", help="with a --cluster of several node kinds: the kind the decode replicas run on (default: the second)")] = "",
    policy: Annotated[str, Opt("--policy", help="continuous | static (default: static with --batch)")] = "",
    block_size: Annotated[int, Opt("--block-size", help="KV block size, tokens")] = 16,
    max_batch_tokens: Annotated[int, Opt("--max-batch-tokens", help="token budget per iteration")] = 8192,
    max_num_seqs: Annotated[int, Opt("--max-num-seqs", help="sequences per batch (0: 256, or --batch)")] = 0,
    chunked_prefill: Annotated[bool, Opt("--chunked-prefill/--no-chunked-prefill", help="mix prefill chunks with decodes")] = True,
    preemption: Annotated[str, Opt("--preemption", help="recompute | swap")] = "recompute",
    gpu_memory_utilization: Annotated[float, Opt("--gpu-memory-utilization", help="share of HBM the engine uses")] = 0.9,
    speculative_k: Annotated[int, Opt("--speculative-k", help="draft tokens per step (0: off)")] = 0,
    acceptance_rate: Annotated[float, Opt("--acceptance-rate", help="probability a draft token is accepted")] = 0.7,
    draft_model: Annotated[str, Opt("--draft-model", help="draft model (none: a free n-gram drafter)")] = "",
    slo_ttft: Annotated[float, Opt("--slo-ttft", help="TTFT SLO, seconds (goodput)")] = 0.0,
    slo_tpot: Annotated[float, Opt("--slo-tpot", help="TPOT SLO, seconds (goodput)")] = 0.0,
    seed: Annotated[int, Opt("--seed", help="seed of the request source")] = 0,
    cp_policy: Annotated[list[str] | None, Opt("--cp-policy", help="context parallelism per request: fixed:D | by-length:LEN=DEG,... | adaptive[:D] (repeatable: each policy runs on the same requests)")] = None,
    cp_mode: Annotated[str, Opt("--cp-mode", help="ring (zigzag ring attention) | ulysses (all-to-all)")] = "ring",
    cp_ranks: Annotated[int, Opt("--cp-ranks", help="cp ranks of tp x pp GPUs in the replica (0: the policy's largest degree)")] = 0,
    cp_kv: Annotated[str, Opt("--cp-kv", help="distributed (KV stays on the cp ranks) | gather (onto one rank for decode)")] = "distributed",
    as_json: Annotated[bool, Opt("--json", help="print the JSON report")] = False,
    trace_out: Annotated[str | None, Opt("--trace-out", help="write the iterations of every replica as a Chrome/Perfetto trace")] = None,
) -> None:
    """Simulate serving requests on replicas of a model and print the latency report."""
    if cluster and on_command_line(ctx, "power_cap"):
        raise CharonError("--power-cap with --cluster: cap the cluster file's GPU "
                          "(node { gpu = \"H100:power_cap=500\" })")
    # the cluster's GPU unless --hardware is typed (its default would contradict the file)
    chosen = {"hardware": hardware} if not cluster or on_command_line(ctx, "hardware") else {}
    if power_cap:
        chosen["hardware"] = with_power_cap(hardware, power_cap)
    report = serve(
        model,
        trace_out=trace_out,
        **chosen, cluster=cluster, tp=tp, pp=pp, ep=ep, precision=precision,
        attention_kernel=attention_kernel, input_len=input_len, output_len=output_len, batch=batch, rate=rate,
        num_requests=num_requests, trace=str(trace) if trace else "",
        length_distribution=length_dist, length_spread=length_spread,
        prefix_tokens=prefix_tokens, prefix_groups=prefix_groups, stages=tuple(stage or ()), stage_servers=tuple(stage_servers or ()), kv_tiers=tuple(kv_tier or ()),
        reasoning_budget=reasoning_budget, router_model=router_model, router_tokens=router_tokens,
        retrieval_cost=retrieval_cost,
        replicas=replicas, router=router, prefill_replicas=prefill_replicas,
        decode_replicas=decode_replicas, decode_hardware=decode_hardware, prefill_kind=prefill_kind,
        decode_kind=decode_kind, policy=policy, block_size=block_size,
        max_batch_tokens=max_batch_tokens, max_num_seqs=max_num_seqs,
        chunked_prefill=chunked_prefill, preemption=preemption,
        gpu_memory_utilization=gpu_memory_utilization, speculative_k=speculative_k,
        acceptance_rate=acceptance_rate, draft_model=draft_model,
        slo_ttft=slo_ttft, slo_tpot=slo_tpot, seed=seed,
        cp_policy=tuple(cp_policy or ()), cp_mode=cp_mode, cp_kv=cp_kv, cp_ranks=cp_ranks,
    )
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print_summary(report)


def print_summary(report: dict) -> None:
    cfg = report["config"]
    if "context_parallel" in report:
        print_context_parallel(report)
        return
    table = Table(title=f"{cfg['model']} on {cfg['replicas']} x {cfg['tp'] * cfg['pp']} "
                        f"{cfg['hardware']} ({cfg['policy']} batching)")
    table.add_column("metric")
    for col in ("p50", "p90", "p99", "mean"):
        table.add_column(col, justify="right")
    for key, label in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"), ("e2e_s", "E2E")):
        s = report[key]
        table.add_row(f"{label} (ms)", *(f"{s[c] * 1e3:.1f}" for c in ("p50", "p90", "p99", "mean")))
    console = Console()
    console.print(table)
    good = report["goodput"]
    # goodput only means something against an SLO the user gave
    within = (f"; goodput {good['goodput_requests_per_s']:.2f} requests/s "
              f"({good['fraction_meeting_slo'] * 100:.0f}% within SLO)"
              if good["slo_ttft_s"] or good["slo_tpot_s"] else "")
    console.print(
        f"throughput {report['throughput_tokens_per_s']:.0f} output tokens/s "
        f"({report['throughput_tokens_per_s_per_gpu']:.0f} per GPU), "
        f"{report['requests_per_s']:.2f} requests/s over {report['duration_s']:.1f} s{within}"
    )
    kv = report["kv_utilization"]
    console.print(
        f"KV cache: {kv['mean'] * 100:.1f}% mean, {kv['peak'] * 100:.1f}% peak of "
        f"{report['memory']['kv_blocks_per_replica']} blocks; peak memory "
        f"{report['peak_memory_bytes'] / 2**30:.1f} GiB per GPU; {report['preemptions']} preemptions"
    )
    if "stages" in report:
        print_stages(report["stages"], console)


def print_stages(stages: dict, console) -> None:
    """A row per stage a request crosses: its servers' utilisation, the wait in
    its queue and its service (the reasoning row: tokens and thinking time)."""
    table = Table(title="stages")
    for col in ("stage", "servers", "utilisation", "queueing mean (ms)", "queueing p99 (ms)",
                "service mean (ms)"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for name, s in stages.items():
        if name == "reasoning":
            continue
        table.add_row(name, str(s["servers"]), f"{s['utilization'] * 100:.1f}%",
                      f"{s['queueing_delay_s']['mean'] * 1e3:.1f}", f"{s['queueing_delay_s']['p99'] * 1e3:.1f}",
                      f"{s['service_s']['mean'] * 1e3:.1f}" if "service_s" in s else "-")
    console.print(table)
    if "routing" in stages:
        console.print(f"routing: {stages['routing']['model']} reads each prompt on its replicas (one GPU each), batching as the model does")
    if "reasoning" in stages:
        r = stages["reasoning"]
        console.print(f"reasoning: {r['stages']} stages, {r['tokens']['mean']:.0f} tokens mean "
                      f"({r['cut_by_budget']} cut by the budget), {r['reasoning_s']['mean']:.2f} s mean "
                      f"thinking; first answer token {r['time_to_answer_s']['mean']:.2f} s mean, "
                      f"{r['time_to_answer_s']['p99']:.2f} s p99 after arrival")


def print_context_parallel(report: dict) -> None:
    """One row per --cp-policy: degrees used, TTFT/TPOT/E2E, GPU-seconds."""
    cfg = report["config"]
    gpus = cfg["cp_ranks"] * cfg["tp"] * cfg["pp"]
    table = Table(title=f"{cfg['model']} on {cfg['cp_ranks']} cp ranks x {cfg['tp'] * cfg['pp']} "
                        f"{cfg['hardware']} ({gpus} GPUs, {cfg['cp_mode']} attention, {cfg['cp_kv']} KV)")
    for col in ("policy", "degrees", "TTFT mean (s)", "TTFT p99 (s)", "TPOT mean (ms)", "E2E mean (s)",
                "prefill GPU-h", "busy GPU-h"):
        table.add_column(col, justify="left" if col in ("policy", "degrees") else "right")
    for run in report["context_parallel"]:
        table.add_row(run["policy"], " ".join(f"SP{d} x{n}" for d, n in run["degrees"].items()),
                      f"{run['ttft_s']['mean']:.3f}", f"{run['ttft_s']['p99']:.3f}",
                      f"{run['tpot_s']['mean'] * 1e3:.1f}", f"{run['e2e_s']['mean']:.3f}",
                      f"{run['gpu_seconds']['prefill'] / 3600:.3g}", f"{run['gpu_seconds']['busy'] / 3600:.3g}")
    Console().print(table)
