"""Candle's atomic sum kernels `sum_<f32|f64|f16|bf16|u32>` (reduce.cu `SUM_OP`).

    (size_t numel, size_t num_dims, size_t num_sum_dims, const size_t* info, const T* inp, T* out)

info = [dims, strides, sum_dims_l, sum_dims_s] of the *source* layout (not permuted): the source's
dims and strides, then for each reduced dim d in ascending order its length dims[d] and the product
of the source dims after it. Thread i (grid-stride over numel) maps the logical index i to its
output index (for each reduced dim: (i / s / l) * s + i % s) and does atomicAdd(out + dst, inp[src]),
src = i on the contiguous path or get_strided_index(i) otherwise.

Host launch: Candle's Rust side no longer issues it (its `reduce_op` is `FastReduce`, the fast_*
kernels); the kernels are still compiled in reduce.cu. The launch is the one Candle's
`cuda_backend.rs` issued until the fast_* kernels replaced it (commit d7f729fb8, `ReduceSum`):
sum_dims sorted ascending, `LaunchConfig::for_num_elems(numel)` (block 1024, grid ceil(numel/1024)),
out = `alloc_zeros(dst_el)` (the kernel only adds), info as above (never null). An empty source
(numel 0) is launched with one block here (cudarc would be asked for a zero-block grid): the
kernel adds nothing and the zeroed output stays 0.

Reference and tolerance: the float64 sum of each output's elements. The atomics add in T in an
unspecified order, so the bound is the deterministic one for recursive summation in any order,
|got - S| <= (n-1) u sum|x| + u |S| (Higham 4.3: gamma_{n-1} <= 1.01 (n-1) u for (n-1) u < 0.01,
u = 2^-(mantissa bits + 1) of T; the 1.01 is taken as 1.01), n the elements per output. Exact
when the reference rounds exactly (same value, NaN to NaN); an infinite or NaN reference must be
matched exactly (NaN, or the same infinity: inf + finite is inf in every order, inf - inf NaN).
u32 wraps mod 2^32 in every order: exact.
"""
from __future__ import annotations

import math

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import view
from parity.core.numerics import round_float, to_f64
from parity.ops.base import Arg, Launch, Op, StructuredSpec, for_num_elems
from parity.ops.reduce import reduce_shape
from parity.ops.structured import StructuredBuilt, make_input, mask_judge, same_value

DTYPES = ("f32", "f64", "f16", "bf16", "u32")
ABI = ("numel", "num_dims", "num_sum_dims:size_t", "info", "inp", "out")


SHAPES = {s.name: s for s in [
    reduce_shape("row100", "(37,100) over dim 1: 37 outputs, 100 atomics each, within 4 blocks", (37, 100), (1,)),
    reduce_shape("dim0", "(65,37) over dim 0: outputs interleaved (consecutive threads hit different outputs)", (65, 37), (0,)),
    reduce_shape("all", "(3,700) over dims (1,0) given out of order: one output, 2100 atomics from 3 blocks", (3, 700), (1, 0)),
    reduce_shape("multi", "(4,6,5) over dims (2,0): the host sorts them, kept dim 1 in the middle", (4, 6, 5), (2, 0)),
    reduce_shape("transposed", "(33,47) t() view over dim 1: the strided path", (33, 47), (1,), "transposed"),
    reduce_shape("narrowed", "(5,6,7) narrowed view (start offset) over dim 1", (5, 6, 7), (1,), "narrowed"),
    reduce_shape("perm", "(5,6,7) permuted view over dims (0,2)", (5, 6, 7), (0, 2), "perm"),
    reduce_shape("big", "(3,5000) over dim 1: 15 blocks add into 3 outputs", (3, 5000), (1,)),
    reduce_shape("empty", "(3,0) over dim 1: nothing to add, the zeroed output stays 0", (3, 0), (1,)),
]}


def _geo(shape, red, strides) -> dict:
    sd = sorted(red)
    return {"dims": list(shape), "strides": list(strides), "sum_l": [shape[d] for d in sd],
            "sum_s": [math.prod(shape[d + 1:]) for d in sd], "sum_dims": sd,
            "numel": math.prod(shape), "dst_el": math.prod(shape[d] for d in range(len(shape)) if d not in red)}


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    dt = dtype(case.dtype)
    sc = SHAPES[case.layout].geo
    shape, red = sc["shape"], sc["dims"]
    lay = view(sc["view"], shape)
    base, logi = make_input(dt, lay, case.values, rng)
    g = _geo(shape, red, lay.strides)
    keep = tuple(1 if d in red else n for d, n in enumerate(shape))      # Candle's keepdim shape
    return StructuredBuilt(case, op, case.dtype, {"inp": dt}, {"inp": lay}, {"inp": base}, {"inp": logi}, g,
                           out_name="out", out_dtype=dt, out_shape=keep,
                           out_init=np.zeros(g["dst_el"], dtype=dt.np))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    info = np.array(g["dims"] + g["strides"] + g["sum_l"] + g["sum_s"], dtype=np.uint64)
    args = [Arg("size_t", g["numel"], name="numel"), Arg("size_t", len(g["dims"]), name="num_dims"),
            Arg("size_t", len(g["sum_l"]), name="num_sum_dims"), Arg("info", info, name="info"),
            Arg("ptr", ("inp", b.layouts["inp"].offset), name="inp"), Arg("ptr", ("out", 0), name="out")]
    return Launch(b.op.kernel_name(b.key), args, {"inp": b.bases["inp"], "out": b.out_init.copy()}, ("out",),
                  grid=for_num_elems(g["numel"]), block=(1024, 1, 1),
                  dtypes={"inp": b.key, "out": b.key})


