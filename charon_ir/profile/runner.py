"""
Run one `sim` op with torch on a local device and time it.

`prepare(op, device)` builds tensors of the op's shapes and element types and
returns a closure that runs the op's kernel(s) once; `calls_per_sample`,
`take_samples` and `summarize` time it (`time_call` does all three). Each sample
times enough calls to last `min_sample_s`, so timer resolution and Python
overhead stay small against the op; on CUDA samples are timed with CUDA events
over the calls captured in one CUDA graph (`graphed`: the kernels' own time,
not the host's launch rate), on a CPU with one thread by the thread's CPU clock.

This is the only module of the package that imports torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from charon_ir.dialects.sim import (
    AttentionGradOp,
    AttentionOp,
    ComputeOp,
    ElementwiseKind,
    ElementwiseOp,
    EmbeddingOp,
    GenericOp,
    MatmulOp,
    NormKind,
    NormOp,
    OptimizerKind,
    OptimizerStepOp,
    ReduceKind,
    ReduceOp,
    SoftmaxOp,
    shape_of,
)
from charon_ir.profile.device import gpu_table_name
from charon_ir.profile.key import int_list


class NotRunnable(Exception):
    """The op has no torch kernel here (a `sim.generic`, an unknown kind, a dtype
    the device lacks); the message says why."""


TORCH_DTYPES: dict[str, torch.dtype] = {
    "f64": torch.float64,
    "f32": torch.float32,
    "tf32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f8E4M3FN": torch.float8_e4m3fn,
    "f8E5M2": torch.float8_e5m2,
    "i64": torch.int64,
    "i32": torch.int32,
    "i16": torch.int16,
    "i8": torch.int8,
    "i1": torch.bool,
}

NORM_EPS = 1e-6


def device_name(device: torch.device) -> str:
    """The name measurements on `device` are stored under (see `device.py`):
    `cpu` with one thread, `cpu-Nthreads` with N."""
    if device.type == "cuda":
        return gpu_table_name(torch.cuda.get_device_name(device))
    threads = torch.get_num_threads()
    return device.type if threads == 1 else f"{device.type}-{threads}threads"


def torch_dtype(value: SSAValue) -> torch.dtype:
    text = str(value.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
    if text not in TORCH_DTYPES:
        raise NotRunnable(f"element type {text} has no torch dtype")
    return TORCH_DTYPES[text]


_INPUT_RNG: dict[torch.device, torch.Generator] = {}


def _rng(device: torch.device) -> torch.Generator:
    """The generator inputs are drawn from: one of the runner's own per device,
    not torch's default. A CUDA graph capture that fails (a kernel that
    synchronises, autograd's backward thread) can leave the default CUDA
    generator marked as capturing, and every later draw from it then raises
    "Offset increment outside graph capture" (seen on an H200 with torch 2.11:
    every op after the first flash-attention backward failed)."""
    if device not in _INPUT_RNG:
        _INPUT_RNG[device] = torch.Generator(device=device)
    return _INPUT_RNG[device]


def _randint(high: int, shape, device: torch.device, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.randint(0, high, shape, dtype=dtype, device=device, generator=_rng(device))


def tensor_for(value: SSAValue, device: torch.device, requires_grad: bool = False) -> torch.Tensor:
    """A tensor of `value`'s type with values in [0.5, 1.5): positive, so rsqrt,
    div and pow stay finite and no kernel takes a slow path on NaNs."""
    assert isinstance(value.type, TensorType)
    dtype, shape = torch_dtype(value), shape_of(value)
    if dtype == torch.bool:
        return torch.rand(shape, device=device, generator=_rng(device)) < 0.5
    if not dtype.is_floating_point:
        return _randint(2, shape, device, dtype)
    t = (torch.rand(shape, device=device, generator=_rng(device)) + 0.5).to(dtype)
    return t.requires_grad_(requires_grad)


def _unary(kind: ElementwiseKind) -> Callable[[torch.Tensor], torch.Tensor] | None:
    return {
        ElementwiseKind.NEG: torch.neg,
        ElementwiseKind.EXP: torch.exp,
        ElementwiseKind.LOG: torch.log,
        ElementwiseKind.SQRT: torch.sqrt,
        ElementwiseKind.RSQRT: torch.rsqrt,
        ElementwiseKind.ABS: torch.abs,
        ElementwiseKind.SIGN: torch.sign,
        ElementwiseKind.ERF: torch.erf,
        ElementwiseKind.SIN: torch.sin,
        ElementwiseKind.COS: torch.cos,
        ElementwiseKind.RELU: torch.relu,
        ElementwiseKind.SILU: F.silu,
        ElementwiseKind.GELU: F.gelu,
        ElementwiseKind.TANH: torch.tanh,
        ElementwiseKind.SIGMOID: torch.sigmoid,
        ElementwiseKind.COPY: torch.clone,
        ElementwiseKind.CLAMP: lambda x: torch.clamp(x, 0.6, 1.4),
        ElementwiseKind.NOT: torch.logical_not,
        ElementwiseKind.DROPOUT: lambda x: F.dropout(x, 0.1, training=True),
        # one input: the other operand was a scalar
        ElementwiseKind.POW: lambda x: torch.pow(x, 2),
        ElementwiseKind.DIV: torch.reciprocal,
        ElementwiseKind.ADD: lambda x: torch.add(x, 1),
        ElementwiseKind.SUB: lambda x: torch.sub(x, 1),
        ElementwiseKind.MUL: lambda x: torch.mul(x, 2),
        ElementwiseKind.MAX: lambda x: torch.clamp_min(x, 1),
        ElementwiseKind.MIN: lambda x: torch.clamp_max(x, 1),
        ElementwiseKind.COMPARE: lambda x: torch.gt(x, 1),
    }.get(kind)


def _binary(kind: ElementwiseKind) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None:
    return {
        ElementwiseKind.ADD: torch.add,
        ElementwiseKind.SUB: torch.sub,
        ElementwiseKind.MUL: torch.mul,
        ElementwiseKind.DIV: torch.div,
        ElementwiseKind.POW: torch.pow,
        ElementwiseKind.MAX: torch.maximum,
        ElementwiseKind.MIN: torch.minimum,
        ElementwiseKind.COMPARE: torch.gt,
        ElementwiseKind.AND: torch.logical_and,
        ElementwiseKind.OR: torch.logical_or,
        ElementwiseKind.WHERE: lambda c, x: torch.where(c if c.dtype == torch.bool else c > 1, x, 0.0),
        ElementwiseKind.SILU_GRAD: torch.ops.aten.silu_backward,
        ElementwiseKind.GELU_GRAD: lambda g, x: torch.ops.aten.gelu_backward(g, x),
        ElementwiseKind.TANH_GRAD: torch.ops.aten.tanh_backward,
        ElementwiseKind.SIGMOID_GRAD: torch.ops.aten.sigmoid_backward,
    }.get(kind)


def _prepare_elementwise(op: ElementwiseOp, device: torch.device) -> Callable[[], object]:
    kind = op.kind.data
    out_dtype, out_shape = torch_dtype(op.result), shape_of(op.result)
    if kind == ElementwiseKind.FILL:
        return lambda: torch.full(out_shape, 1.0, dtype=out_dtype, device=device)
    xs = [tensor_for(v, device) for v in op.inputs]
    if kind == ElementwiseKind.CAST:
        x = xs[0]
        return lambda: x.to(out_dtype)
    if kind == ElementwiseKind.WHERE and len(xs) == 3:
        cond = xs[0] if xs[0].dtype == torch.bool else xs[0] > 1
        return lambda: torch.where(cond, xs[1], xs[2])
    if len(xs) == 1 and (fn1 := _unary(kind)) is not None:
        x = xs[0]
        return lambda: fn1(x)
    if len(xs) >= 2 and (fn2 := _binary(kind)) is not None:
        first, rest = xs[0], xs[1:]

        def run() -> torch.Tensor:
            acc = first
            for y in rest:
                acc = fn2(acc, y)
            return acc

        return run
    raise NotRunnable(f"elementwise kind '{kind}' with {len(xs)} inputs has no torch kernel here")


def _prepare_attention(op: AttentionOp | AttentionGradOp, device: torch.device) -> Callable[[], object]:
    grad = isinstance(op, AttentionGradOp)
    # sim layout [b, s, h, d]; SDPA takes [b, h, s, d]: a transposed view, as in HF
    q, k, v = (tensor_for(x, device, grad).transpose(1, 2) for x in (op.q, op.k, op.v))
    sq, skv = q.shape[2], k.shape[2]
    causal = op.causal is not None
    mask = None
    if causal and sq != skv:
        # sim aligns the causal mask to the end of the kv sequence (decode, chunked
        # prefill); SDPA's is_causal aligns to the start
        from torch.nn.attention.bias import causal_lower_right

        mask = causal_lower_right(sq, skv)
    gqa = q.shape[1] != k.shape[1]

    def forward() -> torch.Tensor:
        if mask is not None:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        return out.transpose(1, 2)  # back to [b, s, h, d]: a view

    backends = _sdpa_backends(op.flash is not None)
    if not grad:
        return lambda: _with_backends(backends, forward)
    out = _with_backends(backends, forward)
    grad_out = torch.rand(out.shape, dtype=out.dtype, device=out.device, generator=_rng(out.device))
    inputs = (q, k, v)
    return lambda: torch.autograd.grad(out, inputs, grad_out, retain_graph=True)


def _sdpa_backends(flash: bool):
    from torch.nn.attention import SDPBackend

    # a `flash` op runs a fused kernel (any of them: the device picks); an unfused
    # one materializes the score matrix, as the math backend does
    if flash:
        return None
    return [SDPBackend.MATH]


def _with_backends(backends, fn: Callable[[], torch.Tensor]) -> torch.Tensor:
    if backends is None:
        return fn()
    from torch.nn.attention import sdpa_kernel

    with sdpa_kernel(backends):
        return fn()


def _prepare_optimizer(op: OptimizerStepOp, device: torch.device) -> Callable[[], object]:
    kind = op.kind.data
    # Mixed precision as the op's byte count assumes: fp32 master weights and
    # optimizer state, low-precision model weights refreshed from the masters.
    params = [tensor_for(p, device) for p in op.params]
    masters = [p.detach().float().requires_grad_(True) for p in params]
    for m, g in zip(masters, op.grads):
        m.grad = tensor_for(g, device).float()
    fused = {"fused": True}
    if kind == OptimizerKind.ADAMW:
        opt = torch.optim.AdamW(masters, lr=1e-4, weight_decay=0.1, **fused)
    elif kind == OptimizerKind.ADAM:
        opt = torch.optim.Adam(masters, lr=1e-4, **fused)
    elif kind == OptimizerKind.SGD:
        opt = torch.optim.SGD(masters, lr=1e-4, **fused)
    else:
        raise NotRunnable(f"optimizer kind '{kind}' has no torch optimizer here")
    low = [(p, m) for p, m in zip(params, masters) if p.dtype != torch.float32]

    def step() -> None:
        opt.step()
        if low:
            torch._foreach_copy_([p for p, _ in low], [m.detach() for _, m in low])

    # the optimizer's state is made on its first step: made here, eagerly, a step
    # whose capture into a CUDA graph fails half-way cannot leave it half-made
    # (KeyError 'exp_avg' on the next step, seen on an H200)
    step()
    return step


def _differing_dim(small: tuple[int, ...], big: tuple[int, ...]) -> int:
    dims = [i for i, (a, b) in enumerate(zip(small, big)) if a != b]
    if len(small) != len(big) or len(dims) != 1:
        raise NotRunnable(f"cannot tell the dim from shapes {list(small)} and {list(big)}")
    return dims[0]


def _prepare_generic(op: GenericOp, device: torch.device) -> Callable[[], object]:
    """The aten ops a frontend leaves as `sim.generic` whose arguments the shapes
    determine (the dim a cat joins, the classes a loss has); others cannot run."""
    callee = op.callee.data
    ins = list(op.inputs)
    outs = [shape_of(r) for r in op.outputs]
    aten = torch.ops.aten
    if callee == "aten.cat" and ins:
        xs = [tensor_for(v, device) for v in ins]
        dim = _differing_dim(shape_of(ins[0]), outs[0])
        return lambda: torch.cat(xs, dim)
    if callee == "aten._log_softmax" and len(ins) == 1:
        x = tensor_for(ins[0], device)
        return lambda: aten._log_softmax(x, -1, False)
    if callee == "aten._log_softmax_backward_data" and len(ins) == 2:
        g, out = tensor_for(ins[0], device), tensor_for(ins[1], device)
        return lambda: aten._log_softmax_backward_data(g, out, -1, g.dtype)
    if callee in ("aten.nll_loss_forward", "aten.nll_loss_backward"):
        backward = callee.endswith("backward")
        x_value, target_value = (ins[1], ins[2]) if backward else (ins[0], ins[1])
        x = tensor_for(x_value, device)
        classes = shape_of(x_value)[-1]
        target = _randint(classes, shape_of(target_value), device)
        if not backward:
            return lambda: aten.nll_loss_forward(x, target, None, 1, -100)
        grad, total = tensor_for(ins[0], device), tensor_for(ins[3], device)
        return lambda: aten.nll_loss_backward(grad, x, target, None, 1, -100, total)
    if callee == "aten.slice_backward" and len(ins) == 1:
        g = tensor_for(ins[0], device)
        dim = _differing_dim(shape_of(ins[0]), outs[0])
        return lambda: aten.slice_backward(g, list(outs[0]), dim, 0, g.shape[dim], 1)
    if callee == "aten.embedding_dense_backward" and len(ins) == 2:
        g = tensor_for(ins[0], device)
        rows = outs[0][0]
        ids = _randint(rows, shape_of(ins[1]), device)
        return lambda: aten.embedding_dense_backward(g, ids, rows, -1, False)
    raise NotRunnable(f"sim.generic '{callee}' has no runner (its arguments are not in the IR)")


def prepare(op: ComputeOp, device: torch.device) -> Callable[[], object]:
    """A closure running `op` once on `device`, on tensors built here."""
    _rng(device).manual_seed(0)
    if isinstance(op, GenericOp):
        return _no_grad(_prepare_generic(op, device))
    if isinstance(op, MatmulOp):
        a, b = tensor_for(op.lhs, device), tensor_for(op.rhs, device)
        # stored as [.., K, M] / [.., N, K]: the transposed views cuBLAS/MKL take
        a = a.mT if op.transpose_lhs is not None else a
        b = b.mT if op.transpose_rhs is not None else b
        if op.grouped is not None:  # one GEMM per batch index, as a grouped linear runs
            pairs = list(zip(a.flatten(0, -3), b.flatten(0, -3)))
            return _no_grad(lambda: [torch.mm(x, y) for x, y in pairs])
        return _no_grad(lambda: torch.matmul(a, b))
    if isinstance(op, AttentionOp):
        return _no_grad(_prepare_attention(op, device))
    if isinstance(op, AttentionGradOp):
        return _prepare_attention(op, device)
    if isinstance(op, EmbeddingOp):
        table = tensor_for(op.table, device)
        ids = _randint(shape_of(op.table)[0], shape_of(op.ids), device)
        ids = ids.to(torch_dtype(op.ids))
        return _no_grad(lambda: F.embedding(ids, table))
    if isinstance(op, NormOp):
        x, w = tensor_for(op.input, device), tensor_for(op.weight, device)
        shape = (shape_of(op.input)[-1],)
        if op.kind.data == NormKind.RMS:
            return _no_grad(lambda: F.rms_norm(x, shape, w, NORM_EPS))
        return _no_grad(lambda: F.layer_norm(x, shape, w, None, NORM_EPS))
    if isinstance(op, ElementwiseOp):
        return _no_grad(_prepare_elementwise(op, device))
    if isinstance(op, ReduceOp):
        x = tensor_for(op.input, device)
        dims = int_list(op.dims)
        keep = len(shape_of(op.result)) == len(shape_of(op.input))
        fn = {ReduceKind.SUM: torch.sum, ReduceKind.MEAN: torch.mean, ReduceKind.MAX: torch.amax,
              ReduceKind.MIN: torch.amin}[op.kind.data]
        return _no_grad(lambda: fn(x, dim=dims, keepdim=keep))
    if isinstance(op, SoftmaxOp):
        x = tensor_for(op.input, device)
        dim = op.dim.value.data
        return _no_grad(lambda: torch.softmax(x, dim))
    if isinstance(op, OptimizerStepOp):
        return _no_grad(_prepare_optimizer(op, device))
    raise NotRunnable(f"{op.name} has no torch runner")


def _no_grad(fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        with torch.no_grad():
            return fn()

    return run


@dataclass(frozen=True)
class Timing:
    time_s: float
    """Seconds per call: see `summarize`."""
    spread: float
    """Interquartile range over the median."""
    samples: int
    calls_per_sample: int


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Graphed:
    """`calls` calls of an op captured in one CUDA graph: a replay runs their
    kernels back to back with no host in between. Eager PyTorch launches a
    kernel every ~8 us (the shortest eager kernel the shipped H100 database held
    before graphs), longer than a small element-wise kernel runs, so timing eager
    calls back to back measured the host's launch rate, not the GPU. A sample
    replays the graph `replays` times, enough to last `MIN_GRAPH_SAMPLE_S`."""

    def __init__(self, graph: torch.cuda.CUDAGraph, calls: int, replays: int = 1):
        self.graph, self.calls, self.replays = graph, calls, replays

    def __call__(self) -> None:
        self.graph.replay()


MIN_GRAPH_SAMPLE_S = 5e-4
"""A graphed sample replays its graph until it lasts this long on the GPU. The
calls a graph holds are counted from the op's eager time, which for a kernel of
1-2 us is the ~9 us launch rate: one replay of such a graph then ran for a fifth
of the intended sample, and the host's submission of it showed in the time (the
H200's small kernels, 2026-11-27: samples split between their own time and ~9 us,
1,029 rows spread over a quarter of their median)."""

HOST_AHEAD_CYCLES = 500_000
"""GPU clock cycles (~0.25-0.3 ms at 1.7-2 GHz) a sample's stream spins before its
start event (`torch.cuda._sleep`), so the host has queued the sample's launches
by the time the GPU reaches them and the events time the kernels, not the host."""


def timing_stream(device: torch.device):
    """The stream ops are prepared, captured and timed on: on CUDA one side
    stream per device, made current for the whole profile, so an op's forward
    (run when it is prepared) and the backward autograd then runs on that
    forward's stream both lie on the capturing stream (a flash-attention
    backward's capture failed when its forward had run on the default stream);
    nothing on a CPU."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    if device not in _TIMING_STREAMS:
        _TIMING_STREAMS[device] = torch.cuda.Stream(device)
    return torch.cuda.stream(_TIMING_STREAMS[device])


