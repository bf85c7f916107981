"""Pooling and upsampling (candle-kernels conv.cu), T in f32, f64, u8, u32, f16, bf16:

    avg_pool2d_T / max_pool2d_T(size_t src_numel, size_t w_k, size_t h_k, size_t w_stride,
                                size_t h_stride, const size_t* info, const T* src, T* dst)
    upsample_nearest2d_T(size_t w_out, size_t h_out, double w_scale, double h_scale,
                         const size_t* info, const T* src, T* dst)
    upsample_bilinear2d_T(size_t w_out, size_t h_out, bool align_corners, bool has_sh, double sh,
                          bool has_sw, double sw, const size_t* info, const T* src, T* dst)

info = [4 dims, 4 strides] of the NCHW source (always uploaded); the start offset is applied to
the pointer; one thread per output element (`dst_i >= dst_el` returns, no grid-stride loop),
for_num_elems(dst_el). **Swapped names**: in pool and nearest the kernel's "w" is dims[2] (H);
Candle's host passes (k_h, k_w), (s_h, s_w) and (out_h, out_w) into the "w, h" slots, so the
swap cancels. Pool out = (in-k)/stride+1, no padding. avg accumulates f16/bf16 in float and
other dtypes in T (u8/u32 wrap), then multiplies by the **float** 1/(kh*kw) and converts to T
(integers truncate). max keeps the first element then maxg (f32/f64 fmax ignores NaN, f16/bf16
propagate). nearest: src = (size_t)(dst * (in/out as double)), clamped to in-1.

upsample_nearest1d is no kernel: Candle's CUDA backend bails ("not supported on cuda"), so it is
not in the catalog. upsample_bilinear2d's semantics are not in the ABI sheet: the reference
follows PyTorch's upsample_bilinear2d (align_corners; half-pixel source index otherwise, scale
1/scale_factor when given, else in/out; source index clamped at 0; weights in double) with
h = dims[2], w = dims[3] — an assumption, unverified against conv.cu; judged within 2 ulp
(integers +-1).
"""
from __future__ import annotations

import math
from enum import Enum

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import Layout, contiguous, permuted, strided
from parity.core.numerics import bits_of, round_float, to_f64, ulp_order
from parity.core.tolerance import Tolerance
from parity.ops.base import Arg, ChainSupport, Launch, Op, ShapeClass, StructuredSpec, for_num_elems
from parity.ops.structured import StructuredBuilt, make_input, mask_judge, out_buffer, same_value

DTYPES = ("f32", "f64", "u8", "u32", "f16", "bf16")


class PoolKernel(str, Enum):
    """Which pooling/upsampling kernel an op is: its spec's `variant`, whose facts a second
    implementation of the family reads instead of the kernel's name."""
    AVG_POOL2D = "avg_pool2d"
    MAX_POOL2D = "max_pool2d"
    UPSAMPLE_NEAREST2D = "upsample_nearest2d"
    UPSAMPLE_BILINEAR2D = "upsample_bilinear2d"

    @property
    def window(self) -> bool:
        """A pool: each output reduces a (w_k, h_k) window at (w_stride, h_stride) steps."""
        return self in (PoolKernel.AVG_POOL2D, PoolKernel.MAX_POOL2D)

    @property
    def maximum(self) -> bool:
        """The window's maximum (maxg), not its float-scaled sum."""
        return self is PoolKernel.MAX_POOL2D

    @property
    def nearest(self) -> bool:
        """Nearest-neighbour upsampling by the double scales; bilinear otherwise."""
        return self is PoolKernel.UPSAMPLE_NEAREST2D


def _view(kind: str, shape) -> Layout:
    if kind == "transposed":                  # NCWH memory read as NCHW
        return permuted(shape, (0, 1, 3, 2))
    if kind == "narrowed":                    # channels 1..c+1 of a (b, c+2, H, W) tensor
        b, c, h, w = shape
        return strided(shape, ((c + 2) * h * w, h * w, w, 1), h * w)
    if kind == "stepped":                     # every other column of a (b, c, H, 2W) tensor, offset 1
        b, c, h, w = shape
        return strided(shape, (c * h * 2 * w, h * 2 * w, 2 * w, 2), 1)
    return contiguous(shape)


