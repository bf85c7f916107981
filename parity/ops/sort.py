"""Argsort: asort_asc_T / asort_desc_T(const T* x, uint32_t* dst, int ncols, int ncols_pad),
T in u8, u32, i64, f32, f64, f16, bf16. Bitonic sort of an index row in dynamic shared memory.

Host (Candle `sort.rs`): grid (rows,1,1), block (min(ncols_pad,1024),1,1), shared memory
ncols_pad*4 bytes, ncols_pad = next power of two; contiguous source (offset on the pointer).
The sort is unstable and padding sorts last: a result is judged by the values it puts in order
and by its indices being a permutation of 0..ncols (any order among equal values passes).
NaN is not generated: comparisons with NaN are false, so the network's output is not a sort.
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.core.numerics import to_f64
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.structured import StructuredBuilt, make_input, mask_judge, next_pow2, out_buffer, same_value

DTYPES = ("u8", "u32", "i64", "f32", "f64", "f16", "bf16")


class SortOrder(str, Enum):
    """asort_asc_T or asort_desc_T: its spec's `variant`, read instead of the kernel's name."""
    ASC = "asc"
    DESC = "desc"

    @property
    def descending(self) -> bool:
        return self is SortOrder.DESC


SHAPES = {s.name: s for s in [
    ShapeClass("c1", "(3,1): a one-column row (ncols_pad 1, block 1)", {"shape": (3, 1)}),
    ShapeClass("c8", "(5,8): power of two", {"shape": (5, 8)}),
    ShapeClass("c100", "(7,100): padded to 128", {"shape": (7, 100)}),
    ShapeClass("c1024", "(2,1024): one full block", {"shape": (2, 1024)}),
    ShapeClass("c1500", "(2,1500): padded to 2048, two columns per thread", {"shape": (2, 1500)}),
    ShapeClass("c4096", "(2,4096): four columns per thread, 16 KiB shared", {"shape": (2, 4096)}),
    ShapeClass("offset", "(4,37) source at pointer offset 3", {"shape": (4, 37), "offset": 3}),
]}


def bitonic_argsort(vals: np.ndarray, ncols: int, ncols_pad: int, asc: bool, pad_last: bool = True) -> np.ndarray:
    """The bitonic network over an index row of ncols_pad entries; indices >= ncols are padding,
    which sorts last (pad_last=False: a broken port where padding sorts first)."""
    v = to_f64(vals) if vals.dtype.kind == "f" or str(vals.dtype) == "bfloat16" else vals
    idx = np.arange(ncols_pad, dtype=np.int64)
    col = np.arange(ncols_pad, dtype=np.int64)
    k = 2
    while k <= ncols_pad:
        j = k // 2
        while j > 0:
            ixj = col ^ j
            m = ixj > col
            c, p = col[m], ixj[m]
            a, b = idx[c], idx[p]
            a_pad, b_pad = a >= ncols, b >= ncols
            if not pad_last:
                a_pad, b_pad = b_pad, a_pad
            xa = v[np.minimum(a, ncols - 1)]
            xb = v[np.minimum(b, ncols - 1)]
            after = (xa > xb) if asc else (xa < xb)
            before = (xa < xb) if asc else (xa > xb)
            up = (c & k) == 0
            swap = np.where(up, a_pad | (~b_pad & ~a_pad & after), b_pad | (~a_pad & ~b_pad & before))
            idx[c[swap]], idx[p[swap]] = b[swap], a[swap]
            j //= 2
        k *= 2
    return idx[:ncols]


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    dt = dtype(case.dtype)
    g = SHAPES[case.layout].geo
    rows, ncols = g["shape"]
    lay = contiguous((rows, ncols), offset=g.get("offset", 0))
    base, x = make_input(dt, lay, case.values, rng)
    pad = next_pow2(ncols)
    geo = {"rows": rows, "ncols": ncols, "ncols_pad": pad, "asc": op.root.endswith("asc")}
    return StructuredBuilt(case, op, case.dtype, {"x": dt}, {"x": lay}, {"x": base}, {"x": x}, geo,
                           out_dtype=dtype("u32"), out_shape=(rows, ncols))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    args = [Arg("ptr", ("x", b.layouts["x"].offset), name="x"), Arg("ptr", ("dst", 0), name="dst"),
            Arg("i32", g["ncols"], name="ncols"), Arg("i32", g["ncols_pad"], name="ncols_pad")]
    return Launch(b.op.kernel_name(b.key), args, {"x": b.bases["x"], "dst": out_buffer(b)}, ("dst",),
                  grid=(g["rows"], 1, 1), block=(min(g["ncols_pad"], 1024), 1, 1), shared_mem=g["ncols_pad"] * 4,
                  dtypes={"x": b.dtypes["x"].name, "dst": "u32"})


def _expected(b: StructuredBuilt) -> np.ndarray:
    """The sorted values (the judge compares the values the returned indices pick)."""
    s = np.sort(b.inputs["x"], axis=1, kind="stable")
    return s if b.geo["asc"] else s[:, ::-1].copy()


def _judge(expected, got, b: StructuredBuilt):
    x = b.inputs["x"]
    ncols = b.geo["ncols"]
    got = got.astype(np.int64)
    valid = got < ncols
    safe = np.where(valid, got, 0)
    picked = np.take_along_axis(x, safe, axis=1)
    dup = np.zeros_like(valid)
    for r in range(got.shape[0]):                       # second and later uses of an index
        _, first = np.unique(got[r], return_index=True)
        d = np.ones(ncols, dtype=bool)
        d[first] = False
        dup[r] = d
    ok = valid & ~dup & same_value(picked, expected)
    flat_g, flat_v = got.reshape(-1), valid.reshape(-1)

    def got_text(i):
        if not flat_v[i]:
            return f"index {flat_g[i]} (out of range: padding or garbage)"
        tag = " (repeated index)" if dup.reshape(-1)[i] else ""
        return f"index {flat_g[i]} -> {picked.reshape(-1)[i]}{tag}"
    badness = np.where(~valid, 3.0, np.where(dup, 2.0, 1.0))
    return mask_judge(expected, picked, b.dtypes["x"], ok, badness=badness, got_text=got_text)


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    a = {x.name: x for x in launch.args}
    ncols, pad = int(a["ncols"].value), int(a["ncols_pad"].value)
    xn, xo = a["x"].value
    x = bufs[xn][ex.pointer_offset(xo):]
    dn, do = a["dst"].value
    dst = bufs[dn][ex.pointer_offset(do):]
    asc = not op.spec.variant.descending
    for r in range(int(launch.grid[0])):
        dst[r * ncols:(r + 1) * ncols] = ex.sort_row(x[r * ncols:(r + 1) * ncols], ncols, pad, asc).astype(np.uint32)


OPS = [
    Op(name=f"sort.{o}", family="sort", root=f"asort_{o}", dtypes=DTYPES, inputs=("x",),
       value_classes=("normal", "ties"), out_rule="u32",
       abi=("x", "dst", "ncols:i32", "ncols_pad:i32"),
       semantics=f"u32 argsort of each row, {'ascending' if o == 'asc' else 'descending'}; bitonic network over "
                 "ncols_pad indices in shared memory, padding sorts last; unstable",
       spec=StructuredSpec(shapes=SHAPES, build=_build, pack=_pack, expected=_expected, judge=_judge,
                             emulate=_emulate, variant=SortOrder(o),
                             tolerance=lambda key: "values in order (exact) and indices a permutation of the row"))
    for o in ("asc", "desc")
]
