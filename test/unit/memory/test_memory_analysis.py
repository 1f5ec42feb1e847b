"""Per-stage peak memory: ZeRO arithmetic, micro-batches in flight per schedule,
the OOM diagnostic, and GPT-3 175B on TP8 x PP8 with ZeRO-1."""

from __future__ import annotations

import json
import re

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import OpResult

from charon_ir.api import build_training_module, configure
from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.memory import GIB, analyze_memory, peak_bytes_per_stage
from charon_ir.memory.liveness import Roots, fp8_saved_gemm_inputs
from charon_ir.memory.megatron_reference import GptShape, gpt_module
from charon_ir.parallel.schedules import stage_order
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.memory_analysis import MemoryAnalysisPass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.recompute import RecomputePass

SHAPE = GptShape(s=256, b=1, h=512, a=8, layers=8)
PARAMS_PER_LAYER = 12 * 512 * 512 + 2 * 512


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_zero_shards_states_over_dp(zero: int):
    module = gpt_module(SHAPE)
    DataParallelPass(dp=4, zero=zero).apply(Context(), module)
    (mem,) = analyze_memory(module)
    n = SHAPE.layers * PARAMS_PER_LAYER
    assert mem.params == 2 * n // (4 if zero >= 3 else 1)
    assert mem.grads == 2 * n // (4 if zero >= 2 else 1)
    assert mem.optimizer == 12 * n // (4 if zero >= 1 else 1)
    # gradient buckets, shards and gathered parameters are model states, not activations
    (plain,) = analyze_memory(gpt_module(SHAPE))
    assert mem.saved_per_microbatch == plain.saved_per_microbatch


def test_zero3_keeps_the_weights_outside_the_layers_whole():
    """ZeRO-3 gathers a layer's weights before the layer runs and keeps them sharded
    otherwise; the embedding and the head, which no layer gathers, are all-gathered
    after the step and stay whole. The largest buffer is then a bucket of them, not
    a whole-model gather."""
    from pathlib import Path

    from charon_ir.frontend import parse_ir

    path = Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir"
    module = parse_ir(path.read_text())
    DataParallelPass(dp=4, zero=3).apply(Context(), module)
    (mem,) = analyze_memory(module)
    layers, outside = 8 * 64 * 64, 2 * 1000 * 64
    assert mem.params == 2 * layers // 4 + 2 * outside
    assert mem.optimizer == 12 * (layers + outside) // 4
    one_layer = 2 * 64 * 64
    assert mem.comm_buffers == 2 * outside + 2 * one_layer


def test_fsdp2_shards_are_the_fp32_master_copy():
    """FSDP2 keeps each shard in fp32 and casts it to bf16 only for the all-gather:
    the shard is the optimizer's master copy, so a layer parameter costs 4 bytes
    an element / dp as its shard and 8 (Adam's m, v) / dp as its states: 2 bytes
    an element / dp less than a bf16 shard beside a master copy (DeepSpeed)."""
    module = gpt_module(SHAPE)
    DataParallelPass(dp=4, zero=3).apply(Context(), module)
    (bf16,) = analyze_memory(module)
    (fp32,) = analyze_memory(module, fp32_param_shards=True)
    n = SHAPE.layers * PARAMS_PER_LAYER
    assert fp32.params == 4 * n // 4 and fp32.optimizer == 8 * n // 4
    assert fp32.grads == bf16.grads and fp32.comm_buffers == bf16.comm_buffers
    assert (bf16.params + bf16.optimizer) - (fp32.params + fp32.optimizer) == 2 * n // 4
    # kept gathered (FSDP2 under pipelining): the bf16 gathered copy beside the fp32 shard
    (kept,) = analyze_memory(module, fp32_param_shards=True, zero3_keep_gathered=True)
    assert kept.params == 4 * n // 4 + 2 * n and kept.optimizer == 8 * n // 4


