"""GGUF dequantization: dequantize_block_<fmt>_<f32|f16>, Candle's `quantized.cu` (from llama.cpp).

Kernels: (const void *vx, T *y, const int k) for q4_0, q4_1, q5_0, q5_1, q8_0 and (const void *vx,
T *y) for the K-quants q2_K..q6_K and q8_K (QK_K = 256). `vx` is the contiguous array of GGUF blocks
as Candle stores a QTensor; `y` the dequantized elements.

Host (Candle `candle-core/src/quantized/cuda.rs`, `dequantize_f32` / `dequantize_f16`):
  q4_0, q4_1, q8_0   grid ceil(n/256), block 32, k = n/32 (one CUDA block per 8 quant blocks;
                     threads of a last, partial tile return on `ib >= k`)
  q5_0, q5_1         grid ceil(n/512), block 256 (CUDA_DEQUANTIZE_BLOCK_SIZE), k = n (two
                     elements per thread, threads return on `i >= k`)
  q2_K q3_K q5_K q6_K  grid n/256, block 64;  q4_K q8_K  grid n/256, block 32 (one CUDA block per
                     super-block, no bounds check: K-quant tensors hold whole super-blocks)

Reference: `gguf.quants.dequantize` (llama.cpp's NumPy dequantizers), cast to the output dtype
once (the kernel rounds its f32 value to half on the store); q8_K, which gguf does not cover, is
ours (d * q with an f32 d). Judged bit-exact, any NaN equal to any NaN (the GPU's NaN payload is
its own): every product the kernels form is exact in f32 (an f16 scale times an integer of at most
8 bits, or an int8 times q8_K's f32 d, which rounds once in both), so the one rounding of each
element is the same in the kernel and in gguf, FMA contraction or not. One difference in form:
q4_0 computes d*q + (-8*d), gguf d*(q-8); they differ only in the sign of a zero (the kernel's
sum is +0), so the reference's zeros are +0 for q4_0.
"""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.quantized.blocks import (FORMATS, QK_K, Format, QuantKernel, adversarial, dequantize_reference,
                                         random_blocks)
from parity.ops.structured import StructuredBuilt, mask_judge, out_buffer

# (name, quant blocks, doc): 32-element formats tile 8 blocks per CUDA block (q5: 16)
_LEGACY_SHAPES = [("b1", 1, "one block; the rest of the launch tile returns early"),
                  ("b8", 8, "exactly one 256-element tile"),
                  ("b13", 13, "13 blocks: the second tile is partial (q5: one partial 512 tile)"),
                  ("b100", 100, "100 blocks (3200 elements): 13 tiles, the last partial"),
                  ("b1000", 1000, "1000 blocks (32000 elements): pr only")]
_K_SHAPES = [("b1", 1, "one block; the rest of the launch tile returns early"), ("b3", 3, "three super-blocks"),
             ("b16", 16, "16 super-blocks (4096 elements)"), ("b250", 250, "250 super-blocks (64000 elements): pr only")]

def _shapes(fmt: Format) -> dict[str, ShapeClass]:
    table = _LEGACY_SHAPES if fmt.qk == 32 else _K_SHAPES
    return {n: ShapeClass(n, doc, {"blocks": b}) for n, b, doc in table}


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    fmt = FORMATS[op.spec.variant.format]
    nblocks = op.spec.shapes[case.layout].geo["blocks"]
    blocks = random_blocks(fmt, nblocks, rng)
    if case.values == "special":
        blocks = adversarial(fmt, blocks)
    raw = blocks.reshape(-1)
    n = nblocks * fmt.qk
    lay = contiguous((raw.size,))
    return StructuredBuilt(case, op, case.dtype, {"vx": dtype("u8")},
                           {"vx": lay}, {"vx": raw}, {"vx": raw}, {"format": fmt.name, "n": n, "blocks": nblocks},
                           out_name="y", out_dtype=dtype(case.dtype), out_shape=(n,))


