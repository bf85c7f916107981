"""Cost of the wave64 emulation (issue #16: the `pr` sweep at wave 64 within 1.5x of wave 32 on
the same GPU), and the verdicts of both modes compared case for case.

    python3 bench/wave_cost.py OUT                          # pr sweep, hip-on-nvidia, bundled suite
    python3 bench/wave_cost.py OUT --sweep pr --ops 'reduce.*,nn.*' --time

Runs wave 32 then wave 64 once each to fill the compile cache (not compared), then both again
with a warm cache; the ratio is the second wave-64 wall time over the second wave-32 one. With
--time, the median per-case kernel_ms ratio (wave 64 / wave 32) of the timed cases is reported
too (the bundled suite has no wave-wide operation, so kernels should be the same speed; a port
that shuffles pays one shared-memory exchange and barrier per 4-byte word). Writes
OUT/wave_cost.json, prints a table; exit 0 when the ratio is <= --max-ratio (1.5) and every case has
the same verdict at both wave sizes, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

PARITY = [sys.executable, "-m", "parity"]


def run(out: Path, name: str, wave: str, args: list[str]) -> dict:
    folder = out / name
    cmd = PARITY + ["run", *args, "--levels", "hip-on-nvidia", "--wave", wave, "--out", str(folder), "-q"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    found = sorted(folder.glob("*/results.json"))
    if p.returncode not in (0, 1) or not found:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    res = json.loads(found[-1].read_text())
    rows = {r["case_id"]: r for r in res["results"] if str(r.get("level", "")).startswith("hip-on-nvidia")}
    counts: dict[str, int] = {}
    for r in rows.values():
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return {"name": name, "wave": wave, "wall_s": wall, "counts": counts, "rows": rows, "exit": p.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--sweep", default="pr")
    ap.add_argument("--ops")
    ap.add_argument("--hip-src")
    ap.add_argument("--time", action="store_true", help="also time every passing case (--time)")
    ap.add_argument("--max-ratio", type=float, default=1.5)
    a = ap.parse_args()
    args = ["--sweep", a.sweep] + (["--ops", a.ops] if a.ops else []) + (["--hip-src", a.hip_src] if a.hip_src else [])
    args += ["--time"] if a.time else []
    a.out.mkdir(parents=True, exist_ok=True)
    runs = [run(a.out, "cold-w32", "32", args), run(a.out, "cold-w64", "64", args),
            run(a.out, "w32", "32", args), run(a.out, "w64", "64", args)]
    w32, w64 = runs[2], runs[3]
    ratio = w64["wall_s"] / w32["wall_s"] if w32["wall_s"] else float("nan")
    differ = sorted(c for c in set(w32["rows"]) | set(w64["rows"])
                    if (w32["rows"].get(c) or {}).get("verdict") != (w64["rows"].get(c) or {}).get("verdict"))
    kr = []
    for c, r in w64["rows"].items():
        q = w32["rows"].get(c) or {}
        if isinstance(r.get("kernel_ms"), (int, float)) and isinstance(q.get("kernel_ms"), (int, float)) and q["kernel_ms"] > 0:
            kr.append(r["kernel_ms"] / q["kernel_ms"])
    summary = {"sweep": a.sweep, "ops": a.ops, "wall_s": {r["name"]: round(r["wall_s"], 2) for r in runs},
               "counts": {r["name"]: r["counts"] for r in runs}, "ratio_wall": ratio,
               "kernel_ms_ratio_median": statistics.median(kr) if kr else None, "timed_cases": len(kr),
               "verdicts_differ": differ[:200], "n_verdicts_differ": len(differ)}
    (a.out / "wave_cost.json").write_text(json.dumps(summary, indent=1))
    print(f"{'run':<10} {'wall s':>8}  verdicts")
    for r in runs:
        print(f"{r['name']:<10} {r['wall_s']:>8.1f}  {r['counts']}")
    print(f"wave64 / wave32 wall (warm): {ratio:.2f}x (limit {a.max_ratio}x)"
          + (f"; kernel_ms median ratio {summary['kernel_ms_ratio_median']:.3f} over {len(kr)} cases" if kr else ""))
    print(f"cases whose verdict differs between the wave sizes: {len(differ)}" + (f" (first: {differ[:5]})" if differ else ""))
    return 0 if ratio <= a.max_ratio and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
