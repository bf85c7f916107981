"""Real ports on one GPU (issues #20, #30): the same sweep on the bundled suite, on a port whose
in-place path faults in every elementwise kernel and whose fill.hip and ternary.hip use `__half`
without <hip/hip_fp16.h>, and on the broken fixture port; wall times side by side, each run's
headline, number of findings and summary.md.

    python3 bench/real_port.py OUT                    # pr sweep on hip-on-nvidia
    python3 bench/real_port.py OUT --sweep smoke

Runs, in order: the bundled suite twice (the first fills the compile cache), the in-place-fault port
(tests/fixtures/ports/make_inplace_fault.py, missing_include=True) and the broken port
(tests/fixtures/ports/candle-rocm-wip) once each. The comparison is of run time without compiling
(each run's elapsed_s - compile_s: #30's bar, each port at most 1.5x the bundled suite, warm), with
the process wall times beside it. Writes OUT/<name>/ report folders, OUT/<name>.log,
OUT/<name>.summary.md and OUT/real_port.json.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PORTS = REPO / "tests" / "fixtures" / "ports"
PARITY = [sys.executable, "-m", "parity"]


def run(out: Path, name: str, suite: Path, args: list[str]) -> dict:
    folder = out / name
    cmd = PARITY + ["run", *args, "--hip-src", str(suite), "--out", str(folder), "-q"]
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t
    (out / f"{name}.log").write_text(f"$ {' '.join(cmd)}\nrc={r.returncode}\n{r.stdout}\n{r.stderr}")
    found = sorted(folder.glob("*/results.json"))
    meta = json.loads(found[-1].read_text())["meta"] if found else {}
    heads = [ln for ln in r.stdout.splitlines() if ln.startswith(("✅", "❌", "⚠️", "⏹️"))]
    line = heads[-1] if heads else r.stderr.strip()[-400:]
    print(f"[{name}] rc={r.returncode}, {wall:.1f} s wall: {line}", flush=True)
    summary = found[-1].parent / "summary.md" if found else None
    if summary and summary.is_file():             # beside the logs: a report folder sits one level deeper
        (out / f"{name}.summary.md").write_text(summary.read_text())
    text = summary.read_text() if summary and summary.is_file() else ""
    findings = next((ln for ln in text.splitlines() if ln.startswith("### Findings")), "")
    return {"name": name, "rc": r.returncode, "wall_s": wall, "elapsed_s": meta.get("elapsed_s"),
            "headline": line, "findings": findings,
            "compile_s": meta.get("compile_s"),
            "summary_chars": len(summary.read_text()) if summary and summary.is_file() else None,
            "summary": str(summary) if summary else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sweep", default="pr")
    ap.add_argument("--level", default="hip-on-nvidia")
    ap.add_argument("--once", action="store_true",
                    help="the bundled suite once too (its run time without compiling is compared; saves a run)")
    a = ap.parse_args()
    out = a.out
    out.mkdir(parents=True, exist_ok=True)
    args = ["--sweep", a.sweep, "--levels", a.level]
    sys.path.insert(0, str(PORTS))
    from make_inplace_fault import make
    faulting = make(Path(tempfile.mkdtemp()) / "inplace_fault", missing_include=True)
    bundled = REPO / "backends" / "hip"
    runs = ([] if a.once else [run(out, "bundled-cold", bundled, args)]) + [run(out, "bundled", bundled, args)]
    runs += [run(out, name, suite, args) for name, suite in (("inplace-fault", faulting),
                                                             ("broken-port", PORTS / "candle-rocm-wip"))]
    by = {r["name"]: r for r in runs}
    loop = {n: (r["elapsed_s"] or 0) - (r["compile_s"] or 0) for n, r in by.items()}   # running, not compiling
    ratios = {}
    for port in ("inplace-fault", "broken-port"):
        ratios[port] = {"loop": loop[port] / (loop["bundled"] or 1), "wall": by[port]["wall_s"] / by["bundled"]["wall_s"]}
        print(f"{port} / bundled suite: {ratios[port]['loop']:.2f}x run time without compiling "
              f"({loop[port]:.1f} s vs {loop['bundled']:.1f} s), {ratios[port]['wall']:.2f}x process wall "
              f"(the port's compile included); {by[port]['findings']}")
    (out / "real_port.json").write_text(json.dumps({"runs": runs, "ratios": ratios}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