def _pack(b: StructuredBuilt) -> Launch:
    fmt = FORMATS[b.geo["format"]]
    n = b.geo["n"]
    args = [Arg("ptr", ("vx", 0), name="vx"), Arg("ptr", ("y", 0), name="y")]
    if fmt.k_arg:
        args.append(Arg("i32", n // 32 if fmt.k_arg == "nb32" else n, name="k"))
    return Launch(b.op.kernel_name(b.key), args, {"vx": b.bases["vx"], "y": out_buffer(b)}, ("y",),
                  grid=(-(-n // fmt.per_cta), 1, 1), block=(fmt.block, 1, 1),
                  dtypes={"vx": "u8", "y": b.out_dtype.name})


def _expected(b: StructuredBuilt) -> np.ndarray:
    return dequantize_reference(b.geo["format"], b.bases["vx"]).astype(b.out_dtype.np)


def _judge(expected, got, b: StructuredBuilt):
    dt = b.out_dtype
    e, g = np.asarray(expected, dtype=dt.np), np.asarray(got, dtype=dt.np)
    ok = (e.view(np.uint16 if dt.bits == 16 else np.uint32) == g.view(np.uint16 if dt.bits == 16 else np.uint32)) \
        | (np.isnan(e) & np.isnan(g))
    fmt = FORMATS[b.geo["format"]]

    def inputs(i, coords):
        blk = b.bases["vx"][(i // fmt.qk) * fmt.size:(i // fmt.qk + 1) * fmt.size]
        shown = {"block": str(i // fmt.qk), "element": str(i % fmt.qk)}
        if fmt.name == "q8_K":
            shown["d"] = f"{float(blk[0:4].copy().view(np.float32)[0])!r}"
        for name, at in zip(("d", "m"), fmt.half_at):
            shown[name] = hex(int(blk[at:at + 2].copy().view(np.uint16)[0]))
        return shown
    return mask_judge(e, g, dt, ok, inputs=inputs)


# ------------------------------------------------------------------------------ emulation
def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """The kernels' own indexing, vectorised over (blockIdx.x, threadIdx.x): which thread reads
    which block bytes and writes which element. Scales go through `ex.quant_scale`, the split of a
    quant byte into its low and high nibble through `ex.quant_nibbles`, q4_K/q5_K's packed 6-bit
    sub-block scales and mins through `ex.quant_scale_min_k4`."""
    a = {x.name: x for x in launch.args}
    fmt = FORMATS[op.spec.variant.format]
    vn, vo = a["vx"].value
    yn, yo = a["y"].value
    vx = bufs[vn][ex.pointer_offset(vo):]
    y = bufs[yn][ex.pointer_offset(yo):]
    grid, block = int(launch.grid[0]), int(launch.block[0])
    cta = np.arange(grid, dtype=np.int64)[:, None]
    tid = np.arange(block, dtype=np.int64)[None, :]
    if fmt.k_arg == "nb32":
        nblocks = int(a["k"].value)
    elif fmt.k_arg == "n":
        nblocks = int(a["k"].value) // fmt.qk
    else:
        nblocks = grid
    blocks = vx[: nblocks * fmt.size].reshape(nblocks, fmt.size)
    with np.errstate(over="ignore", invalid="ignore"):     # max scales overflow f16/f32 as on the GPU
        _KERNELS[fmt.name](ex, fmt, blocks, y, cta, tid, a)


def _store(y: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    y[idx.reshape(-1)] = np.asarray(vals, dtype=np.float32).reshape(-1).astype(y.dtype)


def _tile8(ex, fmt, blocks, y, cta, tid, a) -> None:
    """q4_0, q4_1, q8_0: thread (il, ir) = (tid/8, tid%8) of CUDA block i dequantizes 4 (q8_0: 8)
    consecutive bytes of quant block 8i+ir; threads past k = n/32 return."""
    il, ir = tid // 8, tid % 8
    ib = 8 * cta + ir
    live = np.broadcast_to(ib < int(a["k"].value), ib.shape)
    ib, il_, i_ = ib[live], np.broadcast_to(il, live.shape)[live], np.broadcast_to(cta, live.shape)[live]
    blk = blocks[ib]
    d = ex.quant_scale(blk, fmt.half_at[0])
    if fmt.name == "q8_0":
        base = 256 * i_ + 32 * (ib - 8 * i_) + 8 * il_
        for l in range(8):
            q = blk[np.arange(ib.size), fmt.qs_at + 8 * il_ + l].view(np.int8).astype(np.float32)
            _store(y, base + l, d * q)
        return
    base = 256 * i_ + 32 * (ib - 8 * i_) + 4 * il_
    add = -8 * d if fmt.name == "q4_0" else ex.quant_scale(blk, fmt.half_at[1])
    for l in range(4):
        lo, hi = ex.quant_nibbles(blk[np.arange(ib.size), fmt.qs_at + 4 * il_ + l])
        _store(y, base + l, d * lo.astype(np.float32) + add)
        _store(y, base + l + 16, d * hi.astype(np.float32) + add)


def _pairs(ex, fmt, blocks, y, cta, tid, a) -> None:
    """q5_0, q5_1 (llama.cpp's generic dequantize_block): thread t writes elements i = 2t's pair,
    y[iybs+iqs] and y[iybs+iqs+16]; threads with i >= k return."""
    i = (2 * (cta * tid.shape[1] + tid)).reshape(-1)
    i = i[i < int(a["k"].value)]
    ib, iqs = i // 32, (i % 32) // 2
    iybs = i - i % 32
    blk = blocks[ib]
    rows = np.arange(ib.size)
    d = ex.quant_scale(blk, fmt.half_at[0])
    qh_at = fmt.qs_at - 4
    qh = blk[:, qh_at:qh_at + 4].copy().view("<u4").reshape(-1).astype(np.int64)
    xh0 = ((qh >> iqs) << 4) & 0x10
    xh1 = (qh >> (iqs + 12)) & 0x10
    lo, hi = ex.quant_nibbles(blk[rows, fmt.qs_at + iqs])
    vx_, vy_ = (lo.astype(np.int64) | xh0).astype(np.float32), (hi.astype(np.int64) | xh1).astype(np.float32)
    if fmt.name == "q5_0":
        vx_, vy_ = (vx_ - np.float32(16)) * d, (vy_ - np.float32(16)) * d
    else:
        m = ex.quant_scale(blk, fmt.half_at[1])
        vx_, vy_ = vx_ * d + m, vy_ * d + m
    _store(y, iybs + iqs, vx_)
    _store(y, iybs + iqs + 16, vy_)


def _threads(blocks: np.ndarray, cta, tid) -> tuple[np.ndarray, ...]:
    """Per thread of a K-quant launch: (super-block index, thread index, the super-block's bytes,
    row numbers into those bytes)."""
    i = np.broadcast_to(cta, (cta.shape[0], tid.shape[1])).reshape(-1)
    t = np.broadcast_to(tid, (cta.shape[0], tid.shape[1])).reshape(-1)
    return i, t, blocks[i], np.arange(i.size)


def _q2_k(ex, fmt, blocks, y, cta, tid, a) -> None:
    i, t, blk, rows = _threads(blocks, cta, tid)
    n, l = t // 32, t % 32
    is_ = 8 * n + l // 16
    q = blk[rows, fmt.qs_at + 32 * n + l].astype(np.int64)
    dall, dmin = ex.quant_scale(blk, fmt.half_at[0]), ex.quant_scale(blk, fmt.half_at[1])
    for j in range(4):
        sc = blk[rows, is_ + 2 * j]
        val = dall * (sc & 0xF).astype(np.float32) * ((q >> 2 * j) & 3).astype(np.float32) \
            - dmin * (sc >> 4).astype(np.float32)
        _store(y, i * QK_K + 128 * n + l + 32 * j, val)


def _q3_k(ex, fmt, blocks, y, cta, tid, a) -> None:
    i, t, blk, rows = _threads(blocks, cta, tid)
    r = t // 4
    tt, is0 = r // 2, r % 2
    l0 = 16 * is0 + 4 * (t % 4)
    n = tt // 4
    j = tt - 4 * n
    m = 1 << (4 * n + j)
    is_ = 8 * n + 2 * j + is0
    us = _q3_scales(blk[:, 96:108].astype(np.int64))[rows, is_]
    dl = ex.quant_scale(blk, fmt.half_at[0]) * (us - 32).astype(np.float32)
    for l in range(4):
        ll = l0 + l
        q = ((blk[rows, fmt.qs_at + 32 * n + ll].astype(np.int64) >> (2 * j)) & 3) - np.where(blk[rows, ll] & m, 0, 4)
        _store(y, i * QK_K + 128 * n + 32 * j + ll, dl * q.astype(np.float32))


def _q3_scales(sc: np.ndarray) -> np.ndarray:
    """(rows, 16) 6-bit scales of q3_K, unpacked from its 12 bytes the way the kernel's `us` does."""
    def one(s: int) -> np.ndarray:
        if s < 4:
            return (sc[:, s] & 0xF) | ((sc[:, s + 8] & 3) << 4)
        if s < 8:
            return (sc[:, s] & 0xF) | (((sc[:, s + 4] >> 2) & 3) << 4)
        if s < 12:
            return (sc[:, s - 8] >> 4) | (((sc[:, s] >> 4) & 3) << 4)
        return (sc[:, s - 8] >> 4) | (((sc[:, s - 4] >> 6) & 3) << 4)
    return np.stack([one(s) for s in range(16)], axis=1)


def _scale_min_k4(ex, blk: np.ndarray, rows: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sub-block j's scale and min as the thread reads them (through `ex.quant_scale_min_k4`)."""
    d, m = ex.quant_scale_min_k4(blk[:, 4:16])
    return d[rows, j].astype(np.float32), m[rows, j].astype(np.float32)


def _pair_scales_k4(ex, fmt, blk: np.ndarray, rows: np.ndarray, il: np.ndarray) -> tuple[np.ndarray, ...]:
    """(d1, m1, d2, m2): the scale and min of sub-blocks 2*il and 2*il+1, times the super-block's d and
    dmin, as q4_K and q5_K threads compute them."""
    dall, dmin = ex.quant_scale(blk, fmt.half_at[0]), ex.quant_scale(blk, fmt.half_at[1])
    s1, m1 = _scale_min_k4(ex, blk, rows, 2 * il)
    s2, m2 = _scale_min_k4(ex, blk, rows, 2 * il + 1)
    return dall * s1, dmin * m1, dall * s2, dmin * m2


def _q4_k(ex, fmt, blocks, y, cta, tid, a) -> None:
    i, t, blk, rows = _threads(blocks, cta, tid)
    il, ir = t // 8, t % 8
    d1, mm1, d2, mm2 = _pair_scales_k4(ex, fmt, blk, rows, il)
    for l in range(4):
        lo, hi = ex.quant_nibbles(blk[rows, fmt.qs_at + 32 * il + 4 * ir + l])
        base = i * QK_K + 64 * il + 4 * ir + l
        _store(y, base, d1 * lo.astype(np.float32) - mm1)
        _store(y, base + 32, d2 * hi.astype(np.float32) - mm2)


def _q5_k(ex, fmt, blocks, y, cta, tid, a) -> None:
    i, t, blk, rows = _threads(blocks, cta, tid)
    il, ir = t // 16, t % 16
    d1, mm1, d2, mm2 = _pair_scales_k4(ex, fmt, blk, rows, il)
    hm = 1 << (2 * il)
    for e in range(2):
        lo, hi = ex.quant_nibbles(blk[rows, fmt.qs_at + 32 * il + 2 * ir + e])
        qh = blk[rows, 16 + 2 * ir + e].astype(np.int64)
        base = i * QK_K + 64 * il + 2 * ir + e
        _store(y, base, d1 * (lo.astype(np.int64) + np.where(qh & hm, 16, 0)).astype(np.float32) - mm1)
        _store(y, base + 32, d2 * (hi.astype(np.int64) + np.where(qh & (hm << 1), 16, 0)).astype(np.float32) - mm2)


def _q6_k(ex, fmt, blocks, y, cta, tid, a) -> None:
    i, t, blk, rows = _threads(blocks, cta, tid)
    ip, il = t // 32, t % 32
    is_ = 8 * ip + il // 16
    d = ex.quant_scale(blk, fmt.half_at[0])
    qh = blk[rows, 128 + 32 * ip + il].astype(np.int64)
    sc = blk[:, 192:208].view(np.int8).astype(np.float32)
    lo0, hi0 = ex.quant_nibbles(blk[rows, 64 * ip + il])
    lo32, hi32 = ex.quant_nibbles(blk[rows, 64 * ip + il + 32])
    base = i * QK_K + 128 * ip + il
    for off, k, ql, sh in ((0, 0, lo0, 0), (32, 2, lo32, 2), (64, 4, hi0, 4), (96, 6, hi32, 6)):
        q = ((ql.astype(np.int64) | (((qh >> sh) & 3) << 4)) - 32).astype(np.float32)
        _store(y, base + off, d * sc[rows, is_ + k] * q)


def _q8_k_kernel(ex, fmt, blocks, y, cta, tid, a) -> None:
    i, t, blk, rows = _threads(blocks, cta, tid)
    il, ir = t // 8, t % 8
    d = blk[:, 0:4].copy().view(np.float32).reshape(-1)
    for l in range(8):
        q = blk[rows, 4 + 64 * il + 8 * ir + l].view(np.int8).astype(np.float32)
        _store(y, i * QK_K + 64 * il + 8 * ir + l, q * d)


_KERNELS = {"q4_0": _tile8, "q4_1": _tile8, "q8_0": _tile8, "q5_0": _pairs, "q5_1": _pairs,
            "q2_K": _q2_k, "q3_K": _q3_k, "q4_K": _q4_k, "q5_K": _q5_k, "q6_K": _q6_k, "q8_K": _q8_k_kernel}


def _op(fmt: Format) -> Op:
    abi = ("vx", "y", "k:i32") if fmt.k_arg else ("vx", "y")
    return Op(name=f"quant.dequantize_{fmt.name}", family="quantized", root=f"dequantize_block_{fmt.name}",
              dtypes=("f32", "f16"), inputs=("vx",), value_classes=("normal", "special"), out_rule="last", abi=abi,
              semantics=f"GGUF {fmt.name} blocks ({fmt.qk} elements in {fmt.size} bytes) to f32/f16; "
                        f"grid ceil(n/{fmt.per_cta}), block {fmt.block}"
                        + {"nb32": ", k = n/32", "n": ", k = n", "": ""}[fmt.k_arg],
              spec=StructuredSpec(shapes=_shapes(fmt), build=_build, pack=_pack, expected=_expected,
                                  judge=_judge, emulate=_emulate, variant=QuantKernel("dequantize", fmt.name),
                                  tolerance=lambda key: "bit-exact (any NaN equals any NaN): every product "
                                                        "is exact in f32, one rounding as in gguf"))


OPS = [_op(f) for f in FORMATS.values()]
