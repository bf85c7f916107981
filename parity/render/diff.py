"""Compare two runs: new failures, fixed cases, verdict changes and kernel-time slowdowns.

Cases are keyed by (case ID, level). A regression is a case failing in NEW that was not failing
in OLD (passing, known failure, or absent), or a kernel time that grew by more than the slowdown
threshold; one cannot be ruled out where a case OLD verified on a level that runs or compiles the
suite is not verified in NEW (passed, now unavailable, only compiled, or absent where NEW's level was
unavailable); `parity diff` exits 1 on either and 0 otherwise. Two runs of different sweeps,
filters, levels or shards are compared on the cases they share only: the report says so (and how
many cases it could not compare) instead of a clean bill of health.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from parity.core.row import Verdict
from parity.core.text import md_code, md_text
from parity.run.levels import EXECUTES, REFERENCE, role
from parity.run.results import FAILING, Results


@dataclass
class Change:
    case_id: str
    level: str
    old: str | None                 # verdict in OLD (None: absent)
    new: str | None
    detail: str = ""


@dataclass
class Slowdown:
    case_id: str
    level: str
    old_ms: float
    new_ms: float

    @property
    def ratio(self) -> float:
        return self.new_ms / self.old_ms


@dataclass
class Diff:
    new_failures: list[Change] = field(default_factory=list)
    fixed: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)       # failing in both, different verdict
    baselined: list[Change] = field(default_factory=list)     # xfail now, not before: failing, the baseline accepts it
    unverified: list[Change] = field(default_factory=list)    # verified in OLD, not in NEW (unavailable, compiled only)
    still_failing: int = 0
    slowdowns: list[Slowdown] = field(default_factory=list)
    speedups: list[Slowdown] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    compared: int = 0
    timed: int = 0
    threshold: float = 1.10
    differs: list[str] = field(default_factory=list)           # "sweep smoke vs pr", from scope_differences
    levels: set[str] = field(default_factory=set)              # the levels of the compared rows
    unread_failing: int = 0        # NEW's rows with a failing verdict it could not read: no regression ruled out
    new_stopped: str = ""          # NEW did not finish ("interrupted after 574 of 7,540 case runs")

    @property
    def reference_only(self) -> bool:
        """Every compared row is a reference level's (cpu, cupy): no kernel of the suite was compared."""
        return bool(self.levels) and all(role(lv) == REFERENCE for lv in self.levels)

    @property
    def nothing_executed(self) -> bool:
        """No compared row is an executing level's: at most compile checks (amd-static) were compared."""
        return bool(self.levels) and all(role(lv) != EXECUTES for lv in self.levels)

    @property
    def regressions(self) -> bool:
        """A regression found, or one that cannot be ruled out (a failing row NEW could not read, a case
        NEW no longer verifies)."""
        return bool(self.new_failures or self.slowdowns or self.unread_failing or self.unverified)

    @property
    def partial(self) -> bool:
        """Some cases could not be compared: the runs differ in what they ran, or NEW did not finish."""
        return bool(self.differs or self.added or self.removed or self.new_stopped)


SCOPE = ("kind", "sweep", "filters", "levels", "shard")
# a case's verdict in OLD -> the verdicts in NEW that check less of it (a GPU runner gone: pass -> unavailable)
_LESS_VERIFIED = {Verdict.PASS: (Verdict.UNAVAILABLE, Verdict.COMPILED),
                  Verdict.XPASS: (Verdict.UNAVAILABLE, Verdict.COMPILED),
                  Verdict.COMPILED: (Verdict.UNAVAILABLE,)}


def scope(meta: dict, keys: tuple[str, ...] = SCOPE) -> dict[str, str]:
    """What a run ran, as comparable text per key: its sweep, filters, levels that ran, shard,
    suites (`hip_src`, `cuda_src`). Absent keys read as "none"."""
    out = {}
    for k in keys:
        v = meta.get(k)
        if k == "levels":
            v = [lv.get("level") for lv in v if isinstance(lv, dict) and lv.get("available")] \
                if isinstance(v, list) else None
            v = ", ".join(sorted(map(str, v))) if v else None
        elif k == "filters" and isinstance(v, dict):
            v = " ".join(f"{f}={','.join(map(str, x)) if isinstance(x, list) else x}"
                         for f, x in sorted(v.items()) if x) or None
        out[k] = "none" if v in (None, "", [], {}) else str(v)
    return out


