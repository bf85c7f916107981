"""candle-nn kernels: softmax_T, rmsnorm_T, layernorm_T (rows over the last dim, contiguous
inputs) and rope_i_T / rope_T / rope_thd_T, for T in f32, f64, f16, bf16.

    softmax_T(const T* src, T* dst, int n_cols)              grid (rows), block (1,32,1)
    rmsnorm_T(src, dst, const T* alpha /*nullable*/, int n_cols, int block_size, float eps)
    layernorm_T(src, dst, alpha, beta, int n_cols, int block_size, float eps)
                                                             grid (rows), block n_cols<1024 ? 32 : 1024
    rope_i_T(src, cos, sin, dst, u32 bh, u32 td, u32 stride_b)
    rope_T(src, cos, sin, dst, u32 bh, u32 td, u32 d, u32 stride_b)
    rope_thd_T(src, cos, sin, dst, u32 b, u32 t, u32 h, u32 d, u32 stride_b)
                                                             for_num_elems(el/2); stride_b = h*t*d
                                                             when cos/sin are 3-D (per batch), else 0
"""
from __future__ import annotations

import math
from enum import Enum

import numpy as np

from parity.core.compare import compare
from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.core.numerics import round_float, to_f64
from parity.core.tolerance import Tolerance
from parity.ops.base import Arg, ChainSupport, Launch, Op, ShapeClass, StructuredSpec, for_num_elems
from parity.ops.structured import StructuredBuilt, make_input, out_buffer

DTYPES = ("f32", "f64", "f16", "bf16")
EPS = 1e-5
F32_EPS = float(np.float32(EPS))             # eps as the kernels receive it (an f32 argument)
F32, F64 = dtype("f32"), dtype("f64")

ROW_SHAPES = {s.name: s for s in [
    ShapeClass("c100", "(37,100): block 32, ~3 columns per thread", {"shape": (37, 100)}),
    ShapeClass("c1024", "(4,1024): block 1024 for the norms", {"shape": (4, 1024)}),
    ShapeClass("c3000", "(3,3000): rows longer than any block", {"shape": (3, 3000)}),
    # Aligned power-of-two rows, where kernels switch paths (a row in a warp's or a block's registers,
    # several rows a block, a row in chunks), an odd number of them: a block that takes two rows
    # and lets the next one return leaves or overruns the last row only when the count is odd.
    ShapeClass("c512", "(37,512): block 32, whole aligned 16-byte packs, an odd row count", {"shape": (37, 512)}),
    ShapeClass("c2048", "(19,2048): block 1024, whole aligned 16-byte packs, an odd row count",
               {"shape": (19, 2048)}),
    ShapeClass("c16384", "(3,16384): aligned rows longer than a block's registers", {"shape": (3, 16384)}),
    ShapeClass("offset", "(13,77) source at pointer offset 5", {"shape": (13, 77), "offset": 5}),
    ShapeClass("offset-packs", "(37,256) source at pointer offset 1: whole 16-byte packs, none aligned",
               {"shape": (37, 256), "offset": 1}),
    ShapeClass("offset-1024", "(5,2048) source at pointer offset 3: block 1024, packs not aligned",
               {"shape": (5, 2048), "offset": 3}),
]}
ROPE_SHAPES = {s.name: s for s in [
    ShapeClass("rope2d", "(2,3,5,8), cos/sin (t,d/2): stride_b 0", {"shape": (2, 3, 5, 8), "batched": False}),
    ShapeClass("rope3d", "(2,3,5,8), per-batch cos/sin (b,t,d/2): stride_b = h*t*d", {"shape": (2, 3, 5, 8), "batched": True}),
    ShapeClass("rope2d-big", "(1,4,64,64), cos/sin (t,d/2): several blocks", {"shape": (1, 4, 64, 64), "batched": False}),
    ShapeClass("rope3d-big", "(3,2,17,32), per-batch cos/sin: several blocks", {"shape": (3, 2, 17, 32), "batched": True}),
]}


