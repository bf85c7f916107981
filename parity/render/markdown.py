"""Markdown for a PR description or comment: root causes first.

Headline, levels, the parity score (kernels at parity per family × level), findings grouped by
cause with their worst example, then collapsed: an appendix (the timing table), the first failing
case ids and the per-op table. Per-case rows live in results.json, junit.xml and index.html.
The whole text stays under `limit` (60,000 characters; GitHub refuses comments over 65,536) for any
run size: `render(res, appendix=...)` is given the timing table by `parity run` so the budget
covers it; sections past the budget are cut at a line with a pointer to index.html / results.json.
"""
from __future__ import annotations

import pandas as pd

from parity.core.row import Verdict
from parity.core.text import md_code, md_text, share
from parity.render import findings as fnd
from parity.render import outcome
from parity.run.levels import REFERENCE, role
from parity.run.results import FAILING, Results

LIMIT = 60_000          # GitHub's comment limit is 65,536 characters; headroom for a wrapper
MAX_FINDINGS = 100      # past this a PR comment is no longer read; the rest are in index.html
FIRST_CASES = 30
MAX_FAMILIES = 40
FINDINGS_SHARE = 0.7    # of what remains after the head and score: the rest for appendix and details
MORE = "see index.html or results.json"
_NOTES_SHOWN = 10      # discovery notes in the summary; the rest in results.json


def _md(s: str) -> str:
    """Inline text from a compiler or a kernel: a code span on one line (no HTML, no heading, no link)."""
    return md_code(s)



def _head(res: Results, f: fnd.Findings) -> list[str]:
    meta, counts = res.meta, res.counts()
    o = outcome.of(res)
    lines = [f"## {o.title}", ""]
    said = outcome.explain(o, not_run=False)          # the level table below lists those
    if said:
        lines += [f"- {line}" for line in said] + [""]
    if meta.get("sweep"):
        lines += [f"Sweep {md_code(meta['sweep'])} · {outcome.suites_line(meta)} · "
                  f"{meta.get('elapsed_s', 0):.1f} s", ""]
    if meta.get("port"):                         # a port given by its build line (parity.suite.port)
        lines += [f"Port (its build line, on every HIP level): {md_code(meta['port']['description'])}", ""]
    prof = meta.get("profile")
    if isinstance(prof, dict) and prof.get("name") and prof["name"] != "candle":
        lines += [f"ABI profile **{md_text(prof['name'])}**: {md_text(prof.get('title', ''))} "
                  f"({md_text(prof.get('how', ''))})", ""]
        notes = prof.get("notes", [])
        lines += [f"- {_md(n) if len(n) < 80 else md_text(n)}" for n in notes] + ([""] if notes else [])
    found = [n for n in meta.get("discovery_notes") or [] if isinstance(n, str)]
    if found:                                    # what discovering the suite left out or had to choose
        lines += ["Suite discovery:"] + [f"- {md_text(n)}" for n in found[:_NOTES_SHOWN]]
        if len(found) > _NOTES_SHOWN:
            lines.append(f"- and {len(found) - _NOTES_SHOWN} more (results.json, `meta.discovery_notes`)")
        lines.append("")
    if counts:
        lines += ["Verdicts: " + "; ".join(f"{md_text(lv)}: " + " · ".join(f"{v} **{c:,}**" for v, c in cs.items())
                                           for lv, cs in res.counts_by_level().items()), ""]
    levels = meta.get("levels", [])
    if levels:
        lines += ["| level | status | device / reason |", "| --- | --- | --- |"]
        rows = res.table["level"].astype(str).value_counts() if len(res.table) else {}
        for lv in levels:               # (a run stopped before a level's first case never ran it)
            status = ("**unavailable**" if not lv["available"] else "ran" if rows.get(lv["level"], 0)
                      or not outcome.stop_reason(meta, len(res.table)) else "not reached (the run stopped)")
            lines.append(f"| {md_text(lv['level'])} | {status} | {md_text(lv.get('device') or lv.get('reason', ''))} |")
        lines.append("")
        if any(not lv["available"] for lv in levels):
            lines += ["Unavailable levels were not run: they are neither passed nor failed.", ""]
    golden = meta.get("golden")
    if golden:
        lines += [f"Reference vs measured CUDA (H200) golden data: {golden['ok']}/{golden['entries']} launches "
                  f"within budget, {golden['bit_exact']} bit-exact.", ""]
    return lines


def scoreboard_lines(f: fnd.Findings, max_families: int = MAX_FAMILIES) -> list[str]:
    """The parity score as a family × level table (one column per level that ran)."""
    if not f.scoreboard:
        return []
    levels = list(dict.fromkeys(r.level for r in f.scoreboard))
    fams = list(dict.fromkeys(r.family for r in f.scoreboard if r.family != "all"))
    cell = {(r.level, r.family): r for r in f.scoreboard}
    lines = ["### Parity score", "",
             "Kernels at parity (every case `pass`; on amd-static: `compiled`; a baselined `xfail` is accepted, not at "
             "parity) / kernels run, and cases "
             "passing / run. The reference levels (cpu, cupy) run no kernel of the suite: only their cases count.", "",
             "| family | " + " | ".join(levels) + " |", "| --- |" + " ---: |" * len(levels)]

    def row(fam: str, label: str) -> str:
        cs = []
        for lv in levels:
            r = cell.get((lv, fam))
            cs.append("" if r is None else f"{r.cases_ok:,}/{r.cases:,} cases" if role(lv) == REFERENCE else
                      f"{r.kernels_ok:,}/{r.kernels:,} ({share(r.kernels_ok, r.kernels)}) · {r.cases_ok:,}/{r.cases:,}")
        return f"| {label} | " + " | ".join(cs) + " |"

    lines += [row(fam, fam) for fam in fams[:max_families]]
    if len(fams) > max_families:
        lines.append(f"| … {len(fams) - max_families} more families | " + " | ".join("" for _ in levels) + " |")
    lines += [row("all", "**all**"), ""]
    return lines


