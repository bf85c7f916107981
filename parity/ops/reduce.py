"""Reductions: fast_{sum,min,max}_T and fast_arg{min,max}_T (u32 out).

    (size_t src_numel, size_t el_to_sum_per_block, size_t num_dims, const size_t* info,
     const T* src, T* dst /* uint32_t* for arg* */)

Host preparation (Candle `FastReduce`): kept dims first in order, reduced dims last in the
given order; dst_el = prod(kept); el_to_sum_per_block = src_el / dst_el; grid (dst_el,1,1);
block min(1024, el_per_block).next_power_of_two(); info = [permuted dims, permuted strides],
never null; num_dims = the source rank. arg* return `idx % dims[last]`. min/max/arg* on an
empty tensor: the host raises EmptyTensor (expected error, nothing launched).
"""
from __future__ import annotations

import math
from enum import Enum

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import view
from parity.core.numerics import round_float, to_f64
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.structured import StructuredBuilt, make_input, mask_judge, next_pow2, out_buffer, same_value

DTYPES = ("u8", "u32", "i64", "f32", "f64", "f16", "bf16")
ABI = ("src_numel:size_t", "el_to_sum_per_block:size_t", "num_dims", "info", "src", "dst")


def reduce_shape(name: str, doc: str, shape: tuple, dims: tuple, kind: str = "contig") -> ShapeClass:
    """A reduction's shape class: the source shape, the reduced dims and the view (contig, transposed, ...)."""
    return ShapeClass(name, doc, {"shape": shape, "dims": dims, "view": kind})


SHAPES = {s.name: s for s in [
    reduce_shape("row100", "(37,100) over dim 1: rows shorter than one block (block 128)", (37, 100), (1,)),
    reduce_shape("row1900", "(3,1900) over dim 1: rows longer than one block (block 1024)", (3, 1900), (1,)),
    reduce_shape("row4000", "(2,4000) over dim 1: ~4 elements per thread", (2, 4000), (1,)),
    # power-of-two rows in an odd count, where ports take their fast paths (one element, or one
    # 16-byte pack, a thread) and group rows by blocks
    reduce_shape("row1024", "(5,1024) over dim 1: one element per thread of a 1024-thread block", (5, 1024), (1,)),
    reduce_shape("row4096", "(5,4096) over dim 1: 4 elements per thread, 16-byte aligned; a port that deals rows "
        "to groups puts row 4 in a second working block, away from rows 0 and 1's NaN", (5, 4096), (1,)),
    reduce_shape("row9000", "(2,9000) over dim 1: > 8 elements per thread, so the contiguous path's 8-load groups run "
        "(values and indices folded from all 8 loads)", (2, 9000), (1,)),
    reduce_shape("dim0", "(65,37) over dim 0: strided rows (the permutation moves dim 0 last)", (65, 37), (0,)),
    reduce_shape("transposed", "(33,47) t() view over dim 1", (33, 47), (1,), "transposed"),
    reduce_shape("narrowed", "(5,6,7) narrowed view (start offset) over dim 1", (5, 6, 7), (1,), "narrowed"),
    reduce_shape("multi", "(4,6,5) over dims (2,0), in that order: kept dim 1 first", (4, 6, 5), (2, 0)),
    reduce_shape("multi-perm", "(5,6,7) permuted view over dims (0,2)", (5, 6, 7), (0, 2), "perm"),
    reduce_shape("empty", "(3,0) over dim 1: sum writes 0, min/max/arg* are refused (EmptyTensor)", (3, 0), (1,)),
]}
ARG_SHAPES = {k: v for k, v in SHAPES.items() if len(v.geo["dims"]) == 1}


