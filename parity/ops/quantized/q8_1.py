"""quantize_q8_1: the activation quantization Candle runs before every mmvq/mmq launch.

Kernel: quantize_q8_1(const float *x, void *vy, const int kx, const int kx_padded). Host
(`candle-core/src/quantized/cuda.rs` `quantize_q8_1`): kx_padded = ceil(kx/512)*512
(MATRIX_ROW_PADDING), grid (ceil(kx_padded/256), ky) (rows in chunks of 65535), block 256
(CUDA_QUANTIZE_BLOCK_SIZE). Thread ix of row iy quantizes x[iy*kx + ix] (0 past kx) into block
(iy*kx_padded + ix)/32; a block_q8_1 is half2 ds (d, s) then 32 int8 quants (36 bytes).

Per 32 consecutive threads (one warp, one block): amax = warp max of |x|, s = warp sum of x (the
xor butterfly 16, 8, 4, 2, 1 in f32), d = amax/127 (IEEE division: no fast math), q = roundf(x/d)
(half away from zero; 0 where amax == 0), d and s rounded to half (RN). The reference follows those
steps in that order, so it is bit-exact; judged byte for byte.
"""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.structured import StructuredBuilt, mask_judge, out_buffer

QK8_1 = 32
Q8_1_SIZE = 36                 # half2 ds + 32 int8
MATRIX_ROW_PADDING = 512
CUDA_QUANTIZE_BLOCK_SIZE = 256


