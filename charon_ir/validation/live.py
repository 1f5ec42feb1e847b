"""
`charon validate --live`: a training step measured here against its simulation.

1. Build a small Llama (HF `LlamaForCausalLM`, `LIVE_MODEL`) in torch on the local
   device and time real steps: forward, cross-entropy loss, backward and a fused
   AdamW step, several after warm-up: on a GPU the median, on a CPU the best
   (the rule the profile database times ops by: `charon_ir.profile.runner.summarize`).
2. Import the same model and step shape into `sim` IR, measure each of its
   distinct ops on the same device into the profile database (`charon profile`'s
   machinery; ops already there are measured again and their rows replaced: a
   shared machine's speed drifts over a day, and the comparison is with a step
   measured now), and simulate the step with the `db` engine first
   (`CHARON_PROFILE_DEVICE` set to this device).
3. Print both times and the error.

On a CPU both sides use float32 and one torch thread, timed by the thread's CPU
clock (the profile database's CPU setting: time other processes hold the core
is not counted); on a GPU, bfloat16 and wall time after synchronizing.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from charon_ir.api import simulate
from charon_ir.frontend import import_model
from charon_ir.profile.collect import OpSet, parse_module_file
from charon_ir.profile.device import pricing_device
from charon_ir.profile.session import plan, profile_ops, torch_device
from charon_ir.profile.store import ProfileStore
from charon_ir.validation.runner import cache_directory
from charon_ir.validation.training import config_path

LIVE_MODEL: dict[str, Any] = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "intermediate_size": 2816,
    "vocab_size": 8192,
    "max_position_embeddings": 512,
    "tie_word_embeddings": False,
}
"""4 layers, hidden 1024, seq 512: a step of about a second on one CPU core."""


@dataclass(frozen=True)
class LiveSetup:
    config: dict[str, Any] = field(default_factory=lambda: dict(LIVE_MODEL))
    seq_len: int = 512
    batch: int = 1
    steps: int = 15
    """Timed steps (the median is reported on a GPU, the best on a CPU). On a CPU
    the prediction sums each op's best sample, and the best of a few whole steps
    stays above that sum (each step sums its ops' typical times): more steps bring
    the measured best down toward it. With 5, three runs gave -10.2, -1.4, -14.3 %."""
    warmup: int = 2
    profile_repeats: int = 5


@dataclass(frozen=True)
class LiveResult:
    device: str
    dtype: str
    measured_s: float
    measured_samples: tuple[float, ...]
    predicted_s: float
    engines: dict[str, int]
    """Ops priced by each engine (all `db` when the profile covered the step)."""
    profiled_ops: int
    setup: LiveSetup

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["error"] = round(self.error, 4)
        return out


def _device(name: str | None):
    """The device `--device` names, else a GPU when torch sees one."""
    import torch

    if not name:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch_device(name)


def training_step(config: dict, batch: int, seq_len: int, device, dtype):
    """One real training step (forward, loss, backward, AdamW) of the HF model
    `config` describes, built with random weights: a function that runs it (the
    live check times it; bench/record_kineto_trace.py profiles it)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    transformers.logging.set_verbosity_error()
    kwargs = dict(config)
    hf_config = AutoConfig.for_model(kwargs.pop("model_type"), **kwargs)
    hf_config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config, dtype=dtype).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, hf_config.vocab_size, (batch, seq_len), device=device)

    def step() -> None:
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def measure_step(setup: LiveSetup, device, dtype) -> list[float]:
    """Wall times of real training steps (forward, loss, backward, AdamW)."""
    import torch

    step = training_step(setup.config, setup.batch, setup.seq_len, device, dtype)

    def synchronize() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    # One CPU thread: the step's CPU time, as the profile database's CPU timings
    # are taken (runner._sample), so that time other processes held the core on a
    # shared machine is left out of both sides. Otherwise wall time.
    one_thread = device.type == "cpu" and torch.get_num_threads() == 1
    clock = time.thread_time if one_thread else time.perf_counter
    for _ in range(setup.warmup):
        step()
    synchronize()
    times = []
    for _ in range(setup.steps):
        start = clock()
        step()
        synchronize()
        times.append(clock() - start)
    return times


