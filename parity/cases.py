"""Cases and sweeps: op x dtype x layout x value class x params x seed, each with a stable ID."""
from __future__ import annotations

import fnmatch
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import resources
from .dtypes import ALIASES, DTYPES, DType
from .layouts import (LAYOUT_CLASSES, Layout, contiguous, distinct_positions, layout_names, logical,
                      materialize, operand_layouts)
from .ops import CATALOG, select
from .ops.base import Op, Operands
from .ops.fill import copy2d_geometry
from .shard import apply_shard
from .values import VALUE_CLASSES, generate

SWEEP_DIR = resources.sweep_dir()


@dataclass(frozen=True)
class Case:
    op: str
    dtype: str                           # dtype key: "f32", "f32-u8" (cast), "u8-f32" (where)
    layout: str
    values: str
    seed: int = 0
    params: tuple[tuple[str, float], ...] = ()

    @property
    def id(self) -> str:
        p = "@" + ",".join(f"{k}={v:g}" for k, v in self.params) if self.params else ""
        return f"{self.op}/{self.dtype}/{self.layout}/{self.values}/s{self.seed}{p}"

    @staticmethod
    def parse(case_id: str) -> "Case":
        """Inverse of `id`; ValueError with a readable message for malformed IDs."""
        body, _, p = case_id.partition("@")
        parts = body.split("/")
        if len(parts) != 5 or not parts[4].startswith("s") or not parts[4][1:].isdigit():
            raise ValueError(f"malformed case ID {case_id!r}; expected op/dtype/layout/values/sN[@k=v,...]")
        params = tuple((k, float(v)) for k, v in (kv.split("=") for kv in p.split(","))) if p else ()
        return Case(parts[0], parts[1], parts[2], parts[3], int(parts[4][1:]), params)

    @property
    def op_spec(self) -> Op:
        return CATALOG[self.op]


@dataclass
class Built:
    """A case made concrete: operands in memory, the output layout, the scalar params."""
    case: Case
    op: Op
    operands: Operands
    params: dict[str, float]
    out_layout: Layout
    inplace: bool

    # Pickled without the op (its reference functions are closures): the case names it. Lets
    # engine.prepared_stream build cases in worker processes.
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "op"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.op = self.case.op_spec


def applicable_layouts(op: Op) -> list[str]:
    if op.custom is not None:                  # structured ops: the family's shape classes
        return list(op.custom.shapes)
    names = layout_names(include_opt_in=True)
    if op.root == "copy2d":
        return ["contiguous", "narrowed"]
    if op.root == "fill":
        return [n for n in names if n in ("contiguous", "empty", "rank0", "huge") or n.startswith("len")]
    return [n for n in names if op.inplace or not LAYOUT_CLASSES[n].inplace]


def operand_dtype(op: Op, key: str, k: int) -> DType:
    parts = op.dtype_parts(key)
    return parts[0] if k == 0 else parts[-1]


def build(case: Case) -> Built:
    op = case.op_spec
    if case.dtype not in op.dtypes:
        raise KeyError(f"{op.name} has no dtype {case.dtype!r}; it has {', '.join(op.dtypes)}")
    cls = LAYOUT_CLASSES[case.layout]
    rng = np.random.default_rng([zlib.crc32(case.id.encode()), case.seed])
    layouts = operand_layouts(cls, max(1, len(op.inputs)))
    names = op.inputs
    dts, lays, bases, logi = {}, {}, {}, {}
    for k, name in enumerate(names):
        dt = operand_dtype(op, case.dtype, k)
        lay = layouts[k]
        vals = generate(dt, distinct_positions(lay), case.values, rng, op.domain.get(name))
        base = materialize(lay, dt, vals)
        dts[name], lays[name], bases[name], logi[name] = dt, lay, base, logical(base, lay)
    params = dict(case.params)
    out_layout = contiguous(cls.shape)
    if op.root == "copy2d":
        out_layout, geometry = copy2d_geometry(lays["src"])
        params.update(geometry)
    elif op.root == "const_set":
        out_layout = layouts[0]
    return Built(case, op, Operands(names, dts, lays, bases, logi), params, out_layout, cls.inplace)