_TIMING_STREAMS: dict[torch.device, torch.cuda.Stream] = {}


def graphed(
    fn: Callable[[], object],
    device: torch.device,
    calls: int,
    on_eager: Callable[[str], None] | None = None,
) -> Callable[[], object]:
    """On CUDA, `calls` calls of `fn` captured in a `Graphed` (`_capture`); `fn`
    itself on a CPU, or when the op cannot be captured (an optimizer step that is
    not capturable, a kernel that synchronises), after `on_eager(why)`."""
    if device.type != "cuda":
        return fn
    timed = _capture(fn, device, calls)
    if isinstance(timed, Graphed):
        return timed
    if on_eager is not None:
        on_eager(timed)
    return fn


def _capture(fn: Callable[[], object], device: torch.device, calls: int) -> Graphed | str:
    """`calls` calls of `fn` captured in a CUDA graph, replayed once (its first
    replay uploads it) and sized to last `MIN_GRAPH_SAMPLE_S`; or, where the
    capture failed, the first line of why. Captured on the current stream
    (`timing_stream`) when that is not the default one, as capture requires."""
    stream = torch.cuda.current_stream(device)
    if stream == torch.cuda.default_stream(device):
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.stream(stream):  # warm-up on the capturing stream, as capture requires
            for _ in range(2):
                fn()
        torch.cuda.current_stream(device).wait_stream(stream)
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                fn()
        timed = Graphed(graph, calls)
        with torch.cuda.stream(stream):
            timed()  # uploads the graph: the first replay's cost is not the kernels'
            once = _sample(timed, calls, device) * calls
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        torch.cuda.synchronize(device)
        _end_failed_capture(device)
        return first_line(e)
    timed.replays = max(1, math.ceil(MIN_GRAPH_SAMPLE_S / max(once, 1e-9)))
    return timed


