"""Training records become simulate runs: configs, strategy defaults, and the
measured number converted with the source's own FLOP formula."""

from __future__ import annotations

import pytest

from charon_ir.frameworks import FRAMEWORKS
from charon_ir.validation import published_records
from charon_ir.validation.training import (
    DEFAULT_MICRO_BATCH,
    MBRIDGE_PERF_CONFIGS,
    Unsupported,
    batch_doubt,
    hf_config,
    SOURCE_FLOPS,
    megatron_core_flops,
    narayanan_eq3_flops,
    nemo_llama_flops,
    padded_vocab,
    source_of,
    training_case,
)


def record(rid: str) -> dict:
    return next(r for r in published_records() if r["id"] == rid)


def training_records() -> list[dict]:
    return [r for r in published_records() if r["category"] == "training"]


def test_every_training_record_maps_to_a_run():
    """Every training record maps to a run under its framework's preset."""
    for r in training_records():
        case = training_case(r)
        o = case.options
        assert o["tp"] * o["pp"] * o["cp"] * o["dp"] == o["gpus"], r["id"]
        assert o["global_batch"] % (o["dp"] * o["micro_batch"]) == 0, r["id"]
        assert case.measured_iteration_s > 0
        assert case.framework in FRAMEWORKS
    assert len(training_records()) == 91


def test_a_record_without_a_global_batch_is_refused():
    bare = record("nemo_longseq_llama2_7b_4k")
    bare = {**bare, "strategy": {**bare["strategy"], "global_batch": "not stated"}}
    with pytest.raises(Unsupported, match=r"^no global batch \(strategy.global_batch 'not stated'\)$"):
        training_case(bare)


LONGSEQ = {"4k": (1024, 1, 4), "16k": (256, 1, 16), "64k": (64, 2, 64), "256k": (16, 8, 256),
           "1024k": (4, 32, 1024)}
"""NeMo's long-sequence rows: global batch (the page's later revision), cp, GPUs."""


@pytest.mark.parametrize("size", list(LONGSEQ))
def test_nemo_long_sequence_rows_run_with_their_assumptions_named(size):
    """The five rows of NeMo 24.03's long-sequence table are compared: the batch
    read from the page's later revision (4,194,304 tokens a step in every row), the
    micro-batch and recomputation the table leaves out taken from the launcher's
    llama2_7b.yaml and named in the notes, under the nemo-24.07 preset."""
    rec = record(f"nemo_longseq_llama2_7b_{size}")
    case = training_case(rec)
    o = case.options
    global_batch, cp, gpus = LONGSEQ[size]
    assert (o["global_batch"], o["cp"], o["gpus"], o["micro_batch"]) == (global_batch, cp, gpus, 1)
    assert o["global_batch"] * o["seq_len"] == 4 * 2**20
    assert o["recompute"] == "none" and o["precision"] == "fp8"
    assert case.framework == "nemo-24.07" and case.settings["fp8_recipe"] == "delayed"
    notes = "; ".join(case.assumptions)
    assert f"global batch {global_batch} (the 'Batch Size' column of the page's later revision" in notes
    assert "micro-batch 1 (not stated; NeMo-Framework-Launcher llama2_7b.yaml)" in notes
    assert "recompute none (not stated; NeMo-Framework-Launcher llama2_7b.yaml)" in notes
    assert "9421f21" in rec["notes"]


def test_nemo_llama_formula_counts_causal_attention_as_full():
    """NeMo's `_llama2` is Megatron-Core's count with a gated MLP and the unpadded
    vocabulary: 12 s/h per layer for attention, the full square, whatever the mask."""
    b, s, l, h, v, ffn = 4, 2**20, 32, 4096, 32000, 11008
    nemo = nemo_llama_flops(b, s, l, h, v, heads=32, kv_heads=32, ffn=ffn)
    assert nemo == pytest.approx(megatron_core_flops(b, s, l, h, v, 32, 32, ffn, swiglu=True), rel=1e-12)
    attention = 12 * b * s * l * h * h * s / h
    assert attention / nemo == pytest.approx(256 / (1 + 1 + 1.5 * ffn / h + 256 + v / (2 * l * h)))


