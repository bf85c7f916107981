"""The rocm-rs profile: the kernels of rocm-rs's `src/rocarray/kernels.hip` and `sorting_kernels.hip`
(github.com/RustNSparks/rocm-rs), in its own conventions, launched as its Rust side launches them.

Facts carried over from rocm-rs (its code is not part of parity; the fixtures under
tests/fixtures/ports/rocm-rs-* are our own kernels written in its conventions):

* names `elementwise_<op>_<T>`, `scalar_<op>_<T>`, `elementwise_<op>_broadcast_<T>`, `reduce_<op>_<T>`,
  `reduce_sum_axis_<T>`, `matrix_multiply[_shared]_<T>`, `transpose[_2d_shared]_<T>`, `generic_range_<T>`,
  the sorting kernels; T spelled `float double int uint long ulong short ushort char uchar`.
  `DEFINE_BITONIC_SORT(type, suffix, ASCENDING)` pastes the macro's *name*: the kernels are
  `bitonic_sort_ASCENDING_<T>` / `bitonic_sort_DESCENDING_<T>` (`##` does not expand its operands).
* host (src/rocarray/kernels.rs, sorting.rs): 256-thread blocks, `calculate_grid_1d(len as u32, 256)`
  = ceil(len/256) blocks (0 for len 0: the launch fails), lengths, dims and strides as u32 (dims and
  strides are arrays); `reduce_sum` zeroes its one-element accumulator, `reduce_max/min` mean to
  start it from the first element; matrix_multiply: 16x16 blocks, grid (ceil(n/16), ceil(m/16));
  argsort: `init_indices` first, nothing launched for len <= 1; partial_sort: grid 1, block 1, and
  only for k < len. Kernels no Rust code launches (the `_shared` variants, the sorts but argsort and
  partial_sort, reverse_array, linspace, test_simple_kernel) get the launch their code implies: the
  single-thread sorts grid 1, block 1; bitonic one block of next_pow2(n) <= 512 threads; the rest
  rocm-rs's 1-D launch.
* the void* kernels (copy_element, set_element, slice_first_dim, extract_column, copy_memory,
  fill_value, generic_*) cast to float; rocm-rs's Rust calls them for every T (`get_element<T>`,
  `copy_memory<T>`): they are checked for every T its NumericOps has.

What rocm-rs's Rust host does wrong around these kernels is not a kernel verdict (parity launches
each kernel as its ABI says); the profile's notes list it (NOTES).
"""
from __future__ import annotations

import math

import numpy as np

from parity.core.dtypes import dtype
from parity.core.numerics import scalar_to_dtype
from parity.core.tolerance import Tolerance
from parity.profiles.base import Profile, default_sweeps
from parity.profiles.kernels import CONTIGUOUS_LENGTHS, KernelOp, LaunchRule, Param, cdiv, custom_shape, kernel_op

NAME = "rocm-rs"
PREFIX = "rocm-rs."
TYPES = {"f32": "float", "f64": "double", "i32": "int", "u32": "uint", "i64": "long", "u64": "ulong",
         "i16": "short", "u16": "ushort", "i8": "char", "u8": "uchar"}
ALL = ("f32", "f64", "i32", "u32", "i64", "u64", "i16", "u16", "i8", "u8")    # NumericOps
SIX = ("f32", "f64", "i32", "u32", "i64", "u64")
FOUR = ("f32", "f64", "i32", "u32")
EXACT_VALUES = Tolerance(ulp=0)                  # IEEE single operations: correctly rounded (±0 equal)
GRID_1D = LaunchRule((256, 1, 1), ("ceil(n / 256)",))
ONE_THREAD = LaunchRule((1, 1, 1), ("1",))
SOURCE = "src/rocarray/kernels.hip"
SORT_SOURCE = "src/rocarray/sorting_kernels.hip"

NOTES = (
    "rocm-rs master's kernels.hip does not compile with ROCm's hipcc (kernels.hip:581, "
    "DEFINE_REDUCE_SUM(long long, long): ROCm declares no atomicAdd(long long*, long long)): every kernel "
    "of that file is a compile-error until it is fixed or a compat header adds the overload "
    "(tests/fixtures/ports/rocm-rs-compat/atomic64.h, --port-force-include)",
    "host, not checked by parity: kernels.rs passes device pointers themselves where hipModuleLaunchKernel "
    "wants pointers to the arguments (`a.as_ptr()`, kernels.rs:211 and every launch of that file; "
    "sorting.rs uses `as_kernel_arg()`, which is right); set_element, fill_value and reduce pass a host "
    "address where the kernel takes a device pointer (kernels.rs:1026, 1426, 1224); reduce_max/min start the "
    "accumulator from a fresh uninitialised allocation, not from the first element (kernels.rs:1455-1457, "
    "796-797). parity launches every kernel as its parameter list says, with the first element as the "
    "initial value the code means",
)


def _op(name: str, family: str, pattern: str, dtypes, params, ref, **kw):
    return kernel_op(name=PREFIX + name, family=family, pattern=pattern, dtypes=dtypes, params=params, ref=ref,
                     type_names=TYPES, profile=NAME, **kw)


def P(name, role, ctype="ptr", **kw) -> Param:
    return Param(name, role, ctype, **kw)


def tval(v, key: str):
    """A host scalar as rocm-rs passes it: a T (floats rounded, integers truncated)."""
    dt = dtype(key)
    x = scalar_to_dtype(float(v), dt)[0]
    return float(x) if dt.is_float else x


BINARY = {"add": (np.add, "+"), "sub": (np.subtract, "-"), "mul": (np.multiply, "*"), "div": (cdiv, "/")}
_INT_SEM = "integers wrap (two's complement), integer division truncates (divisors 0 and -1 are not drawn)"


def _size_p(name, expr=None) -> Param:
    return P(name, "size", "u32", expr=expr or name)


