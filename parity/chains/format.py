"""The chain format: a TOML file of named tensors and steps (catalog ops) with the views Candle
takes between them. `docs/chains.md` describes it; `cases/chains/*.toml` are the bundled chains.

    name = "attention"
    dtypes = ["f32", "f16", "bf16"]                 # the chain dtype `{dt}` of its cases
    [tensors]                                       # the chain's inputs
    q = { shape = [2, 8, 16], values = "normal" }   # dtype defaults to "{dt}"
    [[steps]]
    op = "matmul.gemm"                              # a catalog op
    in = { lhs = "q", rhs = "k.transpose(1,2)" }    # operand -> tensor with views
    out = "scores"
    dtype = "{dt}"                                  # the op's dtype key (default "{dt}")
    params = { mul = 0.25, add = 0.0 }              # the op's scalar parameters

Views (Candle's, no copy; a contiguous copy is a `copy.ucopy` step): `transpose(a,b)`,
`narrow(dim,start,len)`, `reshape(d0,d1,...)` (of a contiguous view only, as Candle),
`broadcast(d0,d1,...)` (broadcast_as: new leading dims and size-1 dims get stride 0).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

from parity.core import files, toml
from parity.core.dtypes import ALIASES, DTYPES
from parity.core.layouts import Layout, row_major
from parity.core.suggest import unknown

VALUE_KINDS = ("normal", "weight", "positive", "causal-mask", "rope-cos", "rope-sin", "bool")
_VIEW = re.compile(r"\.(\w+)\(([-\d,\s]*)\)")


class ChainError(ValueError):
    """A chain file that does not describe a valid chain (the message names file and step)."""


@dataclass(frozen=True)
class View:
    kind: str                                # transpose | narrow | reshape | broadcast
    args: tuple[int, ...]

    def text(self) -> str:
        return f".{self.kind}({','.join(map(str, self.args))})"


@dataclass(frozen=True)
class Operand:
    tensor: str
    views: tuple[View, ...] = ()

    def text(self) -> str:
        return self.tensor + "".join(v.text() for v in self.views)


@dataclass(frozen=True)
class TensorDecl:
    name: str
    shape: tuple[int, ...]
    dtype: str = "{dt}"
    values: str = "normal"


@dataclass(frozen=True)
class Step:
    index: int                               # 1-based, as reports name it
    op: str
    inputs: dict[str, Operand]
    out: str
    dtype: str = "{dt}"
    params: dict[str, float] = field(default_factory=dict)

    def key(self, dt: str) -> str:
        return self.dtype.replace("{dt}", dt)

    @property
    def label(self) -> str:
        return f"step {self.index} ({self.op})"


@dataclass(frozen=True)
class Chain:
    name: str
    doc: str
    dtypes: tuple[str, ...]
    tensors: dict[str, TensorDecl]
    steps: tuple[Step, ...]
    source: str = ""

    @property
    def op_name(self) -> str:
        return f"chain.{self.name}"

    @property
    def output(self) -> str:
        return self.steps[-1].out


def parse_operand(text: str) -> Operand:
    name, _, rest = text.strip().partition(".")
    rest = "." + rest if rest else ""
    views, pos = [], 0
    for m in _VIEW.finditer(rest):
        if m.start() != pos:
            break
        args = tuple(int(a) for a in m.group(2).replace(" ", "").split(",") if a)
        views.append(View(m.group(1), args))
        pos = m.end()
    if pos != len(rest) or not name.isidentifier():
        raise ChainError(f"cannot read operand {text!r}: expected name.view(args).view(args)...")
    for v in views:
        if v.kind not in ("transpose", "narrow", "reshape", "broadcast"):
            raise ChainError(f"{text!r}: unknown view {v.kind!r} (transpose, narrow, reshape, broadcast; "
                             "a contiguous copy is a copy.ucopy step)")
    return Operand(name, tuple(views))


def _dim(d: int, shape: list[int], v: View) -> int:
    """A dim argument of a view (negative from the end, as Candle's D::Minus1), or ChainError."""
    if not -len(shape) <= d < len(shape):
        raise ChainError(f"dim {d} out of range for a rank-{len(shape)} tensor {tuple(shape)}")
    return d % len(shape)


def apply_view(lay: Layout, v: View) -> Layout:
    """A Candle view of a layout: same base buffer, new shape/strides/offset."""
    shape, strides = list(lay.shape), list(lay.strides)
    if v.kind == "transpose":
        a, b = (_dim(x, shape, v) for x in v.args)
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
        return Layout(tuple(shape), tuple(strides), lay.offset, lay.base_size)
    if v.kind == "narrow":
        d, start, n = v.args
        d = _dim(d, shape, v)
        if start + n > shape[d]:
            raise ChainError(f"narrow({d},{start},{n}) of a dim of size {shape[d]}")
        shape[d] = n
        return Layout(tuple(shape), tuple(strides), lay.offset + start * strides[d], lay.base_size)
    if v.kind == "reshape":
        new = tuple(v.args)
        if prod(new) != lay.numel:
            raise ChainError(f"reshape{new} of {lay.numel} elements")
        if not lay.is_contiguous():
            raise ChainError(f"reshape{new} of a non-contiguous view {lay.describe()} (Candle copies first: "
                             "add a copy.ucopy step)")
        return Layout(new, row_major(new), lay.offset, lay.base_size)
    new = tuple(v.args)                      # broadcast
    pad = len(new) - len(shape)
    if pad < 0:
        raise ChainError(f"broadcast{new} to fewer dims than {tuple(shape)}")
    shape, strides = [1] * pad + shape, [0] * pad + strides
    for d, (have, want) in enumerate(zip(shape, new)):
        if have != want:
            if have != 1:
                raise ChainError(f"broadcast of {tuple(lay.shape)} to {new}")
            strides[d] = 0
    return Layout(new, tuple(strides), lay.offset, lay.base_size)


def operand_layout(base: Layout, op: Operand) -> Layout:
    lay = base
    for v in op.views:
        lay = apply_view(lay, v)
    return lay


def load_chain(path: Path) -> Chain:
    """A chain file read and checked against the format (parse_chain); ChainError with one line
    naming the file, the chain and the key. (parity.chains.load_chain also builds its geometry.)"""
    try:
        spec = toml.loads(files.read_text(path, "chain file"))
    except toml.TOMLDecodeError as e:
        raise ChainError(f"{path}: {e}") from None
    except files.FileRefused as e:
        raise ChainError(str(e)) from None
    except (RecursionError, MemoryError):
        raise ChainError(f"{path}: not a chain file (nested too deeply)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ChainError(f"{path}: cannot read the chain file: {e}") from None
    try:
        return parse_chain(spec, str(path))
    except ChainError as e:
        raise ChainError(f"{path}: {_chain_named(spec, path)}{e}") from None


def _chain_named(spec, path) -> str:
    """`chain NAME: ` for messages (its `name`, else the file's stem)."""
    name = spec.get("name") if isinstance(spec, dict) else None
    return f"chain {name if isinstance(name, str) and name else Path(path).stem}: "


# The chain format's keys: top level, each [tensors] entry, each [[steps]] table.
CHAIN_KEYS = ("name", "doc", "dtypes", "tensors", "steps")
TENSOR_KEYS = ("shape", "dtype", "values")
STEP_KEYS = ("op", "in", "out", "dtype", "params")
VIEW_ARITY = {"transpose": 2, "narrow": 3}


def _keys(table, known: tuple[str, ...], where: str) -> None:
    if not isinstance(table, dict):
        raise ChainError(f"{where}: must be a table, not {table!r}")
    for key in table:
        if key not in known:
            raise ChainError(f"{where}: {unknown('key', key, known)}")


def _text(value, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ChainError(f"{where}: must be a non-empty string, not {value!r}")
    return value


MAX_ELEMENTS = 1 << 26          # a chain tensor's elements at most: 512 MiB as the float64 reference


def check_size(shape, where: str) -> None:
    """ChainError naming the number for a tensor larger than MAX_ELEMENTS (a typo'd shape must be
    refused, not allocated: [100000, 100000, 100000] would be 7 PiB of float64)."""
    n = prod(shape)
    if n > MAX_ELEMENTS:
        raise ChainError(f"{where}: {list(shape)} is {n:,} elements; a chain tensor may have at most "
                         f"{MAX_ELEMENTS:,} (chains check how ops compose: small shapes do)")


def _shape(value, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or \
            not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in value):
        raise ChainError(f"{where}: must be a non-empty list of positive integers, not {value!r}")
    check_size(value, where)
    return tuple(value)


def _dtype_text(value, where: str) -> str:
    """A tensor's dtype: a dtype name or `{dt}` (the chain dtype), checked."""
    text = _text(value, where)
    if text != "{dt}" and ALIASES.get(text, text) not in DTYPES:
        raise ChainError(f"{where}: {unknown('dtype', text, [*DTYPES, '{dt}'])}")
    return text


def check_views(op: Operand, where: str) -> None:
    """View arguments Candle would accept: the right count, sizes positive, a narrow's start >= 0."""
    for v in op.views:
        want = VIEW_ARITY.get(v.kind)
        if (want is not None and len(v.args) != want) or not v.args:
            raise ChainError(f"{where}: {v.text()} takes {want or 'one or more'} arguments")
        if v.kind in ("reshape", "broadcast") and min(v.args) <= 0:
            raise ChainError(f"{where}: {v.text()}: sizes must be positive")
        if v.kind == "narrow" and (v.args[1] < 0 or v.args[2] <= 0):
            raise ChainError(f"{where}: {v.text()}: start must be >= 0 and length positive")


def parse_chain(spec: dict, source: str = "") -> Chain:
    """A chain from its TOML table, validated: ChainError with one line naming the tensor or step
    and the key for an unknown key, a wrong type, an empty list or a non-positive size."""
    _keys(spec, CHAIN_KEYS, "chain")
    name = _text(spec["name"], "name") if "name" in spec else Path(source).stem
    doc = spec.get("doc", "")
    if not isinstance(doc, str):
        raise ChainError(f"doc: must be a string, not {doc!r}")
    dtypes = spec.get("dtypes", ["f32"])
    if not isinstance(dtypes, list) or not dtypes or not all(isinstance(d, str) and d for d in dtypes):
        raise ChainError(f"dtypes: must be a non-empty list of dtype names, not {dtypes!r}")
    for d in dtypes:
        if d not in DTYPES:
            raise ChainError(f"dtypes: {unknown('dtype', d, list(DTYPES))}")
    tensors = {}
    declared = spec.get("tensors", {})
    _keys(declared, tuple(declared) if isinstance(declared, dict) else (), "tensors")
    for n, t in declared.items():
        _keys(t, TENSOR_KEYS, f"tensor {n}")
        if "shape" not in t:
            raise ChainError(f"tensor {n}: shape: missing")
        values = t.get("values", "normal")
        if values not in VALUE_KINDS:
            raise ChainError(f"tensor {n}: values: {unknown('value kind', values, VALUE_KINDS)}")
        tensors[n] = TensorDecl(n, _shape(t["shape"], f"tensor {n}: shape"),
                                _dtype_text(t.get("dtype", "{dt}"), f"tensor {n}: dtype"), values)
    raw_steps = spec.get("steps", [])
    if not isinstance(raw_steps, list):
        raise ChainError(f"steps: must be a list of [[steps]] tables, not {raw_steps!r}")
    steps, known = [], set(tensors)
    for i, s in enumerate(raw_steps, 1):
        where = f"step {i}" + (f" ({s.get('op')})" if isinstance(s, dict) and "op" in s else "")
        _keys(s, STEP_KEYS, where)
        for key in ("op", "out"):
            if key not in s:
                raise ChainError(f"{where}: {key}: missing")
        op, out = _text(s["op"], f"{where}: op"), _text(s["out"], f"{where}: out")
        raw_in, params = s.get("in", {}), s.get("params", {})
        if not isinstance(raw_in, dict) or not all(isinstance(v, str) for v in raw_in.values()):
            raise ChainError(f"{where}: in: must be a table of operand = \"tensor.view(...)\", not {raw_in!r}")
        if not isinstance(params, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   for v in params.values()):
            raise ChainError(f"{where}: params: must be a table of numbers, not {params!r}")
        ins = {k: parse_operand(v) for k, v in raw_in.items()}
        for k, o in ins.items():
            check_views(o, f"{where}: in.{k}")
            if o.tensor not in known:
                raise ChainError(f"{where}: operand {k} reads {o.tensor!r}, which no "
                                 "earlier step produces and is not a chain input")
        if out in known:
            raise ChainError(f"step {i}: tensor {out!r} is written twice (tensors are values, not buffers)")
        known.add(out)
        steps.append(Step(i, op, ins, out, _text(s.get("dtype", "{dt}"), f"{where}: dtype"),
                          {k: float(v) for k, v in params.items()}))
    if not steps:
        raise ChainError("a chain needs at least one step")
    return Chain(name, doc, tuple(dtypes), tensors, tuple(steps), source)
