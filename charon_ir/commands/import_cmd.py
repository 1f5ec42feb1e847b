"""`charon import MODEL -o FILE.mlir`: a model to sim IR (DESIGN.md section 7)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from charon_ir.api import MAX_COUNT
from charon_ir.errors import CharonError
from charon_ir.frontend import import_model_with_summary
from charon_ir.frontend.configs import bundled_models
from charon_ir.frontend.metrics import op_count, param_count
from charon_ir.interop.chakra_import import import_chakra, import_execution_trace
from charon_ir.report.output import atomic_output, check_output_file


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)


def import_command(
    model: Annotated[str, typer.Argument(help="bundled model name (e.g. llama-3.1-8b), a path to an HF config.json, or a model folder holding one; megatron:CONFIG, vllm:MODEL (serving modes)")] = "",
    output: Annotated[str, typer.Option("--output", "-o", help="output .mlir file; '-' for stdout")] = "-",
    seq_len: Annotated[int, typer.Option("--seq-len", help="tokens per sequence (decode: cached context)")] = 2048,
    batch: Annotated[int, typer.Option("--batch", help="sequences per step")] = 1,
    mode: Annotated[str, typer.Option("--mode", help="train | prefill | decode")] = "train",
    dtype: Annotated[str, typer.Option("--dtype", help="bf16 | fp16 | fp32")] = "bf16",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="trace again even if the IR is cached")] = False,
    no_mtp: Annotated[bool, typer.Option("--no-mtp", help="train without the multi-token-prediction modules a "
                                         "config asks for (DeepSeek-V3's num_nextn_predict_layers)")] = False,
    tp: Annotated[int, typer.Option("--tp", help="a megatron: model only: import one rank of this many "
                                    "tensor-parallel ranks (Megatron-Core splits itself; its collectives in the IR)")] = 1,
    sequence_parallel: Annotated[bool, typer.Option("--sequence-parallel", help="with --tp > 1 on a megatron: model: "
                                                    "Megatron-Core's sequence parallelism")] = False,
    summary: Annotated[bool, typer.Option("--summary", help="print how aten ops were mapped (stderr)")] = False,
    list_models: Annotated[bool, typer.Option("--list", help="list the bundled models and exit")] = False,
    execution_trace: Annotated[str, typer.Option("--execution-trace", help="import a PyTorch execution trace "
                                                 "(ExecutionTraceObserver JSON, .json or .json.gz) instead of a model; "
                                                 "one that sends or receives brings its peers' "
                                                 "({prefix}.{rank}.et.json.gz)")] = "",
    chakra: Annotated[str, typer.Option("--chakra", help="import one rank's Chakra trace (.et) instead of a model; "
                                        "its process groups from comm_group.json beside it, the traces of "
                                        "the ranks it sends to and receives from ({prefix}.{rank}.et) too")] = "",
    reprice: Annotated[bool, typer.Option("--reprice", help="with --chakra: price every node with the cost "
                                          "engines, not at the trace's recorded durations")] = False,
) -> None:
    """Import a model as sim IR, without a GPU and without weights.

    Training: forward, backward and optimizer phases; serving: one prefill or decode step.
    """
    if list_models:
        print("\n".join(bundled_models()))
        return
    if execution_trace or chakra:
        if sum(map(bool, (model, execution_trace, chakra))) > 1:
            raise typer.BadParameter("give one of a model, --execution-trace and --chakra", param_hint="'MODEL'")
        if reprice and not chakra:
            raise typer.BadParameter("--reprice goes with --chakra", param_hint="'--reprice'")
        _import_trace(execution_trace or chakra, output, chakra=bool(chakra), reprice=reprice)
        return
    if not model:  # a usage error (exit 2), as click's own for a missing argument
        raise typer.BadParameter("give a model (a bundled name or a config.json); --list names them",
                                 param_hint="'MODEL'")
    if model.endswith(".mlir"):
        raise CharonError(f"{model}: already IR; import takes a bundled name or a config.json "
                          "(charon-opt and charon simulate read .mlir files)")
    for flag, value in (("--seq-len", seq_len), ("--batch", batch), ("--tp", tp)):
        if not 1 <= value <= MAX_COUNT:
            raise CharonError(f"{flag} must be in 1..{MAX_COUNT}, got {value}")
    if output != "-":
        check_output_file(output, "-o")  # before tracing, which can take minutes
    result = import_model_with_summary(
        model, seq_len=seq_len, batch=batch, mode=mode, dtype=dtype, use_cache=not no_cache, parse=False,
        mtp=not no_mtp, tp=tp, sequence_parallel=sequence_parallel,
    )
    text = (result.text if result.text is not None else str(result.module)).rstrip("\n") + "\n"
    if output == "-":
        sys.stdout.write(text)
    else:
        with atomic_output(Path(output), ".tmp") as tmp:  # never a partial file
            Path(tmp).write_text(text)
    if result.module is None:
        print(f"{result.name}: from the cache ({result.cache_file}) in {result.seconds:.2f} s", file=sys.stderr)
    else:
        print(
            f"{result.name}: {op_count(result.module)} ops, {param_count(result.module):,} parameters, "
            f"traced in {result.seconds:.2f} s",
            file=sys.stderr,
        )
    if summary:
        for line in result.summary or ["(from cache: see the sim.free_ops / sim.generic_ops attributes)"]:
            print(line, file=sys.stderr)


def _import_trace(trace: str, output: str, chakra: bool, reprice: bool = False) -> None:
    """A recorded step's execution trace, or one rank's Chakra trace, as sim IR
    (`charon_ir.interop.chakra_import`)."""
    if output != "-":
        check_output_file(output, "-o")
    start = time.perf_counter()
    module = import_chakra(trace, reprice=reprice) if chakra else import_execution_trace(trace)
    text = str(module).rstrip("\n") + "\n"
    if output == "-":
        sys.stdout.write(text)
    else:
        with atomic_output(Path(output), ".tmp") as tmp:
            Path(tmp).write_text(text)
    ops = sum(1 for _ in module.walk()) - 1
    print(f"{trace}: {ops} ops in {time.perf_counter() - start:.2f} s", file=sys.stderr)