class Reduction(str, Enum):
    """The fold of a fast_<fold>_T kernel: its spec's `variant`, read instead of the kernel's name."""
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    ARGMIN = "argmin"
    ARGMAX = "argmax"

    @property
    def extreme(self) -> bool:
        """The fold keeps an extreme (maxg/ming) rather than summing."""
        return self is not Reduction.SUM

    @property
    def largest(self) -> bool:
        """The extreme is the largest value (max, argmax): the fold starts from -inf / T's minimum."""
        return self in (Reduction.MAX, Reduction.ARGMAX)

    @property
    def index(self) -> bool:
        """The kernel writes the extreme's u32 position in the row (argmin, argmax), not its value."""
        return self in (Reduction.ARGMIN, Reduction.ARGMAX)


# ------------------------------------------------------------------- the CUDA algorithm
def _identity(kind: str, dt):
    """-INFINITY / +INFINITY converted to T (integers saturate to their limits)."""
    largest = Reduction(kind).largest
    if dt.is_float:
        return -np.inf if largest else np.inf
    info = np.iinfo(dt.np)
    return info.min if largest else info.max


def cuda_block_reduce(kind: str, vals: np.ndarray, block: int, dt) -> tuple:
    """What one block of candle's fast_* kernel computes over one row (shared-memory tree):
    thread t folds elements t, t+B, ...; then a tree halves B down to 1. Sums accumulate in T;
    max/min use maxg/ming (f32/f64 fmaxf: NaN ignored; f16/bf16 NaN propagates); arg* keep the
    first element then strict improvements, and the tree takes the partner only when strictly
    better (lower thread wins ties). Returns (value, position in the row)."""
    n = vals.size
    k = -(-n // block) if n else 0
    with np.errstate(all="ignore"):
        if kind == "sum":
            acc = np.zeros(block, dtype=dt.np)
            for j in range(k):
                c = vals[j * block:(j + 1) * block]
                acc[: c.size] = (acc[: c.size] + c).astype(dt.np)
            s = block // 2
            while s:
                acc[:s] = (acc[:s] + acc[s: 2 * s]).astype(dt.np)
                s //= 2
            return acc[0], 0
        v = to_f64(vals) if dt.is_float else vals
        if kind in ("min", "max"):
            if dt.is_float:
                f = (np.fmax if kind == "max" else np.fmin) if dt.name in ("f32", "f64") else \
                    (np.maximum if kind == "max" else np.minimum)
            else:
                f = np.maximum if kind == "max" else np.minimum
            acc = np.full(block, _identity(kind, dt), dtype=np.float64 if dt.is_float else dt.np)
            for j in range(k):
                c = v[j * block:(j + 1) * block]
                acc[: c.size] = f(acc[: c.size], c)
            s = block // 2
            while s:
                acc[:s] = f(acc[:s], acc[s: 2 * s])
                s //= 2
            return (round_float(np.array([acc[0]]), dt)[0] if dt.is_float else acc[0]), 0
        better = np.greater if kind == "argmax" else np.less
        cur = np.full(block, _identity(kind, dt), dtype=np.float64 if dt.is_float else dt.np)
        idx = np.full(block, 0xFFFFFFFF, dtype=np.int64)
        is_set = np.zeros(block, dtype=bool)
        for j in range(k):
            c = v[j * block:(j + 1) * block]
            m = c.size
            take = ~is_set[:m] | better(c, cur[:m])
            cur[:m] = np.where(take, c, cur[:m])
            idx[:m] = np.where(take, j * block + np.arange(m), idx[:m])
            is_set[:m] = True
        s = block // 2
        while s:
            take = better(cur[s: 2 * s], cur[:s])
            cur[:s] = np.where(take, cur[s: 2 * s], cur[:s])
            idx[:s] = np.where(take, idx[s: 2 * s], idx[:s])
            s //= 2
        return cur[0], int(idx[0])


def _rows(b: StructuredBuilt) -> np.ndarray:
    """The logical source as (dst_el, el_per_block) rows in the kernel's element order."""
    x = b.inputs["src"]
    return np.transpose(x, b.geo["perm"]).reshape(b.geo["dst_el"], b.geo["el"])


def _flat_rows(b: StructuredBuilt) -> np.ndarray:
    idx = b.layouts["src"].flat_indices()
    return np.transpose(idx, b.geo["perm"]).reshape(b.geo["dst_el"], b.geo["el"])


# ---------------------------------------------------------------------------- spec parts
def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    kind = op.spec.variant.value
    dt = dtype(case.dtype)
    sc = SHAPES[case.layout].geo
    shape, red = sc["shape"], sc["dims"]
    lay = view(sc["view"], shape)
    base, logi = make_input(dt, lay, case.values, rng)
    kept = [d for d in range(len(shape)) if d not in red]
    perm = kept + list(red)
    src_el = math.prod(shape)
    dst_el = math.prod(shape[d] for d in kept)
    el = src_el // dst_el
    geo = {"kind": kind, "perm": perm, "dims": [shape[d] for d in perm],
           "strides": [lay.strides[d] for d in perm], "src_el": src_el, "dst_el": dst_el, "el": el,
           "block": next_pow2(min(1024, el)), "n_reduced": len(red)}
    b = StructuredBuilt(case, op, case.dtype, {"src": dt}, {"src": lay}, {"src": base}, {"src": logi}, geo,
                        out_dtype=dtype("u32") if kind.startswith("arg") else dt,
                        out_shape=tuple(shape[d] for d in kept))
    if src_el == 0 and kind != "sum":
        b.refuse = f"{kind} of an empty tensor: Candle's host raises EmptyTensor before launching"
        return b
    if case.values == "special" and dt.is_float and el > 3:
        rows = _flat_rows(b)                    # NaN at row index 0 (it wins arg*) and at index 3
        base[rows[0, 0]] = np.nan
        base[rows[min(1, dst_el - 1), 3]] = np.nan
        if el > geo["block"] + 1:               # the last row: NaN past its first block only (never taken)
            first = rows[dst_el - 1, :geo["block"]]
            base[first[np.isnan(to_f64(base[first]))]] = 0.0
            base[rows[dst_el - 1, geo["block"] + 1]] = np.nan
        b.inputs["src"] = base[lay.flat_indices()]
    return b


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    info = np.array(g["dims"] + g["strides"], dtype=np.uint64)
    args = [Arg("size_t", g["src_el"], name="src_numel"), Arg("size_t", g["el"], name="el_to_sum_per_block"),
            Arg("size_t", len(g["dims"]), name="num_dims"), Arg("info", info, name="info"),
            Arg("ptr", ("src", b.layouts["src"].offset), name="src"), Arg("ptr", ("dst", 0), name="dst")]
    return Launch(b.op.kernel_name(b.key), args, {"src": b.bases["src"], "dst": out_buffer(b)}, ("dst",),
                  grid=(g["dst_el"], 1, 1), block=(g["block"], 1, 1),
                  dtypes={"src": b.dtypes["src"].name, "dst": b.out_dtype.name})


def _expected(b: StructuredBuilt) -> np.ndarray:
    g, dt = b.geo, b.dtypes["src"]
    rows = _rows(b)
    kind = g["kind"]
    if kind == "sum":
        if not dt.is_float:
            out = np.sum(rows.astype(dt.np), axis=1, dtype=dt.np)   # accumulates in T: wraps
        else:
            out = round_float(np.sum(to_f64(rows), axis=1), dt)
    elif kind in ("min", "max"):
        if not dt.is_float:
            out = (rows.max(axis=1) if kind == "max" else rows.min(axis=1)).astype(dt.np)
        else:
            r = to_f64(rows)
            if dt.name in ("f32", "f64"):              # fmaxf/fminf: NaN ignored, init ∓inf
                f = np.fmax if kind == "max" else np.fmin
                out = f.reduce(np.concatenate([np.full((r.shape[0], 1), -np.inf if kind == "max" else np.inf), r], 1), axis=1)
            else:                                       # __hmax_nan: NaN propagates
                out = r.max(axis=1) if kind == "max" else r.min(axis=1)
            out = round_float(out, dt)
    else:
        # The shared-memory tree decides ties (the receiver keeps a tie, so [0,2,2,0] with block 4
        # gives 2, not 1: not the first index, even in rows <= block; docs/candle-kernel-abi.md).
        # Deterministic for a given block size, so every row is exact.
        out = np.array([cuda_block_reduce(kind, row, g["block"], dt)[1] for row in rows], dtype=np.uint32)
    return np.asarray(out).reshape(b.out_shape)


def sum_depth(n: int) -> int:
    """The most additions an element may pass through in a parallel sum of n elements: one 32-lane
    warp whose lanes each fold n/32 of them, a 16-byte pack's lanes combined in 3 steps, then a
    5-step butterfly. Candle's fast_sum (n/B folds, then log2(B) tree steps, B <= 1024) and every
    wider split stay within it; a thread that sums a whole row alone does not."""
    return -(-n // 32) + 8


def sum_bound(rows64: np.ndarray, dt) -> np.ndarray:
    """|computed - exact| for a sum accumulated in T in any order of depth <= sum_depth(n):
    gamma_d * sum|x| (Higham, Accuracy and Stability, 4.2: each addition rounds once, by at most
    u = 2^-(p+1) of its result, and an element is in d of them). A worst case, so never a false
    failure for such a reduction; where it exceeds the sum itself (zero-mean rows), only the
    `positive` value class's rows, whose sum is sum|x|, show a sum that drops elements or writes 0.
    Capped by the rocBLAS-style bound where that is smaller (bf16's long rows)."""
    n = rows64.shape[1]
    du = sum_depth(n) * 2.0 ** -(dt.mant_bits + 1)
    gamma = du / (1.0 - du) if du < 1 else np.inf
    # where that worst case passes any result (bf16 rows of 2,900 and more), the rocBLAS-style
    # eps*2*sqrt(n)*sum|x| (+ 1 ulp of the result) these sums were judged by before, never failed by
    # a real order and still finite: the smaller of the two
    eps = 2.0 ** -dt.mant_bits
    with np.errstate(all="ignore"):
        mag = np.sum(np.abs(np.where(np.isfinite(rows64), rows64, 0.0)), axis=1)
        return np.minimum(gamma * mag, eps * 2.0 * math.sqrt(max(n, 1)) * mag + eps * np.abs(np.sum(rows64, axis=1)))


def _judge(expected, got, b: StructuredBuilt):
    g, dt = b.geo, b.dtypes["src"]
    kind = g["kind"]
    rows = _rows(b)
    e, gt = expected.reshape(-1), got.reshape(-1)
    if kind.startswith("arg"):
        ok = gt == e
        if g["el"] > g["block"]:                        # longer rows: any index holding the extreme
            valid = gt < g["el"]
            safe = np.where(valid, gt, 0).astype(np.int64)
            r = np.arange(rows.shape[0])
            ok |= valid & same_value(rows[r, safe], rows[r, e.astype(np.int64)])

        def shown(i, coords):
            row = rows[i]
            d = {"x[expected]": str(row[int(e[i])]) if e[i] < row.size else "-"}
            d["x[got]"] = str(row[int(gt[i])]) if int(gt[i]) < row.size else "out of the row"
            return d
        return mask_judge(expected, got, b.out_dtype, ok.reshape(expected.shape), shown)
    shown = lambda i, coords: {"row": f"{rows.shape[1]} elements"}
    if kind == "sum" and dt.is_float:
        r64 = to_f64(rows)
        exact = np.sum(r64, axis=1)
        g64 = to_f64(gt)
        ok = same_value(gt, e) | (np.isfinite(exact) & np.isfinite(g64) & (np.abs(g64 - exact) <= sum_bound(r64, dt)))
        return mask_judge(expected, got, dt, ok.reshape(expected.shape), shown)
    return mask_judge(expected, got, dt, same_value(gt, e).reshape(expected.shape), shown)


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    a = {x.name: x for x in launch.args}
    kind = op.spec.variant.value
    dt = dtype(key)
    numel, el, nd = (int(a[n].value) for n in ("src_numel", "el_to_sum_per_block", "num_dims"))
    dims, strides = ex.reduce_walk(np.asarray(a["info"].value), nd)
    sname, soff = a["src"].value
    src = bufs[sname][ex.pointer_offset(soff):]
    dname, doff = a["dst"].value
    dst = bufs[dname][ex.pointer_offset(doff):]
    idx = np.arange(numel, dtype=np.int64)
    off = np.zeros(numel, dtype=np.int64)
    rem = idx.copy()
    for d in reversed(range(nd)):                       # get_strided_index over the permuted arrays
        off += (rem % dims[d]) * strides[d]
        rem //= dims[d]
    block = int(launch.block[0])
    for r in range(int(launch.grid[0])):
        start, stop = r * el, min(r * el + el, numel)
        v, i = ex.reduce_row(kind, src[off[start:stop]], block, dt)
        if kind.startswith("arg"):
            ex.store_index(dst, r, (start + i) % int(dims[nd - 1]))
        else:
            dst[r] = v


def _tolerance(key: str) -> str:
    dt = dtype(key)
    return (f"|err| <= min(gamma_d sum|x|, 2^-{dt.mant_bits}*2*sqrt(n)*sum|x| + 1 ulp) vs the float64 sum, "
            f"d = ceil(n/32) + 8 additions an element, u = 2^-{dt.mant_bits + 1} (accumulation in T)"
            if dt.is_float else "exact (accumulates in T: wraps mod 2^n)")


def _spec(kind: str) -> StructuredSpec:
    tol = _tolerance if kind == "sum" else (
        (lambda key: "exact u32 index (CUDA tree tie rule) for rows <= block; longer rows: any index holding the extreme value")
        if kind.startswith("arg") else (lambda key: "exact value (±0 equal, NaN-ness)"))
    return StructuredSpec(shapes=ARG_SHAPES if kind.startswith("arg") else SHAPES, build=_build, pack=_pack,
                          expected=_expected, judge=_judge, emulate=_emulate, tolerance=tol, variant=Reduction(kind))


_ARG_SEM = ("u32 idx % dims[last]; each thread keeps its first element then strict improvements, the "
            "shared-memory tree takes the partner only when strictly better (ties stay with the receiver, "
            "so the tie winner depends on the block size); NaN wins only at row index 0. Judged exactly for "
            "rows <= block; for longer rows any index holding the extreme value is accepted")
_SEM = {
    "sum": "sum over the reduced dims, accumulated in T in a block-size-dependent tree (u8 wraps; f16/bf16 add in T)",
    "min": "ming over the row, init +inf: f32/f64 fminf ignores NaN (all-NaN row -> +inf); f16/bf16 propagate NaN",
    "max": "maxg over the row, init -inf: f32/f64 fmaxf ignores NaN (all-NaN row -> -inf); f16/bf16 propagate NaN",
    "argmin": _ARG_SEM, "argmax": _ARG_SEM,
}
_DIV = {
    "sum": ("Candle CPU sums sequentially in T: f16/bf16 results differ by rounding order",),
    "min": ("Candle CPU `<` fold: NaN handling differs",), "max": ("Candle CPU `>` fold: NaN handling differs",),
}

OPS = [
    Op(name=f"reduce.{k}", family="reduce", root=f"fast_{k}", dtypes=DTYPES, inputs=("src",),
       value_classes=("normal", "special", "ties") + (("positive",) if k == "sum" else ()), abi=ABI,
       value_dtypes=(("positive", ("f16", "bf16")),),
       out_rule="u32" if k.startswith("arg") else "last", info_always=True, semantics=_SEM[k],
       divergences=_DIV.get(k, ()), spec=_spec(k))
    for k in ("sum", "min", "max", "argmin", "argmax")
]
