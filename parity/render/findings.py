"""Root causes of a run: a parity score per level × family, then findings grouped by cause.

Pure: a results table (and the run's level metadata) in, dataclasses out. Every report format
(markdown, terminal, HTML, GitHub annotations) leads with these, so a port with 7,000 failing
cases reads as its handful of causes. Grouping is done with pandas groupby on the failing rows
only: 60,000 rows take a fraction of a second.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

import pandas as pd

from parity.core.layouts import LAYOUT_CLASSES, code_path
from parity.core.row import Verdict
from parity.core.text import md_code, md_text
from parity.run.levels import COMPILES, role
from parity.run.results import FAILING, Results, not_launched

OK = (Verdict.PASS, Verdict.COMPILED, Verdict.XPASS, Verdict.XPASS_STRICT)   # amd-static: compiled is its pass
# (a baselined failure, xfail, is not at parity: accepted is not passed, and its kernel is not at parity)
# Causes worst first: build-level causes hide everything after them, then parity's own gap (the
# port was not verified), memory safety, wrong values, absent kernels, parity's internal errors,
# baseline drift. Ties: more kernels, then more cases, first.
SEVERITY = [Verdict.COMPILE_ERROR, Verdict.MAPPING_GAP, Verdict.SIGNATURE_MISMATCH, Verdict.CRASH, Verdict.OOB_WRITE,
            Verdict.INPUT_CLOBBERED, Verdict.TIMEOUT, Verdict.FAIL, Verdict.MISSING, Verdict.REFERENCE_ERROR,
            Verdict.ERROR, Verdict.XPASS_STRICT, Verdict.XPASS]
CRASHLIKE = (Verdict.CRASH, Verdict.TIMEOUT, Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED)
_VERB = {Verdict.CRASH: "crash", Verdict.TIMEOUT: "time out", Verdict.OOB_WRITE: "write out of bounds",
         Verdict.INPUT_CLOBBERED: "overwrite an input"}
_VERB1 = {Verdict.CRASH: "crashes", Verdict.TIMEOUT: "times out", Verdict.OOB_WRITE: "writes out of bounds",
          Verdict.INPUT_CLOBBERED: "overwrites an input"}
# short human names of layout classes; others fall back to LAYOUT_CLASSES' doc
_LAYOUT_NAMES = {"inplace": "in-place (null input)", "inplace-strided": "in-place (null input), strided info",
                 "empty": "empty tensor", "huge": "huge (> 2^31 elements)",
                 "rank0": "rank-0 tensor", "contiguous": "contiguous", "transposed": "transposed (t() view)",
                 "scalar": "expanded scalar", "unit-dims": "size-1 dims with odd strides"}
NAMES_SHOWN = 6
TITLE_MAX = 200
DETAIL_MAX = 300


@dataclass(frozen=True)
class ScoreRow:
    """One level × family: kernels with every counted case pass (xfail: accepted, not at parity), and the
    case counts."""
    level: str
    family: str                       # "all" for the level's total
    kernels_ok: int
    kernels: int
    cases_ok: int
    cases: int
    cases_failing: int

    @property
    def score(self) -> float:
        return self.kernels_ok / self.kernels if self.kernels else 1.0


@dataclass(frozen=True)
class Finding:
    cause: str                        # a verdict: compile-error, mapping-gap, missing, crash, fail, ...
    title: str                        # one line, no kernel names (see kernel_list)
    detail: str                       # one line: first compiler error, expected vs found, worst element, ...
    kernels: tuple[str, ...]          # every kernel affected, in run order
    cases: int
    example: str                      # one worst example case id
    example_level: str
    levels: tuple[str, ...]
    blame: str = "port"               # "parity" for mapping gaps and internal errors, "declaration" where a
                                      # declared kernel's own reference raised
    key: tuple = field(default=(), compare=False)

    @property
    def n_kernels(self) -> int:
        return len(self.kernels)

    def kernel_list(self, shown: int = NAMES_SHOWN) -> str:
        ks = list(self.kernels)
        return ", ".join(ks) if len(ks) <= shown else ", ".join(ks[:shown]) + f", …, {len(ks) - shown} more"

    @property
    def repro(self) -> str:
        return f"parity repro {self.example} --level {self.example_level}"


@dataclass(frozen=True)
class Findings:
    scoreboard: list[ScoreRow]
    findings: list[Finding]
    failing_cases: int
    total_cases: int


# What a finding says of the port, in the headline's words (parity.render.outcome), so the headline's
# cause counts and the Findings heading count the same findings: its kernels do not compile, are wrong,
# are not verified (parity's gap or the declaration's reference: not the port's), are not ported
# (missing from the sources), or a baselined failure now passes. Listed in the headline's order.
KINDS = {"compile": "compile-error", "wrong": "wrong", "unverified": "not verified", "missing": "not ported",
         "baseline": "baseline"}


def kind(f: Finding) -> str:
    """The key of KINDS a finding counts under."""
    if f.blame != "port":
        return "unverified"
    if f.cause == Verdict.COMPILE_ERROR:
        return "compile"
    if f.cause == Verdict.MISSING:
        return "missing"
    if f.cause in (Verdict.XPASS, Verdict.XPASS_STRICT):   # the baseline's (stale entries), not the port's
        return "baseline"
    return "wrong"


def tally(found: list[Finding]) -> dict[str, int]:
    """Findings per kind (every key of KINDS, 0 where none)."""
    out = dict.fromkeys(KINDS, 0)
    for f in found:
        out[kind(f)] += 1
    return out


def count_text(found: list[Finding]) -> str:
    """'68 causes (4 wrong, 64 not ported)': the Findings heading's count, split by kind where more than
    one kind is present (the headline gives the same numbers beside its kernels)."""
    n = tally(found)
    parts = [f"{c:,} {KINDS[k]}" for k, c in n.items() if c]
    return _plural(len(found), "cause") + (f" ({', '.join(parts)})" if len(parts) > 1 else "")


def layout_name(layout: str) -> str:
    """A layout class as a reader says it ("in-place (null input)", "len1025 (1025 elements: ...)")."""
    if layout in _LAYOUT_NAMES:
        return _LAYOUT_NAMES[layout]
    c = LAYOUT_CLASSES.get(layout)
    doc = re.split(r"[:;]", c.doc)[0].strip() if c is not None and c.doc else ""
    return f"{layout} ({doc})" if doc else str(layout)


def worst_text(w: dict | None, message: str = "") -> str:
    """The worst element as one line (coords, inputs, expected, got, ULPs), else the message's first line."""
    if isinstance(w, dict) and w:             # (text from a results file: markdown-inert, as every field)
        ins = ", ".join(f"{md_text(k)}={md_text(v)}" for k, v in (w.get("inputs") or {}).items())
        ulp = w.get("ulps")
        u = "" if ulp is None else f", {ulp:g} ulp" if ulp == ulp and ulp != float("inf") else ", inf ulp"
        note = f" ({md_text(w['note'])})" if w.get("note") else ""
        exact = f", exact {md_code(w['exact'])}" if w.get("exact") is not None else ""
        return (f"at {tuple(w.get('coords') or [])}{': ' + ins if ins else ''} → "
                f"expected {md_code(w.get('expected'))} got {md_code(w.get('got'))}{exact}{u}{note}")
    return md_code(first_line(message))


