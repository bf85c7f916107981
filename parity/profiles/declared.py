"""A port's own kernels, declared in `parity-kernels.toml` next to its sources.

    name = "vecops"                        # the profile: reports, case IDs (vecops.blas.axpy/f32/...)
    title = "vecops, a CUDA-to-HIP port"   # optional
    references = "refs.py"                 # optional: a Python module of reference functions (next to this file)

    [types]                                # optional: how kernel names spell each dtype (default: f32, f64, ...)
    f32 = "float"

    [launch]                               # optional defaults for every kernel
    block = 256                            # or [16, 16]; numbers or expressions over the sizes
    grid = "ceil(n / 256)"                 # or ["ceil(n / 16)", "ceil(m / 16)"]

    [[kernel]]
    op = "blas.axpy"                       # family.op
    name = "axpy_{T}"                      # kernel-name pattern ({T}: the dtype's spelling)
    dtypes = ["f32", "f64"]
    params = ["x: in", "y: in", "out: out", "alpha: scalar T", "n: len u32"]
    reference = "alpha * x + y"            # a NumPy expression, or refs.<function>
    tolerance = { roundings = 2 }          # "exact" | { ulp = N } | { ulp = { f32 = 2, f64 = 1 } } | "sum" |
                                           # { sum = "cols" }: an accumulation of that many terms in T, any order |
                                           # { roundings = N }: N operations rounded in T, fused or not
    scalars = [{ alpha = 2.5 }]            # one case parameter set each
    values = ["normal", "special"]         # value classes (parity.core.values)
    domain = { x = "positive" }            # per-operand input domain
    semantics = "out[i] = alpha * x[i] + y[i]"
    divergences = []
    kind = "map"                           # map | reduce | custom; default: custom with [kernel.shapes],
                                           # reduce when an out has an init (`acc: out = zero`), else map
    refuse = [["n == 0", "the host returns before launching"]]

A parameter is `NAME: ROLE [TYPE] [of OPERAND] [= VALUE]` (parity.profiles.kernels: the roles):
`x: in`, `idx: in u32`, `out: out`, `acc: out = zero` (what the host writes first: zero, first:<input>,
iota, value:<number>), `data: inout`, `tmp: temp`, `n: len u32 [of x]`, `x_dims: dims u32 of x`,
`x_strides: strides u64 of x`, `x_rank: ndim u32 of x`, `alpha: scalar T`, `m: size u32 [= EXPR]`.

A `custom` kernel gives its shape classes and its operands' shapes over their sizes:

    operand_shapes = { a = ["rows", "cols"], out = ["rows"] }
    [kernel.shapes]
    small = { rows = 4, cols = 3 }
    tails = { rows = 33, cols = 300, doc = "partial blocks", views = { a = "transposed" } }

References see float operands as float64 (rounded once to the output dtype afterwards) and integer
operands in their own dtype (C's wrapping arithmetic; `/` and `%` truncate as in C). A function of
the references module is called with the arguments its signature names: operands, scalars, sizes,
and `dtype` (the case's dtype, e.g. "f32"); it returns the output (one `out`) or a dict by name.

Every error is one line naming the file, the line and the field (`DeclarationError`), found when the
file loads: every name of every size expression is checked against the names the launch will have,
tolerances, scalar values, blocks and operand shapes against their ranges. The references module is
Python code of the port: parity imports it, as it would run the port's tests; what it raises on a case
is the declaration's (`ReferenceRaised`: verdict `reference-error`, with its file, line and function).
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from parity.core import files, toml
from parity.core.dtypes import ALIASES, DTYPES, dtype
from parity.core.layouts import view
from parity.core.numerics import round_float, scalar_to_dtype, to_f64
from parity.core.suggest import unknown
from parity.core.text import one_line
from parity.core.tolerance import Tolerance
from parity.core.values import VALUE_CLASSES
from parity.ops.base import ShapeClass
from parity.profiles.base import BUILTIN, Profile, default_sweeps
from parity.profiles.kernels import (INIT_RULES, INT_TYPES, ROLES, DeclarationError, KernelOp, LaunchRule, Param,
                                     ReferenceRaised, cdiv, custom_shape, evaluate, kernel_op, size_expr)

TOP_KEYS = {"name": "the profile's name", "title": "one line", "references": "a .py file next to this one",
            "types": "a table dtype -> spelling", "launch": "a table: block, grid, shared", "kernel": "[[kernel]] tables",
            "description": "text"}
KERNEL_KEYS = {"op": "family.op", "name": "the kernel-name pattern", "dtypes": "dtype names", "params": "parameters",
               "reference": "an expression or refs.<function>", "tolerance": "exact, sum, { roundings = N } or { ulp = N }",
               "scalars": "a list of tables", "values": "value classes", "domain": "operand -> domain",
               "semantics": "text", "divergences": "a list of strings", "kind": "map, reduce or custom",
               "shapes": "shape classes (custom)", "operand_shapes": "operand -> sizes (custom)",
               "block": "the block", "grid": "the grid", "shared": "bytes of shared memory", "refuse": "host refusals"}
DOMAINS = ("positive", "nonzero", "divisor", "unit", "small", "mask")
PARAM_RE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<role>[A-Za-z_]+)(?P<rest>[^=]*?)\s*(?:=\s*(?P<value>.+?))?\s*$")
_SPECIAL_ARGS = ("dtype", "sizes", "scalars")


_HEADER = re.compile(r"^\s*\[\[?\s*[A-Za-z_][\w.-]*\s*\]\]?\s*(#.*)?$")     # a [table] or [[array]] header


class _Where:
    """Line numbers of a declaration's fields, found in its text (tomllib keeps none)."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()
        self.kernels = [i for i, ln in enumerate(self.lines) if re.match(r"^\s*\[\[\s*kernel\s*\]\]", ln)]

    def line(self, field: str | None = None, kernel: int | None = None, sub: str = "") -> int:
        lo, hi = 0, len(self.lines)
        if kernel is not None and kernel < len(self.kernels):
            lo = self.kernels[kernel]
            hi = self.kernels[kernel + 1] if kernel + 1 < len(self.kernels) else len(self.lines)
        elif self.kernels:
            hi = self.kernels[0]                  # a top-level key: before the first [[kernel]]
        if field:
            head = field.split(".")[0]
            for i in range(lo, hi):
                if re.match(rf"^\s*{re.escape(head)}\s*=", self.lines[i]) or \
                        re.match(rf"^\s*\[\s*(kernel\.)?{re.escape(head)}\s*\]", self.lines[i]):
                    for j in range(i, hi) if sub else ():     # an entry of that table: its own line
                        if j > i and _HEADER.match(self.lines[j]):
                            break                             # the next table: not this one's entry
                        if re.match(rf"^\s*{re.escape(sub)}\s*=", self.lines[j]) or \
                                re.search(rf"[{{,]\s*{re.escape(sub)}\s*=", self.lines[j]):
                            return j + 1
                    return i + 1
        return lo + 1

    def error(self, msg: str, field: str | None = None, kernel: int | None = None, label: str = "",
              sub: str = "", line: int | None = None) -> DeclarationError:
        """`file:line: kernel <label>: field: msg` (line: the field's, its entry `sub`'s, or as given)."""
        where = f"{self.path}:{line or self.line(field, kernel, sub)}: "
        who = f"kernel {label}: " if label else (f"kernel #{kernel + 1}: " if kernel is not None else "")
        return DeclarationError(f"{where}{who}{field + ': ' if field else ''}{msg}")


