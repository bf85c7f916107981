"""Kernels described by the roles of their parameters: the spec of every ABI profile but Candle's.

Candle's families each pack their launches in code of their own (parity/ops). A kernel of another
ABI is described instead: its name pattern, its parameters in order, each with a *role*, the host
launch around it and a reference. One generic spec (a `StructuredSpec`) builds, packs, judges and
emulates every such kernel from that description, with the case machinery Candle's ops use:
layouts and their poisoned gaps, value classes, the 0xA5 output sentinel, the comparator, the
executors, timing and the reports.

Roles (`Param.role`):

    in        a pointer the kernel reads (elements of T, or `elem`)
    out       a pointer the kernel writes; `init` says what the host puts there first (default:
              the 0xA5 sentinel, so unwritten elements show)
    inout     read and written in place (a sort, reverse)
    temp      scratch the kernel may use (never judged)
    len       an element count by value: the `of` operand's (default: the output's)
    dims      pointer to an operand's dims (integers of `elem`: u32, u64, ...)
    strides   pointer to an operand's strides in elements
    ndim      an operand's rank by value
    size      an integer by value from the shape class's sizes (`expr`, default its own name)
    scalar    a by-value parameter of type T (or `ctype`), values from the op's param sets

Kinds: `map` (the output is a function of the inputs broadcast to one shape; its layouts are the
contiguous lengths, or every strided and broadcast view when the inputs have dims/strides),
`reduce` (the inputs reduce to a one-element output, usually accumulated by atomics into what the
host initialised), `custom` (shape classes give the sizes; every operand's shape is an expression
over them).

A launch the HIP runtime cannot make (a grid with a zero dimension: rocm-rs's `calculate_grid_1d(0)`)
or that the host code declines (`KernelOp.refuse`) is an expected host refusal, as Candle's
EmptyTensor is: not launched, passes.
"""
from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from parity.core.compare import Comparison, compare
from parity.core.dtypes import DType, dtype
from parity.core.layouts import (LAYOUT_CLASSES, Layout, contiguous, distinct_positions, logical, materialize,
                                 operand_layouts, view)
from parity.core.numerics import round_float, to_f64
from parity.core.tolerance import Tolerance
from parity.core.values import generate
from parity.ops.abi import sentinel_fill
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.structured import StructuredBuilt, mask_judge, rng_values, same_value

ROLES = ("in", "out", "inout", "temp", "len", "dims", "strides", "ndim", "size", "scalar")
POINTER_ROLES = ("in", "out", "inout", "temp", "dims", "strides")
INT_TYPES = ("u32", "i32", "u64", "i64", "size_t", "u16", "i16", "u8", "i8")
INIT_RULES = ("sentinel", "zero", "first", "iota", "value")


class DeclarationError(ValueError):
    """A kernel description that cannot work (unknown role, an operand no parameter names, ...)."""


class ReferenceRaised(Exception):
    """A declared kernel's own reference (its expression, or a function of the port's references module)
    raised on a case: the declaration's to fix, not parity's. The message says what it raised and where:
    `reference raised ValueError: boom (refs.py:12, in rowsum)`."""


# ------------------------------------------------------------------------------ expressions
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}


def next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


SIZE_FUNCS: dict[str, Callable] = {"ceil": lambda x: int(math.ceil(x)), "floor": lambda x: int(math.floor(x)),
                                   "min": min, "max": max, "next_pow2": next_pow2, "int": int, "abs": abs}


def size_expr(text: str) -> ast.Expression:
    """Parse a size expression (`ceil(n / 256)`, `m * k`, `n <= 1`); SyntaxError or ValueError with
    what is not allowed."""
    tree = ast.parse(str(text).strip(), mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Name, ast.Load,
                             ast.Constant, ast.Call, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, *_BIN, *_CMP)):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in SIZE_FUNCS):
                raise ValueError(f"only {', '.join(SIZE_FUNCS)} may be called in a size expression")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
                raise ValueError(f"constant {node.value!r} is not a number")
            continue
        raise ValueError(f"{type(node).__name__} is not allowed in a size expression")
    return tree


def evaluate(text: str | int | float, names: dict[str, Any]) -> Any:
    """The value of a size expression over `names` (NameError names the unknown size). Arithmetic that
    fails on these sizes (`ceil(n / 0)`) is the declaration's: ReferenceRaised, the sizes named."""
    if isinstance(text, (int, float)):
        return text
    tree = size_expr(text)
    try:
        return _eval(tree.body, names)
    except (ArithmeticError, TypeError, ValueError) as e:
        sizes = ", ".join(f"{k}={v}" for k, v in sorted(names.items()) if isinstance(v, (int, float)))
        raise ReferenceRaised(f"size expression {text!r} raised {type(e).__name__}: {e}\n"   # (a finding per
                              f"sizes: {sizes}") from e                                      # first line)


def _eval(node, names):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise NameError(f"unknown size {node.id!r} (known: {', '.join(sorted(names)) or 'none'})")
        return names[node.id]
    if isinstance(node, ast.BinOp):
        return _BIN[type(node.op)](_eval(node.left, names), _eval(node.right, names))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, names)
        return -v if isinstance(node.op, ast.USub) else (not v) if isinstance(node.op, ast.Not) else v
    if isinstance(node, ast.BoolOp):
        vals = [_eval(v, names) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, names)
        for op, right in zip(node.ops, node.comparators):
            r = _eval(right, names)
            if not _CMP[type(op)](left, r):
                return False
            left = r
        return True
    if isinstance(node, ast.Call):
        return SIZE_FUNCS[node.func.id](*[_eval(a, names) for a in node.args])
    raise ValueError(f"cannot evaluate {ast.dump(node)}")


