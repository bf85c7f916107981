"""Candle's fast GGUF mat-vec path (`mmvq_gguf.cu`, host `candle-core/src/quantized/fast_mmvq.rs`
`try_fwd`): bf16/f16/f32 activations quantized to q8_1, then an mmvq kernel writing T.

mmvq_gguf_quantize_q8_1_<T>(const T* x, void* vy, const int kx, const int kx_padded): launched by
  `launch_mmvq_gguf_quantize_q8_1_<T>(x, vy, kx = k, kx_padded = pad(k, 512), num_rows = b)`: grid
  (ceil(kx_padded/256), b), block 256. quantize_q8_1's algorithm (q8_1.py) on x converted to float
  (exact), so the reference is q8_1.py's, bit-exact; vy is Candle's grow-only scratch workspace.
mmvq_gguf_<fmt>_<T>_plain_cuda<b>(vx, vy, T* dst, ncols_x = k, nrows_x = nrows,
  stride_col_y = pad(k, 512)/32 (q8_1 blocks), stride_col_dst = nrows): launched by
  `launch_mmvq_gguf_<fmt>_<T>_plain` with b_size = b (1..8; `switch (b_size)` picks the kernel):
  grid (ceil(nrows / rows), 1, 1), rows 1 for b = 1 and 2 otherwise, block (32, 4) for b <= 4 and
  (32, 2) for b = 5..8, no shared memory argument. dst = `alloc` (not zeroed) of b*nrows T;
  dst[j*stride_col_dst + row] = (T) sum. The kernel stores only rows < nrows_x (unlike quantized.cu's
  mul_mat_vec_*_cuda<b>), but its dot loop still reads row nrows_x (the padding) when nrows is odd
  at b >= 2: the odd-row shape (c256x3) keeps that read inside Candle's 512-element row padding.
  The vec_dots are quantized.cu's (llama.cpp's), token for token.

Reference: matvec.py's mmvq reference (w dequantized by gguf, float64, on the q8_1 activations, the
s-term offsets), rounded to T. Tolerance: the f32 sum v lies within matvec.py's bound tol of the
reference e; rounding to T is monotone, so got must lie in [round_T(e - tol), round_T(e + tol)]
(for T = f32 the f32 store adds nothing; for f16/bf16 this admits the final rounding and a store
that overflows f16 to inf when e + tol passes 65504). NaN where the reference is NaN; an infinite
reference must be matched exactly. The special activations include blocks whose sum overflows half
(q8_1 s = inf): q4_0/q4_1/q5_0/q5_1 read s (non-finite results, the kernel's too), q8_0 and the
K-quants read only d8 (`matvec.reads_s`), so their results stay finite (measured on an H200).
"""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.core.numerics import round_float, to_f64
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.quantized import matvec, q8_1
from parity.ops.quantized.blocks import FORMATS, QuantKernel
from parity.ops.quantized.matvec import DOTS, _mmvq_lanes, _parts, _s_offset, reads_s
from parity.ops.quantized.q8_1 import QK8_1
from parity.ops.structured import StructuredBuilt, mask_judge, out_buffer

DTS = ("bf16", "f16", "f32")
BATCHES = range(1, 9)
TAGS = {f: f.lower() for f in DOTS}          # Candle's kernel tags: q2_k, not q2_K


