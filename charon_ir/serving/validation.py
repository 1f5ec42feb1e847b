"""Reproducing the inference records of `published.json` with `serve`.

`reproduce_inference_record(record)` runs the record's setup and returns the
prediction in the record's own unit, for `charon validate --only inference`:

- output_tokens_per_sec_per_gpu / output_tokens_per_sec (TensorRT-LLM
  gptSessionBenchmark): a static batch of identical requests, throughput =
  batch x output / total latency, divided by the GPUs. The A100 table does not
  say "per GPU"; it is read like the H100 tables of the same page (per GPU).
- first_token_latency: one request alone, its TTFT, with one output token,
  as the benchmark runs it (`--input_output_len ISL,1`).

Both time whole `GptSession::generate()` calls, so each static batch is charged
the runtime's fixed per-call host time (TRTLLM_GPTSESSION_CALL_OVERHEAD_S).

A long-context record (`long_context_inference`: `strategy.cp` ranks of tp x pp
GPUs prefill one prompt) is the TTFT of that prompt alone under
`serve --cp-policy fixed:CP --cp-ranks CP --cp-mode MODE`, one output token: the
prefill priced through `shard-context` (context_parallel.py). A prompt longer
than the bundled model's context runs the same architecture with its context
raised to the prompt (`model_with_context`), as the measured run did.
"""

from __future__ import annotations

import re
from typing import Any

from charon_ir.errors import CharonError
from charon_ir.frontend import load_config
from charon_ir.serving import context_parallel as cp
from charon_ir.serving.api import serve
from charon_ir.serving.latency import ReplicaShape
from charon_ir.validation import LATENCY_UNITS, cache_directory, published_records
from charon_ir.validation.training import config_path

MODEL_NAMES = {
    "llama-2-7b": "llama-2-7b",
    "llama-2-70b": "llama-2-70b",
    "llama-2-13b": "llama-2-13b",
    "llama-3.1-405b": "llama-3.1-405b",
}
GPU_NAMES = (
    ("H100", "SXM", "H100-SXM5-80GB"),
    ("H100", "PCIE", "H100-PCIe-80GB"),
    ("A100", "80GB", "A100-SXM4-80GB"),
    ("A100", "40GB", "A100-SXM4-40GB"),
    ("H200", "", "H200-SXM-141GB"),
)
STATIC_ENGINE_MEMORY_UTILIZATION = 0.99
"""A TensorRT-LLM engine built for one batch and length preallocates exactly
their KV cache, so nearly all of HBM is usable (vLLM keeps 10% back)."""
TRTLLM_GPTSESSION_CALL_OVERHEAD_S = 3.7e-3
"""Host time of one `GptSession::generate()` call of TensorRT-LLM v0.5/v0.6.1
outside the engine's forward passes, charged once per static batch.

What is measured: gptSessionBenchmark (benchmarks/cpp/gptSessionBenchmark.cpp)
times, per run, `session.generate(...)` plus a stream synchronize, wall clock;
the "1st Token Latency" rows of docs/source/performance.md are that benchmark
run with `--input_output_len "ISL,1"` (one generated token), no CUDA graphs
(`--enable_cuda_graph` is not passed). For one token, generate()
(cpp/tensorrt_llm/runtime/gptSession.cpp, generateSingleBatch) does, besides
the context-phase engine: context-length copies and the host read of the input
lengths, buffer reshape, KV-cache sequence setup, the sampler's newBatch setup,
the TensorRT tensor bindings of the step, then after the forward the sampling
step (decoderStepAsync), a blocking shouldStopSync, finalizeOutputIds and a
final stream synchronize. A fixed cost per call; it is the first generated
token's own step and the request's launch, which a TTFT of only the forward
pass leaves out.

Value: read off a row of the same table that is not a validation record and
whose forward the pipeline prices with little error because it is short and
memory-bound: GPT-J 6B, H100 FP8, batch 1, 128 input tokens, published 7 ms.
Its forward, priced as the bundled gpt3-6.7b (same hidden 4096 and FFN 16384)
scaled to GPT-J's 28 layers, is 3.3 ms: 7 - 3.3 = 3.7 ms. (Its 2048-token row,
29 ms published vs 23.2 ms priced, gives a gap of 5.8 ms: the fixed cost plus a
compute under-estimate of about 9 %.) Host-side, so one value for
the stack on both the DGX H100 and DGX A100 records."""


def model_of(record: dict[str, Any]) -> str:
    name = record["model"]["name"]
    inside = re.search(r"\(([^)]+)\)", name)
    for text in (inside.group(1) if inside else "", name):
        key = text.strip().lower().replace(" ", "-")
        if key in MODEL_NAMES:
            return MODEL_NAMES[key]
    raise CharonError(f"record {record.get('id')}: no bundled model for '{name}'")


def hardware_of(record: dict[str, Any]) -> str:
    gpu = record["hardware"]["gpu"].upper()
    for family, variant, name in GPU_NAMES:
        if family in gpu and variant in gpu:
            return name
    raise CharonError(f"record {record.get('id')}: unknown GPU '{record['hardware']['gpu']}'")


def attention_kernel_of(record: dict[str, Any]) -> str:
    """TensorRT-LLM up to v0.6.1 decoded GQA models with masked multi-head
    attention, the KV cache read once per query head; its GQA-aware XQA kernel
    came later (the project's news of 2024-01-30: "New XQA-kernel provides 2.4x
    more Llama-70B throughput within the same latency budget")."""
    engine = str(record["strategy"].get("engine", ""))
    version = re.search(r"TensorRT-LLM v?0\.(\d+)", engine)
    return "per-head" if version and int(version.group(1)) < 7 else "fused"


