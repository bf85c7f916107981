"""One-line answers to a misspelled name: "unknown layout 'transposd'; did you mean 'transposed'?".

A leaf module (imports nothing of parity): every command that takes a name from the user (a level,
a layout, a dtype, a case id, a sweep key) words its error through `unknown`, so no error is a
170-name line and every one offers the closest names.
"""
from __future__ import annotations

import difflib
from typing import Iterable

SHOWN = 8        # a list longer than this is not read: the closest names and a count instead


def unknown(kind: str, word: str, choices: Iterable[str], hint: str = "", ordered: bool = False) -> str:
    """`unknown KIND 'WORD'; did you mean 'A' or 'B'?` (or the known names, when few and none close).
    hint: where the full list is (`see parity list`), added when the list is not shown. ordered: names
    as close as each other are offered in the order of `choices` (the likelier first), not difflib's
    reverse alphabetical one (`gfx90`: 'gfx90a' before 'gfx950')."""
    names = [str(c) for c in dict.fromkeys(choices)]
    if ordered:
        score = {c: difflib.SequenceMatcher(None, str(word), c).ratio() for c in names}
        close = sorted((c for c in names if score[c] >= 0.6), key=lambda c: -score[c])[:3]   # (a stable sort)
    else:
        close = difflib.get_close_matches(str(word), names, n=3, cutoff=0.6)
    head = f"unknown {kind} {word!r}"
    if close:
        return f"{head}; did you mean {' or '.join(repr(c) for c in close)}?"
    if len(names) <= SHOWN:
        return f"{head}; known: {', '.join(names)}"
    return f"{head} ({len(names)} known" + (f": {hint})" if hint else ")")