def _end_failed_capture(device: torch.device) -> None:
    """Capture one trivial kernel: a capture that completes takes the default
    CUDA generator out of the capturing state a failed one can leave it in (see
    `_rng`), so kernels that draw from it run again."""
    x = torch.zeros(1, device=device)
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            x.add_(1)
        torch.cuda.synchronize(device)
    except RuntimeError:
        pass


def _sample(fn: Callable[[], object], calls: int, device: torch.device) -> float:
    """Seconds per call over `calls` back-to-back calls (a `Graphed`: its
    `replays` replays of `calls` each)."""
    if device.type == "cuda":
        if isinstance(fn, Graphed):
            launches, per_launch = fn.replays, fn.calls
        else:
            launches, per_launch = max(1, calls), 1
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(HOST_AHEAD_CYCLES)
        start.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / (launches * per_launch)
    # With one intra-op thread the op runs on this thread, and its CPU clock counts
    # only the time the op ran: time other processes held the core (a shared
    # machine) is left out. With more threads, wall time is all there is.
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    t0 = clock()
    for _ in range(calls):
        fn()
    return (clock() - t0) / calls


def calls_per_sample(fn: Callable[[], object], device: torch.device, warmup: int, min_sample_s: float) -> int:
    """Warm `fn` up and return how many back-to-back calls last `min_sample_s`."""
    for _ in range(max(1, warmup)):
        fn()
    _synchronize(device)
    once = _sample(fn, 1, device)
    return max(1, math.ceil(min_sample_s / max(once, 1e-9)))


