"""`parity run --since REF`: only the cases whose kernels live in files changed since a git ref.

The fast check before a PR (and the pre-commit hook): a changed `.hip`/`.cu` file selects the
kernels it defines, and those it defined at REF, scanned with REF's headers (a kernel deleted or
renamed, by its file or by a header's macro, is then `missing`, not unseen; a deleted file's
likewise); a changed header selects every source that includes it, directly or not, from the suite's
folder or a port's include folders, whatever its name (`ops.def`); a changed force-included header,
parity-port.toml, parity-kernels.toml or references module selects every source. Changes
are what `git diff REF` sees (staged and unstaged), untracked files, and files git ignores (git
cannot say whether they changed, and the suite's discovery reads them).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from parity.suite.includes import header_closure
from parity.suite.scan import SOURCE_SUFFIXES, Suite, SuiteError, discover, listing, scan_source


# parity's own files beside a suite: a change to the build line, the declared kernels or their
# references module may change any kernel's verdict, so it selects every source
CONFIG_NAMES = ("parity-port.toml", "parity-kernels.toml")
IGNORED_NAMES = ("README.md", ".gitignore")        # text no compile reads (a changed one selects nothing)


class SinceError(ValueError):
    """Not a git work tree, or an unknown ref: a user mistake, said in one line."""


def _git(args: list[str], cwd: Path, text: bool = True) -> str | bytes:
    try:
        p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=text, timeout=60)
    except FileNotFoundError:
        raise SinceError("--since needs git on PATH") from None
    except subprocess.TimeoutExpired:
        raise SinceError(f"--since: git {args[0]} in {cwd} did not finish in 60 s") from None
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


@dataclass(frozen=True)
class BuildLine:
    """What a suite folder's sources are scanned with: a port's include folders, force-included
    headers and defines (parity.suite.port); none for a plain folder."""
    include_dirs: tuple[Path, ...] = ()
    force_includes: tuple[Path, ...] = ()
    defines: dict | None = None
    files: tuple[Path, ...] = ()                 # the port's own file, wherever it is

    @classmethod
    def of(cls, port) -> BuildLine:
        if port is None:
            return cls()
        include_dirs, defines, forced = port.scan_line()       # as the port's discovery reads its sources
        own = (Path(port.file).resolve(),) if getattr(port, "file", None) else ()
        return cls(tuple(Path(p).resolve() for p in include_dirs), tuple(Path(f).resolve() for f in forced), defines,
                   own)


def _blob(ref: str, top: Path, path: Path) -> bytes | None:
    """The content of `path` (a file of the repository at `top`) at `ref`; None where it did not exist."""
    try:
        return _git(["cat-file", "blob", f"{ref}:{path.relative_to(top).as_posix()}"], top, text=False)
    except SinceError:
        return None


def _tree_at(ref: str, top: Path, folders: list[Path], changed: list[Path], tree: Path) -> None:
    """The files of `folders` (inside the repository at `top`) as they were at `ref`, under `tree` at their
    paths in the repository: a file changed since `ref` as its content then (none where it is new), every
    other one a link to itself (unchanged: no copy, however large). Only what changed is read from git
    (no archive of the folders: links, export-ignore and pathspec magic in names stay out of it)."""
    then = {p: _blob(ref, top, p) for p in changed if p.is_relative_to(top)}
    for p, data in then.items():                  # REF's files first: what is there now never hides them (a
        if data is not None:                      # file that became a folder)
            _put(tree / p.relative_to(top), lambda target, d=data: target.write_bytes(d))
    for folder in folders:
        for entry in listing(folder):
            real = Path(os.path.realpath(entry))  # (a link loop is no file: left out, never an error)
            if not entry.is_relative_to(top) or entry.is_dir():
                continue
            if real in then:                      # a link to a changed file: REF's content in its place
                if then[real] is not None:
                    _put(tree / entry.relative_to(top), lambda target, d=then[real]: target.write_bytes(d))
            elif real.is_file():
                _put(tree / entry.relative_to(top), lambda target, r=real: target.symlink_to(r))


def _put(target: Path, write: Callable[[Path], None]) -> None:
    """write(target) unless something is there already, or a file stands where a folder of its would be."""
    try:
        if target.exists() or target.is_symlink():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        write(target)
    except OSError:                               # (NotADirectoryError, FileExistsError: REF's layout wins)
        pass


def kernels_at(ref: str, sources: list[Path], folder: Path, changed: list[Path],
               build: BuildLine | None = None) -> set[str]:
    """The kernels `sources` (files of the repository that holds `folder`; they may be deleted) defined
    at `ref`, each scanned with the headers of the folder and of its include folders as they were at
    `ref` (a kernel renamed by a header's macro was defined under its old name there). changed: the
    files changed since `ref` (the only ones that differ from the work tree)."""
    build = build or BuildLine()
    folder = Path(folder).resolve()
    top = _top(folder)
    with tempfile.TemporaryDirectory(prefix="parity-since-") as d:
        tree = Path(d)
        inside = [p for p in (folder, *build.include_dirs) if p.is_relative_to(top) and p.is_dir()]
        _tree_at(ref, top, list(dict.fromkeys(inside)), changed, tree)

        def then(p: Path) -> Path:
            return tree / p.relative_to(top) if p.is_relative_to(top) else p
        names: set[str] = set()
        for src in sources:
            old = then(Path(src).resolve())
            if not old.is_file():                # not in REF: a new file defined nothing there
                continue
            # a forced header outside the mirrored folders as it is, unless it changed (then REF's or none)
            forced = [then(f) if then(f).is_file() or f in changed else f for f in build.force_includes]
            try:
                decls, _ = scan_source(old, [then(p) for p in build.include_dirs], build.defines,
                                       force_includes=[f for f in forced if f.is_file()], cached=False)
            except (SuiteError, OSError):        # what cannot be read there names nothing
                continue
            names |= {k.name for k in decls}
    return names


def _changed(ref: str, suite_dir: Path, build: BuildLine,
             discovered: Callable[[], Suite] | None = None) -> tuple[Suite | None, list[Path], list[Path]]:
    """(the suite, its sources changed since `ref` or including a changed header, the changed
    kernel files); no suite is discovered when no kernel file changed. A port's include folders
    outside the suite's folder are looked at too (those in the same repository), and a changed
    force-included header changes every source. discovered: the run's own discovery of that folder
    (a port's build line), made on demand, else the folder's."""
    suite_dir = Path(suite_dir).resolve()
    forced = set(build.force_includes)
    # any file may be a header (`#include "ops.def"`): what the sources include decides, below
    found = [p for p in changed_files(ref, suite_dir) if p.name not in IGNORED_NAMES]
    top = _top(suite_dir)
    for d in build.include_dirs:                 # and of this repository (REF means nothing elsewhere)
        if not d.is_relative_to(suite_dir) and d.is_dir() and d.is_relative_to(top):
            found += [p for p in changed_files(ref, d)]
    for f in (*forced, *build.files):            # a forced header, or the port's file, in neither
        if not f.is_relative_to(suite_dir) and f.is_relative_to(top) and f.parent.is_dir():
            found += [p for p in changed_files(ref, f.parent) if p == f]
    changed = list(dict.fromkeys(found))
    if not changed:
        return None, [], []
    try:
        suite = discovered() if discovered is not None else discover(suite_dir)
    except SuiteError as e:
        raise SinceError(str(e)) from None
    headers = {p for p in changed if p.suffix not in SOURCE_SUFFIXES or p in forced}
    dirs = list(build.include_dirs)
    every = any(p.name in CONFIG_NAMES or p.suffix == ".py" or p in build.files for p in changed) or \
        any(f in headers or headers & set(header_closure(f, dirs)) for f in forced)
    hit = [Path(src) for src in suite.sources
           if every or Path(src).resolve() in changed or headers & set(header_closure(Path(src).resolve(), dirs))]
    return suite, hit, changed


def sources_changed(ref: str, suite_dir: Path, port=None,
                    discovered: Callable[[], Suite] | None = None) -> tuple[list[Path], list[Path]]:
    """(suite sources changed since `ref` or including a changed header, the changed kernel files);
    port: the suite's build line (parity.suite.port.Port), if it has one; discovered: as _changed."""
    _, hit, changed = _changed(ref, suite_dir, BuildLine.of(port), discovered or _port_discovery(port))
    return hit, changed


def _port_discovery(port) -> Callable[[], Suite] | None:
    """The port's own discovery (its build line: a forced header may rename kernels), else None."""
    if port is None:
        return None
    from parity.suite.port import discover_port
    return lambda: discover_port(port)


def kernels_changed(ref: str, suite_dir: Path, port=None,
                    discovered: Callable[[], Suite] | None = None) -> tuple[set[str], list[Path]]:
    """(kernel names defined by sources changed since `ref` or including a changed header, and those
    the same sources and the deleted ones defined at `ref`; the changed kernel files). port and
    discovered: as sources_changed and _changed."""
    build = BuildLine.of(port)
    suite, hit, changed = _changed(ref, suite_dir, build, discovered or _port_discovery(port))
    files = {p.resolve() for p in hit}
    now = {k.name for k in suite.kernels.values() if k.file is not None and Path(k.file).resolve() in files} \
        if suite else set()
    at_ref = sorted(files | {p for p in changed if p.suffix in SOURCE_SUFFIXES})
    before = kernels_at(ref, at_ref, suite_dir, changed, build) if at_ref else set()
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