def first_line(s, n: int = 300) -> str:
    s = "" if s is None or (isinstance(s, float) and math.isnan(s)) else str(s)
    return s.strip().splitlines()[0][:n] if s.strip() else ""


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


@functools.lru_cache(maxsize=4096)
def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def of(res: Results) -> Findings:
    """analyze() of a run, computed once per Results: every report format leads with it (treat the
    table as frozen once this was called, as for Results.records)."""
    if res._findings is None:
        res._findings = analyze(res.table, res.meta.get("levels"))
    return res._findings


def analyze(table: pd.DataFrame, levels: list[dict] | None = None) -> Findings:
    """Scoreboard and findings of a results table; `levels` is meta["levels"] (unavailable ones skipped)."""
    t = _prepared(table, levels)
    failing = t[t["verdict"].isin(FAILING) | t["verdict"].isin(SEVERITY)]
    found: list[Finding] = []
    for cause, g in failing.groupby("verdict", sort=False):
        builder = _BUILDERS.get(str(cause), _generic)
        found += builder(g, t) if builder in _WITH_TABLE else builder(g)    # crash-like: needs every layout run
    rank = {c: i for i, c in enumerate(SEVERITY)}
    # worst cause first; among missing kernels, whole families not started first; stable: run order
    found.sort(key=lambda f: (rank.get(f.cause, len(SEVERITY)), f.key[:1] != ("family",), -len(f.kernels), -f.cases))
    return Findings(_scoreboard(t, levels), found, int(t["verdict"].isin(FAILING).sum()), len(t))


