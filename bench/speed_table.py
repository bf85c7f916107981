"""suite_speed's table: rows of measured times -> markdown, with each row's launch ceiling and, per
HIP suite, how its nn rows stand against the bar (pure: no GPU, so it renders a saved run too).

    python3 bench/speed_table.py OUT/suite_speed.json [OUT_DIR]   # re-render a saved run

A row's ceiling is the best % of copy its launch is known to allow: a kernel moves its bytes no
faster than a device-to-device copy of them, runs no shorter than an empty kernel on its grid and
block (the launch floor), and the fastest plain copy of its bytes on that grid and block
(bench/launch_copy.py, "launch copy") is what the launch's shape leaves of the copy's speed. So
ceiling = copy / max(copy, floor, launch), launch being the launch copy's time or, where some
kernel of the row was faster, that kernel's (what was reached under the launch is allowed by it).
Issue #34's bar is 80% of copy; where the ceiling itself is under 80%, the launch forbids the bar and
the row counts as launch-bound (its kernel's share of the ceiling is what is left to gain).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

BAR_PCT = 80.0


MEASURES = ("copy_us", "floor_us", "launch_copy_us")


def ceiling_pct(rec: dict) -> float | None:
    copy, floor = rec.get("copy_us"), rec.get("floor_us")
    if not copy or floor is None:
        return None
    launch = rec.get("launch_copy_us")
    if launch:                              # a kernel that beat the launch copy shows the launch allows more
        kernels = [v for k, v in rec.items() if k.endswith("_us") and k not in MEASURES and v]
        launch = min([launch, *kernels])
    return round(100 * copy / max(copy, floor, launch or 0), 1)


def standing(rec: dict, suite: str) -> str | None:
    """'bar' (>= 80% of copy), 'launch-bound' (the launch's ceiling is under 80%) or 'below'."""
    pct, ceil = rec.get(f"{suite}_pct_copy"), ceiling_pct(rec)
    if pct is None or ceil is None:
        return None
    if pct >= BAR_PCT:
        return "bar"
    return "launch-bound" if ceil < BAR_PCT else "below"


def bar_summary(rows: list[dict], suites: list[str], family: str = "nn") -> list[str]:
    """One line per suite: its `family` rows at the bar, launch-bound (with the worst share of its
    ceiling) and below the bar (each named with its % of copy)."""
    lines = []
    fam = [r for r in rows if r.get("family") == family]
    for s in suites:
        by: dict[str, list[dict]] = {"bar": [], "launch-bound": [], "below": []}
        for r in fam:
            k = standing(r, s)
            if k:
                by[k].append(r)
        if not any(by.values()):
            continue
        bound = by["launch-bound"]
        share = min((r[f"{s}_pct_copy"] / ceiling_pct(r) for r in bound), default=None)
        below = ", ".join(f"{r['case']} {r[f'{s}_pct_copy']}%" for r in by["below"])
        lines.append(f"- {s}: {len(by['bar'])} of {len(fam)} {family} rows at >= {BAR_PCT:.0f}% of copy; "
                     f"{len(bound)} launch-bound (ceiling under {BAR_PCT:.0f}%"
                     + (f"; the slowest at {100 * share:.0f}% of its ceiling)" if share is not None else ")")
                     + f"; {len(by['below'])} below the bar" + (f": {below}" if below else ""))
    return lines


def markdown(rows: list[dict], meta: dict) -> str:
    """The table (suites, then variants, as columns) with the notes and the bar summary."""
    names = list(meta["suites"]) + list(meta.get("variants", {}))
    check = any(r.get("check") for r in rows)
    cols = (["family", "case", "MB", "copy us", "floor us", "launch copy us", "ceiling %", "cuda us", "cuda % copy"]
            + [c for n in names for c in (f"{n} us", f"{n} % copy", f"{n}/cuda")] + (["check"] if check else []))
    keys = {"copy us": "copy_us", "floor us": "floor_us", "launch copy us": "launch_copy_us", "cuda us": "cuda_us",
            "cuda % copy": "cuda_pct_copy"}
    for n in names:
        keys.update({f"{n} us": f"{n}_us", f"{n} % copy": f"{n}_pct_copy", f"{n}/cuda": f"{n}_vs_cuda"})

    def cell(rec: dict, c: str) -> str:
        if c == "MB":
            return f"{rec['bytes'] / 1e6:.1f}" if rec.get("bytes") else ""
        if c == "ceiling %":
            v = ceiling_pct(rec)
            return "" if v is None else str(v)
        if c == "check":
            ch = rec.get("check")
            return "" if not ch else ", ".join(f"{k}: {v}" for k, v in ch.items())
        v = rec.get(keys.get(c, c), "")
        return "" if v is None else str(v)
    table = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    table += ["| " + " | ".join(cell(r, c) for c in cols) + " |" for r in rows]
    notes = [f"- {r['case']}: " + "; ".join(r["notes"]) for r in rows if r.get("notes")]
    head = (f"device: {meta['device']}; hip-on-nvidia wave {meta['wave']}; HIP suites: "
            + ", ".join(f"{n} = {d}" for n, d in {**meta['suites'], **meta.get('variants', {})}.items())
            + f"; cuda = {meta.get('cuda_src') if meta.get('cuda') else '(not found)'}; cold L2; times in "
              "microseconds (median of event-timed samples); % copy = a device-to-device copy of the same "
              "bytes / kernel time; floor = an empty kernel on the launch's grid and block; launch copy = the "
              "fastest plain copy of the bytes on that grid and block (bench/launch_copy.py); ceiling = the "
              "best % of copy the launch is known to allow, copy / max(copy, floor, min(launch copy, "
              "fastest kernel))")
    summary = bar_summary(rows, names)
    return (head + "\n\n" + "\n".join(table)
            + ("\n\nAgainst the bar (nn rows):\n" + "\n".join(summary) if summary else "")
            + ("\n\nNotes:\n" + "\n".join(notes) if notes else "") + "\n")


def write(out_dir: str | Path, rows: list[dict], meta: dict) -> None:
    """suite_speed.md / .json (written after every row: a run cut short keeps them)."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    Path(out_dir, "suite_speed.md").write_text(markdown(rows, meta))
    Path(out_dir, "suite_speed.json").write_text(json.dumps({**meta, "rows": rows}, indent=1))


def load(path: str | Path) -> tuple[list[dict], dict]:
    """A saved suite_speed.json as (rows, meta); runs saved before meta kept `cuda` and `variants`
    infer them from the rows."""
    d = json.loads(Path(path).read_text())
    rows = d.pop("rows")
    d.setdefault("variants", {})
    d.setdefault("cuda", any(r.get("cuda_us") for r in rows))
    return rows, d


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    rows_, meta_ = load(sys.argv[1])
    out = sys.argv[2] if len(sys.argv) == 3 else str(Path(sys.argv[1]).parent)
    write(out, rows_, meta_)
    print(Path(out, "suite_speed.md").read_text())
