"""GGUF block formats as Candle's `quantized.cu` reads them, random and adversarial blocks, and the
reference dequantizer (the `gguf` package's NumPy dequantizers; q8_K, which gguf lacks, is ours).
Shared by the dequantize, dmmv and mmvq ops."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QK_K = 256


@dataclass(frozen=True)
class Format:
    """One GGUF block format as Candle's CUDA kernels read it."""
    name: str               # q4_0 ... q8_K
    qk: int                 # elements per block
    size: int               # bytes per block
    half_at: tuple[int, ...]   # byte offsets of the block's f16 scale fields (d first)
    qs_at: int              # byte offset of the quants the nibble split applies to
    block: int              # threads per CUDA block of Candle's launch
    per_cta: int            # elements one CUDA block dequantizes
    k_arg: str              # "nb32" (k = n/32), "n" (k = n) or "" (no k parameter)


# Byte layouts (quantized.cu's block_* structs; d, m, dmin are f16):
#   q4_0 d|qs[16]   q4_1 d m|qs[16]   q5_0 d|qh[4]|qs[16]   q5_1 d m|qh[4]|qs[16]   q8_0 d|qs[32] int8
#   q2_K scales[16]|qs[64]|d dmin   q3_K hmask[32]|qs[64]|scales[12]|d   q4_K d dmin|scales[12]|qs[128]
#   q5_K d dmin|scales[12]|qh[32]|qs[128]   q6_K ql[128]|qh[64]|scales[16] int8|d
#   q8_K d (f32)|qs[256] int8|bsums[16] int16
FORMATS = {f.name: f for f in [
    Format("q4_0", 32, 18, (0,), 2, 32, 256, "nb32"),
    Format("q4_1", 32, 20, (0, 2), 4, 32, 256, "nb32"),
    Format("q5_0", 32, 22, (0,), 6, 256, 512, "n"),
    Format("q5_1", 32, 24, (0, 2), 8, 256, 512, "n"),
    Format("q8_0", 32, 34, (0,), 2, 32, 256, "nb32"),
    Format("q2_K", QK_K, 84, (80, 82), 16, 64, QK_K, ""),
    Format("q3_K", QK_K, 110, (108,), 32, 64, QK_K, ""),
    Format("q4_K", QK_K, 144, (0, 2), 16, 32, QK_K, ""),
    Format("q5_K", QK_K, 176, (0, 2), 48, 64, QK_K, ""),
    Format("q6_K", QK_K, 210, (208,), 0, 64, QK_K, ""),
    Format("q8_K", QK_K, 292, (), 4, 32, QK_K, ""),     # d is an f32 at byte 0
]}
GGUF_QUANTIZES = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0")   # gguf.quants.quantize has no K-quants

# Adversarial f16 scale bit patterns: ±max, min normal, ±min subnormal, max subnormal, ±0, NaNs.
_F16_POOL = np.array([0x7BFF, 0xFBFF, 0x0400, 0x0001, 0x8001, 0x03FF, 0x0000, 0x8000, 0x7E00, 0xFE01],
                     dtype=np.uint16)
# q8_K's f32 d: ±max (products overflow to ±inf), min normal, ±0, NaN, f16 max. No f32 subnormals:
# whether the GPU flushes them depends on how the suite is compiled, not on the kernel.
_F32_POOL = np.array([3.4028235e38, -3.4028235e38, 1.1754944e-38, 0.0, -0.0, np.nan, 65504.0],
                     dtype=np.float32)


# ------------------------------------------------------------------------------ blocks
@dataclass(frozen=True)
class QuantKernel:
    """Which kernel of the quantized family an op is (its spec's `variant`): what the family's build,
    pack and emulate read instead of parsing the op's name back."""
    kind: str                 # dequantize, get_rows, dmmv, mmvq, mmq, mmvq_gguf, indexed_moe, quantize_q8_1
    format: str = ""          # the GGUF block format (q4_0 ... q8_K), or get_rows' f32/f16/bf16 table
    dtype: str = "f32"        # the output dtype
    batch: int = 1            # mat-vec: activation columns (Candle's cuda1..cuda8 kernels)


