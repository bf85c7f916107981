"""Real ports on one GPU (issue #20's evidence): the same sweep on the bundled suite, on a port whose
in-place path faults in every elementwise kernel, and on the broken fixture port; wall times side
by side and each run's summary.md.

    python3 bench/real_port.py OUT                    # pr sweep on hip-on-nvidia
    python3 bench/real_port.py OUT --sweep smoke

Runs, in order: the bundled suite twice (the first fills the compile cache), the in-place-fault
port (tests/fixtures/ports/make_inplace_fault.py) twice, the broken port
(tests/fixtures/ports/candle-rocm-wip) once. The comparison uses the second run of each of the first
two: warm caches, so it measures running, not compiling. Writes OUT/<name>/ report folders,
OUT/<name>.log, OUT/<name>.summary.md and OUT/real_port.json; prints a table.
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
    line = r.stdout.strip().splitlines()[-2] if r.stdout.strip().count("\n") else r.stdout.strip() or r.stderr[-400:]
    print(f"[{name}] rc={r.returncode}, {wall:.1f} s wall: {line}", flush=True)
    summary = found[-1].parent / "summary.md" if found else None
    if summary and summary.is_file():             # beside the logs: a report folder sits one level deeper
        (out / f"{name}.summary.md").write_text(summary.read_text())
    return {"name": name, "rc": r.returncode, "wall_s": wall, "elapsed_s": meta.get("elapsed_s"),
            "compile_s": meta.get("compile_s"),
            "summary_chars": len(summary.read_text()) if summary and summary.is_file() else None,
            "summary": str(summary) if summary else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sweep", default="pr")
    ap.add_argument("--level", default="hip-on-nvidia")
    a = ap.parse_args()
    out = a.out
    out.mkdir(parents=True, exist_ok=True)
    args = ["--sweep", a.sweep, "--levels", a.level]
    sys.path.insert(0, str(PORTS))
    from make_inplace_fault import make
    faulting = make(Path(tempfile.mkdtemp()) / "inplace_fault")
    bundled = REPO / "backends" / "hip"
    runs = [run(out, "bundled-cold", bundled, args), run(out, "bundled", bundled, args),
            run(out, "inplace-fault-cold", faulting, args), run(out, "inplace-fault", faulting, args),
            run(out, "broken-port", PORTS / "candle-rocm-wip", args)]
    by = {r["name"]: r for r in runs}
    ratio = by["inplace-fault"]["wall_s"] / by["bundled"]["wall_s"]
    loop = (by["inplace-fault"]["elapsed_s"] or 0) / (by["bundled"]["elapsed_s"] or 1)
    print(f"in-place-fault port / bundled suite, warm: {ratio:.2f}x process wall, {loop:.2f}x run loop")
    (out / "real_port.json").write_text(json.dumps({"runs": runs, "ratio_wall": ratio, "ratio_loop": loop}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