def cdiv(a, b):
    """C's division: integers truncate toward zero (wrapping in their width), floats IEEE."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return a / b
    with np.errstate(all="ignore"):
        q = a // np.where(b == 0, 1, b)
        if a.dtype.kind == "i":
            fix = (a % np.where(b == 0, 1, b) != 0) & ((a < 0) != (b < 0))
            q = q + fix.astype(q.dtype)
    return q


# ------------------------------------------------------------------------------ description
@dataclass(frozen=True)
class Param:
    """One kernel parameter, in ABI order (module doc: the roles)."""
    name: str
    role: str
    ctype: str = "ptr"       # by-value C type (suite vocabulary: u32, i64, size_t, T, f32, ...); "ptr" for pointers
    elem: str = "T"          # pointers: element dtype ("T" or a dtype name); dims/strides: their integer type
    of: str = ""             # dims/strides/ndim/len: the operand described
    expr: str = ""           # size: expression over the shape class's sizes (default: the name); len: its size name
    init: str = "sentinel"   # out: what the host writes first (sentinel, zero, first:<input>, iota, value:<x>)

    @property
    def pointer(self) -> bool:
        return self.role in POINTER_ROLES

    @property
    def operand(self) -> bool:
        """A tensor operand (not a dims/strides array)."""
        return self.role in ("in", "out", "inout", "temp")


@dataclass(frozen=True)
class LaunchRule:
    """The host launch: block and grid as expressions over the sizes (or numbers), dynamic shared memory."""
    block: tuple = (256, 1, 1)
    grid: tuple[str, ...] = ("ceil(n / 256)",)
    shared: str = "0"

    def describe(self) -> str:
        return f"grid ({', '.join(self.grid)}), block {tuple(self.block)}" + \
            (f", {self.shared} B shared" if str(self.shared) != "0" else "")


@dataclass(frozen=True, kw_only=True)
class KernelOp(Op):
    """An op of a profile other than Candle's: described by its parameters' roles (module doc)."""
    tolerance: Tolerance = Tolerance(ulp=0)            # how float outputs are judged (or `bound`)
    domain: dict[str, str] = field(default_factory=dict)   # operand -> value domain
    pattern: str = ""                                  # kernel name: "elementwise_add_{T}", "copy_element"
    type_names: tuple[tuple[str, str], ...] = ()       # dtype -> its spelling in kernel names
    params: tuple[Param, ...] = ()
    kind: str = "map"                                  # map | reduce | custom
    launch_rule: LaunchRule = LaunchRule()
    operand_shapes: tuple[tuple[str, tuple[str, ...]], ...] = ()   # custom: operand -> size expressions
    refuse: tuple[tuple[str, str], ...] = ()           # (condition over sizes, what the host says): not launched
    ref: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    bound: Callable[..., Any] | None = field(default=None, compare=False, repr=False)   # -> {out: (mag, m[, also()])}
    judge_fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    dense_special: bool = True                         # `special` fills half the tensor (elementwise) or ~6%
    profile: str = ""

    def kernel_name(self, key: str) -> str:
        return self.pattern.replace("{T}", dict(self.type_names).get(key, key))

    def signature(self, key: str) -> list[str]:
        return [("ptr" if p.pointer else dtype(key).name if p.ctype == "T" else p.ctype) for p in self.params]

    def typed_signature(self, key: str) -> list[str]:
        """signature() with each pointer's element type (`f32*`, `u64*`; const-ness is not declared)."""
        return [f"{dtype(key).name if p.elem == 'T' else p.elem}*" if p.pointer else t
                for p, t in zip(self.params, self.signature(key))]

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def inputs_of(self) -> list[Param]:
        return [p for p in self.params if p.role in ("in", "inout")]

    def outputs_of(self) -> list[Param]:
        return [p for p in self.params if p.role in ("out", "inout", "temp")]

    def judged(self) -> list[Param]:
        return [p for p in self.params if p.role in ("out", "inout")]

    def elem(self, p: Param, key: str) -> DType:
        return dtype(key) if p.elem == "T" else dtype(p.elem)

    def shape_exprs(self, name: str) -> tuple[str, ...] | None:
        return dict(self.operand_shapes).get(name)

    def describes(self, operand: str, role: str) -> Param | None:
        return next((p for p in self.params if p.role == role and p.of == operand), None)


def abi_strings(params: tuple[Param, ...]) -> tuple[str, ...]:
    """The parameter list as `parity list` shows it: `a`, `n:u32`, `a_dims:u32*`."""
    out = []
    for p in params:
        if p.role in ("dims", "strides"):
            out.append(f"{p.name}:{p.elem}*")
        elif p.pointer:
            out.append(p.name if p.elem == "T" else f"{p.name}:{p.elem}*")
        else:
            out.append(f"{p.name}:{p.ctype}")
    return tuple(out)