def test_nemo_long_sequence_tflops_convert_with_nemos_formula():
    """536 TFLOP/s per GPU on 1024 GPUs at 1024K tokens: step = F / (GPUs x rate),
    F by NeMo's formula with the unpadded vocabulary (tp 8 would pad it to 32768)."""
    rec = record("nemo_longseq_llama2_7b_1024k")
    s = 2**20
    flops = 4 * s * 32 * 4096**2 * (12 + 12 + 18 * 11008 / 4096 + 12 * s / 4096 + 6 * 32000 / (32 * 4096))
    assert training_case(rec).measured_iteration_s == pytest.approx(flops / (1024 * 536e12), rel=1e-12)
    assert "nemo_longseq" in SOURCE_FLOPS


def test_records_run_under_their_framework():
    assert training_case(record("narayanan21_t1_1.7B")).framework == "megatron-lm-2021"
    assert training_case(record("narayanan21_t2_ZeRO-3_174B_384gpu")).framework == "deepspeed-0.3"
    assert training_case(record("korthikanti22_t5_22B_full_recompute")).framework == "megatron-lm-2022"
    assert training_case(record("megatron_readme_h100_weak_70B")).framework == "megatron-core"
    assert training_case(record("mpt_7b_h100_80gb_8gpu_seq2048_amp_bf16")).framework == "llm-foundry"
    assert training_case(record("nemo2407_LLAMA3-70B_64gpu")).framework == "nemo-24.07"
    bridge = training_case(record("mbridge_25.11_H100_LLAMA3_70B_64gpu_FP8-CS"))
    assert bridge.framework == "megatron-bridge" and bridge.settings["fp8_recipe"] == "current"
    blackwell = training_case(record("mbridge_25.11_B200_DeepSeekV3_256gpu_FP8-MX"))
    assert blackwell.options["hardware"] == "B200-SXM-180GB" and blackwell.settings["fp8_recipe"] == "mxfp8"
    assert blackwell.config["model_type"] == "deepseek_v3"  # the bundled config
    cp = training_case(record("nemo2407_LLAMA3-8B_8gpu"))
    assert (cp.options["cp"], cp.options["dp"]) == (2, 4)
    nemotron = training_case(record("nemo2407_Nemotron-8B_64gpu"))
    assert nemotron.config["model_type"] == "nemotron" and nemotron.config["hidden_act"] == "relu2"


def test_gpt_oss_runs_its_performance_config_micro_batch():
    """GPT-OSS-120B H100's row states micro-batch 4 x grad-accum 2 over dp 16
    (128 sequences) for a global batch of 512; its Bridge config inherits
    micro_batch_size=1, which the mapping takes, naming the doubt."""
    rec = record("mbridge_25.11_H100_GPT-OSS-120B_64gpu_BF16")
    case = training_case(rec)
    o = case.options
    assert (o["micro_batch"], o["dp"], o["global_batch"]) == (1, 16, 512)
    assert o["global_batch"] // (o["dp"] * o["micro_batch"]) == 32
    assert rec["strategy"]["micro_batch"] == 4  # the record itself is left as read
    [note] = [a for a in case.assumptions if a.startswith("micro-batch")]
    assert "performance config" in note and "= 128, not its global batch 512" in note
    assert "micro_batch_size=1" in rec["notes"]


@pytest.mark.parametrize("rid", ["mbridge_25.11_B200_DeepSeekV3_256gpu_FP8-MX",
                                 "mbridge_25.11_GB200_DeepSeekV3_256gpu_BF16"])
def test_deepseek_v3_blackwell_rows_run_the_recipes_pipeline_layout(rid):
    """pp 16 (B200) and pp 4 x vp 4 (GB200) take the recipe's layout_map entry:
    embedding + 4 layers, 14 chunks of 4, one layer with the MTP module and loss."""
    case = training_case(record(rid))
    o = case.options
    layout = o["pp_layout"]
    assert len(layout) == o["pp"] * o["vpp"] == 16
    assert sum(layout) == case.config["num_hidden_layers"] == 61
    assert layout[0] == 4 and layout[-1] == 1 and set(layout[1:-1]) == {4}
    assert any(a.startswith("pp layout 4,4,") for a in case.assumptions)


