"""Which suite files are worth mutating, and what a mutant of each must compile and run.

A `.hip` file is a target when it defines a catalog kernel; a header when such a file includes
it (directly or not). A mutant of a `.hip` recompiles that file; a mutant of a header recompiles
every target source including it. Either runs only the cases whose kernels those sources define.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..cases import Case
from ..chains import LAYOUT
from ..compile_cache import header_closure
from ..host.routines import suite_kernels
from ..ops import expected_kernels
from ..suite import discover


@dataclass(frozen=True)
class FileTarget:
    file: str                                           # relative to the suite folder
    sources: tuple[tuple[str, frozenset[str]], ...]     # (source a mutant recompiles, its catalog kernels)

    @property
    def kernels(self) -> frozenset[str]:
        return frozenset().union(*(ks for _, ks in self.sources))


def targets(suite_dir: Path, include_dirs: list[Path] = ()) -> dict[str, FileTarget]:
    """file -> FileTarget for every source defining a catalog kernel and every suite header they
    include (but those under include_dirs), sorted by file name."""
    root = Path(suite_dir).resolve()
    suite = discover(root)                     # as the executors discover it (no mapping headers)
    catalog = set(suite_kernels(list(expected_kernels())))    # host routines' steps (conv, pool) too
    defines: dict[str, set[str]] = {}
    for k in suite.kernels.values():
        if k.file is not None and k.name in catalog:
            defines.setdefault(_rel(Path(k.file), root), set()).add(k.name)
    includers: dict[str, list[str]] = {}
    for src in sorted(defines):
        for h in header_closure(root / src, list(include_dirs)):
            if h.is_relative_to(root) and not any(h.is_relative_to(Path(d).resolve()) for d in include_dirs):
                includers.setdefault(_rel(h, root), []).append(src)
    out = {src: FileTarget(src, ((src, frozenset(ks)),)) for src, ks in defines.items()}
    for h, srcs in includers.items():
        out[h] = FileTarget(h, tuple((s, frozenset(defines[s])) for s in srcs))
    return dict(sorted(out.items()))


def _rel(p: Path, root: Path) -> str:
    return str(Path(p).resolve().relative_to(root))


def case_kernels(case: Case) -> frozenset[str]:
    """The suite kernels a case launches (a host routine's steps included)."""
    return _kernels(case.op, case.dtype)


@functools.lru_cache(maxsize=None)     # a pr sweep has 24,000 cases over a few hundred kernels
def _kernels(op: str, dtype: str) -> frozenset[str]:
    return frozenset(suite_kernels(sorted(Case(op, dtype, LAYOUT, "normal").kernels)))   # (a chain: its steps')


def cases_for(target: FileTarget, cases: list[Case]) -> list[Case]:
    """The cases that reach code of `target`'s file."""
    return [c for c in cases if case_kernels(c) & target.kernels]


def sources_needed(target: FileTarget, cases: list[Case]) -> list[str]:
    """The sources of `target` defining a kernel these cases launch: the only ones to recompile."""
    used = set().union(*(case_kernels(c) for c in cases))
    return [s for s, ks in target.sources if ks & used]
