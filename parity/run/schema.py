"""What a results.json holds, field by field, as parity's writer produces it (`Row.to_dict`, the
engine's extra columns, `parity run`'s meta): the one check of a file read back.

A row is a result only if every field it has holds the JSON type the writer gives it
(`row_problem`); a meta field of the wrong type is dropped, its reader falls back to its default
(`clean_meta`). Containers are checked inside (a level entry, the worst element, a chain step)
down to what the reports read, and no value nests deeper than `MAX_DEPTH`.
"""
from __future__ import annotations

import math
import re
import reprlib
from typing import Any, Callable

from parity.core.row import Verdict
from parity.core.suggest import unknown

MAX_DEPTH = 24                     # the deepest value the writer produces nests 4 levels
NONFINITE = ("inf", "-inf", "nan")  # how results.json writes a non-finite float
VERDICTS = [v.value for v in Verdict]

# A check: None when the value fits, else (where inside the value, the value found there, what fits).
Problem = tuple[str, Any, str]
Check = Callable[[Any, int], "Problem | None"]


# ------------------------------------------------------------------------------ the checks
def _kind(test: Callable[[Any], bool], expected: str) -> Check:
    def check(v, depth: int) -> Problem | None:
        return None if test(v) else ("", v, expected)
    return check


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v) -> bool:
    """A number a float holds (JSON's integers have no bound: 1e400 written out in digits is none)."""
    if not _is_num(v):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


STR = _kind(lambda v: isinstance(v, str), "a string")
NUM = _kind(_finite, "a number")
# The names a row is filed and shown under (op, kernel, dtype, layout, level, an input's name): what the
# catalog, a declaration (C identifiers) and the levels make, one line with no markdown, HTML or
# control character, so that a results file written by hand cannot put a heading or an image into
# the summary.md of `parity report` (a PR comment) through them.
_NAME = re.compile(r"[\w.\-+/:@=,()]*\Z")   # \w as a declaration's names take it (any script's letters)
NAME = _kind(lambda v: isinstance(v, str) and _NAME.match(v) is not None,
             "a name (letters, digits and _ . - + / : @ = , ( ) only)")
INT = _kind(lambda v: _finite(v) and float(v).is_integer(), "a whole number")
BOOL = _kind(lambda v: isinstance(v, bool), "true or false")
ULPS = _kind(lambda v: _finite(v) or v in NONFINITE, 'a number (or "inf", "-inf", "nan")')
SCALAR = _kind(lambda v: v is None or isinstance(v, (str, int, float, bool)), "a string, number, true/false or null")


def opt(check: Check) -> Check:
    """`check`, or null."""
    def optional(v, depth: int) -> Problem | None:
        if v is None:
            return None
        p = check(v, depth)
        return p if p is None or p[0] else ("", v, p[2] + " or null")
    return optional


def any_of(*checks: Check) -> Check:
    def either(v, depth: int) -> Problem | None:
        found = [c(v, depth) for c in checks]
        if any(p is None for p in found):
            return None
        return ("", v, " or ".join(p[2] for p in found))
    return either


def list_of(item: Check, what: str = "") -> Check:
    def check(v, depth: int) -> Problem | None:
        if not isinstance(v, list):
            return ("", v, what or "a list")
        if depth >= MAX_DEPTH:
            return ("", v, f"a value nested at most {MAX_DEPTH} deep")
        for i, x in enumerate(v):
            p = item(x, depth + 1)
            if p is not None:
                return (f"[{i}]{p[0]}", p[1], p[2])
        return None
    return check


def obj(fields: dict[str, Check] | None = None, rest: Check | None = None, what: str = "an object",
        required: tuple[str, ...] = (), names: Check | None = None) -> Check:
    """An object whose `fields` hold their checks (those in `required` must be there: the reports
    read them without a default), whose other keys hold `rest` (default: any JSON value) and, where
    `names` is given, are such names."""
    fields = fields or {}
    if required:
        what = f"{what} with {', '.join(required)}"

    def check(v, depth: int) -> Problem | None:
        if not isinstance(v, dict) or any(k not in v for k in required):
            return ("", v, what)
        if depth >= MAX_DEPTH:
            return ("", v, f"a value nested at most {MAX_DEPTH} deep")
        for k, x in v.items():
            p = fields.get(k, rest or ANY)(x, depth + 1)
            bad = names(k, depth + 1) if p is None and names is not None and k not in fields else None
            if bad is not None:
                return ("", k, f"a key that is {bad[2]}")
            if p is not None:
                return (f".{k}{p[0]}", p[1], p[2])
        return None
    return check


