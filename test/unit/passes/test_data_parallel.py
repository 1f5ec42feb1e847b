"""data-parallel: gradients are reduced once per step whatever the accumulation,
and the collectives move the bytes their closed forms say."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import event
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.flatten import flatten_all
from charon_ir.testing import make_context, parse_module

EIGHT_LAYERS = (Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir").read_text()
# parameters of eight_layers.mlir: embed 1000x64, 8 layers of 64x64, head 1000x64
PARAMS = 1000 * 64 + 8 * 64 * 64 + 1000 * 64


def dp_bytes(pp: int, m: int, dp: int, zero: int, vpp: int = 1, **options) -> dict[str, float]:
    """Bytes each rank sends per step on the dp axis, per collective kind, summed
    over every stage (the flat program expands every loop)."""
    ctx = make_context()
    module = parse_module(EIGHT_LAYERS, ctx)
    schedule = "interleaved" if vpp > 1 else "1f1b"
    PipelinePass(pp=pp, vpp=vpp, schedule=schedule, microbatches=m).apply(ctx, module)
    DataParallelPass(dp=dp, zero=zero, bucket_mb=1, **options).apply(ctx, module)
    module.verify()
    SetTargetPass(hardware="H100", gpus=pp * dp).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass().apply(ctx, module)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    flat = flatten_all(programs)
    out: dict[str, float] = {}
    for i, stream in enumerate(flat.stream):
        if stream >= 0 and flat.streams[stream] == "comm_dp":
            out[flat.labels[i]] = out.get(flat.labels[i], 0.0) + flat.bytes[i]
    return out


def padded(n: int, dp: int) -> int:
    return -(-n // dp) * dp


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.integers(1, 6), st.sampled_from([2, 4, 8]))
def test_ddp_reduces_gradients_once_per_step(pp, extra, dp):
    m = pp + extra
    got = dp_bytes(pp, m, dp, zero=0)
    # every gradient once, 2 bytes each, ring all_reduce 2(n-1)/n per rank; the
    # buckets pad each gradient group to a multiple of dp
    assert set(got) == {"all_reduce"}
    assert got["all_reduce"] >= 2 * (dp - 1) / dp * 2 * PARAMS
    assert got["all_reduce"] <= 2 * (dp - 1) / dp * 2 * (PARAMS + 16 * dp)


@pytest.mark.parametrize("zero", [1, 2])
def test_zero_reduce_scatters_gradients_and_gathers_parameters(zero):
    dp = 4
    got = dp_bytes(2, 4, dp, zero=zero)
    assert set(got) == {"reduce_scatter", "all_gather"}
    assert got["reduce_scatter"] == pytest.approx((dp - 1) / dp * 2 * PARAMS, rel=1e-3)
    assert got["all_gather"] == pytest.approx((dp - 1) / dp * 2 * PARAMS, rel=1e-3)


def test_zero3_gathers_layer_parameters_every_micro_batch():
    dp, m = 4, 4
    zero1 = dp_bytes(1, m, dp, zero=1)
    zero3 = dp_bytes(1, m, dp, zero=3)
    layers = 8 * 64 * 64 * 2
    # forward and backward of every micro-batch gather every layer's parameters;
    # after the step they stay sharded: only the parameters outside the layers
    # are gathered there, as under ZeRO-1
    extra = 2 * m * (dp - 1) / dp * layers
    after_step = (dp - 1) / dp * layers
    assert zero3["all_gather"] == pytest.approx(zero1["all_gather"] - after_step + extra, rel=1e-3)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 1)]), st.integers(0, 4), st.sampled_from([2, 4, 8]),
       st.sampled_from([1, 2]))
def test_overlap_param_gather_moves_the_same_bytes_once_per_step(stages, extra, dp, zero):
    """The gathers move from after the step into the first forward of each chunk:
    every micro-batch runs the forward, but only the first gathers, so a step
    sends what ZeRO-1/2 sends."""
    pp, vpp = stages
    m = pp + extra
    m += -m % pp  # interleaving needs whole rounds of pp micro-batches
    plain = dp_bytes(pp, m, dp, zero, vpp)
    overlapped = dp_bytes(pp, m, dp, zero, vpp, overlap_param_gather=True)
    assert set(overlapped) == {"reduce_scatter", "all_gather"}
    assert overlapped["reduce_scatter"] == plain["reduce_scatter"]
    # per-layer buckets pad each layer's parameters to a multiple of dp
    assert overlapped["all_gather"] == pytest.approx(plain["all_gather"], rel=1e-3)
    assert overlapped["all_gather"] == pytest.approx((dp - 1) / dp * 2 * PARAMS, rel=1e-3)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(dp=0), "data-parallel: option 'dp' must be >= 1, got 0"),
        (dict(dp=2, zero=0, overlap_param_gather=True),
         "data-parallel: option 'overlap-param-gather' needs zero 1 or 2 (only they gather updated "
         "parameters), got zero 0"),
        (dict(dp=2, zero=4), "data-parallel: option 'zero' must be 0, 1, 2 or 3, got 4"),
        (dict(dp=2, bucket_mb=0), "data-parallel: option 'bucket-mb' must be >= 1, got 0"),
    ],
)
def test_bad_options_are_one_line(options, message):
    ctx = make_context()
    module = parse_module(EIGHT_LAYERS, ctx)
    with pytest.raises(CharonError) as err:
        DataParallelPass(**options).apply(ctx, module)
    assert str(err.value) == message


MOE_ROUTER_TRAINED = (Path(__file__).resolve().parents[2] / "lit/passes/Inputs/moe_router_trained.mlir").read_text()
"""The MoE layer of parallel/examples.py (64 tokens, hidden 32, 8 experts) with the
router weight trained too: a dense parameter beside the routed experts."""


@pytest.mark.parametrize("dp, ep", [(2, 4), (1, 4), (3, 2)])
def test_expert_parallelism_is_carved_out_of_data_parallelism(dp, ep):
    """ep ranks are data-parallel replicas of the dense weights (the router here):
    its gradient is reduced over dp x ep ranks; the routed experts', which each
    ep rank holds a different slice of, over dp alone. ZeRO shards the optimizer
    states over the same groups."""
    from charon_ir.memory import analyze_memory
    from charon_ir.parallel.examples import apply_pipeline, parse

    tokens, hidden, experts = 64, 32, 8
    module = apply_pipeline(
        parse(MOE_ROUTER_TRAINED),
        f"shard-expert{{ep={ep}}},data-parallel{{dp={dp} zero=1}}",
    )
    module.verify()
    reduced = {}
    for op in module.walk():
        if op.name == "coll.reduce_scatter":
            axes = tuple(op.axis_names())
            reduced[axes] = reduced.get(axes, 0) + op.operands[0].type.element_count()
    expert_elements = (experts // ep) * (96 * 32 + 32 * 48)
    assert reduced.get(("dp", "ep")) == padded(experts * hidden, dp * ep)
    assert reduced.get(("dp",), 0) == (padded(expert_elements, dp) if dp > 1 else 0)
    (mem,) = analyze_memory(module)
    adam = 12
    expected = -(-experts * hidden * adam * 1 // (dp * ep)) + (
        -(-expert_elements * adam // dp) if dp > 1 else expert_elements * adam
    )
    assert mem.optimizer == expected