# ------------------------------------------------------------------------------ element-wise
def _elementwise() -> list:
    ops = []
    for op, (fn, sym) in BINARY.items():
        ops.append(_op(
            f"elementwise.{op}", "elementwise", f"elementwise_{op}_{{T}}", ALL,
            (P("a", "in"), P("b", "in"), P("result", "out"), P("n", "len", "u32", expr="n")),
            (lambda fn: lambda ins, s, sc, key: fn(ins["a"], ins["b"]))(fn),
            launch=GRID_1D, tolerance=EXACT_VALUES, value_classes=("normal", "special", "wide"),
            domain={"b": "divisor"} if op == "div" else None,
            semantics=f"result[i] = a[i] {sym} b[i] in T ({_INT_SEM}); one thread per element, index `int idx` "
                      f"({SOURCE}:64: past 2^31 elements it goes negative, the u32 n allows 2^32-1)",
            divergences=("contiguous only, u32 length (Candle's b" + op + " takes numel, num_dims, info: strided)",
                         "i8, i16, u16, u64 have no Candle kernel")))
    for op, (fn, sym) in BINARY.items():
        ops.append(_op(
            f"broadcast.{op}", "broadcast", f"elementwise_{op}_broadcast_{{T}}", FOUR,
            (P("a", "in"), P("b", "in"), P("result", "out"),
             P("a_dims", "dims", elem="u32", of="a"), P("a_strides", "strides", elem="u32", of="a"),
             P("a_ndim", "ndim", "u32", of="a"),
             P("b_dims", "dims", elem="u32", of="b"), P("b_strides", "strides", elem="u32", of="b"),
             P("b_ndim", "ndim", "u32", of="b"),
             P("result_dims", "dims", elem="u32", of="result"), P("result_ndim", "ndim", "u32", of="result"),
             P("total_elements", "len", "u32", of="result")),
            (lambda fn: lambda ins, s, sc, key: fn(ins["a"], ins["b"]))(fn),
            launch=LaunchRule((256, 1, 1), ("ceil(total_elements / 256)",)), tolerance=EXACT_VALUES,
            value_classes=("normal", "special"), domain={"b": "divisor"} if op == "div" else None,
            semantics=f"result[i] = a[ia] {sym} b[ib]: i unravelled over result_dims, each operand's index "
                      "right-aligned (a size-1 dim reads index 0) and ravelled with its own strides (u32, at "
                      f"most 8 dims); {_INT_SEM}",
            divergences=("numpy broadcasting across ranks with per-operand dims (Candle's info carries one "
                         "shape and stride-0 dims)", "result is contiguous")))
    for op, (fn, sym) in (("add", BINARY["add"]), ("mul", BINARY["mul"])):
        ops.append(_op(
            f"scalar.{op}", "scalar", f"scalar_{op}_{{T}}", SIX,
            (P("input", "in"), P("scalar", "scalar", "T"), P("result", "out"), P("n", "len", "u32", expr="n")),
            (lambda fn: lambda ins, s, sc, key: fn(ins["input"], tval(sc["scalar"], key)))(fn),
            launch=GRID_1D, tolerance=EXACT_VALUES, value_classes=("normal", "special", "wide"),
            param_sets=({"scalar": 2.5}, {"scalar": -3.0}),
            semantics=f"result[i] = input[i] {sym} scalar (a T by value; {_INT_SEM})",
            divergences=("Candle's affine (x * mul + add, one fused rounding) is the nearest kernel",)))
    return ops


# ------------------------------------------------------------------------------ reductions
def _sum_ref(ins, s, sc, key):
    x, init = ins["input"], ins["result"]
    if x.dtype.kind == "f":
        return np.asarray([init.reshape(-1)[0] + np.sum(x)])
    return np.asarray([np.sum(x, dtype=x.dtype) + init.reshape(-1)[0]], dtype=x.dtype)


def _sum_bound(ins, s, sc, key):
    x = ins["input"]
    return {"result": (np.asarray([np.sum(np.abs(x))]), max(int(x.size), 1))}


def _extreme_ref(kind: str):
    def ref(ins, s, sc, key):
        x, init = ins["input"], ins["result"].reshape(-1)
        if x.dtype.kind == "f":
            if init.size and np.isnan(init[0]):
                return np.asarray([np.nan])
            pick = np.nanmax if kind == "max" else np.nanmin
            vals = np.concatenate([x.reshape(-1), init[:1]])
            return np.asarray([pick(vals) if not np.isnan(vals).all() else np.nan])
        vals = np.concatenate([x.reshape(-1), init[:1]])
        return np.asarray([vals.max() if kind == "max" else vals.min()], dtype=x.dtype)
    return ref