def take_samples(fn: Callable[[], object], device: torch.device, warmup: int, calls: int, count: int) -> list[float]:
    """`count` samples of seconds per call, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    _synchronize(device)
    return [_sample(fn, calls, device) for _ in range(count)]


def summarize(samples: list[float], calls: int, device: torch.device) -> Timing:
    """The time of one call from samples of it. On a GPU, the median (CUDA events
    time the kernels alone, and the median is what GPU benchmarks report). On a
    CPU, the best sample, timeit's rule: a shared machine's other processes and
    their memory traffic only ever add time, and the best of samples spread over
    rounds reproduces to ~1% between runs where the median drifts by 10-20%."""
    samples = sorted(samples)
    median = statistics.median(samples)
    spread = 0.0
    if len(samples) >= 4 and median > 0:
        q = statistics.quantiles(samples, n=4)
        spread = (q[2] - q[0]) / median
    best = median if device.type == "cuda" else samples[0]
    return Timing(best, spread, len(samples), calls)


def time_call(
    fn: Callable[[], object],
    device: torch.device,
    warmup: int = 3,
    repeats: int = 15,
    min_sample_s: float = 5e-4,
) -> Timing:
    """Seconds per call of `fn` from `repeats` samples (`summarize`)."""
    try:
        calls = calls_per_sample(fn, device, warmup, min_sample_s)
        return summarize(take_samples(fn, device, 0, calls, max(1, repeats)), calls, device)
    except KERNEL_ERRORS as e:
        raise NotRunnable(first_line(e)) from None


KERNEL_ERRORS = (RuntimeError, NotImplementedError, TypeError, ValueError, KeyError)
"""What torch raises when a kernel is missing for a dtype on a device
("not implemented for 'Float8_e4m3fn'") or a shape it cannot take."""


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def keep_freed_memory() -> None:
    """Make glibc keep freed blocks instead of returning large ones to the OS, so
    each call reuses warm pages as a caching allocator (CUDA's, jemalloc) would,
    rather than page-faulting a fresh mmap for every output tensor."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_mmap_threshold, 32 << 20)  # glibc's ceiling for this setting
