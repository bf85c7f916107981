"""Mutants a sweep cannot reach by construction, and mutants argued equivalent.

Out of reach: a 64 -> 32-bit index truncation changes results only past 2^32 elements (2^31 for
a signed `int`); so does any change to the code a size guard such as `if (n <= 0xffffffffull)`
runs only past that limit (its 64-bit arm), or to the guard's boundary. A sweep with no case that
large cannot catch them, whatever its other cases do. Such mutants are not sampled (the sample is
of mutants the sweep could catch); the report counts them and says what case would measure them.

`argued-equivalent`: a mutant the suite's authors argue no input can catch on a level (the hardware
does what a removed guard does, or Candle's host never makes the launch that reaches it), written
in the suite's `mutants-equivalent.toml` with the reason. It is run like any other: when it
survives it is reported with the argument and not counted; when it is killed the argument was
wrong and it counts as killed.
"""
from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import replace
from pathlib import Path

from parity.core import files, toml
from parity.core.layouts import LAYOUT_CLASSES
from parity.core.suggest import unknown
from parity.mutate.operators import Mutant, mask
from parity.mutate.run import Outcome
from parity.run.cases import Case
from parity.run.levels import ALL_LEVELS
from parity.suite.scan import balanced_end

EQUIVALENT_FILE = "mutants-equivalent.toml"


def largest_case(cases: list[Case]) -> int:
    """The most elements any case's layout class holds (structured shape classes are small)."""
    sizes = [math.prod(LAYOUT_CLASSES[c.layout].shape) for c in cases if c.layout in LAYOUT_CLASSES]
    return max(sizes, default=0)


_LIMITS = {"0xffffffff": 32, "4294967295": 32, "UINT32_MAX": 32, "0x100000000": 32, "4294967296": 32,
           "0x7fffffff": 31, "2147483647": 31, "INT_MAX": 31, "0x80000000": 31, "2147483648": 31}
_OPEN, _ELSE = re.compile(r"\s*\{"), re.compile(r"\s*else\s*\{")       # a guard's arms
# `if (n <= 0xffffffffull)`: an element count (a bare name) against a 32- or 31-bit limit
_GUARD = re.compile(r"\bif\s*\(\s*[A-Za-z_]\w*\s*(<=|<|>=|>)\s*(" + "|".join(_LIMITS) + r")[uUlL]*\s*\)")


def wide_spans(text: str) -> list[tuple[int, int, int, str]]:
    """(start, end, bits, guard) of the code that only runs, or only changes, past 2^bits elements:
    a size guard's condition (a boundary change moves the switch by one element, at the limit) and
    the arm of it that runs only above the limit (the else arm of `n <= LIMIT`, the then arm of
    `n > LIMIT`), when that arm is a braced block."""
    code = mask(text)
    out = []
    for g in _GUARD.finditer(code):
        bits, guard = _LIMITS[g.group(2)], " ".join(text[g.start():g.end()].split())
        out.append((g.start(), g.end(), bits, guard))
        then = _OPEN.match(code, g.end())
        if not then:
            continue
        then_end = balanced_end(code, then.end())
        if g.group(1) in (">", ">="):
            out.append((then.end(), then_end, bits, guard))
            continue
        other = _ELSE.match(code, then_end)
        if other:
            out.append((other.end(), balanced_end(code, other.end()), bits, guard))
    return out


def unreachable(mutant: Mutant, largest: int, spans: list[tuple[int, int, int, str]] = ()) -> str:
    """Why the sweep cannot catch `mutant` (its largest case has `largest` elements), or "";
    `spans`: `wide_spans` of the mutant's file."""
    if mutant.operator == "index-truncation":
        bits = 31 if mutant.replacement == "int" else 32
        if largest < 2 ** bits:
            return (f"a 32-bit index changes results only past 2^{bits} elements; the sweep's largest case "
                    f"has {largest:,} elements (a sweep with such a case measures it)")
    for start, end, bits, guard in spans:
        if start <= mutant.offset < end and largest < 2 ** bits - 1:
            return (f"`{guard}` or the code it runs only past 2^{bits} elements changes results only at "
                    f"that size; the sweep's largest case has {largest:,} elements (a sweep with such a "
                    f"case measures it)")
    return ""


def load_argued(path: Path, level: str | None = None) -> dict[tuple[str, str, str], str]:
    """(file, original line, mutated line) -> why, from a mutants-equivalent.toml (absent: {}); an
    entry with a `level` (a glob: an argument from PTX's conversions holds on hip-on-nvidia only)
    is left out for another `level` (None: every entry)."""
    if files.kind(path) == "nothing":
        return {}
    try:
        data = toml.loads(files.read_text(path, "equivalent-mutants file"))
    except toml.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"{path}: not an equivalent-mutants file (nested too deeply)") from None
    out = {}
    keys = ("file", "line", "mutated", "why")
    entries = data.get("equivalent", [])
    if not isinstance(entries, list):
        raise ValueError(f"{path}: `equivalent` must be a list of [[equivalent]] tables")
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not all(isinstance(e.get(k, ""), str) for k in (*keys, "level")):
            raise ValueError(f"{path}: [[equivalent]] #{i + 1} must be a table of strings (file, line, mutated, why, "
                             "level)")
        extra = [k for k in e if k not in (*keys, "level")]
        if extra:                        # (a misspelt `level` would make an argument hold everywhere)
            raise ValueError(f"{path}: [[equivalent]] #{i + 1}: {unknown('key', extra[0], [*keys, 'level'])}")
        missing = [k for k in keys if not str(e.get(k, "")).strip()]
        if missing:
            raise ValueError(f"{path}: [[equivalent]] #{i + 1} lacks {', '.join(missing)}")
        if "level" in e and not any(fnmatch.fnmatchcase(lv, e["level"]) for lv in ALL_LEVELS):
            raise ValueError(f"{path}: [[equivalent]] #{i + 1}: {unknown('level', e['level'], ALL_LEVELS)}")
        if level is None or fnmatch.fnmatchcase(level, e.get("level", "*")):
            out[(e["file"], e["line"].strip(), e["mutated"].strip())] = e["why"].strip()
    return out


def argued(outcome: Outcome, table: dict[tuple[str, str, str], str]) -> Outcome:
    """A survivor the table argues equivalent becomes `argued-equivalent` (with the argument). An
    outcome read back from a journal (--resume) is judged by the table as it is now: an argument
    added since applies, and one no longer in the table makes the mutant a survivor again."""
    m = outcome.mutant
    why = table.get((m.file, m.source_line.strip(), m.mutated_line().strip()))
    if outcome.verdict == "argued-equivalent" and why is None:
        return replace(outcome, verdict="survived", message="")
    if outcome.verdict not in ("survived", "argued-equivalent") or why is None:
        return outcome
    return replace(outcome, verdict="argued-equivalent", message=why)