def random_blocks(fmt: Format, nblocks: int, rng: np.random.Generator) -> np.ndarray:
    """(nblocks, size) u8: gguf's quantizer on normal floats, or random bytes with weight-sized
    scales where gguf cannot quantize (any byte pattern is a valid K-quant block)."""
    if fmt.name in GGUF_QUANTIZES:
        import gguf.quants  # import on use: gguf costs ~100 ms, too much for CLI start-up
        x = (rng.standard_normal(nblocks * fmt.qk) * rng.choice([0.01, 1.0, 30.0])).astype(np.float32)
        q = gguf.quants.quantize(x.reshape(1, -1), getattr(gguf.GGMLQuantizationType, fmt.name.upper()))
        return np.ascontiguousarray(q.reshape(nblocks, fmt.size))
    blocks = rng.integers(0, 256, (nblocks, fmt.size), dtype=np.uint8)
    if fmt.name == "q8_K":
        blocks[:, 0:4] = (rng.standard_normal((nblocks, 1)) * 0.01).astype(np.float32).view(np.uint8)
    for at in fmt.half_at:
        blocks[:, at:at + 2] = (rng.standard_normal((nblocks, 1)) * 0.01).astype(np.float16).view(np.uint8)
    return blocks


def adversarial(fmt: Format, blocks: np.ndarray) -> np.ndarray:
    """Every block's scale fields from the adversarial pool (each field its own rotation); every
    third block's quants all ones (largest quants, largest 6-bit K scales and mins), every third
    all zeros."""
    b = blocks.copy()
    k = np.arange(b.shape[0])
    if fmt.name == "q8_K":
        b[:, 0:4] = _F32_POOL[k % _F32_POOL.size].reshape(-1, 1).view(np.uint8)
    for j, at in enumerate(fmt.half_at):
        b[:, at:at + 2] = _F16_POOL[(k + 3 * j) % _F16_POOL.size].reshape(-1, 1).view(np.uint8)
    body = np.ones(fmt.size, dtype=bool)
    for at in fmt.half_at:
        body[at:at + 2] = False
    if fmt.name == "q8_K":
        body[0:4] = False
    b[np.ix_(k % 3 == 0, body)] = 0xFF
    b[np.ix_(k % 3 == 1, body)] = 0x00
    return b


# ------------------------------------------------------------------------------ reference
def _q8_k(blocks: np.ndarray) -> np.ndarray:
    """q8_K (gguf has no dequantizer for it): d (f32) * qs (256 int8); bsums are not read."""
    d = blocks[:, 0:4].copy().view(np.float32)
    return (blocks[:, 4:4 + QK_K].view(np.int8).astype(np.float32) * d).reshape(-1)


def dequantize_reference(fmt_name: str, raw: np.ndarray) -> np.ndarray:
    """f32 elements of a contiguous block array, as gguf's NumPy dequantizers compute them."""
    fmt = FORMATS[fmt_name]
    blocks = raw.reshape(-1, fmt.size)
    if fmt_name == "q8_K":
        return _q8_k(blocks)
    import gguf.quants
    out = gguf.quants.dequantize(blocks, getattr(gguf.GGMLQuantizationType, fmt_name.upper()))
    out = np.asarray(out, dtype=np.float32).reshape(-1)
    if fmt_name == "q4_0":                  # the kernel's d*q + (-8d) never yields -0 (see module doc)
        out = np.where(out == 0, np.float32(0.0), out)
    return out




def scale_min_k4(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """get_scale_min_k4 for every sub-block: (rows, 8) 6-bit scales and mins of q4_K/q5_K from
    their 12 packed bytes (rows, 12)."""
    q = q.astype(np.int64)
    d = np.stack([q[:, k] & 63 if k < 4 else (q[:, k + 4] & 0xF) | ((q[:, k - 4] >> 6) << 4) for k in range(8)], 1)
    m = np.stack([q[:, k + 4] & 63 if k < 4 else (q[:, k + 4] >> 4) | ((q[:, k] >> 6) << 4) for k in range(8)], 1)
    return d, m
