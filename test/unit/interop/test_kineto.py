"""Kineto traces against simulated steps, and user calibrations from them.

The traces under test/data/kineto were recorded by torch.profiler on a CPU and
on an H200 (bench/record_kineto_trace.py, bench/gpu_session.sh), not written by
the project."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.interop import calibration, kineto

DATA = Path(__file__).parents[2] / "data" / "kineto"
CONFIG = str(DATA / "llama4-config.json")
S256, S512 = str(DATA / "llama4-cpu-s256.json.gz"), str(DATA / "llama4-cpu-s512.json.gz")
H200_B8, H200_B16 = str(DATA / "llama4-h200-s512-b8.json.gz"), str(DATA / "llama4-h200-s512-b16.json.gz")
H100_B8, H100_B16 = str(DATA / "llama4-h100-s512-b8.json.gz"), str(DATA / "llama4-h100-s512-b16.json.gz")
# the same steps recorded again on a second H200 machine (2026-11-27, 21:31 UTC)
H200_RUN2_B8, H200_RUN2_B16 = (str(DATA / f"llama4-h200-run2-s512-b{b}.json.gz") for b in (8, 16))


def _options(seq_len: int, engines=("calibrated", "analytic")) -> dict:
    return dict(framework="none", seq_len=seq_len, micro_batch=1, hardware="H100-SXM5-80GB", gpus=1, tp=1, pp=1,
                fuse=False, engines=engines)


@pytest.fixture
def user_db(tmp_path, monkeypatch):
    path = tmp_path / "profile.db"
    monkeypatch.setenv("CHARON_PROFILE_DB", str(path))
    return path


def test_the_recorded_cpu_step_splits_into_kernel_classes():
    m = kineto.measure(S256)
    raw = json.loads(gzip.decompress(Path(S256).read_bytes()))
    (step,) = [e for e in raw["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert m.device == "cpu"
    assert m.step_s == pytest.approx(step["dur"] * 1e-6)
    # the eager step's kernels, one per simulated op of these classes
    assert (m.kernels["gemm"], m.kernels["attention"], m.kernels["optimizer"], m.kernels["embedding"]) == (87, 8, 1, 2)
    assert sum(m.classes.values()) + m.host_s == pytest.approx(m.step_s)
    assert m.classes["gemm"] > 0.5 * m.step_s  # GEMMs dominate a 1-thread float32 step


def _gpu_options(batch: int, gpu: str) -> dict:
    return {**_options(512), "micro_batch": batch, "hardware": gpu}


def test_the_recorded_gpu_step_is_every_kernel_its_host_launched():
    """The host's ProfilerStep window, not its `gpu_user_annotation` projection (which
    spans part of the kernels); kernels matched to their launches, so those the GPU
    ran after the host's step ended are in, and the step ends with the last."""
    m = kineto.measure(H200_B8)
    raw = json.loads(gzip.decompress(Path(H200_B8).read_bytes()))["traceEvents"]
    kernels = [e for e in raw if e.get("cat") == "kernel"]
    (host,) = [e for e in raw if e.get("name") == "ProfilerStep#0" and e.get("cat") == "user_annotation"]
    assert m.device == "NVIDIA H200"
    assert sum(m.kernels.values()) == len(kernels)
    last = max(e["ts"] + e["dur"] for e in kernels)
    assert m.step_s * 1e6 == pytest.approx(max(last, host["ts"] + host["dur"]) - host["ts"])
    # one measured GEMM / flash kernel set / fused AdamW launch per simulated op of the class
    assert (m.kernels["gemm"], m.kernels["loss"]) == (88, 4)
    assert m.classes["gemm"] == pytest.approx(2.175e-3, rel=1e-3)
    # the host's side: its launches in its window (a step of short kernels is host-bound)
    assert m.launches == 539 and m.host_window_s == pytest.approx(host["dur"] * 1e-6)