def _reductions() -> list:
    ops = [_op(
        "reduce.sum", "reduce", "reduce_sum_{T}", SIX,
        (P("input", "in"), P("n", "len", "u32", of="input", expr="n"), P("result", "out", init="zero")),
        _sum_ref, kind="reduce", launch=GRID_1D, bound=_sum_bound, value_classes=("normal", "special", "wide"),
        semantics="each 256-thread block sums its elements in a shared-memory tree (padding 0) and atomicAdds the "
                  "block's sum into result, which the host zeroed; float sums in T in whatever order the blocks "
                  "finish; integers wrap",
        divergences=("atomic accumulation: the blocks' sums land in an unspecified order, so float results vary "
                     "run to run within the bound (Candle's fast_sum: one block per row, a fixed tree)",
                     "one sum of the whole buffer (Candle reduces over chosen dims)",
                     f"long (i64) does not compile with ROCm: no atomicAdd(long long*, long long) ({SOURCE}:581)"))]
    for k, fn in (("max", "fmaxf"), ("min", "fminf")):
        ops.append(_op(
            f"reduce.{k}", "reduce", f"reduce_{k}_{{T}}", FOUR,
            (P("input", "in"), P("n", "len", "u32", of="input", expr="n"), P("result", "out", init="first:input")),
            _extreme_ref(k), kind="reduce", launch=GRID_1D, tolerance=EXACT_VALUES,
            value_classes=("normal", "special", "wide", "ties"),
            semantics=f"the {k} of the input, exact in T: each block reduces with {fn} (padding: input[0]), then "
                      f"atomic{k.capitalize()} into result, which the host starts at input[0]; NaN: {fn} ignores "
                      f"it, but a NaN first element stays (atomic{k.capitalize()}'s compare never replaces a NaN), "
                      "so the result is NaN exactly when input[0] is NaN (or every element is)",
            divergences=(f"NaN: Candle's fast_{k} starts each row at {'-' if k == 'max' else '+'}inf and ignores "
                         "every NaN (f32/f64: an all-NaN row gives that infinity) or propagates every NaN "
                         "(f16/bf16); here only a NaN at index 0 (the accumulator's start) is kept",
                         f"{fn} takes float: rocm-rs passes double and integer elements through it "
                         f"({SOURCE}:136/158), which parity judges against the exact {k}",
                         "rocm-rs's host (kernels.rs) starts the accumulator from an uninitialised allocation; "
                         "parity starts it at input[0], as the code's comment says")))
    def axis_ref(ins, s, sc, key):
        x = ins["input"]
        ax = int(s["axis"])
        if x.dtype.kind == "f":
            return np.sum(x, axis=ax).reshape(-1)
        return np.sum(x, axis=ax, dtype=x.dtype).reshape(-1)

    def axis_bound(ins, s, sc, key):
        x = ins["input"]
        return {"output": (np.sum(np.abs(x), axis=int(s["axis"])).reshape(-1), max(x.shape[int(s["axis"])], 1))}
    shapes = {}
    for name, shape, ax, v, doc in [
        ("axis1", (37, 65), 1, "contig", "(37,65) over dim 1"),
        ("axis0", (37, 65), 0, "contig", "(37,65) over dim 0: outputs interleaved in memory"),
        ("mid", (5, 6, 7), 1, "contig", "(5,6,7) over the middle dim"),
        ("last3d", (5, 6, 7), 2, "contig", "(5,6,7) over the last dim"),
        ("unit-axis", (4, 1, 6), 1, "contig", "(4,1,6) over its size-1 dim"),
        ("rank1", (300,), 0, "contig", "(300,) over its only dim: one output"),
        ("transposed", (33, 47), 1, "transposed", "(33,47) t() view over dim 1: strides the kernel must use"),
        ("narrowed", (6, 64), 0, "narrowed", "(6,64) narrowed view (start offset, row pitch 67) over dim 0"),
        ("permuted", (5, 6, 7), 0, "perm", "(5,6,7) permuted view over dim 0"),
        ("long", (3, 5000), 1, "contig", "(3,5000) over dim 1: 5000-element loops"),
        ("empty", (0, 5), 1, "contig", "(0,5) over dim 1: no output, a 0-block grid (refused)"),
    ]:
        out_n = math.prod(shape) // shape[ax] if shape[ax] else math.prod(d for i, d in enumerate(shape) if i != ax)
        shapes[name] = custom_shape(name, doc, {"axis": ax, "axis_size": shape[ax], "out_n": out_n},
                                    {"input": v}, shapes={"input": shape})
    ops.append(_op(
        "reduce.sum_axis", "reduce", "reduce_sum_axis_{T}", FOUR,
        (P("input", "in"), P("output", "out"), P("dims", "dims", elem="u32", of="input"),
         P("strides", "strides", elem="u32", of="input"), P("ndim", "ndim", "u32", of="input"),
         _size_p("axis"), _size_p("axis_size"), P("output_size", "len", "u32", of="output", expr="out_n")),
        axis_ref, kind="custom", shapes=shapes, operand_shapes={"output": ("out_n",)},
        launch=LaunchRule((256, 1, 1), ("ceil(output_size / 256)",)), bound=axis_bound,
        value_classes=("normal", "special", "wide"),
        semantics="output[o] = sum over the axis of input (dims/strides u32: any strided view), one thread per "
                  "output summing sequentially in T; integers wrap",
        divergences=("Candle's sum_T / fast_sum reduce several dims with one launch",)))
    return ops


# ------------------------------------------------------------------------------ matrices
def _matmul_ref(ins, s, sc, key):
    a, b = ins["a"], ins["b"]
    if a.dtype.kind == "f":
        return a @ b
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(a.dtype)


def _matmul_bound(ins, s, sc, key):
    a, b = ins["a"], ins["b"]
    return {"c": (np.abs(a) @ np.abs(b), max(a.shape[1], 1))}


MATMUL_SHAPES = {name: custom_shape(name, doc, {"m": m, "k": k, "n": n}) for name, (m, k, n), doc in [
    ("tile", (16, 16, 16), "16x16 by 16x16: one block, one tile"),
    ("tails", (33, 17, 40), "33x17 by 17x40: partial tiles on every side"),
    ("k1", (5, 1, 7), "k = 1: outer product"),
    ("k0", (4, 0, 5), "k = 0: every output 0"),
    ("tall", (100, 3, 2), "100x3 by 3x2: one block column, seven block rows"),
    ("vector", (1, 64, 1), "1x64 by 64x1: a dot product"),
    ("big", (64, 256, 96), "64x256 by 256x96: long sums"),
    ("empty", (0, 5, 3), "m = 0: a grid with no rows (refused)"),
]}


