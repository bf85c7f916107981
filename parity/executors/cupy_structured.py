"""The `cupy` level's array-code families: reduce (fast_sum/min/max/argmin/argmax), candle-nn
softmax/rmsnorm/layernorm and rope, indexing (is/gather/ia/sa/s), argsort, and the fill family
(const_set/copy2d/fill); matmul, pooling/upsampling and convolution are in cupy_spatial.py, which
also dispatches a launch to its family (execute_array_code).

Each family reads the Launch exactly as its kernel does (the permuted `info` and
el_to_sum_per_block of a reduction, grid = rows, n_cols / ncols, pointer offsets, nullable alpha
and beta, rope's stride_b, max_value<I> ids, the serial j loop of ia/sa/s) and writes the output
buffer; the op's own judge decides. Which kernel of its family a launch is comes from the facts of
the op's `spec.variant`, declared in the family's module (reduce.Reduction, nn.NnKernel, ...), or
from the launch's parameters, never from the op's name. Written against an array module `xp` with
API common to CuPy and NumPy only: cupy on the GPU, numpy in tests. It shares no code with the CPU
reference (parity/executors/cpu.py, the ops' reference/emulate functions): a second reference.

Floats are decoded from their storage bits (f16/bf16 as uint16, f32 bits as uint32, fp8 e4m3 as
uint8) to float64 with integer operations and ldexp, computed in float64, and encoded back with
round-to-nearest-even by frexp/rint/ldexp and integer operations (NaN -> 0x7fff / 0x7fffffff /
0x7f, like CUDA's conversions; fp8 saturates to ±448 like cvt.rn.satfinite). CuPy builds its own
kernels with -ftz=true, which flushes f32 subnormals in f32 arithmetic and f32<->f64 conversions;
float64 and integer arithmetic are never flushed, so these families need no subnormal self-check.
Where a kernel rounds every step to f32 (avg_pool's float accumulator), `round_trip(.., "f32")`
of the float64 operation is that f32 operation exactly (53 >= 2*24+2 bits: no double rounding).
Rounding points follow the declared semantics (f16/bf16 softmax rounds every step to T; the norms
compute in float), sums are one float64 sum rounded once (the judge allows for the kernel's
order), integer sums wrap in T.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from parity.ops.base import Launch, Op
from parity.ops.indexing import IndexKernel
from parity.ops.nn import NnKernel
from parity.ops.reduce import Reduction

# storage formats decoded/encoded here: (mantissa bits, exponent bits, bits dtype)
FORMATS = {"f16": (10, 5, "uint16"), "bf16": (7, 8, "uint16"), "f32": (23, 8, "uint32"),
           "f8_e4m3": (3, 4, "uint8")}
FP8_MAX_BITS = 0x7E                 # 448: e4m3 has no inf; S.1111.111 is its only NaN
STORAGE = {"u8": "uint8", "u32": "uint32", "i16": "int16", "i32": "int32", "i64": "int64"}
NAN_IGNORING = ("f32", "f64")       # fmaxf/fminf (init ∓inf); f16/bf16 __hmax_nan propagate NaN
ARRAY_FAMILIES = ("reduce", "nn", "indexing", "sort", "fill", "matmul", "pool", "conv")


def array_code(op: Op) -> bool:
    """Whether the level runs this op as array code here (else as an ElementwiseKernel, which writes
    a dense out[i]: the fill family writes the output buffer through its layout)."""
    return not op.spec.elementwise or op.out_mode == "buffer"


def structured_supported(op: Op) -> str:
    """'' when the CuPy reference has this array-code op, else why not."""
    if op.family in ARRAY_FAMILIES:
        return ""
    return f"{op.name} is not in the CuPy reference (its array-code families: {', '.join(ARRAY_FAMILIES)})"


# ------------------------------------------------------------------- bits <-> float64
def widen(xp: Any, raw: Any, t: str) -> Any:
    """Storage values of dtype t as float64 (exact; integers and f64 unchanged)."""
    if t not in FORMATS:
        return raw
    m, e, bits = FORMATS[t]
    u = raw.view(bits).astype(xp.int64)
    emask, bias = (1 << e) - 1, (1 << (e - 1)) - 1
    mant, ex = u & ((1 << m) - 1), (u >> m) & emask
    sig = xp.where(ex == 0, mant, mant | (1 << m)).astype(xp.float64)
    mag = xp.ldexp(sig, (xp.maximum(ex, 1) - bias - m).astype(xp.int32))
    if t == "f8_e4m3":                                                # no inf, one NaN mantissa
        mag = xp.where((ex == emask) & (mant == (1 << m) - 1), xp.nan, mag)
    else:
        mag = xp.where(ex == emask, xp.where(mant == 0, xp.inf, xp.nan), mag)
    return xp.where(((u >> (m + e)) & 1) == 1, -mag, mag)


def narrow(xp: Any, x: Any, t: str) -> Any:
    """float64 x rounded once (RNE, overflow to ±inf; fp8 saturates to ±448) to dtype t, as t's
    storage array."""
    if t not in FORMATS:
        return x
    m, e, bits = FORMATS[t]
    emin = 2 - (1 << (e - 1))
    a = xp.abs(x)
    finite = xp.isfinite(a)
    a = xp.where(finite, a, 0.0)
    ex = xp.maximum(xp.frexp(a)[1].astype(xp.int64) - 1, emin)     # exponent, subnormals at emin
    ex = xp.where(a == 0, emin, ex)                                   # frexp(0) gives exponent 0
    r = xp.rint(xp.ldexp(a, (m - ex).astype(xp.int32))).astype(xp.int64)
    # ((ex - emin) << m) + r encodes normals, subnormals and a carry into the next binade alike
    top = FP8_MAX_BITS if t == "f8_e4m3" else ((1 << e) - 1) << m      # satfinite / inf
    u = xp.where(finite, xp.minimum(((ex - emin) << m) + r, top), top)
    u = xp.where(xp.signbit(x), u | (1 << (m + e)), u)
    u = xp.where(xp.isnan(x), (1 << (m + e)) - 1, u).astype(bits)
    return u.view(xp.float32) if t == "f32" else u


def round_trip(xp: Any, x: Any, t: str) -> Any:
    """float64 x rounded to t and widened back: one step of T arithmetic."""
    return widen(xp, narrow(xp, x, t), t)


# ------------------------------------------------------------------------- launch access
def _args(launch: Launch) -> dict:
    return {a.name: a for a in launch.args}


def _ptr(bufs: dict, arg) -> Any:
    """The buffer behind a pointer argument, from its element offset (None for a null pointer)."""
    if arg.value is None:
        return None
    name, off = arg.value
    return bufs[name][int(off):]


def _info(arg) -> list[int]:
    return [int(v) for v in arg.value]


def strided_index(xp: Any, i: Any, dims: list[int], strides: list[int]) -> Any:
    """Element offsets of logical indices i in a [dims, strides] view (the kernels' get_strided_index)."""
    off, rem = xp.zeros_like(i), i
    for n, st in zip(reversed(dims), reversed(strides)):
        off, rem = off + (rem % n) * st, rem // n
    return off


def gather_view(xp: Any, buf: Any, dims: list[int], strides: list[int]) -> Any:
    """The logical tensor of a [dims, strides] view of buf (any strides, 0 included)."""
    idx = xp.zeros((1,) * len(dims), dtype=xp.int64)
    for k, (n, st) in enumerate(zip(dims, strides)):
        shape = [1] * len(dims)
        shape[k] = n
        idx = idx + (xp.arange(n, dtype=xp.int64) * st).reshape(shape)
    return buf[idx]


def host_scalar(value: float, t: str) -> np.ndarray:
    """A by-value T parameter as Candle's host makes it (`T::from_f64`): floats round to nearest
    (the float8 crate has no saturation: beyond 464 is NaN), integers truncate and saturate."""
    if t in FORMATS or t == "f64":
        bits = narrow(np, np.array([value], dtype=np.float64), t)
        if t == "f8_e4m3" and not abs(value) <= 464.0:
            bits[:] = 0x7F
        return bits
    info = np.iinfo(np.dtype(STORAGE[t]))
    v = 0 if value != value else info.max if value >= info.max else info.min if value <= info.min else int(value)
    return np.array([v], dtype=STORAGE[t])


# ---------------------------------------------------------------------------- reduce
def arg_tree(xp: Any, kind: Reduction, v: Any, block: int) -> Any:
    """Row index each row's block returns (fast_argmin/argmax): thread t keeps its first element
    t, then strict improvements over t+B, t+2B, ...; the shared-memory tree takes the partner
    only when strictly better. This decides ties (and NaN, which wins only from thread 0's first
    element), so it is followed step by step, vectorised over rows; v: (rows, el)."""
    rows, el = v.shape
    better = xp.greater if kind.largest else xp.less
    if v.dtype.kind == "f":
        ident = -np.inf if kind.largest else np.inf
    else:
        info = np.iinfo(v.dtype)
        ident = info.min if kind.largest else info.max
    k = -(-el // block)
    padded = xp.full((rows, k * block), ident, dtype=v.dtype)
    padded[:, :el] = v
    lane = xp.arange(block, dtype=xp.int64)
    cur = xp.full((rows, block), ident, dtype=v.dtype)
    idx = xp.full((rows, block), 0xFFFFFFFF, dtype=xp.int64)
    is_set = xp.zeros((rows, block), dtype=bool)
    for j in range(k):
        c = padded[:, j * block:(j + 1) * block]
        valid = (j * block + lane < el)[None, :]
        take = valid & (~is_set | better(c, cur))
        cur = xp.where(take, c, cur)
        idx = xp.where(take, j * block + lane, idx)
        is_set = is_set | valid
    s = block // 2
    while s:
        take = better(cur[:, s:2 * s], cur[:, :s])
        cur[:, :s] = xp.where(take, cur[:, s:2 * s], cur[:, :s])
        idx[:, :s] = xp.where(take, idx[:, s:2 * s], idx[:, :s])
        s //= 2
    return idx[:, 0]


def atomic_sum_launch(xp: Any, launch: Launch, key: str, bufs: dict) -> None:
    """sum_T (reduce.cu's atomic SUM_OP): element i adds into out[(i / s / l) * s + i % s] folded over
    each summed dim (l, s); float sums in float64 rounded once (any order is within the judge's
    bound), u32 wrapping."""
    a = _args(launch)
    numel, nd, ns = (int(a[k].value) for k in ("numel", "num_dims", "num_sum_dims"))
    info = [int(v) for v in a["info"].value]
    dims, strides = info[:nd], info[nd:2 * nd]
    lens, steps = info[2 * nd:2 * nd + ns], info[2 * nd + ns:2 * nd + 2 * ns]
    inp, out = _ptr(bufs, a["inp"]), _ptr(bufs, a["out"])
    i = xp.arange(numel, dtype=xp.int64)
    dst = i
    for l, st in zip(lens, steps):
        dst = (dst // st // l) * st + dst % st
    src = inp[strided_index(xp, i, dims, strides)] if numel else inp[:0]
    v = widen(xp, src, key).astype(xp.float64)
    total = xp.bincount(dst, weights=v, minlength=out.size)[:out.size] if numel else xp.zeros(out.size)
    base = widen(xp, out, key).astype(xp.float64)             # the host zeroed it; the kernel only adds
    if key == "u32":
        out[:] = ((base + total) % 2 ** 32).astype(out.dtype)
    else:
        out[:] = narrow(xp, base + total, key)


def reduce_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """fast_{sum,min,max,argmin,argmax}_T: rows are el_to_sum_per_block consecutive elements of
    the source walked through info's permuted dims/strides; one row per block (grid x)."""
    if "num_sum_dims" in _args(launch):
        atomic_sum_launch(xp, launch, key, bufs)
        return
    a = _args(launch)
    kind: Reduction = op.spec.variant
    el, nd = int(a["el_to_sum_per_block"].value), int(a["num_dims"].value)
    info = [int(v) for v in a["info"].value]
    src, dst = _ptr(bufs, a["src"]), _ptr(bufs, a["dst"])
    n_rows = int(launch.grid[0])                 # the kernel's output index is blockIdx.x
    item = src.dtype.itemsize
    view = xp.lib.stride_tricks.as_strided(src, shape=tuple(info[:nd]),
                                           strides=tuple(s * item for s in info[nd:2 * nd]))
    rows = view.reshape(n_rows, el)
    v = widen(xp, rows, key)
    if not kind.extreme:
        out = narrow(xp, v.sum(axis=1), key) if v.dtype.kind == "f" else \
            xp.sum(rows, axis=1, dtype=rows.dtype)              # integers accumulate in T: wrap
    elif not kind.index:
        pick = (lambda x: x.max(axis=1)) if kind.largest else (lambda x: x.min(axis=1))
        if v.dtype.kind != "f":
            out = pick(v)
        elif key in NAN_IGNORING:
            out = narrow(xp, pick(xp.where(xp.isnan(v), -np.inf if kind.largest else np.inf, v)), key)
        else:
            out = narrow(xp, xp.where(xp.isnan(v).any(axis=1), np.nan, pick(v)), key)
    else:
        out = ((xp.arange(n_rows, dtype=xp.int64) * el + arg_tree(xp, kind, v, int(launch.block[0])))
               % info[nd - 1]).astype(xp.uint32)
    dst[:n_rows] = out


# ------------------------------------------------------------------------------ nn rows
def softmax_rows(xp: Any, x: Any, t: str) -> Any:
    """max, e = exp(x - max), e / sum; f16/bf16 round x-max, e and 1/sum to T and multiply in T."""
    m = x.max(axis=-1, keepdims=True)
    if t in ("f16", "bf16"):
        e = round_trip(xp, xp.exp(round_trip(xp, x - m, t)), t)
        return e * round_trip(xp, 1.0 / e.sum(axis=-1, keepdims=True), t)
    e = xp.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def norm_rows(xp: Any, centred: bool, x: Any, alpha: Any, beta: Any, eps: float) -> Any:
    """rmsnorm / layernorm (centred) in float (f64 inputs are read as float), result rounded to float."""
    xf = round_trip(xp, x, "f32")
    eps = float(np.float32(eps))
    if centred:                                  # one pass: var = E[x^2] - mean^2
        mean = xf.mean(axis=-1, keepdims=True)
        y = (xf - mean) / xp.sqrt((xf * xf).mean(axis=-1, keepdims=True) - mean * mean + eps)
    else:
        y = xf / xp.sqrt((xf * xf).mean(axis=-1, keepdims=True) + eps)
    if alpha is not None:
        y = y * alpha
    if beta is not None:
        y = y + beta
    return round_trip(xp, y, "f32")


def nn_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """softmax_T / rmsnorm_T / layernorm_T: grid x rows of n_cols contiguous elements."""
    kern: NnKernel = op.spec.variant
    if kern.rotary:
        return rope_launch(xp, launch, kern, key, bufs)
    a = _args(launch)
    rows, n = int(launch.grid[0]), int(a["n_cols"].value)

    def operand(name: str, count: int):
        p = _ptr(bufs, a[name]) if name in a else None
        return None if p is None else widen(xp, p[:count], key)
    x = operand("src", rows * n).reshape(rows, n)
    if kern.norm:
        y = norm_rows(xp, kern.centred, x, operand("alpha", n), operand("beta", n), float(a["eps"].value))
    else:
        y = softmax_rows(xp, x, key)
    _ptr(bufs, a["dst"])[:rows * n] = narrow(xp, y, key).reshape(-1)


def table_offset(xp: Any, idx: Any, stride_b: int, half: int) -> Any:
    """rope's per-batch cos/sin: + (2*idx / stride_b) * half when stride_b > 0 (3-D tables)."""
    return (2 * idx) // stride_b * half if stride_b > 0 else 0


def rope_launch(xp: Any, launch: Launch, kern: NnKernel, key: str, bufs: dict) -> None:
    """rope_i_T / rope_T / rope_thd_T: one thread per pair idx < el/2 with the kernels' index
    arithmetic; x1*c - x2*s and x1*s + x2*c rounded once to T."""
    a = _args(launch)
    u = {n: int(x.value) for n, x in a.items() if x.kind == "u32"}
    src, cos, sin, dst = (_ptr(bufs, a[n]) for n in ("src", "cos", "sin", "dst"))
    if kern.thd:
        d2 = u["d"] // 2
        half = u["t"] * d2
        idx = xp.arange(u["b"] * u["t"] * u["h"] * d2, dtype=xp.int64)
        bth, i_d = idx // d2, idx % d2
        i1 = bth * u["d"] + i_d
        i2, cs = i1 + d2, (bth // u["h"]) % u["t"] * d2 + i_d
    else:
        half = u["td"] // 2
        idx = xp.arange(u["bh"] * half, dtype=xp.int64)
        if kern.interleaved:
            i1, i2, cs = 2 * idx, 2 * idx + 1, idx % half
        else:                                    # halves of each d-row; cs = i_t*(d/2) + i_d
            d2 = u["d"] // 2
            bh, cs = idx // half, idx % half
            i1 = bh * u["td"] + (cs // d2) * u["d"] + cs % d2
            i2 = i1 + d2
    cs = cs + table_offset(xp, idx, u["stride_b"], half)
    x1, x2, c, s = (widen(xp, arr[i], key) for arr, i in ((src, i1), (src, i2), (cos, cs), (sin, cs)))
    dst[i1] = narrow(xp, x1 * c - x2 * s, key)
    dst[i2] = narrow(xp, x1 * s + x2 * c, key)


# ----------------------------------------------------------------------------- indexing
def is_sentinel(xp: Any, ids: Any) -> Any:
    """ids equal to max_value<I>() (255 for u8 ids): is/gather write 0, ia/sa/s skip. (CUDA's fp8
    ia/sa do not check it; their cases keep ids in range, so checking it everywhere is the same.)"""
    return ids == np.iinfo(ids.dtype).max


def add_in_t(xp: Any, a: Any, b: Any, t: str) -> Any:
    """a + b in T, storage in and out: floats rounded once (fp8 through float, satfinite), integers wrap."""
    if t in FORMATS or t == "f64":
        return narrow(xp, widen(xp, a, t) + widen(xp, b, t), t)
    return a + b


def scatter_loop(xp: Any, kern: IndexKernel, ids: Any, inp: Any, out: Any, pre: Any, post: Any, n_j: int,
                 dst_dim: int, right: int, t: str) -> None:
    """ia/sa/s: each (left, right) thread loops j serially. Vectorised over the threads, j by j:
    within one j the threads write distinct elements, so duplicate ids accumulate across j (sa,
    ia) or the last j wins (s), as in the kernel."""
    for j in range(n_j):
        src_i = (pre * n_j + j) * right + post
        idv = ids[xp.full(pre.shape, j, dtype=xp.int64)] if kern.per_slice else ids[src_i]
        live = ~is_sentinel(xp, idv)
        dst_i = (pre * dst_dim + xp.where(live, idv, 0).astype(xp.int64)) * right + post
        new = add_in_t(xp, out[dst_i], inp[src_i], t) if kern.accumulate else inp[src_i]
        out[dst_i] = xp.where(live, new, out[dst_i])     # a skipped thread rewrites its own old value


def index_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """is/gather: one thread per output element; ia/sa/s: one per (left, right), j serial."""
    a = _args(launch)
    kern: IndexKernel = op.spec.variant
    v = lambda n: int(a[n].value)
    t = key.split("-")[1]
    ids, inp, out = (_ptr(bufs, a[n]) for n in ("ids", "inp", "out"))
    right = v("right")
    if not kern.scatter:
        numel, ids_dim, src_dim = v("numel"), v("ids_dim"), v("src_dim")
        i = xp.arange(numel, dtype=xp.int64)
        idv = ids[(i // right) % ids_dim] if kern.per_slice else ids[:numel]
        skip = is_sentinel(xp, idv)
        src_i = (i // (ids_dim * right) * src_dim + xp.where(skip, 0, idv).astype(xp.int64)) * right + i % right
        if "info" in a:                          # is_I_T: info, the ids' dims/strides; non-contiguous ids
            nd = v("num_dims")                   # re-stride the source index through them
            info = _info(a["info"])
            dims, strides = info[:nd], info[nd:2 * nd]
            acc, contig = 1, True
            for n, st in zip(reversed(dims), reversed(strides)):
                contig, acc = contig and (n <= 1 or st == acc), acc * n
            if not contig:
                src_i = strided_index(xp, src_i, dims, strides)
        out[:numel] = xp.where(skip, xp.zeros((), dtype=out.dtype), inp[src_i])
        return
    i = xp.arange(v("left") * right, dtype=xp.int64)
    n_j = v("ids_dim") if kern.per_slice else v("src_dim")
    scatter_loop(xp, kern, ids, inp, out, i // right, i % right, n_j, v("dst_dim"), right, t)


# --------------------------------------------------------------------------------- fill
def fill_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """const_set_T: out[strided i] = value for i < numel (info null: contiguous); fill_T:
    buf[0..numel) = value; copy2d_T: dst[r*dst_s + c] = src[r*src_s + c], one thread per element.
    Their parameter lists tell them apart (the family's ops have elementwise specs, no variant)."""
    a = _args(launch)
    out = _ptr(bufs, a["out"])
    if "src" in a:                               # copy2d_T: the one with a source
        d1, d2, ss, ds = (int(a[n].value) for n in ("d1", "d2", "src_s", "dst_s"))
        i = xp.arange(d1 * d2, dtype=xp.int64)
        r, c = (i // d2, i % d2) if d2 else (i, i)
        out[r * ds + c] = _ptr(bufs, a["src"])[r * ss + c]
        return
    value = host_scalar(float(a["value"].value), key)[0]
    n, info = int(a["numel"].value), a.get("info")
    if info is None or info.value is None:       # fill_T has no info; const_set_T's is null if contiguous
        out[:n] = value
        return
    nd, info = int(a["num_dims"].value), _info(info)
    out[strided_index(xp, xp.arange(n, dtype=xp.int64), info[:nd], info[nd:2 * nd])] = value


# ------------------------------------------------------------------------------ argsort
def sort_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """asort_{asc,desc}_T: u32 argsort of grid x rows of ncols contiguous elements (the kernel
    is unstable; the judge accepts any order among equal values)."""
    a = _args(launch)
    rows, ncols = int(launch.grid[0]), int(a["ncols"].value)
    v = widen(xp, _ptr(bufs, a["x"])[:rows * ncols].reshape(rows, ncols), key)
    order = xp.argsort(v, axis=1)
    if op.spec.variant.descending:
        order = order[:, ::-1]
    _ptr(bufs, a["dst"])[:rows * ncols] = order.astype(xp.uint32).reshape(-1)


FAMILY_RUNNERS = {"reduce": reduce_launch, "nn": nn_launch, "sort": sort_launch, "indexing": index_launch,
                  "fill": fill_launch}
