"""The analytic engine reproduces the published kernel and NCCL records
(validation/published.json): kernels within 15 %, NCCL bus bandwidth within 10 %.
Constants are per GPU type and kernel (docs/calibration.md), never per record."""

import pytest

from charon_ir.validation import calibration

KERNELS = calibration.kernel_comparisons()
NCCL = [c for c in calibration.comm_comparisons() if c.primary]


def test_every_kernel_and_comm_record_is_covered():
    assert len(KERNELS) == len(calibration.kernel_records()) == 53
    assert {c.group for c in KERNELS} == {"gemm", "attention"}
    assert len(NCCL) == len(calibration.comm_records()) == 16


BLACKWELL = {
    "mamf_NVIDIA_B200_SXM": "B200-SXM-180GB",
    "mamf_NVIDIA_GB200_SXM": "GB200-per-GPU",
    "xla_matmul_sm100_bf16_b4_4096x4096x4096": "B200-SXM-180GB",
    "nccl_allreduce_gb200_4gpu_ring_8589934592B": "GB200-per-GPU",
    **{f"nccl_allreduce_gb200_nvl72_72gpu_{2**k}B": "GB200-per-GPU" for k in range(29, 34)},
}


def test_blackwell_records_are_priced_on_their_own_gpu_types():
    """The B200 / GB200 rows run on their GPU table rows (not a default), the
    forced-ring record as a ring, the NVL72 rack as NVLS in one domain."""
    rows = {c.id: c for c in KERNELS + NCCL}
    for id, gpu in BLACKWELL.items():
        assert rows[id].gpu == gpu
    assert rows["nccl_allreduce_gb200_4gpu_ring_8589934592B"].setup.endswith("ring/Simple (forced)")
    assert "18x4 GPUs" in rows["nccl_allreduce_gb200_nvl72_72gpu_8589934592B"].setup
    assert "nvls" in rows["nccl_allreduce_gb200_nvl72_72gpu_8589934592B"].setup


@pytest.mark.parametrize("row", KERNELS, ids=[c.id for c in KERNELS])
def test_kernel_record_within_15_percent(row):
    assert abs(row.error) <= calibration.KERNEL_TOLERANCE, (
        f"{row.id}: predicted {row.predicted:.1f} vs measured {row.measured} {row.unit}"
    )


@pytest.mark.parametrize("row", NCCL, ids=[c.id for c in NCCL])
def test_nccl_record_within_10_percent(row):
    assert abs(row.error) <= calibration.NCCL_TOLERANCE, (
        f"{row.id}: predicted {row.predicted:.1f} vs measured {row.measured} GB/s ({row.setup})"
    )


def test_mean_errors_are_well_inside_the_targets():
    summary = calibration.summary(KERNELS + NCCL)
    # a GEMM ceiling is its sweep's maximum (compute_efficiency.GEMM_MAX), so the
    # records' own best shapes sit a few percent under it: half the 15 % target
    assert summary["gemm"] < 0.075
    assert summary["attention"] < 0.05 and summary["nccl"] < 0.05
