"""`serve(...)`: `charon serve` as a function returning the report dict.

    from charon_ir.serving import serve
    report = serve("llama-3.1-70b", hardware="H100-SXM5-80GB", tp=8,
                   rate=4, num_requests=1000, input_len=1024, output_len=256)
    report["ttft_s"]["p99"]

Requests come from exactly one source: `batch` (a static batch), `rate` with
`num_requests` (Poisson arrivals, lengths from `length_distribution`), or
`trace` (a JSONL file). The replica's step latency is built once through the
compiler pipeline (latency.py); the scheduler then runs in plain Python.
"""

from __future__ import annotations

from collections import Counter

import json
import math
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError
from charon_ir.frontend import load_config
from charon_ir.report.energy import serving_energy
from charon_ir.report.output import atomic_output, check_output_file
from charon_ir.serving import cluster as cluster_sim
from charon_ir.serving import context_parallel as cp
from charon_ir.serving import metrics as m
from charon_ir.serving.kv_cache import merge_kv_tiers, parse_kv_tiers
from charon_ir.serving.latency import ReplicaShape, StepTimeModel, step_model
from charon_ir.serving.requests import (
    MAX_RETRIEVAL_DOCUMENTS,
    MAX_SAMPLED_TOKENS,
    STAGE_KINDS,
    Request,
    Stage,
    check_length_distribution,
    poisson,
    read_trace,
    static_batch,
)
from charon_ir.serving.scheduler import SchedulerConfig
from charon_ir.target.cluster import CpuNodes, KVTier, default_nics, load_cluster
from charon_ir.target.hardware import load_gpu
from charon_ir.serving.stages import StageModel, parse_stage_servers

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default share of HBM the engine may use (the rest: CUDA context, NCCL,
fragmentation)."""


@dataclass(frozen=True)
class ServingConfig:
    """One serving run; the CLI's flags, one field each."""

    model: str
    hardware: str = "H100-SXM5-80GB"
    tp: int = 1
    pp: int = 1
    ep: int = 1
    precision: str = "bf16"
    attention_kernel: str = "fused"
    input_len: int = 1024
    output_len: int = 256
    batch: int = 0
    rate: float = 0.0
    num_requests: int = 0
    trace: str = ""
    length_distribution: str = "fixed"
    length_spread: float = 0.5
    prefix_tokens: int = 0
    prefix_groups: int = 0
    stages: tuple[str, ...] = ()
    """Stages added to every generated request, e.g. ("retrieval:8", "reasoning:1024")."""
    kv_tiers: tuple[str, ...] = ()
    """Levels below HBM for evicted prefix-cache blocks, e.g. ("dram:64:50", "ssd:1024:6")
    (NAME:GIB:GBS[:US] per GPU, kv_cache.parse_kv_tiers)."""
    reasoning_budget: int = 0
    """The most tokens a reasoning stage decodes (0: none); a trace stage's own
    'budget' is kept when tighter."""
    router_model: str = ""
    """A small model that reads every prompt and decides before the large one
    answers: a `routing` stage on servers of its own (`routing=N` in
    stage_servers, default 1), each a replica of it on one `hardware` GPU."""
    router_tokens: int = 1
    """Tokens the router decodes per decision."""
    retrieval_cost: str = ""
    """BASE_MS:PER_DOCUMENT_MS of one retrieval on a vector-DB server ("": the
    StageModel defaults, 2 ms + 0.4 ms a document)."""
    cluster: str = ""
    """A .cluster file or preset: its `kv_tier` blocks are the KV levels below
    HBM (`kv_tiers` flags replace a level of the same name), its GPU the
    `hardware` unless that is given."""
    stage_servers: tuple[str, ...] = ()
    """Resource stages' server pools, e.g. ("retrieval=4,remote_kv=1",): their
    stages queue first come, first served (none: each stage runs at once)."""
    replicas: int = 1
    router: str = "round-robin"
    prefill_replicas: int = 0
    decode_replicas: int = 0
    decode_hardware: str = ""
    """The GPU of the decode replicas of a disaggregated deployment ("" : `hardware`)."""
    prefill_kind: str = ""
    decode_kind: str = ""
    """On a cluster of several node kinds: the kinds (`node` labels) the prefill and
    the decode replicas run on ("": the first kind, the second)."""
    policy: str = ""
    """continuous | static; default static with --batch, continuous otherwise."""
    block_size: int = 16
    max_batch_tokens: int = 8192
    max_num_seqs: int = 0
    """0: 256, or the batch size of a static batch."""
    chunked_prefill: bool = True
    preemption: str = "recompute"
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    speculative_k: int = 0
    acceptance_rate: float = 0.7
    draft_model: str = ""
    slo_ttft: float = 0.0
    slo_tpot: float = 0.0
    seed: int = 0
    batch_overhead_s: float = 0.0
    """API only (no CLI flag): see SchedulerConfig.batch_overhead_s."""
    cp_policy: tuple[str, ...] = ()
    """Context parallelism per request (context_parallel.py): each policy is run
    on the same requests; the first one's metrics are the report's."""
    cp_mode: str = "ring"
    cp_kv: str = "distributed"
    cp_ranks: int = 0
    """cp ranks (tp x pp GPUs each) of the replica; 0: the policy's largest degree."""

    def requests(self) -> list[Request]:
        sources = [bool(self.batch), bool(self.rate or self.num_requests), bool(self.trace)]
        if sum(sources) != 1:
            raise CharonError("give one request source: --batch, --rate/--num-requests, or --trace")
        # whichever source is used: a typo is an error, not a setting ignored
        check_length_distribution(self.length_distribution, self.length_spread)
        if self.length_distribution != "fixed" and not (self.rate or self.num_requests):
            raise CharonError(f"--length-dist {self.length_distribution}: lengths are drawn for the "
                              "requests --rate sends; a static --batch has --input-len and --output-len, "
                              "a --trace its own")
        if self.trace:
            if self.stages or self.prefix_tokens or self.prefix_groups:
                raise CharonError(
                    "--stage and --prefix-* describe generated requests; a --trace file "
                    "gives each request's own 'stages' and 'prefix_id'"
                )
            requests = read_trace(self.trace)
        elif self.batch:
            requests = static_batch(self.batch, self.input_len, self.output_len)
        else:
            if not self.num_requests:
                raise CharonError(f"--rate needs --num-requests >= 1 (the requests it sends), "
                                  f"got {self.num_requests}")
            requests = poisson(self.rate, self.num_requests, self.input_len, self.output_len,
                               self.seed, self.length_distribution, self.length_spread)
        if not self.trace:
            self._decorate(requests)
        return requests

    def _decorate(self, requests: list[Request]) -> None:
        stages = [_stage_option(text) for text in self.stages]
        longest_prompt = max(r.input_tokens for r in requests)
        for text, stage in zip(self.stages, stages):
            # the fetched KV is the prompt's own: more of it would be cut to the prompt unseen
            if stage.kind == "remote_kv" and stage.amount > longest_prompt:
                raise CharonError(f"--stage '{text}': fetches the KV of {stage.amount} prompt tokens, "
                                  f"more than the longest prompt ({longest_prompt} tokens)")
        if self.prefix_tokens < 0 or self.prefix_groups < 0:
            raise CharonError("--prefix-tokens and --prefix-groups must be >= 0")
        if bool(self.prefix_tokens) != bool(self.prefix_groups):
            raise CharonError("--prefix-tokens and --prefix-groups go together (shared prefixes of "
                              "that many tokens, over that many groups)")
        if self.prefix_tokens > self.input_len:  # as a trace's 'prefix_tokens' > 'input_tokens'
            raise CharonError(f"--prefix-tokens {self.prefix_tokens} exceeds --input-len {self.input_len}")
        for r in requests:
            r.stages = list(stages)
            if self.prefix_tokens and self.prefix_groups:
                r.prefix_id = f"prefix-{r.id % self.prefix_groups}"
                r.prefix_tokens = min(self.prefix_tokens, r.input_tokens)

    def scheduler(self) -> SchedulerConfig:
        policy = self.policy or ("static" if self.batch else "continuous")
        max_seqs = self.max_num_seqs or (self.batch if policy == "static" and self.batch else 256)
        return SchedulerConfig(
            policy=policy,
            block_size=self.block_size,
            max_batch_tokens=self.max_batch_tokens,
            max_num_seqs=max_seqs,
            chunked_prefill=self.chunked_prefill,
            preemption=self.preemption,
            speculative_k=self.speculative_k,
            acceptance_rate=self.acceptance_rate,
            batch_overhead_s=self.batch_overhead_s,
            kv_tiers=merge_kv_tiers(self.declared_kv_tiers(), parse_kv_tiers(self.kv_tiers)),
        )

    def declared_cpu_nodes(self) -> tuple[CpuNodes, ...]:
        return load_cluster(self.cluster).cpu_nodes if self.cluster else ()

    def declared_kv_tiers(self) -> tuple[KVTier, ...]:
        if not self.cluster:
            return ()
        return load_cluster(self.cluster).kv_tiers

    def shape(self) -> ReplicaShape:
        return ReplicaShape(self.model, self.hardware, self.tp, self.pp, self.ep, self.precision,
                            self.attention_kernel)


