"""Kernel classes: what a measured kernel or a simulated op is, for comparing a
traced step with its simulation and calibrating one by the other."""

from __future__ import annotations

CLASSES = ("gemm", "attention", "elementwise", "embedding", "loss", "optimizer")
"""Compute kernel classes; communication is `comm` (measured) or `comm:<axes>` (simulated)."""
HOST = "host overhead"
WORK_FLOPS = frozenset({"gemm", "attention"})
"""Classes whose work is FLOPs (a throughput is calibrated); the others' is bytes moved."""

_GEMM = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::_scaled_mm", "aten::linear",
         "aten::matmul")


def kernel_class(name: str) -> str:
    """The class of a measured kernel or aten op (`aten::mm`, `ampere_sgemm_...`),
    or of a simulated op kind (`matmul`, `attention_grad`, `aten._log_softmax`)."""
    n = name.lower()
    if n.startswith("aten."):  # a sim.generic imported from an aten op
        n = "aten::" + n[5:]
    if "nccl" in n or n.startswith("c10d::") or "record_param_comms" in n:
        return "comm"
    if (n in _GEMM or n == "matmul" or "gemm" in n or "cutlass" in n and "attention" not in n
            or n.startswith("sm90_xmma") or n.startswith("nvjet")):
        return "gemm"
    # cuDNN's SDPA runs its backward's pre/post-processing (dO.O, dQ to 16 bits)
    # as `cudnn::fusion::` kernels of their own
    if "attention" in n or "flash" in n or "fmha" in n or n.startswith("void cudnn::fusion::"):
        return "attention"
    if "adam" in n or "optimizer" in n or "multi_tensor_apply" in n:
        return "optimizer"
    # PyTorch's CUDA embedding: a gather forward; a backward that sorts the ids and
    # sums each id's rows in segments (`krn_partials_per_segment`, ...)
    if "embedding" in n or "gather_kernel" in n or "partial_segment" in n or "partials_per_segment" in n:
        return "embedding"
    if "nll_loss" in n or "log_softmax" in n or "logsoftmax" in n or "cross_entropy" in n:
        return "loss"
    return "elementwise"
