"""The result schema: a row's columns (`Row`) and the verdicts it can carry (`Verdict`).

A leaf module (imports nothing of parity) so that every layer, from the ops' judges to the
renderers, names verdicts and columns through one definition instead of literals.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any


class Verdict(str, Enum):
    """A row's verdict. A `str` so rows serialise, compare and sort as the plain names they were
    (results.json is unchanged): `Verdict.PASS == "pass"`, `json.dumps(Verdict.PASS) == '"pass"'`."""
    PASS = "pass"
    COMPILED = "compiled"                      # amd-static: compiles for the AMD targets, not executed
    FAIL = "fail"
    MISSING = "missing"                        # the suite lacks the kernel
    COMPILE_ERROR = "compile-error"
    MAPPING_GAP = "mapping-gap"                # parity's HIP->CUDA mapping lacks an identifier
    SIGNATURE_MISMATCH = "signature-mismatch"  # declared with another parameter list than the ABI's
    CRASH = "crash"
    TIMEOUT = "timeout"
    NOT_RUN = "not-run"                        # not launched: an earlier case crashed or timed out on the
                                               # same kernel and code path (engine.fault_path); failing
    OOB_WRITE = "oob-write"
    INPUT_CLOBBERED = "input-clobbered"
    UNAVAILABLE = "unavailable"                # the level cannot run it (no GPU, bench-sized on cpu)
    REFUSED = "refused"                        # the executor's host code refused the launch
    ERROR = "error"                            # a parity bug on this case
    REFERENCE_ERROR = "reference-error"        # a declared kernel's own reference raised on this case:
                                               # not judged, the declaration's to fix (file:line in the message)
    XFAIL = "xfail"                            # failing, and the baseline says so
    XPASS = "xpass"
    XPASS_STRICT = "xpass-strict"

    def __str__(self) -> str:                  # f-strings and str() give the name, as a plain str did
        return self.value

    __format__ = str.__format__


@dataclass
class Row:
    """One result row: a case on a level. `to_dict()` is the row as results.json stores it.

    The first block is the table every run has (results.COLUMNS, in that order); the rest appear
    only where they apply: `wave` on hip-on-nvidia levels, `extra` what the executor and the op's
    spec report about the launch (a compile error's source file and parameter lists, a host
    routine's route, GEMM flops), `bytes_moved` where timing has a bytes model, the timing
    columns once a passing case was timed, and the HIP/reference ratio."""
    case_id: str
    op: str
    family: str | None = None
    kernel: str | None = None
    dtype: str | None = None
    layout: str | None = None
    values: str | None = None
    seed: int | None = None
    params: dict | None = None
    level: str | None = None
    device: str | None = None
    verdict: Verdict | str = ""               # "" only while the case is running
    max_ulp: float | None = None
    n_bad: int | None = None
    numel: int | None = None
    worst: dict | None = None
    message: str = ""
    tolerance: str | None = None
    semantics: str | None = None
    divergences: list | None = None
    layouts: dict | None = None
    launch: str | None = None
    kernel_ms: float | None = None             # the executor's time, or the timed median
    wall_ms: float | None = None
    # --- where they apply
    wave: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    bytes_moved: int | None = None
    timed: bool = False                        # the timing columns below were measured
    time_p10: float | None = None
    time_p90: float | None = None
    samples: int | None = None
    time_noise: float | None = None
    time_converged: bool | None = None
    timing_mode: str | None = None
    launch_bound: bool | None = None
    launch_floor_ms: float | None = None
    timing_verified: bool | None = None
    timing_note: str | None = None
    time_source: str | None = None
    event_ms: float | None = None
    event_overhead_ms: float | None = None
    gbps: float | None = None
    peak_gbps: float | None = None
    pct_peak: float | None = None
    ratio: float | None = None                 # HIP time / reference time (engine.add_ratios)
    ratio_vs: str | None = None

    @staticmethod
    def columns() -> list[str]:
        """The columns every results table has, in order."""
        return list(_COLUMNS)

    def judged(self, fields: dict[str, Any]) -> None:
        """Set verdict fields (verdict, message, max_ulp, n_bad, worst) from a spec's judgement."""
        for k, v in fields.items():
            if k not in _VERDICT_FIELDS:
                raise KeyError(f"{k!r} is not a verdict field")
            setattr(self, k, v)

    def timing(self, fields: dict[str, Any]) -> None:
        """Set the timing columns (parity.timing.Timing.fields(): kernel_ms is the median)."""
        for k, v in fields.items():
            if k not in _TIMING and k != "kernel_ms":
                raise KeyError(f"{k!r} is not a timing column")
            setattr(self, k, v)
        self.timed = True

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in _COLUMNS}
        if self.wave:
            d["wave"] = self.wave
        d.update(self.extra)
        if self.bytes_moved is not None:
            d["bytes_moved"] = self.bytes_moved
        if self.timed:
            d.update((k, getattr(self, k)) for k in _TIMING)
        elif self.timing_note is not None:
            d["timing_note"] = self.timing_note
        if self.ratio is not None:
            d["ratio"], d["ratio_vs"] = self.ratio, self.ratio_vs
        return d


_COLUMNS = ("case_id", "op", "family", "kernel", "dtype", "layout", "values", "seed", "params", "level",
            "device", "verdict", "max_ulp", "n_bad", "numel", "worst", "message", "tolerance",
            "semantics", "divergences", "layouts", "launch", "kernel_ms", "wall_ms")
_VERDICT_FIELDS = ("verdict", "message", "max_ulp", "n_bad", "worst")
_TIMING = ("time_p10", "time_p90", "samples", "time_noise", "time_converged", "timing_mode", "launch_bound",
           "launch_floor_ms", "timing_verified", "timing_note", "time_source", "event_ms", "event_overhead_ms",
           "gbps", "peak_gbps", "pct_peak")


# ------------------------------------------------------------------ what a stored row may hold
def _kinds(annotation: str) -> tuple[frozenset[str], bool]:
    """A column's annotation ("float | None", "Verdict | str", "dict[str, Any]") as (type names, nullable)."""
    parts = [p.strip().split("[")[0] for p in str(annotation).split("|")]
    return frozenset(p for p in parts if p != "None"), "None" in parts


# every column a stored row may carry, from Row's own annotations (extra: merged into the row, not a
# column); parity.run.schema checks stored rows against what the writer produces
COLUMN_KINDS = {f.name: _kinds(f.type) for f in fields(Row) if f.name != "extra"}