def _matrices() -> list:
    ops = []
    for variant, dts, note in (("", ("f32", "f64", "i32"), "one thread per output, k in order"),
                               ("_shared", ("f32", "f64"), "16x16 tiles of a and b in shared memory")):
        ops.append(_op(
            f"matmul.multiply{variant}", "matmul", f"matrix_multiply{variant}_{{T}}", dts,
            (P("a", "in"), P("b", "in"), P("c", "out"), _size_p("m"), _size_p("k"), _size_p("n")),
            _matmul_ref, kind="custom", shapes=MATMUL_SHAPES,
            operand_shapes={"a": ("m", "k"), "b": ("k", "n"), "c": ("m", "n")},
            launch=LaunchRule((16, 16, 1), ("ceil(n / 16)", "ceil(m / 16)")), bound=_matmul_bound,
            value_classes=("normal", "special", "wide"),
            semantics=f"c = a @ b, row-major, accumulated in T ({note}); integers wrap",
            divergences=("Candle has no matmul kernel: it calls cuBLAS/hipBLAS (matmul.*: host routine)",)
            + (("no Rust code launches the _shared variant: matrix_multiply's 16x16 launch",) if variant else ())))
    shapes = {}
    for name, shape, v, doc in [
        ("2d", (33, 47), "contig", "(33,47) -> (47,33)"), ("3d", (5, 6, 7), "contig", "(5,6,7) -> (7,6,5)"),
        ("4d", (3, 4, 5, 6), "contig", "(3,4,5,6) -> (6,5,4,3)"), ("rank1", (40,), "contig", "(40,): a copy"),
        ("rank0", (), "contig", "a 0-d tensor: one element"),
        ("big", (300, 600), "contig", "(300,600): 704 blocks"),
        ("transposed", (33, 47), "transposed", "(33,47) t() view: input_strides the kernel must read with"),
        ("narrowed", (6, 64), "narrowed", "(6,64) narrowed view (start offset, row pitch 67)"),
        ("stepped", (10, 33), "stepped", "(10,33) stepped view: gaps between elements"),
        ("empty", (3, 0), "contig", "(3,0): nothing to move, a 0-block grid (refused)"),
    ]:
        shapes[name] = custom_shape(name, doc, {"n": math.prod(shape)}, {"input": v},
                                    shapes={"input": shape, "output": tuple(reversed(shape))})
    ops.append(_op(
        "transpose.reverse", "transpose", "transpose_{T}", SIX,
        (P("input", "in"), P("output", "out"), P("input_dims", "dims", elem="u32", of="input"),
         P("input_strides", "strides", elem="u32", of="input"), P("output_dims", "dims", elem="u32", of="output"),
         P("output_strides", "strides", elem="u32", of="output"), P("ndim", "ndim", "u32", of="input"),
         P("total_elements", "len", "u32", of="input")),
        lambda ins, s, sc, key: np.transpose(ins["input"]), kind="custom", shapes=shapes,
        launch=LaunchRule((256, 1, 1), ("ceil(total_elements / 256)",)), tolerance=EXACT_VALUES,
        value_classes=("normal", "special"),
        semantics="output = input with its axes reversed (rocarray's transpose), output laid out by "
                  "output_strides; the input is described by input_dims and input_strides",
        divergences=("rocm-rs's kernel reads input[idx] contiguously and never reads input_strides "
                     f"({SOURCE}:296): right for rocarray's own arrays (always contiguous), wrong for any "
                     "strided view the ABI can describe",)))
    shapes2 = {name: custom_shape(name, doc, {"rows": r, "cols": c}) for name, (r, c), doc in [
        ("tile", (16, 16), "16x16: one block"), ("tails", (33, 47), "33x47: partial tiles"),
        ("row", (1, 40), "1x40"), ("col", (40, 1), "40x1"), ("big", (100, 300), "100x300: 133 blocks"),
        ("empty", (0, 5), "0x5: a grid with no rows (refused)")]}
    ops.append(_op(
        "transpose.shared2d", "transpose", "transpose_2d_shared_{T}", ("f32", "f64"),
        (P("input", "in"), P("output", "out"), _size_p("rows"), _size_p("cols")),
        lambda ins, s, sc, key: ins["input"].T, kind="custom", shapes=shapes2,
        operand_shapes={"input": ("rows", "cols"), "output": ("cols", "rows")},
        launch=LaunchRule((16, 16, 1), ("ceil(cols / 16)", "ceil(rows / 16)")), tolerance=EXACT_VALUES,
        value_classes=("normal", "special"),
        semantics="output (cols x rows) = input (rows x cols) transposed through a 16x17 shared tile",
        divergences=("no Rust code launches it: 16x16 blocks, grid (ceil(cols/16), ceil(rows/16)) as its "
                     "indexing requires",)))
    return ops


# ------------------------------------------------------------------------------ ranges
def _range_ref(ins, s, sc, key):
    n = int(s["n"])
    dt = dtype(key)
    start, step = tval(sc["start"], key), tval(sc["step"], key)
    if dt.is_float:
        return start + np.arange(n, dtype=np.float64) * step
    wide = np.uint64 if dt.kind == "uint" else np.int64
    with np.errstate(all="ignore"):
        return (np.arange(n).astype(wide) * wide(step) + wide(start)).astype(dt.np)


def _range_bound(ins, s, sc, key):
    n = int(s["n"])
    start, step = tval(sc["start"], key), tval(sc["step"], key)
    return {"output": (abs(start) + np.abs(np.arange(n, dtype=np.float64) * step), 2)}


RANGE_PARAMS = ({"start": 1.5, "step": 0.25}, {"start": -2.0, "step": 0.3}, {"start": 16777217.0, "step": 3.0})