def ANY(v, depth: int) -> Problem | None:                       # noqa: N802  (a check, like STR)
    """Any JSON value nested at most MAX_DEPTH deep (iterative: a deep value is no recursion)."""
    todo = [(v, depth)]
    while todo:
        x, d = todo.pop()
        if isinstance(x, (dict, list)):
            if d >= MAX_DEPTH:
                return ("", v, f"a value nested at most {MAX_DEPTH} deep")
            todo += [(y, d + 1) for y in (x.values() if isinstance(x, dict) else x)]
    return None


VERDICT = _kind(lambda v: isinstance(v, str) and v in VERDICTS, "a verdict parity knows")
OSTR, ONUM, OINT, OBOOL = opt(STR), opt(NUM), opt(INT), opt(BOOL)
STRS = list_of(STR, "a list of strings")

# ------------------------------------------------------------------------------ rows
WORST = obj({"index": OINT, "coords": opt(list_of(INT, "a list of whole numbers")), "expected": SCALAR,
             "got": SCALAR, "expected_bits": SCALAR, "got_bits": SCALAR, "ulps": opt(ULPS),
             "inputs": opt(obj(rest=SCALAR, names=NAME)), "note": OSTR, "exact": SCALAR, "ulps_from_exact": ONUM,
             "cuda_ulps_from_exact": ONUM, "kind": OSTR})
STEP = obj({"step": OINT, "op": OSTR, "dtype": OSTR, "out": OSTR, "own": OSTR, "solo": OSTR,
            "bias_own": ONUM, "bias_solo": ONUM, "drift": ONUM, "budget": ONUM})
CHAIN = obj({"steps": opt(list_of(STEP, "a list of step objects")), "culprit": OINT})

ROW: dict[str, Check] = {
    "op": NAME, "family": opt(NAME), "kernel": opt(NAME), "dtype": opt(NAME), "layout": opt(NAME),
    "values": opt(NAME), "seed": OINT, "params": opt(obj(rest=SCALAR, names=NAME)), "level": NAME, "device": OSTR,
    "max_ulp": opt(ULPS), "n_bad": OINT,
    "numel": OINT, "worst": opt(WORST), "message": OSTR, "tolerance": OSTR, "semantics": OSTR,
    "divergences": opt(STRS), "layouts": opt(obj(rest=SCALAR)), "launch": OSTR, "kernel_ms": ONUM,
    "wall_ms": ONUM,
    # where they apply (Row.to_dict), the executor's and the spec's extra columns, a baseline's
    "wave": OINT, "bytes_moved": ONUM, "timed": OBOOL, "time_p10": ONUM, "time_p90": ONUM, "samples": OINT,
    "time_noise": ONUM, "time_converged": OBOOL, "timing_mode": OSTR, "launch_bound": OBOOL,
    "launch_floor_ms": ONUM, "timing_verified": OBOOL, "timing_note": OSTR, "time_source": OSTR,
    "event_ms": ONUM, "event_overhead_ms": ONUM, "gbps": ONUM, "peak_gbps": ONUM, "pct_peak": ONUM,
    "ratio": ONUM, "ratio_vs": OSTR, "source": OSTR, "expected_params": opt(any_of(STR, STRS)),
    "found_params": opt(any_of(STR, STRS)), "mapping_gap": OSTR, "chain": opt(CHAIN),
    "raw_verdict": opt(VERDICT), "baseline_reason": OSTR, "not_launched": OBOOL,
}