def _other_evaluations(ref, inputs: dict, sizes: dict, scalars: dict, key: str, outs: list[str]) -> list[dict]:
    """The reference with its float operands in T (every operation rounded in T: an unfused build) and
    in long double (wider range and precision than float64 on x86: close to a fused build), each
    output rounded once to T; an evaluation the reference cannot take is left out."""
    t = dtype(key)
    if not t.is_float:
        return []
    out = []
    for wide in (t.np, np.longdouble):
        cast = {n: v.astype(wide) if np.asarray(v).dtype.kind == "f" else v for n, v in inputs.items()}
        try:
            with np.errstate(all="ignore"):
                got = ref(cast, sizes, scalars, key)
        except Exception:                        # a references-module function that wants float64
            continue
        got = got if isinstance(got, dict) else {outs[0]: got}
        with np.errstate(all="ignore"):
            out.append({o: np.asarray(v).astype(np.float64) if t.name == "f64" else round_float(to_f64(v), t)
                        for o, v in got.items() if np.asarray(v).dtype.kind == "f"})
    return out


def _strings(value, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"must be a list of {what} (strings)")
    return value


# C's spellings of the types a parameter may name, for the message that refuses them
_C_TYPES = {"int": "i32", "int32_t": "i32", "unsigned": "u32", "unsigned int": "u32", "uint32_t": "u32",
            "uint": "u32", "long long": "i64", "int64_t": "i64", "long": "i64", "unsigned long long": "u64",
            "uint64_t": "u64", "short": "i16", "int16_t": "i16", "unsigned short": "u16", "uint16_t": "u16",
            "char": "i8", "int8_t": "i8", "unsigned char": "u8", "uint8_t": "u8", "float": "f32", "double": "f64",
            "half": "f16", "__half": "f16", "bfloat16": "bf16", "__nv_bfloat16": "bf16", "hip_bfloat16": "bf16"}


def parse_param(text: str) -> Param:
    """`NAME: ROLE [TYPE] [of OPERAND] [= VALUE]` -> Param (ValueError with what is wrong)."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a string 'name: role [type]'")
    m = PARAM_RE.match(text)
    if not m:
        raise ValueError(f"{text!r}: expected 'name: role [type] [of operand] [= value]'")
    name, role, value = m["name"], m["role"], m["value"]
    if role not in ROLES:
        raise ValueError(unknown("role", role, ROLES) + f" (in {text!r})")
    words = m["rest"].split()
    of = ""
    if "of" in words:
        k = words.index("of")
        if k + 1 >= len(words):
            raise ValueError(f"{text!r}: 'of' needs an operand name")
        of = words[k + 1]
        words = words[:k] + words[k + 2:]
    if len(words) > 1:
        raise ValueError(f"{text!r}: one type after the role, not {' '.join(words)!r}")
    typ = words[0] if words else ""
    if typ:
        known = ["T", *INT_TYPES, *DTYPES]
        if ALIASES.get(typ, typ) not in known:
            c = _C_TYPES.get(typ.replace("const", "").replace("*", "").strip())
            if c:                                      # what a CUDA author types first
                ptr = " (a pointer's element type is its operand's dtype: no type after in/out)" if "*" in typ else ""
                raise ValueError(f"unknown type {typ!r}; parity spells C's {typ.replace('*', '').strip()} {c!r}{ptr} "
                                 f"(in {text!r})")
            raise ValueError(unknown("type", typ, known) + f" (in {text!r})")
        typ = ALIASES.get(typ, typ)
    if role in ("in", "out", "inout", "temp"):
        if value and role != "out":
            raise ValueError(f"{text!r}: only an out takes '= init'")
        init = (value or "sentinel").strip()
        if init.split(":")[0] not in INIT_RULES:
            raise ValueError(f"{text!r}: unknown init {init!r} (sentinel, zero, first:<input>, iota, value:<number>)")
        return Param(name, role, "ptr", elem=typ or "T", init=init)
    if role in ("dims", "strides"):
        if not of:
            raise ValueError(f"{text!r}: a {role} array says whose: '{name}: {role} u32 of x'")
        return Param(name, role, "ptr", elem=typ or "u32", of=of)
    if role == "scalar":
        return Param(name, role, typ or "T")
    ctype = typ or "u32"
    if ctype not in INT_TYPES:
        raise ValueError(f"{text!r}: a {role} is an integer ({', '.join(INT_TYPES)}), not {ctype}")
    if role == "ndim" and not of:
        raise ValueError(f"{text!r}: a rank says whose: '{name}: ndim u32 of x'")
    return Param(name, role, ctype, of=of, expr=(value or "").strip())


# ------------------------------------------------------------------------------ references
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Call, ast.Name,
            ast.Load, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.keyword,
            ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
HELPERS = {name: getattr(np, name) for name in (
    "abs", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tanh", "minimum", "maximum", "fmax", "fmin",
    "where", "sum", "prod", "cumsum", "sort", "argsort", "arange", "clip", "floor", "ceil", "round", "isnan",
    "zeros_like", "ones_like", "full", "concatenate", "transpose", "dot", "matmul", "max", "min", "mean")}


# np.<name> a reference expression may use: ufuncs, scalar types, constants and the array functions
# below, none of which reads or writes a file, calls back into Python or sets NumPy's global state
# (np.load of a pickle would run code, np.savetxt writes anywhere: the declaration is a port's, and
# may be untrusted). Anything else goes in the references module, which is the port's own Python.
_NP_FUNCTIONS = frozenset("""
    abs absolute all allclose amax amin any arange argmax argmin argpartition argsort argwhere around array
    array_equal array_split asarray ascontiguousarray astype atleast_1d atleast_2d atleast_3d average bincount
    broadcast_arrays broadcast_to can_cast choose clip concatenate copy count_nonzero cross cumprod cumsum
    cumulative_prod cumulative_sum diag diagonal diff digitize dot einsum expand_dims eye finfo fix flatnonzero
    flip fliplr flipud full full_like hstack identity iinfo indices inner isclose ix_ kron lexsort linspace
    max mean median meshgrid min moveaxis nan_to_num nanmax nanmean nanmin nanprod nansum nonzero ones
    ones_like outer pad partition percentile prod promote_types quantile ravel ravel_multi_index repeat
    reshape result_type roll rot90 round searchsorted select shape size sort split squeeze stack std sum
    swapaxes take take_along_axis tensordot tile trace transpose tril triu unique unravel_index var vdot
    vstack where zeros zeros_like ndim sinc i0 interp real imag angle convolve correlate isin append concat
    column_stack dstack block insert delete resize ptp nanargmax nanargmin nanstd nanvar nancumsum nancumprod
    nanmedian nanpercentile nanquantile issubdtype isreal iscomplex trim_zeros histogram cov corrcoef