def _ranges() -> list:
    common = dict(launch=GRID_1D, bound=_range_bound, value_classes=("normal",), param_sets=RANGE_PARAMS)
    return [
        _op("range.generic", "range", "generic_range_{T}", SIX,
            (P("start", "scalar", "T"), P("step", "scalar", "T"), P("n", "len", "u32", expr="n"), P("output", "out")),
            _range_ref, semantics="output[i] = start + (T)i * step in T (integers wrap; floats: two roundings, or "
                                  "one where the compiler fuses them)",
            divergences=("Candle has no range kernel (its arange runs on the host)",), **common),
        _op("range.linspace", "range", "linspace_double", ("f64",),
            (P("start", "scalar", "T"), P("step", "scalar", "T"), P("n", "len", "u32", expr="n"), P("output", "out")),
            _range_ref, semantics="output[i] = start + (double)i * step",
            divergences=("the step is the caller's: (end - start) / (n - 1) is computed on the host",), **common),
    ]


# ------------------------------------------------------------------------------ void* kernels
_FLOAT_CAST = ("the kernel casts its void* operands to float*: right for 4-byte T, wrong for the others "
               "(rocm-rs's Rust calls it for every T)")


def _lengths(extra=None) -> dict:
    out = {name: custom_shape(name, doc, {"n": n}) for name, n, doc in CONTIGUOUS_LENGTHS}
    out["empty"] = custom_shape("empty", "n = 0: a 0-block grid (refused)", {"n": 0})
    out.update(extra or {})
    return out


INDEX_SHAPES = {name: custom_shape(name, doc, {"n": n, "index": i}) for name, (n, i), doc in [
    ("first", (100, 0), "index 0 of 100"), ("middle", (1000, 777), "index 777 of 1000"),
    ("last", (257, 256), "the last of 257")]}
SLICE_SHAPES = {name: custom_shape(name, doc, {"rows": r, "eps": e, "start": st, "slice_len": ln, "total": ln * e})
                for name, (r, e, st, ln), doc in [
                    ("rows", (10, 7, 2, 5), "rows 2..7 of a 10x7"), ("one-row", (4, 33, 3, 1), "the last row of 4x33"),
                    ("all", (6, 5, 0, 6), "every row of 6x5"), ("wide", (3, 1000, 1, 2), "rows 1..3 of 3x1000"),
                    ("empty", (4, 5, 2, 0), "no row: a 0-block grid (refused)")]}
COLUMN_SHAPES = {name: custom_shape(name, doc, {"rows": r, "cols": c, "col_index": i}) for name, (r, c, i), doc in [
    ("first", (10, 7, 0), "column 0 of 10x7"), ("last", (10, 7, 6), "column 6 of 10x7"),
    ("many-rows", (1000, 3, 1), "column 1 of 1000x3: four blocks"), ("one-col", (20, 1, 0), "20x1"),
    ("empty", (0, 4, 1), "no rows: a 0-block grid (refused)")]}


def _set_element_ref(ins, s, sc, key):
    a = ins["array"].copy()
    a.reshape(-1)[int(s["index"])] = ins["value"].reshape(-1)[0]
    return a


def _slice_ref(ins, s, sc, key):
    eps = int(s["elements_per_slice"])
    return ins["input"].reshape(-1)[int(s["start"]) * eps:(int(s["start"]) + int(s["slice_len"])) * eps]


def _column_ref(ins, s, sc, key):
    return ins["input"].reshape(-1)[np.arange(int(s["rows"])) * int(s["cols"]) + int(s["col_index"])]


def _memory() -> list:
    """The void* kernels, then reverse_array."""
    return _element_access() + _slices() + _copies() + _generic_placeholders() + [_reverse()]


def _element_access() -> list:
    """get_element<T> and set_element<T>: one element, by one thread."""
    one = dict(kind="custom", shapes=INDEX_SHAPES, launch=ONE_THREAD, tolerance=EXACT_VALUES,
               value_classes=("normal", "special"))
    return [
        _op("memory.copy_element", "memory", "copy_element", ALL,
            (P("input", "in"), P("output", "out"), _size_p("index")),
            lambda ins, s, sc, key: ins["input"].reshape(-1)[int(s["index"])],
            operand_shapes={"input": ("n",), "output": ("1",)},
            semantics="output[0] = input[index] (rocarray's get_element<T>)", divergences=(_FLOAT_CAST,), **one),
        _op("memory.set_element", "memory", "set_element", ALL,
            (P("array", "inout"), _size_p("index"), P("value", "in")), _set_element_ref,
            operand_shapes={"array": ("n",), "value": ("1",)},
            semantics="array[index] = *value (value: a device pointer to one T)",
            divergences=(_FLOAT_CAST, "rocm-rs's set_element passes the value's host address (kernels.rs:1026)"),
            **one),
    ]


def _slices() -> list:
    """slice_first_dim (rows of a matrix) and extract_column."""
    return [
        _op("memory.slice_first_dim", "memory", "slice_first_dim", ALL,
            (P("input", "in"), P("output", "out"), _size_p("start"), _size_p("slice_len"),
             _size_p("elements_per_slice", "eps"), P("total_output_elements", "len", "u32", of="output", expr="total")),
            _slice_ref, kind="custom", shapes=SLICE_SHAPES,
            operand_shapes={"input": ("rows", "eps"), "output": ("total",)},
            launch=LaunchRule((256, 1, 1), ("ceil(total_output_elements / 256)",)), tolerance=EXACT_VALUES,
            value_classes=("normal", "special"), semantics="output = input[start : start + slice_len] along dim 0",
            divergences=(_FLOAT_CAST,)),
        _op("memory.extract_column", "memory", "extract_column", ALL,
            (P("input", "in"), P("output", "out"), _size_p("rows"), _size_p("cols"), _size_p("col_index")),
            _column_ref, kind="custom", shapes=COLUMN_SHAPES,
            operand_shapes={"input": ("rows", "cols"), "output": ("rows",)},
            launch=LaunchRule((256, 1, 1), ("ceil(rows / 256)",)), tolerance=EXACT_VALUES,
            value_classes=("normal", "special"), semantics="output[r] = input[r, col_index]",
            divergences=(_FLOAT_CAST,)),
    ]