def _prepared(table: pd.DataFrame, levels: list[dict] | None) -> pd.DataFrame:
    """The counted rows with string kernel/family (missing ones derived from the op)."""
    cols = [c for c in ("case_id", "op", "family", "kernel", "dtype", "layout", "values", "level", "verdict",
                        "max_ulp", "worst", "message", "source", "expected_params", "found_params", "mapping_gap",
                        "not_launched")
            if c in table.columns]
    t = table[cols].copy()
    for c in ("family", "kernel", "dtype", "layout", "values", "level", "message", "op", "case_id"):
        if c not in t.columns:
            t[c] = ""
    t["op"] = t["op"].fillna("?").astype(str)
    if t["family"].isna().any():                     # rows built before the op was known (internal errors)
        t.loc[t["family"].isna(), "family"] = t.loc[t["family"].isna(), "op"].str.split(".").str[0]
    t["family"] = t["family"].astype(str)
    t["kernel"] = t["kernel"].fillna(t["op"]).astype(str)
    for c in ("dtype", "layout", "values", "level", "case_id"):
        t[c] = t[c].fillna("").astype(str)
    t["message"] = t["message"].fillna("").astype(str)
    down = {lv["level"] for lv in (levels or []) if not lv.get("available", True)}
    keep = (t["verdict"] != Verdict.UNAVAILABLE) & ~t["level"].isin(down)
    keep &= ~not_launched(t)                     # a host refusal ran no kernel: no kernel "run" or "at parity"
    return t[keep]


def _scoreboard(t: pd.DataFrame, levels: list[dict] | None) -> list[ScoreRow]:
    if t.empty:
        return []
    ok = t["verdict"].isin(OK)
    bad = t["verdict"].isin(FAILING) & (t["verdict"] != Verdict.XPASS_STRICT)
    frame = pd.DataFrame({"level": t["level"], "family": t["family"], "kernel": t["kernel"], "ok": ok, "bad": bad})
    per_kernel = frame.groupby(["level", "family", "kernel"], sort=False)["ok"].all().rename("k_ok").reset_index()
    kern = per_kernel.groupby(["level", "family"], sort=False)["k_ok"].agg(["sum", "size"])
    cases = frame.groupby(["level", "family"], sort=False)[["ok", "bad"]].agg(["sum", "size"])
    order = [lv["level"] for lv in levels or []]
    lv_rank = {l: i for i, l in enumerate(order)}
    out = []
    for (lv, fam) in sorted(kern.index, key=lambda k: (lv_rank.get(k[0], len(order)), str(k[0]), str(k[1]))):
        out.append(ScoreRow(str(lv), str(fam), int(kern.loc[(lv, fam), "sum"]), int(kern.loc[(lv, fam), "size"]),
                            int(cases.loc[(lv, fam), ("ok", "sum")]), int(cases.loc[(lv, fam), ("ok", "size")]),
                            int(cases.loc[(lv, fam), ("bad", "sum")])))
    totals = []
    for lv in dict.fromkeys(r.level for r in out):
        rs = [r for r in out if r.level == lv]
        totals.append(ScoreRow(lv, "all", *(sum(getattr(r, a) for r in rs)
                                            for a in ("kernels_ok", "kernels", "cases_ok", "cases", "cases_failing"))))
    return out + totals