""".split())


def _np_allowed(name: str) -> bool:
    obj = getattr(np, name, None)
    if obj is None:
        return name == "newaxis"
    if name in _NP_FUNCTIONS or isinstance(obj, (np.ufunc, float, np.generic)):   # (np.True_ is a value)
        return True
    return isinstance(obj, type) and (issubclass(obj, np.generic) or obj is np.dtype)


class _CDiv(ast.NodeTransformer):
    """`a / b` and `a % b` as C computes them on integers (truncating)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Div, ast.Mod)):
            fn = "_cdiv" if isinstance(node.op, ast.Div) else "_cmod"
            return ast.copy_location(ast.Call(ast.Name(fn, ast.Load()), [node.left, node.right], []), node)
        return node


def _cmod(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.fmod(a, b)
    return a - b * cdiv(a, b)


def typed_scalars(scalars: dict, ctypes: dict[str, str], key: str) -> dict:
    """Each scalar as the host passes it: a T (or its declared type) by value, rounded or truncated."""
    out = {}
    for n, v in scalars.items():
        t = key if ctypes.get(n, "T") == "T" else ctypes[n]
        if t in INT_TYPES:
            out[n] = int(v)
        else:
            x = scalar_to_dtype(float(v), dtype(t))[0]
            out[n] = float(x) if dtype(t).is_float else x
    return out


def _constant(node: ast.AST) -> bool:
    """An expression of literals only (no name: nothing of it is an array)."""
    return not any(isinstance(n, ast.Name) for n in ast.walk(node))


def _runaway(node: ast.AST) -> bool:
    """A power or shift of constants that Python would compute on the host for as long as it takes
    (9**9**9**9, 1 << 10**12): allowed only of two numbers as written, the second at most 4096."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.LShift))):
        return False
    if not (_constant(node.left) and _constant(node.right)):
        return False                       # (an array's power: NumPy's, elementwise)
    base, exp = _literal(node.left), _literal(node.right)
    return base is None or exp is None or abs(exp) > 4096


def _literal(node: ast.AST) -> float | None:
    """The value of a number written as it is (`2`, `-0.5`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    ok = isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return node.value if ok else None


def expression_reference(text: str, ctypes: dict[str, str] | None = None):
    """A reference from a NumPy expression (names: operands, scalars, sizes, `np`, HELPERS); ValueError
    for syntax or a construct that is not allowed."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"{text!r} is not an expression: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"{type(node).__name__} is not allowed in a reference expression")
        if isinstance(node, ast.Attribute) and (node.attr.startswith("_") or not isinstance(node.value, ast.Name)
                                                or node.value.id != "np"):
            raise ValueError(f"only np.<function> attributes are allowed, not .{node.attr}")
        if isinstance(node, ast.Attribute) and not _np_allowed(node.attr):
            raise ValueError(f"np.{node.attr} is not allowed in a reference expression (ufuncs, dtypes, constants "
                             "and array functions that touch no file; a references module takes any Python)")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise ValueError(f"name {node.id!r} is not allowed")
        if _runaway(node):
            raise ValueError("a power or shift of constants is allowed of two numbers, the second at most 4096 "
                             "(9**9**9**9 or 1 << 10**12: Python computes it on the host for as long as it takes)")
    free = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(HELPERS) - {"np"}
    code_float = compile(tree, "<reference>", "eval")
    code_int = compile(ast.fix_missing_locations(_CDiv().visit(ast.parse(text.strip(), mode="eval"))),
                       "<reference>", "eval")

    def ref(ins, sizes, scalars, key):
        env = {"np": np, **HELPERS, "_cdiv": cdiv, "_cmod": _cmod, **sizes,
               **typed_scalars(scalars, ctypes or {}, key), **ins}
        missing = free - set(env)
        if missing:
            raise NameError(f"reference {text!r}: unknown name {sorted(missing)[0]!r}")
        code = code_float if dtype(key).is_float else code_int
        return eval(code, {"__builtins__": {}}, env)
    ref.free_names = free
    return ref


def function_reference(fn, ctypes: dict[str, str] | None = None):
    """A reference from a function of the references module: called with the arguments it names."""
    names = list(inspect.signature(fn).parameters)

    def ref(ins, sizes, scalars, key):
        typed = typed_scalars(scalars, ctypes or {}, key)
        env = {**sizes, **typed, **ins, "dtype": key, "sizes": sizes, "scalars": typed}
        return fn(**{n: env[n] for n in names if n in env})
    ref.free_names = set(names) - set(_SPECIAL_ARGS)
    return ref


def attributed(ref, where: Callable[[BaseException], str], origin: str, outs: list[str]):
    """The reference, raising ReferenceRaised (the declaration's, not parity's) with `where(e)` when the
    port's expression or function raises, or returns no dict of its outputs where there are several.
    `origin` (the function or expression and its line) goes with it: what its outputs cannot take
    (kernels.expected) is the declaration's too."""
    def wrapped(ins, sizes, scalars, key):
        try:
            got = ref(ins, sizes, scalars, key)
        except ReferenceRaised:
            raise
        except (Exception, SystemExit) as e:     # (a reference's sys.exit() is its error, never parity's exit)
            raise ReferenceRaised(f"reference raised {type(e).__name__}: {e} ({where(e)})") from e
        if len(outs) > 1 and not (isinstance(got, dict) and set(outs) <= set(got)):
            raise ReferenceRaised(f"reference returned {type(got).__name__}"
                                  + (f" with {', '.join(map(str, got))}" if isinstance(got, dict) else "")
                                  + f", not a dict of its outputs {', '.join(outs)} ({origin})")
        return got
    wrapped.free_names, wrapped.origin = ref.free_names, origin
    return wrapped


def raised_at(fn, shown: str) -> Callable[[BaseException], str]:
    """Where a references-module function raised: the traceback's last frame in its file
    (`refs.py:12, in rowsum`), else the function's own line (a call that never entered it)."""
    module_file = os.path.realpath(inspect.getsourcefile(fn) or "")

    def where(e: BaseException) -> str:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.realpath(f.filename) == module_file]
        if frames:
            return f"{shown}:{frames[-1].lineno}, in {frames[-1].name}"
        try:
            return f"{shown}:{inspect.getsourcelines(fn)[1]}, in {fn.__name__}"
        except (OSError, TypeError):
            return f"{shown}, in {fn.__name__}"
    return where


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"parity_declared_{re.sub(r'[^A-Za-z0-9_]', '_', name)}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    was, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # no __pycache__ in the port's folder
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = was
    return mod


# ------------------------------------------------------------------------------ loading
def load_declaration(path: Path) -> Profile:
    """The profile a parity-kernels.toml declares; DeclarationError `file:line: field: what` otherwise."""
    path = Path(path)
    try:
        text = files.read_text(path, "profile declaration")
    except files.FileRefused as e:
        raise DeclarationError(str(e)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise DeclarationError(f"{path}: cannot read the declaration: {getattr(e, 'strerror', None) or e}") from None
    where = _Where(path, text)
    try:
        data = toml.loads(text)
    except (RecursionError, MemoryError):
        raise DeclarationError(f"{path}: not a declaration (nested too deeply)") from None
    except toml.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise DeclarationError(f"{path}:{m.group(1) if m else 1}: {msg}") from None
    for key in data:
        if key not in TOP_KEYS:
            raise where.error(unknown("key", key, TOP_KEYS), key)
    name = data.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name or ""):
        raise where.error("the profile needs a name: letters, digits, - and _ (it prefixes every case ID)", "name")
    if name in BUILTIN:
        raise where.error(f"{name!r} is a built-in profile; choose another name", "name")
    types = data.get("types", {})
    if not isinstance(types, dict) or not all(isinstance(v, str) for v in types.values()):
        raise where.error("must be a table of dtype = \"spelling\"", "types")
    for k, v in types.items():
        if ALIASES.get(k, k) not in DTYPES:
            raise where.error(unknown("dtype", k, DTYPES), "types", sub=k)
        if not re.fullmatch(r"\w+", v):
            raise where.error(f"{k} = {v!r}: a spelling is letters, digits and _ (it goes into kernel names)",
                              "types", sub=k)
    types = {ALIASES.get(k, k): v for k, v in types.items()}
    launch = data.get("launch", {})
    if not isinstance(launch, dict):
        raise where.error("must be a table (block, grid, shared)", "launch")
    for k in launch:
        if k not in ("block", "grid", "shared"):
            raise where.error(unknown("key", k, ("block", "grid", "shared")), "launch", sub=k)
    for k in ("title", "description"):          # a title heads every report: one line, no control character
        if k in data and (not isinstance(data[k], str) or k == "title" and one_line(data[k]) != data[k]):
            raise where.error("must be a string" + (" of one line" if k == "title" else ""), k)
    refs = None
    if "references" in data:
        rp = data["references"]
        if not isinstance(rp, str) or not rp.endswith(".py") or "\0" in rp:
            raise where.error("must be a .py file next to the declaration", "references")
        target = (path.parent / rp).resolve()
        if not target.is_relative_to(path.parent.resolve()):
            raise where.error(f"{rp} is outside the declaration's folder", "references")
        if not target.is_file():
            raise where.error(f"{rp} does not exist", "references")
        try:
            refs = _load_module(target, name)
        except SystemExit as e:                  # (sys.exit() in the port's module is its error, not parity's exit)
            raise where.error(f"{rp} exits while it is imported (SystemExit: {e.code})", "references") from None
        except Exception as e:
            raise where.error(f"{rp} does not import: {type(e).__name__}: {e}", "references") from None
    kernels = data.get("kernel")
    if not isinstance(kernels, list) or not kernels or not all(isinstance(k, dict) for k in kernels):
        raise where.error("a declaration needs one or more [[kernel]] tables", "kernel")
    ops = {}
    for i, k in enumerate(kernels):
        op = _kernel(k, i, name, types, launch, refs, where)
        if op.name in ops:
            raise where.error(f"op {op.name[len(name) + 1:]!r} is declared twice", "op", i)
        ops[op.name] = op
    seen: dict[str, str] = {}
    for op in ops.values():
        for key in op.dtypes:
            kn = op.kernel_name(key)
            if kn in seen and seen[kn] != op.name:
                i = list(ops).index(op.name)
                raise where.error(f"kernel {kn} is also op {seen[kn][len(name) + 1:]}'s", "name", i)
            seen[kn] = op.name
    return Profile(name=name, title=str(data.get("title") or f"{name}: kernels declared in {path.name}"), ops=ops,
                   prefix=f"{name}.", source=str(path), sweeps=default_sweeps())


# ------------------------------------------------------------------------------ one [[kernel]] table
@dataclass(frozen=True)
class _KernelEntry:
    """One [[kernel]] table, and where its errors point: the line of the field, the op as the label."""
    table: dict
    index: int
    where: _Where

    def error(self, msg: str, field: str, sub: str = "", line: int | None = None) -> DeclarationError:
        op = self.table.get("op")
        return self.where.error(msg, field, self.index, op if isinstance(op, str) else "", sub, line)


def _kernel(k: dict, i: int, profile: str, types: dict, launch: dict, refs: ModuleType | None,
            where: _Where) -> KernelOp:
    """The KernelOp one [[kernel]] table declares, its fields checked in this order (the first error is the
    one reported)."""
    entry = _KernelEntry(k, i, where)
    _check_keys(entry)
    op, pattern, dts = _identity(entry)
    params = _params(entry)
    kind = _kind(entry, params)
    tolerance, sum_terms = _tolerance(entry)
    values = _value_classes(entry)
    sets = _scalar_sets(entry, params)
    domain = _domain(entry, params)
    rule = _launch_rule(entry, launch)
    refuse = _refusals(entry)
    shapes, operand_shapes = _shapes(entry, kind, params)
    _check_inits(entry, params)
    _check_size_names(entry, launch, params, kind, shapes, rule, refuse, sum_terms)
    ref = _reference(entry, refs, params, shapes)
    semantics, divergences = _description(entry)
    bound = None if sum_terms is None else _accumulation_bound(ref, params, sum_terms)
    try:
        return kernel_op(name=f"{profile}.{op}", family=op.split(".")[0], pattern=pattern, dtypes=tuple(dts),
                         params=tuple(params), ref=ref, kind=kind, type_names=types, launch=rule, shapes=shapes,
                         operand_shapes=operand_shapes, tolerance=tolerance, bound=bound, refuse=refuse,
                         value_classes=tuple(values), param_sets=tuple(sets), domain=domain, semantics=semantics,
                         divergences=divergences, profile=profile)
    except DeclarationError as e:
        raise entry.error(str(e), "params")


def _operands(params: list[Param]) -> set[str]:
    return {p.name for p in params if p.operand}


def _scalar_names(params: list[Param]) -> list[str]:
    return [p.name for p in params if p.role == "scalar"]


def _outputs(params: list[Param]) -> list[str]:
    return [p.name for p in params if p.role in ("out", "inout")]


def _check_keys(entry: _KernelEntry) -> None:
    """No unknown key, and every key a kernel cannot go without."""
    for key in entry.table:
        if key not in KERNEL_KEYS:
            raise entry.error(unknown("key", key, KERNEL_KEYS), key)
    for key in ("op", "name", "dtypes", "params", "reference"):
        if key not in entry.table:
            raise entry.error("missing (every kernel has op, name, dtypes, params, reference)", key)


def _identity(entry: _KernelEntry) -> tuple[str, str, list[str]]:
    """The op (family.op), the kernel-name pattern and the dtypes (aliases resolved)."""
    op, pattern = entry.table["op"], entry.table["name"]
    if not isinstance(op, str) or not re.fullmatch(r"[A-Za-z_][\w-]*\.[A-Za-z_][\w.-]*", op):
        raise entry.error(f"{op!r}: must be 'family.op'", "op")
    if not isinstance(pattern, str) or not re.fullmatch(r"[A-Za-z_]\w*(\{T\}\w*)*", pattern):
        raise entry.error(f"{pattern!r}: a C identifier, with {{T}} where the dtype goes", "name")
    try:
        dts = [ALIASES.get(d, d) for d in _strings(entry.table["dtypes"], "dtypes")]
    except ValueError as e:
        raise entry.error(str(e), "dtypes")
    if not dts:
        raise entry.error("at least one dtype", "dtypes")
    for d in dts:
        if d not in DTYPES:
            raise entry.error(unknown("dtype", d, DTYPES), "dtypes")
        if dts.count(d) > 1:
            raise entry.error(f"{d} is listed twice", "dtypes")
    return op, pattern, dts


def _params(entry: _KernelEntry) -> list[Param]:
    """The parameters, in ABI order."""
    texts = entry.table["params"]
    if not isinstance(texts, list) or not texts:
        raise entry.error("must be a list of 'name: role [type]' strings", "params")
    params = []
    for j, p in enumerate(texts):
        try:
            params.append(parse_param(p))
        except ValueError as e:
            raise entry.error(f"#{j + 1}: {e}", "params")
    return params


def _kind(entry: _KernelEntry, params: list[Param]) -> str:
    """As declared; else custom with shape classes, reduce where an out has an init, else map."""
    k = entry.table
    kind = k.get("kind", "reduce" if any(p.role == "out" and p.init != "sentinel" for p in params)
                 and not k.get("shapes") else "custom" if k.get("shapes") else "map")
    if kind not in ("map", "reduce", "custom"):
        raise entry.error(f"{kind!r}: map, reduce or custom", "kind")
    return kind


def _tolerance(entry: _KernelEntry) -> tuple[Tolerance, str | None]:
    """The tolerance, and the terms of the accumulation bound ("": the largest input) or None without one."""
    spec, tolerance, sum_terms = entry.table.get("tolerance", "exact"), Tolerance(ulp=0), None
    if isinstance(spec, dict) and set(spec) == {"roundings"}:
        # the accumulation bound with m = N: an expression of N operations, each rounded once in T, in
        # any order and fused or not (an fma is one rounding where the reference's float64 is two)
        n = spec["roundings"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise entry.error(f"roundings = {n!r}: how many operations round in T, a whole number >= 1", "tolerance")
        sum_terms = str(n)
    elif spec == "sum" or (isinstance(spec, dict) and set(spec) == {"sum"}):
        sum_terms = "" if spec == "sum" else spec["sum"]
        if not isinstance(sum_terms, str):
            raise entry.error("{ sum = \"size expression\" }: how many terms each output adds up", "tolerance")
        if sum_terms:
            try:
                size_expr(sum_terms)
            except (SyntaxError, ValueError) as x:
                raise entry.error(f"sum = {sum_terms!r}: {getattr(x, 'msg', None) or x}", "tolerance")
    elif spec == "exact":
        pass
    elif isinstance(spec, dict) and set(spec) <= {"ulp", "atol"}:
        tolerance = Tolerance(ulp=_budget(entry, spec, "ulp", whole=True), atol=_budget(entry, spec, "atol"))
    else:
        raise entry.error(f"{spec!r}: \"exact\", \"sum\", {{ sum = \"terms\" }}, {{ roundings = N }} or "
                          "{ ulp = N }", "tolerance")
    return tolerance, sum_terms


def _budget(entry: _KernelEntry, spec: dict, key: str, whole: bool = False):
    """tolerance's ulp (a whole number >= 0) or atol (a finite number >= 0), or a table dtype -> that
    (`*`: every other dtype); the kernel's dtypes only."""
    value = spec.get(key, 0 if whole else 0.0)
    what = "a whole number >= 0" if whole else "a finite number >= 0"
    dts = [ALIASES.get(d, d) for d in entry.table["dtypes"]]

    def one(v, label: str):
        ok = isinstance(v, int) if whole else isinstance(v, (int, float))
        if not ok or isinstance(v, bool) or not np.isfinite(v) or v < 0:
            raise entry.error(f"{label} = {v!r}: {what} (or a table dtype = N)", "tolerance", key)
        return v
    if not isinstance(value, dict):
        return one(value, key)
    for d, v in value.items():
        if d != "*" and ALIASES.get(d, d) not in dts:
            raise entry.error(f"{key}.{d}: not a dtype of the kernel ({', '.join(dts)}; * for every other)",
                              "tolerance", key)
        one(v, f"{key}.{d}")
    return {ALIASES.get(d, d): v for d, v in value.items()}


def _value_classes(entry: _KernelEntry) -> list[str]:
    try:
        values = _strings(entry.table.get("values", ["normal", "special"]), "value classes")
    except ValueError as e:
        raise entry.error(str(e), "values")
    if not values:                       # (an empty list dropped the kernel from every sweep, silently)
        raise entry.error("at least one value class (e.g. [\"normal\", \"special\"])", "values")
    for v in values:
        if v not in VALUE_CLASSES:
            raise entry.error(unknown("value class", v, VALUE_CLASSES), "values")
    return values


def _scalar_sets(entry: _KernelEntry, params: list[Param]) -> list[dict]:
    """The scalars' values, one table per case parameter set (one empty set for a kernel without scalars)."""
    names = _scalar_names(params)
    sets = entry.table.get("scalars", [{}] if not names else None)
    if sets is None:
        raise entry.error(f"the kernel takes scalars ({', '.join(names)}): give their values, "
                          "scalars = [{ " + " = 1.5, ".join(names) + " = 1.5 }]", "scalars")
    if not isinstance(sets, list) or not all(isinstance(s, dict) for s in sets) or not sets:
        raise entry.error("must be a list of tables, one per case parameter set", "scalars")
    ctypes = {p.name: p.ctype for p in params if p.role == "scalar"}
    for s in sets:
        if set(s) != set(names) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                           for v in s.values()):
            raise entry.error(f"every table gives a number for each scalar ({', '.join(names) or 'none'}), "
                              f"not {sorted(s)}", "scalars")
        for n, v in s.items():
            if ctypes[n] in INT_TYPES:
                _int_scalar(entry, n, v, ctypes[n])
    return sets


def _int_scalar(entry: _KernelEntry, name: str, v, ctype: str) -> None:
    """A scalar the kernel takes as an integer: a whole number its type holds."""
    info = np.iinfo(np.uint64 if ctype == "size_t" else dtype(ctype).np)
    if not float(v).is_integer() or not info.min <= v <= info.max:
        raise entry.error(f"{name} = {v!r}: a {ctype} takes whole numbers from {info.min} to {info.max}",
                          "scalars", name)


def _domain(entry: _KernelEntry, params: list[Param]) -> dict:
    """Operand -> the input domain its values are drawn from."""
    domain, operands = entry.table.get("domain", {}), _operands(params)
    if not isinstance(domain, dict):
        raise entry.error("must be a table operand = domain", "domain")
    for n, d in domain.items():
        if n not in operands:
            raise entry.error(unknown("operand", n, operands), "domain")
        if d not in DOMAINS:
            raise entry.error(unknown("domain", d, DOMAINS), "domain")
    return domain


def _launch_rule(entry: _KernelEntry, launch: dict) -> LaunchRule:
    """Block, grid and shared memory: the kernel's own, else the declaration's [launch], else a 256-thread
    1-D launch over n."""
    k = entry.table
    block = k.get("block", launch.get("block", 256))
    grid = k.get("grid", launch.get("grid"))
    shared = k.get("shared", launch.get("shared", 0))
    block = tuple(block) if isinstance(block, list) else (block,)
    if grid is None:
        grid = (f"ceil(n / {block[0]})",) if isinstance(block[0], int) else ("ceil(n / block)",)
    grid = tuple(grid) if isinstance(grid, list) else (grid,)
    for field, exprs in (("block", block), ("grid", grid), ("shared", (shared,))):
        line = _launch_line(entry, launch, field)
        if not 1 <= len(exprs) <= 3:
            raise entry.error("one to three dimensions", field, line=line)
        for e in exprs:
            if isinstance(e, bool) or not isinstance(e, (int, str)):
                raise entry.error(f"{e!r}: a number or an expression over the sizes", field, line=line)
            if isinstance(e, int) and e < (0 if field == "shared" else 1):
                raise entry.error(f"{e}: {'bytes, >= 0' if field == 'shared' else 'a size >= 1'}", field, line=line)
            if isinstance(e, str):
                try:
                    size_expr(e)
                except (SyntaxError, ValueError) as x:
                    raise entry.error(f"{e!r}: {getattr(x, 'msg', None) or x}", field, line=line)
    if all(isinstance(b, int) for b in block) and math.prod(block) > 1024:
        raise entry.error(f"{list(block)}: {math.prod(block)} threads; a block holds at most 1024", "block",
                          line=_launch_line(entry, launch, "block"))
    return LaunchRule(block, grid, str(shared))


def _launch_line(entry: _KernelEntry, launch: dict, field: str) -> int | None:
    """The line of a launch field a kernel takes from [launch] (None: the kernel's own, or the default)."""
    if field in entry.table or field not in launch:
        return None
    return entry.where.line("launch", None, field)


def _check_inits(entry: _KernelEntry, params: list[Param]) -> None:
    """What the host writes into an out first: `first:<input>` names an input, `value:<expr>` is an
    expression over the scalars."""
    inputs, scalars = [p.name for p in params if p.role in ("in", "inout")], set(_scalar_names(params))
    for p in params:
        rule, _, arg = p.init.partition(":") if p.role == "out" else ("", "", "")
        if rule == "first" and arg not in inputs:
            raise entry.error(f"{p.name}: first:{arg}: {unknown('input', arg, inputs)}", "params")
        if rule == "value":
            _known_names(entry, arg, scalars, "params", what=f"{p.name}'s value:", kind="scalar")


def _size_scopes(kind: str, shapes: dict | None, params: list[Param]) -> list[tuple[str, set[str]]]:
    """(shape class, the names a launch expression may use in it): its sizes (`n` for map and reduce
    kernels, whose shape classes are parity's), `numel_<operand>`, and every len, size and ndim
    parameter (kernels.KernelBuilt's names, in the order pack adds them)."""
    classes = [(name, set(sc.geo.get("sizes", {}))) for name, sc in shapes.items()] if kind == "custom" and shapes \
        else [("", {"n"})]
    return [(name, sizes | {f"numel_{p.name}" for p in params if p.operand}) for name, sizes in classes]


def _check_size_names(entry: _KernelEntry, launch: dict, params: list[Param], kind: str, shapes: dict | None,
                      rule: LaunchRule, refuse: tuple, sum_terms: str | None) -> None:
    """Every name of every size expression (size and len parameters, block, grid, shared memory, the
    refusals, the sum tolerance's terms) is one the launch will have, in every shape class: a misspelled
    size is a declaration error here, not an error on every case."""
    for cls, known in _size_scopes(kind, shapes, params):
        for p in params:
            if p.role in ("len", "size") and (p.expr or p.role == "size"):
                hint = "" if p.expr else f"; a size without '= EXPR' is the shape class's size {p.name!r}"
                _known_names(entry, p.expr or p.name, known, "params", cls, f"{p.name}:", note=hint)
            if p.role in ("len", "size", "ndim"):
                known = known | {p.name}
        for field, exprs, names in (("block", rule.block, known), ("grid", rule.grid, known | {"block"}),
                                    ("shared", (rule.shared,), known)):
            default = "" if field in entry.table or field in launch else " (the default grid: declare grid = ...)"
            for e in exprs:
                _known_names(entry, e, names, field, cls, line=_launch_line(entry, launch, field), note=default)
        for cond, _ in refuse:
            _known_names(entry, cond, known, "refuse", cls)
        if sum_terms:
            _known_names(entry, sum_terms, known, "tolerance", cls, "sum:")


def _known_names(entry: _KernelEntry, text, known: set[str], field: str, cls: str = "", what: str = "",
                 line: int | None = None, note: str = "", kind: str = "size") -> None:
    """DeclarationError at `field` when the expression uses a name that is not in `known`."""
    if isinstance(text, (int, float)):
        return
    try:
        tree = size_expr(text)
    except (SyntaxError, ValueError) as x:
        raise entry.error(f"{what + ' ' if what else ''}{text!r}: {getattr(x, 'msg', None) or x}", field, line=line)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for n in ast.walk(tree):
        if (isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod))
                and isinstance(n.right, ast.Constant) and n.right.value == 0):   # (every case would raise)
            raise entry.error(f"{what + ' ' if what else ''}{text!r} divides by 0", field, line=line)
        if isinstance(n, ast.Name) and id(n) not in called and n.id not in known:
            where = f" in shape class {cls!r}" if cls else ""
            raise entry.error(f"{what + ' ' if what else ''}unknown {kind} {n.id!r}{where} "
                              f"(known: {', '.join(sorted(known)) or 'none'}){note}", field, line=line)


