"""Single-change mutants of a HIP source that model porting bugs (pure text, no compiler, no GPU).

The source is first *masked*: comments, string and character literals and preprocessor
directives become spaces (offsets and lines stay where they were), so an operator never
matches inside them. A `#define`'s body is kept: the bundled suite writes whole op families as
macros (unary.h's PK_UOP), and a bug there is as real as one in a function.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    """One change: `original` at `offset` (line, column: 1-based) of `file` becomes `replacement`."""
    file: str              # path relative to the suite folder
    line: int
    column: int
    offset: int
    original: str
    replacement: str
    operator: str
    source_line: str       # the unchanged line, for the one-line diff

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}:{self.column}:{self.operator}"

    def mutated_line(self) -> str:
        start = self.column - 1
        return self.source_line[:start] + self.replacement + self.source_line[start + len(self.original):]

    def diff(self) -> str:
        """`file:line: <old line> -> <new line>`, both stripped."""
        return f"{self.file}:{self.line}: {self.source_line.strip()}  ->  {self.mutated_line().strip()}"

    def apply(self, text: str) -> str:
        assert text[self.offset:self.offset + len(self.original)] == self.original, self.id
        return text[:self.offset] + self.replacement + text[self.offset + len(self.original):]


# ------------------------------------------------------------------------------- masking
_DEFINE_HEAD = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w+(\([^)]*\))?", re.M)


def source_text(path: Path) -> str:
    """A source as mutants see it: bytes that are not UTF-8 (a Latin-1 comment) kept as they are, one
    character each, so that a mutant written back changes nothing but its edit."""
    return Path(path).read_text(errors="surrogateescape")


def mask(text: str) -> str:
    """`text` with comments, literals and preprocessor directives (but #define bodies) blanked."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i, min(j + 1, n))
            i = j + 1
        elif c == "#" and text[text.rfind("\n", 0, i) + 1:i].strip() == "":
            i = _mask_directive(text, i, blank)
        else:
            i += 1
    return "".join(out)


def _mask_directive(text: str, i: int, blank: Callable[[int, int], None]) -> int:
    """Blank the directive starting at `i` (its continuation lines too, but a #define's body);
    returns where scanning goes on (the body of a #define is scanned like code)."""
    start = text.rfind("\n", 0, i) + 1
    head = _DEFINE_HEAD.match(text, start)
    if head:
        blank(i, head.end())
        return head.end()
    end = directive_end(text, i)
    blank(i, end)
    return end


def directive_end(text: str, i: int) -> int:
    """Where the preprocessor line holding offset `i` ends (after its newline), its
    backslash-continued lines included."""
    end = i
    while True:
        j = text.find("\n", end)
        if j < 0:
            return len(text)
        if not text[end:j].rstrip(" \t\r").endswith("\\"):
            return j + 1
        end = j + 1


# ----------------------------------------------------------------------------- operators
# Each operator yields (offset, original, replacement) over the masked text.
Edit = tuple[int, str, str]
_SWAP_REL = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
# Binary operators are written with a space on both sides in the suites this targets (clang-format);
# requiring it keeps template brackets (Num<T>), shifts and `->` out.
_REL = re.compile(r"(?<=\s)(<=|>=|<|>)(?=\s)")
_EQ = re.compile(r"(?<=\s)(==|!=)(?=\s)")
_LOGIC = re.compile(r"(?<=\s)(&&|\|\|)(?=\s)")
_SIGN = re.compile(r"(?<=\s)([+-])(?=\s)")
_OFFSETY = re.compile(r"\w*(idx|index|off|offset|pos|stride|base|start)\w*", re.I)
_BOUND = re.compile(r"(?<=\s)<\s+([A-Za-z_][\w.]*(?:->\w+)*(?:\[[^\]\[]*\])?)(?=\s*(?:[;)]|&&|\|\|))")
_NAN = re.compile(r"\b(?:std::)?(isnan|isnanf|is_nan|__hisnan)\s*\(")
_ROUND = re.compile(r"\b0x(7fff|8000)(?=[uU]?\b)", re.I)
_WIDE = re.compile(r"(?:\b[A-Za-z_]\w*::)*\b(size_t|uint64_t|usize|u64|int64_t|i64)(?=\s+[A-Za-z_]\w*\s*[=;,)])")
_NARROW = {"size_t": "unsigned int", "uint64_t": "unsigned int", "usize": "unsigned int",
           "u64": "unsigned int", "int64_t": "int", "i64": "int"}


def _brackets(code: str) -> list[tuple[int, int]]:
    """(open, close) offsets of every `[...]` that holds no newline (array indexing)."""
    spans, stack = [], []
    for k, c in enumerate(code):
        if c == "[":
            stack.append(k)
        elif c == "]" and stack:
            a = stack.pop()
            if "\n" not in code[a:k]:
                spans.append((a, k))
        elif c in ";{}":
            stack.clear()
    return spans


def _in_index(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(a < pos < b for a, b in spans)


def _statement(code: str, pos: int) -> str:
    a = max(code.rfind(c, 0, pos) for c in ";{}") + 1
    ends = [e for e in (code.find(c, pos) for c in ";{}") if e >= 0]
    return code[a:min(ends) if ends else len(code)]


def relational(code: str) -> Iterator[Edit]:
    for m in _REL.finditer(code):
        yield m.start(), m.group(1), _SWAP_REL[m.group(1)]


def equality(code: str) -> Iterator[Edit]:
    for m in _EQ.finditer(code):
        yield m.start(), m.group(1), "!=" if m.group(1) == "==" else "=="


def logical(code: str) -> Iterator[Edit]:
    for m in _LOGIC.finditer(code):
        yield m.start(), m.group(1), "||" if m.group(1) == "&&" else "&&"


def arithmetic_sign(code: str) -> Iterator[Edit]:
    """`+` <-> `-` where it computes an index or offset: inside `[...]`, or in a statement naming one."""
    spans = _brackets(code)
    for m in _SIGN.finditer(code):
        if _in_index(spans, m.start()) or _OFFSETY.search(_statement(code, m.start())):
            yield m.start(), m.group(1), "-" if m.group(1) == "+" else "+"


def off_by_one(code: str) -> Iterator[Edit]:
    """`i < n` -> `i < n - 1` (the `<=` variant is `relational`'s)."""
    for m in _BOUND.finditer(code):
        bound = m.group(1)
        yield m.start(1), bound, f"{bound} - 1"


def ternary_swap(code: str) -> Iterator[Edit]:
    """`c ? a : b` -> `c ? b : a` (arms without a nested `?`)."""
    for q in (k for k, c in enumerate(code) if c == "?"):
        colon = _arm_end(code, q + 1, stop=":")
        if colon is None:
            continue
        end = _arm_end(code, colon + 1, stop=",;)}]")
        if end is None:
            continue
        a, b = code[q + 1:colon], code[colon + 1:end]
        if not a.strip() or not b.strip() or "?" in a + b:
            continue
        lead_a, lead_b = len(a) - len(a.lstrip()), len(b) - len(b.lstrip())
        a_s, b_s = a.strip(), b.strip()
        start = q + 1 + lead_a
        original = code[start:colon + 1 + lead_b + len(b_s)]
        yield start, original, _swap(original, a_s, b_s)


def _swap(span: str, a: str, b: str) -> str:
    """`a <ws>:<ws> b` -> `b <ws>:<ws> a`, keeping the whitespace around the colon."""
    middle = span[len(a):len(span) - len(b)]
    return b + middle + a


def _arm_end(code: str, k: int, stop: str) -> int | None:
    """Offset of the first `stop` character at bracket depth 0 from `k` (`::` is not a colon)."""
    depth = 0
    while k < len(code):
        c = code[k]
        if c == ":" and code.startswith("::", k):
            k += 2
            continue
        if depth == 0 and c in stop:
            return k
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return k if c in stop else None
            depth -= 1
        elif c == "\n" and depth == 0 and code[k - 1] != "\\" and stop == ":":
            return None
        k += 1
    return None


_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*|k[A-Z]\w*")   # array extents (kMaxBlock, N), not indices


def stride_index(code: str) -> Iterator[Edit]:
    """Stride/dim confusion: `[k * num_dims + d]` -> `[k + num_dims + d]`, `[d]` -> `[0]`."""
    for a, b in _brackets(code):
        inner = code[a + 1:b]
        if re.fullmatch(r"\s*[A-Za-z_]\w*\s*", inner) and not _CONSTANT.fullmatch(inner.strip()):
            lead = len(inner) - len(inner.lstrip())
            yield a + 1 + lead, inner.strip(), "0"
        for m in re.finditer(r"(?<=\s)\*(?=\s)", inner):
            if "+" in inner:
                yield a + 1 + m.start(), "*", "+"


def nan_check(code: str) -> Iterator[Edit]:
    """`isnan(x)` -> `false` (not the definition `bool is_nan(float x)`)."""
    for m in _NAN.finditer(code):
        before = code[:m.start()].rstrip()
        if re.search(r"\b(bool|int|auto|PK_DEV|__device__|inline)$", before):
            continue
        end = _arm_end(code, m.end(), stop=")")
        if end is not None:
            yield m.start(), code[m.start():end + 1], "false"


def rounding_bias(code: str) -> Iterator[Edit]:
    """The round-to-nearest-even bias `0x7fff` <-> `0x8000` (bf16 / f16 conversions)."""
    for m in _ROUND.finditer(code):
        digits = m.group(1)
        yield m.start(), m.group(0), "0x8000" if digits.lower() == "7fff" else "0x7fff"


def index_truncation(code: str) -> Iterator[Edit]:
    """A 64-bit index or size declaration becomes 32-bit (`size_t i = ...` -> `unsigned int i = ...`;
    a qualified `pk::usize` as a whole: `pk::unsigned int` would not compile)."""
    for m in _WIDE.finditer(code):
        yield m.start(), m.group(0), _NARROW[m.group(1)]


OPERATORS: dict[str, Callable[[str], Iterator[Edit]]] = {
    "relational-boundary": relational,
    "equality": equality,
    "logical": logical,
    "arithmetic-sign": arithmetic_sign,
    "off-by-one": off_by_one,
    "ternary-swap": ternary_swap,
    "stride-index": stride_index,
    "nan-check": nan_check,
    "rounding-bias": rounding_bias,
    "index-truncation": index_truncation,
}


# ------------------------------------------------------------------------------ generation
def mutants_of_text(text: str, file: str, operators: list[str] | None = None) -> list[Mutant]:
    """Every mutant of one file's text, ordered by position then operator."""
    code = mask(text)
    starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"]
    lines = text.split("\n")
    out: dict[tuple[int, str, str], Mutant] = {}
    for name in operators or list(OPERATORS):
        for offset, original, replacement in OPERATORS[name](code):
            if original == replacement:
                continue
            line = _line_of(starts, offset)
            key = (offset, original, replacement)
            out.setdefault(key, Mutant(file, line + 1, offset - starts[line] + 1, offset,
                                       text[offset:offset + len(original)], replacement, name, lines[line]))
    return sorted(out.values(), key=lambda m: (m.offset, m.operator, m.replacement))


def _line_of(starts: list[int], offset: int) -> int:
    import bisect
    return bisect.bisect_right(starts, offset) - 1


def mutants_of(suite_dir: Path, files: list[str], operators: list[str] | None = None) -> list[Mutant]:
    """Every mutant of these files (relative to `suite_dir`), file by file in the given order."""
    out: list[Mutant] = []
    for f in files:
        out += mutants_of_text(source_text(Path(suite_dir) / f), f, operators)
    return out


def sample(mutants: list[Mutant], n: int | None, seed: int = 0) -> list[Mutant]:
    """At most `n` mutants, reproducibly from `seed`, spread over every file (round robin over the
    files, each file's mutants shuffled), returned in the deterministic order of `mutants`."""
    if n is None or n >= len(mutants):
        return list(mutants)
    rng = random.Random(seed)
    per_file: dict[str, list[int]] = {}
    for k, m in enumerate(mutants):
        per_file.setdefault(m.file, []).append(k)
    queues = [per_file[f] for f in sorted(per_file)]
    for q in queues:
        rng.shuffle(q)
    chosen: set[int] = set()
    while len(chosen) < n:
        for q in queues:
            if q and len(chosen) < n:
                chosen.add(q.pop())
    return [m for k, m in enumerate(mutants) if k in chosen]
