"""`parity run --since REF`: only the cases whose kernels live in files changed since a git ref.

The fast check before a PR (and the pre-commit hook): a changed `.hip`/`.cu` file selects the
kernels it defines; a changed header selects every source that includes it, directly or not.
Changes are what `git diff REF` sees (staged and unstaged) plus untracked files.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from typing import Callable

from parity.suite.includes import header_closure
from parity.suite.scan import HEADER_SUFFIXES, SOURCE_SUFFIXES, Suite, SuiteError, discover


class SinceError(ValueError):
    """Not a git work tree, or an unknown ref: a user mistake, said in one line."""


def _git(args: list[str], cwd: Path) -> str:
    try:
        p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SinceError("--since needs git on PATH") from None
    if p.returncode != 0:
        why = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
        raise SinceError(f"--since: git {args[0]} in {cwd}: {why}")
    return p.stdout


def changed_files(ref: str, folder: Path) -> list[Path]:
    """Files under `folder` changed since `ref` (committed, staged, unstaged or untracked)."""
    folder = Path(folder).resolve()
    top = Path(_git(["rev-parse", "--show-toplevel"], folder).strip())
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], folder)
    except SinceError:
        raise SinceError(f"--since {ref}: no such commit in the git repository {top}") from None
    names = _git(["diff", "--name-only", ref, "--", "."], folder).splitlines()
    names += _git(["ls-files", "--others", "--exclude-standard", "--full-name", "--", "."], folder).splitlines()
    out = []
    for n in dict.fromkeys(names):
        p = (top / n).resolve()
        if p.is_relative_to(folder):
            out.append(p)
    return out


def _changed(ref: str, suite_dir: Path, include_dirs: list[Path],
             discovered: Callable[[], Suite] | None = None) -> tuple[Suite | None, list[Path], list[Path]]:
    """(the suite, its sources changed since `ref` or including a changed header, the changed
    kernel files); no suite is discovered when no kernel file changed. discovered: the run's own
    discovery of that folder (a port's build line), made on demand, else the folder's."""
    changed = [p for p in changed_files(ref, suite_dir) if p.suffix in SOURCE_SUFFIXES + HEADER_SUFFIXES]
    if not changed:
        return None, [], []
    try:
        suite = discovered() if discovered is not None else discover(Path(suite_dir))
    except SuiteError as e:
        raise SinceError(str(e)) from None
    headers = {p for p in changed if p.suffix in HEADER_SUFFIXES}
    hit = [Path(src) for src in suite.sources
           if Path(src).resolve() in changed or headers & set(header_closure(Path(src).resolve(), list(include_dirs)))]
    return suite, hit, changed


def sources_changed(ref: str, suite_dir: Path, include_dirs: list[Path] = ()) -> tuple[list[Path], list[Path]]:
    """(suite sources changed since `ref` or including a changed header, the changed kernel files)."""
    _, hit, changed = _changed(ref, suite_dir, include_dirs)
    return hit, changed


def kernels_changed(ref: str, suite_dir: Path, include_dirs: list[Path] = (),
                    discovered: Callable[[], Suite] | None = None) -> tuple[set[str], list[Path]]:
    """(kernel names defined by sources changed since `ref`, or including a changed header; the
    changed kernel files). Deleted files count as changed but define nothing. discovered: as _changed."""
    suite, hit, changed = _changed(ref, suite_dir, include_dirs, discovered)
    files = {p.resolve() for p in hit}
    return {k.name for k in suite.kernels.values() if k.file is not None and Path(k.file).resolve() in files} \
        if suite else set(), changed


def selection_line(ref: str, files: list[Path], kernels: set[str], chosen: int, total: int) -> str:
    """`--since HEAD~3: 2 changed files (unary.hip, binary.hip) define 120 kernels: 1,204 of 9,081 cases`;
    a changed header counts as defining the kernels of the sources including it."""
    n = len(files)
    names = ", ".join(p.name for p in files[:6]) + (f", … {n - 6} more" if n > 6 else "")
    if not n:
        return f"--since {ref}: no kernel file changed: 0 of {total:,} cases"
    what = f"{n} changed file{'s' * (n != 1)} ({names})"
    return f"--since {ref}: {what} define{'s' * (n == 1)} {len(kernels):,} kernel{'s' * (len(kernels) != 1)}: " \
           f"{chosen:,} of {total:,} cases"