def _refusals(entry: _KernelEntry) -> tuple[tuple[str, str], ...]:
    """The (condition, what the host says) pairs under which the host launches nothing."""
    refuse = entry.table.get("refuse", [])
    if not isinstance(refuse, list) or not all(isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r)
                                               for r in refuse):
        raise entry.error("a list of [condition, what the host says] pairs", "refuse")
    for cond, _ in refuse:
        try:
            size_expr(cond)
        except (SyntaxError, ValueError) as x:
            raise entry.error(f"{cond!r}: {getattr(x, 'msg', None) or x}", "refuse")
    return tuple(tuple(r) for r in refuse)


def _shapes(entry: _KernelEntry, kind: str, params: list[Param]) -> tuple[dict | None, dict[str, tuple[str, ...]]]:
    """A custom kernel's shape classes and operand shapes; (None, {}) for the others, whose are parity's."""
    k = entry.table
    if kind == "custom":
        if "shapes" not in k:
            raise entry.error("a custom kernel needs [kernel.shapes]: name = { size = N, ... }", "shapes")
        operand_shapes = _operand_shapes(entry, params)
        return _shape_classes(entry, _operands(params), operand_shapes), operand_shapes
    if "shapes" in k or "operand_shapes" in k:
        raise entry.error(f"shape classes are for custom kernels (kind = \"custom\"); a {kind} kernel's are parity's",
                          "shapes" if "shapes" in k else "operand_shapes")
    return None, {}


