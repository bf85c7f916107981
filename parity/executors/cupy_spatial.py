"""The `cupy` level's spatial families, array code like cupy_structured.py (same helpers, same
xp = cupy / numpy contract): matmul (Candle's `blas.gemm` host path), pooling and upsampling
(avg/max_pool2d, upsample_nearest2d/bilinear2d), the convolution kernels (conv1d/2d,
conv_transpose1d/2d, im2col/im2col1d, col2im1d) and Candle's backend conv1d/conv2d (`conv.host`).

matmul: the operands are read the way the strided-batched GEMM reads them — each matrix row-major
(ld = columns) or column-major (ld = rows), strides of a size-1 dim free, one batch stride (two
batch dims only when they collapse) — else Candle's host refuses (MatMulNonContiguous, raised as
HostRefused); then a float64 matmul rounded once. Convolutions gather their taps by index
arithmetic from `info` (or the host layouts) and the pointer offsets: out = sum over taps
(src position o*s + k*d - p; transposed: (o + p - k*d)/s when it divides), float64 for floats
rounded once (the judges bound the kernels' accumulation order), uint64 for u8/u32 reduced mod
2^bits (the kernels wrap in T). The conv.host launch is served by computing the convolution it
stands for directly: the level has no suite kernels or BLAS of its own to run the host sequence
with, and the result a correct host sequence must produce is that convolution (the ROCm
semantics: a channel-sliced kernel is read through its strides).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from parity.executors.cupy_structured import (FAMILY_RUNNERS, NAN_IGNORING, STORAGE, _args, _info, _ptr, gather_view,
                                              narrow, round_trip, widen)
from parity.ops.base import Launch, Op
from parity.ops.conv import ConvKernel
from parity.ops.pool import PoolKernel
from parity.ops.structured import HostRefused

FLOATS = ("f16", "bf16", "f32", "f64")


# ------------------------------------------------------------------------------- matmul
def blas_matrix(rows: int, cols: int, s_r: int, s_c: int, what: str) -> tuple[int, int]:
    """(row step, column step) with which BLAS reads a (rows, cols) matrix of strides (s_r, s_c):
    row-major (transpose N, ld = cols) or column-major (T, ld = rows); a size-1 dim's stride is
    free. Anything else cannot be expressed: the host refuses."""
    if (s_c == 1 or cols == 1) and (s_r == cols or rows == 1):
        return cols, 1
    if (s_c == rows or cols == 1) and (s_r == 1 or rows == 1):
        return 1, rows
    raise HostRefused(f"MatMulNonContiguous ({what}): matrix ({rows}, {cols}) strides [{s_r}, {s_c}]")


def batch_step(shape: list[int], strides: list[int], what: str) -> int:
    """The one batch stride of an operand: no batch dim, one, or two that collapse."""
    bs = strides[:-2]
    if len(bs) == 2:
        s1, s = bs
        if s1 == s * shape[1] or shape[0] == 1:
            return s
        if shape[1] == 1:
            return s1
    elif len(bs) <= 1:
        return bs[0] if bs else 0
    raise HostRefused(f"MatMulNonContiguous ({what}): batch dims {shape[:-2]} strides {bs}")


def gemm_operand(xp: Any, a: dict, bufs: dict, what: str, batch: int, rows: int, cols: int, key: str) -> Any:
    """(batch, rows, cols) float64 operand as the GEMM reads it from its pointer."""
    lay = _info(a[f"{what}_layout"])
    shape, strides = lay[:len(lay) // 2], lay[len(lay) // 2:]
    rs, cs = blas_matrix(rows, cols, strides[-2], strides[-1], what)
    bs = batch_step(shape, strides, what)
    ar = lambda n: xp.arange(n, dtype=xp.int64)
    idx = ar(batch)[:, None, None] * bs + ar(rows)[None, :, None] * rs + ar(cols)[None, None, :] * cs
    return widen(xp, _ptr(bufs, a[what])[idx], key)


def matmul_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """blas.gemm: dst (b, m, n) row-major = lhs (b, m, k) @ rhs (b, k, n)."""
    a = _args(launch)
    b, m, n, k = (int(a[x].value) for x in "bmnk")
    lhs = gemm_operand(xp, a, bufs, "lhs", b, m, k, key)
    rhs = gemm_operand(xp, a, bufs, "rhs", b, k, n, key)
    _ptr(bufs, a["dst"])[:b * m * n] = narrow(xp, xp.matmul(lhs, rhs), key).reshape(-1)


# ------------------------------------------------------------------------ pool/upsample
def window_max(xp: Any, v: Any, key: str) -> Any:
    """max over the last axis as the kernel's maxg: f32/f64 fmax ignores NaN (NaN only when all
    are), f16/bf16 propagate it; integers plain."""
    if key not in FLOATS:
        return v.max(axis=-1)
    nan = xp.isnan(v)
    m = xp.where(nan, -np.inf, v).max(axis=-1)
    return xp.where(nan.all(axis=-1) if key in NAN_IGNORING else nan.any(axis=-1), np.nan, m)


def window_avg(xp: Any, v: Any, raw: Any, scale: float, key: str) -> Any:
    """avg: accumulate in float (f16/bf16/f32: each add an f32 add), double (f64) or T (integers
    wrap), then T(acc * float scale) (integers: acc to float, product in float, truncated)."""
    if key == "f64":
        acc = xp.zeros(v.shape[:-1])
        for j in range(v.shape[-1]):
            acc = acc + v[..., j]
        return acc * scale
    if key in FLOATS:
        acc = xp.zeros(v.shape[:-1])
        for j in range(v.shape[-1]):
            acc = round_trip(xp, acc + v[..., j], "f32")
        return round_trip(xp, acc * scale, "f32")
    acc = xp.sum(raw, axis=-1, dtype=raw.dtype)
    return xp.trunc(round_trip(xp, round_trip(xp, acc.astype(xp.float64), "f32") * scale, "f32"))


def bilinear_taps(xp: Any, n_out: int, n_in: int, align: bool, has_scale: bool,
                  factor: float) -> tuple[Any, Any, Any]:
    """(i0, i1, weight) per output index: PyTorch's source index (align_corners, else half-pixel
    with 1/scale_factor when given, else in/out), clamped at 0, in double."""
    d = xp.arange(n_out, dtype=xp.float64)
    if align:
        src = d * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = (1.0 / factor if has_scale else n_in / n_out) * (d + 0.5) - 0.5
    src = xp.maximum(src, 0.0)
    i0 = xp.minimum(xp.floor(src).astype(xp.int64), n_in - 1)
    return i0, xp.minimum(i0 + 1, n_in - 1), xp.clip(src - i0, 0.0, 1.0)


def to_t(xp: Any, r: Any, key: str) -> Any:
    """A float64 result converted to T: floats rounded once, integers truncated."""
    return narrow(xp, r, key) if key in FLOATS else xp.trunc(r).astype(STORAGE[key])


def pool_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """avg/max_pool2d and upsample_nearest2d (the kernel's "w" is dims[2], output (b, c, w, h));
    upsample_bilinear2d (h = dims[2], w = dims[3]). info = [4 dims, 4 strides] of the source."""
    a = _args(launch)
    info = _info(a["info"])
    dims, st = info[:4], info[4:8]
    src, dst = _ptr(bufs, a["src"]), _ptr(bufs, a["dst"])
    ar = lambda n: xp.arange(n, dtype=xp.int64)
    base = ar(dims[0])[:, None, None, None] * st[0] + ar(dims[1])[None, :, None, None] * st[1]
    kern: PoolKernel = op.spec.variant
    if kern.window:
        wk, hk, ws, hs = (int(a[n].value) for n in ("w_k", "h_k", "w_stride", "h_stride"))
        i2 = (ar((dims[2] - wk) // ws + 1) * ws)[:, None] + ar(wk)[None, :]          # (w_out, w_k)
        i3 = (ar((dims[3] - hk) // hs + 1) * hs)[:, None] + ar(hk)[None, :]          # (h_out, h_k)
        flat = base[..., None, None] + i2[:, None, :, None] * st[2] + i3[None, :, None, :] * st[3]
        raw = src[flat].reshape(flat.shape[:4] + (wk * hk,))                          # w_k outer, as the loop
        v = widen(xp, raw, key)
        res = window_max(xp, v, key) if kern.maximum else \
            window_avg(xp, v, raw, float(np.float32(1.0 / (wk * hk))), key)
        out = res.astype(raw.dtype) if key not in FLOATS else narrow(xp, res, key)
    elif kern.nearest:
        w_out, h_out = int(a["w_out"].value), int(a["h_out"].value)
        i2 = xp.minimum(xp.floor(ar(w_out) * float(a["w_scale"].value)).astype(xp.int64), dims[2] - 1)
        i3 = xp.minimum(xp.floor(ar(h_out) * float(a["h_scale"].value)).astype(xp.int64), dims[3] - 1)
        out = src[base + i2[:, None] * st[2] + i3[None, :] * st[3]]
    else:
        w_out, h_out = int(a["w_out"].value), int(a["h_out"].value)
        align = bool(a["align_corners"].value)
        h0, h1, wh = bilinear_taps(xp, h_out, dims[2], align, bool(a["has_sh"].value), float(a["sh"].value))
        w0, w1, ww = bilinear_taps(xp, w_out, dims[3], align, bool(a["has_sw"].value), float(a["sw"].value))
        at = lambda h, w: widen(xp, src[base + h[:, None] * st[2] + w[None, :] * st[3]], key)
        wh, ww = wh[:, None], ww[None, :]
        r = (at(h0, w0) * (1.0 - ww) * (1.0 - wh) + at(h0, w1) * ww * (1.0 - wh)
             + at(h1, w0) * (1.0 - ww) * wh + at(h1, w1) * ww * wh)
        out = to_t(xp, r, key)
    dst[:out.size] = out.reshape(-1)


# ---------------------------------------------------------------------------------- conv
def conv_taps(xp: Any, n_out: int, n_in: int, k: int, s: int, p: int, d: int,
              transposed: bool) -> tuple[Any, Any]:
    """(source index (n_out, k), valid) of each output position and kernel tap."""
    o = xp.arange(n_out, dtype=xp.int64)[:, None]
    kk = xp.arange(k, dtype=xp.int64)[None, :]
    if transposed:                               # o = i*s + k*d - p for some source i
        num = o + p - kk * d
        ok = (num >= 0) & (num % s == 0) & (num // s < n_in)
        pos = num // s
    else:
        pos = o * s + kk * d - p
        ok = (pos >= 0) & (pos < n_in)
    return xp.where(ok, pos, 0), ok


def gather_taps(xp: Any, x: Any, taps: list) -> Any:
    """x (b, c, *spatial) -> (b, c, *out, *k) tap values, zero where a tap falls outside."""
    nd = len(taps)
    index, mask = [slice(None), slice(None)], None
    for j, (pos, ok) in enumerate(taps):
        shape = [1] * (2 * nd)
        shape[j], shape[nd + j] = pos.shape
        index.append(pos.reshape(shape))
        mask = ok.reshape(shape) if mask is None else mask & ok.reshape(shape)
    return xp.where(mask, x[tuple(index)], xp.zeros((), dtype=x.dtype))


def numeric(xp: Any, raw: Any, key: str) -> Any:
    """float64 for floats, uint64 for integers (products and sums wrap mod 2^64, so mod 2^bits)."""
    return widen(xp, raw, key) if key in FLOATS else raw.astype(xp.uint64)


def store(xp: Any, r: Any, key: str) -> Any:
    """float64 rounded once to T, or uint64 reduced to T's width."""
    return narrow(xp, r, key) if key in FLOATS else r.astype(STORAGE[key])


def correlate(xp: Any, g: Any, w: Any) -> Any:
    """g (b, c, *out, *k) taps, w (co, c, *k) -> (b, co, *out) = sum over c and k of g*w."""
    nd = (g.ndim - 2) // 2
    b, outs = g.shape[0], g.shape[2:2 + nd]
    g2 = g.transpose((0,) + tuple(range(2, 2 + nd)) + (1,) + tuple(range(2 + nd, 2 + 2 * nd)))
    g2 = g2.reshape(b, -1, w[0].size)                                  # (b, prod(out), c*prod(k))
    r = (g2[:, :, None, :] * w.reshape(w.shape[0], -1)[None, None]).sum(axis=-1)
    return r.transpose(0, 2, 1).reshape((b, w.shape[0]) + tuple(outs))


def conv_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """conv.host (Candle's backend conv1d/conv2d) and the conv*/im2col*/col2im1d kernels."""
    a = _args(launch)
    v = lambda n: int(a[n].value) if n in a else 0
    s, p, d = v("stride"), v("padding"), v("dilation")
    src, dst = _ptr(bufs, a["src"]), _ptr(bufs, a["dst"])
    kern: ConvKernel = op.spec.variant
    if launch.library == "conv.host":            # the layouts of src and kernel
        sl, kl = _info(a["src_layout"]), _info(a["kernel_layout"])
        x = gather_view(xp, src, sl[:len(sl) // 2], sl[len(sl) // 2:])
        w = gather_view(xp, _ptr(bufs, a["kernel"]), kl[:len(kl) // 2], kl[len(kl) // 2:])
        outs = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k in zip(x.shape[2:], w.shape[2:])]
        taps = [conv_taps(xp, o, n, k, s, p, d, False) for o, n, k in zip(outs, x.shape[2:], w.shape[2:])]
        out = store(xp, correlate(xp, gather_taps(xp, numeric(xp, x, key), taps), numeric(xp, w, key)), key)
    elif kern.col2im:                            # src contiguous (b, l_in, c_out, k) -> (b, c_out, l_out)
        l_out, l_in, c, k = v("l_out"), v("l_in"), v("c_out"), v("k_size")
        b = v("dst_el") // (c * l_out)
        x = numeric(xp, src[:b * l_in * c * k].reshape(b, l_in, c, k), key)
        pos, ok = conv_taps(xp, l_out, l_in, k, s, 0, 1, True)             # l = i*stride + j
        taps = x.transpose(0, 2, 1, 3)[:, :, pos, xp.arange(k, dtype=xp.int64)[None, :]]
        out = store(xp, xp.where(ok, taps, xp.zeros((), dtype=taps.dtype)).sum(axis=-1), key)
    else:
        info = _info(a["info"])
        nd = 2 + kern.spatial
        x = gather_view(xp, src, info[:nd], info[nd:2 * nd])
        if kern.im2col:                          # patches, copied as stored (zeros in the padding)
            outs, ks = ([v("l_out")], [v("l_k")]) if nd == 3 else ([v("h_out"), v("w_out")], [v("h_k"), v("w_k")])
            taps = [conv_taps(xp, o, n, k, s, p, d, False) for o, n, k in zip(outs, x.shape[2:], ks)]
            g = gather_taps(xp, x, taps)                                   # (b, c, *out, *k)
            out = g.transpose((0,) + tuple(range(2, nd)) + (1,) + tuple(range(nd, 2 * nd - 2)))
        else:
            w = numeric(xp, gather_view(xp, _ptr(bufs, a["kernel"]), info[2 * nd:3 * nd], info[3 * nd:4 * nd]), key)
            transposed = kern.transposed
            if transposed:                       # w (c_in, c_out, *k) -> (c_out, c_in, *k)
                w = w.transpose((1, 0) + tuple(range(2, nd)))
            outs = [v("l_out")] if nd == 3 else [v("h_out"), v("w_out")]
            taps = [conv_taps(xp, o, n, k, s, p, d, transposed) for o, n, k in zip(outs, x.shape[2:], w.shape[2:])]
            out = store(xp, correlate(xp, gather_taps(xp, numeric(xp, x, key), taps), w), key)
    dst[:out.size] = out.reshape(-1)


SPATIAL_RUNNERS = {"matmul": matmul_launch, "pool": pool_launch, "conv": conv_launch}


def execute_array_code(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """Run a launch of an array-code family (cupy_structured's and this module's) with array module
    xp; bufs: buffer name -> 1-D storage array (uint16 for f16/bf16, uint8 for fp8), written in
    place. Raises HostRefused where Candle's host refuses the launch (MatMulNonContiguous)."""
    with np.errstate(all="ignore"):
        {**FAMILY_RUNNERS, **SPATIAL_RUNNERS}[op.family](xp, launch, op, key, bufs)
