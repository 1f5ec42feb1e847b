"""data-parallel with a context-parallel axis: cp ranks hold whole weights, so
the gradient group is dp x cp (Megatron-Core's `data_parallel_group_with_cp`). The
weight gradients are summed once per step, not every micro-batch. ZeRO shards over
all of the group, and each cp rank brings its share of the step's tokens."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.api import simulate

TINY = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json")
SEQ = 512


def run(**options):
    return simulate(TINY, seq_len=SEQ, **options)


def gradient_stream(report) -> float:
    """Busy seconds of the stream of the gradients' reduction: dp's with cp in it."""
    return report["streams"]["comm_dp_cp"]["busy_s"]


@settings(max_examples=8, deadline=None)
@given(cp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 2]), tp=st.sampled_from([1, 2]),
       pp=st.sampled_from([1, 2]), per_replica=st.sampled_from([2, 3]))
def test_tokens_per_second_count_every_token_of_the_step(cp, dp, tp, pp, per_replica):
    """Shard-context cuts each rank's `tokens` input to 1/cp. The report divided
    the step's tokens by cp."""
    batch = dp * per_replica
    r = run(gpus=cp * dp * tp * pp, cp=cp, dp=dp, tp=tp, pp=pp, global_batch=batch)
    assert r["tokens_per_s"] * r["iteration_time_s"] == pytest.approx(batch * SEQ, rel=1e-9)


def test_weight_gradients_are_summed_over_cp_once_per_step():
    one, four = (run(gpus=2, cp=2, zero=1, global_batch=m) for m in (1, 4))
    # the reduction's bytes do not grow with the micro-batches (they did, 4x)
    assert gradient_stream(four) == pytest.approx(gradient_stream(one), rel=1e-6)
    # no all-reduce of weight gradients is left on cp alone: what stays there is
    # the loss's sum, a few latency-bound bytes per micro-batch
    assert one["streams"]["comm_cp"]["busy_s"] < gradient_stream(one) / 5


def test_zero_shards_over_the_context_parallel_ranks():
    """ZeRO-1 over dp x cp: the optimizer states halve from cp 1 to cp 2."""
    from charon_ir.api import TrainingConfig, build_training_module

    def optimizer_bytes(cp: int) -> int:
        *_, memory = build_training_module(TrainingConfig(
            model=TINY, seq_len=SEQ, gpus=2 * cp, cp=cp, dp=2, zero=1, global_batch=2))
        return memory[0].optimizer

    assert optimizer_bytes(2) == pytest.approx(optimizer_bytes(1) / 2, rel=0.01)
