"""One results table per run (pandas), with the run's metadata; JSON with a versioned schema."""
from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .row import Row, Verdict

SCHEMA = "parity.results/1"
COLUMNS = Row.columns()
# Verdicts that mean "the subject is wrong or broken" (exit 1); unavailable is neither pass nor fail.
# signature-mismatch: a kernel declared with a parameter list other than the ABI's; mapping-gap: parity's
# HIP->CUDA mapping lacks an identifier ROCm declares (parity's bug, but the port was not verified: exit 1).
# Their rows may carry extra columns (kept by from_rows, lists survive JSON): `source` (file of a
# compile error), `expected_params` / `found_params` (type names, e.g. ["size_t", "ptr", "f32"]).
FAILING = (Verdict.FAIL, Verdict.MISSING, Verdict.COMPILE_ERROR, Verdict.CRASH, Verdict.TIMEOUT,
           Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED, Verdict.ERROR, Verdict.XPASS_STRICT,
           Verdict.SIGNATURE_MISMATCH, Verdict.MAPPING_GAP)
ORDER = [Verdict.FAIL, Verdict.CRASH, Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED, Verdict.TIMEOUT,
         Verdict.COMPILE_ERROR, Verdict.MAPPING_GAP, Verdict.SIGNATURE_MISMATCH, Verdict.MISSING, Verdict.ERROR,
         Verdict.XPASS_STRICT, Verdict.XFAIL, Verdict.XPASS, Verdict.UNAVAILABLE, Verdict.PASS]


@dataclass
class Results:
    table: pd.DataFrame
    meta: dict = field(default_factory=dict)      # run info: sweep, filters, levels, environment, golden
    _records: list | None = field(default=None, init=False, repr=False, compare=False)
    _findings: object = field(default=None, init=False, repr=False, compare=False)   # findings.of()

    @staticmethod
    def from_rows(rows: list[dict], meta: dict | None = None) -> "Results":
        df = pd.DataFrame(rows)
        for c in COLUMNS:
            if c not in df.columns:
                df[c] = None
        return Results(df[COLUMNS + [c for c in df.columns if c not in COLUMNS]], meta or {})

    def records(self) -> list[dict]:
        """The rows as plain dicts, NaN cells as None; built once (a nightly sweep has 60,000 rows:
        DataFrame.to_dict(orient="records") takes seconds, column lists a fraction of that).
        Treat the table as frozen once this was called."""
        if self._records is None:
            cols = list(self.table.columns)
            values = []
            for c in cols:
                col = self.table[c]
                vals = col.tolist()
                if col.dtype.kind in "fO":
                    vals = [None if isinstance(v, float) and v != v else v for v in vals]
                values.append(vals)
            self._records = [dict(zip(cols, row)) for row in zip(*values)]
        return self._records

    def counts(self) -> dict[str, int]:
        vc = self.table["verdict"].value_counts()
        return {v: int(vc[v]) for v in sorted(vc.index, key=lambda v: ORDER.index(v) if v in ORDER else 99)}

    def failures(self) -> pd.DataFrame:
        return self.table[self.table["verdict"].isin(FAILING)]

    @property
    def ok(self) -> bool:
        return self.failures().empty

    def to_json(self, path: Path) -> None:
        """One row per line (compact rows: the C encoder; a nightly sweep has 60,000 of them)."""
        head = json.dumps({"schema": SCHEMA, "meta": self.meta}, indent=1, default=_json_default, allow_nan=False)
        rows = ",\n".join(row_json(r) for r in self.records())
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(head[:-2] + ',\n "results": [\n' + rows + "\n ]\n}")
        tmp.replace(path)

    @staticmethod
    def from_json(path: Path) -> "Results":
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"cannot read results {path}: {e}") from None
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise ValueError(f"{path} is not a parity results file (schema {SCHEMA!r} expected)")
        return Results.from_rows([_from_json(r) for r in doc["results"]], doc.get("meta", {}))


_NONFINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def _finite_json(o):
    """Strict JSON: non-finite floats become "inf"/"-inf"/"nan" strings, NaN cells become null."""
    if isinstance(o, dict):
        return {k: _finite_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite_json(v) for v in o]
    if isinstance(o, (float, np.floating)):
        f = float(o)
        if f != f:
            return None
        return f if np.isfinite(f) else ("inf" if f > 0 else "-inf")
    return o


def row_json(row: dict) -> str:
    """A result row as strict, compact JSON (non-finite floats as _finite_json writes them)."""
    try:                                   # most rows hold only finite numbers: no Python walk
        return json.dumps(row, default=_json_default, allow_nan=False)
    except ValueError:
        return json.dumps(_finite_json(row), default=_json_default, allow_nan=False)


def _from_json(row: dict) -> dict:
    for k in ("max_ulp",):
        if isinstance(row.get(k), str):
            row[k] = _NONFINITE[row[k]]
    w = row.get("worst")
    if isinstance(w, dict) and isinstance(w.get("ulps"), str):
        w["ulps"] = _NONFINITE[w["ulps"]]
    return row


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def environment() -> dict:
    import ml_dtypes
    env = {"parity": __version__, "python": platform.python_version(), "numpy": np.__version__,
           "ml_dtypes": ml_dtypes.__version__, "pandas": pd.__version__, "host": platform.node(),
           "platform": platform.platform(), "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:                                   # GPU name, SMs, clocks, driver, CUDA, CuPy, hip-python
        from .timing import gpu_environment
        gpu = gpu_environment()
    except Exception as e:                 # never let the environment probe break a run
        gpu = {"error": f"{type(e).__name__}: {e}"}
    for k in ("cupy", "hip_python"):
        if k in gpu:
            env[k] = gpu.pop(k)
    if gpu:
        env["gpu"] = gpu
    return env