def check(op: KernelOp) -> None:
    """Raise DeclarationError for a description no case can be built from."""
    names = [p.name for p in op.params]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise DeclarationError(f"parameter {sorted(dup)[0]!r} appears twice")
    operands = {p.name for p in op.params if p.operand}
    for p in op.params:
        if p.role not in ROLES:
            raise DeclarationError(f"parameter {p.name!r}: unknown role {p.role!r} (roles: {', '.join(ROLES)})")
        if p.role in ("dims", "strides", "ndim") and p.of not in operands:
            raise DeclarationError(f"parameter {p.name!r}: {p.role} of {p.of!r}, which is no operand "
                                   f"(operands: {', '.join(sorted(operands)) or 'none'})")
        if p.role == "len" and p.of and p.of not in operands:
            raise DeclarationError(f"parameter {p.name!r}: len of {p.of!r}, which is no operand")
        if not p.pointer and p.role != "scalar" and p.ctype not in INT_TYPES:
            raise DeclarationError(f"parameter {p.name!r}: a {p.role} is an integer ({', '.join(INT_TYPES)}), "
                                   f"not {p.ctype!r}")
        if p.role in ("dims", "strides") and p.elem not in INT_TYPES:
            raise DeclarationError(f"parameter {p.name!r}: {p.role} elements are integers, not {p.elem!r}")
        if p.role == "out" and p.init.split(":")[0] not in INIT_RULES:
            raise DeclarationError(f"parameter {p.name!r}: unknown init {p.init!r} (one of: sentinel, zero, "
                                   "first:<input>, iota, value:<number>)")
    if not op.judged():
        raise DeclarationError("no out or inout parameter: nothing to judge")
    if op.kind not in ("map", "reduce", "custom"):
        raise DeclarationError(f"unknown kind {op.kind!r} (map, reduce or custom)")


# ------------------------------------------------------------------------------ shape classes
def _geo(sizes: dict, shapes: dict, views: dict | None = None, offsets: dict | None = None, **more) -> dict:
    return {"sizes": sizes, "shapes": shapes, "views": views or {}, "offsets": offsets or {}, **more}


CONTIGUOUS_LENGTHS = [
    ("contiguous", 2405, "2405 elements: 10 blocks of 256, the last one partial"),
    ("len1", 1, "one element"),
    ("len255", 255, "one block minus one: the tail"),
    ("len256", 256, "exactly one 256-thread block"),
    ("len257", 257, "one block and one element: a second, almost empty block"),
    ("len1025", 1025, "five blocks, one element in the last"),
    ("len163835", 163835, "640 blocks: lengths far beyond one block"),
]
HUGE = 2 ** 31 + 1029


def map_shapes(op: KernelOp) -> dict[str, ShapeClass]:
    """The shape classes of a `map` op: 1-D lengths for a contiguous ABI; with dims/strides, every
    layout class of Candle's elementwise cases (each operand its own view) and numpy broadcasting
    across ranks (what rocm-rs's `broadcast_with` produces)."""
    ins = [p.name for p in op.inputs_of()]
    strided = any(p.role == "strides" for p in op.params)
    out: dict[str, ShapeClass] = {}
    if not strided:
        for name, n, doc in CONTIGUOUS_LENGTHS:
            out[name] = ShapeClass(name, doc, _geo({"n": n}, {k: (n,) for k in ins}))
        out["offset"] = ShapeClass("offset", "1000 elements, every operand at its own pointer offset (3, 5, ...)",
                                   _geo({"n": 1000}, {k: (1000,) for k in ins},
                                        offsets={k: 3 + 2 * i for i, k in enumerate(ins)}))
        out["empty"] = ShapeClass("empty", "n = 0: a 0-block grid, which the HIP runtime refuses",
                                  _geo({"n": 0}, {k: (0,) for k in ins}))
        out["huge"] = ShapeClass("huge", f"{HUGE} elements (> 2^31): signed 32-bit indices overflow (opt-in)",
                                 _geo({"n": HUGE}, {k: (HUGE,) for k in ins}))
        return out
    for name, cls in LAYOUT_CLASSES.items():
        if cls.inplace or cls.bench:
            continue
        lays = operand_layouts(cls, len(ins))
        n = math.prod(cls.shape)
        out[name] = ShapeClass(name, cls.doc, _geo({"n": n}, {k: tuple(cls.shape) for k in ins},
                                                   layouts={k: lays[i] for i, k in enumerate(ins)}))
    for name, shapes, doc in [
        ("bcast-rank", [(16, 40), (40,)], "(16,40) with (40,): the lower-rank operand aligned on the right"),
        ("bcast-ones", [(16, 1), (1, 40)], "(16,1) with (1,40): size-1 dims broadcast (their strides are ignored)"),
        ("bcast-rank3", [(5, 1, 7), (6, 1)], "(5,1,7) with (6,1): ranks 3 and 2, size-1 dims on both sides"),
    ]:
        shp = {k: shapes[i % len(shapes)] for i, k in enumerate(ins)}
        out[name] = ShapeClass(name, doc, _geo({"n": math.prod(np.broadcast_shapes(*shp.values()))}, shp))
    return out


def reduce_shapes(op: KernelOp) -> dict[str, ShapeClass]:
    """The shape classes of a `reduce` op: 1-D lengths (one to 640 blocks of atomics), an empty input
    (a 0-block grid: refused), a NaN first element (the host's initial value), huge (opt-in)."""
    ins = [p.name for p in op.inputs_of()]
    out = {name: ShapeClass(name, doc, _geo({"n": n}, {k: (n,) for k in ins}))
           for name, n, doc in CONTIGUOUS_LENGTHS}
    out["nan-first"] = ShapeClass("nan-first", "2405 elements, the first one NaN (floats; integers as they are): "
                                               "the element a host may start the accumulator from",
                                  _geo({"n": 2405}, {k: (2405,) for k in ins}, fill={ins[0]: "nan-first"} if ins else {}))
    out["empty"] = ShapeClass("empty", "n = 0: a 0-block grid, which the HIP runtime refuses",
                              _geo({"n": 0}, {k: (0,) for k in ins}))
    out["huge"] = ShapeClass("huge", f"{HUGE} elements (> 2^31): signed 32-bit indices overflow (opt-in)",
                             _geo({"n": HUGE}, {k: (HUGE,) for k in ins}))
    return out