def _copies() -> list:
    """copy_memory, generic_map (a placeholder: it copies too) and fill_value."""
    ops = []
    for name, pattern, sem, div in (
            ("copy_memory", "copy_memory", "dst = src", (_FLOAT_CAST,)),
            ("generic_map", "generic_map", "output = input: a placeholder (rocm-rs's map(input, output, len, func) "
                                           "never applies func)",
             (_FLOAT_CAST, "the Rust API promises func(input); the kernel copies"))):
        names = ("src", "dst") if name == "copy_memory" else ("input", "output")
        ops.append(_op(
            f"memory.{name}", "memory", pattern, ALL,
            (P(names[0], "in"), P(names[1], "out"), P("n", "len", "u32", expr="n")),
            (lambda src: lambda ins, s, sc, key: ins[src])(names[0]), launch=GRID_1D, tolerance=EXACT_VALUES,
            value_classes=("normal", "special"), semantics=sem, divergences=div))
    ops.append(_op(
        "memory.fill_value", "memory", "fill_value", ALL,
        (P("output", "out"), P("value", "in"), P("n", "len", "u32", of="output", expr="n")),
        lambda ins, s, sc, key: np.full(int(s["n"]), ins["value"].reshape(-1)[0]), kind="custom", shapes=_lengths(),
        operand_shapes={"output": ("n",), "value": ("1",)}, launch=GRID_1D, tolerance=EXACT_VALUES,
        value_classes=("normal", "special"), semantics="output[i] = *value (value: a device pointer to one T)",
        divergences=(_FLOAT_CAST, "rocm-rs's fill_value passes the value's host address (kernels.rs:1426)")))
    return ops


def _generic_placeholders() -> list:
    """generic_filter, generic_reduce and generic_search: placeholders of what the Rust API promises."""
    return [
        _op("memory.generic_filter", "memory", "generic_filter", ALL,
            (P("input", "in"), P("output", "out"), P("n", "len", "u32", of="input", expr="n"),
             P("count", "out", elem="u32")),
            lambda ins, s, sc, key: {"output": ins["input"], "count": np.asarray([int(s["n"])], dtype=np.uint32)},
            kind="custom", shapes=_lengths(), operand_shapes={"input": ("n",), "output": ("n",), "count": ("1",)},
            launch=GRID_1D, tolerance=EXACT_VALUES, value_classes=("normal", "special"),
            semantics="a placeholder: output = input, *count = n (thread 0)",
            divergences=(_FLOAT_CAST, "the Rust API promises the elements passing the predicate")),
        _op("memory.generic_reduce", "memory", "generic_reduce", ALL,
            (P("input", "in"), P("n", "len", "u32", of="input", expr="n"), P("initial", "in"), P("result", "out")),
            lambda ins, s, sc, key: ins["initial"].reshape(-1)[:1], kind="custom", shapes=_lengths(),
            operand_shapes={"input": ("n",), "initial": ("1",), "result": ("1",)}, launch=GRID_1D,
            tolerance=EXACT_VALUES, value_classes=("normal", "special"),
            semantics="a placeholder: *result = *initial",
            divergences=(_FLOAT_CAST, "the Rust API promises the fold of the input by func; its reduce passes the "
                                      "initial value's host address (kernels.rs:1224)")),
        _op("memory.generic_search", "memory", "generic_search", ALL,
            (P("input", "in"), P("n", "len", "u32", of="input", expr="n"),
             P("result", "out", elem="i32", init="value:-1")),
            lambda ins, s, sc, key: np.asarray([0 if int(s["n"]) else -1], dtype=np.int32), kind="custom",
            shapes=_lengths(), operand_shapes={"input": ("n",), "result": ("1",)}, launch=GRID_1D,
            tolerance=EXACT_VALUES, value_classes=("normal",),
            semantics="a placeholder: *result = 0 (the host starts it at -1)",
            divergences=("the Rust API promises the first index whose element passes the predicate",)),
    ]


def _reverse() -> KernelOp:
    """reverse_array<T>: typed, not void*."""
    return _op(
        "memory.reverse", "memory", "reverse_array_{T}", FOUR,
        (P("data", "inout"), P("n", "len", "u32", of="data", expr="n")),
        lambda ins, s, sc, key: ins["data"][::-1], kind="custom", shapes=_lengths(),
        operand_shapes={"data": ("n",)}, launch=GRID_1D, tolerance=EXACT_VALUES, value_classes=("normal", "special"),
        semantics="data reversed in place (n/2 threads swap)",
        divergences=("no Rust code launches it: rocm-rs's 1-D launch over n",))


# ------------------------------------------------------------------------------ sorting
SORT_SHAPES = {name: custom_shape(name, doc, {"n": n}, order=order) for name, n, order, doc in [
    ("len1", 1, {}, "one element"), ("len2", 2, {}, "two elements"), ("len100", 100, {}, "100 elements"),
    ("len1000", 1000, {}, "1000 elements"), ("sorted", 500, {"data": "sorted"}, "500 elements already sorted"),
    ("reversed", 500, {"data": "sorted-desc"}, "500 elements in descending order"),
    ("empty", 0, {}, "n = 0: the kernels loop while i < n - 1 (unsigned)"),
]}
BITONIC_SHAPES = {name: custom_shape(name, doc, {"n": n}) for name, n, doc in [
    ("len1", 1, "one element"), ("len8", 8, "8: a power of two"), ("len100", 100, "100: padded to 128"),
    ("len500", 500, "500: padded to 512"), ("len512", 512, "512: one full block of the kernel's 512")]}
