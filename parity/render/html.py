"""One self-contained HTML scoreboard (`index.html`): no network, inline CSS, JS and SVG.

Sections: the parity score (kernels at parity per family × level) and the findings grouped by
cause (parity.render.findings) first; a summary bar per level (unavailable levels drawn hatched, never as passed), the
op × dtype grid coloured by the worst verdict (click a cell: its cases by layout × value class),
a filter box and verdict checkboxes (also driven by the URL: `index.html#filter=minimum&verdict=fail`),
the failures with their worst element and a repro command (grid and failures collapsed in one
`<details id="per-case">`, opened by a URL hash or a click), kernel timings with inline SVG plots,
levels, golden data, baseline and environment.

The grid and the failure table are rendered on the server side, so the page reads without
JavaScript; the script adds filtering and the drill-down from the embedded case table.
"""
from __future__ import annotations

import html as _html
import json
import math
import re
from pathlib import Path

import jinja2
import pandas as pd

from parity.core import files
from parity.core.row import Verdict
from parity.core.text import share
from parity.render import github
from parity.render.findings import count_text, of
from parity.render.outcome import explain
from parity.render.outcome import of as outcome_of
from parity.render.outcome import suites_line
from parity.run.levels import REFERENCE, role
from parity.run.results import FAILING, ORDER, Results

TEMPLATES = Path(__file__).resolve().parent / "templates"
# worst first; anything unknown sorts with the failures
RANK = ORDER                # worst first
COLORS = {Verdict.PASS: "#2e9e4f", Verdict.FAIL: "#d62828", Verdict.CRASH: "#8b0000", Verdict.OOB_WRITE: "#b5179e",
          Verdict.INPUT_CLOBBERED: "#9d0208", Verdict.TIMEOUT: "#e85d04", Verdict.COMPILE_ERROR: "#f48c06",
          Verdict.MISSING: "#e9c46a", Verdict.ERROR: "#7b2cbf", Verdict.SIGNATURE_MISMATCH: "#c1121f",
          Verdict.MAPPING_GAP: "#5a189a", Verdict.XPASS_STRICT: "#ff006e", Verdict.XFAIL: "#6c8ebf",
          Verdict.XPASS: "#f4a261", Verdict.UNAVAILABLE: "#9e9e9e", Verdict.COMPILED: "#4ea8de",
          Verdict.REFERENCE_ERROR: "#9d4edd"}
# the badge says the run's outcome (parity.render.outcome) in the words of the markdown headline
BADGES = {"pass": ("PASS", "#2e9e4f"), "fail": ("FAIL", "#d62828"), "compiled": ("COMPILED, NOT RUN", "#b08900"),
          "reference-only": ("REFERENCE ONLY", "#b08900"), "nothing": ("NOTHING VERIFIED", "#d62828"),
          "empty-shard": ("EMPTY SHARD", "#b08900"), "partial": ("PARTIAL MERGE", "#b08900"),
          "stopped": ("STOPPED EARLY", "#b08900")}
HIP_LEVELS = ("hip-on-nvidia", "hip-on-nvidia/w32", "amd")
MAX_FAILURE_ROWS = 2000
MAX_FINDINGS = 500


def rank(v: str) -> int:
    return RANK.index(v) if v in RANK else 0


def worst(verdicts) -> str | None:
    vs = [v for v in verdicts if isinstance(v, str) and v]
    return min(vs, key=rank) if vs else None


def grid_key(op: str, dtype: str) -> tuple[str, str]:
    """(grid row, grid column): compound dtype keys (cast f32-u8, where u8-f32) split into the row."""
    dtype = str(dtype)
    if "-" in dtype:
        src, _, dst = dtype.partition("-")
        return f"{op} [{src}→]", dst
    return op, dtype


def _fmt(v, digits: int = 4) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.{digits}g}"
    return str(v)


