"""Cases and sweeps: op x dtype x layout x value class x params x seed, each with a stable ID."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from parity import chains, profiles
from parity.core import files, resources, toml
from parity.core.dtypes import ALIASES, DTYPES
from parity.core.files import special_file
from parity.core.layouts import LAYOUT_CLASSES
from parity.core.suggest import unknown
from parity.core.values import VALUE_CLASSES
from parity.ops.base import Op
from parity.profiles import Profile
from parity.run.shard import apply_shard

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
        params = _parse_params(case_id, p) if p else ()
        return Case(parts[0], parts[1], parts[2], parts[3], int(parts[4][1:]), params)

    @property
    def catalog_op(self) -> Op:
        """The Op this case runs: a catalog entry of any profile, or a chain."""
        if chains.is_chain(self.op):
            try:
                return chains.chains()[self.op]
            except KeyError:
                raise KeyError(f"no chain {self.op!r}; bundled: {', '.join(chains.chains())}") from None
        return profiles.lookup_op(self.op)

    @property
    def kernels(self) -> set[str]:
        """The suite kernels (or host routines) the case launches: a chain's step kernels."""
        op = self.catalog_op
        if chains.is_chain(self.op):
            return {s.launch.kernel for s in op.spec.prepare(self)[1].steps}
        return {op.kernel_name(self.dtype)}


def _parse_params(case_id: str, text: str) -> tuple[tuple[str, float], ...]:
    """`k=v,k=v` of a case ID; ValueError with one line for anything else."""
    out = []
    for kv in text.split(","):
        k, eq, v = kv.partition("=")
        try:
            out.append((k.strip(), float(v)))
        except ValueError:
            eq = ""
        if not eq or not k.strip():
            raise ValueError(f"malformed parameter {kv!r} in case ID {case_id!r}; expected @name=number,...")
    return tuple(out)


def select_ops(patterns: list[str] | None, profile: Profile | None = None) -> list[Op]:
    """Catalog ops (of the profile: Candle's by default) and chains matching any glob pattern; chains
    (Candle's) only for patterns that start with `chain` (so `*` stays the catalog). KeyError for a
    pattern that matches nothing."""
    prof = profile or profiles.default()
    if not patterns:
        return prof.select(None)
    out: dict[str, Op] = {}
    for pat in patterns:
        candle = prof.name == "candle"
        hits = chains.select([pat]) if candle and pat.startswith("chain") else []
        if candle and not hits and pat.startswith(chains.CHAIN_PREFIX):
            raise KeyError(unknown("chain", pat, chains.chains(), "see `parity list`"))
        if not hits:
            hits = prof.select([pat])
        out.update((o.name, o) for o in hits)
    return list(out.values())


def listed_kernels(op: Op) -> list[str]:
    """The kernels an op's cases launch, as `parity list` names them: one per dtype; a chain's, its
    steps' kernels over every dtype."""
    if chains.is_chain(op.name):
        return sorted(set().union(*(Case(op.name, k, chains.LAYOUT, "normal").kernels for k in op.dtypes)))
    return [op.kernel_name(k) for k in op.dtypes]


def expand(op: Op, dtypes: list[str] | None, layouts: list[str] | None, values: list[str] | None,
           seeds: list[int]) -> list[Case]:
    keys = [k for k in op.dtypes if not dtypes or any(p in dtypes for p in k.split("-")) or k in dtypes]
    lays = [l for l in op.spec.layouts() if (layouts is None and not _opt_in(l))
            or (layouts is not None and l in layouts)]
    out = []
    for key in keys:
        vals = [v for v in op.values_for(key) if values is None or v in values]
        for lay in lays:
            for v in vals:
                for params in op.param_sets:
                    for s in seeds:
                        out.append(Case(op.name, key, lay, v, s, tuple(sorted(params.items()))))
    return out


def _opt_in(layout: str) -> bool:
    return layout in LAYOUT_CLASSES and LAYOUT_CLASSES[layout].opt_in


def shape_class_names(profile: Profile | None = None) -> dict[str, str]:
    """Every structured shape class name -> its doc (the layout slot of structured case IDs)."""
    return (profile or profiles.default()).shape_classes()


