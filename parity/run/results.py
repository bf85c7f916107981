"""One results table per run (pandas), with the run's metadata; JSON with a versioned schema."""
from __future__ import annotations

import json
import platform
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from parity import __version__
from parity.core import files
from parity.core.row import Row, Verdict
from parity.run.schema import NONFINITE, clean_meta, row_problem

SCHEMA = "parity.results/1"
COLUMNS = Row.columns()
# Verdicts that mean "the subject is wrong or broken" (exit 1); unavailable is neither pass nor fail.
# signature-mismatch: a kernel declared with a parameter list other than the ABI's; mapping-gap: parity's
# HIP->CUDA mapping lacks an identifier ROCm declares (parity's bug, but the port was not verified: exit 1);
# reference-error: a declared kernel's reference raised (the declaration's to fix; not verified: exit 1).
# Their rows may carry extra columns (kept by from_rows, lists survive JSON): `source` (file of a
# compile error), `expected_params` / `found_params` (type names, e.g. ["size_t", "ptr", "f32"]).
FAILING = (Verdict.FAIL, Verdict.MISSING, Verdict.COMPILE_ERROR, Verdict.CRASH, Verdict.TIMEOUT,
           Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED, Verdict.ERROR, Verdict.XPASS_STRICT,
           Verdict.SIGNATURE_MISMATCH, Verdict.MAPPING_GAP, Verdict.NOT_RUN, Verdict.REFERENCE_ERROR,
           Verdict.REFUSED)           # (a refusal Candle's host does not make: an expected one is a pass)
ORDER = [Verdict.FAIL, Verdict.CRASH, Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED, Verdict.TIMEOUT, Verdict.NOT_RUN,
         Verdict.COMPILE_ERROR, Verdict.MAPPING_GAP, Verdict.SIGNATURE_MISMATCH, Verdict.MISSING, Verdict.REFUSED,
         Verdict.REFERENCE_ERROR, Verdict.ERROR, Verdict.XPASS_STRICT, Verdict.XFAIL, Verdict.XPASS, Verdict.UNAVAILABLE,
         Verdict.COMPILED, Verdict.PASS]


@dataclass
class Results:
    table: pd.DataFrame
    meta: dict = field(default_factory=dict)      # run info: sweep, filters, levels, environment, golden
    _records: list | None = field(default=None, init=False, repr=False, compare=False)
    _findings: object = field(default=None, init=False, repr=False, compare=False)   # findings.of()
    _outcome: object = field(default=None, init=False, repr=False, compare=False)    # outcome.of()
    notes: list[str] = field(default_factory=list, init=False, repr=False, compare=False)  # from_json's, one line each

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
        return _ordered_counts(self.table["verdict"])

    def counts_by_level(self) -> dict[str, dict[str, int]]:
        """counts() per level, levels in run order: a reference level's passes ran no kernel of the
        suite, so they are never summed with a level's that did (or with amd-static's `compiled`)."""
        out: dict[str, dict[str, int]] = {}
        for lv, g in self.table.groupby(self.table["level"].astype(str), sort=False):
            out[lv] = _ordered_counts(g["verdict"])
        return out

    def failures(self) -> pd.DataFrame:
        return self.table[self.table["verdict"].isin(FAILING)]

    @property
    def ok(self) -> bool:
        return self.failures().empty

    def to_json(self, path: Path) -> None:
        """One row per line (compact rows: the C encoder; a nightly sweep has 60,000 of them). Written
        beside `path` and renamed over it: files.FileRefused when `path` is not a regular file."""
        files.write_text(path, self.json_text(), "results file")

    def json_text(self) -> str:
        """The results.json text (non-finite numbers as "inf"/"nan" strings, as the schema reads them)."""
        try:
            head = json.dumps({"schema": SCHEMA, "meta": self.meta}, indent=1, default=_json_default, allow_nan=False)
        except ValueError:                     # a non-finite number (a sum of huge times): as rows write them
            head = json.dumps({"schema": SCHEMA, "meta": _finite_json(self.meta)}, indent=1, default=_json_default,
                              allow_nan=False)
        rows = ",\n".join(row_json(r) for r in self.records())
        return head[:-2] + ',\n "results": [\n' + rows + "\n ]\n}"

    @staticmethod
    def from_json(path: Path) -> "Results":
        """Read a results.json (or a run folder's); ValueError with one line naming the file for
        anything that is not one: not a regular file, unreadable, not UTF-8, not JSON (or nested
        too deeply to be one), no `results` list, `meta` not an object, or rows none of which is a
        result row. A row that is not one (`schema.row_problem`: a field of a type parity never
        writes there), or that repeats an earlier row's case and level (parity writes one), is
        skipped, never a row; a meta field of the wrong type is dropped. `notes` says what was (one
        line per file), meta `unread_rows` how many skipped rows had failed."""
        path = results_path(path)
        doc = _read_doc(path)
        rows = doc.get("results")
        if not isinstance(rows, list):
            raise ValueError(f"{path}: no `results` list (a {SCHEMA} file has one row object per case and level)")
        meta = doc.get("meta", {})
        if not isinstance(meta, dict):
            raise ValueError(f"{path}: `meta` is {type(meta).__name__}, not an object")
        meta, notes = clean_meta(meta)
        out, bad = [], []
        first: dict[tuple, int] = {}                 # (case ID, level) -> its row number
        ran = {lv["level"]: lv["available"] for lv in meta.get("levels", [])}
        for i, r in enumerate(rows):
            why = row_problem(r) or _level_problem(r, ran)
            if not why:
                key = (r["case_id"], r.get("level"))
                j = first.setdefault(key, i + 1)
                why = f"repeat of row {j} ({key[0]} @{key[1]})" if j != i + 1 else ""
            if why:
                bad.append((i + 1, why, r))
            else:
                out.append(_from_json(r))
        if bad and not out:
            i, why, _ = bad[0]
            raise ValueError(f"{path}: row {i}: {why}" + (f" (none of its {len(bad):,} rows is a result row)"
                                                          if len(bad) > 1 else ""))
        if bad:
            meta["unread_rows"] = [*meta.get("unread_rows", []), _unread(path, bad)]
            notes.insert(0, _skipped_line(bad, len(rows)))
        res = Results.from_rows(out, meta)
        res.notes = [f"{path}: {n}" for n in notes]
        return res