# ------------------------------------------------------------------------------ per cause
def _collect(g: pd.DataFrame, keys: list[str], col: str) -> dict[tuple, list]:
    """key -> the distinct values of `col` in run order (drop_duplicates, then one pass over those)."""
    d = g.drop_duplicates(keys + [col])
    out: dict[tuple, list] = {}
    for k, v in zip(zip(*(d[c].tolist() for c in keys)), d[col].tolist()):
        seen = out.get(k)
        if seen is None:
            out[k] = [v]
        else:
            seen.append(v)
    return out


def _groups(g: pd.DataFrame, keys: list[str], example: pd.DataFrame | None = None) -> list[tuple[tuple, dict]]:
    """Per group (in run order): its key and a dict of cases, kernels, levels and the example row's
    case_id, level, message, worst (the group's first row unless `example` has one row per key)."""
    ex = g.drop_duplicates(keys) if example is None else example
    cols = [c for c in ("case_id", "level", "message", "worst") if c in ex.columns]
    first = dict(zip(zip(*(ex[c].tolist() for c in keys)), zip(*(ex[c].tolist() for c in cols))))
    size = g.groupby(keys, sort=False).size()
    kernels = _collect(g, keys, "kernel")
    one = g["level"].iloc[0] if g["level"].nunique() == 1 else None       # the usual run: one GPU level
    levels = None if one is not None else _collect(g, keys, "level")
    out = []
    for k, n in zip(size.index.tolist(), size.tolist()):
        k = k if isinstance(k, tuple) else (k,)
        lvs = (one,) if levels is None else tuple(levels[k])
        out.append((k, {"cases": int(n), "kernels": tuple(kernels[k]), "levels": lvs,
                        **dict(zip(cols, first[k]))}))
    return out


def _make(cause: str, info: dict, title: str, detail: str, blame: str = "port", key: tuple = ()) -> Finding:
    return Finding(cause, _cut(title, TITLE_MAX), _cut(detail, DETAIL_MAX), info["kernels"], info["cases"],
                   str(info["case_id"]), str(info["level"]), info["levels"], blame, key)


def _counts(info: dict) -> str:
    return f"{_plural(len(info['kernels']), 'kernel')}, {_plural(info['cases'], 'case')}"


def _compile_error(g: pd.DataFrame) -> list[Finding]:
    src = g["source"] if "source" in g.columns else pd.Series(None, index=g.index, dtype=object)
    # "path: compiler output" when the row has no source column
    src = src.where(src.notna(), g["message"].str.extract(r"^(\S+?\.(?:hip|cu|cuh|h|hpp|cpp)):", expand=False))
    g = g.assign(_src=src.fillna("(unknown source)").astype(str))
    return [_make(Verdict.COMPILE_ERROR, info, f"{md_code(s)} does not compile: {_counts(info)}",
                  _first_error(info["message"], s),
                  key=(s,)) for (s,), info in _groups(g, ["_src"])]


def _first_error(message: str, source: str) -> str:
    """The compiler's first error line (file:line: error ...), without the leading "source: "."""
    msg = message[len(source) + 2:] if message.startswith(source + ": ") else message
    for line in msg.splitlines():
        if "error" in line.lower():
            return line.strip()
    return first_line(msg)


_GAP = re.compile(r"mapping-gap:\s*`?([A-Za-z_][\w:]*)")


def _mapping_gap(g: pd.DataFrame) -> list[Finding]:
    """Rows carry the identifier in `mapping_gap` (the preflight's detail) or in the message
    ("mapping-gap: IDENT (...) — file:line: error ...")."""
    parsed = g["message"].str.extract(_GAP, expand=False)
    ident = g["mapping_gap"] if "mapping_gap" in g.columns else parsed
    g = g.assign(_id=ident.fillna(parsed).fillna("(unnamed identifier)").astype(str))
    out = []
    for (ident,), info in _groups(g, ["_id"]):
        msg = info["message"]
        where = first_line(msg.split(" — ", 1)[1] if " — " in msg else msg)
        title = (f"parity's HIP→CUDA mapping lacks {md_code(ident)}, which ROCm declares: {_counts(info)} "
                 "not verified")
        out.append(_make(Verdict.MAPPING_GAP, info, title, f"parity's gap, not the port's: {where}", "parity",
                         (ident,)))
    return out