def row_problem(row) -> str | None:
    """Why `row` cannot be a result row (None when it can): an object with a non-empty str case_id,
    a verdict parity knows, and every other field of the JSON type parity writes there."""
    if not isinstance(row, dict):
        return f"not an object ({type(row).__name__})"
    if not isinstance(row.get("case_id"), str) or not row["case_id"]:
        return f"case_id {_shown(row.get('case_id'))} is not a case ID"
    v = row.get("verdict")
    if not isinstance(v, str) or v not in VERDICTS:
        return unknown("verdict", v, VERDICTS) if isinstance(v, str) else f"verdict {_shown(v)} is not a verdict"
    if isinstance(row.get("max_ulp"), str) and row["max_ulp"] not in NONFINITE:
        return f"max_ulp {_shown(row['max_ulp'])} is not a number"
    for k in ("op", "level"):                  # every row the engine writes has both (engine.run_case)
        if not isinstance(row.get(k), str) or not row[k]:
            return f"{k} {_shown(row.get(k))} is not {'an op' if k == 'op' else 'a level'} name"
    for k, x in row.items():
        p = ROW.get(k, ANY)(x, 1)
        if p is not None:
            return _said(k, p)
    return None


# ------------------------------------------------------------------------------ meta
LEVEL = obj({"level": STR, "available": BOOL, "reason": OSTR, "device": OSTR, "role": OSTR},
            what="a level object", required=("level", "available"))
CONFLICT = obj({"case_id": STR, "level": OSTR, "verdicts": obj(rest=STR), "kept": STR},
               required=("case_id", "level", "verdicts", "kept"))
META: dict[str, Check] = {
    "kind": STR, "sweep": STR, "filters": obj(rest=STRS), "hip_src": OSTR, "cuda_src": OSTR,
    "environment": obj({"started": OSTR}), "levels": list_of(LEVEL, "a list of level objects"),
    "levels_requested": OSTR, "reference_only_requested": BOOL,
    "profile": obj({"name": STR, "title": OSTR, "source": OSTR, "how": OSTR, "ops": OINT, "kernels": OINT,
                    "notes": opt(STRS)}),
    "planned_rows": INT, "golden": obj({k: INT for k in ("entries", "ok", "bit_exact", "elements",
                                                         "elements_bit_exact")} | {"failing": STRS},
                                       required=("entries", "ok", "bit_exact")),
    "port": obj({"description": STR, "notes": opt(STRS)}, required=("description",)), "amd_targets": STRS,
    "compile_s": NUM,
    "elapsed_s": NUM, "resumed_rows": INT, "interrupted": BOOL, "timing": obj({"mode": STR}), "shard": OSTR,
    "gpus": OSTR, "every_fault": BOOL, "empty_shard_of": INT,
    "wave_evidence": list_of(obj({"kernel": STR, "cases": STRS, "verdicts64": STRS, "wave32": STR,
                                  "suspect": BOOL, "static": STRS})),
    "static_notes": obj(rest=STRS), "wave32_recheck": obj({"cases": INT, "failing": INT}),
    "baseline": obj({"path": OSTR, "entries": INT, "strict": BOOL, "xfail": INT, "xpass": INT, "unused": STRS,
                     "stated_by_ops": STRS}, required=("path", "entries", "strict", "xfail", "xpass", "unused")),
    "merged_from": STRS, "shards": list_of(OSTR), "shards_missing": STRS,
    "merge_conflicts": obj({"count": INT, "rule": STR, "first": list_of(CONFLICT)}, required=("count", "first")),
    "unread_rows": list_of(obj({"file": STR, "count": INT, "failing": INT, "first": STR},
                               required=("file", "count", "failing", "first"))),
}


def clean_meta(meta: dict) -> tuple[dict, list[str]]:
    """`meta` without the fields that do not hold what parity writes there (each reader then falls
    back to its default: no levels listed, no golden summary, ...), and one note per field dropped."""
    out, notes = {}, []
    for k, v in meta.items():
        p = META.get(k, ANY)(v, 1)
        if p is None:
            out[k] = v
        else:
            notes.append(f"meta {_said(k, p)}: ignored")
    return out, notes


# ------------------------------------------------------------------------------ messages
def _said(field: str, p: Problem) -> str:
    where, value, expected = p
    if expected.startswith("a value nested"):
        return f"{field}{where} nests deeper than {MAX_DEPTH} levels"
    return f"{field}{where} is {_shown(value)}, not {expected}"


def _shown(value) -> str:
    """A value as a message shows it: short, one line, never walking deep into it."""
    text = _REPR.repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 2, 40, 40, 4, 3