def _level_problem(row: dict, ran: dict[str, bool]) -> str:
    """Why a row contradicts its file's meta (empty when it does not): a verdict on a level the meta
    lists as unavailable, or on one it does not list (a file that lists none is not checked)."""
    level = row["level"]
    if not ran or row["verdict"] == Verdict.UNAVAILABLE:
        return ""
    if level not in ran:
        return f"level {level} is not among the levels its meta lists ({', '.join(ran)})"
    return "" if ran[level] else f"level {level} did not run (its meta: unavailable), yet this row has a verdict"


def _unread(path: Path, bad: list[tuple[int, str, object]]) -> dict:
    """meta `unread_rows`' entry for the rows of `path` that were skipped: how many, how many of them
    carried a failing verdict (those the reports must not forget), the first one."""
    failing = sum(isinstance(r, dict) and r.get("verdict") in FAILING for _, _, r in bad)
    return {"file": str(path), "count": len(bad), "failing": failing, "first": f"row {bad[0][0]}: {bad[0][1]}"}


def _skipped_line(bad: list[tuple[int, str, object]], total: int) -> str:
    """`skipped 3 of 906 rows (level ×2, dtype ×1), 1 of them failing; first: row 4: level is 5.0, ...`"""
    why: dict[str, int] = {}
    for _, w, _ in bad:
        key = w.split(" ", 1)[0].split(".", 1)[0].split("[", 1)[0]
        why[key] = why.get(key, 0) + 1
    failing = _unread(Path(), bad)["failing"]
    return (f"skipped {len(bad):,} of {total:,} rows that are not result rows ("
            + ", ".join(f"{k} ×{n:,}" for k, n in why.items()) + ")"
            + (f", {failing:,} of them with a failing verdict" if failing else "")
            + f"; first: row {bad[0][0]}: {bad[0][1]}")


def results_path(path: str | Path) -> Path:
    """A results file, or a run folder standing for its results.json."""
    path = Path(path)
    return path / "results.json" if path.is_dir() else path


JOURNAL = "results.partial.jsonl"   # a run folder's rows as they come (parity.run.journal), before results.json


