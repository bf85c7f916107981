"""Cases and sweeps: op x dtype x layout x value class x params x seed, each with a stable ID."""
from __future__ import annotations

import fnmatch
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from dataclasses import dataclass
from pathlib import Path

from . import chains, resources
from .dtypes import ALIASES, DTYPES
from .layouts import LAYOUT_CLASSES
from .ops import CATALOG, select
from .ops.base import Op
from .shard import apply_shard
from .values import VALUE_CLASSES

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
        if chains.is_chain(self.op):         # a chain has one layout and value class: chain.<name>/<dtype>/sN
            return f"{self.op}/{self.dtype}/s{self.seed}"
        p = "@" + ",".join(f"{k}={v:g}" for k, v in self.params) if self.params else ""
        return f"{self.op}/{self.dtype}/{self.layout}/{self.values}/s{self.seed}{p}"

    @staticmethod
    def parse(case_id: str) -> "Case":
        """Inverse of `id`; ValueError with a readable message for malformed IDs."""
        body, _, p = case_id.partition("@")
        parts = body.split("/")
        if chains.is_chain(parts[0]):
            if p or len(parts) != 3 or not parts[2].startswith("s") or not parts[2][1:].isdigit():
                raise ValueError(f"malformed chain case ID {case_id!r}; expected chain.<name>/dtype/sN")
            return Case(parts[0], parts[1], chains.LAYOUT, "normal", int(parts[2][1:]))
        if len(parts) != 5 or not parts[4].startswith("s") or not parts[4][1:].isdigit():
            raise ValueError(f"malformed case ID {case_id!r}; expected op/dtype/layout/values/sN[@k=v,...]")
        params = tuple((k, float(v)) for k, v in (kv.split("=") for kv in p.split(","))) if p else ()
        return Case(parts[0], parts[1], parts[2], parts[3], int(parts[4][1:]), params)

    @property
    def op_spec(self) -> Op:
        if chains.is_chain(self.op):
            try:
                return chains.chains()[self.op]
            except KeyError:
                raise KeyError(f"no chain {self.op!r}; bundled: {', '.join(chains.chains())}") from None
        return CATALOG[self.op]

    @property
    def kernels(self) -> set[str]:
        """The suite kernels (or host routines) the case launches: a chain's step kernels."""
        op = self.op_spec
        if chains.is_chain(self.op):
            return {s.launch.kernel for s in op.spec.prepare(self)[1].steps}
        return {op.kernel_name(self.dtype)}


def select_ops(patterns: list[str] | None) -> list[Op]:
    """Catalog ops and chains matching any glob pattern; chains only for patterns that start with
    `chain` (so `*` stays the catalog). KeyError for a pattern that matches nothing."""
    if not patterns:
        return select(None)
    out: dict[str, Op] = {}
    for pat in patterns:
        hits = chains.select([pat]) if pat.startswith("chain") else []
        if not hits:
            hits = select([pat])
        out.update((o.name, o) for o in hits)
    return list(out.values())


def expand(op: Op, dtypes: list[str] | None, layouts: list[str] | None, values: list[str] | None,
           seeds: list[int]) -> list[Case]:
    keys = [k for k in op.dtypes if not dtypes or any(p in dtypes for p in k.split("-")) or k in dtypes]
    lays = [l for l in op.spec.layouts() if (layouts is None and not _opt_in(l))
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
        for name, sc in op.spec.shapes.items():
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
            select_ops(self.ops)
        for d in self.dtypes or []:
            if ALIASES.get(d, d) not in DTYPES:
                raise ValueError(f"unknown dtype {d!r}; known: {', '.join(DTYPES)}")
        if self.dtypes:
            self.dtypes = [ALIASES.get(d, d) for d in self.dtypes]
        for lay in self.layouts or []:
            if lay not in LAYOUT_CLASSES and lay not in shape_class_names() and lay != chains.LAYOUT:
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
        ops = select_ops(group.get("ops", ["*"]))
        if filters.ops:
            allowed = {o.name for o in select_ops(filters.ops)}
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