def _first_line(s) -> str:
    s = "" if s is None or (isinstance(s, float) and math.isnan(s)) else str(s)
    return s.splitlines()[0][:400] if s else ""


def _levels(res: Results) -> list[dict]:
    t = res.table
    metas = {lv["level"]: lv for lv in res.meta.get("levels", [])}
    names = list(metas) + [l for l in t["level"].dropna().unique() if l not in metas]
    out = []
    for name in names:
        lv = metas.get(name, {"level": name, "available": True, "reason": "", "device": ""})
        g = t[t["level"] == name]
        counts = g["verdict"].value_counts()
        segs = [{"verdict": v, "n": int(counts[v]), "pct": 100.0 * counts[v] / max(len(g), 1),
                 "color": COLORS.get(v, "#555")} for v in sorted(counts.index, key=rank)]
        devices = [d for d in g["device"].dropna().unique() if d] if "device" in g else []
        out.append({"name": name, "available": bool(lv.get("available", True)), "reason": lv.get("reason") or "",
                    "device": lv.get("device") or (devices[0] if devices else ""), "total": len(g),
                    "failing": int(g["verdict"].isin(FAILING).sum()), "segments": segs})
    return out


def _grid(t: pd.DataFrame):
    rows: dict[str, dict[str, list[str]]] = {}
    cols: list[str] = []
    per_level: dict[tuple[str, str], dict[str, list[str]]] = {}
    # column lists, not Series iteration: a nightly sweep has 60,000 rows
    for op, dt, lv, v in zip(*(t[c].tolist() for c in ("op", "dtype", "level", "verdict"))):
        r, c = grid_key(str(op), str(dt))
        rows.setdefault(r, {}).setdefault(c, []).append(v)
        per_level.setdefault((r, c), {}).setdefault(str(lv), []).append(v)
        if c not in cols:
            cols.append(c)
    order = ["u8", "u32", "i16", "i32", "i64", "f8_e4m3", "f16", "bf16", "f32", "f64"]
    cols.sort(key=lambda c: (order.index(c) if c in order else len(order), c))
    grid = []
    for r in sorted(rows):
        cells = []
        for c in cols:
            vs = rows[r].get(c)
            if not vs:
                cells.append(None)
                continue
            w = worst(vs)
            bad = sum(v in FAILING for v in vs)
            cells.append({"key": f"{r}|{c}", "verdict": w, "n": len(vs), "bad": bad,
                          "color": COLORS.get(w, "#555"),
                          "title": f"{r} × {c}: {len(vs)} cases, worst {w}" + (f", {bad} failing" if bad else ""),
                          "levels": {lv: worst(x) for lv, x in per_level[(r, c)].items()}})
        grid.append({"label": r, "cells": cells})
    return cols, grid


def _failures(t: pd.DataFrame) -> list[dict]:
    f = t[t["verdict"].isin(list(FAILING) + [Verdict.XFAIL, Verdict.XPASS])].copy()
    f["_r"] = f["verdict"].map(rank)
    f = f.sort_values(["_r", "op", "case_id", "level"], kind="stable")
    out = []
    for r in f.head(MAX_FAILURE_ROWS).to_dict(orient="records"):
        w = r.get("worst") if isinstance(r.get("worst"), dict) else None
        item = {"case_id": r["case_id"], "op": r.get("op"), "level": r.get("level"), "verdict": r["verdict"],
                "color": COLORS.get(r["verdict"], "#555"), "raw": r.get("raw_verdict"),
                "reason": r.get("baseline_reason") if isinstance(r.get("baseline_reason"), str) else "",
                "kernel": r.get("kernel") or "", "n_bad": r.get("n_bad"), "numel": r.get("numel"),
                "message": _first_line(r.get("message")), "launch": r.get("launch") or "",
                "repro": f"parity repro {r['case_id']} --level {r.get('level')}", "worst": None,
                "chain_svg": "", "full_message": ""}
        chain = r.get("chain") if isinstance(r.get("chain"), dict) else None
        if chain and chain.get("steps"):
            item["chain_svg"] = chain_svg(chain["steps"], chain.get("culprit"))
            item["full_message"] = str(r.get("message") or "")
        if w:
            item["worst"] = {"index": w.get("index"), "coords": "(" + ", ".join(map(str, w.get("coords") or [])) + ")",
                             "inputs": w.get("inputs") or {}, "expected": w.get("expected"), "got": w.get("got"),
                             "expected_bits": w.get("expected_bits"), "got_bits": w.get("got_bits"),
                             "ulps": _fmt(w.get("ulps")) if w.get("ulps") is not None else "—",
                             "note": w.get("note") or ""}
        out.append(item)
    return out