class NnKernel(str, Enum):
    """Which candle-nn kernel an op is: its spec's `variant`, whose facts a second implementation of
    the family reads instead of the kernel's name."""
    SOFTMAX = "softmax"
    RMSNORM = "rmsnorm"
    LAYERNORM = "layernorm"
    ROPE_I = "rope_i"
    ROPE = "rope"
    ROPE_THD = "rope_thd"

    @property
    def rotary(self) -> bool:
        """A rope kernel: one thread per rotated pair; else one block per row of n_cols."""
        return self in (NnKernel.ROPE_I, NnKernel.ROPE, NnKernel.ROPE_THD)

    @property
    def norm(self) -> bool:
        """Rows scaled by rsqrtf(mean + eps) in float (rmsnorm, layernorm); softmax otherwise."""
        return self in (NnKernel.RMSNORM, NnKernel.LAYERNORM)

    @property
    def centred(self) -> bool:
        """The norm subtracts the row's mean (layernorm: one-pass var = E[x^2] - mean^2)."""
        return self is NnKernel.LAYERNORM

    @property
    def interleaved(self) -> bool:
        """rope_i rotates pairs (x[2i], x[2i+1]); the others pair x[i] with x[i + d/2]."""
        return self is NnKernel.ROPE_I

    @property
    def thd(self) -> bool:
        """rope_thd's x is (b,t,h,d); the others' (b,h,t,d)."""
        return self is NnKernel.ROPE_THD


def _f32_level(ulps: int) -> int:
    """f64 kernels that compute in float: `ulps` float ulps, in f64 ulps."""
    return ulps << 29


TOL = {
    "softmax": Tolerance(ulp={"f32": 16, "f64": 16, "*": 2}, atol={"f32": 1e-9, "f64": 1e-18, "*": 0.0}),
    "rmsnorm": Tolerance(ulp={"f32": 32, "f64": _f32_level(32), "*": 2}),
    "layernorm": Tolerance(ulp={"f32": 64, "f64": _f32_level(64), "*": 2},
                           atol={"f32": 2e-5, "f64": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}),
    "rope": Tolerance(ulp={"*": 2}, atol={"f32": 1.2e-6, "f64": 2.3e-15, "f16": 1e-2, "bf16": 8e-2}),
}


# ------------------------------------------------------------------------ the math (f64)
def softmax_rows(x: np.ndarray, dt) -> np.ndarray:
    """CUDA softmax: max in T, exp(x-max) in T, sum in ACC, dst = e * (1/sum); for f16/bf16
    the reciprocal is rounded to T first and the product is a T multiply."""
    x = to_f64(x)
    m = np.max(x, axis=-1, keepdims=True)
    if dt.name in ("f16", "bf16"):
        r = lambda v: to_f64(round_float(v, dt))
        e = r(np.exp(r(x - m)))
        inv = r(1.0 / np.sum(e, axis=-1, keepdims=True))
        return round_float(e * inv, dt)
    e = np.exp(x - m)
    return round_float(e / np.sum(e, axis=-1, keepdims=True), dt)


def rmsnorm_rows(x, alpha, dt, eps=EPS) -> np.ndarray:
    """float accumulation for every T (f64 inputs are read as float), rsqrtf, T(scale*x*alpha)."""
    xf = to_f64(round_float(to_f64(x), F32))
    scale = 1.0 / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + np.float32(eps))
    y = xf * scale * (to_f64(alpha) if alpha is not None else 1.0)
    return round_float(to_f64(round_float(y, F32)), dt)


def layernorm_rows(x, alpha, beta, dt, eps=EPS) -> np.ndarray:
    """one-pass float statistics: var = E[x^2] - mean^2, rsqrtf(var+eps)."""
    xf = to_f64(round_float(to_f64(x), F32))
    mean = np.mean(xf, axis=-1, keepdims=True)
    var = np.mean(xf * xf, axis=-1, keepdims=True) - mean * mean
    y = (xf - mean) / np.sqrt(var + np.float32(eps))
    if alpha is not None:
        y = y * to_f64(alpha)
    if beta is not None:
        y = y + to_f64(beta)
    return round_float(to_f64(round_float(y, F32)), dt)


