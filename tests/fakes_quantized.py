"""Broken subjects for the quantized family (GGUF dequantize, dmmv, mmvq, mmq), built on the CPU ABI
emulation: each overrides one hook of `CpuExecutor` to reproduce a bug a port of Candle's
`quantized.cu` can ship (block layout, q8_1 sum term, row stride, cross-warp reduction).
tests/test_quantized.py asserts each is caught exactly."""
from __future__ import annotations

import numpy as np

from parity.executors.cpu import CpuExecutor


class NibblesSwapped(CpuExecutor):
    """A quant byte's high nibble taken as the first element, the low one as the element 16 on."""
    def quant_nibbles(self, q):
        return q >> 4, q & 0xF


class ScaleReadAsF32(CpuExecutor):
    """The f16 scale read as an f32: its two bytes and the two that follow, reinterpreted (zeros
    past a block's end, where the emulation has no next field to show)."""
    def quant_scale(self, blocks, at):
        padded = np.pad(blocks, ((0, 0), (0, 2)))
        return padded[:, at:at + 4].copy().view(np.float32).reshape(-1)


class KMinHighBitsMisread(CpuExecutor):
    """q4_K/q5_K sub-blocks 4..7: the min's two high bits taken from the byte that holds the
    scale's (q[j-4] >> 6) instead of q[j] >> 6, a slip of get_scale_min_k4's unpacking."""
    def quant_scale_min_k4(self, packed):
        d, m = super().quant_scale_min_k4(packed)
        q = packed.astype(np.int64)
        m = m.copy()
        for j in range(4, 8):
            m[:, j] = (q[:, j + 4] >> 4) | ((q[:, j - 4] >> 6) << 4)
        return d, m




class Q81SumIgnored(CpuExecutor):
    """mmvq: the s half of q8_1's ds read as 0, so q4_0/q5_0 lose their -8d*s / -16d*s term and
    q4_1/q5_1 their m*s term (a port that drops the 'sum of y' part of the vec_dot)."""
    def q8_1_sum(self, s):
        return np.zeros_like(s)


class RowStrideOffByOne(CpuExecutor):
    """dmmv/mmvq: row r's weight blocks taken from r*(blocks_per_row - 1): every row but the
    first starts r blocks early."""
    def quant_row_stride(self, blocks_per_row):
        return blocks_per_row - 1


class FirstWarpOnlyReduction(CpuExecutor):
    """mmvq with 4 (or 2) warps per row: only warp 0's 32 lanes summed, the other warps'
    partials (their shared-memory hand-off) dropped, as a wave-32 reduction in a 64+-thread block."""
    def mmv_reduce(self, lanes):
        return super().mmv_reduce(lanes[..., :1, :])


__all__ = ["NibblesSwapped", "ScaleReadAsF32", "KMinHighBitsMisread", "Q81SumIgnored", "RowStrideOffByOne",
           "FirstWarpOnlyReduction"]


# Candle's quantized.cu mat-vec kernels and their parameter lists: the bundled suite's
# quantized_mmv.hip declares exactly these (tests/test_quantized_hip.py).
_LEGACY, _K = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0"), ("q2_K", "q3_K", "q4_K", "q5_K", "q6_K")
CANDLE_MATVEC = {
    "quantize_q8_1": ["ptr", "ptr", "i32", "i32"],
    **{f"dequantize_mul_mat_vec_{f}_cuda": ["ptr", "ptr", "ptr", "i32", "i32"] for f in _LEGACY},
    **{f"dequantize_mul_mat_vec_{f.lower()}": ["ptr", "ptr", "ptr", "i32"] + (["i32"] if f != "q5_K" else [])
       for f in _K},
    **{f"mul_mat_vec_{f}_q8_1_cuda{b}": ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i32"]
       for f in _LEGACY + _K for b in range(1, 9)},
}
# ... and its mmq kernels (quantized_mmq.hip)
CANDLE_MMQ = {f"mul_mat_{f}": ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32"] for f in _LEGACY + _K}