def _operand_shapes(entry: _KernelEntry, params: list[Param]) -> dict[str, tuple[str, ...]]:
    """Operand -> its shape as size expressions; every operand and scratch buffer has one."""
    declared, operands = entry.table.get("operand_shapes", {}), _operands(params)
    if not isinstance(declared, dict) or not all(isinstance(v, list) for v in declared.values()):
        raise entry.error("must be a table operand = [size expressions]", "operand_shapes")
    for n, exprs in declared.items():
        if n not in operands:
            raise entry.error(unknown("operand", n, operands), "operand_shapes")
        for e in exprs:
            try:
                size_expr(str(e))
            except (SyntaxError, ValueError) as x:
                raise entry.error(f"{n}: {e!r}: {getattr(x, 'msg', None) or x}", "operand_shapes")
    operand_shapes = {n: tuple(str(e) for e in v) for n, v in declared.items()}
    for p in params:
        if p.operand and p.name not in operand_shapes and p.role != "temp":
            raise entry.error(f"operand {p.name!r} has no shape: operand_shapes = {{ {p.name} = [\"n\"] }}",
                              "operand_shapes")
        if p.role == "temp" and p.name not in operand_shapes:
            raise entry.error(f"scratch {p.name!r} needs a size: operand_shapes = {{ {p.name} = [\"n\"] }}",
                              "operand_shapes")
    return operand_shapes