def exact_rows(root: str, x, alpha, beta, eps=F32_EPS) -> np.ndarray:
    """The float64 truth of a row op: no intermediate rounding (to T or to float), exact
    exp/sqrt, two-pass variance; eps by default as the kernel receives it (an f32)."""
    x = to_f64(x)
    if root == "softmax":
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)
    if root == "rmsnorm":
        y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    else:
        c = x - np.mean(x, axis=-1, keepdims=True)
        y = c / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + eps)
        if beta is not None:
            return y * (to_f64(alpha) if alpha is not None else 1.0) + to_f64(beta)
    return y * (to_f64(alpha) if alpha is not None else 1.0)


def rope_reference(variant: str, x, cos, sin, dt) -> np.ndarray:
    """Rotary embedding over the logical tensors; x (b,h,t,d) or (b,t,h,d) for thd; cos/sin
    (t,d/2) or (b,t,d/2)."""
    x, c, s = to_f64(x), to_f64(cos), to_f64(sin)
    b = x.shape[0]
    if c.ndim == 2:
        c, s = np.broadcast_to(c, (b,) + c.shape), np.broadcast_to(s, (b,) + s.shape)
    if variant == "rope_thd":                   # (b,t,h,d): cos indexed by t
        c, s = c[:, :, None, :], s[:, :, None, :]
    else:                                       # (b,h,t,d)
        c, s = c[:, None, :, :], s[:, None, :, :]
    out = np.empty_like(x)
    if variant == "rope_i":
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
    else:
        h = x.shape[-1] // 2
        x0, x1 = x[..., :h], x[..., h:]
        out[..., :h] = x0 * c - x1 * s
        out[..., h:] = x0 * s + x1 * c
    return round_float(out, dt)


# ------------------------------------------------------------------------- row ops
def row_geometry(rows: int, n_cols: int) -> dict:
    """Candle's launch of the row kernels: one block per row; rmsnorm/layernorm blocks of 32
    threads for rows under 1024 columns, else 1024 (softmax's block is always (1,32,1))."""
    return {"rows": rows, "n_cols": n_cols, "block_size": 32 if n_cols < 1024 else 1024}


def _row_build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    dt = dtype(case.dtype)
    g = ROW_SHAPES[case.layout].geo
    rows, n = g["shape"]
    lay = contiguous((rows, n), offset=g.get("offset", 0))
    base, x = make_input(dt, lay, case.values, rng)
    dts, lays, bases, ins = {"src": dt}, {"src": lay}, {"src": base}, {"src": x}
    params = dict(case.params)
    extra = []
    if op.root == "rmsnorm" and params.get("alpha", 1):
        extra = ["alpha"]
    if op.root == "layernorm" and params.get("affine", 1):
        extra = ["alpha", "beta"]
    for name in extra:
        al = contiguous((n,))
        ab, av = make_input(dt, al, "normal", rng)
        dts[name], lays[name], bases[name], ins[name] = dt, al, ab, av
    return StructuredBuilt(case, op, case.dtype, dts, lays, bases, ins, row_geometry(rows, n),
                           out_dtype=dt, out_shape=(rows, n))


def _row_pack(b: StructuredBuilt) -> Launch:
    root, g = b.op.root, b.geo
    ptr = lambda n: Arg("ptr", (n, b.layouts[n].offset) if n in b.layouts else None, name=n)
    args = [ptr("src"), Arg("ptr", ("dst", 0), name="dst")]
    if root == "softmax":
        args.append(Arg("i32", g["n_cols"], name="n_cols"))
        block = (1, 32, 1)
    else:
        args.append(ptr("alpha"))
        if root == "layernorm":
            args.append(ptr("beta"))
        args += [Arg("i32", g["n_cols"], name="n_cols"), Arg("i32", g["block_size"], name="block_size"),
                 Arg("f32", EPS, name="eps")]
        block = (g["block_size"], 1, 1)
    bufs = dict(b.bases)
    bufs["dst"] = out_buffer(b)
    return Launch(b.op.kernel_name(b.key), args, bufs, ("dst",), grid=(g["rows"], 1, 1), block=block,
                  dtypes={k: v.name for k, v in b.dtypes.items()} | {"dst": b.out_dtype.name})


