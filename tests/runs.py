"""Fixture runs with failures, fixes and slowdowns, built from the deliberately broken subjects."""
from __future__ import annotations

from parity.executors.cpu import CpuExecutor
from parity.run.cases import Filters, load_sweep
from parity.run.engine import run_cases
from parity.run.results import Results, environment

from fakes import NanDroppingMinimum, UnwrittenTail

LEVELS = [{"level": "cpu", "available": True, "reason": "", "device": "NumPy ABI emulation"},
          {"level": "hip-on-nvidia", "available": False, "reason": "CuPy sees no CUDA device", "device": ""}]
GOLDEN = {"entries": 356, "ok": 356, "bit_exact": 321, "elements": 31225, "elements_bit_exact": 31034, "failing": []}


# pinned, so the counts the tests assert do not move when the smoke sweep grows
LAYOUTS = ["contiguous", "transposed", "broadcast-leading", "narrowed", "inplace", "empty", "len1025"]


def cases(ops, dtypes=("f16", "f32")):
    return load_sweep("smoke", Filters(ops=list(ops), dtypes=list(dtypes), layouts=LAYOUTS))


def meta(**kw) -> dict:
    return {"sweep": "smoke", "hip_src": "backends/hip", "levels": LEVELS, "environment": environment(),
            "golden": GOLDEN, "elapsed_s": 1.0, "reference_only_requested": True, **kw}   # as `--levels cpu`


def timed(rows, ms=1.0, slow=(), factor=1.5):
    """Give rows synthetic kernel times; cases whose ID contains a string of `slow` are slower."""
    for r in rows:
        r["kernel_ms"] = ms * (factor if any(s in r["case_id"] for s in slow) else 1.0)
    return rows


def failing_run() -> Results:
    """binary.minimum through a NaN-dropping subject (f16 special cases fail), unary.neg passes."""
    rows = run_cases(cases(["binary.minimum"]), NanDroppingMinimum(), "fake")
    rows += run_cases(cases(["unary.neg"]), CpuExecutor(), "fake")
    return Results.from_rows(rows, meta())


def old_run() -> Results:
    """OLD: minimum broken (to be fixed), neg correct, all timed at 1 ms."""
    rows = run_cases(cases(["binary.minimum"]), NanDroppingMinimum(), "fake")
    rows += run_cases(cases(["unary.neg"]), CpuExecutor(), "fake")
    return Results.from_rows(timed(rows), meta())


def new_run() -> Results:
    """NEW: minimum fixed, neg broken by an off-by-one tail, transposed minimum cases 1.5x slower."""
    rows = run_cases(cases(["binary.minimum"]), CpuExecutor(), "fake")
    rows += run_cases(cases(["unary.neg"]), UnwrittenTail(), "fake")
    return Results.from_rows(timed(rows, slow=("minimum/f32/transposed",)), meta())