@pytest.mark.parametrize("gpu, b8, b16", [("H200-SXM-141GB", H200_B8, H200_B16), ("H100-SXM5-80GB", H100_B8, H100_B16)])
def test_a_gpu_calibration_carries_to_a_larger_batch(user_db, gpu, b8, b16):
    """Calibrated on a GPU's batch-8 step, the batch-16 step's kernels are predicted
    within 10 % (measured +5.3 % on the H200, +2.2 % on the H100); its host-bound
    step time is not (the simulator does not price the host)."""
    kineto.calibrate_profile(b8, CONFIG, _gpu_options(8, gpu))
    measured = kineto.measure(b16)
    after = kineto.simulate_for_profile(CONFIG, gpu, **_gpu_options(16, gpu))
    assert after.streams["compute"] == pytest.approx(measured.streams["compute"], rel=0.10)
    assert after.classes["gemm"] == pytest.approx(measured.classes["gemm"], rel=0.10)
    assert measured.step_s > 2 * measured.streams["compute"]  # the host bound: reported, not modelled


def test_a_gpu_calibration_carries_to_another_machine(user_db):
    """Calibrated on one H200's batch-8 step, a second H200 machine's batch-8 and
    batch-16 steps: their kernels within 2 % and 10 % (measured +0.2 % and +5.2 %).
    The kernels reproduce across the machines (6.966 against 6.980 ms at batch 8);
    the host window does not (46.2 against 34.3 ms), which is why only kernels
    calibrate."""
    kineto.calibrate_profile(H200_B8, CONFIG, _gpu_options(8, "H200-SXM-141GB"))
    for batch, trace, rel in ((8, H200_RUN2_B8, 0.02), (16, H200_RUN2_B16, 0.10)):
        measured = kineto.measure(trace)
        after = kineto.simulate_for_profile(CONFIG, "H200-SXM-141GB", **_gpu_options(batch, "H200-SXM-141GB"))
        assert after.streams["compute"] == pytest.approx(measured.streams["compute"], rel=rel)
    assert kineto.measure(H200_RUN2_B8).streams["compute"] == pytest.approx(
        kineto.measure(H200_B8).streams["compute"], rel=0.02)


def test_kernel_classes():
    cases = {"aten::mm": "gemm", "matmul": "gemm", "sm90_xmma_gemm_bf16": "gemm",
             "aten::_scaled_dot_product_flash_attention_for_cpu": "attention", "attention_grad": "attention",
             "flash_fwd_kernel": "attention", "aten::_fused_adamw_": "optimizer", "optimizer_step": "optimizer",
             "aten.embedding_dense_backward": "embedding", "aten._log_softmax": "loss",
             "ncclDevKernel_AllReduce_Sum_bf16_RING_LL": "comm", "aten::mul": "elementwise", "reduce": "elementwise",
             "void cudnn::fusion::compute_dot_do_o_specialized<true, 128>": "attention",
             "void at::native::vectorized_gather_kernel<16, long>": "embedding",
             "void at::native::(anonymous namespace)::krn_partials_per_segment<long>": "embedding",
             "void at::native::cunn_SoftMaxForwardReg<float, float, float, LogSoftMaxForwardEpilogue>": "loss"}
    assert {name: kineto.kernel_class(name) for name in cases} == cases


def test_calibrated_from_a_trace_the_step_is_within_5_percent_of_it(user_db):
    text = kineto.calibrate_profile(S256, CONFIG, _options(256, ("analytic",)))
    assert "calibration of cpu v1" in text
    measured = kineto.measure(S256)
    after = kineto.simulate_for_profile(CONFIG, "cpu", **_options(256))
    assert abs(after.step_s / measured.step_s - 1) <= 0.05
    # GEMMs are priced at the rate measured for them
    assert after.classes["gemm"] == pytest.approx(measured.classes["gemm"], rel=0.05)
    # another trace (twice the sequence): reported, whatever its error
    table = kineto.validate_profile(S512, CONFIG, _options(512))
    assert "calibration of cpu v1" in table and "\nstep " in table


