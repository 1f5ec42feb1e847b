"""GPU specs as data: the bundled TOML files, a user's GPU file, variants, and
the one-line errors of a bad file."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.target.cluster import load_cluster, parse_cluster
from charon_ir.target.hardware import (
    UnknownGpuError,
    gpu_names,
    load_gpu,
    resolve_gpu_name,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
H100_FILE = resources.files("charon_ir.target").joinpath("gpus/H100-SXM5-80GB.toml").read_text()


def _sources() -> dict:
    return json.loads(resources.files("charon_ir.target").joinpath("gpus.json").read_text())["summary_flat"]


@pytest.mark.parametrize("name", sorted(_sources()))
def test_bundled_file_matches_the_sourced_table(name: str) -> None:
    """Each bundled file states the values gpus.json cites sources for."""
    row, gpu = _sources()[name], load_gpu(name)
    for key, dtype in (("fp64", "f64"), ("fp32", "f32"), ("tf32", "tf32"), ("bf16", "bf16"),
                       ("fp16", "f16"), ("fp8", "f8"), ("fp4", "f4")):
        value = row[f"{key}_tflops"]
        assert gpu.peak_flops.get(dtype) == (None if value is None else float(value) * 1e12), key
    assert gpu.hbm_bytes == row["hbm_gb"] * 2**30
    assert gpu.hbm_bandwidth == row["hbm_tb_s"] * 1e12
    assert gpu.scale_up_bandwidth == (row["scale_up_unidir_GB_s"] or 0) * 1e9
    assert gpu.sm_count == (row["sm_or_cu_count"] or 0)
    assert gpu.gpus_per_node == row["gpus_per_node"]
    assert gpu.nic_bandwidth == (row["nic_Gb_s"] or 0) * 1e9 / 8
    assert gpu.tdp_w == (row["tdp_w"] or 0)
    assert gpu.idle_w <= gpu.tdp_w
    assert gpu.ref == gpu.name == name


def test_aliases_and_case() -> None:
    assert resolve_gpu_name("H100") == "H100-SXM5-80GB"
    assert resolve_gpu_name("gb200") == "GB200-per-GPU"
    assert load_gpu("A100-40GB").calibration == "A100-SXM4-80GB"
    assert "H100-SXM5-80GB" in gpu_names()
    with pytest.raises(UnknownGpuError, match="unknown GPU 'Z9000'"):
        load_gpu("Z9000")


def _user_file(tmp_path: Path, text: str, name: str = "gpu.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _rename(text: str, name: str = "H100-lookalike") -> str:
    return text.replace('name = "H100-SXM5-80GB"', f'name = "{name}"').replace(
        'aliases = ["H100", "H100-SXM"]', 'calibrated_as = "H100-SXM5-80GB"'
    )


def test_user_file_with_h100_values_prices_as_the_h100(tmp_path: Path) -> None:
    """A user's copy of the H100 file under its own name, calibrated as the H100,
    times every op as the bundled H100 does (the whole pipeline reads the file)."""
    from charon_ir.api import simulate_file

    path = _user_file(tmp_path, _rename(H100_FILE))
    gpu = load_gpu(str(path))
    assert gpu.name == "H100-lookalike" and gpu.ref == str(path.resolve())
    model = str(EXAMPLES / "llama_tiny_step.mlir")
    mine = simulate_file(model, hardware=str(path), gpus=1)
    bundled = simulate_file(model, hardware="H100-SXM5-80GB", gpus=1)
    assert mine["hardware"] == "H100-lookalike"
    assert {**mine, "hardware": ""} == {**bundled, "hardware": ""}


def test_user_file_in_a_cluster_file(tmp_path: Path) -> None:
    _user_file(tmp_path, _rename(H100_FILE, "X1"), "x1.toml")
    cluster = tmp_path / "x.cluster"
    cluster.write_text('nodes = 2\nnode { gpu = "x1.toml" gpus = 8 }\n')
    parsed = load_cluster(str(cluster))
    assert parsed.gpu.name == "X1"
    # the canonical text names the file by its absolute path and reads back
    assert parse_cluster(parsed.to_text()).gpu == parsed.gpu


def test_variant_changes_only_what_it_names() -> None:
    base = load_gpu("H100-SXM5-80GB")
    v = load_gpu("H100-SXM5-80GB:hbm_bw=6.7e12,hbm=141e9")
    assert v.hbm_bandwidth == 6.7e12 and v.hbm_bytes == 141e9
    assert v.peak_flops == base.peak_flops and v.calibration == base.calibration
    assert v.name == "H100-SXM5-80GB:hbm=1.41e11,hbm_bw=6.7e12"
    assert load_gpu(v.ref) == v
    doubled = load_gpu("H100:peak_flops_scale=2")
    assert all(doubled.peak_flops[t] == 2 * base.peak_flops[t] for t in base.peak_flops)


@settings(max_examples=40, deadline=None)
@given(
    hbm_bw=st.floats(1e11, 1e14, allow_nan=False),
    scale=st.floats(0.01, 100, allow_nan=False),
    domain=st.integers(1, 1024),
)
def test_variant_text_reads_back_to_the_same_spec(hbm_bw: float, scale: float, domain: int) -> None:
    v = load_gpu(f"H100:hbm_bw={hbm_bw!r},peak_flops_scale={scale!r},scale_up_domain={domain}")
    assert load_gpu(v.ref) == v
    assert v.hbm_bandwidth == hbm_bw and v.scale_up_domain == domain
    assert math.isclose(v.peak("bf16"), 989.4e12 * scale)


def test_variant_of_a_memory_bound_op_scales_with_bandwidth() -> None:
    from charon_ir.engines.analytic import memory_time_s

    base, fast = load_gpu("H100"), load_gpu("H100:hbm_bw=6.7e12")
    assert memory_time_s(fast, 1e9) == pytest.approx(memory_time_s(base, 1e9) / 2)


BAD_FILES = [
    (("hbm_tb_s = 3.35\n", ""), "missing field 'memory.hbm_tb_s'"),
    (("hbm_tb_s = 3.35", "hbm_tb_s = -3.35"), "'memory.hbm_tb_s' must not be negative"),
    (("sm_count = 132", "sm_count = 132\nwarp_size = 32"), "unknown key 'compute.warp_size'"),
    (("[power]", "[cooling]"), "unknown section [cooling]"),
    (("idle_w = 70", "idle_w = 900"), "'power.idle_w' (900) exceeds 'power.tdp_w' (700)"),
    (("bf16 = 989.4,", 'bf16 = "fast",'), "'peak_tflops.bf16' must be a number"),
    (("[memory]", "[memory"), "not valid TOML"),
    (('calibrated_as = "H100-SXM5-80GB"', 'calibrated_as = "Z9"'), "'calibrated_as' must name a bundled GPU"),
]


def _bad_text(edit: tuple[str, str]) -> str:
    text = _rename(H100_FILE)
    assert edit[0] in text, edit
    return text.replace(*edit)


@pytest.mark.parametrize("edit,message", BAD_FILES)
def test_bad_gpu_file_is_one_line_naming_file_and_field(tmp_path: Path, charon_fails, edit: tuple[str, str],
                                                         message: str) -> None:
    path = _user_file(tmp_path, _bad_text(edit))
    line = charon_fails("simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--hardware", str(path))
    assert str(path) in line and message in line, line


def test_user_file_may_not_take_a_bundled_name(tmp_path: Path, charon_fails) -> None:
    path = _user_file(tmp_path, H100_FILE)
    line = charon_fails("simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--hardware", str(path))
    assert "is a bundled GPU's" in line and str(path) in line


@pytest.mark.parametrize("variant,message", [
    ("H100:hbm_bandwidth=1e12", "unknown key 'hbm_bandwidth'"),
    ("H100:hbm_bw=-1e12", "'hbm_bw' must be a positive number"),
    ("H100:hbm_bw=fast", "'hbm_bw' must be a number"),
    ("H100:scale_up_domain=2.5", "'scale_up_domain' must be a whole number"),
    ("Z9:hbm_bw=1e12", "unknown GPU 'Z9'"),
])
def test_bad_variant_is_one_line(charon_fails, variant: str, message: str) -> None:
    line = charon_fails("simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--hardware", variant)
    assert message in line, line


def test_missing_gpu_file(charon_fails, tmp_path: Path) -> None:
    line = charon_fails("simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--hardware",
                        str(tmp_path / "none.toml"))
    assert "GPU file" in line and "not found" in line


def test_cluster_naming_a_bad_gpu_file_names_both(tmp_path: Path) -> None:
    _user_file(tmp_path, _bad_text(("hbm_tb_s = 3.35\n", "")), "bad.toml")
    cluster = tmp_path / "x.cluster"
    cluster.write_text('node { gpu = "bad.toml" }\n')
    with pytest.raises(CharonError) as info:
        load_cluster(str(cluster))
    assert "x.cluster:1:" in str(info.value) and "missing field 'memory.hbm_tb_s'" in str(info.value)


def test_user_file_works_in_serve_and_charon_opt(tmp_path: Path) -> None:
    import subprocess
    import sys

    from charon_ir.serving import serve

    path = _user_file(tmp_path, _rename(H100_FILE, "X100").replace("hbm_tb_s = 3.35", "hbm_tb_s = 8"))
    fast = serve("llama-3.1-8b", hardware=str(path), batch=4, input_len=128, output_len=16)
    base = serve("llama-3.1-8b", hardware="H100", batch=4, input_len=128, output_len=16)
    assert fast["tpot_s"]["mean"] < base["tpot_s"]["mean"]  # decode reads the weights: 8 TB/s
    opt = Path(sys.executable).with_name("charon-opt")
    run = subprocess.run(
        [str(opt), str(EXAMPLES / "transformer_layer.mlir"), "-p",
         f'set-target{{hardware="{path}" gpus=8}},cost-annotate,lower-to-events', "-t", "simulate"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert '"hardware": "X100"' in run.stdout