def _step_ir(setup: LiveSetup, directory: Path, dtype_name: str) -> Path:
    """The step imported as sim IR, written as a .mlir file for `simulate`."""
    # written once, atomically: parallel test workers may share the folder
    config = config_path(setup.config, directory, prefix="live")
    mlir = config.parent / f"train-s{setup.seq_len}-b{setup.batch}-{dtype_name}.mlir"
    if not mlir.exists():
        module = import_model(str(config), seq_len=setup.seq_len, batch=setup.batch,
                              mode="train", dtype=dtype_name)
        tmp = mlir.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(str(module))
        tmp.replace(mlir)
    return mlir


def profile_step(mlir: Path, device: str, repeats: int, warmup: int = 2) -> tuple[str, int]:
    """Measure the step's distinct ops into the database, again where it has
    them; (stored device name, ops)."""
    opset = OpSet()
    opset.add_module(parse_module_file(mlir))
    with ProfileStore.open(None) as store:
        run = profile_ops(store, plan(opset, ()), device, warmup=warmup, repeats=repeats, refresh=True)
    return run.device, len(opset.ops)


def simulate_step(mlir: Path, profiled_device: str) -> dict[str, Any]:
    with pricing_device(profiled_device):
        # One device, no collectives: the GPU named here prices nothing the db
        # knows; ops it lacks fall back to predict (fitted on this device) then
        # analytic, and the report's `engines` says how many did. No `fuse`: the
        # measured step is eager PyTorch, one kernel per traced op, as profiled.
        return simulate(str(mlir), hardware="H100-SXM5-80GB", gpus=1, fuse=False,
                        engines=("db", "predict", "analytic"))


def run_live(device: str | None = None, setup: LiveSetup | None = None) -> LiveResult:
    import torch

    from charon_ir.profile import runner  # imports torch

    setup = setup or LiveSetup()
    dev = _device(device)
    threads = torch.get_num_threads()
    if dev.type == "cpu":
        runner.keep_freed_memory()
        torch.set_num_threads(1)
        dtype, dtype_name = torch.float32, "fp32"
    else:
        dtype, dtype_name = torch.bfloat16, "bf16"
    try:
        samples = measure_step(setup, dev, dtype)
    finally:
        torch.set_num_threads(threads)
    mlir = _step_ir(setup, cache_directory(), dtype_name)
    stored_as, ops = profile_step(mlir, str(dev), setup.profile_repeats)
    report = simulate_step(mlir, stored_as)
    return LiveResult(
        device=stored_as, dtype=dtype_name,
        # as the database times each op: the best sample on a CPU (timeit's rule:
        # a shared machine's other processes only ever add time), the median on
        # a GPU (CUDA events time the kernels alone)
        measured_s=min(samples) if dev.type == "cpu" else statistics.median(samples),
        measured_samples=tuple(samples),
        predicted_s=float(report["iteration_time_s"]),
        engines={k: int(v) for k, v in (report.get("engines") or {}).items()},
        profiled_ops=ops, setup=setup,
    )


def format_live(result: LiveResult) -> str:
    c = result.setup.config
    shape = (f"Llama {c['num_hidden_layers']} layers, hidden {c['hidden_size']}, "
             f"heads {c['num_attention_heads']}/{c['num_key_value_heads']}, ffn "
             f"{c['intermediate_size']}, vocab {c['vocab_size']}, seq {result.setup.seq_len}, "
             f"batch {result.setup.batch}, {result.dtype}")
    samples = ", ".join(f"{s:.3f}" for s in result.measured_samples)
    return "\n".join([
        f"live validation on {result.device}: {shape}",
        f"measured  {result.measured_s:.3f} s  ({'best' if result.device == 'cpu' else 'median'} of "
        f"{len(result.measured_samples)} steps: {samples})",
        f"predicted {result.predicted_s:.3f} s  ({result.profiled_ops} distinct ops profiled; "
        f"engines {result.engines})",
        f"error     {result.error * 100:+.1f}%",
    ])