def _shape_classes(entry: _KernelEntry, operands: set[str], operand_shapes: dict) -> dict[str, ShapeClass]:
    """[kernel.shapes]: name -> its shape class."""
    table = entry.table["shapes"]
    if not isinstance(table, dict) or not table:
        raise entry.error("a table of shape classes: name = { size = N, ... }", "shapes")
    for sname in table:
        if not re.fullmatch(r"[A-Za-z0-9_][\w.-]*", sname):
            raise entry.error(f"{sname!r}: a shape class name is letters, digits, '.', '-' and '_' (it is a case ID's "
                              "layout slot)", "shapes", sname)
    return {sname: _shape_class(entry, sname, spec, operands, operand_shapes) for sname, spec in table.items()}


def _shape_class(entry: _KernelEntry, sname: str, spec, operands: set[str], operand_shapes: dict) -> ShapeClass:
    """One shape class: its sizes, a doc and operand views; every operand's shape must evaluate over the sizes."""
    if not isinstance(spec, dict):
        raise entry.error(f"{sname}: a table of sizes", "shapes", sname)
    sizes = {s: v for s, v in spec.items() if s not in ("doc", "views")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in sizes.values()):
        raise entry.error(f"{sname}: every size is a non-negative integer", "shapes", sname)
    views = spec.get("views", {})
    if not isinstance(views, dict) or any(n not in operands for n in views):
        raise entry.error(f"{sname}: views = {{ operand = \"transposed\" }} (operands: {', '.join(sorted(operands))})",
                          "shapes", sname)
    for kind in views.values():
        try:
            view(kind, (2, 3))
        except KeyError:
            raise entry.error(f"{sname}: unknown view {kind!r} (contig, offset, transposed, narrowed, stepped, "
                              "perm, bcast-lead, bcast-inner, scalar, unit)", "shapes", sname)
    for n, exprs in operand_shapes.items():
        try:
            dims = [evaluate(e, sizes) for e in exprs]
        except NameError as x:
            raise entry.error(f"{sname}: operand {n}'s shape: {x}", "shapes", sname)
        except ReferenceRaised as x:
            raise entry.error(f"{sname}: operand {n}'s shape: {x}", "shapes", sname)
        if not all(isinstance(d, (int, float)) and float(d).is_integer() and d >= 0 for d in dims):
            raise entry.error(f"{sname}: operand {n}'s shape {dims}: every dimension a whole number >= 0",
                              "shapes", sname)
    return custom_shape(sname, str(spec.get("doc") or ", ".join(f"{a} = {b}" for a, b in sizes.items())), sizes, views)