def expand(op: Op, dtypes: list[str] | None, layouts: list[str] | None, values: list[str] | None,
           seeds: list[int]) -> list[Case]:
    keys = [k for k in op.dtypes if not dtypes or any(p in dtypes for p in k.split("-")) or k in dtypes]
    lays = [l for l in applicable_layouts(op) if (layouts is None and not _opt_in(l))
            or (layouts is not None and l in layouts)]
    vals = [v for v in op.value_classes if values is None or v in values]
    out = []
    for key in keys:
        for lay in lays:
            for v in vals:
                for params in op.param_sets:
                    for s in seeds:
                        out.append(Case(op.name, key, lay, v, s, tuple(sorted(params.items()))))
    return out


def _opt_in(layout: str) -> bool:
    return layout in LAYOUT_CLASSES and LAYOUT_CLASSES[layout].opt_in


def shape_class_names() -> dict[str, str]:
    """Every structured shape class name -> its doc (the layout slot of structured case IDs)."""
    out: dict[str, str] = {}
    for op in CATALOG.values():
        if op.custom is not None:
            for name, sc in op.custom.shapes.items():
                out.setdefault(name, sc.doc)
    return out


@dataclass
class Filters:
    ops: list[str] | None = None
    dtypes: list[str] | None = None
    layouts: list[str] | None = None
    values: list[str] | None = None

    def validate(self) -> None:
        """Raise ValueError naming the bad filter value and the known ones."""
        if self.ops:
            select(self.ops)
        for d in self.dtypes or []:
            if ALIASES.get(d, d) not in DTYPES:
                raise ValueError(f"unknown dtype {d!r}; known: {', '.join(DTYPES)}")
        if self.dtypes:
            self.dtypes = [ALIASES.get(d, d) for d in self.dtypes]
        for lay in self.layouts or []:
            if lay not in LAYOUT_CLASSES and lay not in shape_class_names():
                known = list(LAYOUT_CLASSES) + [n for n in shape_class_names() if n not in LAYOUT_CLASSES]
                raise ValueError(f"unknown layout {lay!r}; known: {', '.join(known)}")
        for v in self.values or []:
            if v not in VALUE_CLASSES:
                raise ValueError(f"unknown value class {v!r}; known: {', '.join(VALUE_CLASSES)}")


def sweep_path(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.is_file():          # a folder named like a sweep (bench/) is not one
        if not p.exists():
            raise FileNotFoundError(f"sweep file {p} does not exist")
        return p
    p = SWEEP_DIR / f"{name_or_path}.toml"
    if not p.exists():
        known = ", ".join(sorted(x.stem for x in SWEEP_DIR.glob("*.toml")))
        raise FileNotFoundError(f"no sweep {name_or_path!r}; bundled sweeps: {known}")
    return p


def load_sweep(name_or_path: str, filters: Filters | None = None,
               shard: tuple[int, int] | None = None) -> list[Case]:
    """All cases of a sweep file, narrowed by the CLI filters, in a stable order; only shard
    (K, N)'s cases when given (`--shard K/N`)."""
    path = sweep_path(name_or_path)
    try:
        spec = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    filters = filters or Filters()
    filters.validate()
    seeds = spec.get("seeds", [0])
    cases: dict[str, Case] = {}
    for group in spec.get("group", []):
        ops = select(group.get("ops", ["*"]))
        if filters.ops:
            allowed = {o.name for o in select(filters.ops)}
            ops = [o for o in ops if o.name in allowed]
        for op in ops:
            dts = _intersect(group.get("dtypes"), filters.dtypes)
            lays = _intersect(group.get("layouts"), filters.layouts)
            vals = _intersect(group.get("values"), filters.values)
            for c in expand(op, dts, lays, vals, group.get("seeds", seeds)):
                if not _glob_ok(c, group.get("exclude", [])):
                    continue
                cases.setdefault(c.id, c)
    return apply_shard(list(cases.values()), shard)


def _intersect(a: list[str] | None, b: list[str] | None) -> list[str] | None:
    if a is None:
        return b
    if b is None:
        return a
    return [x for x in a if x in b]


def _glob_ok(case: Case, excludes: list[str]) -> bool:
    return not any(fnmatch.fnmatchcase(case.id, pat) for pat in excludes)
