"""The `#include` directives of a source and the headers it reaches, read as the preprocessor reads them.

A directive is found however it is spelled: `#include`, the digraph `%:include`, `#include_next`, split
by backslash-newlines (`#\\` newline `include`) or with comments between its tokens (`# /* */ include`).
A computed include (`#define FH "fifo.h"` then `#include FH`) is followed when its macro is a plain
`"name"` or `<name>` defined earlier in the walk; anything more elaborate (token pasting) is not, which
is why discovery also refuses special files anywhere in a suite's folders and bounds what cpp may
take (parity.suite.preprocess).

`include_walk` never opens a special file: reading a FIFO blocks forever and a device never ends, so
a compiler or cpp must not be run on a source that reaches one. Each refusal is a `Refusal`: the
one line said about it, with the including file, the directive's line and the name as written, so
discovery can preprocess the file without that one include.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from parity.core.files import special_file

# one token of C source as the directive reader needs it: a spliced line end, a line end, a comment,
# a string or character literal, or a run of anything else
_TOKEN = re.compile(r'\\\r?\n|\n|/\*.*?(?:\*/|\Z)|//(?:\\\r?\n|[^\n])*|"(?:\\.|[^"\\\n])*"?|'
                    r"'(?:\\.|[^'\\\n])*'?|[^\\\n/\"']+|.", re.S)
_DIRECTIVE = re.compile(r'[ \t]*(?:#|%:)[ \t]*(include(?:_next)?|define)\b[ \t]*(.*)', re.S)
_NAME = re.compile(r'"([^"]+)"|<([^>]+)>')
_MACRO = re.compile(r'([A-Za-z_]\w*)[ \t]*(.*)', re.S)


@dataclass(frozen=True)
class Include:
    line: int                  # the directive's first physical line (1-based)
    name: str                  # the header as written ("hip_compat.h", "/abs/x.h"), macros resolved
    angled: bool               # <name> rather than "name"
    computed: str = ""         # the macro a computed include named ("" for a literal one)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line, text) of every logical line: backslash-newlines spliced, comments replaced
    by a space (a block comment's line ends too, as translation phase 3 does), literals kept."""
    out: list[tuple[int, str]] = []
    cur: list[str] = []
    start = line = 1
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok == "\n":
            out.append((start, "".join(cur)))
            cur, line = [], line + 1
            start = line
        elif tok[0] == "\\" and tok.endswith("\n"):
            line += 1
        elif tok.startswith(("/*", "//")):
            line += tok.count("\n")
            cur.append(" ")
        else:
            cur.append(tok)
    if cur:
        out.append((start, "".join(cur)))
    return out


def include_directives(text: str, macros: dict[str, str] | None = None) -> list[Include]:
    """The `#include` directives of `text`, in order. macros: plain object-like macros seen so far
    (updated with this text's `#define NAME "x"` / `<x>`), to follow a computed include."""
    macros = {} if macros is None else macros
    out = []
    for line, body in logical_lines(text):
        if "include" not in body and "define" not in body:
            continue
        m = _DIRECTIVE.match(body)
        if not m:
            continue
        arg = m.group(2).strip()
        if m.group(1) == "define":
            d = _MACRO.match(arg)
            if d and _NAME.fullmatch(d.group(2).strip()):
                macros[d.group(1)] = d.group(2).strip()
            continue
        computed = ""
        if arg and (arg[0].isalpha() or arg[0] == "_"):
            computed = re.match(r"\w+", arg).group(0)
            arg = macros.get(computed, "")
        n = _NAME.match(arg)
        if n:
            out.append(Include(line, n.group(1) or n.group(2), n.group(2) is not None, computed))
    return out


class Refusal(str):
    """One line saying why an include (or the file itself) is not opened, with where it is:
    `file` (the including file), `line` (the directive's, 0 for the file itself), `name` (as written)
    and `reason` (parity.core.files.special_file's line about what it reaches)."""
    file: Path
    line: int
    name: str
    reason: str

    def __new__(cls, text: str, file: Path, line: int = 0, name: str = "", reason: str = "") -> "Refusal":
        self = super().__new__(cls, text)
        self.file, self.line, self.name, self.reason = Path(file), line, name, reason or text
        return self


def include_walk(source: Path, include_dirs: list[Path] = ()) -> tuple[list[Path], list[Refusal]]:
    """(the headers `source` includes, transitively, that exist next to it or under include_dirs;
    one Refusal per special file the source is or an include reaches). Special files are never opened:
    reading a FIFO blocks forever, so a compiler or cpp must not be run on a source that reaches one."""
    seen: dict[Path, None] = {}
    refused: dict[tuple[str, int], Refusal] = {}
    todo = [Path(source)]
    roots = [Path(d) for d in include_dirs]
    macros: dict[str, str] = {}
    while todo:
        cur = todo.pop()
        why = special_file(cur)
        if why:
            refused.setdefault((why, 0), Refusal(why, cur))
            continue
        try:
            text = cur.read_text(errors="replace")
        except OSError:
            continue
        for inc in include_directives(text, macros):
            bases = [cur.parent, *roots]
            for base in bases:
                cand = base / inc.name
                if cand.is_file():
                    cand = cand.resolve()
                    if cand not in seen:
                        seen[cand] = None
                        todo.append(cand)
                    break
            # every place cpp or a compiler may open for it (the including file's folder, -I, the
            # source's folder; an absolute name is itself: base / "/abs" is "/abs")
            for base in dict.fromkeys([*bases, Path(source).parent]):
                why = special_file(base / inc.name)
                if why:
                    text = f"{cur}: #include {inc.name!r}: {why}"
                    refused.setdefault((text, inc.line), Refusal(text, cur, inc.line, inc.name, why))
                if why or (base / inc.name).is_file():
                    break
    return sorted(seen), list(refused.values())


def header_closure(source: Path, include_dirs: list[Path] = ()) -> list[Path]:
    """Headers `source` includes, transitively, that exist next to it or under include_dirs
    (special files left out: `include_walk` says which)."""
    return include_walk(source, include_dirs)[0]