def test_fp32_param_shards_need_zero3():
    module = gpt_module(SHAPE)
    DataParallelPass(dp=4, zero=1).apply(Context(), module)
    with pytest.raises(CharonError, match="option 'fp32-param-shards' needs ZeRO-3"):
        analyze_memory(module, fp32_param_shards=True)


@pytest.mark.parametrize(("framework", "fp32_shards"), [("fsdp2", True), ("deepspeed", False)])
def test_only_fsdp2_keeps_fp32_shards(framework: str, fp32_shards: bool):
    config, _ = configure("m", framework, gpus=8, zero=3)
    assert config.fp32_param_shards is fp32_shards


def test_fp32_gradients():
    (mem,) = analyze_memory(gpt_module(SHAPE), grad_bytes=4)
    assert mem.grads == 4 * SHAPE.layers * PARAMS_PER_LAYER


@pytest.mark.parametrize(
    ("schedule", "pp", "vpp", "m"),
    [("1f1b", 4, 1, 8), ("1f1b", 4, 1, 4), ("gpipe", 4, 1, 6), ("interleaved", 2, 2, 4), ("zb-h1", 4, 1, 8)],
)
def test_in_flight_follows_the_schedule(schedule: str, pp: int, vpp: int, m: int):
    module = gpt_module(SHAPE)
    PipelinePass(pp=pp, vpp=vpp, schedule=schedule, microbatches=m).apply(Context(), module)
    for mem in analyze_memory(module):
        held = most = 0
        for kind, _, _ in stage_order(schedule, pp, vpp, m, mem.stage):
            if schedule == "zb-h1" and kind == "B":
                continue  # a micro-batch is held until its W item
            held += 1 if kind == "F" else -1
            most = max(most, held)
        assert mem.in_flight == most
        if schedule == "1f1b":
            assert mem.in_flight == min(pp - mem.stage, m)
        if schedule == "zb-h1":
            # every stage holds as many micro-batches as 1F1B's first stage
            assert mem.in_flight == min(pp, m)
        # the held micro-batches' saved activations are part of the peak
        per_chunk = mem.saved_per_microbatch / vpp
        assert mem.activations >= (mem.in_flight - 1) * per_chunk


def test_zb_h1_keeps_what_the_weight_gradients_read():
    """Between a micro-batch's B and W items the stage keeps part of its saved
    activations (the weight GEMMs' inputs) plus the gradients of the GEMM
    outputs: more than nothing, and the peak is at least 1F1B's on every stage."""
    peaks = {}
    for schedule in ("1f1b", "zb-h1"):
        module = gpt_module(SHAPE)
        PipelinePass(pp=4, schedule=schedule, microbatches=8).apply(Context(), module)
        peaks[schedule] = analyze_memory(module)
    for one, zb in zip(peaks["1f1b"], peaks["zb-h1"]):
        assert 0 < zb.weight_grad_residual_per_microbatch
        assert zb.activations >= one.activations
    # the first stage already holds pp micro-batches under 1F1B
    assert peaks["zb-h1"][0].activations == peaks["1f1b"][0].activations


def test_recompute_lowers_the_peak():
    peaks = {}
    for policy in ("none", "selective", "full"):
        module = gpt_module(SHAPE)
        RecomputePass(policy=policy).apply(Context(), module)
        (mem,) = analyze_memory(module)
        peaks[policy] = mem.activations
    assert peaks["none"] > peaks["selective"] > peaks["full"]


def test_pass_attaches_one_report_per_physical_stage():
    module = gpt_module(SHAPE)
    PipelinePass(pp=4, microbatches=8).apply(Context(), module)
    MemoryAnalysisPass(limit_gb=80).apply(Context(), module)
    stages = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]
    seen = []
    for stage in stages:
        report = stage.attributes["sim.memory"]
        assert isinstance(report, ArrayAttr)
        for entry in report.data:
            assert isinstance(entry, sim.StageMemoryAttr)
            seen.append(entry.field("stage"))
            assert entry.peak() > 0
    assert sorted(seen) == [0, 1, 2, 3]
    # the report's peak is the analysis's, stage by stage
    assert peak_bytes_per_stage(module) == [s.peak for s in analyze_memory(module)]


