"""A pipeline over a cluster of several node kinds (issue 26): each stage is
priced on its own GPU, and a cluster whose kinds are one GPU is the plain one."""

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser

from rich.console import Console

from charon_ir.api import simulate
from charon_ir.dialects.sim import StageOp
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.testing import make_context
from charon_ir.report.table import print_report
from charon_ir.errors import CharonError
from charon_ir.target.hardware import load_gpu

EIGHT_LAYERS = Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir"
RUN = {"pp": 2, "gpus": 2, "global_batch": 8}


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    """EIGHT_LAYERS at 4096 x 4096: GEMMs long enough to be bound by the GPU's
    tensor cores, not by the launch latency."""
    folder = tmp_path_factory.mktemp("kinds")
    path = folder / "wide.mlir"
    path.write_text(re.sub(r"(?<![0-9if])64(?![0-9])", "4096", EIGHT_LAYERS.read_text()))
    return path


def cluster(folder: Path, name: str, *kinds: tuple[str, str]) -> str:
    """One GPU per node, so that stage s of a dp 1 pipeline is node s."""
    path = folder / f"{name}.cluster"
    path.write_text(f'name = "{name}"\n' + "".join(
        f"node {label} {{ gpu = {gpu}  gpus = 1  nodes = 1 }}\n" for label, gpu in kinds))
    return str(path)


def test_each_stage_on_its_own_gpu(wide):
    mixed = simulate(str(wide), cluster=cluster(wide.parent, "mixed", ("h100", "H100"), ("b200", "B200")),
                     **RUN)
    on_h100 = simulate(str(wide), hardware="H100", **RUN)
    on_b200 = simulate(str(wide), hardware="B200", **RUN)
    first, last = mixed["stages"]
    assert (first["hardware"], last["hardware"]) == ("H100-SXM5-80GB", "B200-SXM-180GB")
    assert mixed["hardware"] == "H100-SXM5-80GB+B200-SXM-180GB"
    # each stage computes exactly as that stage does on a cluster of its GPU alone
    assert first["compute_s"] == pytest.approx(on_h100["stages"][0]["compute_s"], rel=1e-12)
    assert last["compute_s"] == pytest.approx(on_b200["stages"][1]["compute_s"], rel=1e-12)
    # and the B200 stage is faster by about the ratio of the bf16 peaks
    peaks = load_gpu("B200").peak("bf16") / load_gpu("H100").peak("bf16")
    speedup = on_h100["stages"][1]["compute_s"] / last["compute_s"]
    assert 0.7 * peaks < speedup <= 1.05 * peaks
    # MFU is a share of the mean peak of the job's GPUs
    mean_peak = (load_gpu("H100").peak("bf16") + load_gpu("B200").peak("bf16")) / 2
    assert mixed["mfu"] == pytest.approx(
        mixed["model_flops_per_gpu"] / mixed["iteration_time_s"] / mean_peak, rel=1e-9)
    # energy draws each stage's GPU's power
    assert mixed["energy_j"] is not None and mixed["energy_j"] > 0
    # the per-stage table names each stage's GPU
    console = Console(record=True, width=200)
    print_report(mixed, console)
    rows = [line for line in console.export_text().splitlines() if "B200-SXM-180GB" in line]
    assert any(line.split()[1] == "1" for line in rows)
    assert "GPU" not in _stage_header(on_h100)


def test_one_gpu_under_two_labels_is_the_plain_cluster(wide):
    two_labels = simulate(str(wide), cluster=cluster(wide.parent, "labels", ("a", "H100"), ("b", "H100")),
                          **RUN)
    plain = simulate(str(wide), cluster=cluster(wide.parent, "plain", ("a", "H100"), ("a", "H100")), **RUN)
    for stage in two_labels["stages"]:
        assert stage.pop("hardware") == "H100-SXM5-80GB"
    two_labels["breakdown"].pop("hardware")
    assert json.dumps(two_labels, sort_keys=True, default=str) == json.dumps(plain, sort_keys=True, default=str)