# ------------------------------------------------------------------------------------- SVG
def bar_svg(items: list[tuple[str, float]], unit: str = "", ref: float | None = None,
            title: str = "", width: int = 760) -> str:
    """A horizontal bar chart as inline SVG; bars beyond 1.1×ref red, below ref/1.1 green."""
    if not items:
        return ""
    row, label_w, top = 18, 260, 24 if title else 6
    plot_w = width - label_w - 80
    vmax = max([v for _, v in items] + ([ref * 1.1] if ref else [])) or 1.0
    h = top + row * len(items) + 24
    e = _html.escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{h}" '
             f'viewBox="0 0 {width} {h}" role="img" aria-label="{e(title)}">']
    if title:
        parts.append(f'<text x="4" y="15" font-weight="bold">{e(title)}</text>')
    for i, (label, v) in enumerate(items):
        y = top + i * row
        w = max(1.0, plot_w * v / vmax)
        color = "#4a7ab5"
        if ref:
            color = "#d62828" if v > ref * 1.1 else "#2e9e4f" if v < ref / 1.1 else "#4a7ab5"
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{e(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{color}">'
                     f'<title>{e(label)}: {v:.4g}{e(unit)}</title></rect>'
                     f'<text x="{label_w + w + 4:.1f}" y="{y + 13}">{v:.3g}{e(unit)}</text>')
    if ref:
        x = label_w + plot_w * ref / vmax
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + row * len(items)}" '
                     f'stroke="#333" stroke-dasharray="4 3"/>'
                     f'<text x="{x:.1f}" y="{top + row * len(items) + 16}" text-anchor="middle">{ref:g}{e(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def chain_svg(steps: list[dict], culprit: int | None = None, width: int = 760) -> str:
    """A chain's drift from the float64 reference per step (log scale, roundoffs at the tensor's
    scale) with each step's budget as a tick: where the error grows, and past which step it
    leaves the budget. The culprit step (first out of its own tolerance) is red."""
    import math
    row, label_w, top = 16, 250, 22
    plot_w = width - label_w - 90
    vals = [v for s in steps for v in (s.get("drift"), s.get("budget")) if isinstance(v, (int, float))]
    vmax = math.log10(1 + max(vals + [1.0]))
    x = lambda v: label_w + plot_w * math.log10(1 + v) / vmax
    h = top + row * len(steps) + 8
    e = _html.escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot chain" width="{width}" height="{h}" '
             f'viewBox="0 0 {width} {h}" role="img" aria-label="drift per step">',
             '<text x="4" y="14" font-weight="bold">drift from the float64 reference per step '
             '(roundoffs, log scale; tick: budget)</text>']
    for i, s in enumerate(steps):
        y = top + i * row
        d, b = s.get("drift"), s.get("budget")
        label = f"{s.get('step')} {s.get('op')} → {s.get('out')}"
        over = d is None or (b is not None and d > b)
        color = "#d62828" if s.get("step") == culprit else "#e07a00" if over else "#4a7ab5"
        dv = d if d is not None else (b or 1.0) * 10
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{e(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{max(1.0, x(dv) - label_w):.1f}" height="{row - 6}" '
                     f'fill="{color}"><title>{e(label)}: drift {d if d is not None else "inf"}, budget {b}</title></rect>'
                     f'<text x="{x(dv) + 4:.1f}" y="{y + 12}">{"inf" if d is None else f"{d:.3g}"}</text>')
        if b is not None:
            parts.append(f'<line x1="{x(b):.1f}" y1="{y + 1}" x2="{x(b):.1f}" y2="{y + row - 1}" stroke="#333" '
                         'stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def _timing(t: pd.DataFrame) -> dict | None:
    if "kernel_ms" not in t or t["kernel_ms"].isna().all():
        return None
    k = t[pd.to_numeric(t["kernel_ms"], errors="coerce") > 0].copy()
    if k.empty:
        return None
    k["kernel_ms"] = pd.to_numeric(k["kernel_ms"])
    table = []
    for (op, lv), g in k.groupby(["op", "level"], sort=True):
        ms = g["kernel_ms"]
        table.append({"op": op, "level": lv, "n": len(g), "median": _fmt(ms.median()), "min": _fmt(ms.min()),
                      "max": _fmt(ms.max())})
    plots, ratios = [], []
    hip = next((l for l in HIP_LEVELS if l in set(k["level"])), None)
    if hip and "cuda" in set(k["level"]):
        a = k[k["level"] == hip].set_index("case_id")["kernel_ms"]
        b = k[k["level"] == "cuda"].set_index("case_id")["kernel_ms"]
        both = a.index.intersection(b.index)
        if len(both):
            r = (a[both] / b[both]).rename("ratio").to_frame()
            r["op"] = k[k["level"] == hip].set_index("case_id").loc[both, "op"]
            for op, g in r.groupby("op", sort=True):
                gm = float(pd.Series(g["ratio"]).apply(math.log).mean())
                ratios.append({"op": op, "n": len(g), "ratio": math.exp(gm)})
            plots.append(bar_svg([(x["op"], x["ratio"]) for x in ratios], "x", 1.0,
                                 f"{hip} / cuda kernel time per op (geometric mean; < 1 is faster)"))
    gbps = None
    if "gbps" in k.columns:
        gbps = pd.to_numeric(k["gbps"], errors="coerce")
    elif "bytes" in k.columns:
        gbps = pd.to_numeric(k["bytes"], errors="coerce") / (k["kernel_ms"] * 1e6)
    if gbps is not None and gbps.notna().any():
        k["_gbps"] = gbps
        items = [(f"{op} [{lv}]", float(g["_gbps"].median()))
                 for (op, lv), g in k.dropna(subset=["_gbps"]).groupby(["op", "level"], sort=True)]
        plots.append(bar_svg(items, " GB/s", None, "effective bandwidth per op (median)"))
    for x in ratios:
        x["ratio"] = f"{x['ratio']:.3f}"
    return {"table": table, "ratios": ratios, "hip": hip, "plots": plots, "cases": len(k)}


def _cases_payload(t: pd.DataFrame, keys: list[str]) -> dict:
    index = {k: i for i, k in enumerate(keys)}
    rows = []
    cols = ("case_id", "op", "dtype", "level", "verdict", "layout", "values", "max_ulp", "message")
    for case_id, op, dtype, level, verdict, layout, values, mu, message in zip(*(t[c].tolist() for c in cols)):
        rk, ck = grid_key(str(op), str(dtype))
        mu = None if mu is None or (isinstance(mu, float) and math.isnan(mu)) else _fmt(float(mu))
        msg = _first_line(message) if verdict != Verdict.PASS else ""
        rows.append([case_id, level, verdict, layout, values, mu, msg, index.get(f"{rk}|{ck}", -1)])
    return {"cells": keys, "cases": rows, "colors": COLORS, "rank": RANK}


_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")   # a code span: its fence, its text, the same fence


def _code_spans(s: str) -> list[tuple[str, bool]]:
    """The markdown code spans of a finding's text (parity.core.text.md_code: fences of one or more
    backticks) as (text, is_code) parts, for the template."""
    out, at = [], 0
    for m in _SPAN.finditer(s):
        if m.start() > at:
            out.append((s[at:m.start()], False))
        code = m.group(2)
        out.append((code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " else code, True))
        at = m.end()
    if at < len(s):
        out.append((s[at:], False))
    return out


def _root_causes(res: Results) -> dict:
    """The parity score (family rows × level columns) and the findings, for the top of the page."""
    f = of(res)
    levels = list(dict.fromkeys(r.level for r in f.scoreboard))
    fams = list(dict.fromkeys(r.family for r in f.scoreboard if r.family != "all")) + (["all"] if levels else [])
    cell = {(r.level, r.family): r for r in f.scoreboard}
    rows = [{"family": fam, "cells": [cell.get((lv, fam)) for lv in levels]} for fam in fams]
    items = [{"i": i, "cause": x.cause, "title": _code_spans(x.title), "detail": _code_spans(x.detail), "kernels": x.kernel_list(12),
              "n_kernels": x.n_kernels, "cases": x.cases, "example": x.example, "repro": x.repro, "blame": x.blame,
              "color": COLORS.get(x.cause, "#555")} for i, x in enumerate(f.findings[:MAX_FINDINGS], 1)]
    return {"score_levels": levels, "score_rows": rows, "findings": items,
            "findings_cut": max(0, len(f.findings) - MAX_FINDINGS), "findings_count": count_text(f.findings)}


def context(res: Results) -> dict:
    t = res.table
    meta = res.meta
    cols, grid = _grid(t)
    keys = [c["key"] for row in grid for c in row["cells"] if c]
    counts = res.counts()
    n_fail = int(t["verdict"].isin(FAILING).sum())
    verdicts = sorted(set(t["verdict"].dropna()) | {Verdict.PASS, Verdict.FAIL}, key=rank)
    payload = json.dumps(_cases_payload(t, keys), separators=(",", ":"), default=str)
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    failures = _failures(t)
    n_listed = int(t["verdict"].isin(list(FAILING) + [Verdict.XFAIL, Verdict.XPASS]).sum())
    return {
        "title": f"parity — {meta.get('sweep', 'results')}", "meta": meta, "total": len(t),
        "passed": counts.get(Verdict.PASS, 0), "n_fail": n_fail, "counts_by_level": res.counts_by_level(),
        "levels": _levels(res),
        "cols": cols, "grid": grid, "verdicts": verdicts, "colors": COLORS,
        "failures": failures, "failures_cut": max(0, n_listed - len(failures)),
        "timing": _timing(t), "golden": meta.get("golden"), "environment": meta.get("environment") or {},
        "baseline": meta.get("baseline"), "payload": payload, "fmt": _fmt, **_root_causes(res), **_outcome(res),
    }


def _outcome(res: Results) -> dict:
    o = outcome_of(res)
    badge, color = BADGES[o.status]
    levels = {r.level for r in of(res).scoreboard}
    return {"outcome": o, "badge": badge, "badge_color": color, "outcome_lines": explain(o),
            "suites_line": _code_spans(suites_line(res.meta)),
            "reference_levels": [lv for lv in levels if role(lv) == REFERENCE]}


def render(res: Results) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["share"] = share
    return env.get_template("scoreboard.html.j2").render(**context(res))


def write(res: Results, folder: str | Path) -> Path:
    path = Path(folder) / "index.html"
    files.write_text(path, render(res), "report")
    return path


def write_extra_reports(res: Results, folder: str | Path) -> list[str]:
    """index.html beside summary.md; returns the GitHub annotations to print (under GitHub Actions)."""
    write(res, folder)
    return list(github.annotations(res)) if github.enabled() else []
