"""The quantized family: Candle's GGUF kernels (`quantized.cu`, from llama.cpp).

- `dequantize`: dequantize_block_<fmt>_<f32|f16>;
- `q8_1`: quantize_q8_1, the activation quantization that precedes every mmvq launch;
- `matvec`: dequantize_mul_mat_vec_* (dmmv, f32 activations) and mul_mat_vec_<fmt>_q8_1_cuda<b>
  (mmvq, q8_1 activations, batch 1..8).
- `get_rows`: get_rows_<f32|f16|bf16|fmt>, the embedding lookup of (quantized) table rows by u32 ids;
- `gguf_fast`: mmvq_gguf_quantize_q8_1_<T> and mmvq_gguf_<fmt>_<T>_plain_cuda<b> (mmvq_gguf.cu);
- `moe`: indexed_moe_forward_<fmt>_q8_1, the mixture-of-experts mat-vec;
`blocks` holds the formats, the test blocks and the reference dequantizer they share.
"""
from __future__ import annotations

from parity.ops.quantized import dequantize, get_rows, gguf_fast, matvec, moe, q8_1
from parity.ops.quantized.blocks import FORMATS, dequantize_reference, scale_min_k4

OPS = dequantize.OPS + q8_1.OPS + matvec.OPS + get_rows.OPS + gguf_fast.OPS + moe.OPS

__all__ = ["FORMATS", "OPS", "dequantize_reference", "scale_min_k4"]
