"""The `cupy` level's structured families: reduce (fast_sum/min/max/argmin/argmax), candle-nn
softmax/rmsnorm/layernorm and argsort (asort_asc/desc), every dtype each op declares.

Each family reads the Launch exactly as its kernel does (the permuted `info` and
el_to_sum_per_block of a reduction, grid = rows, n_cols / ncols, pointer offsets, nullable alpha
and beta) and writes the output buffer; the structured judge of the op decides. Written against
an array module `xp` with API common to CuPy and NumPy only: cupy on the GPU, numpy in tests.

Floats are decoded from their storage bits (f16/bf16 as uint16, f32 bits as uint32) to float64
with integer operations and ldexp, computed in float64, and encoded back with round-to-nearest-
even by frexp/rint/ldexp and integer operations (NaN -> 0x7fff / 0x7fffffff, like CUDA's
conversions). CuPy builds its own kernels with -ftz=true, which flushes f32 subnormals in f32
arithmetic and f32<->f64 conversions; float64 and integer arithmetic are never flushed, so these
families need no subnormal self-check. Rounding points follow the declared semantics (f16/bf16
softmax rounds every step to T; the norms compute in float), sums are one float64 sum rounded
once (the judge allows for the kernel's order), integer sums wrap in T.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.base import Launch, Op

# storage formats decoded/encoded here: (mantissa bits, exponent bits, bits dtype)
FORMATS = {"f16": (10, 5, "uint16"), "bf16": (7, 8, "uint16"), "f32": (23, 8, "uint32")}
NN_ROOTS = ("softmax", "rmsnorm", "layernorm")
NAN_IGNORING = ("f32", "f64")       # fmaxf/fminf (init ∓inf); f16/bf16 __hmax_nan propagate NaN
COVERED = "reduce (sum/min/max/argmin/argmax), softmax, rmsnorm, layernorm and argsort"


def structured_supported(op: Op) -> str:
    """'' when the CuPy reference has this structured op, else why not."""
    if op.family in ("reduce", "sort") or (op.family == "nn" and op.root in NN_ROOTS):
        return ""
    return f"{op.name} is not in the CuPy reference (its structured families: {COVERED})"


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
    mag = xp.where(ex == emask, xp.where(mant == 0, xp.inf, xp.nan), mag)
    return xp.where(((u >> (m + e)) & 1) == 1, -mag, mag)


def narrow(xp: Any, x: Any, t: str) -> Any:
    """float64 x rounded once (RNE, overflow to ±inf) to dtype t, as t's storage array."""
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
    inf = ((1 << e) - 1) << m
    u = xp.where(finite, xp.minimum(((ex - emin) << m) + r, inf), inf)
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


# ---------------------------------------------------------------------------- reduce
def arg_tree(xp: Any, kind: str, v: Any, block: int) -> Any:
    """Row index each row's block returns (fast_argmin/argmax): thread t keeps its first element
    t, then strict improvements over t+B, t+2B, ...; the shared-memory tree takes the partner
    only when strictly better. This decides ties (and NaN, which wins only from thread 0's first
    element), so it is followed step by step, vectorised over rows; v: (rows, el)."""
    rows, el = v.shape
    better = xp.greater if kind == "argmax" else xp.less
    if v.dtype.kind == "f":
        ident = -np.inf if kind == "argmax" else np.inf
    else:
        info = np.iinfo(v.dtype)
        ident = info.min if kind == "argmax" else info.max
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


def reduce_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """fast_{sum,min,max,argmin,argmax}_T: rows are el_to_sum_per_block consecutive elements of
    the source walked through info's permuted dims/strides; one row per block (grid x)."""
    a = _args(launch)
    kind = op.root[len("fast_"):]
    el, nd = int(a["el_to_sum_per_block"].value), int(a["num_dims"].value)
    info = [int(v) for v in a["info"].value]
    src, dst = _ptr(bufs, a["src"]), _ptr(bufs, a["dst"])
    n_rows = int(launch.grid[0])                 # the kernel's output index is blockIdx.x
    item = src.dtype.itemsize
    view = xp.lib.stride_tricks.as_strided(src, shape=tuple(info[:nd]),
                                           strides=tuple(s * item for s in info[nd:2 * nd]))
    rows = view.reshape(n_rows, el)
    v = widen(xp, rows, key)
    if kind == "sum":
        out = narrow(xp, v.sum(axis=1), key) if v.dtype.kind == "f" else \
            xp.sum(rows, axis=1, dtype=rows.dtype)              # integers accumulate in T: wrap
    elif kind in ("min", "max"):
        pick = (lambda x: x.max(axis=1)) if kind == "max" else (lambda x: x.min(axis=1))
        if v.dtype.kind != "f":
            out = pick(v)
        elif key in NAN_IGNORING:
            out = narrow(xp, pick(xp.where(xp.isnan(v), -np.inf if kind == "max" else np.inf, v)), key)
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


def norm_rows(xp: Any, root: str, x: Any, alpha: Any, beta: Any, eps: float) -> Any:
    """rmsnorm / layernorm in float (f64 inputs are read as float), result rounded to float."""
    xf = round_trip(xp, x, "f32")
    eps = float(np.float32(eps))
    if root == "rmsnorm":
        y = xf / xp.sqrt((xf * xf).mean(axis=-1, keepdims=True) + eps)
    else:                                        # one pass: var = E[x^2] - mean^2
        mean = xf.mean(axis=-1, keepdims=True)
        y = (xf - mean) / xp.sqrt((xf * xf).mean(axis=-1, keepdims=True) - mean * mean + eps)
    if alpha is not None:
        y = y * alpha
    if beta is not None:
        y = y + beta
    return round_trip(xp, y, "f32")


def nn_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """softmax_T / rmsnorm_T / layernorm_T: grid x rows of n_cols contiguous elements."""
    a = _args(launch)
    rows, n = int(launch.grid[0]), int(a["n_cols"].value)

    def operand(name: str, count: int):
        p = _ptr(bufs, a[name]) if name in a else None
        return None if p is None else widen(xp, p[:count], key)
    x = operand("src", rows * n).reshape(rows, n)
    if op.root == "softmax":
        y = softmax_rows(xp, x, key)
    else:
        y = norm_rows(xp, op.root, x, operand("alpha", n), operand("beta", n), float(a["eps"].value))
    _ptr(bufs, a["dst"])[:rows * n] = narrow(xp, y, key).reshape(-1)


# ------------------------------------------------------------------------------ argsort
def sort_launch(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """asort_{asc,desc}_T: u32 argsort of grid x rows of ncols contiguous elements (the kernel
    is unstable; the judge accepts any order among equal values)."""
    a = _args(launch)
    rows, ncols = int(launch.grid[0]), int(a["ncols"].value)
    v = widen(xp, _ptr(bufs, a["x"])[:rows * ncols].reshape(rows, ncols), key)
    order = xp.argsort(v, axis=1)
    if op.root.endswith("desc"):
        order = order[:, ::-1]
    _ptr(bufs, a["dst"])[:rows * ncols] = order.astype(xp.uint32).reshape(-1)


FAMILY_RUNNERS = {"reduce": reduce_launch, "nn": nn_launch, "sort": sort_launch}


def execute(xp: Any, launch: Launch, op: Op, key: str, bufs: dict) -> None:
    """Run a structured launch with array module xp; bufs: buffer name -> 1-D storage array
    (uint16 for f16/bf16), written in place."""
    with np.errstate(all="ignore"):
        FAMILY_RUNNERS[op.family](xp, launch, op, key, bufs)
