"""Hardware axes synthesise a cluster the cluster language reads back."""

import pytest

from charon_ir.errors import CharonError
from charon_ir.sweep.hardware import cluster_file, cluster_text, has_hardware_axes
from charon_ir.target.cluster import parse_cluster


def test_network_knobs_reach_the_cluster():
    config = {"hardware": "H100-SXM5-80GB", "nic_speed": "800Gb/s", "scale_up_domain": 16,
              "topology": "fullflat"}
    cluster = parse_cluster(cluster_text(config, 1024))
    assert cluster.total_gpus == 1024
    assert cluster.nics.bandwidth == pytest.approx(100e9)
    assert cluster.scale_up.domain == 16
    assert cluster.scale_out.kind == "fullflat"


def test_rail_fat_tree_with_oversubscription():
    config = {"hardware": "H100", "topology": "rail_fat_tree", "oversubscription": 2.0}
    cluster = parse_cluster(cluster_text(config, 1024))
    tiers = cluster.scale_out.tiers
    assert cluster.scale_out.rail_optimized
    # the leaves' uplinks are oversubscribed (on the top tier, which has none, it did nothing)
    assert [t.span for t in tiers] == [32, 128] and [t.oversubscription for t in tiers] == [2.0, 1.0]


def test_oversubscription_slows_traffic_that_leaves_a_leaf():
    from charon_ir.engines.collectives import collective_plan

    def all_reduce_s(ratio: float) -> float:
        cluster = parse_cluster(cluster_text({"hardware": "H100", "oversubscription": ratio}, 1024))
        return collective_plan("all_reduce", 1e9, tuple(range(0, 1024, 8)), cluster).time_s

    assert all_reduce_s(4.0) > 2 * all_reduce_s(1.0)


def test_bad_knobs_are_one_line_errors():
    with pytest.raises(CharonError, match="topology must be one of"):
        cluster_text({"hardware": "H100", "topology": "ring"}, 64)
    with pytest.raises(CharonError, match="nic_speed must look like"):
        cluster_text({"hardware": "H100", "nic_speed": "fast"}, 64)
    # was the synthesised cluster file's error, naming a file in the cache
    with pytest.raises(CharonError, match=r"^nic_speed '0Gb/s': a link's bandwidth is between 1KB/s and 1000TB/s$"):
        cluster_text({"hardware": "H100", "nic_speed": "0Gb/s"}, 64)
    with pytest.raises(CharonError, match="neither a multiple nor a divisor"):
        cluster_text({"hardware": "H100", "scale_up_domain": 12}, 64)


def test_cluster_files_are_named_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    config = {"hardware": "H100", "nic_speed": "200Gb/s"}
    assert has_hardware_axes(config) and not has_hardware_axes({"hardware": "H100", "oversubscription": 1.0})
    a, b = cluster_file(config, 64), cluster_file(dict(config), 64)
    assert a == b and a.startswith(str(tmp_path))
    assert cluster_file({**config, "nic_speed": "400Gb/s"}, 64) != a


def test_gpu_axes_make_a_variant_and_link_axes_reach_the_cluster():
    from charon_ir.sweep.hardware import point_hardware
    from charon_ir.target.hardware import load_gpu

    config = {"hardware": "H100", "peak_flops_scale": 2.0, "hbm_bw": "8TB/s", "hbm_capacity": "192GiB",
              "scale_up_bw": "900GB/s", "scale_out_bw": "100GB/s", "topology": "fullflat"}
    gpu = load_gpu(point_hardware(config))
    assert gpu.hbm_bandwidth == 8e12 and gpu.hbm_bytes == 192 * 2**30
    assert gpu.peak("bf16") == 2 * load_gpu("H100").peak("bf16")
    assert gpu.calibration == "H100-SXM5-80GB"
    cluster = parse_cluster(cluster_text(config, 1024))
    assert cluster.gpu == gpu
    assert cluster.scale_up.bandwidth == 900e9
    assert cluster.nic_bandwidth_per_gpu == pytest.approx(100e9)
    # a GPU variant alone needs no cluster; unset axes leave the GPU as named
    assert not has_hardware_axes({"hardware": "H100", "hbm_bw": "8TB/s"})
    assert point_hardware({"hardware": "H100", "peak_flops_scale": 1.0, "hbm_bw": ""}) == "H100"


def test_gpu_axes_move_the_step_the_way_they_should():
    """More HBM bandwidth never slows a step, and a faster GPU's step is faster."""
    from charon_ir.api import simulate_file

    model = "examples/llama_tiny_step.mlir"

    def step(hardware: str) -> float:
        return simulate_file(model, hardware=hardware, gpus=1)["iteration_time_s"]

    base = step("H100")
    assert step("H100:hbm_bw=6.7e12") < base
    assert step("H100:peak_flops_scale=4") < base
    assert step("H100:hbm=1.6e11") == base


def test_bad_gpu_axes_are_one_line_errors():
    from charon_ir.sweep.space import load_space

    with pytest.raises(CharonError, match="'hbm_bw' must look like 8TB/s"):
        cluster_text({"hardware": "H100", "hbm_bw": "fast", "topology": "fullflat"}, 64)
    with pytest.raises(CharonError, match="'scale_out_bw' must be positive, got '0GB/s'"):
        cluster_text({"hardware": "H100", "scale_out_bw": "0GB/s"}, 64)
    with pytest.raises(CharonError, match="hbm_capacity"):
        load_space({"kind": "training", "model": "llama-3.1-8b", "hbm_capacity": ["80GB", "lots"]}).points()


def test_gpu_axes_as_sweep_flags(charon_cli, tmp_path):
    import json

    run = charon_cli("sweep", "--name", "flags", "--model", "llama-3.1-8b", "--gpus", "8", "--tp", "8",
                     "--seq-len", "2048", "--global-batch", "16", "--hbm-bw", "3.35TB/s,8TB/s",
                     "--peak-flops-scale", "1,2", "--tier", "fast", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    records = json.loads(run.stdout)["results"]
    times = {(r["config"]["peak_flops_scale"], r["config"]["hbm_bw"]): r["metrics"]["iteration_time_s"]
             for r in records}
    assert len(times) == 4
    assert times[(2.0, "8TB/s")] < times[(2.0, "3.35TB/s")] < times[(1.0, "3.35TB/s")]
    assert times[(1.0, "8TB/s")] < times[(1.0, "3.35TB/s")]
    assert all(r["metrics"]["energy_j"] > 0 for r in records)