def test_oom_is_one_line_naming_the_stage_and_three_consumers():
    module = gpt_module(SHAPE)
    PipelinePass(pp=2, microbatches=4).apply(Context(), module)
    with pytest.raises(CharonError) as err:
        MemoryAnalysisPass(limit_gb=0.01).apply(Context(), module)
    message = str(err.value)
    assert "\n" not in message
    assert re.fullmatch(
        r"memory-analysis: stage 0 needs \d+\.\d GiB of 0\.0 GiB: "
        r"[a-z ]+ \d+\.\d GiB, [a-z ]+ \d+\.\d GiB, [a-z ]+ \d+\.\d GiB",
        message,
    ), message


# ---------------------------------------------------------------------------
# GPT-3 175B, TP8 x PP8, ZeRO-1 over dp = 8, s = 2048, micro-batch 1, 64 micro-batches
# ---------------------------------------------------------------------------


def gpt3_175b_tp8_pp8(gpt3_175b, zero: int, policy: str = "none"):
    from charon_ir.passes.shard_tensor import ShardTensorPass

    module = gpt3_175b.clone()
    ctx = Context()
    ShardTensorPass(tp=8).apply(ctx, module)
    RecomputePass(policy=policy).apply(ctx, module)
    PipelinePass(pp=8, microbatches=64).apply(ctx, module)
    DataParallelPass(dp=8, zero=zero).apply(ctx, module)
    return module


def test_gpt3_175b_tp8_pp8_zero1_fits_an_h100(gpt3_175b):
    module = gpt3_175b_tp8_pp8(gpt3_175b, zero=1)
    stages = analyze_memory(module)
    for m in stages:  # shown with `pytest -s`
        top = ", ".join(f"{label} {b / GIB:.2f} GiB" for label, b in m.top())
        print(f"stage {m.stage}: peak {m.peak / GIB:.2f} GiB, in flight {m.in_flight}: {top}")
    assert [m.stage for m in stages] == list(range(8))
    assert [m.in_flight for m in stages] == [8, 7, 6, 5, 4, 3, 2, 1]
    # 175B / 64 model-parallel ranks: ~2.7B parameters, bf16, Adam states / dp; the
    # first and the last stage each hold the tied word embedding and its states
    for m in stages:
        assert 4.9 * GIB < m.params < 5.4 * GIB
        assert m.optimizer == pytest.approx(12 / 8 * m.params / 2, rel=1e-6)
        assert [label for label, _ in m.top()][0] == "activations" or m.stage == 7
    peaks = [m.peak for m in stages]
    assert peaks == sorted(peaks, reverse=True)  # the first stage holds the most
    assert peaks[0] < 80 * GIB
    MemoryAnalysisPass(limit_gb=80).apply(Context(), module)


def test_gpt3_175b_tp8_pp8_without_zero_does_not_fit(gpt3_175b):
    module = gpt3_175b_tp8_pp8(gpt3_175b, zero=0)
    with pytest.raises(CharonError) as err:
        MemoryAnalysisPass(limit_gb=80).apply(Context(), module)
    assert re.fullmatch(
        r"memory-analysis: stage 0 needs \d+\.\d GiB of 80\.0 GiB: activations \d+\.\d GiB, "
        r"optimizer states \d+\.\d GiB, parameters \d+\.\d GiB",
        str(err.value),
    ), str(err.value)


def test_peak_bytes_per_stage_reads_the_report():
    from charon_ir.memory import peak_bytes_per_stage

    module = gpt_module(SHAPE)
    PipelinePass(pp=4, microbatches=8).apply(Context(), module)
    fresh = peak_bytes_per_stage(module)
    MemoryAnalysisPass(limit_gb=80).apply(Context(), module)
    assert peak_bytes_per_stage(module) == fresh == [m.peak for m in analyze_memory(module)]
    assert fresh == sorted(fresh, reverse=True)