def _per_output(b: StructuredBuilt) -> np.ndarray:
    """(dst_el, n) the elements each output sums, in logical order."""
    x = b.inputs["inp"]
    red = b.geo["sum_dims"]
    kept = [d for d in range(x.ndim) if d not in red]
    return np.transpose(x, kept + red).reshape(b.geo["dst_el"], -1)


def _expected(b: StructuredBuilt) -> np.ndarray:
    dt = b.dtypes["inp"]
    rows = _per_output(b)
    if not dt.is_float:
        out = np.sum(rows.astype(np.uint64), axis=1).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        return out.astype(dt.np).reshape(b.out_shape)
    return round_float(np.sum(to_f64(rows), axis=1), dt).reshape(b.out_shape)


def bound(rows64: np.ndarray, dt) -> np.ndarray:
    """(n-1) u sum|x| * 1.01 + u |S| per output (module doc)."""
    u = 2.0 ** -(dt.mant_bits + 1)
    n = rows64.shape[1]
    with np.errstate(all="ignore"):
        mag = np.sum(np.abs(rows64), axis=1)
        return 1.01 * max(n - 1, 0) * u * mag + u * np.abs(np.sum(rows64, axis=1))


def _judge(expected, got, b: StructuredBuilt):
    dt = b.dtypes["inp"]
    rows = _per_output(b)
    e, gt = expected.reshape(-1), got.reshape(-1)
    shown = lambda i, coords: {"sums": f"{rows.shape[1]} elements"}
    if not dt.is_float:
        return mask_judge(expected, got, dt, (gt == e).reshape(expected.shape), shown)
    r64 = to_f64(rows)
    with np.errstate(all="ignore"):
        exact = np.sum(r64, axis=1)
        g64 = to_f64(gt)
        ok = same_value(gt, e) | (np.isfinite(exact) & np.isfinite(g64) & (np.abs(g64 - exact) <= bound(r64, dt)))
    return mask_judge(expected, got, dt, ok.reshape(expected.shape), shown)


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """The kernel's index arithmetic, the atomics applied in thread order (adds in T)."""
    a = {x.name: x for x in launch.args}
    dt = dtype(key)
    numel, nd, ns = (int(a[n].value) for n in ("numel", "num_dims", "num_sum_dims"))
    info = np.asarray(a["info"].value, dtype=np.int64)
    dims, strides = info[:nd], info[nd:2 * nd]
    sl, ss = info[2 * nd:2 * nd + ns], info[2 * nd + ns:2 * nd + 2 * ns]
    sname, soff = a["inp"].value
    src = bufs[sname][ex.pointer_offset(soff):]
    dname, doff = a["out"].value
    dst = bufs[dname][ex.pointer_offset(doff):]
    i = np.arange(numel, dtype=np.int64)
    contiguous = all(strides[d] == math.prod(dims[d + 1:]) for d in range(nd) if dims[d] > 1)
    if contiguous:
        off = i
    else:
        off, rem = np.zeros(numel, dtype=np.int64), i.copy()
        for d in reversed(range(nd)):
            off += (rem % dims[d]) * strides[d]
            rem //= dims[d]
    di = i.copy()
    for k in range(ns):
        di = (di // ss[k] // sl[k]) * ss[k] + di % ss[k]
    vals = src[off]
    with np.errstate(all="ignore"):
        if dt.name in ("f16", "bf16"):
            acc = dst[: int(di.max()) + 1 if numel else 0].astype(np.float32)
            for j, v in zip(di.tolist(), vals.astype(np.float32).tolist()):
                acc[j] = np.float32(np.float32(acc[j] + np.float32(v)).astype(dt.np))
            dst[: acc.size] = acc.astype(dt.np)
        else:
            np.add.at(dst, di, vals)


_SEM = ("out[dst(i)] += inp[i] by atomicAdd (f16/bf16 add in T); dst(i) drops the reduced dims "
        "(sorted ascending) from the logical index; out zeroed by the host; order unspecified")
_TOL = {k: (("exact (wraps mod 2^32 in any order)") if k == "u32" else
            f"|err| <= 1.01 (n-1) 2^-{dtype(k).mant_bits + 1} sum|x| + 1/2 ulp vs the float64 sum "
            "(recursive summation in T, any order); NaN/inf exact") for k in DTYPES}

OPS = [Op(name="reduce.sum_atomic", family="reduce", root="sum", dtypes=DTYPES, inputs=("inp",),
          value_classes=("normal", "special", "ties", "positive"), value_dtypes=(("positive", ("f16", "bf16")),),
          abi=ABI,
          info_always=True, semantics=_SEM,
          divergences=("not launched by Candle's current Rust host (FastReduce replaced it); launch "
                       "as Candle issued it before (ReduceSum)",
                       "Candle CPU sums sequentially in T: f16/bf16 results differ by rounding order"),
          spec=StructuredSpec(shapes=SHAPES, build=_build, pack=_pack, expected=_expected, judge=_judge,
                              emulate=_emulate, tolerance=lambda key: _TOL[key]))]