POOL_SHAPES = {s.name: s for s in [
    ShapeClass("p-contig", "(2,3,8,7), k (3,2), stride (2,1): non-square, so a swap shows",
               {"shape": (2, 3, 8, 7), "k": (3, 2), "s": (2, 1), "view": "contig"}),
    ShapeClass("p-square", "(1,2,6,6), k (2,2), stride (2,2)", {"shape": (1, 2, 6, 6), "k": (2, 2), "s": (2, 2),
                                                                 "view": "contig"}),
    ShapeClass("p-overlap", "(2,2,7,9), k (3,3), stride (1,2): overlapping windows, tail dropped",
               {"shape": (2, 2, 7, 9), "k": (3, 3), "s": (1, 2), "view": "contig"}),
    ShapeClass("p-transposed", "(2,3,8,7) read from NCWH memory (H/W strides swapped), k (3,2), stride (2,1)",
               {"shape": (2, 3, 8, 7), "k": (3, 2), "s": (2, 1), "view": "transposed"}),
    ShapeClass("p-offset", "(2,3,8,7) channel-narrowed view (offset 56), k (2,3), stride (1,2)",
               {"shape": (2, 3, 8, 7), "k": (2, 3), "s": (1, 2), "view": "narrowed"}),
    ShapeClass("p-stepped", "(1,2,6,5) every other column (stride 2, offset 1), k (2,2), stride (2,1)",
               {"shape": (1, 2, 6, 5), "k": (2, 2), "s": (2, 1), "view": "stepped"}),
]}
NEAREST_SHAPES = {s.name: s for s in [
    ShapeClass("u-up", "(2,3,4,5) -> (7,11): upsampling, non-integer ratios", {"shape": (2, 3, 4, 5), "out": (7, 11),
                                                                               "view": "contig"}),
    ShapeClass("u-down", "(1,2,9,7) -> (4,3): downsampling", {"shape": (1, 2, 9, 7), "out": (4, 3), "view": "contig"}),
    ShapeClass("u-x2", "(2,2,3,4) -> (6,8): exact factor 2", {"shape": (2, 2, 3, 4), "out": (6, 8), "view": "contig"}),
    ShapeClass("u-transposed", "(2,3,4,5) NCWH memory -> (7,11)", {"shape": (2, 3, 4, 5), "out": (7, 11),
                                                                   "view": "transposed"}),
    ShapeClass("u-offset", "(2,3,4,5) channel-narrowed (offset 20) -> (9,6)", {"shape": (2, 3, 4, 5), "out": (9, 6),
                                                                               "view": "narrowed"}),
]}
BILINEAR_SHAPES = {s.name: s for s in [
    ShapeClass("b-up", "(2,3,4,5) -> (7,11), align_corners false, sizes only",
               {"shape": (2, 3, 4, 5), "out": (7, 11), "align": False, "scales": None, "view": "contig"}),
    ShapeClass("b-align", "(2,2,4,5) -> (7,9), align_corners true",
               {"shape": (2, 2, 4, 5), "out": (7, 9), "align": True, "scales": None, "view": "contig"}),
    ShapeClass("b-scales", "(1,2,4,5) -> (8,12) with scale factors (2.0, 2.5): 1/scale, not in/out",
               {"shape": (1, 2, 4, 5), "out": (8, 12), "align": False, "scales": (2.0, 2.5), "view": "contig"}),
    ShapeClass("b-down", "(1,2,9,7) -> (4,3), align_corners false",
               {"shape": (1, 2, 9, 7), "out": (4, 3), "align": False, "scales": None, "view": "contig"}),
    ShapeClass("b-offset", "(2,3,4,5) channel-narrowed (offset 20) -> (6,7)",
               {"shape": (2, 3, 4, 5), "out": (6, 7), "align": False, "scales": None, "view": "narrowed"}),
    ShapeClass("b-transposed", "(2,3,4,5) NCWH memory -> (7,11), align_corners true",
               {"shape": (2, 3, 4, 5), "out": (7, 11), "align": True, "scales": None, "view": "transposed"}),
]}