def _read_doc(path: Path) -> dict:
    """The parsed results document; ValueError (one line, naming the file) when it is not one."""
    try:
        text = files.read_bytes(path, "results file", files.RESULTS_LIMIT).decode("utf-8")
    except OSError as e:
        runs = sorted(str(p.parent) for p in path.parent.glob("*/results.json")) if path.name == "results.json" else []
        hint = f" (a folder of runs: name one, e.g. {runs[-1]}, or several)" if runs else ""
        if path.name == "results.json" and (path.parent / JOURNAL).is_file():
            hint = (f" (a run that has not finished: it is still running, or it stopped before its reports; "
                    f"`parity run --resume {shlex.quote(str(path.parent))}` finishes it)")
        raise ValueError(f"cannot read results {path}: {e.strerror or e}{hint}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not a parity results file: byte 0x{e.object[e.start]:02x} at offset "
                         f"{e.start} is not UTF-8") from None
    except MemoryError:
        raise ValueError(f"{path} is not a parity results file: too large to read into memory") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not a parity results file: {e}") from None
    except RecursionError:
        raise ValueError(f"{path} is not a parity results file: JSON nested too deeply") from None
    except MemoryError:
        raise ValueError(f"{path} is not a parity results file: too large to read into memory") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a parity results file (schema {SCHEMA!r} expected)")
    return _without_lone_surrogates(doc) if _SURROGATE_ESCAPE.search(text) else doc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")   # a \uD800-\uDFFF escape: half of a pair, or alone
_LONE = re.compile("[\ud800-\udfff]")                  # what json.loads leaves of one alone


def _without_lone_surrogates(doc):
    """`doc` with each lone surrogate (a JSON escape no UTF-8 writer can encode) as U+FFFD: a file
    that has one is read as its other text says, not refused by every report at its first write."""
    fix = lambda v: _LONE.sub("\ufffd", v) if isinstance(v, str) else v
    todo = [doc]
    while todo:                                       # iterative: nesting is bounded by json.loads only
        x = todo.pop()
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in list(items):
            if isinstance(v, (dict, list)):
                todo.append(v)
            elif isinstance(v, str) and _LONE.search(v):
                x[k] = fix(v)
        if isinstance(x, dict) and any(isinstance(k, str) and _LONE.search(k) for k in x):
            for k in [k for k in x if _LONE.search(k)]:
                x[fix(k)] = x.pop(k)
    return doc


def read_meta(path: str | Path) -> dict:
    """Only the meta of a results file (ValueError as from_json)."""
    meta = _read_doc(results_path(path)).get("meta", {})
    return meta if isinstance(meta, dict) else {}


def newest(paths: list[Path]) -> tuple[Path, str | None]:
    """The results file of the run that started last (meta.environment.started, else the file's
    mtime), and a note saying which one was chosen when there were several; ValueError as from_json."""
    files = [results_path(p) for p in paths]
    if len(files) == 1:
        return files[0], None

    def started(p: Path) -> datetime:
        env = read_meta(p).get("environment")
        text = env.get("started") if isinstance(env, dict) else None
        try:
            t = datetime.fromisoformat(str(text))
            return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
        except ValueError:
            return datetime.fromtimestamp(p.stat().st_mtime, timezone.utc)
    when = {p: started(p) for p in files}
    best = max(files, key=lambda p: when[p])
    return best, (f"{len(files)} results files given; using the newest run, {best} "
                  f"(started {when[best].isoformat(timespec='seconds')})")


_NONFINITE = {k: float(k) for k in NONFINITE}


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
    for k in ("max_ulp",):                  # ("inf", "-inf", "nan" as row_json wrote them; checked by row_problem)
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
        from parity.timing import gpu_environment
        gpu = gpu_environment()
    except Exception as e:                 # never let the environment probe break a run
        gpu = {"error": f"{type(e).__name__}: {e}"}
    for k in ("cupy", "hip_python"):
        if k in gpu:
            env[k] = gpu.pop(k)
    if gpu:
        env["gpu"] = gpu
    return env


def _ordered_counts(verdicts: pd.Series) -> dict[str, int]:
    """Verdict -> rows, worst-to-best in ORDER (verdicts it does not know last)."""
    vc = verdicts.value_counts()
    return {v: int(vc[v]) for v in sorted(vc.index, key=lambda v: ORDER.index(v) if v in ORDER else 99)}


def not_launched(t: pd.DataFrame) -> pd.Series:
    """Rows of cases the host refuses before any launch (engine: `not_launched`): they pass, and no
    kernel of the suite ran for them. False where the column is absent or empty."""
    if "not_launched" not in t:
        return pd.Series(False, index=t.index)
    return t["not_launched"].map(lambda x: isinstance(x, (bool, np.bool_)) and bool(x)).astype(bool)
