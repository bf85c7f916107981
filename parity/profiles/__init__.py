"""ABI profiles: the kernel conventions parity knows (parity.profiles.base.Profile).

    candle    Candle's candle-kernels ABI, the catalog of parity/ops (the default)
    rocm-rs   rocm-rs's rocarray kernels (src/rocarray/kernels.hip, sorting_kernels.hip)
    <name>    a port's own kernels declared in parity-kernels.toml next to its sources
              (parity.profiles.declared, docs/profiles.md)

`parity run|coverage|compile|list --profile NAME|FILE` selects one; without it the profile is the
declaration next to `--hip-src` when there is one, else the built-in profile that expects the most
of the kernels the suite defines (Candle when none matches). Every report names it.

Op names of profiles other than Candle's carry the profile as a prefix (`rocm-rs.elementwise.add`),
so a case ID says which catalog it belongs to and `lookup_op` finds its op from the ID alone, in any
process: a declared profile's file is recorded in PARITY_DECLARED_PROFILES for child processes.
"""
from __future__ import annotations

import os
from importlib import import_module
from pathlib import Path
from typing import Iterable

from parity.core.suggest import unknown
from parity.ops.base import Op
from parity.profiles.base import (BUILTIN, DECLARATION_FILE, Profile,  # noqa: F401 (the package's names)
                                  declaration_path)

ENV = "PARITY_DECLARED_PROFILES"
_declared: dict[str, Profile] = {}


def builtin(name: str) -> Profile:
    return import_module(BUILTIN[name]).PROFILE


def default() -> Profile:
    return builtin("candle")


def names() -> list[str]:
    return [*BUILTIN, *_declared]


def register(profile: Profile) -> Profile:
    """Make a declared profile's ops findable by name in this process and its children."""
    if profile.name in BUILTIN:
        raise ValueError(f"{profile.source}: name: {profile.name!r} is a built-in profile; choose another name")
    _declared[profile.name] = profile
    files = [f for f in os.environ.get(ENV, "").split(os.pathsep) if f]
    if profile.source not in files:
        os.environ[ENV] = os.pathsep.join([*files, profile.source])
    return profile


_loaded: dict[str, tuple[int, Profile]] = {}       # declaration file -> (its mtime, the profile)


def load(path: str | os.PathLike) -> Profile:
    """A declared profile from its TOML file (parity.profiles.declared), registered; the same object
    while the file is unchanged."""
    from parity.profiles.declared import load_declaration
    try:
        mtime = Path(path).stat().st_mtime_ns
    except OSError:
        mtime = -1
    hit = _loaded.get(str(path))
    if hit is not None and hit[0] == mtime and _declared.get(hit[1].name) is hit[1]:
        return hit[1]
    p = load_declaration(Path(path))
    _loaded[str(path)] = (mtime, p)
    old = _declared.get(p.name)
    if old is not None and old.source != p.source:
        raise ValueError(f"{path}: name: profile {p.name!r} is declared by {old.source} already")
    return register(p)


def get(spec: str | os.PathLike | Profile | None) -> Profile:
    """A profile by name, or a declaration file (or a folder holding parity-kernels.toml); None: Candle.
    KeyError with the known names for anything else; ValueError for a declaration with errors."""
    if spec is None or spec == "":
        return default()
    if isinstance(spec, Profile):
        return spec
    s = str(spec)
    if s in BUILTIN:
        return builtin(s)
    if s in _declared:
        return _declared[s]
    p = Path(s)
    if p.is_dir() and declaration_path(p):
        return load(declaration_path(p))
    if p.suffix == ".toml" or p.is_file():
        if not p.is_file():
            raise KeyError(f"profile declaration {p} does not exist")
        return load(p)
    raise KeyError(unknown("profile", s, names(), "or a parity-kernels.toml file"))


def _from_env() -> None:
    for f in [f for f in os.environ.get(ENV, "").split(os.pathsep) if f]:
        if not any(p.source == f for p in _declared.values()):
            try:
                load(f)
            except (OSError, ValueError):
                continue


def lookup_op(name: str) -> Op:
    """The op of any profile by its full name (a case ID's first part); KeyError when none has it."""
    from parity.ops import CATALOG
    if name in CATALOG:
        return CATALOG[name]
    for pname in [*(n for n in BUILTIN if n != "candle"), *_declared]:
        prof = builtin(pname) if pname in BUILTIN else _declared[pname]
        if prof.prefix and name.startswith(prof.prefix) and name in prof.ops:
            return prof.ops[name]
    _from_env()
    for prof in _declared.values():
        if name in prof.ops:
            return prof.ops[name]
    raise KeyError(name)


def typed_signature(op: Op, key: str) -> list[str] | None:
    """op's kernel for dtype key with each pointer's pointee, as its profile knows it (None: unknown): a
    declared or described kernel's own, Candle's from its upstream record."""
    own = getattr(op, "typed_signature", None)
    if own is not None:
        return own(key)
    from parity.ops import CATALOG
    if CATALOG.get(op.name) is op:
        from parity.profiles.candle import recorded_signature
        return recorded_signature(op.kernel_name(key))
    return None


def is_builtin_op(name: str) -> bool:
    """Whether an op belongs to a built-in profile (a child process can import it without help)."""
    return not any(name in p.ops for p in _declared.values())


def recognise(kernel_names: Iterable[str]) -> tuple[Profile, int]:
    """The built-in profile expecting the most of these kernel names, and how many (Candle, 0 when
    none expects any: a new port starts from Candle's catalog)."""
    names_ = list(kernel_names)
    best, hits = default(), 0
    for pname in BUILTIN:
        n = builtin(pname).score(names_)
        if n > hits:
            best, hits = builtin(pname), n
    return best, hits


def resolve(option: str | None, hip_src: Path | None, suite_names=None) -> tuple[Profile, str]:
    """The profile of a command and why: `--profile` (a name or file), else the declaration next to
    the HIP sources, else recognised from the kernel names the suite defines (`suite_names()`: called
    only then), else Candle. KeyError/ValueError with one line for a bad name or declaration."""
    if option:
        return get(option), "named by --profile"
    decl = declaration_path(hip_src)
    if decl is not None:
        return load(decl), f"declared in {decl}"
    if suite_names is None:
        return default(), "default"
    found = list(suite_names())
    prof, hits = recognise(found)
    if hits == 0:
        return prof, "default (no profile expects a kernel of the suite)"
    return prof, f"recognised: {hits} of the suite's {len(found)} kernels are {prof.name}'s"


__all__ = ["Profile", "DECLARATION_FILE", "get", "load", "lookup_op", "names", "recognise", "resolve",
           "register", "default", "builtin", "is_builtin_op"]
