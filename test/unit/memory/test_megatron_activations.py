"""First-stage activations against Megatron-LM's own theoretical formula.

Megatron-LM, megatron/training/theoretical_memory_usage.py (NVIDIA/Megatron-LM
commit 00caa53af30912914981c86f39db123961678bbd): `compute_activation_memory`
(lines 201-272), `compute_activation_memory_without_sp` (275-351), and the choice
between them in `report_theoretical_memory` (line 366: the first with sequence
parallelism and selective recompute, the second otherwise). Re-typed below, not
imported (Megatron-LM's training package is not installed; Megatron-Core is).

Both count what the first pipeline stage's in-flight micro-batches keep for
their backward: Korthikanti et al.'s per-layer terms x the layers of the pp
micro-batches 1F1B holds (L / pp layers x pp), times 1 + (pp - 1) / (pp vpp)
under interleaving, plus the embedding's inputs and dropout mask, plus the
output layer at pp = 1. The analysis's counterpart is `StageMemory.saved_in_flight`
(the peak adds the running micro-batch's working set, which the formula leaves
out; printed beside it).

The model is Megatron-Core's own GPT (`megatron:` frontend): LayerNorm, GeLU MLP
of 4h, multi-head attention, biases, the kernels of Transformer Engine's spec
(flash attention, fused bias-GeLU). Where both model the same terms the two
agree within 2 % (measured: +0.2 to +0.3 %, LayerNorm statistics and flash
attention's log-sum-exp, which the formula omits). Where they differ, by design:

1. Dropout masks. The formula always counts a 1-byte mask for the two hidden
   dropouts of a layer (2 sbh of its 18 and of its 10) and the embedding
   dropout (sbh per in-flight micro-batch). The model runs without dropout
   (the frontend's `hidden_dropout` and `attention_dropout` 0, as Megatron-
   Bridge's Llama recipes), so the comparison takes the formula with those terms
   removed (`dropout_masks=False`) and checks that they are the whole gap.
2. The 1.05 of `compute_activation_memory_without_sp` ("buffer for optimizer and
   miscellaneous temporaries") is not an activation: compared without it.
3. Output layer at pp = 1 without sequence parallelism: the `_without_sp`
   function counts bf16 logits and one sbh of the final norm's output, its
   sequence-parallel twin fp32 logits and 4 sbh. Megatron-Core's cross entropy
   saves the fp32 softmax (`megatron/core/tensor_parallel/cross_entropy.py`:
   `vocab_parallel_logits.float()`), the norm its input and output: the
   analysis counts 4 bytes x s b V / t + 4 sbh, the sequence-parallel
   function's figure, in both cases.
4. Full recompute. The formula has no such term (`report_theoretical_memory`
   takes the `_without_sp` function for every granularity but selective with
   sequence parallelism); the analysis keeps each layer's input, Korthikanti's
   2 sbh (/ t with sequence parallelism).
5. GQA and gated MLPs (the Llama test): the formula's 18 has 6 sbh of Q, K, V
   and its 4 x ffn / h is GeLU's input and output; a GQA model keeps
   2 sbh (1 + 2 groups / heads), a SwiGLU MLP its two-halved input (4 ffn sb)
   and its output (2 ffn sb). (`_without_sp`'s 24 / t assumes ffn = 4h
   outright: 16 sbh of GeLU input and output.) With those terms replaced, the
   analysis of the Hugging Face Llama agrees within 2 %.
6. Fewer micro-batches than stages (the formula's min(1, m / pp)): the analysis's
   1F1B refuses such a run, so it is not compared.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.memory import PhaseMemory
from charon_ir.memory.schedule import scheduled_activations

pytest.importorskip("torch")

from charon_ir.api import build_training_module, configure  # noqa: E402

TOLERANCE = 0.02

# Megatron-Core's GPT with the formula's shapes: ffn = 4h, heads x kv_channels = h
GPT = {
    "num_layers": 8, "hidden_size": 512, "num_attention_heads": 8, "ffn_hidden_size": 2048,
    "normalization": "LayerNorm", "activation_func": "gelu", "add_bias_linear": True,
    "vocab_size": 4096, "max_sequence_length": 1024, "position_embedding_type": "learned_absolute",
    "share_embeddings_and_output_weights": False,
}
# a Llama of GQA (2 groups of 8 heads) and SwiGLU, through the Hugging Face import
LLAMA = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512,
    "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8,
    "num_key_value_heads": 2, "vocab_size": 4096, "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
}


@dataclass(frozen=True)
class MegatronArgs:
    """The `args` fields Megatron-LM's activation formulas read."""

    seq_length: int
    micro_batch_size: int
    hidden_size: int
    ffn_hidden_size: int
    num_layers: int
    padded_vocab_size: int
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: int | None = None
    sequence_parallel: bool = False
    recompute_granularity: str | None = None