IS_SORTED_SHAPES = {name: custom_shape(name, doc, {"n": n}, order=order) for name, n, order, doc in [
    ("sorted", 500, {"data": "sorted"}, "500 sorted elements: 1"),
    ("sorted-but-last", 500, {"data": "sorted-but-last"}, "sorted but the last pair swapped: 0"),
    ("unsorted", 500, {}, "500 random elements: 0"), ("len1", 1, {}, "one element: 1"),
    ("empty", 0, {}, "n = 0: 1 (the kernel loops while i < n - 1, unsigned)")]}
PARTIAL_SHAPES = {name: custom_shape(name, doc, {"n": n, "k": k}) for name, (n, k), doc in [
    ("k10", (100, 10), "the 10 smallest of 100"), ("k1", (1000, 1), "the smallest of 1000"),
    ("k49", (50, 49), "all but one of 50"), ("k0", (10, 0), "k = 0: nothing moves"),
    ("k-all", (20, 20), "k = n: rocm-rs sorts fully instead (not launched)")]}
NTH_SHAPES = {name: custom_shape(name, doc, {"n": n, "nth": k}) for name, (n, k), doc in [
    ("first", (100, 0), "the smallest of 100"), ("last", (100, 99), "the largest of 100"),
    ("median", (1000, 500), "element 500 of 1000"), ("len1", (1, 0), "one element")]}
MERGE_SHAPES = {name: custom_shape(name, doc, {"left_len": a, "right_len": b},
                                   order={"left": "sorted", "right": "sorted"})
                for name, (a, b), doc in [
                    ("uneven", (100, 57), "100 and 57"), ("left-empty", (0, 10), "nothing on the left"),
                    ("right-empty", (10, 0), "nothing on the right"), ("ones", (1, 1), "one and one"),
                    ("big", (500, 500), "500 and 500")]}
SORT_VALUES = ("normal", "ties", "wide")
_NO_NAN = "NaN is not generated: comparisons with NaN are false, so no order is defined"
_SINGLE = "one thread (thread 0 of block 0) does the work; no Rust code launches it: grid 1, block 1"


def _sorted_ref(ins, s, sc, key, name="data"):
    return np.sort(ins[name], kind="stable")


def _selection(ins, s, sc, key):
    d = ins["data"].copy()
    n, k = d.size, int(s["k"])
    for i in range(min(k, n)):
        j = i + int(np.argmin(d[i:]))          # the first minimum: the kernel's strict <
        if j != i:
            d[i], d[j] = d[j], d[i]
    return d


def _is_sorted_ref(ins, s, sc, key):
    return np.asarray([int(bool(np.all(ins["data"][:-1] <= ins["data"][1:])))], dtype=np.uint32)


def _nth_ref(ins, s, sc, key):
    return {"data": np.sort(ins["data"], kind="stable"),
            "result": np.sort(ins["data"], kind="stable")[int(s["nth"]):int(s["nth"]) + 1]}


def _sorting() -> list:
    """The kernels of sorting_kernels.hip."""
    return _sorts() + _argsort() + _order_queries() + _merge_and_stable_sort() + [_launch_test()]


def _sorts() -> list:
    """The in-place sorts: simple (bubble), bitonic in either direction, radix (a bubble-sort fallback)."""
    ops = [_op(
        "sort.simple_sort", "sort", "simple_sort_int", ("i32",),
        (P("data", "inout"), P("n", "len", "u32", of="data", expr="n")), _sorted_ref, kind="custom",
        shapes=SORT_SHAPES, operand_shapes={"data": ("n",)}, launch=ONE_THREAD, tolerance=EXACT_VALUES,
        value_classes=SORT_VALUES, semantics="data sorted ascending (bubble sort)", divergences=(_SINGLE,))]
    for d in ("ASCENDING", "DESCENDING"):
        asc = d == "ASCENDING"
        ops.append(_op(
            f"sort.bitonic_{d.lower()}", "sort", f"bitonic_sort_{d}_{{T}}", FOUR,
            (P("data", "inout"), P("n", "len", "u32", of="data", expr="n"), _size_p("padded_n", "next_pow2(n)")),
            (lambda asc: lambda ins, s, sc, key: np.sort(ins["data"], kind="stable")[::1 if asc else -1])(asc),
            kind="custom", shapes=BITONIC_SHAPES, operand_shapes={"data": ("n",)},
            launch=LaunchRule(("padded_n", 1, 1), ("1",)), tolerance=EXACT_VALUES, value_classes=SORT_VALUES,
            semantics=f"data sorted {d.lower()} by a bitonic network in shared memory: one block of padded_n = "
                      "next_pow2(n) <= 512 threads, the padding filled with a sentinel",
            divergences=(f"the kernel's name pastes the macro's name ({SORT_SOURCE}: "
                         f"DEFINE_BITONIC_SORT(..., {d})): bitonic_sort_{d}_<T>",
                         "no Rust code launches it; the kernel sorts one block (n <= 512)", _NO_NAN)))
    ops.append(_op(
        "sort.radix_ascending", "sort", "radix_sort_ascending_{T}", SIX,
        (P("data", "inout"), P("temp_buffer", "temp"), P("n", "len", "u32", of="data", expr="n")), _sorted_ref,
        kind="custom", shapes=SORT_SHAPES, operand_shapes={"data": ("n",), "temp_buffer": ("n",)}, launch=ONE_THREAD,
        tolerance=EXACT_VALUES, value_classes=SORT_VALUES,
        semantics="data sorted ascending (a bubble sort: 'simple radix sort fallback')", divergences=(_SINGLE, _NO_NAN)))
    return ops