def row_math(root: str, x, alpha, beta, dt, eps: float = EPS) -> np.ndarray:
    """A row op's CUDA result (softmax_rows, rmsnorm_rows, layernorm_rows)."""
    if root == "softmax":
        return softmax_rows(x, dt)
    if root == "rmsnorm":
        return rmsnorm_rows(x, alpha, dt, eps)
    return layernorm_rows(x, alpha, beta, dt, eps)


def _row_expected(b: StructuredBuilt) -> np.ndarray:
    i = b.inputs
    return row_math(b.op.root, i["src"], i.get("alpha"), i.get("beta"), b.out_dtype)


def _row_exact(b: StructuredBuilt) -> np.ndarray:
    i = b.inputs
    return exact_rows(b.op.root, i["src"], i.get("alpha"), i.get("beta"))


def _row_emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    a = {x.name: x for x in launch.args}
    dt = dtype(key)
    rows, n = int(launch.grid[0]), int(a["n_cols"].value)

    def read(name, count):
        if name not in a or a[name].value is None:
            return None
        bn, off = a[name].value
        return bufs[bn][ex.pointer_offset(off): ex.pointer_offset(off) + count]
    x = read("src", rows * n).reshape(rows, n)
    eps = float(a["eps"].value) if "eps" in a else EPS
    with np.errstate(all="ignore"):
        y = ex.row_op(op.root, x, read("alpha", n), read("beta", n), dt, eps)
    bn, off = a["dst"].value
    bufs[bn][ex.pointer_offset(off): ex.pointer_offset(off) + rows * n] = y.reshape(-1)


def _judge_with(tol: Tolerance):
    def judge(expected, got, b: StructuredBuilt):
        ins = {"src": b.inputs["src"]}
        return compare(expected, got, b.out_dtype, tol, ins, {"src": b.out_dtype})
    return judge


# ------------------------------------------------------------------------------- rope
def rope_geometry(root: str, shape: tuple[int, ...], batched: bool) -> dict:
    """The rope kernels' parameters from x's shape ((b,h,t,d); rope_thd: (b,t,h,d)); stride_b is
    h*t*d when cos/sin are per batch (3-D), else 0."""
    b_, h, t, d = (shape[0], shape[2], shape[1], shape[3]) if root == "rope_thd" else shape
    return {"b": b_, "h": h, "t": t, "d": d, "el": math.prod(shape), "stride_b": h * t * d if batched else 0}