def scope_differences(a: dict, b: dict, keys: tuple[str, ...] = SCOPE) -> list[str]:
    """'sweep smoke vs pr' for every scope key where meta `a` and `b` differ."""
    sa, sb = scope(a, keys), scope(b, keys)
    return [f"{k} {sa[k]} vs {sb[k]}" for k in keys if sa[k] != sb[k]]


def _index(res: Results) -> dict[tuple[str, str], dict]:
    cols = [c for c in ("case_id", "level", "verdict", "kernel_ms", "message") if c in res.table.columns]
    return {(str(r["case_id"]), str(r["level"])): r for r in res.table[cols].to_dict(orient="records")}


def _ms(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f > 0 else None


def diff(old: Results, new: Results, slowdown: float = 1.10, min_ms: float = 0.0) -> Diff:
    from parity.render.outcome import stop_reason, unread_counts
    a, b = _index(old), _index(new)
    d = Diff(threshold=slowdown, differs=scope_differences(old.meta, new.meta),
             unread_failing=unread_counts(new.meta)[1], new_stopped=stop_reason(new.meta, len(new.table)))
    d.added = len(b.keys() - a.keys())
    d.removed = len(a.keys() - b.keys())
    down = {str(lv.get("level")) for lv in new.meta.get("levels") or []        # a level NEW asked for and could
            if isinstance(lv, dict) and not lv.get("available", True)}          # not run: its cases unverified
    ran = {str(lv.get("level")) for lv in new.meta.get("levels") or []          # and those it ran: a NEW that
           if isinstance(lv, dict) and lv.get("available", True)}               # stopped did not reach them all
    for key in a.keys() - b.keys():              # (a level NEW did not ask for, or fewer cases: partial)
        vo, lv = a[key]["verdict"], str(key[1])
        if not _LESS_VERIFIED.get(vo) or role(lv) == REFERENCE:
            continue
        if lv in down:
            d.unverified.append(Change(key[0], key[1], vo, None, f"level {key[1]} unavailable in NEW"))
        elif lv in ran and d.new_stopped:
            d.unverified.append(Change(key[0], key[1], vo, None, f"NEW stopped before it ({d.new_stopped})"))
    for key, rn in b.items():
        ro = a.get(key)
        vo, vn = (ro or {}).get("verdict"), rn["verdict"]
        first = str(rn.get("message") or "").splitlines()
        msg = first[0][:300] if first else ""
        if ro is not None:
            d.compared += 1
            d.levels.add(str(key[1]))
        if vn in FAILING:
            if vo in FAILING:
                d.still_failing += 1
                if vo != vn:
                    d.changed.append(Change(key[0], key[1], vo, vn, msg))
            else:
                d.new_failures.append(Change(key[0], key[1], vo, vn, msg))
        elif vn == Verdict.XFAIL and ro is not None and vo != Verdict.XFAIL:   # never `fixed`: it still fails
            d.baselined.append(Change(key[0], key[1], vo, vn, msg))
        elif vo in FAILING and vn in (Verdict.PASS, Verdict.XPASS, Verdict.COMPILED):
            d.fixed.append(Change(key[0], key[1], vo, vn))
        elif vn in _LESS_VERIFIED.get(vo, ()) and role(str(key[1])) != REFERENCE:
            d.unverified.append(Change(key[0], key[1], vo, vn, msg))
        if ro is None:
            continue
        mo, mn = _ms(ro.get("kernel_ms")), _ms(rn.get("kernel_ms"))
        if mo is None or mn is None:
            continue
        d.timed += 1
        if max(mo, mn) < min_ms:
            continue
        if mn > mo * slowdown:
            d.slowdowns.append(Slowdown(key[0], key[1], mo, mn))
        elif mo > mn * slowdown:
            d.speedups.append(Slowdown(key[0], key[1], mo, mn))
    d.slowdowns.sort(key=lambda s: -s.ratio)
    d.speedups.sort(key=lambda s: s.ratio)
    return d


def partial_line(d: Diff) -> str:
    """⚠️ what the two runs do not share, and what was compared."""
    what = "The runs differ: " + "; ".join(d.differs) + "; " if d.differs else "The runs do not have the same cases: "
    verdict = "regressions found" if d.regressions else "no regressions among them"
    return (f"⚠️ {what}{d.added:,} cases only in NEW, {d.removed:,} only in OLD — compared "
            f"{d.compared:,} common cases: {verdict}")


def _key(c: Change | Slowdown) -> str:
    """A table row's first cells, case and level (a port's text: escaped, `|` kept inside its cell)."""
    return f"| {md_code(c.case_id, True)} | {md_text(c.level)} |"


def render(d: Diff, limit: int = 50) -> str:
    """Markdown-ish text for a terminal or a PR comment."""
    icon = "❌" if d.regressions else "⚠️" if d.partial or d.baselined or d.nothing_executed else "✅"
    head = (f"## {icon} parity diff: {len(d.new_failures)} new failure(s), {len(d.fixed)} fixed, "
            + (f"{len(d.baselined)} failing now accepted by the baseline, " if d.baselined else "")
            + f"{len(d.slowdowns)} slowdown(s) > {d.threshold:g}x")
    lines = [head, ""]
    if d.unread_failing:
        lines += [f"❌ NEW has {d.unread_failing:,} unreadable row(s) with a failing verdict: a regression cannot be "
                  "ruled out.", ""]
    if d.new_stopped:
        lines += [f"⚠️ NEW did not finish ({d.new_stopped}): the cases it did not run are not compared.", ""]
    if d.unverified:
        lines += [f"❌ {len(d.unverified):,} case(s) OLD verified are not verified in NEW (now "
                  f"{', '.join(sorted({str(c.new or 'absent') for c in d.unverified}))}): a regression cannot be "
                  "ruled out.", ""]
    if d.partial:
        lines += [partial_line(d), ""]
    if d.reference_only:
        lines += [f"⚠️ Every compared row is from {', '.join(sorted(d.levels))}, the reference: no kernel of the "
                  "suite was compared.", ""]
    elif d.nothing_executed:
        lines += [f"⚠️ No compared row executed a kernel of the suite ({', '.join(sorted(d.levels))}): what is "
                  "compared is whether kernels compile, not the values they compute.", ""]
    runs = "case runs (case x level)" if len(d.levels) > 1 else "cases"
    lines += [f"{d.compared} {runs} in both runs ({d.added} only in NEW, {d.removed} only in OLD); "
              f"{d.still_failing} still failing; {d.timed} with kernel times in both.", ""]

    def table(title: str, header: str, rows: list[str], total: int) -> None:
        if not total:
            return
        lines.extend([f"### {title} ({total})", "", header,
                      "| " + " | ".join("---" for _ in header.strip("|").split("|")) + " |"])
        lines.extend(rows[:limit])
        if total > limit:
            lines.append(f"… {total - limit} more")
        lines.append("")

    table("New failures", "| case | level | was | now | worst element / message |",
          [f"{_key(c)} {c.old or '(new case)'} | **{c.new}** | {md_code(c.detail, True)} |" for c in d.new_failures],
          len(d.new_failures))
    table("No longer verified", "| case | level | was | now | reason |",
          [f"{_key(c)} {c.old} | **{c.new or 'absent'}** | {md_code(c.detail, True)} |" for c in d.unverified],
          len(d.unverified))
    table("Fixed", "| case | level | was | now |",
          [f"{_key(c)} {c.old} | {c.new} |" for c in d.fixed], len(d.fixed))
    table("Failing now, accepted by the baseline (xfail)", "| case | level | was | now | message |",
          [f"{_key(c)} {c.old} | **{c.new}** | {md_code(c.detail, True)} |" for c in d.baselined], len(d.baselined))
    table("Verdict changed (still failing)", "| case | level | was | now |",
          [f"{_key(c)} {c.old} | **{c.new}** |" for c in d.changed], len(d.changed))
    table(f"Slowdowns beyond {d.threshold:g}x", "| case | level | old ms | new ms | ratio |",
          [f"{_key(s)} {s.old_ms:.4g} | {s.new_ms:.4g} | **{s.ratio:.2f}x** |"
           for s in d.slowdowns], len(d.slowdowns))
    table("Speedups", "| case | level | old ms | new ms | ratio |",
          [f"{_key(s)} {s.old_ms:.4g} | {s.new_ms:.4g} | {s.ratio:.2f}x |"
           for s in d.speedups], len(d.speedups))
    lines.append("Regressions found: exit 1." if d.new_failures or d.slowdowns
                 else "A regression cannot be ruled out: exit 1." if d.regressions
                 else "No regressions among the cases both runs have." if d.partial else "No regressions.")
    return "\n".join(lines) + "\n"