def finding_lines(i: int, x: fnd.Finding) -> list[str]:
    """One finding: a numbered title line, then its detail, kernels and worst example."""
    who = {"parity": " (parity's gap)", "declaration": " (the declaration's)"}.get(x.blame, "")
    if x.cause == Verdict.MISSING:              # one line per op: the title names the dtypes, so no kernel list
        return [f"{i}. **missing** — {x.title}" + (f" · {x.detail}" if x.detail else "")]
    lines = [f"{i}. **{x.cause}**{who} — {x.title}"]
    sub = []
    if x.detail:
        sub.append(x.detail if x.cause == Verdict.FAIL else _md(x.detail))
    if x.kernels:
        sub.append("kernels: " + x.kernel_list())
    sub.append(f"e.g. {md_code(x.example)} ({md_text(x.example_level)})")
    lines.append("   - " + " · ".join(sub))             # a nested item: GitHub would join a bare indented line
    return lines


def _fit(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The leading lines that fit `budget` characters (with newlines), and how many were left out."""
    kept, size = [], 0
    for line in lines:
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    return kept, len(lines) - len(kept)


def render(res: Results, limit: int = LIMIT, appendix: str = "") -> str:
    """The summary; `appendix` (markdown, e.g. the timing table) is placed after the findings and cut
    to what the budget leaves, so summary.md as a whole stays under `limit`."""
    f = fnd.of(res)
    head = "\n".join(_head(res, f) + scoreboard_lines(f)) + "\n"
    room = limit - len(head) - 400                     # 400: the pointers and closing tags below
    out = [head]

    if f.findings:
        blocks = [finding_lines(i, x) for i, x in enumerate(f.findings[:MAX_FINDINGS], 1)]
        title = f"### Findings: {fnd.count_text(f.findings)}, worst first"
        # the appendix keeps at most (1 - FINDINGS_SHARE) of the room; the failing-case list 3,500
        budget = room - min(len(appendix), int(room * (1 - FINDINGS_SHARE))) - 3500
        kept, size = [], len(title) + 2
        for b in blocks:
            n = sum(len(line) + 1 for line in b)
            if size + n > budget:
                break
            kept.append(b)
            size += n
        text = [title, ""] + [line for b in kept for line in b]
        if len(kept) < len(f.findings):
            text += ["", f"… {len(f.findings) - len(kept)} more findings: {MORE}."]
        divs = _divergences(res.table)
        text = text + [""]
        if divs and size + sum(len(d) + 4 for d in divs) + 100 < budget:
            text += ["Known CUDA vs Candle-CPU divergences of the failing ops (the reference follows CUDA):", ""]
            text += [f"- {md_text(d)}" for d in divs] + [""]
        block = "\n".join(text) + "\n"
        out.append(block)
        room -= len(block)

    if appendix:
        lines, left = _fit(appendix.rstrip("\n").split("\n"), max(0, room - 3500))
        block = "\n".join(lines) + (f"\n\n… {left} more lines: {MORE}.\n" if left else "\n")
        if lines:
            out.append("\n" + block)
            room -= len(block) + 1

    fails = res.table[res.table["verdict"].isin(FAILING)]
    if not fails.empty and room > 600:
        ids = [f"- {md_code(c)} ({md_text(lv)}, {v})" for c, lv, v in zip(*(fails[k].head(FIRST_CASES).tolist()
                                                            for k in ("case_id", "level", "verdict")))]
        lines, _ = _fit(ids, room - 300)
        more = len(fails) - len(lines)
        block = "\n".join([f"<details><summary>First {len(lines)} of {len(fails):,} failing cases</summary>", ""]
                          + lines + ([f"- … {more:,} more: {MORE}"] if more else []) + ["", "</details>", ""]) + "\n"
        out.append(block)
        room -= len(block)

    if room > 600:
        rows = []
        t = res.table
        suite = t[t["level"].astype(str).map(role) != REFERENCE] if len(t) else t
        t = suite if len(suite) else t          # the reference's passes are no pass of the port's ops
        g = t.assign(_ok=t["verdict"] == Verdict.PASS, _bad=t["verdict"].isin(FAILING)).groupby("op", sort=True)
        agg = pd.DataFrame({"dtypes": g["dtype"].nunique(), "cases": g.size(), "pass": g["_ok"].sum(),
                            "failing": g["_bad"].sum()})
        for op, *r in zip(agg.index.tolist(), *(agg[c].tolist() for c in agg.columns)):
            rows.append(f"| {md_code(op, True)} | " + " | ".join(map(str, r)) + " |")
        lines, left = _fit(rows, room - 300)
        levels = ", ".join(md_text(lv) for lv in dict.fromkeys(t["level"].astype(str))) if len(t) else ""
        out.append("\n".join([f"<details><summary>Per op ({levels})</summary>", "",
                               "| op | dtypes | cases | pass | failing |",
                              "| --- | --- | ---: | ---: | ---: |"] + lines
                             + ([f"| … {left} more ops | | | | |"] if left else []) + ["", "</details>", ""]))
    text = "".join(o if o.endswith("\n") else o + "\n" for o in out)
    return text[:limit]                                 # a last guard; the budget above keeps it shorter


def _divergences(t: pd.DataFrame) -> list[str]:
    if "divergences" not in t.columns:
        return []
    fails = t.loc[t["verdict"].isin(FAILING), "divergences"].dropna()
    return sorted({d for ds in fails for d in (ds or []) if isinstance(d, str)})[:20]
