"""Scale-out on a machine with several GPUs: the same sweep with one GPU worker and with one worker
per GPU (`--gpus all`), process wall times, the speed-up, and the two results compared case for case.

    python3 bench/scale_out.py OUT                      # nightly elementwise sweep on hip-on-nvidia
    python3 bench/scale_out.py OUT --sweep pr --ops 'unary.*'

Runs, in order: one GPU (also fills the compile cache: its wall time is reported but not compared),
all GPUs, one GPU again. The speed-up is the second one-GPU run over the all-GPU run, both with a
warm cache. Rows are keyed by (case_id, level) and must agree in every column except the ones that
are measured, not computed (wall and kernel times, the device). Writes OUT/scale_out.json and
prints a table; exit 0 when the rows agree, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARITY = [sys.executable, "-m", "parity"]
ELEMENTWISE = "unary.*,binary.*,cmp.*,affine*,cast*,where*,copy.*,fill.*"
MEASURED = {"wall_ms", "kernel_ms", "device"}      # differ between any two runs; everything else must not


def run(out: Path, name: str, gpus: str, args: list[str]) -> dict:
    folder = out / name
    cmd = PARITY + ["run", *args, "--gpus", gpus, "--out", str(folder), "-q"]
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t
    (out / f"{name}.log").write_text(f"$ {' '.join(cmd)}\nrc={r.returncode}\n{r.stdout}\n{r.stderr}")
    found = sorted(folder.glob("*/results.json"))
    print(f"[{name}] --gpus {gpus}: rc={r.returncode}, {wall:.1f} s: {r.stdout.strip().splitlines()[0] if r.stdout.strip() else r.stderr[-500:]}",
          flush=True)
    return {"name": name, "gpus": gpus, "rc": r.returncode, "wall_s": wall, "results": found[-1] if found else None}


def rows(path: Path | None) -> dict[tuple[str, str], dict]:
    if path is None:
        return {}
    return {(r["case_id"], r["level"]): r for r in json.loads(path.read_text())["results"]}


def differences(a: dict, b: dict) -> list[str]:
    """Case keys and columns where two runs disagree (missing rows included)."""
    out = [f"{k}: only in one run" for k in sorted(a.keys() ^ b.keys())]
    for k in sorted(a.keys() & b.keys()):
        ra, rb = a[k], b[k]
        cols = [c for c in ra.keys() | rb.keys() if c not in MEASURED and json.dumps(ra.get(c), sort_keys=True, default=str)
                != json.dumps(rb.get(c), sort_keys=True, default=str)]
        if cols:
            out.append(f"{k}: {', '.join(sorted(cols))}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sweep", default="nightly")
    ap.add_argument("--ops", default=ELEMENTWISE)
    ap.add_argument("--levels", default="hip-on-nvidia")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    args = ["--sweep", a.sweep, "--ops", a.ops, "--levels", a.levels]
    first = run(a.out, "one-gpu-cold", "1", args)
    multi = run(a.out, "all-gpus", "all", args)
    one = run(a.out, "one-gpu", "1", args)
    r_one, r_multi, r_first = rows(one["results"]), rows(multi["results"]), rows(first["results"])
    diff = differences(r_one, r_multi) + differences(r_one, r_first)
    meta = json.loads(multi["results"].read_text())["meta"] if multi["results"] else {}
    report = {"rows": len(r_one), "gpus": meta.get("gpus"), "one_gpu_cold_s": first["wall_s"],
              "one_gpu_s": one["wall_s"], "all_gpus_s": multi["wall_s"],
              "speed_up": one["wall_s"] / multi["wall_s"] if multi["wall_s"] else None,
              "identical": bool(r_one) and not diff, "differences": diff[:50],
              "verdicts": {v: sum(1 for r in r_one.values() if r["verdict"] == v)
                           for v in sorted({r["verdict"] for r in r_one.values()})}}
    (a.out / "scale_out.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: v for k, v in report.items() if k != "differences"}, default=str))
    for d in diff[:20]:
        print("  differs:", d)
    for name, rs in (("one-gpu", r_one), ("all-gpus", r_multi)):
        bad = next((r for r in rs.values() if r["verdict"] != "pass"), None)
        if bad:
            print(f"  {name}: first case not passing: {bad['case_id']} {bad['verdict']}: {str(bad.get('message'))[:800]}")
    return 0 if report["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