def _params(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "?"
    if isinstance(v, str):
        return v
    return "(" + ", ".join(map(str, v)) + ")"


def _signature(g: pd.DataFrame) -> list[Finding]:
    """One finding per op: a drift is usually one edit to a macro shared by every dtype; the detail
    shows the first (expected, found) pair, the dtype's own type written T."""
    def generic(col: str) -> pd.Series:
        if col not in g.columns:
            return pd.Series("?", index=g.index)
        return pd.Series([_params([("T" if p == dt else p) for p in v] if isinstance(v, (list, tuple)) else v)
                          for v, dt in zip(g[col].tolist(), g["dtype"].astype(str).tolist())], index=g.index)
    g = g.assign(_pair=[f"expected {e}, found {f}" for e, f in zip(generic("expected_params"), generic("found_params"))])
    pairs = _collect(g, ["op"], "_pair")
    out = []
    for (op,), info in _groups(g, ["op"]):
        title = f"{md_code(op)}: declared parameter list differs from the ABI ({_counts(info)})"
        ps = pairs[(op,)]
        detail = ps[0] if ps[0] != "expected ?, found ?" else first_line(info["message"])
        if len(ps) > 1:
            detail += f" (and {_plural(len(ps) - 1, 'other parameter list')})"
        out.append(_make(Verdict.SIGNATURE_MISMATCH, info, title, detail, key=(op,)))
    return out


def _names(vs: list, shown: int = NAMES_SHOWN) -> str:
    vs = [str(v) for v in vs]
    return ", ".join(vs[:shown]) + (f", …, {len(vs) - shown} more" if len(vs) > shown else "")


# a chain's missing step as run_chain / the worker name it: "step 3 (nn.rmsnorm): no kernel rmsnorm_f16 in ..."
_STEP_MISSING = re.compile(r"(step \d+ \([^)]*\))[^:]*: no kernel (\S+)")


def _missing(g: pd.DataFrame, t: pd.DataFrame) -> list[Finding]:
    g = g.assign(_close=g["message"].str.extract(r"closest defined: ([^\s;,]+)", expand=False).fillna(""))
    step = g["message"].str.extract(_STEP_MISSING)
    chain = g["op"].str.startswith("chain.") & step[0].notna()
    out = _missing_steps(g[chain], step[chain]) if chain.any() else []
    g = g[~chain]
    if g.empty:
        return out
    out += _families_not_started(g, t)
    g = g[~g["family"].isin({f.key[1] for f in out if f.key[:1] == ("family",)})]
    if g.empty:
        return out
    dts, close = _collect(g, ["op"], "dtype"), _collect(g, ["op"], "_close")
    for (op,), info in _groups(g, ["op"]):
        near = [c for c in close[(op,)] if c]
        title = f"{md_code(op)}: no kernel for {_names(dts[(op,)], 12)} ({_counts(info)})"
        out.append(_make(Verdict.MISSING, info, title, f"closest defined: {_names(near)}" if near else "", key=(op,)))
    return out


def _families_not_started(g: pd.DataFrame, t: pd.DataFrame) -> list[Finding]:
    """A family of which the suite has no kernel at all, on the levels that looked for them, is one
    line: a port not started there is one fact, not one finding per op (missing never drowns wrong)."""
    looked = t[t["level"].isin(set(g["level"])) & t["family"].isin(set(g["family"]))]
    started = set(looked.loc[looked["verdict"] != Verdict.MISSING, "family"])
    out = []
    for (fam,), info in _groups(g[~g["family"].isin(started)], ["family"]):
        ops = list(dict.fromkeys(g.loc[g["family"] == fam, "op"]))
        title = (f"family {md_code(fam)} not started: no kernel of its {_plural(len(info['kernels']), 'kernel')} "
                 f"({_names(ops, 4)}; {_plural(info['cases'], 'case')})")
        # a source that did not compile may define them (a header of its own missing hides its macros' kernels)
        failed = g.loc[g["family"] == fam, "message"].str.extract(_FAILED_SOURCES, expand=False).dropna()
        names = list(dict.fromkeys(n.strip() for m in failed for n in m.split(", ")))
        detail = f"sources that failed to compile, which may define them: {_names(names, 4)}" if names else ""
        out.append(_make(Verdict.MISSING, info, title, detail, key=("family", fam)))
    return out


_FAILED_SOURCES = r"sources that failed to compile: ([^;\n]+)"   # (preflight.not_found's words)


def _missing_steps(g: pd.DataFrame, step: pd.DataFrame) -> list[Finding]:
    """A chain's missing kernel is its step's: one finding per chain x step, naming the step and
    the step kernels it lacks (the chain's own name is no kernel)."""
    g = g.assign(_step=step[0].astype(str), kernel=step[1].astype(str))
    close = _collect(g, ["op", "_step"], "_close")
    out = []
    for k, info in _groups(g, ["op", "_step"]):
        op, label = k
        near = [c for c in close[k] if c]
        title = f"{md_code(op)} {label}: no kernel {_names(info['kernels'], 12)} ({_plural(info['cases'], 'case')})"
        out.append(_make(Verdict.MISSING, info, title, f"closest defined: {_names(near)}" if near else "", key=k))
    return out


def _crashlike(g: pd.DataFrame, t: pd.DataFrame) -> list[Finding]:
    cause = str(g["verdict"].iloc[0])
    after = _not_run_after(g, t)                 # cases not launched because these faulted first
    # a kernel with this verdict on every layout it ran on (per level) is one group, not one per layout
    ran = t[t["kernel"].isin(set(g["kernel"]))].groupby(["level", "kernel"], sort=False)["layout"].nunique()
    hit = (pd.concat([g, after]) if len(after) else g).groupby(["level", "kernel"], sort=False)["layout"].nunique()
    every = hit[(hit == ran.reindex(hit.index)) & (hit > 1)].index
    on_every = pd.MultiIndex.from_frame(g[["level", "kernel"]]).isin(every)
    g = g.assign(_path=g["layout"].map(_path_of).where(~on_every, "*"))
    more = _count_by_fault(g, after)
    verb = lambda info: _VERB1[cause] if len(info["kernels"]) == 1 else _VERB[cause]  # noqa: E731
    out = []
    if on_every.any():
        for _, info in _groups(g[on_every], ["_path"]):
            title = (f"{_plural(len(info['kernels']), 'kernel')} {verb(info)} on every layout "
                     f"({_plural(info['cases'], 'case')}{_not_run_note(more.get('*', 0))})")
            out.append(_make(cause, info, title, first_line(info["message"]), key=("*",)))
    # the in-place classes (contiguous and strided info) share one cause: the null-input path
    for (lay,), info in _groups(g[~on_every], ["_path"]):
        title = (f"{layout_name(str(lay))} path: {_plural(len(info['kernels']), 'kernel')} {verb(info)} "
                 f"({_plural(info['cases'], 'case')}{_not_run_note(more.get(lay, 0))})")
        out.append(_make(cause, info, title, first_line(info["message"]), key=(lay,)))
    return out


# engine.not_run_message: a case not launched because an earlier one faulted on its kernel and path
_NOT_RUN_AFTER = r"^same fault path as (\S+)$"


def _not_run_rows(t: pd.DataFrame) -> pd.DataFrame:
    """The not-run rows, with `_after`: the case id of the fault each one follows."""
    nr = t[t["verdict"] == Verdict.NOT_RUN]
    return nr.assign(_after=nr["message"].str.extract(_NOT_RUN_AFTER, expand=False))


def _not_run_after(g: pd.DataFrame, t: pd.DataFrame) -> pd.DataFrame:
    """The not-run rows that follow a fault among g's rows (same level)."""
    nr = _not_run_rows(t)
    faults = pd.MultiIndex.from_frame(g[["level", "case_id"]])
    return nr[pd.MultiIndex.from_arrays([nr["level"], nr["_after"]]).isin(faults)] if len(nr) else nr


def _count_by_fault(g: pd.DataFrame, after: pd.DataFrame) -> dict:
    """g's `_path` group -> how many not-run rows follow a fault of that group."""
    group_of = dict(zip(zip(g["level"], g["case_id"]), g["_path"]))
    out: dict = {}
    for k in zip(after["level"], after["_after"]):
        out[group_of[k]] = out.get(group_of[k], 0) + 1
    return out


def _not_run_note(n: int) -> str:
    return f"; {n:,} more on the same path not run" if n else ""


def _not_run(g: pd.DataFrame, t: pd.DataFrame) -> list[Finding]:
    """Not-run cases whose fault is not in this table (a filtered or partial results file): a
    finding of their own, so none goes unnamed. The others are counted on their crash's finding."""
    g = _not_run_rows(g)
    faults = t[t["verdict"].isin(CRASHLIKE)]
    known = pd.MultiIndex.from_arrays([g["level"], g["_after"]]).isin(
        pd.MultiIndex.from_frame(faults[["level", "case_id"]]))
    if known.all():
        return []
    return [_make(Verdict.NOT_RUN, info, f"{md_code(op)}: {_plural(info['cases'], 'case')} not run after a fault "
                  "that is not in these results", first_line(info["message"]), key=(op,))
            for (op,), info in _groups(g[~known], ["op"])]


def _path_of(layout: str) -> str:
    return code_path(layout)


OUTSIDE_VIEW = "reads outside its view: NaN from parity's poisoned padding reached the output"
TOWARD_EXACT = "diverges from CUDA toward the exact value"
_KINDS = {"outside-view": OUTSIDE_VIEW, "toward-exact": TOWARD_EXACT}   # Worst.kind (parity/core/compare.py)


def _fault_kind(w) -> str:
    """What a failing case's worst element says about the cause: what the judge found (a read
    outside the view, a result nearer the exact value than CUDA's), else NaN or infinity
    handling, or values."""
    if not isinstance(w, dict):
        return "values"
    if w.get("kind") in _KINDS:
        return _KINDS[w["kind"]]
    e, o = str(w.get("expected", "")).lower(), str(w.get("got", "")).lower()
    if ("nan" in e) != ("nan" in o):
        return "NaN handling"
    if ("inf" in e) != ("inf" in o):
        return "infinities"
    return "values"


def _severity(w) -> float:
    """How far a case's worst failing element is off: its ulps (floats), |expected - got| (integers);
    -1 when unknown. (A case's max_ulp also counts elements that pass by their absolute tolerance,
    and integers have none: ranking by it showed a small error where a larger one was found.)"""
    if not isinstance(w, dict):
        return -1.0
    try:
        if w.get("ulps") is not None:
            return float(w["ulps"])
        return float(abs(int(w["expected"]) - int(w["got"])))
    except (TypeError, ValueError, KeyError):
        return -1.0


def _fail(g: pd.DataFrame) -> list[Finding]:
    """One finding per family x dtype x kind of error (NaN handling, infinities, values), listing
    the ops, value classes and layouts, with the worst element of all. One cause usually spans
    several ops (a bf16 rounding helper shared by add/sub/mul/div) and both value classes; grouping
    by op x dtype x value class would show it as eight findings."""
    family = g["family"] if "family" in g.columns else g["op"].str.split(".").str[0]
    g = g.assign(_family=family.fillna(g["op"].str.split(".").str[0]).astype(str),
                 _kind=g["worst"].map(_fault_kind) if "worst" in g.columns else "values")
    keys = ["_family", "dtype", "_kind"]
    g = g.assign(_ulp=g["worst"].map(_severity) if "worst" in g.columns else -1.0)
    worst = g.sort_values("_ulp", ascending=False, kind="stable").drop_duplicates(keys)   # the worst element
    ops, vals, lays = (_collect(g, keys, c) for c in ("op", "values", "layout"))
    out = []
    for k, info in _groups(g, keys, example=worst):
        fam, dt, kind = k
        what = md_code(ops[k][0]) if len(ops[k]) == 1 else f"{md_code(fam)} ({_names(ops[k])})"
        w = info.get("worst")
        w = w if isinstance(w, dict) else None
        where = f"values: {_names(vals[k])}; layouts: {_names(lays[k])}"
        if kind == TOWARD_EXACT:            # still a failure: parity is CUDA's numbers
            title = (f"{TOWARD_EXACT}: {what} {dt}, {_ulps_from_exact(w)} "
                     f"({_plural(info['cases'], 'case')}; {where})")
        elif kind == OUTSIDE_VIEW:
            title = f"{OUTSIDE_VIEW}: {what} {dt}, {_plural(info['cases'], 'case')} wrong ({where})"
        else:
            title = f"{what} {dt}, {kind}: {_plural(info['cases'], 'case')} wrong ({where})"
        out.append(_make(Verdict.FAIL, info, title, worst_text(w, info["message"]), key=k))
    return out


def _ulps_from_exact(w: dict | None) -> str:
    """"port 0.4 ulp from exact, CUDA 5 ulp" at the worst element."""
    port, cuda = (w or {}).get("ulps_from_exact"), (w or {}).get("cuda_ulps_from_exact")
    if port is None or cuda is None:
        return "port nearer the exact value than CUDA"
    return f"port {port:.2g} ulp from exact, CUDA {cuda:.2g} ulp"


def _error(g: pd.DataFrame) -> list[Finding]:
    g = g.assign(_first=g["message"].map(lambda m: first_line(m, 200) or "(no message)"))
    return [_make(Verdict.ERROR, info, f"parity internal error in {_plural(info['cases'], 'case')}: {msg}", msg,
                  "parity", (msg,)) for (msg,), info in _groups(g, ["_first"])]


def _reference_error(g: pd.DataFrame) -> list[Finding]:
    """A declared kernel's reference (or a size expression of its launch or shapes) raised: the
    declaration's to fix (the message names its file, line and function, or the expression), per op
    and message."""
    g = g.assign(_first=g["message"].map(lambda m: first_line(m, 200) or "(no message)"))
    what = lambda msg: "size expression" if msg.startswith("size expression") else "reference"   # noqa: E731
    return [_make(Verdict.REFERENCE_ERROR, info, f"{md_code(op)}: its declared {what(msg)} raised in "
                  f"{_plural(info['cases'], 'case')}, so they are not judged", msg, "declaration", (op, msg))
            for (op, msg), info in _groups(g, ["op", "_first"])]


def _xpass(g: pd.DataFrame) -> list[Finding]:
    cause = str(g["verdict"].iloc[0])
    static = set(g.loc[g["level"].astype(str).map(role) == COMPILES, "op"])   # compiled, nothing ran
    def now(op, n):
        s = "s" if n == 1 else ""
        return f"now compile{s} (not executed)" if op in static else f"now pass{'e' + s if s else ''}"
    return [_make(cause, info, f"{md_code(op)}: {_plural(info['cases'], 'baselined case')} {now(op, info['cases'])}",
                  "update the baseline (parity baseline update)", key=(op,)) for (op,), info in _groups(g, ["op"])]


def _generic(g: pd.DataFrame) -> list[Finding]:
    cause = str(g["verdict"].iloc[0])
    return [_make(cause, info, f"{md_code(op)}: {cause} in {_plural(info['cases'], 'case')}",
                  first_line(info["message"]), key=(op,)) for (op,), info in _groups(g, ["op"])]


_BUILDERS = {Verdict.COMPILE_ERROR: _compile_error, Verdict.MAPPING_GAP: _mapping_gap,
             Verdict.SIGNATURE_MISMATCH: _signature, Verdict.MISSING: _missing, Verdict.FAIL: _fail,
             Verdict.ERROR: _error, Verdict.REFERENCE_ERROR: _reference_error,
             Verdict.XPASS: _xpass, Verdict.XPASS_STRICT: _xpass,
             Verdict.NOT_RUN: _not_run,
             **{c: _crashlike for c in CRASHLIKE}}
_WITH_TABLE = (_crashlike, _not_run, _missing)
