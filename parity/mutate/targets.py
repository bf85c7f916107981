"""Which suite files are worth mutating, and what a mutant of each must compile and run.

A `.hip` file is a target when it defines a catalog kernel; a header when such a file includes
it (directly or not). A mutant of a `.hip` recompiles that file; a mutant of a header recompiles
every target source including it. Either runs only the cases whose kernels those sources define.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from parity.chains import LAYOUT, is_chain
from parity.host.routines import is_library_kernel, suite_kernels
from parity.mutate.operators import directive_end, mask
from parity.ops import expected_kernels
from parity.run.cases import Case
from parity.suite.includes import header_closure
from parity.suite.scan import balanced_end, discover


@dataclass(frozen=True)
class FileTarget:
    file: str                                           # relative to the suite folder
    sources: tuple[tuple[str, frozenset[str]], ...]     # (source a mutant recompiles, its catalog kernels)

    @functools.cached_property              # asked once per case by cases_for: worked out once
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
    # (a chain: its steps'); suite_kernels (the whole catalog's names each call) only for host routines
    return frozenset(k for n in sorted(Case(op, dtype, LAYOUT, "normal").kernels)
                     for k in (suite_kernels([n]) if is_library_kernel(n) else [n]))


def cases_for(target: FileTarget, cases: list[Case]) -> list[Case]:
    """The cases that reach code of `target`'s file."""
    hit = {k for k in {(c.op, c.dtype) for c in cases} if _kernels(*k) & target.kernels}
    return [c for c in cases if (c.op, c.dtype) in hit]


def sources_needed(target: FileTarget, cases: list[Case]) -> list[str]:
    """The sources of `target` defining a kernel these cases launch: the only ones to recompile."""
    used = set().union(*(case_kernels(c) for c in cases))
    return [s for s, ks in target.sources if ks & used]


def spread(cases: list[Case]) -> list[Case]:
    """`cases` reordered round robin over (op, dtype, layout, value class), so that the first few
    cases a mutant meets already differ in every way a case can: a mutant is usually killed by
    one class of cases, and a survivor runs them all anyway. Op chains come last: each runs many
    launches, and a mutant of one of their steps is usually killed by that step's own cases."""
    out: list[Case] = []
    for chained in (False, True):
        groups: dict[tuple, list[Case]] = {}
        for c in cases:
            if is_chain(c.op) == chained:
                groups.setdefault((c.op, c.dtype, c.layout, c.values), []).append(c)
        queues = list(groups.values())
        for depth in range(max((len(q) for q in queues), default=0)):
            out.extend(q[depth] for q in queues if depth < len(q))
    return out


_BLOCK_HEAD = re.compile(r"\b(?:struct|class|union)\s+(\w+)|(\w+)\s*\(")
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)


def enclosing_name(text: str, offset: int) -> str | None:
    """The name of the definition around `offset` in a header, its head (template line, return
    type, parameters) included: the macro whose body holds it, else the outermost function, struct
    or class (namespaces and extern "C" blocks looked through). None at file scope and in a free
    operator (its users never write its name)."""
    for name, start, end in _definitions(text):
        if start <= offset < end:
            return name
    return None


@functools.lru_cache(maxsize=64)
def _definitions(text: str) -> tuple[tuple[str | None, int, int], ...]:
    """(name, start, end) of every macro (continued lines included), then of every outermost
    brace-delimited definition from the start of its head."""
    out = [(m.group(1), m.start(), directive_end(text, m.end())) for m in _MACRO.finditer(text)]
    code = mask(text)
    depth, current = 0, None                   # current: (name, head start, depth it opened at)
    for i, ch in enumerate(code):
        if ch == "{":
            if current is None:
                head_start = max(code.rfind(c, 0, i) for c in ";{}") + 1
                head = code[head_start:i]
                if head.strip() and not re.search(r"\bnamespace\b|extern\s*$", head):
                    hit = None if re.search(r"\boperator\b", head) else _BLOCK_HEAD.search(_untemplated(head))
                    current = ((hit.group(1) or hit.group(2)) if hit else None, head_start, depth)
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if current is not None and depth == current[2]:
                out.append((current[0], current[1], i + 1))
                current = None
    return tuple(out)


def _untemplated(head: str) -> str:
    """A definition's head without its `template <...>` parameter lists (`class T` is not a name)."""
    out, i = [], 0
    for m in re.finditer(r"\btemplate\s*<", head):
        if m.start() < i:
            continue
        out.append(head[i:m.start()])
        i = balanced_end(head, m.end(), "<>")
    return "".join(out) + head[i:]


def _names_reaching(text: str, name: str) -> set[str] | None:
    """`name` and every definition of the header `text` that mentions one of these names, to a
    fixpoint (a source using any of them may use the changed code); None when a mention sits
    outside any named definition (file-scope code: every includer may use it). Comments and
    literals do not count: a header comment naming a helper is no use of it."""
    names, todo, code = {name}, [name], mask(text)
    while todo:
        word = re.compile(rf"\b{re.escape(todo.pop())}\b")
        for m in word.finditer(code):
            outer = enclosing_name(text, m.start())
            if outer is None:
                return None
            if outer not in names:
                names.add(outer)
                todo.append(outer)
    return names


def source_order(target: FileTarget, sources: list[str], mutant_text: str, offset: int,
                 suite_dir: Path) -> list[str]:
    """The sources a header mutant must compile, those that use the changed definition first (a
    header mutant stops at the first source whose cases kill it). A source that neither mentions
    the definition nor anything of the header that does (nor do its other headers) cannot contain
    its code: it is left out, unless no source uses it (then all are compiled, to be sure the code
    is dead). Free operators and file-scope code: every source, users first where known."""
    name = enclosing_name(mutant_text, offset)
    if name is None or len(sources) < 2:
        return list(sources)
    reach = _names_reaching(mutant_text, name)
    words = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(reach or {name})) + r")\b")
    root = Path(suite_dir)
    header = (root / target.file).resolve()

    def uses(src: str) -> bool:
        files = [root / src] + [h for h in header_closure(root / src, []) if h.resolve() != header]
        return any(words.search(f.read_text(errors="replace")) for f in files if f.is_file())
    users = [s for s in sources if uses(s)]
    if reach is None or not users:
        return users + [s for s in sources if s not in users]
    return users
