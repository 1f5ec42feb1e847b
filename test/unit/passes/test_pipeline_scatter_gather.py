"""`pipeline{scatter-gather=true}` (Megatron-LM's scatter_gather_tensors_in_pipeline)
and `lower-to-events{blocking=pp}` (its sends waited for), on a tiny Llama."""

from pathlib import Path

import pytest

from charon_ir import api
from charon_ir.dialects import coll, sim

TINY = str(Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_config.json")
RUN = dict(hardware="A100-SXM4-80GB", gpus=4, tp=2, pp=2, seq_len=256, global_batch=8,
           micro_batch=1)


def module(**options):
    config = api.TrainingConfig(model=TINY, **(RUN | options))
    return api.build_training_module(config)[1]


def p2p(m, kind):
    return [op for op in m.walk() if isinstance(op, kind)]


def test_replicated_activations_cross_as_slices_gathered_over_tp():
    plain = module()
    scattered = module(pipeline_scatter_gather=True)
    whole = {sim.numel(op.operands[0]) for op in p2p(plain, coll.SendOp)}
    sliced = {sim.numel(op.operands[0]) for op in p2p(scattered, coll.SendOp)}
    assert whole == {256 * 256} and sliced == {256 * 256 // 2}
    # every receive is all-gathered over tp before the layers read it
    for recv in p2p(scattered, coll.RecvOp):
        (use,) = recv.results[0].uses
        gather = use.operation
        assert isinstance(gather, coll.AllGatherOp) and gather.axis_names() == ["tp"]
        assert sim.numel(gather.results[0]) == 256 * 256


def test_sequence_parallel_activations_are_already_slices():
    m = module(sequence_parallel=True, pipeline_scatter_gather=True)
    assert {sim.numel(op.operands[0]) for op in p2p(m, coll.SendOp)} == {256 * 256 // 2}
    for recv in p2p(m, coll.RecvOp):
        assert not any(isinstance(u.operation, coll.AllGatherOp) for u in recv.results[0].uses)


def test_waiting_for_the_sends_costs_their_time():
    # Megatron-Core's preset waits for the sends of a non-interleaved pipeline
    # itself (`pp_send_overlap`): the free run overlaps them by flag
    free = api.simulate(TINY, **RUN, pipeline_scatter_gather=True, pp_send_overlap=True)
    waited = api.simulate(TINY, **RUN, pipeline_scatter_gather=True, blocking_comm=("pp",))
    preset = api.simulate(TINY, **RUN, pipeline_scatter_gather=True)
    assert preset["iteration_time_s"] == waited["iteration_time_s"]
    assert preset["framework"]["settings"]["pp_send_overlap"]["value"] is False
    assert waited["iteration_time_s"] > free["iteration_time_s"]
    send = sum(v["busy_s"] for k, v in waited["streams"].items() if k.endswith("comm_pp_send"))
    assert waited["iteration_time_s"] - free["iteration_time_s"] <= send + 1e-12
    fine = api.simulate(TINY, **RUN, pipeline_scatter_gather=True, blocking_comm=("pp", "tp"),
                        tier="fine")
    fast = api.simulate(TINY, **RUN, pipeline_scatter_gather=True, blocking_comm=("pp", "tp"))
    assert fast["iteration_time_s"] == pytest.approx(fine["iteration_time_s"], rel=1e-9)