def test_calibrations_are_versioned_and_reversible(user_db):
    uncalibrated = kineto.simulate_for_profile(CONFIG, "cpu", **_options(256)).step_s
    first = calibration.save("cpu", {"gemm": 1e-11, "elementwise": 1e-10}, "a")
    second = calibration.save("cpu", {"gemm": 2e-11, "elementwise": 1e-10}, "b")
    assert (first.version, second.version) == (1, 2)
    assert calibration.active("cpu").factors["gemm"] == 2e-11
    t2 = kineto.simulate_for_profile(CONFIG, "cpu", **_options(256)).step_s
    calibration.remove("cpu")
    assert calibration.active("cpu").version == 1
    t1 = kineto.simulate_for_profile(CONFIG, "cpu", **_options(256)).step_s
    assert t2 > t1 > uncalibrated  # GEMMs at half the throughput take longer
    calibration.remove("cpu")
    assert calibration.active("cpu") is None
    assert kineto.simulate_for_profile(CONFIG, "cpu", **_options(256)).step_s == pytest.approx(uncalibrated)
    with pytest.raises(CharonError, match="no calibration in force for cpu"):
        calibration.remove("cpu")
    assert [c.version for c in calibration.calibrations(device="cpu")] == [1, 2]  # kept, inactive
    with pytest.raises(CharonError, match="not a finite number"):
        calibration.save("cpu", {"gemm": float("nan")}, "c")


def _gpu_trace(path: Path, events: list[dict]) -> str:
    path.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
                                "traceEvents": events}))
    return str(path)


def test_a_gpu_trace_streams_and_exposed_communication(tmp_path):
    def kernel(name, ts, dur, stream):
        return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
                "args": {"stream": stream}}

    path = _gpu_trace(tmp_path / "gpu.json", [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 400, "pid": 1, "tid": 1},
        kernel("sm90_xmma_gemm_bf16bf16", 0, 100, 7),
        kernel("elementwise_kernel", 100, 50, 7),
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 120, 100, 20),  # 30 us hidden, 70 exposed
        kernel("sm90_xmma_gemm_bf16bf16", 500, 100, 7),  # after the step: left out
    ])
    m = kineto.measure(path)
    assert m.device == "NVIDIA H100 80GB HBM3"
    assert m.classes == {"gemm": pytest.approx(100e-6), "elementwise": pytest.approx(50e-6),
                         "comm": pytest.approx(100e-6)}
    assert m.exposed_comm_s == pytest.approx(70e-6)
    assert m.streams == {"compute": pytest.approx(150e-6), "comm (stream 20)": pytest.approx(100e-6)}
    assert m.step_s == pytest.approx(400e-6)
    rows = {r.what: r for r in kineto.compare(m, kineto.Predicted(300e-6, {"gemm": 100e-6, "comm:dp": 80e-6},
                                                                  {}, {}, 20e-6, 1))["step"]}
    assert rows["overlapped comm"].measured_s == pytest.approx(30e-6)
    assert rows["overlapped comm"].predicted_s == pytest.approx(60e-6)


def test_bad_traces_are_one_line(charon_fails, tmp_path):
    flags = ["--model", CONFIG, "--seq-len", "256"]
    cases = {
        "bad.json": (b"{not json", "bad.json:1:2: malformed Chrome trace (JSON)"),
        "bad.json.gz": (b"\x1f\x8b\x08garbage", "not a Chrome trace"),
        "empty.json": (b'{"traceEvents": []}', "no complete ('X') events"),
        "list.json": (b'{"traceEvents": {}}', "no traceEvents list"),
        "neg.json": (json.dumps({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 0, "dur": -4}]}).encode(),
                     "negative duration"),
        "nots.json": (json.dumps({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": "x", "dur": 4}]}).encode(),
                      "no numeric ts/dur"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        line = charon_fails("validate", "--profile", str(tmp_path / name), *flags)
        assert message in line and name in line, line
    assert "give --model" in charon_fails("validate", "--profile", S256)
    assert "cannot read" in charon_fails("calibrate", "--profile", str(tmp_path / "missing.json"), *flags)
    assert "separate actions" in charon_fails("calibrate", "--list", "--remove", "cpu")