def geometry(batch: int, nrows: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    rows = 1 if batch <= 1 else 2
    return (-(-nrows // rows), 1, 1), (32, 4 if batch <= 4 else 2, 1)


# (name, ncols, nrows for b = 1, nrows for b >= 2, doc)
_SHAPES = [("c256", 256, 1, 2, "one super-block per row (ncols padded to 512 for q8_1)"),
           ("c1280", 1280, 7, 6, "ncols 1280 (q8_1 padding blocks), a few rows"),
           ("c768", 768, 33, 34, "33 (b >= 2: 34) rows: not a multiple of the 2-row or 4-warp tiles"),
           ("c256x3", 256, 3, 3, "3 rows at every batch: b >= 2 has a half CUDA block (row 3 not stored)")]


def _shapes(batch: int) -> dict[str, ShapeClass]:
    return {n: ShapeClass(n, doc, {"ncols": c, "nrows": r1 if batch == 1 else r2}) for n, c, r1, r2, doc in _SHAPES}


def activations_t(rng, shape, special: bool, dt) -> np.ndarray:
    """q8_1.activations rounded to T (T's bits: the kernel's input)."""
    return round_float(q8_1.activations(rng, shape, special, overflow=True).astype(np.float64), dt)


# ------------------------------------------------------------------ mmvq_gguf_quantize_q8_1_<T>
_Q_SHAPES = {n: ShapeClass(n, doc, {"kx": kx, "ky": ky}) for n, kx, ky, doc in [
    ("k256", 256, 1, "one row of 256: padded to 512 (the padding blocks are d = s = 0)"),
    ("k1000x3", 1000, 3, "3 rows of 1000: a partial block at kx (x read as 0 past it), padded to 1024"),
    ("k4096x8", 4096, 8, "8 rows of 4096 (batch 8)"),
]}


def _q_build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    g = op.spec.shapes[case.layout].geo
    kx, ky = g["kx"], g["ky"]
    dt = dtype(case.dtype)
    x = activations_t(rng, (ky, kx), case.values == "special", dt).reshape(-1)
    kxp = q8_1.padded(kx)
    return StructuredBuilt(case, op, case.dtype, {"x": dt}, {"x": contiguous((x.size,))}, {"x": x}, {"x": x},
                           {"kx": kx, "ky": ky, "kx_padded": kxp}, out_name="vy", out_dtype=dtype("u8"),
                           out_shape=(ky * kxp // QK8_1 * q8_1.Q8_1_SIZE,))


def _q_pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    args = [Arg("ptr", ("x", 0), name="x"), Arg("ptr", ("vy", 0), name="vy"),
            Arg("i32", g["kx"], name="kx"), Arg("i32", g["kx_padded"], name="kx_padded")]
    return Launch(b.op.kernel, args, {"x": b.bases["x"], "vy": out_buffer(b)}, ("vy",),
                  grid=(-(-g["kx_padded"] // 256), g["ky"], 1), block=(256, 1, 1), dtypes={"x": b.key, "vy": "u8"})


def _q_expected(b: StructuredBuilt) -> np.ndarray:
    g = b.geo
    x = to_f64(b.inputs["x"]).astype(np.float32).reshape(g["ky"], g["kx"])
    return q8_1.quantize_q8_1(x, g["kx_padded"]).reshape(-1)


def _q_emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    a = {x.name: x for x in launch.args}
    kx, kxp, ky = int(a["kx"].value), int(a["kx_padded"].value), int(launch.grid[1])
    xn, xo = a["x"].value
    yn, yo = a["vy"].value
    x = to_f64(bufs[xn][ex.pointer_offset(xo):][: ky * kx]).astype(np.float32).reshape(ky, kx)
    out = q8_1.quantize_q8_1(x, kxp).reshape(-1)
    bufs[yn][ex.pointer_offset(yo):][: out.size] = out


def _q_op(dt: str) -> Op:
    k = f"mmvq_gguf_quantize_q8_1_{dt}"
    return Op(name=f"quant.{k}", family="quantized", root=k, kernel=k, dtypes=(dt,), inputs=("x",),
              value_classes=("normal", "special"), out_rule="u8",
              abi=("x", "vy", "kx:i32", "kx_padded:i32"),
              semantics=f"{dt} rows to q8_1 blocks (x converted to float, then quantize_q8_1); "
                        "grid (ceil(kx_padded/256), rows), block 256",
              spec=StructuredSpec(shapes=_Q_SHAPES, build=_q_build, pack=_q_pack, expected=_q_expected,
                                  judge=q8_1._judge, emulate=_q_emulate,
                                  tolerance=lambda key: "bit-exact bytes (quantize_q8_1's steps on the converted x)"))


# ------------------------------------------------------------ mmvq_gguf_<fmt>_<T>_plain_cuda<b>
def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    v = op.spec.variant
    fmt_name, dt_name, batch = v.format, v.dtype, v.batch
    fmt, dt = FORMATS[fmt_name], dtype(dt_name)
    g = dict(op.spec.shapes[case.layout].geo)
    ncols, nrows = g["ncols"], g["nrows"]
    special = case.values == "special"
    vx = matvec.weight_bytes(fmt, nrows, ncols, special, rng)
    x = to_f64(activations_t(rng, (batch, ncols), special, dt)).astype(np.float32)
    vy = q8_1.quantize_q8_1(x, q8_1.padded(ncols)).reshape(-1)
    g.update(format=fmt_name, kind="mmvq", batch=batch, yname="vy")
    return StructuredBuilt(case, op, case.dtype, {"vx": dtype("u8"), "vy": dtype("u8")},
                           {"vx": contiguous((vx.size,)), "vy": contiguous((vy.size,))},
                           {"vx": vx, "vy": vy}, {"vx": vx, "vy": vy}, g,
                           out_name="dst", out_dtype=dt, out_shape=(batch, nrows))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    args = [Arg("ptr", ("vx", 0), name="vx"), Arg("ptr", ("vy", 0), name="vy"), Arg("ptr", ("dst", 0), name="dst"),
            Arg("i32", g["ncols"], name="ncols_x"), Arg("i32", g["nrows"], name="nrows_x"),
            Arg("i32", q8_1.padded(g["ncols"]) // QK8_1, name="stride_col_y"),
            Arg("i32", g["nrows"], name="stride_col_dst")]
    grid, block = geometry(g["batch"], g["nrows"])
    return Launch(b.op.kernel, args, {"vx": b.bases["vx"], "vy": b.bases["vy"], "dst": out_buffer(b)}, ("dst",),
                  grid=grid, block=block, dtypes={"vx": "u8", "vy": "u8", "dst": b.out_dtype.name})


def _expected(b: StructuredBuilt) -> np.ndarray:
    return round_float(matvec.reference(b)[0], b.out_dtype)


def judge_rounded(e: np.ndarray, tol: np.ndarray, got, dt, note_inputs=None):
    """got (T) against a float64 reference e and its f32-sum bound tol: got in
    [round_T(e - tol), round_T(e + tol)] (module doc)."""
    g64 = to_f64(np.asarray(got)).reshape(e.shape)
    with np.errstate(all="ignore"):
        lo, hi = to_f64(round_float(e - tol, dt)), to_f64(round_float(e + tol, dt))
        ok = (np.isnan(e) & np.isnan(g64)) | (np.isinf(e) & (e == g64)) | (np.isfinite(e) & (g64 >= lo) & (g64 <= hi))
        err = np.abs(g64 - e)
        badness = np.where(np.isfinite(err) & (tol > 0), err / np.where(tol > 0, tol, 1), np.inf)
    return mask_judge(round_float(e, dt), np.asarray(got).reshape(e.shape), dt, ok, inputs=note_inputs,
                      badness=badness)


def _judge(expected, got, b: StructuredBuilt):
    e, tol = matvec.reference(b)

    def inputs(i, coords):
        return {"batch": str(coords[0]), "row": str(coords[1]), "tolerance": f"{float(tol.reshape(-1)[i]):.3g}"}
    return judge_rounded(e, tol, got, b.out_dtype, inputs)


def mmvq_sums(ex, fmt_name: str, blocks: np.ndarray, vy: np.ndarray, batch: int, nrows: int, ncols: int,
              y_stride_blocks: int, nwarps: int) -> np.ndarray:
    """(batch, nrows) f32: the kernels' per-thread partial sums of `blocks` (nrows*bpr weight blocks,
    row-major) against `batch` q8_1 rows `y_stride_blocks` blocks apart, reduced by `ex.mmv_reduce`
    (matvec.py's mmvq emulation, the q8_1 s through `ex.q8_1_sum`)."""
    fmt = FORMATS[fmt_name]
    bpr, nb = ncols // fmt.qk, ncols // QK8_1
    rows_y = np.stack([vy[j * y_stride_blocks * q8_1.Q8_1_SIZE:(j * y_stride_blocks + nb) * q8_1.Q8_1_SIZE]
                       for j in range(batch)])
    with np.errstate(all="ignore"):
        w, off = _parts(fmt, blocks)
        d8, s8, q8 = q8_1.fields(rows_y.reshape(-1), batch)
        d8, q8 = d8.astype(np.float64), q8.astype(np.float64)
        s8 = ex.q8_1_sum(s8).astype(np.float64)
        yq = (d8[..., None] * q8).reshape(batch, bpr, fmt.qk)
        corr = (s8 - d8 * q8.sum(-1)).reshape(batch, bpr, -1)
        c = _s_offset(fmt, blocks, "mmvq", off).reshape(nrows, bpr, -1)
        contrib = np.einsum("rkq,jkq->jrk", w.reshape(nrows, bpr, fmt.qk), yq)
        if reads_s(fmt_name, "mmvq"):           # q8_0 and the K-quants never read s (matvec.reads_s)
            contrib = contrib + np.einsum("rks,jks->jrk", c, corr)
        return ex.mmv_reduce(_mmvq_lanes(contrib.astype(np.float32), DOTS[fmt_name], nwarps))


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    v = op.spec.variant
    fmt_name, dt_name, batch = v.format, v.dtype, v.batch
    fmt = FORMATS[fmt_name]
    a = {x.name: x for x in launch.args}
    ncols, nrows = int(a["ncols_x"].value), int(a["nrows_x"].value)
    sy, sd = int(a["stride_col_y"].value), int(a["stride_col_dst"].value)
    vx = bufs[a["vx"].value[0]][ex.pointer_offset(a["vx"].value[1]):]
    vy = bufs[a["vy"].value[0]][ex.pointer_offset(a["vy"].value[1]):]
    dst = bufs[a["dst"].value[0]][ex.pointer_offset(a["dst"].value[1]):]
    bpr = ncols // fmt.qk
    allb = vx[: vx.size // fmt.size * fmt.size].reshape(-1, fmt.size)
    idx = (np.arange(nrows)[:, None] * ex.quant_row_stride(bpr) + np.arange(bpr)[None, :]).reshape(-1)
    out = mmvq_sums(ex, fmt_name, allb[idx], vy, batch, nrows, ncols, sy, int(launch.block[1]))
    dt = dtype(dt_name)
    for j in range(batch):
        dst[j * sd: j * sd + nrows] = round_float(out[j].astype(np.float64), dt)


_TOL = ("got in [round_T(e - tol), round_T(e + tol)], tol = (ncols/32 + 16) * 2^-23 * sum of |parts| "
        "(matvec.py); NaN to NaN, inf exact")


def _op(fmt: str, dt: str, batch: int) -> Op:
    kernel = f"mmvq_gguf_{TAGS[fmt]}_{dt}_plain_cuda{batch}"
    (_, _, _), (_, nw, _) = geometry(batch, 2)
    return Op(name=f"quant.mmvq_gguf_{fmt}_{dt}_b{batch}", family="quantized", root=kernel, kernel=kernel,
            dtypes=(dt,), inputs=("vx",), value_classes=("normal", "special"),
            out_rule=dt, abi=("vx", "vy", "dst", "ncols_x:i32", "nrows_x:i32", "stride_col_y:i32",
                              "stride_col_dst:i32"),
            semantics=(f"dst[{batch} x nrows] ({dt}) = {fmt} weights x q8_1 activations (integer dot products); "
                       f"grid {'nrows' if batch == 1 else 'ceil(nrows/2)'}, block (32, {nw}); rows >= nrows not stored"),
            spec=StructuredSpec(shapes=_shapes(batch), build=_build, pack=_pack, expected=_expected,
                                judge=_judge, emulate=_emulate, tolerance=lambda key: _TOL,
                                variant=QuantKernel("mmvq_gguf", fmt, dt, batch)))


OPS = [_q_op(dt) for dt in DTS] + [_op(f, dt, b) for f in DOTS for dt in DTS for b in BATCHES]