def _reference(entry: _KernelEntry, refs: ModuleType | None, params: list[Param],
               shapes: dict | None) -> Callable[..., Any]:
    """The reference: a NumPy expression or refs.<function>, naming only the kernel's operands, scalars and
    sizes; more than one output takes a function (it returns a dict)."""
    ctypes = {p.name: p.ctype for p in params if p.role == "scalar"}
    rtext = entry.table["reference"]
    if not isinstance(rtext, str) or not rtext.strip():
        raise entry.error("a NumPy expression, or refs.<function> of the references module", "reference")
    if rtext.startswith("refs."):
        if refs is None:
            raise entry.error(f"{rtext}: no references module (references = \"refs.py\" at the top)", "reference")
        fn = getattr(refs, rtext[5:], None)
        if not callable(fn):
            raise entry.error(f"{rtext}: the references module has no function {rtext[5:]!r}", "reference")
        shown = os.path.relpath(inspect.getsourcefile(fn) or refs.__file__, entry.where.path.parent.resolve())
        where = raised_at(fn, shown)
        ref = attributed(function_reference(fn, ctypes), where, where(Exception()), _outputs(params))
    else:
        try:
            ref = expression_reference(rtext, ctypes)
        except ValueError as e:
            raise entry.error(str(e), "reference")
        line = f"{rtext!r}, {entry.where.path.name}:{entry.where.line('reference', entry.index)}"
        ref = attributed(ref, lambda e: line, line, _outputs(params))
    operands, scalar_names = _operands(params), _scalar_names(params)
    known = operands | set(scalar_names) | {p.name for p in params} | {"n"}
    if shapes:
        known |= {s for sc in shapes.values() for s in sc.geo["sizes"]}
    unknown_names = sorted(ref.free_names - known)
    if unknown_names:
        raise entry.error(f"{unknown_names[0]!r} is no operand, scalar or size of the kernel (operands: "
                          f"{', '.join(sorted(operands))}; scalars: {', '.join(scalar_names) or 'none'})", "reference")
    outs = _outputs(params)
    if len(outs) > 1 and not rtext.startswith("refs."):
        raise entry.error(f"{len(outs)} outputs ({', '.join(outs)}): a function of the references module returns "
                          "a dict of them", "reference")
    return ref