@dataclass
class Filters:
    ops: list[str] | None = None
    dtypes: list[str] | None = None
    layouts: list[str] | None = None
    values: list[str] | None = None
    profile: Profile | None = None       # whose catalog the op patterns and layouts name (None: Candle's)

    def validate(self) -> None:
        """Raise ValueError naming the bad filter value and the closest known ones."""
        if self.ops:
            select_ops(self.ops, self.profile)
        for d in self.dtypes or []:
            if ALIASES.get(d, d) not in DTYPES:
                raise ValueError(unknown("dtype", d, [*DTYPES, *ALIASES]))
        if self.dtypes:
            self.dtypes = [ALIASES.get(d, d) for d in self.dtypes]
        for lay in self.layouts or []:
            if lay not in known_layouts(self.profile):
                raise ValueError(unknown("layout", lay, known_layouts(self.profile), "see parity/core/layouts.py"))
        for v in self.values or []:
            if v not in VALUE_CLASSES:
                raise ValueError(unknown("value class", v, VALUE_CLASSES))


def known_layouts(profile: Profile | None = None) -> list[str]:
    """Every name a case's layout slot may hold: layout classes, structured shape classes, a chain's
    (another profile: its ops' shape classes)."""
    if profile is not None and profile.name != "candle":
        return list(profile.shape_classes())
    return [*LAYOUT_CLASSES, *(n for n in shape_class_names() if n not in LAYOUT_CLASSES), chains.LAYOUT]


def sweep_path(name_or_path: str) -> Path:
    """The sweep file a `--sweep` value names (a path, or a bundled sweep's name); FileNotFoundError
    or ValueError (a folder, a FIFO) with one line."""
    p = Path(name_or_path)
    why = special_file(p)
    if why:
        raise ValueError(f"sweep {why}")
    if p.suffix == ".toml" or p.is_file():          # a folder named like a sweep (bench/) is not one
        if p.is_dir():
            raise ValueError(f"sweep {p} is a folder, not a sweep file (.toml)")
        if not p.exists():
            raise FileNotFoundError(f"sweep file {p} does not exist")
        return p
    bundled = SWEEP_DIR / f"{name_or_path}.toml"
    if not bundled.is_file():
        known = sorted(x.stem for x in SWEEP_DIR.glob("*.toml"))
        if p.is_dir():
            raise ValueError(f"sweep {p} is a folder, not a sweep file (.toml); bundled sweeps: {', '.join(known)}")
        raise FileNotFoundError(f"no sweep {name_or_path!r}; bundled sweeps: {', '.join(known)}")
    return bundled


# The sweep format: top-level keys, and each [[group]]'s keys, with what each must hold.
SWEEP_KEYS = {"description": "a string", "seeds": "a list of seeds", "group": "a list of [[group]] tables"}
GROUP_KEYS = {"ops": "op glob patterns", "dtypes": "dtypes", "layouts": "layout classes",
              "values": "value classes", "seeds": "a list of seeds", "exclude": "case-ID glob patterns"}