def _rope_build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    dt = dtype(case.dtype)
    g = ROPE_SHAPES[case.layout].geo
    shape = g["shape"]
    geo = rope_geometry(op.root, shape, g["batched"])
    b_, t, d = geo["b"], geo["t"], geo["d"]
    cs_shape = (b_, t, d // 2) if g["batched"] else (t, d // 2)
    lay = contiguous(shape)
    base, x = make_input(dt, lay, case.values, rng)
    ang = rng.uniform(-3.2, 3.2, math.prod(cs_shape))
    cl = contiguous(cs_shape)
    cos_b = round_float(np.cos(ang), dt)
    sin_b = round_float(np.sin(ang), dt)
    return StructuredBuilt(case, op, case.dtype, {"src": dt, "cos": dt, "sin": dt},
                           {"src": lay, "cos": cl, "sin": cl}, {"src": base, "cos": cos_b, "sin": sin_b},
                           {"src": x, "cos": cos_b.reshape(cs_shape), "sin": sin_b.reshape(cs_shape)}, geo,
                           out_dtype=dt, out_shape=shape)


def _rope_pack(b: StructuredBuilt) -> Launch:
    g, root = b.geo, b.op.root
    args = [Arg("ptr", (n, 0), name=n) for n in ("src", "cos", "sin")] + [Arg("ptr", ("dst", 0), name="dst")]
    u = lambda n, v: Arg("u32", v, name=n)
    if root == "rope_i":
        args += [u("bh", g["b"] * g["h"]), u("td", g["t"] * g["d"])]
    elif root == "rope":
        args += [u("bh", g["b"] * g["h"]), u("td", g["t"] * g["d"]), u("d", g["d"])]
    else:
        args += [u("b", g["b"]), u("t", g["t"]), u("h", g["h"]), u("d", g["d"])]
    args.append(u("stride_b", g["stride_b"]))
    bufs = dict(b.bases)
    bufs["dst"] = out_buffer(b)
    return Launch(b.op.kernel_name(b.key), args, bufs, ("dst",), grid=for_num_elems(g["el"] // 2),
                  dtypes={k: v.name for k, v in b.dtypes.items()} | {"dst": b.out_dtype.name})


def _rope_expected(b: StructuredBuilt) -> np.ndarray:
    i = b.inputs
    return rope_reference(b.op.root, i["src"], i["cos"], i["sin"], b.out_dtype)


def _rope_emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """The kernels' index arithmetic, one thread per pair (idx < el/2), vectorised."""
    a = {x.name: int(x.value) for x in launch.args if x.kind == "u32"}
    dt = dtype(key)
    p = {n: bufs[launch_arg.value[0]][ex.pointer_offset(launch_arg.value[1]):]
         for n, launch_arg in ((x.name, x) for x in launch.args if x.kind == "ptr")}
    src, cos, sin, dst = p["src"], p["cos"], p["sin"], p["dst"]
    stride_b = ex.rope_stride_b(a["stride_b"])
    if op.root == "rope_i":
        n = a["bh"] * a["td"] // 2
        idx = np.arange(n, dtype=np.int64)
        cs = idx % (a["td"] // 2)
        if stride_b > 0:
            cs = cs + (2 * idx) // stride_b * (a["td"] // 2)
        i1, i2 = 2 * idx, 2 * idx + 1
    elif op.root == "rope":
        td, d = a["td"], a["d"]
        n = a["bh"] * td // 2
        idx = np.arange(n, dtype=np.int64)
        i_bh = idx // (td // 2)
        i_td = idx - (td // 2) * i_bh
        i_t = i_td // (d // 2)
        i_d = i_td - (d // 2) * i_t
        i1 = i_bh * td + i_t * d + i_d
        i2 = i1 + d // 2
        cs = i_t * (d // 2) + i_d
        if stride_b > 0:
            cs = cs + (2 * idx) // stride_b * (td // 2)
    else:
        b_, t, h, d = a["b"], a["t"], a["h"], a["d"]
        n = b_ * t * h * d // 2
        idx = np.arange(n, dtype=np.int64)
        i_bth = idx // (d // 2)
        i_d = idx - (d // 2) * i_bth
        i_t = (i_bth // h) % t
        i1 = i_bth * d + i_d
        i2 = i1 + d // 2
        cs = i_t * (d // 2) + i_d
        if stride_b > 0:
            cs = cs + (2 * idx) // stride_b * ((t * d) // 2)
    x1, x2, c, s = (to_f64(v) for v in (src[i1], src[i2], cos[cs], sin[cs]))
    dst[i1] = round_float(x1 * c - x2 * s, dt)
    dst[i2] = round_float(x1 * s + x2 * c, dt)


# ---------------------------------------------------------------------------- op chains
def _row_chain_geometry(lays: dict, params: dict) -> tuple[dict, tuple[int, ...]]:
    shape = lays["src"].shape
    return row_geometry(math.prod(shape[:-1]), shape[-1]), shape


def _rope_chain(root: str) -> ChainSupport:
    def geometry(lays: dict, params: dict) -> tuple[dict, tuple[int, ...]]:
        shape = lays["src"].shape
        return rope_geometry(root, shape, lays["cos"].rank == 3), shape
    # the launch passes no offsets: x, cos and sin are read dense from their buffers' start
    return ChainSupport(geometry, lambda ins, geo: rope_reference(root, ins["src"], ins["cos"], ins["sin"], F64),
                        dense=("src", "cos", "sin"), dense_from_start=True, tolerance=TOL["rope"])


SOFTMAX_CHAIN = ChainSupport(_row_chain_geometry, lambda ins, geo: exact_rows("softmax", ins["src"], None, None),
                             dense=("src",), tolerance=TOL["softmax"])
# eps unrounded (1e-5), as the chains' reference has always taken it; the single-op truth
# (_row_exact) takes the f32 the kernel receives
RMSNORM_CHAIN = ChainSupport(_row_chain_geometry,
                             lambda ins, geo: exact_rows("rmsnorm", ins["src"], ins.get("alpha"), None, eps=EPS),
                             dense=("src", "alpha"), optional=("alpha",), tolerance=TOL["rmsnorm"])


# ----------------------------------------------------------------------------- catalog
def _spec(shapes, build, pack, expected, emulate, tol, exact=None, chain=None, *, variant: NnKernel):
    return StructuredSpec(shapes=shapes, build=build, pack=pack, expected=expected, judge=_judge_with(tol),
                          emulate=emulate, tolerance=lambda key: tol.describe(key), exact=exact, chain=chain,
                          variant=variant)


OPS = [
    Op(name="nn.softmax", family="nn", root="softmax", dtypes=DTYPES, inputs=("src",),
       value_classes=("normal", "special", "peaked"), value_dtypes=(("peaked", ("f16", "bf16")),),
       abi=("src", "dst", "n_cols:i32"),
       semantics="softmax over the last dim: max in T (maxg), e=exp(x-max) in T, sum in ACC (f32 for f16/bf16), "
                 "dst=e*(1/sum); f16/bf16 round 1/sum to T and multiply in T",
       divergences=("Candle CPU divides by the sum in T",),
       spec=_spec(ROW_SHAPES, _row_build, _row_pack, _row_expected, _row_emulate, TOL["softmax"], _row_exact,
                  SOFTMAX_CHAIN, variant=NnKernel.SOFTMAX)),
    Op(name="nn.rmsnorm", family="nn", root="rmsnorm", dtypes=DTYPES, inputs=("src",),
       value_classes=("normal",),
       param_sets=({"alpha": 1.0}, {"alpha": 0.0}),
       abi=("src", "dst", "alpha", "n_cols:i32", "block_size:i32", "eps:f32"),
       semantics="float sum of squares, rsqrtf(mean+eps) (approximate), T(scale*x*alpha); alpha may be null; "
                 "f64 is computed in float",
       divergences=("Candle CPU fast path divides in T; rms_norm_slow runs in f32 for f16/bf16",),
       spec=_spec(ROW_SHAPES, _row_build, _row_pack, _row_expected, _row_emulate, TOL["rmsnorm"], _row_exact,
                  RMSNORM_CHAIN, variant=NnKernel.RMSNORM)),
    Op(name="nn.layernorm", family="nn", root="layernorm", dtypes=DTYPES, inputs=("src",),
       value_classes=("normal",),
       param_sets=({"affine": 1.0}, {"affine": 0.0}),
       abi=("src", "dst", "alpha", "beta", "n_cols:i32", "block_size:i32", "eps:f32"),
       semantics="one-pass float mean and var=E[x^2]-mean^2, rsqrtf(var+eps), T((x-mean)*inv*alpha+beta); "
                 "alpha/beta may be null; f64 is computed in float",
       divergences=("layer_norm_slow (Candle's reference) is two-pass",),
       spec=_spec(ROW_SHAPES, _row_build, _row_pack, _row_expected, _row_emulate, TOL["layernorm"], _row_exact,
                 variant=NnKernel.LAYERNORM)),
] + [
    Op(name=f"nn.{root}", family="nn", root=root, dtypes=DTYPES, inputs=("src", "cos", "sin"),
       value_classes=("normal",), abi=abi,
       semantics=sem + "; T arithmetic; one thread per pair, early return; cos/sin index += (2*idx/stride_b)*"
                 "(t*d/2) when stride_b > 0 (3-D per-batch cos/sin)",
       spec=_spec(ROPE_SHAPES, _rope_build, _rope_pack, _rope_expected, _rope_emulate, TOL["rope"],
                  chain=_rope_chain(root), variant=NnKernel(root)))
    for root, abi, sem in [
        ("rope_i", ("src", "cos", "sin", "dst", "bh:u32", "td:u32", "stride_b:u32"),
         "interleaved pairs (x[2i], x[2i+1]) of (b,h,t,d)"),
        ("rope", ("src", "cos", "sin", "dst", "bh:u32", "td:u32", "d:u32", "stride_b:u32"),
         "halves (x[i], x[i+d/2]) of (b,h,t,d)"),
        ("rope_thd", ("src", "cos", "sin", "dst", "b:u32", "t:u32", "h:u32", "d:u32", "stride_b:u32"),
         "halves of (b,t,h,d)"),
    ]
]