def _pipeline_factor(args: MegatronArgs, num_microbatches: int | None) -> float:
    pp, vpp = args.pipeline_model_parallel_size, args.virtual_pipeline_model_parallel_size
    if vpp is not None:
        return 1 + (pp - 1) / (pp * vpp)  # interleaved_schedule_memory_penalty
    if pp > 1 and num_microbatches is not None:
        return min(1, num_microbatches / pp)
    return 1.0


def compute_activation_memory(args: MegatronArgs, num_microbatches: int | None, *,
                              dropout_masks: bool = True) -> float:
    """Lines 201-272. `dropout_masks=False` (not Megatron's) drops the 1-byte
    dropout masks: the 2 of the layer's 18 and the embedding's sbh x pp."""
    s, b, h = args.seq_length, args.micro_batch_size, args.hidden_size
    pp = args.pipeline_model_parallel_size
    masks = 0 if dropout_masks else 2
    activation_memory = (s * b * h) * (18 - masks + (4 * (args.ffn_hidden_size / h)))
    activation_memory *= args.num_layers
    activation_memory += 8 * s * b * pp  # input to embedding (pp micro-batches in flight)
    if dropout_masks:
        activation_memory += s * b * h * pp  # dropout in embedding layer
    activation_memory *= _pipeline_factor(args, num_microbatches)
    if pp == 1:
        # inputs to output layer and CE loss
        activation_memory += s * b * h * 4 * (1 + (args.padded_vocab_size / h))
    return activation_memory / args.tensor_model_parallel_size


def compute_activation_memory_without_sp(args: MegatronArgs, num_microbatches: int | None, *,
                                         dropout_masks: bool = True, overhead: bool = True) -> float:
    """Lines 275-351. `dropout_masks=False` drops the 2 of the layer's 10 and the
    embedding's mask; `overhead=False` the final x 1.05 (neither is Megatron's)."""
    s, b, h, t = args.seq_length, args.micro_batch_size, args.hidden_size, args.tensor_model_parallel_size
    pp = args.pipeline_model_parallel_size
    masks = 0 if dropout_masks else 2
    per_layer_memory = s * b * h * (10 - masks + (24 / t))
    total = per_layer_memory * args.num_layers
    total += 8 * s * b * pp
    if dropout_masks:
        total += s * b * h * pp
    total *= _pipeline_factor(args, num_microbatches)
    if pp == 1:
        logits_size = s * b * args.padded_vocab_size / t
        final_ln_output = s * b * h
        total += (logits_size + final_ln_output) * 2
    return total * (1.05 if overhead else 1.0)