def _description(entry: _KernelEntry) -> tuple[str, tuple[str, ...]]:
    """The semantics (default: the reference's expression) and the divergences, as the reports show them."""
    rtext = entry.table["reference"]
    semantics = entry.table.get("semantics", rtext if not rtext.startswith("refs.") else "")
    divergences = entry.table.get("divergences", [])
    if not isinstance(semantics, str):
        raise entry.error("must be a string", "semantics")
    if divergences:
        try:
            _strings(divergences, "lines")
        except ValueError as e:
            raise entry.error(str(e), "divergences")
    return semantics, tuple(divergences)


def _accumulation_bound(ref: Callable[..., Any], params: list[Param], terms: str) -> Callable[..., dict]:
    """The accumulation bound of a "sum" or { roundings = N } tolerance: magnitude = the reference on
    |inputs| and |scalars| (sum|x|, sum|x*y|, |alpha||x| + |y|, ...), m = the terms each output adds
    (the size expression, else the largest input)."""
    ins = [p.name for p in params if p.role in ("in", "inout")]
    outs = _outputs(params)

    def bound(inputs, sizes, scalars, key):
        absolute = {n: np.abs(v) if np.asarray(v).dtype.kind == "f" else v for n, v in inputs.items()}
        abs_scalars = {n: abs(v) for n, v in scalars.items()}     # numbers, checked at load
        with np.errstate(all="ignore"):
            mag = ref(absolute, sizes, abs_scalars, key)
        mags = mag if isinstance(mag, dict) else {outs[0]: mag}
        m = evaluate(terms, sizes) if terms else max([int(np.asarray(inputs[n]).size) for n in ins] or [1])
        # the other evaluations only where the bound alone refuses an element (accumulation_ok),
        # and once for every output
        others = functools.cache(lambda: _other_evaluations(ref, inputs, sizes, scalars, key, outs))
        return {o: (np.abs(np.asarray(mags[o], dtype=np.float64)), max(int(m), 1),
                    lambda o=o: tuple(a[o] for a in others() if o in a)) for o in outs if o in mags}
    return bound