def test_the_slower_link_between_kinds(wide):
    """The send between an H100 and a B200 node crosses the slower NIC."""
    path = wide.parent / "nics.cluster"
    path.write_text('name = "nics"\n'
                    "node h100 { gpu = H100 gpus = 1 nodes = 1 nic { count = 1 speed = 100Gb/s } }\n"
                    "node b200 { gpu = B200 gpus = 1 nodes = 1 nic { count = 1 speed = 800Gb/s } }\n")
    slow = simulate(str(wide), cluster=str(path), **RUN)
    path.write_text(path.read_text().replace("100Gb/s", "800Gb/s"))
    fast = simulate(str(wide), cluster=str(path), **RUN)
    assert slow["stages"][1]["exposed_comm_s"]["pp"] > fast["stages"][1]["exposed_comm_s"]["pp"]


def test_a_stage_over_two_kinds_is_one_line(wide):
    mixed = cluster(wide.parent, "span", ("h100", "H100"), ("b200", "B200"))
    with pytest.raises(CharonError) as e:
        simulate(str(wide), cluster=mixed, gpus=2, global_batch=8)  # dp 2, one stage
    assert "the job's ranks lie on node kinds h100 and b200" in str(e.value)
    assert "\n" not in str(e.value)


def test_each_stage_fits_its_own_gpu(wide):
    """A stage over the H100's 80 GB but under the B200's 180 GB fits on the B200."""
    big = wide.parent / "big.mlir"
    # 512 layers of a 4096 x 4096 weight (~0.25 GiB of weights, gradients and
    # AdamW states each), 480 of them on the last stage
    big.write_text(wide.read_text().replace("<8x", "<512x").replace("sim.repeat 8 ", "sim.repeat 512 "))
    mixed = cluster(wide.parent, "fit", ("h100", "H100"), ("b200", "B200"))
    both_h100 = cluster(wide.parent, "fit2", ("h100", "H100"), ("h100", "H100"))
    layout = {"pp_layout": [32, 480]}
    report = simulate(str(big), cluster=mixed, **RUN, **layout)
    assert report["fits"] is True
    assert 80e9 < report["peak_memory_bytes"][1] < 180e9
    with pytest.raises(CharonError, match=r"stage 1 needs [\d.]+ GiB of 80\.0 GiB"):
        simulate(str(big), cluster=both_h100, **RUN, **layout)


def _stage_header(report) -> str:
    console = Console(record=True, width=200)
    print_report(report, console)
    text = console.export_text()
    return next(line for line in text.splitlines() if "stage" in line and "compute" in line)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(["h100", "b200", "a100"]), min_size=4, max_size=4))
def test_set_target_places_every_stage_on_its_kind(kinds_of_stages):
    """Whatever kind each of 4 one-GPU stages sits on, set-target leaves every
    virtual stage in exactly one sim.stage, tagged with its node's kind (two
    runs of one kind in a row are one run)."""
    gpus = {"h100": "H100", "b200": "B200", "a100": "A100"}
    text = "".join(f"node {k} {{ gpu = {gpus[k]} gpus = 1 nodes = 1 }}\n" for k in kinds_of_stages)
    ctx = make_context()
    module = Parser(ctx, EIGHT_LAYERS.read_text()).parse_module()
    PipelinePass(pp=4, microbatches=8).apply(ctx, module)
    with tempfile.NamedTemporaryFile("w", suffix=".cluster", delete=False) as f:
        f.write(text)
    SetTargetPass(cluster=f.name, gpus=4).apply(ctx, module)
    Path(f.name).unlink()
    placed = {}
    for stage in module.body.block.ops:
        if isinstance(stage, StageOp):
            for v in stage.stage_ids():
                assert v not in placed
                placed[v] = stage.node_kind()
    if len(set(kinds_of_stages)) == 1:  # one kind is the plain cluster: nothing to tag
        assert placed == dict.fromkeys(range(4))
    else:
        assert placed == dict(enumerate(kinds_of_stages))
    module.verify()


def test_cli_refuses_a_stage_over_two_kinds_in_one_line(charon_fails):
    line = charon_fails("simulate", "--model", "llama-3.1-8b", "--cluster", "hetero-h100-b200", "--tp", "8",
                        "--gpus", "16", "--global-batch", "32")
    assert "the job's ranks lie on node kinds h100 and b200 of cluster 'hetero-h100-b200'" in line