def padded(k: int) -> int:
    """Candle's pad(k, MATRIX_ROW_PADDING)."""
    return -(-k // MATRIX_ROW_PADDING) * MATRIX_ROW_PADDING


def warp_sum(v: np.ndarray) -> np.ndarray:
    """warp_reduce_sum over the last axis (32 lanes): the xor butterfly in f32; every lane ends
    with the same value (each add is commutative), lane 0's is returned."""
    v = np.asarray(v, dtype=np.float32)
    lanes = np.arange(32)
    for mask in (16, 8, 4, 2, 1):
        v = (v + v[..., lanes ^ mask]).astype(np.float32)
    return v[..., 0]


def roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero (NumPy's round is half to even)."""
    a = np.abs(v)
    f = np.floor(a)
    return np.copysign(f + (a - f >= 0.5), v)


def quantize_q8_1(x: np.ndarray, kx_padded: int) -> np.ndarray:
    """(ky, kx) f32 -> (ky, kx_padded/32 * 36) u8: the kernel's blocks, bit for bit."""
    ky, kx = x.shape
    xp = np.zeros((ky, kx_padded), np.float32)
    xp[:, :kx] = x
    xb = xp.reshape(ky, -1, QK8_1)
    with np.errstate(all="ignore"):
        amax = np.abs(xb).max(axis=-1)
        s = warp_sum(xb)
        d = (amax / np.float32(127)).astype(np.float32)
        q = np.where(amax[..., None] == 0, 0, roundf(xb / d[..., None])).astype(np.int8)
        d16, s16 = d.astype(np.float16), s.astype(np.float16)      # RN; a sum past 65504 is inf
    out = np.empty(xb.shape[:2] + (Q8_1_SIZE,), np.uint8)
    out[..., 0:2] = d16[..., None].view(np.uint8)
    out[..., 2:4] = s16[..., None].view(np.uint8)
    out[..., 4:] = q.view(np.uint8)
    return out.reshape(ky, -1)


def fields(vy: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(d, s, qs) of a q8_1 buffer of `rows` rows: d, s (rows, nblocks) f32 from their halves,
    qs (rows, nblocks, 32) int8."""
    b = np.asarray(vy, np.uint8).reshape(rows, -1, Q8_1_SIZE)
    d = b[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    s = b[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    return d, s, b[..., 4:].view(np.int8)


def activations(rng: np.random.Generator, shape: tuple[int, int], special: bool,
                overflow: bool = False) -> np.ndarray:
    """f32 activations. Special: each 32-block (by its index) one of: all zeros (d = 0, q = 0),
    exact .5 ties (amax 127 so d = 1: roundf's half-away-from-zero shows), f32 subnormals (d
    rounds to half 0 while the quants are ±127), tiny values whose d is an f16 subnormal, large
    values (±1000), normal values; with `overflow` also blocks whose sum overflows half (s = inf)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if not special:
        return x
    rows, n = shape
    kinds = 7 if overflow else 6
    for k in range(-(-n // QK8_1)):
        sl = np.s_[:, k * QK8_1:(k + 1) * QK8_1]
        m = x[sl].shape[1]
        kind = k % kinds
        if kind == 0:
            x[sl] = 0
        elif kind == 1:
            t = rng.integers(-127, 127, (rows, m)).astype(np.float32) + np.float32(0.5)
            t[:, 0] = 127
            x[sl] = t
        elif kind == 2:
            x[sl] = rng.standard_normal((rows, m)).astype(np.float32) * np.float32(1e-39)
        elif kind == 3:
            x[sl] = rng.standard_normal((rows, m)).astype(np.float32) * np.float32(3e-6)
        elif kind == 4:
            x[sl] = rng.standard_normal((rows, m)).astype(np.float32) * np.float32(1000)
        elif kind == 6:
            x[sl] = np.float32(4096) + rng.random((rows, m)).astype(np.float32)
    return x


# ------------------------------------------------------------------------------ the op
_SHAPES = {n: ShapeClass(n, doc, {"kx": kx, "ky": ky}) for n, kx, ky, doc in [
    ("k256", 256, 1, "one row of 256: padded to 512 (the padding blocks are d = s = 0)"),
    ("k1000x3", 1000, 3, "3 rows of 1000: a partial block at kx (x read as 0 past it), padded to 1024"),
    ("k4096x8", 4096, 8, "8 rows of 4096 (mmvq batch 8)"),
]}


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    g = op.spec.shapes[case.layout].geo
    kx, ky = g["kx"], g["ky"]
    x = activations(rng, (ky, kx), case.values == "special", overflow=True).reshape(-1)
    kxp = padded(kx)
    return StructuredBuilt(case, op, case.dtype, {"x": dtype("f32")}, {"x": contiguous((x.size,))},
                           {"x": x}, {"x": x}, {"kx": kx, "ky": ky, "kx_padded": kxp},
                           out_name="vy", out_dtype=dtype("u8"), out_shape=(ky * kxp // QK8_1 * Q8_1_SIZE,))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    args = [Arg("ptr", ("x", 0), name="x"), Arg("ptr", ("vy", 0), name="vy"),
            Arg("i32", g["kx"], name="kx"), Arg("i32", g["kx_padded"], name="kx_padded")]
    return Launch(b.op.kernel, args, {"x": b.bases["x"], "vy": out_buffer(b)}, ("vy",),
                  grid=(-(-g["kx_padded"] // CUDA_QUANTIZE_BLOCK_SIZE), g["ky"], 1),
                  block=(CUDA_QUANTIZE_BLOCK_SIZE, 1, 1), dtypes={"x": "f32", "vy": "u8"})


def _expected(b: StructuredBuilt) -> np.ndarray:
    g = b.geo
    return quantize_q8_1(b.inputs["x"].reshape(g["ky"], g["kx"]), g["kx_padded"]).reshape(-1)


def _judge(expected, got, b: StructuredBuilt):
    e, g = np.asarray(expected, np.uint8), np.asarray(got, np.uint8)

    def inputs(i, coords):
        blk, byte = divmod(i, Q8_1_SIZE)
        field = "d" if byte < 2 else "s" if byte < 4 else f"qs[{byte - 4}]"
        return {"block": str(blk), "field": field}
    return mask_judge(e, g, dtype("u8"), e == g, inputs=inputs)


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """The kernel's warps: 32 consecutive ix of one row are one block (256-thread CUDA blocks and
    a 512-padded row keep warps inside a row); threads past kx_padded return."""
    a = {x.name: x for x in launch.args}
    kx, kxp = int(a["kx"].value), int(a["kx_padded"].value)
    ky = int(launch.grid[1])
    xn, xo = a["x"].value
    yn, yo = a["vy"].value
    x = bufs[xn][ex.pointer_offset(xo):][: ky * kx].reshape(ky, kx)
    out = quantize_q8_1(x, kxp).reshape(-1)
    bufs[yn][ex.pointer_offset(yo):][: out.size] = out


OPS = [Op(name="quant.quantize_q8_1", family="quantized", root="quantize_q8_1", kernel="quantize_q8_1",
          dtypes=("f32",), inputs=("x",), value_classes=("normal", "special"),
          out_rule="u8", abi=("x", "vy", "kx:i32", "kx_padded:i32"),
          semantics="f32 rows to q8_1 blocks (half d = amax/127, half s = sum, 32 x int8 roundf(x/d)); "
                    "grid (ceil(kx_padded/256), ky), block 256",
          spec=StructuredSpec(shapes=_SHAPES, build=_build, pack=_pack, expected=_expected, judge=_judge,
                              emulate=_emulate,
                              tolerance=lambda key: "bit-exact bytes: the reference takes the kernel's steps "
                                                    "(butterfly sum, IEEE divide, roundf, half RN)"))]
