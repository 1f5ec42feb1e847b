"""unfuse-optimizer: Megatron-LM's mixed-precision optimizer as separate kernels.
Whatever the data-parallel sharding, it adds the same bytes per updated element
(26 with loss scaling, 14 without) and nothing else; the simulated step grows by
their time; the command line names a bad --optimizer on one line."""

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context

from charon_ir.dialects import sim
from charon_ir.frontend import parse_ir
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.unfuse_optimizer import KERNELS, UnfuseOptimizerPass

EIGHT_LAYERS = Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir"
TINY = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json")
ADDED_BYTES = {True: 6 + 8 + 4 + 6 + 2, False: 4 + 6 + 4}


def optimizer_bytes(module) -> tuple[float, float, int]:
    """(bytes of the inserted kernels, bytes of the steps, elements the steps update)."""
    kernels = steps = elements = 0
    for op in module.walk():
        if isinstance(op, sim.GenericOp) and op.callee.data in KERNELS:
            kernels += op.bytes_moved()
        elif isinstance(op, sim.OptimizerStepOp):
            steps += op.bytes_moved()
            elements += op.num_elements()
    return kernels, steps, elements


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([0, 1, 2, 3]), st.booleans())
def test_adds_the_same_bytes_per_updated_element_under_any_sharding(dp, zero, loss_scale):
    module = parse_ir(EIGHT_LAYERS.read_text())
    DataParallelPass(dp=dp, zero=zero).apply(Context(), module)
    _, fused_steps, elements = optimizer_bytes(module)
    UnfuseOptimizerPass(loss_scale=loss_scale).apply(Context(), module)
    kernels, steps, after = optimizer_bytes(module)
    assert after == elements and steps == fused_steps
    assert kernels == ADDED_BYTES[loss_scale] * elements


def test_megatron_optimizer_lengthens_the_step_by_its_kernels():
    """One replica, two tp ranks: the kernels run one after another on the compute
    stream at the step's end, so the step grows by exactly their priced time."""
    from charon_ir.api import TrainingConfig, build_training_module, simulate
    from charon_ir.dialects.sim import CostAttr

    options = dict(model=TINY, gpus=2, tp=2, seq_len=128, global_batch=2, hardware="A100-SXM4-80GB")
    fused = simulate(**options)
    unfused = simulate(**options, optimizer="unfused-fp16")
    _, module, _ = build_training_module(TrainingConfig(**options, optimizer="unfused-fp16"))
    kernels = sum(
        op.attributes[sim.COST_ATTR].time_s.data
        for op in module.walk()
        if isinstance(op, sim.GenericOp) and op.callee.data in KERNELS and isinstance(op.attributes[sim.COST_ATTR], CostAttr)
    )
    assert kernels > 0
    assert unfused["iteration_time_s"] - fused["iteration_time_s"] == pytest.approx(kernels, rel=1e-9)
    assert unfused["flops_per_gpu"] == fused["flops_per_gpu"]


def test_bad_optimizer_is_one_line():
    out = subprocess.run(
        [sys.executable, "-m", "charon_ir.cli", "simulate", "--model", TINY, "--optimizer", "apex"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr == "error: --optimizer must be fused, unfused-fp16, unfused-bf16, got 'apex'\n"