def batch_overhead_of(record: dict[str, Any]) -> float:
    """Fixed host time per static batch of the record's runtime: TensorRT-LLM's
    gptSession (v0.5 / v0.6.x, timed by gptSessionBenchmark), else none."""
    engine = str(record["strategy"].get("engine", ""))
    return TRTLLM_GPTSESSION_CALL_OVERHEAD_S if "TensorRT-LLM" in engine else 0.0


def precision_of(record: dict[str, Any]) -> str:
    return "fp8" if "FP8" in str(record["strategy"].get("precision", "")).upper() else "bf16"


def inference_records() -> list[dict[str, Any]]:
    return [r for r in published_records() if r.get("category") == "inference"]


def model_with_context(model: str, tokens: int) -> str:
    """`model`, or, when `tokens` exceed its context, a config.json of the same
    model with `max_position_embeddings` raised to `tokens` (written once under
    the validation cache): the context only bounds the requests, the architecture
    is what is priced."""
    _, config = load_config(model)
    if tokens <= int(config.get("max_position_embeddings") or 0):
        return model
    return str(config_path(dict(config, max_position_embeddings=tokens), cache_directory(), f"{model}-context"))


def _long_context_options(record: dict[str, Any]) -> dict[str, Any]:
    """`serve`'s options of a long-context record: its prompt alone on a group of
    `strategy.cp` ranks, one output token."""
    strategy = record["strategy"]
    if record["metric"] != "first_token_latency":
        raise CharonError(f"record {record.get('id')}: a long-context record compares first_token_latency, "
                          f"got '{record['metric']}'")
    cp = int(strategy["cp"])
    input_len = int(strategy["input_len"])
    return dict(model=model_with_context(model_of(record), input_len + 1), hardware=hardware_of(record),
                tp=int(strategy["tp"]), pp=int(strategy.get("pp") or 1), precision=precision_of(record),
                batch=1, input_len=input_len, output_len=1, cp_policy=(f"fixed:{cp}",), cp_ranks=cp,
                cp_mode=str(strategy.get("cp_mode", "ring")))


def reproduce_long_context_record(record: dict[str, Any]) -> float:
    """The first-token latency of the record's prompt prefilled alone by
    `strategy.cp` ranks (`fixed:CP`), in the record's unit."""
    options = _long_context_options(record)
    report = serve(options.pop("model"), **options)
    unit = record["unit"].split()[0]  # checked when the records were read
    return report["ttft_s"]["mean"] * LATENCY_UNITS[unit]


def long_context_terms(record: dict[str, Any]) -> str:
    """What the predicted prefill of a long-context record is made of (the cp
    prefill table `serve` priced it with): token-local work, attention and the
    cp collectives, in seconds."""
    options = _long_context_options(record)
    shape = ReplicaShape(options["model"], options["hardware"], options["tp"], options["pp"],
                         precision=options["precision"])
    degree, n, mode = options["cp_ranks"], options["input_len"], options["cp_mode"]
    table = cp.prefill_table(shape, degree, mode, n + 1, 0.0)
    terms = (f"{mode} cp {degree} x tp {shape.tp} ({shape.precision}): token-local {table.local(n):.3g} s, "
             f"attention {table.attention(float(n) * n):.3g} s")
    if degree > 1:
        terms += f", cp collectives {table.comm(n):.3g} s" + (" (overlapped with attention)" if mode == "ring"
                                                                else "")
    return terms


def reproduce_inference_record(record: dict[str, Any]) -> float:
    """The predicted value of `record`, in the record's unit."""
    if record.get("category") == "long_context_inference":
        return reproduce_long_context_record(record)
    strategy = record["strategy"]
    tp = int(strategy.get("tp", 1))
    pp = int(strategy.get("pp", 1) or 1)
    options = dict(
        hardware=hardware_of(record), tp=tp, pp=pp, precision=precision_of(record),
        attention_kernel=attention_kernel_of(record),
        input_len=int(strategy["input_len"]), output_len=int(strategy["output_len"]),
        batch_overhead_s=batch_overhead_of(record),
    )
    metric = record["metric"]
    if metric in ("output_tokens_per_sec_per_gpu", "output_tokens_per_sec"):
        batch = int(strategy["batch_size"])
        report = serve(model_of(record), batch=batch, policy="static", max_num_seqs=batch,
                       gpu_memory_utilization=STATIC_ENGINE_MEMORY_UTILIZATION, **options)
        return report["throughput_tokens_per_s"] / (tp * pp)
    if metric == "first_token_latency":
        report = serve(model_of(record), batch=1, policy="static", **{**options, "output_len": 1})
        unit = record["unit"].split()[0]  # checked when the records were read
        return report["ttft_s"]["mean"] * LATENCY_UNITS[unit]
    raise CharonError(f"record {record.get('id')}: metric '{metric}' is not an inference metric serve predicts")


def mape(records: list[dict[str, Any]]) -> tuple[float, list[tuple[str, float, float, float]]]:
    """Mean absolute percentage error over `records` and (id, published,
    predicted, error %) of each."""
    rows = []
    for r in records:
        predicted = reproduce_inference_record(r)
        err = abs(predicted - r["value"]) / abs(r["value"]) * 100.0
        rows.append((r["id"], float(r["value"]), predicted, err))
    return sum(e for *_, e in rows) / len(rows), rows
