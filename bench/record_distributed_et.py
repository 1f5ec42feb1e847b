"""Record the PyTorch execution traces of one real two-rank training step on
this machine's CPU: torch.distributed over gloo, two processes, one thread each.

`--mode tp` (default): a Megatron-style tensor- and sequence-parallel MLP block over both
ranks: the batch broadcast from rank 0 (Megatron's `broadcast_data`), a LayerNorm
on each rank's half of the sequence, an all-gather of the sequence before the
column-parallel first linear, GELU, the row-parallel second linear and a
reduce-scatter back to the sequence halves (the backward runs the transposes: a
reduce-scatter and an all-gather), then the all-reduce of the replicated
LayerNorm's gradients and an SGD step. `--mode pp`: a two-stage pipeline of
the same MLP (GPipe, two micro-batches): rank 0 runs the first linear and GELU
and sends the activations, rank 1 receives them, runs the second linear and the
loss, and sends back their gradients; each stage then steps its SGD. Each rank's
trace is written gzipped:

    .venv/bin/python bench/record_distributed_et.py --out test/data/distributed/tp2-gloo
    .venv/bin/python bench/record_distributed_et.py --mode pp --out test/data/distributed/pp2-gloo
    # -> tp2-gloo.0.et.json.gz, tp2-gloo.1.et.json.gz, pp2-gloo.0.et.json.gz, ...
    .venv/bin/charon import --execution-trace test/data/distributed/tp2-gloo.0.et.json.gz -o step.mlir

The shipped traces under test/data/distributed were recorded so.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

from record_kineto_trace import record_execution_trace


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(rank: int, world: int, port: int, out: str, seq: int, hidden: int, mode: str) -> None:
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(rank)

    class GatherSequence(torch.autograd.Function):
        """All-gather the sequence halves (forward); reduce-scatter the gradient."""

        @staticmethod
        def forward(ctx, x):
            out = x.new_empty(x.shape[0] * world, *x.shape[1:])
            dist.all_gather_into_tensor(out, x.contiguous())
            return out

        @staticmethod
        def backward(ctx, grad):
            out = grad.new_empty(grad.shape[0] // world, *grad.shape[1:])
            dist.reduce_scatter_tensor(out, grad.contiguous())
            return out

    class ScatterSequence(torch.autograd.Function):
        """Reduce-scatter partial sums to sequence halves (forward); all-gather the gradient."""

        @staticmethod
        def forward(ctx, x):
            out = x.new_empty(x.shape[0] // world, *x.shape[1:])
            dist.reduce_scatter_tensor(out, x.contiguous())
            return out

        @staticmethod
        def backward(ctx, grad):
            out = grad.new_empty(grad.shape[0] * world, *grad.shape[1:])
            dist.all_gather_into_tensor(out, grad.contiguous())
            return out

    if mode == "pp":
        step = _pipeline_step(rank, seq, hidden)
    else:
        step = _tensor_parallel_step(rank, world, seq, hidden, GatherSequence, ScatterSequence)
    step()  # warm-up
    record_execution_trace(step, Path(f"{out}.{rank}.et.json.gz"))
    dist.destroy_process_group()


def _pipeline_step(rank: int, seq: int, hidden: int, microbatches: int = 2):
    """Stage `rank` of a two-stage GPipe step: all forwards, then all backwards."""
    import torch
    import torch.distributed as dist

    if rank == 0:
        layer = torch.nn.Linear(hidden, 4 * hidden)
    else:
        layer = torch.nn.Linear(4 * hidden, hidden)
    optimizer = torch.optim.SGD(layer.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad()
        kept = []
        for _ in range(microbatches):
            if rank == 0:
                out = torch.nn.functional.gelu(layer(torch.randn(seq, hidden)))
                dist.send(out.detach(), 1)
                kept.append(out)
            else:
                x = torch.empty(seq, 4 * hidden)
                dist.recv(x, 0)
                x.requires_grad_()
                loss = layer(x).square().mean()
                kept.append((x, loss))
        for item in kept:
            if rank == 0:
                grad = torch.empty(seq, 4 * hidden)
                dist.recv(grad, 1)
                item.backward(grad)
            else:
                x, loss = item
                loss.backward()
                dist.send(x.grad, 0)
        optimizer.step()

    return step


def _tensor_parallel_step(rank: int, world: int, seq: int, hidden: int, GatherSequence, ScatterSequence):
    import torch
    import torch.distributed as dist

    norm = torch.nn.LayerNorm(hidden)
    fc1 = torch.nn.Linear(hidden, 4 * hidden // world)  # column-parallel: this rank's columns
    fc2 = torch.nn.Linear(4 * hidden // world, hidden, bias=False)  # row-parallel: this rank's rows
    params = [*norm.parameters(), *fc1.parameters(), *fc2.parameters()]
    optimizer = torch.optim.SGD(params, lr=1e-3)
    batch = torch.empty(seq, hidden)

    def step() -> None:
        if rank == 0:
            batch.normal_()
        dist.broadcast(batch, 0)
        x = batch.chunk(world)[rank]  # this rank's half of the sequence
        h = GatherSequence.apply(norm(x))
        y = ScatterSequence.apply(fc2(torch.nn.functional.gelu(fc1(h))))
        loss = (y * y).mean()
        optimizer.zero_grad()
        loss.backward()
        for p in norm.parameters():  # replicated under sequence parallelism: sum the partial gradients
            dist.all_reduce(p.grad)
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the traces' prefix: PREFIX.<rank>.et.json.gz")
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--mode", choices=("tp", "pp"), default="tp",
                        help="tensor- and sequence-parallel (tp) or a two-stage pipeline (pp)")
    args = parser.parse_args()

    import torch.multiprocessing as mp

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    mp.spawn(_run, args=(2, _free_port(), args.out, args.seq_len, args.hidden, args.mode), nprocs=2)


if __name__ == "__main__":
    main()
