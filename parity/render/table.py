"""Tables that fit the terminal (or an 80-column CI log) without splitting a name over two lines.

Rich shrinks every column of a too-wide table, folding kernel names mid-word (`asort_asc_b` /
`f16`), which no one can grep. Here name columns never wrap, other columns wrap only between
words, and when even that does not fit, the least important columns are left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from parity.core.text import one_line

_WORD_CAP = 30        # a prose column may fold a token longer than this


@dataclass(frozen=True)
class Col:
    header: str
    name: bool = False        # kernel/op name: one line, full width
    drop: int = 0             # 0: always shown; otherwise higher numbers go first when narrow
    prose: bool = False       # free text (formulas): may fold anywhere, so it needs little width
    justify: str = "left"


def _min_width(col: Col, values: list[str]) -> int:
    if col.name:
        return max([len(col.header)] + [len(v) for v in values])
    if col.prose:
        return max(len(col.header), 10)
    tokens = [len(t) for v in values for t in v.split()]
    return max([min(len(w), _WORD_CAP) for w in col.header.split()] + [min(t, _WORD_CAP) for t in tokens])


def fit_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str | Text]], **table_kw) -> Table:
    """A rich Table of `rows` with the columns that fit `console.width`. A str cell is literal text (a
    kernel's or a file's name, a compiler's message: never read as markup, control characters shown
    as escapes); a styled cell is a rich Text."""
    rows = [[c if isinstance(c, Text) else Text(one_line(c)) for c in r] for r in rows]
    plain = [[c.plain for c in r] for r in rows]
    need = [_min_width(c, [r[i] for r in plain]) for i, c in enumerate(cols)]
    keep = list(range(len(cols)))
    # heavy-head box: 3 characters per column (2 padding + 1 rule) and 1 closing rule
    width = lambda idx: sum(need[i] for i in idx) + 3 * len(idx) + 1
    for i in sorted((i for i, c in enumerate(cols) if c.drop), key=lambda i: -cols[i].drop):
        if width(keep) <= console.width:
            break
        keep.remove(i)
    # still too wide: text columns give way (their words fold), names never do
    for i in sorted((i for i in keep if not cols[i].name), key=lambda i: -need[i]):
        over = width(keep) - console.width
        if over <= 0:
            break
        need[i] = max(4, need[i] - over)
    widths = _share([need[i] for i in keep], [max([len(cols[i].header)] + [len(r[i]) for r in plain])
                                              for i in keep], console.width - width(keep) + sum(need[i] for i in keep))
    # Fixed widths: rich's own shrinking ignores word boundaries (and overshoots with min_width).
    t = Table(**table_kw)
    for i, w in zip(keep, widths):
        c = cols[i]
        t.add_column(c.header, width=w, no_wrap=c.name, overflow="ellipsis" if c.name else "fold",
                     justify=c.justify)
    for r in rows:
        t.add_row(*(r[i] for i in keep))
    return t


def _share(need: list[int], want: list[int], room: int) -> list[int]:
    """Column widths: each at least `need`, at most `want`, the spare `room` shared out evenly."""
    w = list(need)
    spare = room - sum(w)
    while spare > 0:
        grow = [i for i in range(len(w)) if w[i] < want[i]]
        if not grow:
            break
        step = max(1, spare // len(grow))
        for i in grow:
            d = min(step, want[i] - w[i], spare)
            w[i] += d
            spare -= d
    return w
