"""Quantized matmul: dmmv (dequantize_mul_mat_vec_*), mmvq (mul_mat_vec_<fmt>_q8_1_cuda<b>) and
mmq (mul_mat_q<fmt>).

All three multiply a GGUF weight matrix (nrows x ncols, row-major blocks as Candle stores a QTensor:
the blocks, then MATRIX_ROW_PADDING (512) elements' worth of zero bytes, `load_quantized`) by
activations. Host (`candle-core/src/quantized/cuda.rs`):

dmmv (`dequantize_mul_mat_vec`, used when FORCE_DMMV is set and b*m = 1): (vx, const float *y,
  float *dst, int ncols, int nrows) -- q5_k declares no nrows (Candle pushes it anyway; the kernel never reads
  it) -- grid (nrows, 1, 1), block (32, 1, 1) (GGML_CUDA_MMV_Y = 1: one warp per row).
mmvq (`mul_mat_vec_via_q8_1`, batch b = 1..8): the activations (b rows of ncols f32) are first
  quantized to q8_1 with quantize_q8_1 (kx = ncols, kx_padded = ncols_padded = pad(ncols, 512));
  then (vx, vy, dst, ncols_x = ncols, nrows_x = nrows, nrows_y = ncols_padded, nrows_dst = nrows)
  on grid (nrows, 1, 1), block (32, 4, 1) for b = 1; grid (ceil(nrows/2), 1, 1) with block (32, 4, 1)
  for b = 2..4 and (32, 2, 1) for b = 5..8 (two rows per CUDA block). dst is b x nrows.
  With b >= 2 the kernel has no row bound: an odd nrows makes the last CUDA block read the row
  past the weights and write dst[j*nrows + nrows], which is row 0 of the next batch column (a
  race) and, for the last column, past dst. The cases use even nrows for b >= 2 (what Candle's
  callers must do to get a correct result); b = 1 takes any nrows.
mmq (`mul_mat_via_q8_1`, when b*m > 8): the m activation rows quantized to q8_1 as for mmvq, then
  (vx, vy, dst, ncols_x = k, nrows_x = n, ncols_y = m, nrows_y = pad(k, 512), nrows_dst = n) on grid
  (ceil(n/mmq_y), ceil(m/mmq_x), 1), block (32, 4, 1), (mmq_x, mmq_y) per format from Candle's table
  (= the kernels' non-tensor-core AMPERE tiles). Out-of-range rows and columns are clamped on load
  and skipped on store. The k loop steps by 32/qi weight blocks and has no bound inside a step:
  q2_K and q3_K (two super-blocks per step) read one block past the row when k/256 is odd (the next
  row's, against zero padding of y: NaN if that block's scale is NaN). The cases use k a multiple
  of 512.

Reference: w = the weights dequantized by gguf (exact), in float64. dmmv: w @ y. mmvq: what the
kernel's integer dot products compute, on the q8_1 activations, not the float ones:
  sum_i w_i * d8 * q8_i  +  sum over 32-blocks c * (s - d8 * sum(q8))
where c is the offset the kernel multiplies by the block's s instead of by d8*sum(q8): mmvq -8d
(q4_0), -16d (q5_0), m (q4_1, q5_1), 0 for q8_0 and the K-quants (their mins use d8 * sum(q8));
mmq the same but 0 for q5_0 (its -16 is folded into the int8 quants) and, for q4_K and q5_K, the
32-element sub-block's -dmin*m (their mmq dot multiplies the mins by s). Where c is 0 the kernel
never reads s at all (`reads_s`), so the term is left out, not added as 0 * s: an s that overflowed
half to inf (gguf_fast's activations) would make it 0 * inf = NaN where the kernel is finite.
Tolerance per output: the kernel forms each 32-block partial with a few f32 roundings (the int
dot product and its conversion are exact below 2^24) and adds at most ncols/32 of them per thread
plus 8 in the shared and warp reductions (mmq: one thread adds all ncols/32 partials); so
|got - ref| <= (ncols/32 + 16) * 2^-23 * S, with S the sum of the magnitudes of the parts the kernel
forms separately (scale part and min/offset part of each weight, times |activation|;
|c| * (|s| + |d8 sum q8|)). NaN where the reference is NaN; an infinite reference must be matched
exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.quantized import q8_1
from parity.ops.quantized.blocks import (FORMATS, QK_K, Format, QuantKernel, adversarial, dequantize_reference,
                                         random_blocks)
from parity.ops.quantized.q8_1 import MATRIX_ROW_PADDING, QK8_1
from parity.ops.structured import StructuredBuilt, mask_judge, out_buffer


@dataclass(frozen=True)
class Dot:
    """A format's vec_dots: mmvq's quants read per thread (qi) and consecutive ints per call (vdr);
    the c of the module doc for mmvq and mmq ("-8d", "-16d", "m", "min" = the sub-block's min, "");
    Candle's mmq tile (mmq_x activation columns, mmq_y weight rows)."""
    qi: int
    vdr: int
    s_mmvq: str
    s_mmq: str
    mmq_x: int
    mmq_y: int


DOTS = {"q4_0": Dot(4, 2, "-8d", "-8d", 64, 128), "q4_1": Dot(4, 2, "m", "m", 64, 128),
        "q5_0": Dot(4, 2, "-16d", "", 128, 64), "q5_1": Dot(4, 2, "m", "m", 128, 64),
        "q8_0": Dot(8, 2, "", "", 128, 64), "q2_K": Dot(16, 1, "", "", 64, 128), "q3_K": Dot(16, 1, "", "", 128, 128),
        "q4_K": Dot(32, 2, "", "min", 64, 128), "q5_K": Dot(32, 2, "", "min", 64, 128),
        "q6_K": Dot(32, 1, "", "", 64, 64)}
BATCHES = range(1, 9)


def mmvq_geometry(batch: int, nrows: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) of `mul_mat_vec_via_q8_1` (llama.cpp's mmvq.cu table)."""
    nwarps = 4 if batch <= 4 else 2
    return ((nrows if batch == 1 else -(-nrows // 2)), 1, 1), (32, nwarps, 1)


# (name, ncols, nrows for b = 1 / dmmv, nrows for b >= 2, doc)
_SHAPES = [("c256", 256, 1, 2, "one super-block per row (ncols padded to 512 for q8_1)"),
           ("c1280", 1280, 7, 6, "ncols 1280 (not a multiple of 512: q8_1 padding blocks), a few rows"),
           ("c768", 768, 33, 34, "33 (b >= 2: 34) rows: not a multiple of the 2-row or 4-warp tiles")]


def _shapes(batch: int) -> dict[str, ShapeClass]:
    return {n: ShapeClass(n, doc, {"ncols": c, "nrows": r1 if batch == 1 else r2}) for n, c, r1, r2, doc in _SHAPES}


# mmq: (name, k, n weight rows, m activation rows, doc); k a multiple of 512 (module doc)
_MMQ_SHAPES = {n: ShapeClass(n, doc, {"ncols": k, "nrows": r, "batch": m}) for n, k, r, m, doc in [
    ("k512", 512, 7, 9, "9 activation rows (the least b*m Candle sends to mmq), 7 weight rows: one partial tile"),
    ("k1024", 1024, 130, 70, "130 x 70: a second, partial tile in both dimensions for every format"),
    ("k1536", 1536, 33, 20, "k 1536 (pad 1536), 33 rows, 20 columns"),
]}


# ------------------------------------------------------------------------------ build / pack
def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    v = op.spec.variant
    kind, fmt_name, batch = v.kind, v.format, v.batch
    fmt = FORMATS[fmt_name]
    g = dict(op.spec.shapes[case.layout].geo)
    ncols, nrows = g["ncols"], g["nrows"]
    batch = g.get("batch", batch)
    special = case.values == "special"
    vx = weight_bytes(fmt, nrows, ncols, special, rng)
    x = q8_1.activations(rng, (batch, ncols), special)
    if kind == "dmmv":
        y, yname, ydt = x.reshape(-1), "y", "f32"
    else:
        y, yname, ydt = q8_1.quantize_q8_1(x, q8_1.padded(ncols)).reshape(-1), "vy", "u8"
    g.update(format=fmt_name, kind=kind, batch=batch, yname=yname)
    return StructuredBuilt(case, op, case.dtype, {"vx": dtype("u8"), yname: dtype(ydt)},
                           {"vx": contiguous((vx.size,)), yname: contiguous((y.size,))},
                           {"vx": vx, yname: y}, {"vx": vx, yname: y}, g,
                           out_name="dst", out_dtype=dtype("f32"), out_shape=(batch, nrows))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    yname = g["yname"]
    args = [Arg("ptr", ("vx", 0), name="vx"), Arg("ptr", (yname, 0), name=yname), Arg("ptr", ("dst", 0), name="dst"),
            Arg("i32", g["ncols"], name="ncols" if g["kind"] == "dmmv" else "ncols_x")]
    if g["kind"] == "dmmv":
        if g["format"] != "q5_K":
            args.append(Arg("i32", g["nrows"], name="nrows"))
        grid, block = (g["nrows"], 1, 1), (32, 1, 1)
    elif g["kind"] == "mmvq":
        args += [Arg("i32", g["nrows"], name="nrows_x"), Arg("i32", q8_1.padded(g["ncols"]), name="nrows_y"),
                 Arg("i32", g["nrows"], name="nrows_dst")]
        grid, block = mmvq_geometry(g["batch"], g["nrows"])
    else:
        args += [Arg("i32", g["nrows"], name="nrows_x"), Arg("i32", g["batch"], name="ncols_y"),
                 Arg("i32", q8_1.padded(g["ncols"]), name="nrows_y"), Arg("i32", g["nrows"], name="nrows_dst")]
        dot = DOTS[g["format"]]
        grid, block = (-(-g["nrows"] // dot.mmq_y), -(-g["batch"] // dot.mmq_x), 1), (32, 4, 1)
    return Launch(b.op.kernel, args, {"vx": b.bases["vx"], yname: b.bases[yname], "dst": out_buffer(b)}, ("dst",),
                  grid=grid, block=block, dtypes={"vx": "u8", yname: "f32" if yname == "y" else "u8", "dst": "f32"})


# ------------------------------------------------------------------------------ reference
def weight_bytes(fmt: Format, nrows: int, ncols: int, special: bool, rng) -> np.ndarray:
    """The weight matrix as Candle's quantized buffer: random blocks (for the special class adversarial
    scales and a NaN scale in row 0), then the row padding the kernels may read past the last row."""
    blocks = random_blocks(fmt, nrows * ncols // fmt.qk, rng)
    if special:
        blocks = _nan_in_row0(fmt, adversarial(fmt, blocks), ncols // fmt.qk)
    pad = np.zeros(MATRIX_ROW_PADDING // fmt.qk * fmt.size, np.uint8)
    return np.concatenate([blocks.reshape(-1), pad])


def _nan_in_row0(fmt: Format, blocks: np.ndarray, per_row: int) -> np.ndarray:
    """NaN scales (which make a whole output NaN) kept in row 0 only; elsewhere 1.0, so the other
    rows check the extreme finite scales (±max, subnormal, ±0)."""
    for at in fmt.half_at:
        h = blocks[per_row:, at:at + 2].copy().view(np.float16)
        blocks[per_row:, at:at + 2] = np.where(np.isnan(h), np.float16(1), h).view(np.uint8)
    return blocks


def _parts(fmt: Format, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w, offset part) per element, float64: w the dequantized weight, the offset part what the
    kernel forms apart from the scale part (min/offset times its scale); scale part = w - offset."""
    w = dequantize_reference(fmt.name, blocks.reshape(-1)).astype(np.float64).reshape(-1, fmt.qk)
    if fmt.name in ("q4_0", "q5_0"):
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float64)
        return w, np.broadcast_to(-(8 if fmt.name == "q4_0" else 16) * d, w.shape)
    if len(fmt.half_at) == 2:                   # a min field: zero it, what is left is the scale part
        nomin = blocks.copy()
        nomin[:, fmt.half_at[1]:fmt.half_at[1] + 2] = 0
        scale = dequantize_reference(fmt.name, nomin.reshape(-1)).astype(np.float64).reshape(-1, fmt.qk)
        return w, w - scale
    return w, np.zeros_like(w)


def reads_s(fmt_name: str, kind: str) -> bool:
    """Whether the `kind` kernel's vec_dot for `fmt_name` reads the q8_1 block's s at all. Where it
    does not (c = "": q8_0 and the K-quants in mmvq, which take only __low2float(ds) = d8; q5_0 too
    in mmq) the s term is absent from what the kernel computes, not 0 * s: an s that overflowed
    half to inf (gguf_fast's activations) must not make the reference 0 * inf = NaN."""
    if kind == "dmmv":
        return False
    return bool(DOTS[fmt_name].s_mmq if kind == "mmq" else DOTS[fmt_name].s_mmvq)


def _s_offset(fmt: Format, blocks: np.ndarray, kind: str, off: np.ndarray) -> np.ndarray:
    """c per weight block and 32-activation block, (nblocks, qk/32): the offset the kernel
    multiplies by the q8_1 block's s (module doc); `off` the offset parts of `_parts`."""
    c = DOTS[fmt.name].s_mmq if kind == "mmq" else DOTS[fmt.name].s_mmvq
    if c == "min":
        return off[:, ::QK8_1].copy()
    if not c:
        return np.zeros((blocks.shape[0], fmt.qk // QK8_1))
    at = fmt.half_at[0] if c != "m" else fmt.half_at[1]
    v = blocks[:, at:at + 2].copy().view(np.float16).astype(np.float64)
    return v * {"-8d": -8.0, "-16d": -16.0, "m": 1.0}[c]


def _activations(b: StructuredBuilt) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values the kernel multiplies, per-32-block s correction, its magnitude), float64:
    dmmv: y, 0, 0; mmvq: d8*q8, s - d8*sum(q8), |s| + |d8*sum(q8)|."""
    g = b.geo
    ncols, batch = g["ncols"], g["batch"]
    if g["kind"] == "dmmv":
        y = b.inputs["y"].astype(np.float64).reshape(batch, ncols)
        z = np.zeros((batch, ncols // QK8_1))
        return y, z, z
    d, s, qs = q8_1.fields(b.inputs["vy"], batch)
    nb = ncols // QK8_1
    d, s, qs = d[:, :nb].astype(np.float64), s[:, :nb].astype(np.float64), qs[:, :nb].astype(np.float64)
    dsum = d * qs.sum(axis=-1)
    return (d[..., None] * qs).reshape(batch, ncols), s - dsum, np.abs(s) + np.abs(dsum)


def reference(b: StructuredBuilt) -> tuple[np.ndarray, np.ndarray]:
    """(value, tolerance), each (batch, nrows) float64 (module doc)."""
    g = b.geo
    fmt = FORMATS[g["format"]]
    ncols, nrows = g["ncols"], g["nrows"]
    blocks = b.inputs["vx"][: nrows * ncols // fmt.qk * fmt.size].reshape(-1, fmt.size)
    with np.errstate(all="ignore"):
        w, off = _parts(fmt, blocks)
        c = _s_offset(fmt, blocks, g["kind"], off).reshape(nrows, -1)
        w, off = w.reshape(nrows, ncols), off.reshape(nrows, ncols)
        y, corr, corr_mag = _activations(b)
        value = y @ w.T
        mag = np.abs(y) @ (np.abs(w - off) + np.abs(off)).T
        if reads_s(fmt.name, g["kind"]):        # else the kernel never reads s (reads_s)
            value = value + corr @ c.T
            mag = mag + corr_mag @ np.abs(c).T
    return value, (ncols / 32 + 16) * 2.0 ** -23 * mag


def _expected(b: StructuredBuilt) -> np.ndarray:
    return reference(b)[0]


def _judge(expected, got, b: StructuredBuilt):
    e, tol = reference(b)
    g64 = np.asarray(got, np.float64).reshape(e.shape)
    with np.errstate(all="ignore"):
        err = np.abs(g64 - e)
        ok = (np.isnan(e) & np.isnan(g64)) | (np.isinf(e) & (e == g64)) | (np.isfinite(e) & (err <= tol))
        badness = np.where(np.isfinite(err) & (tol > 0), err / np.where(tol > 0, tol, 1), np.inf)

    def inputs(i, coords):
        return {"batch": str(coords[0]), "row": str(coords[1]), "tolerance": f"{float(tol.reshape(-1)[i]):.3g}"}
    return mask_judge(e.astype(np.float32), np.asarray(got, np.float32).reshape(e.shape), dtype("f32"), ok,
                      inputs=inputs, badness=badness)


# ------------------------------------------------------------------------------ emulation
def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """Each weight block's contribution (the reference's math per block, s through `ex.q8_1_sum`),
    rows found at `ex.quant_row_stride(blocks per row)` blocks apart, summed per thread in the
    kernel's order (mmvq: block kbx goes to thread (kbx % blocks_per_iter) * qi/vdr, the first of
    the qi/vdr threads that share it; dmmv: the lane of the 16-lane half that reads it), then
    `ex.mmv_reduce` over (warps, 32 lanes): the shared-memory sum of the other warps into warp 0,
    then the warp butterfly."""
    v = op.spec.variant
    kind, fmt_name, batch = v.kind, v.format, v.batch
    fmt = FORMATS[fmt_name]
    a = {x.name: x for x in launch.args}
    yname = "y" if kind == "dmmv" else "vy"
    ncols = int((a["ncols"] if kind == "dmmv" else a["ncols_x"]).value)
    nwarps = int(launch.block[1])
    if kind == "mmq":
        nrows, batch = int(a["nrows_x"].value), int(a["ncols_y"].value)
    else:
        nrows = int(launch.grid[0]) * (1 if kind == "dmmv" or batch == 1 else 2)
    vn, vo = a["vx"].value
    yn, yo = a[yname].value
    dn, do = a["dst"].value
    vx = bufs[vn][ex.pointer_offset(vo):]
    bpr = ncols // fmt.qk
    stride = ex.quant_row_stride(bpr)
    allb = vx[: vx.size // fmt.size * fmt.size].reshape(-1, fmt.size)
    idx = (np.arange(nrows)[:, None] * stride + np.arange(bpr)[None, :]).reshape(-1)
    blocks = allb[idx]
    y = bufs[yn][ex.pointer_offset(yo):]
    with np.errstate(all="ignore"):
        w, off = _parts(fmt, blocks)                                 # (nrows*bpr, qk)
        if kind == "dmmv":
            yv = y[:ncols].astype(np.float64).reshape(bpr, fmt.qk)
            prod = (w.reshape(nrows, bpr, fmt.qk) * yv[None]).astype(np.float32)
            lanes = np.zeros((1, nrows, 1, 32), np.float32)
            np.add.at(lanes, (0, slice(None), 0, _dmmv_lanes(fmt, bpr)), prod.reshape(nrows, -1).T)
        else:
            nb = q8_1.padded(ncols) // QK8_1
            d8, s8, q8 = q8_1.fields(y[: batch * nb * q8_1.Q8_1_SIZE], batch)
            d8, q8 = d8[:, : ncols // QK8_1].astype(np.float64), q8[:, : ncols // QK8_1].astype(np.float64)
            s8 = ex.q8_1_sum(s8[:, : ncols // QK8_1]).astype(np.float64)
            yq = (d8[..., None] * q8).reshape(batch, bpr, fmt.qk)
            corr = (s8 - d8 * q8.sum(-1)).reshape(batch, bpr, -1)
            c = _s_offset(fmt, blocks, kind, off).reshape(nrows, bpr, -1)
            contrib = np.einsum("rkq,jkq->jrk", w.reshape(nrows, bpr, fmt.qk), yq)
            if reads_s(fmt_name, kind):                              # else s is never read (reads_s)
                contrib = contrib + np.einsum("rks,jks->jrk", c, corr)
            contrib = contrib.astype(np.float32)
            if kind == "mmq":                                        # one thread per output, k in order
                out = np.zeros(contrib.shape[:2], np.float32)
                for kb in range(bpr):
                    out = (out + contrib[..., kb]).astype(np.float32)
            else:
                lanes = _mmvq_lanes(contrib, DOTS[fmt_name], nwarps)
        if kind != "mmq":
            out = ex.mmv_reduce(lanes)                               # (batch, nrows)
    dst = bufs[dn][ex.pointer_offset(do):]
    dst[: out.size] = out.reshape(-1).astype(np.float32)


def _dmmv_lanes(fmt: Format, bpr: int) -> np.ndarray:
    """Lane of each (block, element) of a row in a dmmv warp. q4_0..q5_1 (qr 2): 64 columns per
    iteration, block kb's elements e and e+16 to lane 16*(kb%2) + e%16; q8_0: e, e+1 to lane
    16*(kb%2) + e//2; K-quants (K_QUANTS_PER_ITERATION 2): super-block kb to the lanes of parity
    kb%2, its elements spread over their 16 lanes."""
    kb = np.arange(bpr)[:, None]
    e = np.arange(fmt.qk)[None, :]
    if fmt.qk == QK_K:
        lane = 2 * (e % 16) + kb % 2
    elif fmt.name == "q8_0":
        lane = 16 * (kb % 2) + e // 2
    else:
        lane = 16 * (kb % 2) + e % 16
    return lane.reshape(-1)


def _mmvq_lanes(contrib: np.ndarray, dot: Dot, nwarps: int) -> np.ndarray:
    """(batch, rows, blocks) f32 contributions -> (batch, rows, nwarps, 32) per-thread partials,
    each thread adding its blocks in f32 in loop order."""
    nb_, rows, bpr = contrib.shape
    per = dot.qi // dot.vdr
    it = dot.vdr * nwarps * 32 // dot.qi                  # blocks per iteration
    niter = -(-bpr // it)
    c = np.zeros((nb_, rows, niter * it), np.float32)
    c[..., :bpr] = contrib
    c = c.reshape(nb_, rows, niter, it)
    acc = np.zeros((nb_, rows, it), np.float32)
    for i in range(niter):
        acc = (acc + c[..., i, :]).astype(np.float32)
    lanes = np.zeros((nb_, rows, nwarps * 32), np.float32)
    lanes[..., np.arange(it) * per] = acc
    return lanes.reshape(nb_, rows, nwarps, 32)


def mmv_reduce(lanes: np.ndarray) -> np.ndarray:
    """(…, nwarps, 32) partials -> (…): warps 1.. added into warp 0 (shared memory), then the
    warp butterfly."""
    acc = lanes[..., 0, :].astype(np.float32)
    for w in range(1, lanes.shape[-2]):
        acc = (acc + lanes[..., w, :]).astype(np.float32)
    return q8_1.warp_sum(acc)


# ------------------------------------------------------------------------------ the ops
def _dmmv_kernel(fmt: str) -> str:
    return f"dequantize_mul_mat_vec_{fmt}_cuda" if fmt in GGUF_LEGACY else f"dequantize_mul_mat_vec_{fmt.lower()}"


GGUF_LEGACY = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0")
_TOL = "per output (ncols/32 + 16) * 2^-23 * sum of |parts| the kernel forms (module doc); NaN to NaN, inf exact"


def _op(kind: str, fmt: str, batch: int) -> Op:
    shapes = _shapes(1 if kind == "dmmv" else batch)
    if kind == "mmq":
        d = DOTS[fmt]
        name, kernel, shapes = f"quant.mmq_{fmt}", f"mul_mat_{fmt}", _MMQ_SHAPES
        abi = ("vx", "vy", "dst", "ncols_x:i32", "nrows_x:i32", "ncols_y:i32", "nrows_y:i32", "nrows_dst:i32")
        sem = (f"dst[m x n] = {fmt} weights (n x k) x m q8_1 activation rows; grid (ceil(n/{d.mmq_y}), "
               f"ceil(m/{d.mmq_x})), block (32, 4)")
    elif kind == "dmmv":
        name, kernel = f"quant.dmmv_{fmt}", _dmmv_kernel(fmt)
        abi = ("vx", "y", "dst", "ncols:i32") + (() if fmt == "q5_K" else ("nrows:i32",))
        sem = f"dst = {fmt} weights x f32 y (one warp per row); grid nrows, block 32"
    else:
        name, kernel = f"quant.mmvq_{fmt}_b{batch}", f"mul_mat_vec_{fmt}_q8_1_cuda{batch}"
        abi = ("vx", "vy", "dst", "ncols_x:i32", "nrows_x:i32", "nrows_y:i32", "nrows_dst:i32")
        (gx, _, _), (_, nw, _) = mmvq_geometry(batch, 2)
        sem = (f"dst[{batch} x nrows] = {fmt} weights x q8_1 activations (integer dot products); "
               f"grid {'nrows' if batch == 1 else 'ceil(nrows/2)'}, block (32, {nw})")
    return Op(name=name, family="quantized", root=kernel, kernel=kernel, dtypes=("f32",), inputs=("vx",),
              value_classes=("normal", "special"), out_rule="f32", abi=abi,
              semantics=sem,
              spec=StructuredSpec(shapes=shapes, build=_build, pack=_pack,
                                  expected=_expected, judge=_judge, emulate=_emulate, tolerance=lambda key: _TOL,
                                  variant=QuantKernel(kind, fmt, batch=batch)))


OPS = ([_op("dmmv", f, 1) for f in DOTS] + [_op("mmvq", f, b) for b in BATCHES for f in DOTS]
       + [_op("mmq", f, 1) for f in DOTS])