@dataclass(frozen=True)
class MemoryPlan:
    weights: float
    workspace: float
    kv_capacity: float
    kv_blocks: int
    block_bytes: float


def plan_memory(model: StepTimeModel, config: ServingConfig, scheduler: SchedulerConfig,
                requests: list[Request], draft: StepTimeModel | None = None) -> MemoryPlan:
    """KV capacity of a replica's GPU = HBM x utilisation - weights - the
    activation workspace of the largest step. A draft model adds its weights,
    and its KV to every block."""
    if not 0.0 < config.gpu_memory_utilization <= 1.0:
        raise CharonError("--gpu-memory-utilization must be in (0, 1]")
    if scheduler.policy == "static":
        step_tokens = min(scheduler.max_num_seqs, len(requests)) * max(r.input_tokens for r in requests)
    else:
        step_tokens = scheduler.max_batch_tokens
    workspace = model.workspace_bytes_per_token * step_tokens
    usable = model.hbm_bytes * config.gpu_memory_utilization
    weights = model.weight_bytes_per_gpu + (draft.weight_bytes_per_gpu if draft else 0.0)
    capacity = usable - weights - workspace
    gib = 2**30
    shape = model.shape
    if capacity <= 0:
        raise CharonError(
            f"{shape.model} does not fit on {shape.hardware} with tp={shape.tp} pp={shape.pp}: "
            f"weights {weights / gib:.1f} GiB + workspace {workspace / gib:.1f} GiB "
            f"per GPU exceed {usable / gib:.1f} GiB usable"
        )
    kv_per_token = model.kv_bytes_per_token_per_gpu + (draft.kv_bytes_per_token_per_gpu if draft else 0.0)
    block_bytes = scheduler.block_size * kv_per_token
    return MemoryPlan(weights, workspace, capacity, int(capacity // block_bytes), block_bytes)


def _stage_option(text: str) -> Stage:
    """One `--stage KIND[:N]`: N documents a retrieval fetches, or tokens of KV a
    remote_kv fetches, or hidden tokens a reasoning decodes (stages.py); 0 without N."""
    kind, colon, amount = text.partition(":")
    shown = text if len(text) <= 60 else f"{text[:57]}..."
    # a bare KIND is the stage's base latency alone (N = 0), as a trace stage without a count
    if kind not in STAGE_KINDS or colon and not (amount.isascii() and amount.isdigit()):
        raise CharonError(
            f"--stage '{shown}': expected KIND[:N] with KIND one of {', '.join(STAGE_KINDS)} and N a "
            "count (retrieval:DOCS, remote_kv:TOKENS, reasoning:TOKENS)"
        )
    amount = amount or "0"
    limit, what = ((MAX_RETRIEVAL_DOCUMENTS, "documents") if kind == "retrieval"
                   else (int(MAX_SAMPLED_TOKENS), "tokens"))  # as a trace's token counts
    count = int(amount) if len(amount) <= 18 else math.inf  # int() refuses 4,300 digits
    if count > limit:
        raise CharonError(f"--stage '{shown}': N must be at most {limit:,} {what}")
    return Stage(kind, int(count))


def _check_context(model: str, requests: list[Request], stages: tuple[str, ...] = ()) -> None:
    _, model_config = load_config(model)
    limit = int(model_config.get("max_position_embeddings") or 0)
    longest = max(requests, key=lambda r: r.input_tokens + r.output_tokens + sum(
        s.decoded_tokens for s in r.stages if s.kind == "reasoning"))
    reasoning = sum(s.decoded_tokens for s in longest.stages if s.kind == "reasoning")
    tokens = longest.input_tokens + longest.output_tokens + reasoning
    # the stage is to blame only when the request fits without it
    if limit and tokens > limit and reasoning and not longest.source and tokens - reasoning <= limit:
        flags = " ".join(f"--stage '{t}'" for t in stages if t.startswith("reasoning:"))
        raise CharonError(
            f"{flags}: request {longest.id} would hold {tokens} tokens ({longest.input_tokens} prompt "
            f"+ {longest.output_tokens} output + {reasoning} reasoning), more than the {limit}-token "
            f"context of {model}"
        )
    if limit and tokens > limit:
        raise CharonError(
            f"{longest.source or f'request {longest.id}'}: {tokens} tokens, more than the "
            f"{limit}-token context of {model}"
        )


def _stage_model(config: ServingConfig, scheduler: SchedulerConfig, requests: list[Request]) -> StageModel:
    """The stages' costs: KV tiers, --retrieval-cost."""
    model = StageModel.over(scheduler.kv_tiers)
    if not config.retrieval_cost:
        return model
    if not any(s.kind == "retrieval" for r in requests for s in r.stages):
        raise CharonError("--retrieval-cost prices retrieval stages, and no request has one "
                          "(--stage retrieval:DOCS, or a trace's {\"kind\": \"retrieval\"})")
    shown = config.retrieval_cost[:60]
    base, colon, per_document = config.retrieval_cost.partition(":")
    try:
        base_ms, per_document_ms = float(base), float(per_document)
    except ValueError:
        base_ms = per_document_ms = -1.0
    if not colon or not (0 <= base_ms <= 1e6 and 0 <= per_document_ms <= 1e6):
        raise CharonError(f"--retrieval-cost '{shown}': expected BASE_MS:PER_DOCUMENT_MS, two numbers of "
                          "milliseconds in 0..1e6 (e.g. 2:0.4)")
    return replace(model, retrieval_base_s=base_ms / 1e3, retrieval_per_document_s=per_document_ms / 1e3)


def _apply_reasoning_budget(budget: int, requests: list[Request]) -> None:
    """Cap every reasoning stage at `budget` tokens (a stage's own budget kept when tighter)."""
    if not budget:
        return
    if not 1 <= budget <= MAX_SAMPLED_TOKENS:
        raise CharonError(f"--reasoning-budget must be in 1..2^31 tokens, got {budget}")
    stages = [s for r in requests for s in r.stages if s.kind == "reasoning"]
    if not stages:
        raise CharonError("--reasoning-budget caps reasoning stages, and no request has one "
                          "(--stage reasoning:TOKENS, or a trace's {\"kind\": \"reasoning\"})")
    for stage in stages:
        stage.budget = min(stage.budget or budget, budget)


MAX_ROUTER_TOKENS = 4096
"""Decision tokens of one routing stage at most: a router emits a label or a
short plan; thousands of tokens are an answer, not a decision."""


def _router_pool(config: ServingConfig, requests: list[Request],
                 stage_servers: dict[str, int]) -> cluster_sim.RouterPool | None:
    """--router-model: `routing` replicas of it (1 unless given) on one GPU each,
    scheduled as the large model's are, and a routing stage after every
    request's others."""
    if not config.router_model:
        if "routing" in stage_servers or config.router_tokens != 1:
            raise CharonError("--stage-servers routing=N and --router-tokens are the router's: "
                              "give --router-model too")
        return None
    if not 1 <= config.router_tokens <= MAX_ROUTER_TOKENS:
        raise CharonError(f"--router-tokens must be in 1..{MAX_ROUTER_TOKENS}, got {config.router_tokens}")
    shape = ReplicaShape(config.router_model, config.hardware, 1, 1, 1, config.precision, config.attention_kernel)
    try:
        _, router_config = load_config(config.router_model)
        router = step_model(shape)
    except CharonError as e:
        raise CharonError(f"--router-model {config.router_model}: {e}") from None
    limit = int(router_config.get("max_position_embeddings") or 0)
    longest = max(r.input_tokens for r in requests)
    if limit and longest + config.router_tokens > limit:
        raise CharonError(f"--router-model {config.router_model}: reads prompts of up to {longest} tokens, "
                          f"more than its {limit}-token context")
    scheduler = SchedulerConfig(block_size=config.block_size, max_batch_tokens=config.max_batch_tokens)
    try:
        memory = plan_memory(router, config, scheduler, requests)
    except CharonError as e:
        raise CharonError(f"--router-model {config.router_model}: {e}") from None
    replicas = stage_servers.setdefault("routing", 1)
    for r in requests:  # last: the router reads the prompt it passes on (retrieved documents included)
        r.stages.append(Stage("routing", config.router_tokens))
    return cluster_sim.RouterPool(router, replicas, memory.kv_blocks, scheduler, config.router_tokens)


def _draft_model(config: ServingConfig, hardware: str = "") -> StepTimeModel | None:
    if not config.speculative_k or not config.draft_model:
        return None
    for tp in (config.tp, 1):
        try:
            return step_model(ReplicaShape(config.draft_model, hardware or config.hardware, tp, 1, 1,
                                           config.precision, config.attention_kernel))
        except CharonError as e:
            if tp == 1:
                raise CharonError(f"--draft-model {config.draft_model}: {e}") from None
    return None


def serve(
    model: str,
    *,
    trace_out: str | Path | None = None,
    timings: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Simulate serving; keyword options are ServingConfig's fields. `timings`
    adds the simulator's own wall-clock seconds (`simulator_wall_s`: building the
    latency model, running the scheduler), which differ run to run: the report is
    otherwise the same byte for byte for the same options."""
    known = {f.name for f in fields(ServingConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise CharonError(f"serve: unknown option(s) {', '.join(unknown)}")
    if str(model).endswith(".mlir"):
        raise CharonError(f"--model {model}: serving builds its prefill and decode steps from a "
                          "bundled name or a config.json, not a hand-written training step")
    if trace_out is not None:
        check_output_file(trace_out, "--trace-out")  # before the run, not after it
    hardware_typed = "hardware" in options
    if options.get("cluster") and "hardware" not in options:
        options["hardware"] = load_cluster(options["cluster"]).gpu.ref
    config = ServingConfig(model=model, **options)
    if config.seed < 0:  # numpy's SeedSequence takes no negative seed
        raise CharonError(f"--seed must be >= 0, got {config.seed}")
    # flags that would otherwise be ignored
    if config.draft_model and not config.speculative_k:
        raise CharonError("--draft-model drafts for speculative decoding: give --speculative-k too")
    if (config.prefill_replicas or config.decode_replicas) and config.replicas != 1:
        raise CharonError("--replicas counts colocated replicas; with --prefill-replicas and "
                          "--decode-replicas (disaggregated) give those alone")
    for flag, slo in (("--slo-ttft", config.slo_ttft), ("--slo-tpot", config.slo_tpot)):
        if not 0 <= slo < math.inf:  # NaN fails too; 0 means no SLO
            raise CharonError(f"{flag} must be a finite number of seconds >= 0, got {slo}")
    deployment = cluster_sim.Deployment(config.replicas, config.prefill_replicas,
                                        config.decode_replicas, config.router)
    deployment.check()
    # before the replicas are built: ten million of them ran out of host memory
    deployment.check_size(config.tp * config.pp * config.ep)
    config, kv_placement = _on_node_kinds(config, deployment, hardware_typed)
    stage_servers = parse_stage_servers(config.stage_servers)
    # the cluster's CPU-only nodes serve their stage, unless --stage-servers sizes it
    for pool in config.declared_cpu_nodes():
        stage_servers.setdefault(pool.role, pool.nodes)
    requests = config.requests()
    _apply_reasoning_budget(config.reasoning_budget, requests)
    _check_context(config.model, requests, config.stages)
    scheduler = config.scheduler()
    scheduler.check()
    if (config.cp_ranks or config.cp_mode != "ring" or config.cp_kv != "distributed") and not config.cp_policy:
        raise CharonError("--cp-ranks, --cp-mode and --cp-kv shape context parallelism: give --cp-policy too")
    if config.cp_policy:
        return _serve_context_parallel(config, requests, scheduler, trace_out, timings)
    start = time.perf_counter()
    router_pool = _router_pool(config, requests, stage_servers)
    latency = step_model(config.shape())
    decode_latency = decode_memory = None
    if config.decode_hardware:
        if not deployment.disaggregated:
            raise CharonError("--decode-hardware places the decode replicas of a disaggregated "
                              "deployment: give --prefill-replicas and --decode-replicas too")
        decode_latency = step_model(replace(config.shape(), hardware=config.decode_hardware))
    # speculative decoding drafts on the decode replicas' GPUs
    draft = _draft_model(config, config.decode_hardware)
    built = time.perf_counter()
    memory = plan_memory(latency, config, scheduler, requests, draft)
    if decode_latency is not None:
        decode_memory = plan_memory(decode_latency, config, scheduler, requests, draft)
    result = cluster_sim.run(
        requests, latency, scheduler, deployment, memory.kv_blocks, draft, _stage_model(config, scheduler, requests),
        record_iterations=trace_out is not None, hardware=config.hardware,
        decode_model=decode_latency, decode_kv_blocks=decode_memory.kv_blocks if decode_memory else 0,
        stage_servers=stage_servers, kv_placement=kv_placement, router_pool=router_pool,
    )
    simulated = time.perf_counter()
    report = build_report(config, scheduler, latency, memory, result)
    if decode_memory is not None:
        report["decode_memory"] = {
            "hardware": decode_latency.shape.hardware,  # pyright: ignore[reportOptionalMemberAccess]
            "weights_bytes_per_gpu": int(decode_memory.weights),
            "kv_capacity_bytes_per_gpu": int(decode_memory.kv_capacity),
            "kv_blocks_per_replica": decode_memory.kv_blocks,
        }
        report["config"]["decode_hardware"] = config.decode_hardware
        for r in report["replicas"]:
            r["hardware"] = config.decode_hardware if r["role"] == "decode" else config.hardware
    if kv_placement is not None:
        report["config"]["node_kinds"] = {"prefill": config.prefill_kind, "decode": config.decode_kind}
    if scheduler.kv_tiers:
        report["kv_tiers"] = m.tier_report(result, scheduler)
    if stage_servers or any(r.stages for r in requests):
        # every stage a request crosses: the resources', the answering model's
        # queue, and the reasoning it decodes
        queued = {kind: n for kind, n in stage_servers.items() if kind != "routing"}
        stages = m.stage_report(result.stage_uses or [], queued, report["duration_s"])
        if result.router is not None:
            stages["routing"] = m.router_report(result.router, report["duration_s"])
            stages["routing"]["model"] = config.router_model
            report["config"].update(router_model=config.router_model, router_tokens=config.router_tokens)
        if config.reasoning_budget:
            report["config"]["reasoning_budget"] = config.reasoning_budget
        stages["llm"] = m.model_stage_report(result, report["duration_s"])
        if any(s.kind == "reasoning" for r in requests for s in r.stages):
            stages["reasoning"] = m.reasoning_report(result)
        report["stages"] = stages
    report.update(_energy(config, report))
    if timings:
        report["simulator_wall_s"] = {"latency_model": built - start, "scheduler": simulated - built}
    if trace_out is not None:
        _write_json(Path(trace_out), m.chrome_trace(result))
    return report


def _serve_context_parallel(config: ServingConfig, requests: list[Request], scheduler: SchedulerConfig,
                            trace_out: str | Path | None, timings: bool) -> dict[str, Any]:
    """`--cp-policy`: a pool of cp ranks per replica, groups formed per request
    (context_parallel.py); each policy runs on the same requests."""
    given = [flag for flag, on in (
        ("--replicas", config.replicas != 1), ("--prefill-replicas/--decode-replicas",
                                               bool(config.prefill_replicas or config.decode_replicas)),
        ("--ep", config.ep != 1), ("--speculative-k", bool(config.speculative_k)),
        ("--policy static", config.policy == "static"), ("--stage", bool(config.stages)),
        ("--prefix-tokens", bool(config.prefix_tokens)), ("--trace-out", trace_out is not None),
        ("--stage-servers", bool(config.stage_servers)), ("--kv-tier", bool(config.kv_tiers)),
        ("--router-model", bool(config.router_model)), ("--reasoning-budget", bool(config.reasoning_budget)),
        ("--retrieval-cost", bool(config.retrieval_cost)),
        ("--trace stages or prefixes", any(r.stages or r.prefix_id for r in requests)),
    ) if on]
    if given:
        raise CharonError(f"--cp-policy simulates one replica's pool of cp ranks with continuous batching; "
                          f"it does not take {', '.join(given)}")
    cp.check_options(config.cp_mode, config.cp_kv)
    scheduler = replace(scheduler, policy="continuous")  # a --batch is requests at t=0 here
    if config.cp_ranks < 0:
        raise CharonError(f"--cp-ranks must be >= 0, got {config.cp_ranks}")
    policies = [cp.CPPolicy.parse(text, config.cp_ranks) for text in config.cp_policy]
    start = time.perf_counter()
    latency = step_model(config.shape())
    memory = plan_memory(latency, config, scheduler, requests)
    _, model = load_config(config.model)
    context = int(model.get("max_position_embeddings") or 0)
    capacity = memory.kv_blocks * scheduler.block_size
    runs = [cp.simulate_policy(p, requests, latency, config.cp_ranks, capacity, config.cp_mode, config.cp_kv, context)
            for p in policies]
    simulated = time.perf_counter()
    first = runs[0]
    pool, first_metrics = first.pop("_pool"), first.pop("_metrics")
    for run in runs[1:]:
        run.pop("_pool")
        run.pop("_metrics")
    per_rank = latency.shape.gpus
    duration = first["duration_s"]
    output_tokens = sum(r.output_tokens for r in requests)
    input_tokens = sum(r.input_tokens for r in requests)
    report: dict[str, Any] = {
        "ttft_s": first["ttft_s"], "tpot_s": first["tpot_s"], "itl_s": first["tpot_s"],
        "e2e_s": first["e2e_s"],
        "throughput_tokens_per_s": output_tokens / duration if duration > 0 else 0.0,
        "throughput_tokens_per_s_per_gpu": output_tokens / duration / first["gpus"] if duration > 0 else 0.0,
        "total_tokens_per_s": (output_tokens + input_tokens) / duration if duration > 0 else 0.0,
        "requests_per_s": len(requests) / duration if duration > 0 else 0.0,
        "requests": len(requests), "input_tokens": input_tokens, "output_tokens": output_tokens,
        "duration_s": duration,
        "goodput": m.goodput(first_metrics, duration, config.slo_ttft, config.slo_tpot),
        "peak_memory_bytes": int(memory.weights + memory.workspace
                                 + max(r.peak_kv for r in pool.ranks) * latency.kv_bytes_per_token_per_gpu),
        "memory": {
            "weights_bytes_per_gpu": int(memory.weights),
            "workspace_bytes_per_gpu": int(memory.workspace),
            "kv_capacity_bytes_per_gpu": int(memory.kv_capacity),
            "kv_tokens_per_rank": capacity,
            "kv_bytes_per_token_per_gpu": latency.kv_bytes_per_token_per_gpu,
        },
        "replicas": [
            {"index": r.index, "physical_replica": 0, "role": "both", "gpus": per_rank,
             "iterations": r.iterations, "busy_s": r.decode_busy_s + r.prefill_busy_s,
             "prefill_busy_s": r.prefill_busy_s, "decode_busy_s": r.decode_busy_s,
             "utilization": (r.decode_busy_s + r.prefill_busy_s) / duration if duration > 0 else 0.0}
            for r in pool.ranks
        ],
        "context_parallel": runs,
        "config": {
            "model": config.model, "hardware": config.hardware, "tp": config.tp, "pp": config.pp,
            "precision": config.precision, "policy": scheduler.policy, "cp_policy": list(config.cp_policy),
            "cp_mode": config.cp_mode, "cp_kv": config.cp_kv, "seed": config.seed,
            "replicas": 1, "cp_ranks": first["ranks"],
        },
    }
    report.update(_energy(config, report))
    if timings:
        report["simulator_wall_s"] = {"simulation": simulated - start}
    return report


def _on_node_kinds(config: ServingConfig, deployment: cluster_sim.Deployment, hardware_typed: bool
                   ) -> tuple[ServingConfig, cluster_sim.KVPlacement | None]:
    """On a cluster of several node kinds, a disaggregated deployment: the prefill
    replicas on one kind's GPUs, the decode replicas on another's, the KV handed
    over across the slower kind's links. Returns the config with both GPUs set
    and where the replicas' GPUs sit (None on one kind of GPU)."""
    named = [flag for flag, kind in (("--prefill-kind", config.prefill_kind),
                                     ("--decode-kind", config.decode_kind)) if kind]
    cluster = load_cluster(config.cluster) if config.cluster else None
    if cluster is None or not cluster.heterogeneous:
        if named:
            raise CharonError(f"{named[0]} names a node kind of a cluster of several "
                              "(--cluster FILE with labelled node blocks)")
        return config, None
    kinds = cluster.kind_names()
    if not deployment.disaggregated:
        raise CharonError(f"cluster '{cluster.name}' has node kinds {', '.join(kinds)}: serve on it "
                          "disaggregated (--prefill-replicas, --decode-replicas), each role on a kind "
                          "(--prefill-kind, --decode-kind)")
    if config.decode_hardware:
        raise CharonError("--decode-hardware with a cluster of several node kinds: the decode "
                          "replicas take their kind's GPU (--decode-kind)")
    prefill, decode = config.prefill_kind or kinds[0], config.decode_kind or kinds[1]
    for flag, kind in (("--prefill-kind", prefill), ("--decode-kind", decode)):
        if kind not in kinds:
            raise CharonError(f"{flag} {kind}: cluster '{cluster.name}' has node kinds {', '.join(kinds)}")
    prefill_gpu = cluster.kind(prefill).gpu
    if hardware_typed and load_gpu(config.hardware).name != prefill_gpu.name:
        raise CharonError(f"--hardware {config.hardware} is not the GPU of node kind '{prefill}' of "
                          f"cluster '{cluster.name}' ({prefill_gpu.name}), where the prefill replicas run")
    per_replica = config.tp * config.pp * config.ep
    ranks: list[int] = []
    for role, kind, count in (("prefill", prefill, deployment.prefill_replicas),
                              ("decode", decode, deployment.decode_replicas)):
        need = count * per_replica
        own = _kind_ranks(cluster, kind, need)
        if len(own) < need:
            raise CharonError(f"{count} {role} replicas of {per_replica} GPUs need {need} GPUs but node "
                              f"kind '{kind}' of cluster '{cluster.name}' has {len(own)}")
        ranks += own
    config = replace(config, hardware=prefill_gpu.ref, decode_hardware=cluster.kind(decode).gpu.ref,
                     prefill_kind=prefill, decode_kind=decode)
    return config, cluster_sim.KVPlacement(cluster.slowest_view((prefill, decode)), tuple(ranks))


def _kind_ranks(cluster, kind: str, limit: int) -> list[int]:
    """The first `limit` ranks (node-major) on nodes of `kind`."""
    ranks: list[int] = []
    start = 0
    for run in cluster.kinds:
        size = run.nodes * cluster.gpus_per_node
        if run.name == kind:
            ranks += range(start, start + min(size, limit - len(ranks)))
        start += size
    return ranks


def _energy(config: ServingConfig, report: dict[str, Any]) -> dict[str, Any]:
    """energy_j, tokens_per_joule (output tokens) and the split (report.energy)."""
    gpu = load_gpu(config.hardware)
    decode_gpu = load_gpu(config.decode_hardware) if config.decode_hardware else gpu
    _, model = load_config(config.model)
    derived = model.get("_derived") or {}
    # a token's forward: 2 FLOPs per parameter it passes (the activated ones of a MoE)
    params = float(derived.get("activated_params_per_token") or derived.get("total_params") or 0)
    nics = default_nics(gpu, gpu.gpus_per_node).count / gpu.gpus_per_node
    return serving_energy(report, lambda role: decode_gpu if role == "decode" else gpu, nics, 2.0 * params)


def build_report(config: ServingConfig, scheduler: SchedulerConfig, latency: StepTimeModel,
                 memory: MemoryPlan, result: cluster_sim.RunResult) -> dict[str, Any]:
    metrics = m.latency_metrics(result)
    duration = result.makespan_s - result.first_arrival_s
    peak_kv_blocks = max(r.kv.peak for r in result.replicas)
    gpus_per_replica = latency.shape.gpus
    n_replicas = len({r.physical for r in result.replicas})
    engines_on = Counter(r.physical for r in result.replicas)
    out_tokens = metrics["output_tokens"]
    return {
        "ttft_s": m.summary(metrics["ttft"]),
        "tpot_s": m.summary(metrics["tpot"]),
        "itl_s": m.summary(metrics["itl"]),
        "e2e_s": m.summary(metrics["e2e"]),
        "throughput_tokens_per_s": out_tokens / duration if duration > 0 else 0.0,
        "peak_memory_bytes": int(memory.weights + memory.workspace + peak_kv_blocks * memory.block_bytes),
        "throughput_tokens_per_s_per_gpu":
            out_tokens / duration / (gpus_per_replica * n_replicas) if duration > 0 else 0.0,
        "total_tokens_per_s": (out_tokens + metrics["input_tokens"]) / duration if duration > 0 else 0.0,
        "requests_per_s": len(result.sequences) / duration if duration > 0 else 0.0,
        "requests": len(result.sequences),
        "input_tokens": metrics["input_tokens"],
        "output_tokens": out_tokens,
        "duration_s": duration,
        "goodput": m.goodput(metrics, duration, config.slo_ttft, config.slo_tpot),
        "kv_utilization": m.kv_utilization(result),
        "memory": {
            "weights_bytes_per_gpu": int(memory.weights),
            "workspace_bytes_per_gpu": int(memory.workspace),
            "kv_capacity_bytes_per_gpu": int(memory.kv_capacity),
            "kv_blocks_per_replica": memory.kv_blocks,
            "block_size": scheduler.block_size,
            "kv_bytes_per_token_per_gpu": latency.kv_bytes_per_token_per_gpu,
        },
        "replicas": [
            {
                "index": r.index,
                "physical_replica": r.physical,
                "role": r.role,
                # a pipelined replica runs as pp engines: its GPUs are split among them
                "gpus": gpus_per_replica // engines_on[r.physical],
                "iterations": r.iterations,
                "busy_s": r.busy_s,
                "utilization": r.busy_s / duration if duration > 0 else 0.0,
                "requests_finished": len(r.finished),
                "preemptions": r.preemptions,
                "peak_kv_blocks": r.kv.peak,
            }
            for r in result.replicas
        ],
        "preemptions": sum(r.preemptions for r in result.replicas),
        "config": {
            "model": config.model, "hardware": config.hardware, "tp": config.tp, "pp": config.pp,
            "ep": config.ep, "precision": config.precision, "attention_kernel": config.attention_kernel, "policy": scheduler.policy,
            "chunked_prefill": scheduler.chunked_prefill, "max_batch_tokens": scheduler.max_batch_tokens,
            "max_num_seqs": scheduler.max_num_seqs, "preemption": scheduler.preemption,
            "speculative_k": scheduler.speculative_k,
            "tokens_per_decode_step": scheduler.tokens_per_decode, "seed": config.seed,
            "replicas": n_replicas, "router": config.router,
            "disaggregated": bool(config.prefill_replicas or config.decode_replicas),
        },
    }


def _write_json(path: Path, data: Any) -> None:
    with atomic_output(path, ".tmp") as tmp, open(tmp, "w") as f:
        json.dump(data, f)