def test_deepseek_v3_h100_notes_its_unsettled_a2a_overlap_and_runs_the_preset():
    """The config revisions read disagree on its moe_a2a_overlap: the row keeps
    the megatron-bridge preset's value and its notes say so; no other row does."""
    case = training_case(record("mbridge_25.09_H100_DeepSeekV3_dropless_1024gpu_FP8"))
    assert "moe_a2a_overlap" not in case.options
    [note] = [a for a in case.assumptions if a.startswith("moe_a2a_overlap not settled")]
    assert "set_moe_a2a_overlap_overrides" in note and "moe_a2a_overlap=False" in note
    other = training_case(record("mbridge_25.11_GB200_DeepSeekV3_256gpu_BF16"))
    assert not any("not settled" in a for a in other.assumptions)


def test_batch_doubt_names_inconsistent_batch_fields():
    assert batch_doubt({"micro_batch": 4, "grad_accum": 2}, 16, 512) == (
        "the record's micro-batch 4 x grad-accum 2 x dp 16 = 128, not its global batch 512")
    assert batch_doubt({"micro_batch": 2, "grad_accum": 32}, 8, 512) is None
    assert batch_doubt({"micro_batch": 2}, 8, 512) is None  # no grad-accum stated: nothing to check
    assert batch_doubt({"micro_batch": "not stated", "grad_accum": 2}, 8, 512) is None


def test_every_stated_batch_is_consistent_or_resolved_by_a_config():
    """A record whose micro-batch x grad-accum x dp is not its global batch runs
    the micro-batch of its performance config, or says so in its notes."""
    for r in training_records():
        try:
            case = training_case(r)
        except Unsupported:
            continue
        doubt = batch_doubt(r["strategy"], case.options["dp"], case.options["global_batch"])
        if doubt is None:
            continue
        assert any(doubt in a for a in case.assumptions), r["id"]
        model, gpu = r["model"]["name"].lower(), case.options["hardware"].split("-")[0].upper()
        assert "micro_batch" in MBRIDGE_PERF_CONFIGS.get((model, gpu), {}), r["id"]


def test_eq3_reproduces_the_records_derived_iteration_times():
    """The derived times in the records were computed from eq. (3) independently."""
    for r in training_records():
        derived = (r.get("derived") or {}).get("iteration_time_s_from_eq3")
        if derived is None:
            continue
        case = training_case(r)
        assert case.measured_iteration_s == pytest.approx(derived, rel=0.01), r["id"]


def test_eq3_counts_the_recompute_forward():
    """eq. (3) is 4/3 of the 3-pass model FLOPs (Megatron-Core's count) for the
    same model: 96 vs 72 Bslh^2 per (1 + s/6h + ...) term."""
    b, s, l, h, v = 8, 2048, 24, 2048, 51200
    eq3 = narayanan_eq3_flops(b, s, l, h, v)
    model = megatron_core_flops(b, s, l, h, v, heads=16, kv_heads=16, ffn=4 * h)
    linear_eq3 = 96 * b * s * l * h * h
    linear_model = 72 * b * s * l * h * h
    assert linear_eq3 / linear_model == pytest.approx(4 / 3)
    assert eq3 > model


def test_throughput_records_convert_to_iteration_time():
    r = record("mpt_7b_a100_40gb_128gpu_seq2048_bf16")
    case = training_case(r)
    tokens = r["strategy"]["global_batch"] * r["model"]["seq_len"]
    assert case.measured_iteration_s == pytest.approx(tokens / (r["value"] * 128))
    assert case.options["fsdp"] and case.options["recompute"] == "full"