# ----------------------------------------------------------------------- kernel arithmetic
def f32_scale(kh: int, kw: int) -> np.float32:
    """`const float scale = 1.0 / (w_k * h_k);` (double division, stored as float)."""
    return np.float32(1.0 / (kh * kw))


def avg_finish(sums: np.ndarray, scale: np.float32, dt) -> np.ndarray:
    """`dst = static_cast<T>(d * scale)` for the accumulator d of each dtype."""
    with np.errstate(all="ignore"):
        if dt.name in ("f16", "bf16", "f32"):                 # A = float: float * float
            return round_float((sums.astype(np.float32) * scale).astype(np.float64), dt).astype(dt.np)
        if dt.name == "f64":                                  # double * (double)float
            return (sums.astype(np.float64) * np.float64(scale)).astype(np.float64)
        p = sums.astype(np.float32) * scale                   # integer -> float, times float, truncate
        return np.trunc(p).astype(np.float64).astype(dt.np)


def pool_out(shape: tuple[int, ...], k: tuple[int, int], s: tuple[int, int]) -> tuple[int, ...]:
    """(b, c, oh, ow) of a pool over an NCHW shape: no padding, out = (in-k)/stride+1."""
    return tuple(shape[:2]) + ((shape[2] - k[0]) // s[0] + 1, (shape[3] - k[1]) // s[1] + 1)


def pool_windows(x: np.ndarray, k, s) -> np.ndarray:
    """(b, c, oh, ow, kh*kw) windows of an NCHW array, in the kernel's order (dims[2] offset outer)."""
    b, c, h, w = x.shape
    kh, kw = k
    sh, sw = s
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    ih = (np.arange(oh) * sh)[:, None, None, None] + np.arange(kh)[None, None, :, None]
    iw = (np.arange(ow) * sw)[None, :, None, None] + np.arange(kw)[None, None, None, :]
    win = x[:, :, ih, iw]                                     # (b, c, oh, ow, kh, kw)
    return win.reshape(b, c, oh, ow, kh * kw)


def avg_reduce(win: np.ndarray, dt) -> np.ndarray:
    """Sum of each window in the kernel's accumulator: float for f16/bf16/f32 (sequential),
    double for f64, T (wrapping) for integers."""
    if dt.name in ("f16", "bf16", "f32"):
        acc = np.zeros(win.shape[:-1], dtype=np.float32)
        w32 = to_f64(win).astype(np.float32)
        for j in range(win.shape[-1]):
            acc = (acc + w32[..., j]).astype(np.float32)
        return acc
    if dt.name == "f64":
        acc = np.zeros(win.shape[:-1], dtype=np.float64)
        for j in range(win.shape[-1]):
            acc = acc + win[..., j]
        return acc
    with np.errstate(all="ignore"):
        return np.sum(win.astype(dt.np), axis=-1, dtype=dt.np)


def max_reduce(win: np.ndarray, dt) -> np.ndarray:
    """First element, then maxg: fmax (NaN ignored) for f32/f64, NaN-propagating for f16/bf16."""
    if not dt.is_float:
        return win.max(axis=-1)
    v = to_f64(win)
    f = np.fmax if dt.name in ("f32", "f64") else np.maximum
    d = v[..., 0]
    for j in range(1, v.shape[-1]):
        d = f(d, v[..., j])
    return round_float(d, dt).astype(dt.np)


def nearest_index(n_out: int, n_in: int, scale: float) -> np.ndarray:
    """`(size_t)(dst * scale)` with the double scale in/out, clamped to in-1."""
    idx = np.floor(np.arange(n_out, dtype=np.float64) * np.float64(scale)).astype(np.int64)
    return np.minimum(idx, n_in - 1)


def bilinear_coords(n_out: int, n_in: int, align: bool, has_scale: bool, scale_factor: float):
    """(i0, i1, weight) per output index, PyTorch's area_pixel_compute_source_index."""
    d = np.arange(n_out, dtype=np.float64)
    if align:
        sc = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = sc * d
    else:
        sc = (1.0 / scale_factor) if has_scale else n_in / n_out
        src = sc * (d + 0.5) - 0.5
    src = np.maximum(src, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i0 = np.minimum(i0, n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    wgt = np.clip(src - i0, 0.0, 1.0)
    return i0, i1, wgt


def bilinear(x: np.ndarray, out_hw, align: bool, scales, dt) -> np.ndarray:
    """Interpolation in double, converted to T once (integers truncate)."""
    oh, ow = out_hw
    h, w = x.shape[2], x.shape[3]
    sh, sw = (scales if scales else (0.0, 0.0))
    h0, h1, wh = bilinear_coords(oh, h, align, scales is not None, sh)
    w0, w1, ww = bilinear_coords(ow, w, align, scales is not None, sw)
    v = to_f64(x)
    H0, H1, WH = h0[:, None], h1[:, None], wh[:, None]
    W0, W1, WW = w0[None, :], w1[None, :], ww[None, :]
    r = (v[:, :, H0, W0] * (1.0 - WW) * (1.0 - WH) + v[:, :, H0, W1] * WW * (1.0 - WH)
         + v[:, :, H1, W0] * (1.0 - WW) * WH + v[:, :, H1, W1] * WW * WH)
    if dt.is_float:
        return round_float(r, dt).astype(dt.np)
    with np.errstate(all="ignore"):
        return np.trunc(r).astype(dt.np)


# ---------------------------------------------------------------------------- spec parts
def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    dt = dtype(case.dtype)
    g = op.spec.shapes[case.layout].geo
    lay = _view(g["view"], g["shape"])
    base, x = make_input(dt, lay, case.values, rng)
    b_, c = g["shape"][:2]
    geo = dict(g)
    if op.root.endswith("pool2d"):
        out = pool_out(g["shape"], g["k"], g["s"])
    else:
        out = (b_, c) + tuple(g["out"])
    return StructuredBuilt(case, op, case.dtype, {"src": dt}, {"src": lay}, {"src": base}, {"src": x}, geo,
                           out_dtype=dt, out_shape=out)


def _info(lay: Layout) -> np.ndarray:
    return np.array(list(lay.shape) + list(lay.strides), dtype=np.uint64)


def _pack(b: StructuredBuilt) -> Launch:
    g, lay, root = b.geo, b.layouts["src"], b.op.root
    n_out = math.prod(b.out_shape)
    src = Arg("ptr", ("src", lay.offset), name="src")
    dst = Arg("ptr", ("dst", 0), name="dst")
    info = Arg("info", _info(lay), name="info")
    h, w = lay.shape[2], lay.shape[3]
    if root.endswith("pool2d"):
        (kh, kw), (sh, sw) = g["k"], g["s"]
        # Candle's host: Pool2D { w_k: k.0 (= k_h), h_k: k.1, w_stride: s.0, h_stride: s.1 }
        args = [Arg("size_t", lay.numel, name="src_numel"), Arg("size_t", kh, name="w_k"),
                Arg("size_t", kw, name="h_k"), Arg("size_t", sh, name="w_stride"), Arg("size_t", sw, name="h_stride"),
                info, src, dst]
    elif root == "upsample_nearest2d":
        oh, ow = g["out"]
        # UpsampleNearest2D(out_w = target_h, out_h = target_w); scale_w = dims[2]/out_w
        args = [Arg("size_t", oh, name="w_out"), Arg("size_t", ow, name="h_out"),
                Arg("f64", h / oh, name="w_scale"), Arg("f64", w / ow, name="h_scale"), info, src, dst]
    else:
        oh, ow = g["out"]
        sc = g["scales"]
        args = [Arg("size_t", ow, name="w_out"), Arg("size_t", oh, name="h_out"),
                Arg("bool", bool(g["align"]), name="align_corners"),
                Arg("bool", sc is not None, name="has_sh"), Arg("f64", sc[0] if sc else 0.0, name="sh"),
                Arg("bool", sc is not None, name="has_sw"), Arg("f64", sc[1] if sc else 0.0, name="sw"),
                info, src, dst]
    return Launch(b.op.kernel_name(b.key), args, {"src": b.bases["src"], "dst": out_buffer(b)}, ("dst",),
                  grid=for_num_elems(n_out), dtypes={"src": b.key, "dst": b.key})


def _expected(b: StructuredBuilt) -> np.ndarray:
    dt, g, x, root = b.out_dtype, b.geo, b.inputs["src"], b.op.root
    if root == "avg_pool2d":
        return avg_finish(avg_reduce(pool_windows(x, g["k"], g["s"]), dt), f32_scale(*g["k"]), dt)
    if root == "max_pool2d":
        return max_reduce(pool_windows(x, g["k"], g["s"]), dt)
    if root == "upsample_nearest2d":
        (oh, ow), h, w = g["out"], x.shape[2], x.shape[3]
        ih, iw = nearest_index(oh, h, h / oh), nearest_index(ow, w, w / ow)
        return x[:, :, ih[:, None], iw[None, :]]
    return bilinear(x, g["out"], g["align"], g["scales"], dt)


def _judge(expected, got, b: StructuredBuilt):
    dt = b.out_dtype
    if b.op.root == "upsample_bilinear2d":
        e64, g64 = to_f64(expected), to_f64(got)
        if dt.is_float:
            ulps = np.abs(ulp_order(bits_of(expected, dt), dt) - ulp_order(bits_of(got, dt), dt))
            # a 4-term weighted sum cancels near zero: allow 16 eps of the largest input as well
            # (seen on an H200: f64 results up to 543 ulp from the float64 reference, |err| < 2.4e-15)
            scale = max((float(np.nanmax(np.abs(to_f64(v)))) for v in b.inputs.values() if np.size(v)),
                        default=0.0)
            eps = 2.0 ** -(dt.mant_bits + 1)
            with np.errstate(invalid="ignore"):
                ok = same_value(expected, got) | (ulps <= 2) | (np.abs(e64 - g64) <= 16 * eps * scale)
        else:
            ok = np.abs(e64 - g64) <= 1
        return mask_judge(expected, got, dt, ok)
    if b.op.root == "avg_pool2d" and dt.name in ("f32", "f64", "f16", "bf16"):
        ulps = np.abs(ulp_order(bits_of(expected, dt), dt) - ulp_order(bits_of(got, dt), dt))
        return mask_judge(expected, got, dt, same_value(expected, got) | (ulps <= 1))
    return mask_judge(expected, got, dt, same_value(expected, got))


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """CPU level: the kernel's reading of its arguments (names as the kernel sees them)."""
    a = {x.name: x for x in launch.args}
    dt = dtype(key)
    info = np.asarray(a["info"].value).astype(np.int64)
    dims, st = info[:4], info[4:8]
    sname, soff = a["src"].value
    src = bufs[sname][ex.pointer_offset(int(soff)):]
    dname, doff = a["dst"].value
    dst = bufs[dname][ex.pointer_offset(int(doff)):]
    # the kernel's names: "w" = dims[2], "h" = dims[3]
    idx = lambda bb, cc, i2, i3: bb * st[0] + cc * st[1] + i2 * st[2] + i3 * st[3]
    B, C, W_in, H_in = (int(d) for d in dims)
    bb, cc = np.arange(B)[:, None, None, None], np.arange(C)[None, :, None, None]
    if op.root.endswith("pool2d"):
        w_k, h_k, ws, hs = ex.pool_params(
            int(a["w_k"].value), int(a["h_k"].value), int(a["w_stride"].value), int(a["h_stride"].value))
        w_out, h_out = (W_in - w_k) // ws + 1, (H_in - h_k) // hs + 1
        i2 = (np.arange(w_out) * ws)[:, None, None, None] + np.arange(w_k)[None, None, :, None]
        i3 = (np.arange(h_out) * hs)[None, :, None, None] + np.arange(h_k)[None, None, None, :]
        flat = idx(bb[..., None, None], cc[..., None, None], i2, i3)     # (B,C,w_out,h_out,w_k,h_k)
        win = src[flat].reshape(B, C, w_out, h_out, w_k * h_k)
        res = (avg_finish(avg_reduce(win, dt), f32_scale(w_k, h_k), dt) if op.root == "avg_pool2d"
               else max_reduce(win, dt))
    elif op.root == "upsample_nearest2d":
        w_out, h_out = int(a["w_out"].value), int(a["h_out"].value)
        i2 = nearest_index(w_out, W_in, float(a["w_scale"].value))
        i3 = nearest_index(h_out, H_in, float(a["h_scale"].value))
        res = src[idx(bb, cc, i2[None, None, :, None], i3[None, None, None, :])]
    else:                                     # bilinear: h = dims[2], w = dims[3]
        w_out, h_out = int(a["w_out"].value), int(a["h_out"].value)
        x = src[idx(bb, cc, np.arange(W_in)[None, None, :, None], np.arange(H_in)[None, None, None, :])]
        scales = (float(a["sh"].value), float(a["sw"].value)) if a["has_sh"].value else None
        res = bilinear(x, (h_out, w_out), bool(a["align_corners"].value), scales, dt)
    if res.size > dst.size:                   # its own output geometry runs past the buffer
        raise IndexError(f"{op.root} wrote {res.size} elements into a {dst.size}-element output")
    if res.size:
        ex.store(dst, np.asarray(res).reshape(-1))


_POOL_SEM = {
    "avg_pool2d": "mean over a k window (no padding), out=(in-k)/s+1; f16/bf16 accumulate in float, others in T "
                  "(u8/u32 wrap), times the float 1/(kh*kw), converted to T (integers truncate)",
    "max_pool2d": "max over a k window: first element then maxg (f32/f64 fmax ignores NaN, f16/bf16 propagate)",
    "upsample_nearest2d": "dst[h][w] = src[min((size_t)(h*(in_h/out_h)), in_h-1)][...] with double scales",
    "upsample_bilinear2d": "PyTorch-style bilinear (align_corners / half-pixel, scale factors), double weights "
                           "(semantics assumed: not in the ABI sheet)",
}


def _tol(root):
    if root == "upsample_bilinear2d":
        return lambda key: "2 ulp or 16 eps x max|input| (integers +-1): semantics assumed"
    if root == "avg_pool2d":
        return lambda key: "1 ulp vs the kernel's accumulator order" if key in ("f32", "f64", "f16", "bf16") else "exact"
    return lambda key: "exact"


def _avg_chain_geometry(lays: dict, params: dict) -> tuple[dict, tuple[int, ...]]:
    """An avg pool chain step's geometry: window (kh, kw) and stride (sh, sw; default the window)
    from the step's params."""
    k = (int(params["kh"]), int(params["kw"]))
    s = (int(params.get("sh", k[0])), int(params.get("sw", k[1])))
    return {"k": k, "s": s}, pool_out(lays["src"].shape, k, s)


AVG_CHAIN = ChainSupport(_avg_chain_geometry,
                         lambda ins, g: np.mean(pool_windows(to_f64(ins["src"]), g["k"], g["s"]), axis=-1),
                         tolerance=Tolerance(ulp=1))   # its judge: 1 ulp (the kernel's accumulation order)


def _op(name, root, shapes, abi, chain: ChainSupport | None = None) -> Op:
    return Op(name=name, family="pool", root=root, dtypes=DTYPES, inputs=("src",), value_classes=("normal", "special") if root == "max_pool2d" else ("normal",), abi=abi,
              info_always=True, semantics=_POOL_SEM[root],
              divergences=("Candle CPU avg_pool2d averages in T (no float accumulator for f16/bf16)",)
              if root == "avg_pool2d" else (),
              spec=StructuredSpec(shapes=shapes, build=_build, pack=_pack, expected=_expected, judge=_judge,
                                    emulate=_emulate, tolerance=_tol(root), chain=chain, variant=PoolKernel(root)))


_POOL_ABI = ("src_numel:size_t", "w_k:size_t", "h_k:size_t", "w_stride:size_t", "h_stride:size_t", "info", "src", "dst")
OPS = [
    _op("pool.avg", "avg_pool2d", POOL_SHAPES, _POOL_ABI, AVG_CHAIN),
    _op("pool.max", "max_pool2d", POOL_SHAPES, _POOL_ABI),
    _op("upsample.nearest2d", "upsample_nearest2d", NEAREST_SHAPES,
        ("w_out:size_t", "h_out:size_t", "w_scale:f64", "h_scale:f64", "info", "src", "dst")),
    _op("upsample.bilinear2d", "upsample_bilinear2d", BILINEAR_SHAPES,
        ("w_out:size_t", "h_out:size_t", "align_corners:bool", "has_sh:bool", "sh:f64", "has_sw:bool", "sw:f64",
         "info", "src", "dst")),
]
