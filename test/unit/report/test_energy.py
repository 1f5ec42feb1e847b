"""Energy in every report: joules per step and per token from what each GPU does
over the timeline, a power cap that lowers clocks, and the energy frontier."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.report.energy import COMPUTE_FLOOR, NIC_POWER_W, training_energy
from charon_ir.target.hardware import load_gpu, power_capped_clock

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _report(compute_s: float, bubble_s: float, step: float, flops: float = 0.0, gpus: int = 8) -> dict:
    return {"iteration_time_s": step, "flops_per_gpu": flops, "gpus": gpus, "tokens_per_s": 1000.0,
            "stages": [{"compute_s": compute_s, "bubble_s": bubble_s}]}


def test_energy_of_a_step_by_hand() -> None:
    """1 s of memory-bound compute, 0.5 s of exposed communication, 0.5 s idle on an
    H100 (700 W TDP, 70 W idle, one NIC per GPU)."""
    gpu = load_gpu("H100")
    e = training_energy(_report(1.0, 0.5, 2.0), gpu, nics_per_gpu=1.0)
    compute = 1.0 * (70 + 630 * COMPUTE_FLOOR)
    comm = 0.5 * (70 + 630 * 0.15)
    idle = 0.5 * 70
    nic = 2.0 * NIC_POWER_W
    assert e["energy_j"] == pytest.approx(8 * (compute + comm + idle + nic))
    assert e["tokens_per_joule"] == pytest.approx(2000.0 / e["energy_j"])


@settings(max_examples=60, deadline=None)
@given(compute=st.floats(0.0, 10.0), bubble=st.floats(0.0, 10.0), comm=st.floats(0.0, 10.0),
       util=st.floats(0.0, 2.0))
def test_power_lies_between_idle_and_tdp(compute: float, bubble: float, comm: float, util: float) -> None:
    gpu = load_gpu("H100")
    step = compute + bubble + comm
    if step <= 0:
        return
    flops = util * gpu.peak("bf16") * compute
    e = training_energy(_report(compute, bubble, step, flops, gpus=1), gpu, nics_per_gpu=0.0)
    power = e["energy_j"] / step
    assert gpu.idle_w - 1e-9 <= power <= gpu.tdp_w + 1e-9


def test_every_training_report_has_energy() -> None:
    from charon_ir.api import simulate_file

    r = simulate_file(str(EXAMPLES / "llama_tiny_step.mlir"), hardware="H100", gpus=1)
    assert r["energy_j"] > 0 and r["tokens_per_joule"] > 0
    assert load_gpu("H100").idle_w < r["energy"]["power_w_per_gpu"] < load_gpu("H100").tdp_w + 100
    # no power figures, no invented energy
    tpu = simulate_file(str(EXAMPLES / "llama_tiny_step.mlir"), hardware="TPU-v5e", gpus=1)
    assert tpu["energy_j"] is None and "no power figures" in tpu["energy"]["note"]


def test_every_serving_report_has_energy() -> None:
    from charon_ir.serving import serve

    r = serve("llama-3.1-8b", hardware="H100", batch=4, input_len=128, output_len=16)
    assert r["energy_j"] > 0
    assert r["tokens_per_joule"] == pytest.approx(r["output_tokens"] / r["energy_j"])


def test_power_cap_lowers_clocks_and_speed_but_not_memory() -> None:
    from charon_ir.api import simulate_file

    base, capped = load_gpu("H100"), load_gpu("H100:power_cap=400")
    clock = power_capped_clock(400, 700, 70)
    assert clock == pytest.approx(((400 - 70) / (700 - 70)) ** (1 / 3))
    assert capped.peak("bf16") == pytest.approx(base.peak("bf16") * clock)
    assert capped.hbm_bandwidth == base.hbm_bandwidth and capped.tdp_w == 400
    # a cap above the TDP changes nothing but the name
    assert load_gpu("H100:power_cap=800").peak_flops == base.peak_flops
    model = str(EXAMPLES / "llama_tiny_step.mlir")
    slow = simulate_file(model, hardware="H100:power_cap=400", gpus=1)
    fast = simulate_file(model, hardware="H100", gpus=1)
    assert slow["iteration_time_s"] > fast["iteration_time_s"]
    assert slow["energy"]["power_w_per_gpu"] < fast["energy"]["power_w_per_gpu"]


@pytest.mark.parametrize("args,message", [
    (("--power-cap", "50"), "'power_cap' (50 W) must exceed the idle power (70 W)"),
    (("--power-cap", "-5"), "--power-cap must be a positive number of watts"),
    (("--power-cap", "300", "--cluster", "dgx-h100"), "--power-cap with --cluster"),
])
def test_bad_power_cap_is_one_line(charon_fails, args, message) -> None:
    line = charon_fails("simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--hardware", "H100", *args)
    assert message in line, line


def test_energy_frontier() -> None:
    from charon_ir.sweep.analysis import objectives, pareto_front

    def rec(key: str, tps: float, tpj: float | None) -> dict:
        return {"key": key, "status": "ok", "config": {"gpus": 8, "tp": 1},
                "metrics": {"tokens_per_s": tps, "tokens_per_joule": tpj}}

    records = [rec("fast", 100.0, 1.0), rec("frugal", 50.0, 4.0), rec("worse", 40.0, 2.0), rec("none", 30.0, None)]
    front = pareto_front(records, objectives("training", "energy"))
    assert [r["key"] for r in front] == ["fast", "frugal"]