def custom_shape(name: str, doc: str, sizes: dict, views: dict | None = None, shapes: dict | None = None,
                 **more) -> ShapeClass:
    """A shape class of a `custom` op: its sizes (operand shapes follow from the op's expressions, or
    `shapes`: operand -> shape, for ops whose operands' rank varies); views: operand -> a view kind of
    parity.core.layouts (`transposed`, `narrowed`, ...); more: `order` (operand -> sorted | sorted-desc |
    sorted-but-last), `fill` (operand -> nan-first)."""
    return ShapeClass(name, doc, _geo(dict(sizes), dict(shapes or {}), views, **more))


OPT_IN_SHAPES = ("huge",)


# ------------------------------------------------------------------------------ values
def draw(op: KernelOp, dt: DType, n: int, value_class: str, rng, domain: str | None) -> np.ndarray:
    """n values of a value class (parity.core.values; `special` sprinkled at ~6% for non-map kernels, so
    sums, maxima and sorts stay meaningful), with the domain applied even to special values."""
    if value_class in ("ties",) or (value_class == "special" and not op.dense_special):
        v = rng_values(dt, n, value_class, rng, None if domain == "divisor" else domain)
    else:
        v = generate(dt, n, value_class, rng, None if domain == "divisor" else domain)
    if domain in ("divisor", "nonzero") and not dt.is_float:
        v[v == 0] = 1                        # integer x/0 is undefined behaviour: never drawn
        if dt.kind == "int":
            v[v == -1] = 3                   # MIN / -1 overflows
    return v


def _ordered(v: np.ndarray, order: str) -> np.ndarray:
    if order in ("sorted", "sorted-but-last", "sorted-desc"):
        v = np.sort(v, kind="stable")
        if order == "sorted-desc":
            v = v[::-1].copy()
        if order == "sorted-but-last" and v.size >= 2 and v[-1] != v[-2]:
            v[-2], v[-1] = v[-1], v[-2]
    return v


