"""Replicas behind a router, optionally split into prefill and decode pools, run
as one discrete-event simulation.

Events are request arrivals (after their pre-model stages) and replica
iterations; the loop always advances whichever comes first (arrivals first on a
tie, replicas in index order), so a run is deterministic. With prefill/decode
disaggregation a prefilled sequence's KV cache travels to a decode replica: the
transfer is priced by the collective planner as TP-parallel point-to-point sends
between the two replicas' GPUs over the cluster's links. A replica with pipeline
parallelism runs as `pp` virtual engines (see `engines`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

from charon_ir.engines.collectives import cached_plan
from charon_ir.errors import CharonError
from charon_ir.serving.latency import StepTimeModel
from charon_ir.serving.requests import Request
from charon_ir.serving.scheduler import Replica, SchedulerConfig, Sequence, StagePipeline
from charon_ir.serving.stages import StageModel, StageUse, apply_stages, schedule_stages
from charon_ir.target.cluster import Cluster, implicit_cluster
from charon_ir.target.hardware import load_gpu

ROUTERS = ("round-robin", "least-loaded")
MAX_GPUS = 2**20
"""GPUs of one simulated deployment at most (1,048,576): five times the largest
clusters built (about 200,000 GPUs). The scheduler holds about 6 KB per engine:
one-GPU replicas at the cap take about 6 GB of host memory and a minute to set
up; ten million of them ran out of memory."""


@dataclass(frozen=True)
class Deployment:
    replicas: int = 1
    """Replicas serving both phases (ignored when disaggregated)."""
    prefill_replicas: int = 0
    decode_replicas: int = 0
    router: str = "round-robin"

    @property
    def disaggregated(self) -> bool:
        return self.prefill_replicas > 0 or self.decode_replicas > 0

    def check(self) -> None:
        if self.router not in ROUTERS:
            raise CharonError(f"--router must be one of {', '.join(ROUTERS)}, got '{self.router}'")
        if self.prefill_replicas < 0 or self.decode_replicas < 0:
            raise CharonError(
                f"--prefill-replicas and --decode-replicas must be >= 0, got "
                f"{self.prefill_replicas} and {self.decode_replicas}"
            )
        if self.disaggregated and (self.prefill_replicas < 1 or self.decode_replicas < 1):
            raise CharonError(
                "disaggregation needs --prefill-replicas and --decode-replicas both >= 1"
            )
        if not self.disaggregated and self.replicas < 1:
            raise CharonError(f"--replicas must be >= 1, got {self.replicas}")

    def check_size(self, gpus_per_replica: int) -> None:
        """At most MAX_GPUS GPUs in all (before any replica is built)."""
        if self.disaggregated:
            replicas = self.prefill_replicas + self.decode_replicas
            given = f"--prefill-replicas {self.prefill_replicas} + --decode-replicas {self.decode_replicas}"
        else:
            replicas, given = self.replicas, f"--replicas {self.replicas}"
        if replicas * gpus_per_replica > MAX_GPUS:
            raise CharonError(
                f"{given}: {replicas:,} replicas x {gpus_per_replica} GPUs (tp x pp x ep) = "
                f"{replicas * gpus_per_replica:,} GPUs, more than the {MAX_GPUS:,} one run simulates"
            )


class Router:
    def __init__(self, replicas: list[Replica], policy: str):
        self.replicas = replicas
        self.policy = policy
        self.next = 0

    def pick(self) -> Replica:
        if self.policy == "round-robin" or len(self.replicas) == 1:
            r = self.replicas[self.next % len(self.replicas)]
            self.next += 1
            return r
        return min(self.replicas, key=lambda r: (r.load, r.kv.used, r.index))


@dataclass(frozen=True)
class KVPlacement:
    """Prefill and decode replicas on a cluster of several node kinds: the
    cluster the handover crosses (its links at the slower kind's) and the rank of
    each replica GPU, prefill replicas' first, in replica order."""

    cluster: Cluster
    ranks: tuple[int, ...]


class KVTransferModel:
    """Seconds to move `tokens` of KV from a prefill replica to a decode replica."""

    def __init__(self, model: StepTimeModel, gpus_per_replica: int, total_gpus: int,
                 hardware: str, gpus_per_node: int = 0, placed: KVPlacement | None = None):
        gpu = load_gpu(hardware)
        self.per_node = gpus_per_node or gpu.gpus_per_node
        self.cluster = implicit_cluster(gpu, total_gpus, self.per_node)
        self.ranks: tuple[int, ...] = ()
        if placed is not None:
            self.cluster, self.ranks = placed.cluster, placed.ranks
        self.bytes_per_token = model.kv_bytes_per_token_per_gpu
        self.gpus_per_replica = gpus_per_replica
        self.memo: dict[tuple[int, int, int], float] = {}

    def time_s(self, tokens: int, src_replica_first_gpu: int, dst_replica_first_gpu: int) -> float:
        # quantised to 64 tokens so that the planner runs a few hundred times at most
        bucket = -(-tokens // 64) * 64
        if self.ranks:  # where the replicas' GPUs sit on a cluster of several node kinds
            src_replica_first_gpu = self.ranks[src_replica_first_gpu]
            dst_replica_first_gpu = self.ranks[dst_replica_first_gpu]
        key = (bucket, src_replica_first_gpu, dst_replica_first_gpu)
        if key not in self.memo:
            # every GPU of the replica sends its shard at once; GPU 0's pair is
            # representative of all of them
            plan = cached_plan("send", bucket * self.bytes_per_token,
                               (src_replica_first_gpu, dst_replica_first_gpu), self.cluster)
            self.memo[key] = plan.time_s
        return self.memo[key]


@dataclass(frozen=True)
class RouterPool:
    """The router model's replicas (--router-model): each request's prompt is
    prefilled there and `tokens` decision tokens decoded, batched continuously
    like any replica, before the request reaches the large model's replicas."""

    model: StepTimeModel
    replicas: int
    kv_blocks: int
    scheduler: SchedulerConfig
    tokens: int


@dataclass
class RunResult:
    sequences: list[Sequence]
    replicas: list[Replica]
    makespan_s: float
    first_arrival_s: float
    stage_uses: list[StageUse] | None = None
    """Each resource stage's queue wait and service (with --stage-servers)."""
    router: RunResult | None = None
    """The router model's replicas deciding every request (RouterPool)."""


def run(
    requests: list[Request],
    model: StepTimeModel,
    scheduler: SchedulerConfig,
    deployment: Deployment,
    kv_blocks: int,
    draft: StepTimeModel | None = None,
    stage_model: StageModel | None = None,
    record_iterations: bool = False,
    hardware: str = "",
    decode_model: StepTimeModel | None = None,
    decode_kv_blocks: int = 0,
    stage_servers: dict[str, int] | None = None,
    kv_placement: KVPlacement | None = None,
    router_pool: RouterPool | None = None,
) -> RunResult:
    """`decode_model` and `decode_kv_blocks`: the decode replicas of a
    disaggregated deployment on other hardware than the prefill ones (the
    same model and parallelism, so the KV handed over has one layout)."""
    scheduler.check()
    deployment.check()
    if deployment.disaggregated and scheduler.policy != "continuous":
        raise CharonError("prefill/decode disaggregation needs continuous batching (--policy continuous)")
    stage_model = stage_model or StageModel()
    pending: list[tuple[float, int, int, Sequence]] = []
    """Events outside replicas: (time, order, kind, sequence); kind 0 = arrival
    at the router, 1 = KV handed to a decode replica."""
    order = 0
    decode_router: Router | None = None
    transfer: KVTransferModel | None = None

    def on_prefilled(seq: Sequence, t: float) -> None:
        nonlocal order
        assert decode_router is not None and transfer is not None
        dst = decode_router.pick()
        seq.prefill_replica = seq.replica
        gpus = model.shape.gpus
        src = replicas[seq.replica].physical
        dt = transfer.time_s(seq.prompt, src * gpus, dst.physical * gpus)
        heapq.heappush(pending, (t + dt, order, 1, seq))
        seq.replica = dst.index
        order += 1

    def engines(first: int, count: int, role: str, draft_model, callback,
                model: StepTimeModel = model, kv_blocks: int = kv_blocks) -> list[Replica]:
        """`count` replicas, each as pp x ep engines with a scheduler of their
        own. Pipeline parallelism: pp virtual engines (as vLLM runs it), pp
        batches in flight, one per stage, each iteration crossing every stage in
        turn (a StagePipeline the pp engines share), the KV cache split between
        them. Expert parallelism: ep groups running
        attention data-parallel, each with its own requests and KV cache; the
        priced step of one group includes the all-to-all to the others (their
        lock-step is not modelled: a group never waits for a busier one)."""
        per_replica = model.pp * model.shape.ep
        out = []
        pipeline = None
        for i in range(count * per_replica):
            engine = Replica(first + i, model, scheduler, kv_blocks // model.pp, role, draft_model,
                             callback, record_iterations)
            engine.physical = first // per_replica + i // per_replica
            if model.pp > 1:
                if i % model.pp == 0:  # the pp engines of one group share its stages
                    pipeline = StagePipeline(model.pp)
                engine.pipeline = pipeline
            out.append(engine)
        return out

    replicas: list[Replica] = []
    if deployment.disaggregated:
        n_p, n_d = deployment.prefill_replicas, deployment.decode_replicas
        prefill_pool = engines(0, n_p, "prefill", None, on_prefilled)
        decode_pool = engines(len(prefill_pool), n_d, "decode", draft, None,
                              decode_model or model, decode_kv_blocks or kv_blocks)
        replicas = prefill_pool + decode_pool
        router = Router(prefill_pool, deployment.router)
        decode_router = Router(decode_pool, "least-loaded")
        transfer = KVTransferModel(model, model.shape.gpus, (n_p + n_d) * model.shape.gpus,
                                   hardware or model.shape.hardware, placed=kv_placement)
    else:
        replicas = engines(0, deployment.replicas, "both", draft, None)
        router = Router(replicas, deployment.router)

    sequences: list[Sequence] = []
    uses: list[StageUse] | None = None
    if stage_servers:
        all_staged, uses = schedule_stages(requests, stage_model, model.kv_bytes_per_token_per_gpu,
                                           stage_servers)
    else:
        all_staged = [apply_stages(r, stage_model, model.kv_bytes_per_token_per_gpu) for r in requests]
    decided: RunResult | None = None
    if router_pool is not None:
        # the router reads each prompt once the stages before it are done (it is the last)
        decisions = [Request(r.id, s.ready_s, r.input_tokens, router_pool.tokens)
                     for r, s in zip(requests, all_staged)]
        decided = run(decisions, router_pool.model, router_pool.scheduler,
                      Deployment(router_pool.replicas, router="least-loaded"), router_pool.kv_blocks,
                      record_iterations=record_iterations)
        all_staged = [replace(s, ready_s=d.finish_s) for s, d in zip(all_staged, decided.sequences)]
    for r, staged in zip(requests, all_staged):
        seq = Sequence(r, r.input_tokens, staged.fetched_tokens, staged.output_tokens,
                       skip=staged.fetched_tokens, ready_s=staged.ready_s)
        sequences.append(seq)
        heapq.heappush(pending, (staged.ready_s, order, 0, seq))
        order += 1

    INF = float("inf")
    next_s = [INF] * len(replicas)
    """When each replica's running iteration ends (INF: idle)."""
    now = 0.0
    while True:
        i_min = min(range(len(replicas)), key=next_s.__getitem__) if len(replicas) > 1 else 0
        t_rep = next_s[i_min]
        if pending and pending[0][0] <= t_rep:
            t, _, kind, seq = heapq.heappop(pending)
            now = t
            if kind == 0:
                target = router.pick()
                target.submit(seq)
            else:
                target = replicas[seq.replica]
                target.hand_over(seq)
            if next_s[target.index] == INF:
                # wake it now, after every other event of this instant
                next_s[target.index] = now
            continue
        if t_rep == INF:
            break
        now = t_rep
        replica = replicas[i_min]
        end = replica.step(now)
        if end is None and replica.has_work:
            raise CharonError(
                f"replica {replica.index} stalled with work left (no KV room to make progress)"
            )
        next_s[i_min] = INF if end is None else end
    finished = [s for s in sequences if s.finish_s >= 0]
    if len(finished) != len(sequences):
        raise CharonError(
            f"{len(sequences) - len(finished)} requests never finished (scheduler stalled)"
        )
    makespan = max(s.finish_s for s in sequences)
    return RunResult(sequences, replicas, makespan, min(r.arrival_s for r in requests), uses, decided)