def theoretical_activation_memory(args: MegatronArgs, num_microbatches: int | None, **terms) -> float:
    """`report_theoretical_memory`'s choice (line 366)."""
    if args.sequence_parallel and args.recompute_granularity == "selective":
        terms.pop("overhead", None)
        return compute_activation_memory(args, num_microbatches, **terms)
    return compute_activation_memory_without_sp(args, num_microbatches, **terms)


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1
    vpp: int = 1
    sp: bool = False
    recompute: str = "selective"
    seq: int = 512
    micro_batch: int = 1
    microbatches: int = 1

    def megatron_args(self, model: dict) -> MegatronArgs:
        return MegatronArgs(
            seq_length=self.seq, micro_batch_size=self.micro_batch, hidden_size=model["hidden_size"],
            ffn_hidden_size=model["ffn_hidden_size"], num_layers=model["num_layers"],
            padded_vocab_size=model["vocab_size"], tensor_model_parallel_size=self.tp,
            pipeline_model_parallel_size=self.pp,
            virtual_pipeline_model_parallel_size=self.vpp if self.vpp > 1 else None,
            sequence_parallel=self.sp,
            recompute_granularity=None if self.recompute == "none" else self.recompute,
        )

    @property
    def sbh(self) -> int:
        return self.seq * self.micro_batch * GPT["hidden_size"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt, llama = root / "gpt.yaml", root / "llama.json"
    gpt.write_text(yaml.safe_dump(GPT))
    llama.write_text(json.dumps(LLAMA))
    mp = pytest.MonkeyPatch()
    mp.setenv("CHARON_CACHE_DIR", str(root / "ir"))
    yield {"gpt": f"megatron:{gpt}", "llama": str(llama)}
    mp.undo()


def first_stage(model: str, layout: Layout):
    if model.startswith("megatron:"):
        pytest.importorskip("megatron.core")  # the `megatron` extra
    config, _ = configure(
        model, gpus=layout.tp * layout.pp, tp=layout.tp, pp=layout.pp, vpp=layout.vpp,
        sequence_parallel=layout.sp, recompute=layout.recompute, seq_len=layout.seq,
        micro_batch=layout.micro_batch, global_batch=layout.micro_batch * layout.microbatches,
        memory_limit_gb=1e9,
    )
    _, _, memory = build_training_module(config)
    return memory[0]


def report(name: str, layout: Layout, stage, theirs: float) -> float:
    error = stage.saved_in_flight / theirs - 1
    print(  # shown with `pytest -s`
        f"{name} {layout}: saved in flight {stage.saved_in_flight / layout.sbh:.3f} sbh, Megatron "
        f"{theirs / layout.sbh:.3f} sbh ({100 * error:+.2f} %); peak with the working set "
        f"{stage.activations / layout.sbh:.3f} sbh, {stage.in_flight} forwards in flight"
    )
    return error


SAME_TERMS = [
    Layout(tp=2, sp=True),  # pp 1: the output layer in fp32 (the sequence-parallel function)
    Layout(tp=2, sp=True, pp=2, microbatches=4),
    Layout(tp=4, sp=True, pp=2, microbatches=8, micro_batch=2),
    Layout(tp=2, pp=2, microbatches=4),  # no sp: 10 + 24/t
    Layout(pp=4, microbatches=8, micro_batch=2, recompute="none"),  # flash attention: no s^2 term to recompute
    Layout(tp=2, sp=True, pp=2, vpp=2, microbatches=8, seq=1024),
    Layout(tp=2, sp=True, pp=4, vpp=2, microbatches=8),
]


@pytest.mark.parametrize("layout", SAME_TERMS, ids=str)
def test_gpt_first_stage_matches_megatron(models, layout):
    stage = first_stage(models["gpt"], layout)
    args = layout.megatron_args(GPT)
    m = layout.microbatches
    theirs = theoretical_activation_memory(args, m, dropout_masks=False, overhead=False)
    assert abs(report("gpt", layout, stage, theirs)) <= TOLERANCE
    # the difference 1. and 2. of the docstring are the whole of Megatron's excess
    megatron = theoretical_activation_memory(args, m)
    pp, sp_formula = layout.pp, layout.sp and layout.recompute == "selective"
    split = layout.tp if sp_formula else 1  # the sequence-parallel function divides all by t
    masks = (2 * GPT["num_layers"] + pp) * layout.sbh / split * _pipeline_factor(args, m)
    overhead = 1.0 if sp_formula else 1.05
    assert megatron == pytest.approx((theirs + masks) * overhead, rel=1e-12)
    # the working set of the running micro-batch comes on top, in the analysis only
    assert stage.activations > stage.saved_in_flight


def test_gpt_output_layer_without_sp_differs(models):
    """Difference 3: at pp 1 without sequence parallelism Megatron's function
    counts bf16 logits and one sbh; the analysis 4 sbV + 4 sbh, as the other function."""
    layout = Layout(recompute="none")
    stage = first_stage(models["gpt"], layout)
    args = layout.megatron_args(GPT)
    theirs = compute_activation_memory_without_sp(args, 1, dropout_masks=False, overhead=False)
    s, b, h, v = layout.seq, layout.micro_batch, GPT["hidden_size"], GPT["vocab_size"]
    fp32_softmax_and_norm = (4 * s * b * v + 4 * s * b * h) - 2 * (s * b * v + s * b * h)
    report("gpt", layout, stage, theirs)
    assert stage.saved_in_flight == pytest.approx(theirs + fp32_softmax_and_norm, rel=TOLERANCE)
    # the same model with sp: both sides at the fp32 figure
    sp = Layout(tp=2, sp=True)
    assert first_stage(models["gpt"], sp).saved_in_flight == pytest.approx(
        compute_activation_memory(sp.megatron_args(GPT), 1, dropout_masks=False), rel=TOLERANCE)


@pytest.mark.parametrize("layout", [Layout(tp=2, sp=True, pp=2, microbatches=4, recompute="full"),
                                    Layout(pp=2, microbatches=4, recompute="full")], ids=str)
def test_gpt_full_recompute_keeps_layer_inputs(models, layout):
    """Difference 4: Megatron's formula has no full-recompute term (it reports the
    selective figure); the analysis keeps each layer's input, 2 sbh (/ t with sp),
    for each of the pp in-flight micro-batches."""
    stage = first_stage(models["gpt"], layout)
    args = layout.megatron_args(GPT)
    megatron = theoretical_activation_memory(args, layout.microbatches)
    assert megatron == theoretical_activation_memory(replace(args, recompute_granularity="selective",
                                                             sequence_parallel=False), layout.microbatches)
    t = layout.tp if layout.sp else 1
    korthikanti = 2 * layout.sbh / t * GPT["num_layers"]  # L / pp layers x pp micro-batches
    report("gpt full", layout, stage, megatron)
    assert stage.saved_in_flight == pytest.approx(korthikanti, rel=TOLERANCE)


def llama_megatron(layout: Layout) -> float:
    """Megatron's figure with difference 5 applied: Q, K, V of a GQA model and a
    SwiGLU MLP in place of 6 sbh and GeLU's 4 ffn / h."""
    h, ffn, heads, groups = (LLAMA["hidden_size"], LLAMA["intermediate_size"],
                             LLAMA["num_attention_heads"], LLAMA["num_key_value_heads"])
    args = MegatronArgs(
        seq_length=layout.seq, micro_batch_size=layout.micro_batch, hidden_size=h, ffn_hidden_size=ffn,
        num_layers=LLAMA["num_hidden_layers"], padded_vocab_size=LLAMA["vocab_size"],
        tensor_model_parallel_size=layout.tp, pipeline_model_parallel_size=layout.pp,
        virtual_pipeline_model_parallel_size=layout.vpp if layout.vpp > 1 else None,
        sequence_parallel=layout.sp, recompute_granularity="selective")
    theirs = theoretical_activation_memory(args, layout.microbatches, dropout_masks=False, overhead=False)
    qkv = 2 * (1 + 2 * groups / heads) - 6
    # the sequence-parallel function's MLP is 4 ffn / h; the other's 24 / t holds
    # 16 for a GeLU MLP of 4h whatever the model's ffn
    gelu = 4 * ffn / h if layout.sp else 16
    mlp = (4 * ffn + 2 * ffn) / h - gelu
    split = layout.tp  # Q, K, V and the MLP are split by tp, with or without sp
    per_layer = (qkv + mlp) * layout.seq * layout.micro_batch * h / split
    factor = 1 + (layout.pp - 1) / (layout.pp * layout.vpp) if layout.vpp > 1 else 1
    return theirs + per_layer * LLAMA["num_hidden_layers"] * factor


@pytest.mark.parametrize("layout", [Layout(tp=2, sp=True, pp=2, microbatches=4),
                                    Layout(pp=2, vpp=2, microbatches=4, recompute="none")], ids=str)
def test_llama_first_stage_matches_megatron_with_gqa_and_swiglu(models, layout):
    stage = first_stage(models["llama"], layout)
    theirs = llama_megatron(layout)
    assert abs(report("llama", layout, stage, theirs)) <= TOLERANCE
    # as written, the sequence-parallel function undercounts this model (SwiGLU's
    # excess outweighs GQA's saving); the other's fixed 24 / t lands within 2 %
    # by chance (8 + 24 sbh against 31.3)
    args = MegatronArgs(layout.seq, layout.micro_batch, LLAMA["hidden_size"], LLAMA["intermediate_size"],
                        LLAMA["num_hidden_layers"], LLAMA["vocab_size"], layout.tp, layout.pp,
                        layout.vpp if layout.vpp > 1 else None, layout.sp, "selective")
    as_written = theoretical_activation_memory(args, layout.microbatches, dropout_masks=False, overhead=False)
    print(f"  as written: {as_written / layout.sbh:.3f} sbh")
    if layout.sp:
        assert stage.saved_in_flight > as_written * (1 + TOLERANCE)


def test_pipeline_factor_is_megatron_core_interleaved_warmup():
    """The interleaving penalty counts Megatron-Core's interleaved warm-up on the
    first stage, (pp - 1) x 2 + (vpp - 1) x pp chunk forwards, plus the one the
    steady state runs before its first backward."""
    for pp, vpp in [(2, 2), (4, 2), (4, 3), (8, 5)]:
        args = MegatronArgs(512, 1, 512, 2048, pp * vpp, 4096, 1, pp, vpp)
        chunks = (pp - 1) * 2 + (vpp - 1) * pp + 1
        assert _pipeline_factor(args, None) * pp * vpp == pytest.approx(chunks)
        assert math.ceil(_pipeline_factor(args, None) * pp) >= pp


@given(pp=st.integers(2, 8), vpp=st.integers(1, 4), rounds=st.integers(1, 3),
       saved=st.lists(st.integers(1, 10**9), min_size=4, max_size=4))
@settings(max_examples=60, deadline=None)
def test_most_saved_is_megatrons_in_flight_count(pp, vpp, rounds, saved):
    """The most the first stage's in-flight forwards keep is Megatron's count of
    them: pp micro-batches under 1F1B, (pp - 1) x 2 + (vpp - 1) x pp + 1 chunks
    interleaved (when every chunk saves the same); never above the peak, which
    adds the working set."""
    chunks = [PhaseMemory(saved=s, forward_peak=s + 7, backward_peak=s + 11) for s in saved[:vpp]]
    schedule = "interleaved" if vpp > 1 else "1f1b"
    acts = scheduled_activations(chunks, schedule, pp, rounds * pp, 0)
    assert acts.saved_in_flight <= acts.most_saved < acts.peak
    uniform = [PhaseMemory(saved=saved[0], forward_peak=saved[0], backward_peak=saved[0])] * vpp
    same = scheduled_activations(uniform, schedule, pp, rounds * pp, 0)
    in_flight = min(rounds * pp * vpp, (pp - 1) * 2 + (vpp - 1) * pp + 1) if vpp > 1 else pp
    assert same.most_saved == in_flight * saved[0]
    assert same.in_flight == in_flight
