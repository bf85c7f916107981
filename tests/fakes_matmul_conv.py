"""Broken subjects for matmul, pooling and convolution, built on the CPU ABI emulation: each
overrides one hook to reproduce a bug a port can ship. tests/test_matmul_conv.py asserts each
is caught."""
from __future__ import annotations

import dataclasses

import numpy as np

from parity.backends.cpu import CpuExecutor
from parity.ops.matmul import MatMulNonContiguous, gemm_config


class LdaFromWrongOperand(CpuExecutor):
    """gemm_config that takes lda from the lhs (ldb's value) instead of the rhs."""
    def gemm_config(self, bmnk, lhs, rhs):
        cfg = gemm_config(bmnk, lhs, rhs)
        return dataclasses.replace(cfg, lda=cfg.ldb)


class NoBatchStrideForBroadcast(CpuExecutor):
    """Batch stride 0 (broadcast) replaced by the packed n*k: reads past the broadcast matrix."""
    def gemm_config(self, bmnk, lhs, rhs):
        cfg = gemm_config(bmnk, lhs, rhs)
        return dataclasses.replace(cfg, stride_a=cfg.stride_a or cfg.m * cfg.k)


class NeverRefuses(CpuExecutor):
    """A port that computes something for layouts Candle refuses (copies to contiguous first)."""
    def gemm_config(self, bmnk, lhs, rhs):
        try:
            return gemm_config(bmnk, lhs, rhs)
        except MatMulNonContiguous:
            b, m, n, k = bmnk
            from parity.ops.matmul import GemmConfig
            return GemmConfig("N", "N", n, m, k, n, k, n, n * k, m * k, m * n, b)


class Im2colIgnoresDilation(CpuExecutor):
    """im2col / im2col1d that step by 1 whatever the dilation."""
    def im2col_dilation(self, d):
        return 1


class PoolIgnoresSwappedNames(CpuExecutor):
    """A pool kernel that reads w_k/w_stride as the last dim (dims[3]), as the names suggest."""
    def pool_params(self, w_k, h_k, w_stride, h_stride):
        return h_k, w_k, h_stride, w_stride


class ConvGemmReadsOriginalKernel(CpuExecutor):
    """CUDA Candle's conv host path: after copying a non-contiguous kernel into kernel_c, the
    GEMM still reads the original buffer as a contiguous (c_out, c_in*k) matrix."""
    conv_gemm_kernel = "original"


def direct_conv(x: np.ndarray, w: np.ndarray, pad, stride, dil) -> np.ndarray:
    """NCHW x OIHW convolution in float64 straight from the definition (per-axis parameters),
    independent of parity's im2col-based reference."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh = (h + 2 * pad[0] - dil[0] * (r - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (s - 1) - 1) // stride[1] + 1
    xp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]))
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x
    y = np.zeros((n, k, oh, ow))
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                       j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
            y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return y


__all__ = ["LdaFromWrongOperand", "NoBatchStrideForBroadcast", "NeverRefuses", "Im2colIgnoresDilation",
           "PoolIgnoresSwappedNames", "ConvGemmReadsOriginalKernel", "direct_conv"]