# ------------------------------------------------------------------------------ built case
@dataclass
class KernelBuilt(StructuredBuilt):
    """A case of a described kernel: inputs as for every structured op, plus every output's geometry
    (name -> (Layout, DType)) and its buffer before the launch."""
    outs: dict = field(default_factory=dict)
    initial: dict = field(default_factory=dict)        # output name -> buffer before the launch
    exact: dict = field(default_factory=dict)          # output name -> float64 reference (bound judges)

    def result(self, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {n: logical(outputs[n], lay) for n, (lay, _) in self.outs.items()}


def _sizes_for(op: KernelOp, sc: ShapeClass) -> dict:
    return dict(sc.geo.get("sizes", {}))


def _operand_shape(op: KernelOp, name: str, sizes: dict, sc: ShapeClass | None) -> tuple[int, ...]:
    if sc is not None and name in sc.geo.get("shapes", {}):
        return tuple(sc.geo["shapes"][name])
    if sc is not None and name in sc.geo.get("layouts", {}):
        return tuple(sc.geo["layouts"][name].shape)
    exprs = op.shape_exprs(name)
    if exprs is None:
        if op.kind == "reduce":
            return (1,)
        if op.kind == "map":
            ins = [np.broadcast_shapes(*[_operand_shape(op, p.name, sizes, sc) for p in op.inputs_of()])] \
                if op.inputs_of() else [(int(sizes.get("n", 0)),)]
            return tuple(ins[0])
        raise DeclarationError(f"operand {name!r} has no shape (give it one over the sizes)")
    return tuple(int(evaluate(e, sizes)) for e in exprs)


def _initial(p: Param, dt: DType, lay: Layout, ins: dict[str, np.ndarray], scalars: dict) -> np.ndarray:
    rule, _, arg = p.init.partition(":")
    if rule == "sentinel":
        return sentinel_fill(dt, lay.base_size)
    buf = np.zeros(lay.base_size, dtype=dt.np)
    flat = lay.flat_indices().reshape(-1)
    if rule == "first":
        src = ins.get(arg)
        if src is not None and src.size:
            buf[flat] = np.asarray(src).reshape(-1)[0]
    elif rule == "iota":
        buf[flat] = np.arange(flat.size).astype(dt.np)
    elif rule == "value":
        buf[flat] = np.asarray([float(evaluate(arg, scalars))]).astype(dt.np)[0]
    return buf


def build(case, rng) -> KernelBuilt:
    op: KernelOp = case.catalog_op
    key = case.dtype
    sc = op.spec.shapes[case.layout]
    sizes = _sizes_for(op, sc)
    geo = sc.geo
    dts, lays, bases, logi = {}, {}, {}, {}
    for p in op.inputs_of():
        dt = op.elem(p, key)
        shape = _operand_shape(op, p.name, sizes, sc)
        if p.name in geo.get("layouts", {}):
            lay = geo["layouts"][p.name]
        else:
            lay = view(geo.get("views", {}).get(p.name, "contig"), shape)
            off = geo.get("offsets", {}).get(p.name, 0)
            if off:
                lay = Layout(lay.shape, lay.strides, lay.offset + off, lay.base_size + off)
        vals = draw(op, dt, distinct_positions(lay), case.values, rng, op.domain.get(p.name))
        vals = _ordered(vals, geo.get("order", {}).get(p.name, ""))
        if geo.get("fill", {}).get(p.name) == "nan-first" and dt.is_float and vals.size:
            vals[0] = np.nan
        base = materialize(lay, dt, vals)
        dts[p.name], lays[p.name], bases[p.name], logi[p.name] = dt, lay, base, logical(base, lay)
    outs, initial = {}, {}
    scalars = dict(case.params)
    for p in op.outputs_of():
        dt = op.elem(p, key)
        if p.role == "inout":
            outs[p.name] = (lays[p.name], dt)
            initial[p.name] = bases[p.name]
            continue
        lay = contiguous(_operand_shape(op, p.name, sizes, sc))
        outs[p.name] = (lay, dt)
        initial[p.name] = _initial(p, dt, lay, logi, scalars)
    first = op.judged()[0]
    lay0, dt0 = outs[first.name]
    b = KernelBuilt(case, op, key, dts, lays, bases, logi,
                    {"sizes": sizes, "scalars": scalars}, out_name=first.name, out_dtype=dt0,
                    out_shape=lay0.shape, outs=outs, initial=initial)
    b.geo["grid"] = _grid(op, b)
    for cond, why in op.refuse:
        if evaluate(cond, _size_names(op, b)):
            b.refuse = why
            break
    if not b.refuse and 0 in b.geo["grid"]:
        b.refuse = (f"a grid of {tuple(b.geo['grid'])} blocks: the HIP runtime refuses a launch with no "
                    "blocks (hipErrorInvalidConfiguration), so the host's call returns that error")
    if not b.refuse:
        b.unlaunchable = b.refuse = _unlaunchable(op, b)
    return b


def _unlaunchable(op: KernelOp, b: KernelBuilt) -> str:
    """Why no host can launch this case as declared ('' if it can): a block over the hardware's limits
    (a block expression of the sizes), or a size its parameter's integer type cannot hold (`len u16` of a
    163,835-element case). Such a case is not launched, and is `unavailable`: it is outside what the
    kernel's parameters can express, neither an expected error nor a pass."""
    names = _size_names(op, b)
    blk = _block(op, names)
    if math.prod(blk) > 1024 or blk[2] > 64 or min(blk) < 1:
        return (f"a block of {blk} threads: the HIP runtime refuses a launch of more than 1024 threads a block "
                "(or z > 64, or none), so the host's call returns that error")
    grid = tuple(b.geo["grid"])
    if min(grid) < 0 or grid[0] > 2**31 - 1 or max(grid[1:], default=0) > 65535:
        return (f"a grid of {grid} blocks: no launch has a negative grid, more than 2^31 - 1 blocks in x or "
                "65535 in y and z")
    for p in op.params:
        if p.operand or p.role in ("dims", "strides", "scalar") or p.ctype not in INT_TYPES:
            continue
        v = _value(op, p, b, names)
        info = np.iinfo(np.uint64 if p.ctype == "size_t" else dtype(p.ctype).np)
        if not info.min <= v <= info.max:
            return (f"{p.name} = {v:,} does not fit the kernel's {p.ctype} parameter {p.name} "
                    f"([{info.min:,}, {info.max:,}]): no launch passes this case")
    return ""


def _size_names(op: KernelOp, b: KernelBuilt) -> dict:
    """The names a size expression may use: the shape class's sizes, every len/size/ndim parameter's
    value, and each operand's element count (`numel_<name>`)."""
    names = dict(b.geo["sizes"])
    for n, lay in b.layouts.items():
        names[f"numel_{n}"] = lay.numel
    for n, (lay, _) in b.outs.items():
        names.setdefault(f"numel_{n}", lay.numel)
    for p in op.params:
        if p.role in ("len", "size", "ndim"):
            names.setdefault(p.name, _value(op, p, b, names))
    return names


def _value(op: KernelOp, p: Param, b: KernelBuilt, names: dict) -> int:
    if p.role == "ndim":
        lay = b.layouts.get(p.of) or b.outs[p.of][0]
        return lay.rank
    if p.role == "len":
        if p.expr:
            return int(evaluate(p.expr, names))
        target = p.of or (op.inputs_of()[0].name if op.kind == "reduce" and op.inputs_of() else op.judged()[0].name)
        lay = b.layouts.get(target) or b.outs[target][0]
        return lay.numel
    return int(evaluate(p.expr or p.name, names))


def _block(op: KernelOp, names: dict) -> tuple[int, int, int]:
    blk = [int(evaluate(e, names)) for e in op.launch_rule.block]
    return tuple((blk + [1, 1, 1])[:3])


def _grid(op: KernelOp, b: KernelBuilt) -> tuple[int, int, int]:
    names = _size_names(op, b)
    names["block"] = _block(op, names)[0]
    g = [int(evaluate(e, names)) for e in op.launch_rule.grid]
    return tuple((g + [1, 1, 1])[:3])


def pack(b: KernelBuilt) -> Launch:
    op: KernelOp = b.op
    names = _size_names(op, b)
    args, buffers, dtypes = [], {}, {}
    outputs = []
    for p in op.params:
        if p.operand:
            if p.role in ("in",):
                buffers[p.name], lay = b.bases[p.name], b.layouts[p.name]
                dtypes[p.name] = b.dtypes[p.name].name
            else:
                lay, dt = b.outs[p.name]
                buffers[p.name] = b.initial[p.name].copy()
                dtypes[p.name] = dt.name
                outputs.append(p.name)
            args.append(Arg("ptr", (p.name, lay.offset), name=p.name))
        elif p.role in ("dims", "strides"):
            lay = b.layouts.get(p.of) or b.outs[p.of][0]
            vals = lay.shape if p.role == "dims" else lay.strides
            buffers[p.name] = np.asarray(vals, dtype=np.int64).astype(dtype(p.elem).np)
            dtypes[p.name] = p.elem
            args.append(Arg("ptr", (p.name, 0), name=p.name))
        elif p.role == "scalar":
            v = b.geo["scalars"][p.name]
            args.append(Arg("scalar", v, dtype=b.key, name=p.name) if p.ctype == "T" else
                        Arg("scalar", v, dtype=p.ctype, name=p.name) if p.ctype not in INT_TYPES else
                        Arg(p.ctype, int(v), name=p.name))
        else:
            args.append(Arg(p.ctype, _value(op, p, b, names), name=p.name))
    rule = op.launch_rule
    return Launch(op.kernel_name(b.key), args, buffers, tuple(outputs), grid=b.geo["grid"],
                  block=_block(op, names), shared_mem=int(evaluate(rule.shared, names)), dtypes=dtypes)


# ------------------------------------------------------------------------------ reference
def reference_inputs(op: KernelOp, key: str, ins: dict[str, np.ndarray], initial: dict[str, np.ndarray]) -> dict:
    """What a reference sees: float operands as float64, integers in their own dtype (so C's wrapping
    arithmetic is NumPy's), outputs the host initialised under their own names."""
    out = {}
    for name, a in {**initial, **ins}.items():
        a = np.asarray(a)
        out[name] = to_f64(a) if a.dtype.kind == "f" or str(a.dtype) in ("bfloat16",) else a
    return out


def run_reference(op: KernelOp, key: str, ins: dict, sizes: dict, scalars: dict) -> dict[str, np.ndarray]:
    """The reference's outputs (float64 for float outputs: rounded by `finish`)."""
    with np.errstate(all="ignore"):
        got = op.ref(ins, sizes, scalars, key)
    judged = op.judged()
    if not isinstance(got, dict):
        got = {judged[0].name: got}
    return got


def finish(op: KernelOp, key: str, raw: dict, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Each output in its dtype: floats rounded once, integers wrapped."""
    out = {}
    for p in op.judged():
        dt = op.elem(p, key)
        if p.name not in raw:
            raise ValueError(f"no {p.name!r} among its outputs ({', '.join(map(str, raw)) or 'none'})")
        v = np.asarray(raw[p.name])
        if v.dtype.kind in "OUSMm":        # None (a forgotten return), text, objects, dates: no values to judge
            # by (ml_dtypes' bf16 and fp8 are kind V: numbers)
            raise TypeError(f"{p.name} as {type(raw[p.name]).__name__}, not numbers")
        if v.dtype.kind == "c":             # (its real part alone was judged, the imaginary part dropped)
            raise TypeError(f"{p.name} as complex numbers, not real ones")
        shape = tuple(shapes[p.name])
        if v.shape != shape:
            # a value for every element (one value), a result or an output that is flat (row-major order),
            # or the same dims with size-1 dims more or fewer; never other dims of the same size (a
            # transposed result)
            same = v.size == math.prod(shape) and (v.ndim == 1 or len(shape) == 1 or [d for d in v.shape if d != 1]
                                                   == [d for d in shape if d != 1])
            if v.size != 1 and not same:
                raise ValueError(f"{p.name} of shape {v.shape} for an output of shape {shape}")
            v = np.broadcast_to(v, shape) if v.size == 1 else v.reshape(shape)
        if dt.is_float:
            out[p.name] = round_float(to_f64(v), dt)
        elif v.dtype.kind == "f":
            with np.errstate(all="ignore"):
                out[p.name] = np.nan_to_num(v).astype(np.int64).astype(dt.np)
        else:
            out[p.name] = v.astype(dt.np)
    return out


def _ref_inputs(b: KernelBuilt) -> dict:
    """The reference's inputs of a built case: its operands and the outputs the host initialised."""
    op: KernelOp = b.op
    init_logical = {n: logical(b.initial[n], lay) for n, (lay, _) in b.outs.items()
                    if op.param(n).role == "out" and op.param(n).init != "sentinel"}
    return reference_inputs(op, b.key, b.inputs, init_logical)


def expected(b: KernelBuilt) -> dict[str, np.ndarray]:
    op: KernelOp = b.op
    ins = _ref_inputs(b)
    names = _size_names(op, b)
    raw = run_reference(op, b.key, ins, names, b.geo["scalars"])
    shapes = {n: lay.shape for n, (lay, _) in b.outs.items()}
    try:
        b.exact = {n: np.asarray(v, dtype=np.float64) for n, v in raw.items()
                   if op.bound is not None and np.asarray(v).dtype.kind == "f"}
        return finish(op, b.key, raw, shapes)
    except (ValueError, TypeError, KeyError) as e:
        origin = getattr(op.ref, "origin", None)     # a declared reference: what it returned is the declaration's
        if origin is None:
            raise
        raise ReferenceRaised(f"reference returned {e} ({origin})") from e


# ------------------------------------------------------------------------------ judging
def accumulation_ok(exact: np.ndarray, got: np.ndarray, expected: np.ndarray, dt: DType,
                    magnitude: np.ndarray, m, also: Callable[[], tuple] = tuple) -> np.ndarray:
    """|got - exact| <= 1.01 m (u sum|terms| + eta/2) + max(u |exact|, eta/2) (m roundings in T, any
    order: Higham 4.3, with eta the smallest subnormal of T, the absolute error of a rounding that
    underflows), or the same value as the rounded reference or as one of also()'s arrays (the reference
    evaluated other ways: where an intermediate overflows, a fused and an unfused build disagree
    about inf and NaN, and each is right)."""
    u, eta = 2.0 ** -(dt.mant_bits + 1), 2.0 ** (dt.emin - dt.mant_bits)
    with np.errstate(all="ignore"):
        g64 = to_f64(got)
        lim = 1.01 * np.asarray(m, dtype=np.float64) * (u * np.abs(magnitude) + eta / 2) + \
            np.maximum(u * np.abs(exact), eta / 2)
        ok = same_value(got, expected) | (np.isfinite(exact) & np.isfinite(g64) & (np.abs(g64 - exact) <= lim))
        if not ok.all():                     # only then are the other evaluations worth their time
            for alt in also():
                ok |= same_value(got, alt)
        return ok


def judge(expected: dict, got: dict, b: KernelBuilt) -> Comparison:
    op: KernelOp = b.op
    if op.judge_fn is not None:
        return op.judge_fn(expected, got, b)
    parts = []
    bounds = None
    for p in op.judged():
        dt = b.outs[p.name][1]
        e, g = expected[p.name], got[p.name]
        if op.bound is not None and dt.is_float and p.name in b.exact:
            if bounds is None:
                bounds = op.bound(_ref_inputs(b), _size_names(op, b), b.geo["scalars"], b.key)
            mag, m, *rest = bounds[p.name]             # (magnitude, roundings[, other evaluations])
            also = rest[0] if rest else tuple
            ok = accumulation_ok(b.exact[p.name].reshape(e.shape), g, e, dt,
                                 np.broadcast_to(np.asarray(mag, dtype=np.float64), e.shape), m,
                                 lambda: tuple(np.broadcast_to(a, e.shape) for a in also()))
            c = mask_judge(e, g, dt, ok, _shown(b, e))
        else:
            c = compare(e, g, dt, op.tolerance, {k: v for k, v in b.inputs.items()}, b.dtypes)
        parts.append((p.name, c))
    return combine(parts)


def _shown(b: KernelBuilt, e: np.ndarray):
    same = {k: v for k, v in b.inputs.items() if v.shape == e.shape}

    def inputs(i, coords):
        return {k: str(v.reshape(-1)[i]) for k, v in same.items()}
    return inputs


def combine(parts: list[tuple[str, Comparison]]) -> Comparison:
    """One Comparison for several outputs: the first failing output's worst element (its name noted
    when there are several), counts summed."""
    n = sum(c.n for _, c in parts)
    n_bad = sum(c.n_bad for _, c in parts)
    ulps = [c.max_ulp for _, c in parts if c.max_ulp is not None]
    failing = [(name, c) for name, c in parts if not c.passed]
    if not failing:
        return Comparison(True, n, 0, max(ulps) if ulps else None, None)
    name, c = failing[0]
    if len(parts) > 1 and c.worst is not None:
        c.worst.add_note(f"output {name}")
    return Comparison(False, n, n_bad, max(ulps) if ulps else None, c.worst, c.bad)


def tolerance_text(op: KernelOp, key: str) -> str:
    dt = dtype(key)
    if op.bound is not None and dt.is_float:
        return (f"|err| <= 1.01 m (2^-{dt.mant_bits + 1} sum|terms| + eta/2) + 1/2 ulp vs the float64 reference "
                "(m roundings in T, any order, fused or not; eta: T's smallest subnormal); NaN/inf as the "
                "reference evaluated in float64, in T or in long double")
    if not dt.is_float:
        return "exact"
    return op.tolerance.describe(dt.name)


# ------------------------------------------------------------------------------ the cpu level
def launch_key(op: KernelOp, launch: Launch, key: str) -> str:
    """The dtype a launch runs in: the first T-typed operand's buffer (kernels without {T} in their
    name serve every dtype: copy_element)."""
    for p in op.params:
        if p.operand and p.elem == "T" and p.name in launch.dtypes:
            return launch.dtypes[p.name]
    return key


def emulate(ex, launch: Launch, bufs: dict[str, np.ndarray], op: KernelOp, key: str) -> None:
    """Interpret the launch as the kernel reads it: lengths, sizes and ranks from the by-value
    arguments, each operand's dims and strides from the arrays the launch passes (or contiguous,
    shaped by the op's expressions), through the executor's hooks (`role_strides`, `role_compute`,
    `role_store`) so broken subjects can override one behaviour."""
    key = launch_key(op, launch, key)
    args = {a.name: a for a in launch.args}
    names: dict[str, Any] = {}
    for p in op.params:
        if p.role in ("len", "size", "ndim"):
            v = int(args[p.name].value)
            names[p.name] = v
            if p.role == "size" and p.expr and p.expr.isidentifier():
                names.setdefault(p.expr, v)
            if p.role == "len" and p.expr and p.expr.isidentifier():
                names.setdefault(p.expr, v)
    if op.kind in ("map", "reduce"):
        n_par = next((p for p in op.params if p.role == "len"), None)
        if n_par is not None:
            names.setdefault("n", int(args[n_par.name].value))
    scalars = {p.name: args[p.name].value for p in op.params if p.role == "scalar"}

    def arr(name: str) -> np.ndarray:
        bn, off = args[name].value
        return np.asarray(bufs[bn][ex.pointer_offset(off):]).astype(np.int64)

    geometry: dict[str, tuple[tuple[int, ...], np.ndarray | None]] = {}
    strides_of = {}
    for p in op.params:
        if not p.operand:
            continue
        d, s = op.describes(p.name, "dims"), op.describes(p.name, "strides")
        nd = op.describes(p.name, "ndim")
        rank = names[nd.name] if nd is not None else None
        if d is not None:
            dims = arr(d.name)
            rank = len(dims) if rank is None else rank
            shape = tuple(int(x) for x in dims[:rank])
        else:
            shape = _emulated_shape(op, p, names, bufs, args, ex)
        if s is not None:
            strides_of[p.name] = arr(s.name)[:len(shape)]
        geometry[p.name] = (shape, None)
    for name, (shape, _) in geometry.items():
        geometry[name] = (shape, ex.role_strides(op, key, name, strides_of) if name in strides_of else None)

    def positions(name: str) -> np.ndarray:
        shape, strides = geometry[name]
        if strides is None:
            return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
        idx = np.zeros(shape, dtype=np.int64)
        for dim, (size, st) in enumerate(zip(shape, strides)):
            v = [1] * len(shape)
            v[dim] = size
            idx = idx + (np.arange(size, dtype=np.int64) * int(st)).reshape(v)
        return idx

    def view_of(name: str) -> np.ndarray:
        bn, off = args[name].value
        return bufs[bn][ex.pointer_offset(off):]

    ins = {p.name: view_of(p.name)[positions(p.name)] for p in op.inputs_of()}
    init = {p.name: view_of(p.name)[positions(p.name)] for p in op.params
            if p.role == "out" and p.init != "sentinel"}
    raw = ex.role_compute(op, key, reference_inputs(op, key, ins, init), names, scalars)
    shapes = {p.name: geometry[p.name][0] for p in op.judged()}
    for name, values in finish(op, key, raw, shapes).items():
        ex.role_store(op, key, name, view_of(name), positions(name).reshape(-1), np.asarray(values).reshape(-1))


def _emulated_shape(op: KernelOp, p: Param, names: dict, bufs, args, ex) -> tuple[int, ...]:
    """An operand's shape from the launch's arguments; when they do not say it (copy_element's input
    has no length), the rest of its buffer."""
    exprs = op.shape_exprs(p.name)
    if exprs is not None:
        try:
            return tuple(int(evaluate(e, names)) for e in exprs)
        except NameError:
            pass
    elif op.kind == "reduce" and p.role == "out":
        return (1,)
    elif "n" in names and op.kind in ("map", "reduce"):
        return (int(names["n"]),)
    bn, off = args[p.name].value
    return (len(bufs[bn]) - ex.pointer_offset(off),)


# ------------------------------------------------------------------------------ the op
def bytes_moved(b: KernelBuilt) -> int:
    """Bytes the kernel must move at least: every input element read once, every output written once."""
    total = sum(lay.numel * b.dtypes[n].bits // 8 for n, lay in b.layouts.items())
    total += sum(lay.numel * dt.bits // 8 for n, (lay, dt) in b.outs.items() if n not in b.layouts)
    return int(total)


def kernel_op(*, name: str, family: str, pattern: str, dtypes: tuple[str, ...], params: tuple[Param, ...],
              ref: Callable, kind: str = "map", type_names: dict[str, str] | None = None,
              launch: LaunchRule = LaunchRule(), shapes: dict[str, ShapeClass] | None = None,
              operand_shapes: dict[str, tuple[str, ...]] | None = None, tolerance: Tolerance = Tolerance(ulp=0),
              bound: Callable | None = None, judge_fn: Callable | None = None, judge_text: str = "",
              refuse: tuple[tuple[str, str], ...] = (), value_classes: tuple[str, ...] = ("normal", "special"),
              param_sets: tuple[dict, ...] = ({},), domain: dict[str, str] | None = None, semantics: str = "",
              divergences: tuple[str, ...] = (), dense_special: bool | None = None, profile: str = "") -> KernelOp:
    """A KernelOp with the generic spec its description defines (shape classes by kind unless given)."""
    op = KernelOp(name=name, family=family, root=pattern, dtypes=tuple(dtypes),
                  inputs=tuple(p.name for p in params if p.role in ("in", "inout")),
                  spec=None, param_sets=tuple(param_sets), tolerance=tolerance, domain=dict(domain or {}),
                  value_classes=tuple(value_classes), abi=abi_strings(params), semantics=semantics,
                  divergences=tuple(divergences), pattern=pattern, type_names=tuple((type_names or {}).items()),
                  params=tuple(params), kind=kind, launch_rule=launch,
                  operand_shapes=tuple((operand_shapes or {}).items()), refuse=tuple(refuse), ref=ref,
                  bound=bound, judge_fn=judge_fn, profile=profile,
                  dense_special=(kind == "map") if dense_special is None else dense_special)
    check(op)
    if shapes is None:
        shapes = map_shapes(op) if kind == "map" else reduce_shapes(op) if kind == "reduce" else None
    if not shapes:
        raise DeclarationError("a custom kernel needs shape classes (their sizes)")
    text = judge_text

    def tol(key: str) -> str:
        return text or tolerance_text(op, key)
    spec = StructuredSpec(shapes=shapes, build=build, pack=pack, expected=expected, judge=judge,
                          emulate=emulate, tolerance=tol, bytes_moved=bytes_moved)
    object.__setattr__(op, "spec", spec)
    return op