GATHERED_WEIGHT = """
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 2)
  %x = sim.input "x" : tensor<8x16xbf16>
  %w = sim.param "w" : tensor<2x8x16xbf16>
  %f:2 = sim.phase "forward" -> tensor<8x16xbf16>, tensor<2x8x16xbf16> {
    %r:2 = sim.repeat 2 iter(%x : tensor<8x16xbf16>) slices(%w : tensor<2x8x16xbf16>) -> (tensor<8x16xbf16>, tensor<2x8x16xbf16>) {
    ^bb0(%h: tensor<8x16xbf16>, %wi: tensor<8x16xbf16>):
      %wf = coll.all_gather %wi on @mesh ["tp"] axis 0 : tensor<8x16xbf16> -> tensor<16x16xbf16>
      %y = sim.matmul %h, %wf : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
      sim.yield %y, %h : tensor<8x16xbf16>, tensor<8x16xbf16>
    }
    sim.yield %r#0, %r#1 : tensor<8x16xbf16>, tensor<2x8x16xbf16>
  }
}
"""


def test_a_gathered_weight_is_a_communication_buffer_not_an_activation():
    from charon_ir.memory import phase_memory
    from charon_ir.testing import parse_module

    module = parse_module(GATHERED_WEIGHT)
    mem = phase_memory(module.body.block)
    # layer 1 keeps its input (256 B) while layer 2 computes y (256 B) from its
    # input; then the final output and the two stacked inputs: 256 + 512
    assert mem.saved == 768
    assert mem.forward_peak == 768
    (stage,) = analyze_memory(module)
    assert stage.comm_buffers == 512  # the gathered 16x16 weight


@pytest.mark.parametrize("limit", [-1.0, float("nan")])
def test_a_limit_that_is_no_size_is_one_line(limit):
    """NaN passed the `< 0` check and meant "the GPU's HBM" (the API and sweeps
    take any float; charon-opt's parser refuses the word)."""
    with pytest.raises(CharonError, match=r"^memory-analysis: option 'limit-gb' must be >= 0, got (-1.0|nan)$"):
        MemoryAnalysisPass(limit_gb=limit).limit_bytes(None)


@pytest.mark.parametrize("framework", ["deepspeed", "deepspeed-0.3", "fsdp2", "megatron-lm-2021"])
def test_presets_whose_pipeline_keeps_stage_outputs(framework: str):
    """DeepSpeed's PipelineEngine (pipe_buffers['outputs']), torch's pipelining
    (fwd_cache) and Megatron-LM v2 (output_tensors) keep each stage's forward
    output to its backward; only a pipeline has one to keep."""
    piped, _ = configure("m", framework, gpus=8, pp=4, tp=1)
    flat, _ = configure("m", framework, gpus=8, pp=1, tp=1)
    assert piped.keep_stage_outputs and not flat.keep_stage_outputs



def test_a_rings_merged_attention_output_stays_16_bit_under_fp8(tmp_path):
    """Under context parallelism the ring's merge (`ring_attention.merge`) is the
    attention output flash attention's backward reads: kept 16-bit, not cast to
    fp8 with the linears' inputs."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
        "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1024, "max_position_embeddings": 512,
        "tie_word_embeddings": False}))
    config, _ = configure(str(path), gpus=2, cp=2, seq_len=256, global_batch=2, micro_batch=1,
                          precision="fp8", hardware="H100-SXM5-80GB")
    _, module, _ = build_training_module(config)
    stage = next(op for op in module.body.block.ops if isinstance(op, sim.StageOp))
    fp8 = fp8_saved_gemm_inputs(stage.body.block, Roots())
    merges = [op for op in module.walk() if sim.is_generic(op, sim.GenericCallee.RING_MERGE)]
    assert merges and fp8  # the ring ran; the linears' inputs are saved in fp8
    assert not [r for r in fp8 if isinstance(r, OpResult) and sim.is_generic(r.op, sim.GenericCallee.RING_MERGE)]
