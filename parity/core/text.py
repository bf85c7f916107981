"""Text a port controls (kernel and file names, compiler output, a declaration's titles), made safe
for every place parity shows it: one line with no control characters for the terminal and the
GitHub log, code spans and escapes for markdown (a PR comment renders HTML, headings and links).

`one_line` shows what it replaces (`\\n`, `\\x1b`, `\\u202e`), so that a name still reads as the
bytes it is: a newline, an escape sequence (cursor moves, colours, window titles) or a bidi override
(text displayed in another order than it runs) never acts, on a terminal or in a rendered comment.
"""
from __future__ import annotations

import re

# C0 and C1 controls, DEL, the line and paragraph separators, bidi embeddings / overrides / isolates,
# and lone surrogates (not encodable as UTF-8: every writer would fail on them)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SHOWN = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# characters with a meaning inside a line of CommonMark/GFM (emphasis, code, links and images, HTML,
# entities, strikethrough, table cells); each may be backslash-escaped. (`#`, `+`, `-` and digits
# mean something only at a line's start, where parity never puts such text.)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def _shown(m: re.Match) -> str:
    c = m.group()
    if c in _SHOWN:
        return _SHOWN[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def one_line(s: object) -> str:
    """`s` as one line of printable text: every control character shown as its escape."""
    return _UNSAFE.sub(_shown, str(s))


def md_code(s: object, in_table: bool = False) -> str:
    """A markdown code span of `s` on one line: its fence longer than any run of backticks in it (so no
    text in it ends the span), `|` escaped where the span is a table cell's (GFM splits cells first)."""
    t = one_line(s)
    if not t:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", t)), default=0) + 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    if in_table:
        t = t.replace("|", "\\|")
    return f"{fence}{pad}{t}{pad}{fence}"


def md_text(s: object) -> str:
    """`s` as literal markdown inline text on one line: no emphasis, link, image, HTML or heading."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(s))


def share(n: int, total: int) -> str:
    """n of total as a whole percent that says 100% only when n is all of it and 0% only when none:
    663 of 665 kernels is 99%, not a rounded-up 100% that reads as done."""
    if total <= 0:
        return "–"
    p = round(100 * n / total)
    if n < total:
        p = min(p, 99)
    if n > 0:
        p = max(p, 1)
    return f"{p}%"
