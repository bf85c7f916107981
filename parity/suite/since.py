"""`parity run --since REF`: only the cases whose kernels live in files changed since a git ref.

The fast check before a PR (and the pre-commit hook): a changed `.hip`/`.cu` file selects the
kernels it defines, and those it defined at REF (a kernel deleted or renamed is then `missing`, not
unseen; a deleted file's likewise); a changed header selects every source that includes it,
directly or not. Changes are what `git diff REF` sees (staged and unstaged), untracked files, and
files git ignores (git cannot say whether they changed, and the suite's discovery reads them).
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from parity.suite.includes import header_closure
from parity.suite.scan import HEADER_SUFFIXES, SOURCE_SUFFIXES, Suite, SuiteError, discover, scan_source


class SinceError(ValueError):
    """Not a git work tree, or an unknown ref: a user mistake, said in one line."""


def _git(args: list[str], cwd: Path, text: bool = True) -> str | bytes:
    try:
        p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=text, timeout=60)
    except FileNotFoundError:
        raise SinceError("--since needs git on PATH") from None
    if p.returncode != 0:
        err = p.stderr if text else p.stderr.decode(errors="replace")
        why = err.strip().splitlines()[-1] if err.strip() else "failed"
        raise SinceError(f"--since: git {args[0]} in {cwd}: {why}")
    return p.stdout


def _top(folder: Path) -> Path:
    return Path(_git(["rev-parse", "--show-toplevel"], folder).strip()).resolve()


def changed_files(ref: str, folder: Path) -> list[Path]:
    """Files under `folder` changed since `ref` (committed, staged, unstaged, untracked or ignored)."""
    folder = Path(folder).resolve()
    top = _top(folder)
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], folder)
    except SinceError:
        raise SinceError(f"--since {ref}: no such commit in the git repository {top}") from None
    names = []                                    # -z: names as they are (no quoting of non-ASCII bytes)
    for args in (["diff", "-z", "--name-only", ref, "--", "."],
                 ["ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--", "."],
                 ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--full-name", "--", "."]):
        names += [n for n in _git(args, folder).split("\0") if n]
    out = []
    for n in dict.fromkeys(names):
        p = (top / n).resolve()
        if p.is_relative_to(folder):
            out.append(p)
    return out


def kernels_at(ref: str, source: Path, top: Path, include_dirs: list[Path] = ()) -> set[str]:
    """The kernels `source` (a file of the repository whose work tree is `top`; it may be deleted)
    defined at `ref` (none where it did not exist): scanned from a copy outside the suite, its own
    folder first on the include path, as its quoted includes read it."""
    source = Path(source).resolve()
    try:
        old = _git(["show", f"{ref}:{source.relative_to(top).as_posix()}"], top, text=False)
    except SinceError:                            # not in REF: a new file defined nothing there
        return set()
    with tempfile.TemporaryDirectory(prefix="parity-since-") as d:
        copy = Path(d) / source.name
        copy.write_bytes(old)
        try:
            decls, _ = scan_source(copy, [source.parent, *include_dirs])
        except (SuiteError, OSError):            # what cannot be read now (a header gone) names nothing
            return set()
    return {k.name for k in decls}


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
    """(kernel names defined by sources changed since `ref` or including a changed header, and those
    the changed sources defined at `ref` (deleted files too); the changed kernel files). discovered:
    as _changed."""
    suite, hit, changed = _changed(ref, suite_dir, include_dirs, discovered)
    files = {p.resolve() for p in hit}
    now = {k.name for k in suite.kernels.values() if k.file is not None and Path(k.file).resolve() in files} \
        if suite else set()
    old = [p for p in changed if p.suffix in SOURCE_SUFFIXES]
    top = _top(Path(suite_dir).resolve()) if old else None
    before = set().union(*(kernels_at(ref, p, top, list(include_dirs)) for p in old))
    return now | before, changed


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
