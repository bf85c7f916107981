"""Mutants a sweep cannot reach by construction, and mutants argued equivalent.

Out of reach: a 64 -> 32-bit index truncation changes results only past 2^32 elements (2^31 for
a signed `int`); a sweep with no case that large cannot catch it, whatever its other cases do.
Such mutants are not sampled (the sample is of mutants the sweep could catch); the report counts
them and says what case would measure them.

`argued-equivalent`: a mutant the suite's authors argue no input can catch on a level (the hardware
does what a removed guard does, or Candle's host never makes the launch that reaches it), written
in the suite's `mutants-equivalent.toml` with the reason. It is run like any other: when it
survives it is reported with the argument and not counted; when it is killed the argument was
wrong and it counts as killed.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import replace
from pathlib import Path

from ..cases import Case
from ..layouts import LAYOUT_CLASSES
from .operators import Mutant
from .run import Outcome

EQUIVALENT_FILE = "mutants-equivalent.toml"


def largest_case(cases: list[Case]) -> int:
    """The most elements any case's layout class holds (structured shape classes are small)."""
    sizes = [math.prod(LAYOUT_CLASSES[c.layout].shape) for c in cases if c.layout in LAYOUT_CLASSES]
    return max(sizes, default=0)


def unreachable(mutant: Mutant, largest: int) -> str:
    """Why the sweep cannot catch `mutant` (its largest case has `largest` elements), or ""."""
    if mutant.operator != "index-truncation":
        return ""
    bits = 31 if mutant.replacement == "int" else 32
    if largest >= 2 ** bits:
        return ""
    return (f"a 32-bit index changes results only past 2^{bits} elements; the sweep's largest case has "
            f"{largest:,} elements (a sweep with such a case measures it)")


def load_argued(path: Path) -> dict[tuple[str, str, str], str]:
    """(file, original line, mutated line) -> why, from a mutants-equivalent.toml (absent: {})."""
    if not Path(path).is_file():
        return {}
    try:
        data = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    out = {}
    for i, e in enumerate(data.get("equivalent", [])):
        missing = [k for k in ("file", "line", "mutated", "why") if not str(e.get(k, "")).strip()]
        if missing:
            raise ValueError(f"{path}: [[equivalent]] #{i + 1} lacks {', '.join(missing)}")
        out[(e["file"], e["line"].strip(), e["mutated"].strip())] = e["why"].strip()
    return out


def argued(outcome: Outcome, table: dict[tuple[str, str, str], str]) -> Outcome:
    """A survivor the table argues equivalent becomes `argued-equivalent` (with the argument)."""
    m = outcome.mutant
    why = table.get((m.file, m.source_line.strip(), m.mutated_line().strip()))
    if outcome.verdict != "survived" or why is None:
        return outcome
    return replace(outcome, verdict="argued-equivalent", message=why)