def read_sweep(path: Path, profile: Profile | None = None) -> dict:
    """The sweep file's TOML, validated against the format: ValueError with one line naming the
    file, the group and the key for an unknown key, a wrong type, an empty list or an unknown name
    (op patterns and layouts: of the profile's catalog, Candle's by default)."""
    try:
        spec = toml.loads(files.read_text(path, "sweep"))
    except toml.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    except files.FileRefused:
        raise
    except (OSError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: cannot read the sweep file: {e.strerror if isinstance(e, OSError) else e}") from None
    return check_sweep(spec, str(path), profile)


def check_sweep(spec: dict, path: str, profile: Profile | None = None) -> dict:
    """A parsed sweep validated against the format (read_sweep), `path` naming it in messages."""
    _check_keys(spec, SWEEP_KEYS, f"{path}")
    if "description" in spec and not isinstance(spec["description"], str):
        raise ValueError(f"{path}: description: must be a string")
    if "seeds" in spec:
        _check_seeds(spec["seeds"], f"{path}: seeds")
    groups = spec.get("group")
    if not isinstance(groups, list) or not groups or not all(isinstance(g, dict) for g in groups):
        raise ValueError(f"{path}: group: a sweep needs one or more [[group]] tables"
                         + ("" if groups is None else f", not {_shown(groups)}"))
    for i, g in enumerate(groups, 1):
        where = f"{path}: group {i}"
        _check_keys(g, GROUP_KEYS, where)
        for key in ("ops", "dtypes", "layouts", "values", "exclude"):
            if key in g:
                _check_names(g[key], f"{where}: {key}")
        if "seeds" in g:
            _check_seeds(g["seeds"], f"{where}: seeds")
        _check_known(g, where, profile)
    return spec


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_keys(table: dict, known: dict[str, str], where: str) -> None:
    for key in table:
        if key not in known:
            raise ValueError(f"{where}: {unknown('key', key, known)}")


def _check_names(value, where: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: must be a list of names (strings), not {_shown(value)}")
    if not value:
        raise ValueError(f"{where}: empty list (leave the key out for every one)")


def _check_seeds(value, where: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                              for v in value):
        raise ValueError(f"{where}: must be a list of non-negative integers, not {_shown(value)}")
    if not value:
        raise ValueError(f"{where}: empty list (leave the key out for seed 0)")


def _check_known(group: dict, where: str, profile: Profile | None = None) -> None:
    """Every name a group gives exists: op patterns match, dtypes, layouts and value classes are known."""
    for pat in group.get("ops", []):
        try:
            select_ops([pat], profile)
        except KeyError as e:
            raise ValueError(f"{where}: ops: {e.args[0]}") from None
    for d in group.get("dtypes", []):
        if not all(ALIASES.get(part, part) in DTYPES for part in d.split("-")):
            raise ValueError(f"{where}: dtypes: {unknown('dtype', d, [*DTYPES, *ALIASES])}")
    for lay in group.get("layouts", []):
        if lay not in known_layouts(profile):
            raise ValueError(f"{where}: layouts: {unknown('layout', lay, known_layouts(profile), 'see parity/core/layouts.py')}")
    for v in group.get("values", []):
        if v not in VALUE_CLASSES:
            raise ValueError(f"{where}: values: {unknown('value class', v, VALUE_CLASSES)}")


def profile_sweep(name_or_path: str, profile: Profile) -> tuple[dict, str]:
    """(parsed sweep, its name in messages) for a profile other than Candle's: a sweep file (a path), or
    one of the profile's bundled sweeps by name."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.is_file():
        path = sweep_path(name_or_path)
        return read_sweep(path, profile), str(path)
    if name_or_path not in profile.sweeps:
        raise FileNotFoundError(f"no sweep {name_or_path!r} for profile {profile.name}; its sweeps: "
                                f"{', '.join(profile.sweep_names())} (or a path to a sweep file)")
    where = f"profile {profile.name}: sweep {name_or_path}"
    return check_sweep(profile.sweeps[name_or_path], where, profile), where


def load_sweep(name_or_path: str, filters: Filters | None = None,
               shard: tuple[int, int] | None = None, profile: Profile | None = None) -> list[Case]:
    """All cases of a sweep file, narrowed by the CLI filters, in a stable order; only shard
    (K, N)'s cases when given (`--shard K/N`). profile: whose catalog (Candle's by default; another
    profile's bundled sweeps by name, or a sweep file naming its ops)."""
    filters = filters or Filters()
    profile = profile or filters.profile
    if profile is not None and profile.name != "candle":
        spec, _ = profile_sweep(name_or_path, profile)
    else:
        spec = read_sweep(sweep_path(name_or_path))
    filters.profile = profile
    filters.validate()
    seeds = spec.get("seeds", [0])
    cases: dict[str, Case] = {}
    for group in spec["group"]:
        ops = select_ops(group.get("ops", ["*"]), profile)
        if filters.ops:
            allowed = {o.name for o in select_ops(filters.ops, profile)}
            ops = [o for o in ops if o.name in allowed]
        for op in ops:
            dts = _intersect(_dtype_keys(group.get("dtypes")), filters.dtypes)
            lays = _intersect(group.get("layouts"), filters.layouts)
            vals = _intersect(group.get("values"), filters.values)
            for c in expand(op, dts, lays, vals, group.get("seeds", seeds)):
                if not _glob_ok(c, group.get("exclude", [])):
                    continue
                cases.setdefault(c.id, c)
    return apply_shard(list(cases.values()), shard)


def _dtype_keys(dtypes: list[str] | None) -> list[str] | None:
    """A group's dtypes with aliases (fp8) spelled as dtype keys (f8_e4m3)."""
    if dtypes is None:
        return None
    return ["-".join(ALIASES.get(part, part) for part in d.split("-")) for d in dtypes]


def _intersect(a: list[str] | None, b: list[str] | None) -> list[str] | None:
    if a is None:
        return b
    if b is None:
        return a
    return [x for x in a if x in b]


def _glob_ok(case: Case, excludes: list[str]) -> bool:
    return not any(fnmatch.fnmatchcase(case.id, pat) for pat in excludes)