def test_unstated_fields_get_documented_defaults():
    case = training_case(record("megatron_readme_h100_weak_32B"))
    assert case.options["micro_batch"] == DEFAULT_MICRO_BATCH
    assert case.settings["sequence_parallel"]  # megatron-core's preset
    assert any("not stated" in a for a in case.assumptions)
    stated = training_case(record("korthikanti22_t5_175B_seqpar_selective"))
    assert stated.options["vpp"] == 3 and stated.options["recompute"] == "selective"
    assert stated.assumptions == ()


def test_vocab_is_padded_like_megatron():
    assert padded_vocab(50257, 8) == 51200
    assert padded_vocab(51200, 8) == 51200
    config = hf_config(record("narayanan21_t1_18.4B")["model"], tp=8)
    assert config["model_type"] == "gpt2" and config["vocab_size"] % (128 * 8) == 0
    assert config["n_inner"] == 4 * config["n_embd"]


def test_non_training_records_are_refused():
    kernel = next(r for r in published_records() if r["category"] == "kernel_microbenchmark")
    with pytest.raises(Unsupported):
        training_case(kernel)
    assert source_of(record("narayanan21_t1_1.7B")) == "narayanan21"


@pytest.mark.parametrize("tp", ["eight", 0, -2])
def test_a_degree_that_is_no_number_is_refused(tp):
    """It ran as tp 1 with only a note."""
    bad = record("narayanan21_t1_1.7B")
    bad = {**bad, "strategy": {**bad["strategy"], "tp": tp}}
    with pytest.raises(Unsupported, match=rf"^strategy.tp {tp!r} is not a degree >= 1$"):
        training_case(bad)


def test_stated_overlap_param_gather_means_the_distributed_optimizer():
    assert training_case(record("megatron_readme_h100_weak_70B")).options["zero"] == 1
    assert training_case(record("narayanan21_t2_PTD_174B_384gpu")).settings["zero"] == 0
    zero3 = training_case(record("narayanan21_t2_ZeRO-3_174B_384gpu")).settings
    assert zero3["fsdp"] and zero3["zero"] == 0


def test_megatron_2021_waits_on_its_tensor_parallel_all_reduces():
    """Megatron-LM 2021 (Narayanan et al.) all-reduced synchronously; the 2022 code
    (Korthikanti et al.) overlaps the backward all-reduce with the weight-gradient
    GEMM; DeepSpeed's ZeRO-3 rows have no tensor parallelism."""
    ptd = training_case(record("narayanan21_t2_PTD_174B_384gpu")).settings
    assert ptd["blocking_comm"] == ("tp",) and not ptd["pp_send_overlap"] and not ptd["dp_overlap"]
    assert ptd["pipeline_scatter_gather"]
    # both waited for every pipeline send and scattered replicated activations
    korthikanti = training_case(record("korthikanti22_t5_175B_full_recompute")).settings
    assert korthikanti["blocking_comm"] == () and not korthikanti["pp_send_overlap"]
    assert korthikanti["pipeline_scatter_gather"]
    zero3 = training_case(record("narayanan21_t2_ZeRO-3_174B_384gpu")).settings
    assert zero3["blocking_comm"] == () and not zero3["pipeline_scatter_gather"]
    core = training_case(record("megatron_readme_h100_weak_70B")).settings
    assert core["blocking_comm"] == () and not core["pipeline_scatter_gather"]


def test_megatron_2021_22_runs_its_optimizer_as_separate_kernels():
    """Megatron-LM's Float16OptimizerWithFloat16Params (Narayanan 2021, Korthikanti
    2022); DeepSpeed's ZeRO-3, Megatron-Core's distributed optimizer and MosaicML's
    FSDP rows keep the fused step."""
    for name in ("narayanan21_t2_PTD_174B_384gpu", "narayanan21_t1_1.7B", "korthikanti22_t5_22B_full_recompute"):
        assert training_case(record(name)).settings["optimizer"] == "unfused-fp16"
    for name in ("narayanan21_t2_ZeRO-3_174B_384gpu", "megatron_readme_h100_weak_70B",
                 "mpt_7b_a100_80gb_8gpu_seq2048_amp_bf16"):
        assert training_case(record(name)).settings["optimizer"] == "fused"