def _argsort() -> list:
    """argsort's two launches: init_indices, then argsort_<T> over the indices."""
    return [
        _op("sort.init_indices", "sort", "init_indices", ("u32",),
            (P("indices", "out"), P("n", "len", "u32", of="indices", expr="n")),
            lambda ins, s, sc, key: np.arange(int(s["n"]), dtype=np.uint32), launch=GRID_1D, value_classes=("normal",),
            semantics="indices[i] = i (argsort's first launch)"),
        _op("sort.argsort", "sort", "argsort_{T}", SIX,
            (P("data", "in"), P("indices", "out", elem="u32", init="iota"), P("n", "len", "u32", of="data", expr="n")),
            lambda ins, s, sc, key: np.argsort(ins["data"], kind="stable").astype(np.uint32), kind="custom",
            shapes=SORT_SHAPES, operand_shapes={"data": ("n",), "indices": ("n",)}, launch=GRID_1D,
            refuse=(("n <= 1", "rocm-rs's argsort returns before any launch when len <= 1 (sorting.rs)"),),
            tolerance=EXACT_VALUES, value_classes=SORT_VALUES,
            semantics="indices (set to 0..n-1 by init_indices first) bubble-sorted by data[indices[j]]: a stable "
                      "ascending argsort, by thread 0 of block 0 of rocm-rs's 1-D launch",
            divergences=("Candle's asort_asc is a bitonic network per row: unstable, u32 indices too", _NO_NAN)),
    ]


def _order_queries() -> list:
    """is_sorted, partial_sort (the k smallest first) and nth_element."""
    return [
        _op("sort.is_sorted", "sort", "is_sorted_{T}", SIX,
            (P("data", "in"), P("n", "len", "u32", of="data", expr="n"), P("result", "out", elem="u32")),
            _is_sorted_ref, kind="custom", shapes=IS_SORTED_SHAPES, operand_shapes={"data": ("n",), "result": ("1",)},
            launch=ONE_THREAD, tolerance=EXACT_VALUES, value_classes=("normal", "ties"),
            semantics="*result = 1 when data[i] <= data[i+1] everywhere, else 0", divergences=(_SINGLE, _NO_NAN)),
        _op("sort.partial_sort", "sort", "partial_sort_{T}", FOUR,
            (P("data", "inout"), P("n", "len", "u32", of="data", expr="n"), _size_p("k")), _selection, kind="custom",
            shapes=PARTIAL_SHAPES, operand_shapes={"data": ("n",)}, launch=ONE_THREAD, tolerance=EXACT_VALUES,
            refuse=(("k >= n", "rocm-rs's partial_sort sorts the whole array instead when k >= len (sorting.rs)"),),
            value_classes=SORT_VALUES,
            semantics="a selection sort of the first k positions: each takes the first minimum of the rest (swap); "
                      "the rest of data is what the swaps leave", divergences=(_NO_NAN,)),
        _op("sort.nth_element", "sort", "nth_element_{T}", FOUR,
            (P("data", "inout"), P("n", "len", "u32", of="data", expr="n"), _size_p("nth"), P("result", "out")),
            _nth_ref, kind="custom", shapes=NTH_SHAPES, operand_shapes={"data": ("n",), "result": ("1",)},
            launch=ONE_THREAD, tolerance=EXACT_VALUES, value_classes=SORT_VALUES,
            semantics="data sorted ascending (bubble sort), then *result = data[nth]", divergences=(_SINGLE, _NO_NAN)),
    ]


def _merge_and_stable_sort() -> list:
    """merge_sorted (two sorted runs) and stable_sort (insertion)."""
    return [
        _op("sort.merge_sorted", "sort", "merge_sorted_{T}", FOUR,
            (P("left", "in"), _size_p("left_len"), P("right", "in"), _size_p("right_len"), P("output", "out")),
            lambda ins, s, sc, key: np.sort(np.concatenate([ins["left"], ins["right"]]), kind="stable"), kind="custom",
            shapes=MERGE_SHAPES, operand_shapes={"left": ("left_len",), "right": ("right_len",),
                                                 "output": ("left_len + right_len",)},
            launch=ONE_THREAD, tolerance=EXACT_VALUES, value_classes=SORT_VALUES,
            semantics="output = the merge of two sorted runs, left first on ties", divergences=(_SINGLE, _NO_NAN)),
        _op("sort.stable_sort", "sort", "stable_sort_{T}", FOUR,
            (P("data", "inout"), P("temp_buffer", "temp"), P("n", "len", "u32", of="data", expr="n")), _sorted_ref,
            kind="custom", shapes=SORT_SHAPES, operand_shapes={"data": ("n",), "temp_buffer": ("n",)},
            launch=ONE_THREAD, tolerance=EXACT_VALUES, value_classes=SORT_VALUES,
            semantics="data sorted ascending by insertion (stable)", divergences=(_SINGLE, _NO_NAN)),
    ]


def _launch_test() -> KernelOp:
    """test_simple_kernel: it does nothing, a launch test."""
    return _op(
        "sort.test_simple_kernel", "sort", "test_simple_kernel", ("i32",),
        (P("data", "inout"), P("n", "len", "u32", of="data", expr="n")), lambda ins, s, sc, key: ins["data"],
        kind="custom", shapes=SORT_SHAPES, operand_shapes={"data": ("n",)}, launch=ONE_THREAD, tolerance=EXACT_VALUES,
        value_classes=("normal",), semantics="does nothing (data[0] = data[0]): a launch test",
        divergences=(_SINGLE,))


def _catalog() -> dict:
    ops = _elementwise() + _reductions() + _matrices() + _ranges() + _memory() + _sorting()
    return {op.name: op for op in ops}


OPS = _catalog()

PROFILE = Profile(
    name=NAME,
    title="rocm-rs's rocarray kernels (src/rocarray/kernels.hip, sorting_kernels.hip; 256-thread blocks, u32 "
          "lengths, dims and strides)",
    ops=OPS, prefix=PREFIX, sweeps=default_sweeps(extra_huge=["u8", "i8"]), notes=NOTES,
)
