"""Markdown for a PR description or comment: headline, levels, failures first, details collapsed."""
from __future__ import annotations

import pandas as pd

from ..results import FAILING, Results

LIMIT = 65_000          # GitHub's comment limit is 65,536 characters


def _worst(row: pd.Series) -> str:
    w = row.get("worst")
    if isinstance(w, dict) and w:
        ins = ", ".join(f"{k}={v}" for k, v in (w.get("inputs") or {}).items())
        ulp = w.get("ulps")
        u = "" if ulp is None else f", {ulp:g} ulp" if ulp == ulp and ulp != float("inf") else ", inf ulp"
        note = f" ({w['note']})" if w.get("note") else ""
        return (f"at {tuple(w.get('coords') or [])}{': ' + ins if ins else ''} → expected `{w['expected']}` "
                f"got `{w['got']}`{u}{note}")
    msg = str(row.get("message") or "")
    return msg.splitlines()[0][:300] if msg else ""


def render(res: Results, limit: int = LIMIT) -> str:
    t = res.table
    meta = res.meta
    counts = res.counts()
    total = len(t)
    passed = counts.get("pass", 0)
    n_fail = int(t["verdict"].isin(FAILING).sum())
    icon = "✅" if n_fail == 0 else "❌"
    lines = [f"## {icon} parity: {passed}/{total} cases pass"
             + (f", {n_fail} failing" if n_fail else ""), ""]
    if meta.get("sweep"):
        lines.append(f"Sweep `{meta['sweep']}` · suite `{meta.get('hip_src', '')}` · "
                     f"{meta.get('elapsed_s', 0):.1f} s")
        lines.append("")
    lines.append("| verdict | cases |")
    lines.append("| --- | ---: |")
    lines += [f"| {v} | {n} |" for v, n in counts.items()]
    lines.append("")
    levels = meta.get("levels", [])
    if levels:
        lines += ["| level | status | device / reason |", "| --- | --- | --- |"]
        for lv in levels:
            status = "ran" if lv["available"] else "**unavailable**"
            lines.append(f"| {lv['level']} | {status} | {lv.get('device') or lv.get('reason', '')} |")
        lines.append("")
        if any(not lv["available"] for lv in levels):
            lines.append("Unavailable levels were not run: they are neither passed nor failed.")
            lines.append("")
    golden = meta.get("golden")
    if golden:
        lines.append(f"Reference vs measured CUDA (H200) golden data: {golden['ok']}/{golden['entries']} launches "
                     f"within budget, {golden['bit_exact']} bit-exact.")
        lines.append("")
    fails = t[t["verdict"].isin(FAILING)]
    body = []
    if not fails.empty:
        body += ["### Failures", "", "| case | level | verdict | worst element |", "| --- | --- | --- | --- |"]
        for _, r in fails.iterrows():
            body.append(f"| `{r['case_id']}` | {r['level']} | **{r['verdict']}** | {_worst(r)} |")
        body.append("")
        divs = sorted({d for ds in fails["divergences"].dropna() for d in (ds or [])})
        if divs:
            body += ["Known CUDA vs Candle-CPU divergences of the failing ops (the reference follows CUDA):", ""]
            body += [f"- {d}" for d in divs] + [""]
    details = ["<details><summary>Per op</summary>", "", "| op | dtypes | cases | pass | failing |",
               "| --- | --- | ---: | ---: | ---: |"]
    for op, g in t.groupby("op", sort=True):
        details.append(f"| {op} | {g['dtype'].nunique()} | {len(g)} | {(g['verdict'] == 'pass').sum()} | "
                       f"{g['verdict'].isin(FAILING).sum()} |")
    details += ["", "</details>", ""]
    head = "\n".join(lines) + "\n"
    tail = "\n".join(details)
    out = head + "\n".join(body) + "\n" + tail
    if len(out) > limit:                          # keep the headline and as many failures as fit
        budget = limit - len(head) - 200
        kept, size = [], 0
        for line in body:
            if size + len(line) + 1 > budget:
                break
            kept.append(line)
            size += len(line) + 1
        dropped = len(fails) - sum(1 for line in kept if line.startswith("| `"))
        out = head + "\n".join(kept) + f"\n\n… {dropped} more failures: see the JSON or HTML report.\n"
    return out
