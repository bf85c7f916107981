"""Broken variants of the bundled HIP kernels for Candle's newer kernels (issue #31: sum_*,
get_rows_*, mmvq_gguf_*, indexed_moe_forward_*), each one edit of the real source (file, the text
replaced, its replacement), and broken subjects of the CPU ABI emulation for the kernels whose
source cannot run on the host (barriers): tests/fakes_quantized.py. tests/test_candle_new_kernels.py asserts each is caught
with its exact verdict and worst element."""
from __future__ import annotations

# sum_*: the contiguous path taken for every layout (inp[i] instead of inp[strided_index(i)])
SUM_STRIDES_IGNORED = ("reduce_sum.hip", "const bool contiguous = is_contiguous(num_dims, dims, strides);",
                       "const bool contiguous = true;")

# get_rows_*: the row of ids[blockIdx.x] taken at blockIdx.x (the ids ignored)
GET_ROWS_IDS_IGNORED = ("quantized_get_rows.hip", "const usize row = ids[blockIdx.x];\n  const u8* x",
                        "const usize row = blockIdx.x;\n  const u8* x")


# mmvq_gguf_* and indexed_moe_forward_* keep barriers (no host run): their planted bugs are the
# quantized family's broken CPU subjects (tests/fakes_quantized.py: RowStrideOffByOne,
# FirstWarpOnlyReduction, Q81SumIgnored), which the new kernels' emulations call through the same hooks.

__all__ = ["SUM_STRIDES_IGNORED", "GET_ROWS_IDS_IGNORED"]
