"""The timing table: median (p10-p90), samples, GB/s, % of peak, launch-bound, HIP/reference ratio."""
from __future__ import annotations

import math

import pandas as pd

from parity.run.results import Results


def _f(v, fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """A number cell ("" for a missing or non-finite one: a row read from a file may lack it)."""
    try:
        x = float(v) * scale
    except (TypeError, ValueError, OverflowError):
        return ""
    return "" if not math.isfinite(x) else fmt.format(x)


def rows(res: Results) -> list[dict]:
    t = res.table
    if "samples" not in t.columns:
        return []
    timed = t[pd.to_numeric(t["samples"], errors="coerce").notna()]
    out = []
    for _, r in timed.iterrows():
        out.append({
            "case": str(r["case_id"]), "level": str(r["level"]),
            "median_us": _f(r["kernel_ms"], "{:.1f}", 1e3),
            "p10-p90_us": f"{_f(r.get('time_p10'), '{:.1f}', 1e3)}-{_f(r.get('time_p90'), '{:.1f}', 1e3)}",
            "n": _f(r["samples"], "{:.0f}"), "noise": _f(r.get("time_noise"), "{:.1f}%", 100),
            "GB/s": _f(r.get("gbps"), "{:.0f}"), "% peak": _f(r.get("pct_peak"), "{:.0f}%"),
            "launch-bound": "yes" if r.get("launch_bound") is True else "",
            "events_us": _f(r.get("event_ms"), "{:.1f}", 1e3)
            if r.get("time_source") == "events-overhead" else "",
            "ratio": (_f(r.get("ratio"), "{:.2f}x") + f" vs {r.get('ratio_vs')}") if _f(r.get("ratio")) else "",
            "note": str(r.get("timing_note") or "")[:80] if isinstance(r.get("timing_note"), str) else "",
        })
    return out


COLS = ["case", "level", "median_us", "p10-p90_us", "n", "noise", "GB/s", "% peak", "launch-bound", "events_us",
        "ratio", "note"]


def _method(res: Results) -> str:
    """What the medians are: raw device events, or events minus an empty event pair's time."""
    src = set(res.table["time_source"].dropna()) if "time_source" in res.table.columns else set()
    if "events-overhead" in src:
        return "device events minus an empty event pair's median; events_us: the raw event median"
    return "device events"


def markdown(res: Results) -> str:
    rs = rows(res)
    if not rs:
        return ""
    peak = next((r for r in res.table.get("peak_gbps", []) if isinstance(r, (int, float)) and r == r), None)
    mode = res.meta.get("timing", {}).get("mode", "")
    lines = [f"### Timing ({mode} L2{', peak copy bandwidth %.0f GB/s' % peak if peak else ''}; median of "
             f"{_method(res)})", "",
             "| " + " | ".join(COLS) + " |", "| " + " | ".join("---" for _ in COLS) + " |"]
    for r in rs:
        lines.append("| " + " | ".join(f"`{r[c]}`" if c == "case" else r[c] for c in COLS) + " |")
    return "\n".join(lines) + "\n"


def show(res: Results, console) -> None:
    """The timing table; on a terminal too narrow for it (an 80-column CI log), one line per
    timed case instead, so no number or name is folded over lines."""
    from rich.table import Table
    rs = rows(res)
    if not rs:
        return
    title = f"timing (median of {_method(res)})"
    width = sum(max([len(c)] + [len(str(r[c])) for r in rs]) + 3 for c in COLS) + 1
    if width > console.width:
        console.print(title, soft_wrap=True, highlight=False)
        for r in rs:
            extra = [f"{r['GB/s']} GB/s ({r['% peak']} of peak)" if r["GB/s"] else "",
                     r["ratio"], f"noise {r['noise']}" if r["noise"] else "", r["note"]]
            console.print(" · ".join([r["case"], r["level"], f"{r['median_us']} us"] + [e for e in extra if e]),
                          soft_wrap=True, highlight=False, markup=False)
        return
    t = Table(title=title)
    for c in COLS:
        t.add_column(c, no_wrap=True, justify="right" if c not in ("case", "level", "note") else "left")
    for r in rs:
        t.add_row(*[r[c] for c in COLS])
    console.print(t)
