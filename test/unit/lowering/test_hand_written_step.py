"""`charon simulate` on a hand-written step with no flag asking for a pass: the
step as written, on the cluster and at the precision given."""

from pathlib import Path

import pytest

from charon_ir.api import simulate_file

LAYER = Path(__file__).resolve().parents[3] / "examples" / "transformer_layer.mlir"

SLOW_NVLINK = """
name = "slow-nvlink"
nodes = 2
node { gpu = H100-SXM5-80GB  gpus = 8 }
scale_up nvswitch { domain = 8  bandwidth = 45GB/s  latency = 0.5us }
nic { count = 8  speed = 400Gb/s }
scale_out fat_tree { tier { span = 2  oversubscription = 1:1  latency = 0.3us } }
"""


def test_the_cluster_given_is_the_one_simulated(tmp_path):
    """A tenth of the NVLink bandwidth slows the layer's tensor-parallel
    all-reduces (the flag was once dropped on this path)."""
    cluster = tmp_path / "slow.cluster"
    cluster.write_text(SLOW_NVLINK)
    table = simulate_file(LAYER, hardware="H100-SXM5-80GB", gpus=8)
    slow = simulate_file(LAYER, hardware="H100-SXM5-80GB", gpus=8, cluster=str(cluster))
    assert slow["streams"]["comm_tp"]["busy_s"] > 5 * table["streams"]["comm_tp"]["busy_s"]
    assert slow["streams"]["compute"]["busy_s"] == pytest.approx(table["streams"]["compute"]["busy_s"], rel=1e-12)


def test_fp8_prices_the_gemms_on_the_fp8_tensor_cores():
    bf16 = simulate_file(LAYER, hardware="H100-SXM5-80GB", gpus=8)
    fp8 = simulate_file(LAYER, hardware="H100-SXM5-80GB", gpus=8, precision="fp8")
    assert fp8["streams"]["compute"]["busy_s"] < bf16["streams"]["compute"]["busy_s"]
    # the same collectives (summed in another order where the GEMMs' times differ)
    assert fp8["streams"]["comm_tp"]["busy_s"] == pytest.approx(bf16["streams"]["comm_tp"]["busy_s"], rel=1e-12)


def test_a_flag_that_needs_the_passes_is_not_dropped(charon_fails):
    # no layers to split into micro-batches: said so, rather than the step being
    # simulated without the recomputation asked for
    assert charon_fails("simulate", "--model", str(LAYER), "--recompute", "full") == (
        f"error: {LAYER} has no stack of layers (a sim.repeat in a forward phase) for the passes "
        "that parallel-strategy and batch flags ask for; without them it is simulated as written")
    assert charon_fails("simulate", "--model", str(LAYER), "--plot", "plots").startswith("error: --plot: ")


BACKWARD_BESIDE_ALL_REDUCE = """
coll.grid @mesh(axes = ["tp"], shape = 8)
%d = sim.input "d" : tensor<8192x4096xbf16>
%a = sim.input "a" : tensor<8192x4096xbf16>
%w = sim.param "w" : tensor<4096x4096xbf16>
%dx = sim.matmul %d, %w : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
%dxr = coll.all_reduce %dx on @mesh ["tp"] : tensor<8192x4096xbf16>
%dw = sim.matmul %a, %d {transpose_lhs} : (tensor<8192x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<4096x4096xbf16>
"""


def test_the_gpu_types_overlap_contention_applies(tmp_path, monkeypatch):
    """As `charon simulate --model NAME` and `charon-opt -t simulate` do, a
    hand-written step runs with its GPU type's calibrated contention: here a
    data-gradient all-reduce beside the weight-gradient GEMM."""
    from charon_ir.engines import compute_efficiency

    step = tmp_path / "backward.mlir"
    step.write_text(BACKWARD_BESIDE_ALL_REDUCE)

    def step_time(slowdown: float | None = None) -> float:
        if slowdown is not None:
            monkeypatch.setitem(compute_efficiency.OVERLAP_SLOWDOWN, "A100-SXM4-80GB", slowdown)
        return simulate_file(step, hardware="A100-SXM4-80GB", gpus=8)["iteration_time_s"]

    calibrated = step_time()
    assert step_time(0.0) < calibrated < step_time(1.0)
