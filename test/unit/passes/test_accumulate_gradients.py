"""accumulate-gradients: each micro-batch pays the add of its weight gradients
into the buffer, on the compute stream."""

from pathlib import Path

import pytest

from charon_ir.api import TrainingConfig, build_training_module, simulate
from charon_ir.dialects import sim
from charon_ir.dialects.sim import COST_ATTR
from charon_ir.passes.accumulate_gradients import CALLEE

STEP = str(Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_step.mlir")


@pytest.mark.parametrize("microbatches", [1, 3])
def test_every_micro_batch_adds_its_gradients(microbatches):
    options = dict(gpus=1, global_batch=microbatches, tier="fine")
    _, module, _ = build_training_module(TrainingConfig(model=STEP, unfused_grad_accumulation=True,
                                                        gpus=1, global_batch=microbatches))
    adds = [op for op in module.walk() if isinstance(op, sim.GenericOp) and op.callee.data == CALLEE]
    # one inside the layer repeat (run once per layer), one for the head's gradient
    assert len(adds) == 2
    layers = next(op for op in module.walk() if isinstance(op, sim.RepeatOp)).count.value.data
    inside, outside = (op.attributes[COST_ATTR].time_s.data for op in adds)
    per_microbatch = layers * inside + outside
    with_adds = simulate(STEP, unfused_grad_accumulation=True, **options)["iteration_time_s"]
    without = simulate(STEP, **options)["iteration_time_s"]
    assert with_adds - without == pytest.approx(microbatches * per_microbatch, rel=1e-9)
