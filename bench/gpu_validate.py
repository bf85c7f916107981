"""Validate parity's timing on an NVIDIA GPU (H100): one script, everything written to OUT.

    python3 bench/gpu_validate.py OUT [--parts abc]      # default: every part

(a) elementwise bandwidth: contiguous f32 unary (exp, neg) and binary (add) at 2^26 elements on
    hip-on-nvidia (bundled suite): achieved GB/s vs a D2D copy of the same bytes measured in this
    run (bar >= 85%), transposed vs contiguous time (bar <= 2x), CuPy reference times beside;
(b) agreement with Nsight Compute: 5 kernels from ~5 us to ~5 ms, parity's cold median (device events
    minus an empty event pair's median; the raw event median beside) vs `ncu --metrics gpu__time_duration.sum`
    (caches flushed, clocks not locked) for the same launch, run by this script in driver mode under
    ncu (bar within 5%);
(c) stability: two back-to-back `parity bench` runs of the f32 exp/neg/add bench cases, per-case
    medians (bar 3%).
Writes OUT/validate.md, OUT/validate.json, OUT/environment.json, the bench run folders and the
ncu log; prints every table. Exit 0 when every bar holds, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PARITY = [sys.executable, "-c", "import parity.cli.bench; from parity.cli.main import main; main()"]
T0 = time.time()
BUDGET_S = 345                       # stop optional work after this (target: < 6 minutes in all)

# (b): kernel, dtype, logical shape, layout (contig | transposed), expected order of magnitude
NCU_SPECS = [
    {"kernel": "uneg_f32", "dtype": "float32", "shape": [1 << 20], "layout": "contig", "about": "~5 us"},
    {"kernel": "uexp_f32", "dtype": "float32", "shape": [1 << 23], "layout": "contig", "about": "~20 us"},
    {"kernel": "badd_f32", "dtype": "float32", "shape": [1 << 24], "layout": "contig", "about": "~60 us"},
    {"kernel": "ucopy_f32", "dtype": "float32", "shape": [8192, 8192], "layout": "transposed", "about": "~0.3 ms"},
    {"kernel": "uexp_f64", "dtype": "float64", "shape": [16384, 32768], "layout": "transposed", "about": "~5 ms"},
]
NCU_WARM, NCU_REPS = 2, 9


def log(*a) -> None:
    print(*a, flush=True)


def md_table(rows: list[dict], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |")
    return "\n".join(out)


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "PASS" if v else "FAIL"
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


# ------------------------------------------------------------------------------ spec launches
def spec_launch(spec: dict, ex):
    """(function, grid, block, args, buffers) for a spec, device buffers made on the GPU."""
    import cupy
    import numpy as np
    err = ex.prepare(spec["kernel"])
    if err is not None:
        raise RuntimeError(f"{spec['kernel']}: {err.status}: {err.message[:300]}")
    func = ex._functions[spec["kernel"]]
    shape = tuple(spec["shape"])
    n = int(np.prod(shape))
    rs = cupy.random.RandomState(1234)
    mk = lambda: rs.uniform(-5.0, 5.0, n).astype(spec["dtype"])
    bufs = {"x": mk(), "out": cupy.empty(n, dtype=spec["dtype"])}
    if spec["kernel"].startswith("b"):
        bufs["y"] = mk()
    if spec["layout"] == "transposed":
        nd = len(shape)
        strides = [1, shape[0]] if nd == 2 else [1]
        info_h = np.array(list(shape) + strides * (2 if "y" in bufs else 1), dtype=np.uint64)
        info = cupy.asarray(info_h)
        bufs["info"] = info
        info_ptr, ndims = int(info.data.ptr), nd
    else:
        info_ptr, ndims = 0, len(shape)
    args = [np.uint64(n), np.uint64(ndims), np.uint64(info_ptr), np.uint64(bufs["x"].data.ptr)]
    if "y" in bufs:
        args.append(np.uint64(bufs["y"].data.ptr))
    args.append(np.uint64(bufs["out"].data.ptr))
    grid = (max(1, -(-n // 1024)), 1, 1)
    cupy.cuda.Device().synchronize()
    return func, grid, (1024, 1, 1), tuple(args), bufs


def ncu_driver(spec_path: str) -> int:
    """Driver mode (run under ncu): exactly the launches of the specs, warm-ups then repetitions."""
    import cupy
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    specs = json.loads(Path(spec_path).read_text())
    ex = HipOnNvidiaExecutor()
    for spec in specs:
        func, grid, block, args, bufs = spec_launch(spec, ex)
        for _ in range(NCU_WARM + NCU_REPS):
            func(grid, block, args)
            cupy.cuda.Device().synchronize()
        del bufs
        cupy.get_default_memory_pool().free_all_blocks()
    return 0


def parse_ncu_csv(text: str) -> list[tuple[str, float]]:
    """(kernel name, duration ms) per profiled launch, in launch order, from ncu --csv output."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    out = []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return out
    head = rows[0]
    scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
             "second": 1e3, "s": 1e3}
    if "Metric Name" in head:                               # details page: one row per metric
        i_name, i_unit, i_val = head.index("Metric Name"), head.index("Metric Unit"), head.index("Metric Value")
        i_k = head.index("Kernel Name")
        for r in rows[1:]:
            if len(r) > i_val and r[i_name] == "gpu__time_duration.sum":
                out.append((r[i_k], float(r[i_val].replace(",", "")) * scale.get(r[i_unit], 1e-6)))
    elif "gpu__time_duration.sum" in head:                  # raw page: a units row after the header
        i_val, i_k = head.index("gpu__time_duration.sum"), head.index("Kernel Name")
        unit = rows[1][i_val] if len(rows) > 1 else "nsecond"
        for r in rows[2:]:
            out.append((r[i_k], float(r[i_val].replace(",", "")) * scale.get(unit, 1e-6)))
    return out


# ------------------------------------------------------------------------------------ parts
# the bench cases of (a) and (c): building and checking each 2^26-element case takes seconds
BENCH_FILTER = ["--ops", "unary.exp,unary.neg,binary.add", "--dtypes", "f32"]


def run_bench(out: Path, name: str, levels: str) -> tuple[Path | None, str]:
    folder = out / name
    cmd = PARITY + ["bench", "--sweep", "bench", *BENCH_FILTER, "--levels", levels, "--out", str(folder), "-q"]
    t = time.time()
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=400)
    (out / f"{name}.log").write_text(f"$ {' '.join(cmd)}\nrc={r.returncode}\n{r.stdout}\n{r.stderr}")
    log(f"[{name}] parity bench --levels {levels}: rc={r.returncode} in {time.time() - t:.0f} s")
    log(r.stdout.strip()[-1500:])
    if r.returncode not in (0, 1):
        log(r.stderr.strip()[-3000:])
    found = sorted(folder.glob("bench-*/results.json"))
    return (found[-1] if found else None), r.stdout


def load_rows(path: Path | None) -> list[dict]:
    if path is None:
        return []
    return json.loads(path.read_text())["results"]


def part_a(rows: list[dict]) -> tuple[list[dict], bool]:
    from parity.timing import CupyClock, measure_copy_gbps
    clock = CupyClock()
    by = {(r["case_id"], r["level"]): r for r in rows}
    table, ok = [], True
    for op in ("unary.exp", "unary.neg", "binary.add"):
        cid = f"{op}/f32/bench-contiguous/normal/s0"
        tid = f"{op}/f32/bench-transposed/normal/s0"
        h, ht, c = by.get((cid, "hip-on-nvidia")), by.get((tid, "hip-on-nvidia")), by.get((cid, "cupy"))
        row = {"op": op, "hip_us": None, "GB/s": None, "copy_GB/s": None, "vs_copy": None, "bar>=85%": None,
               "transposed_us": None, "t/c": None, "bar<=2x": None, "cupy_us": None, "cupy_t_us": None}
        if not h or not h.get("kernel_ms"):
            row["note"] = f"no timing: {h.get('verdict') if h else 'no row'} {(h or {}).get('message', '')[:120]}"
            ok = False
            table.append(row)
            continue
        nbytes = int(h["bytes_moved"])
        copy = measure_copy_gbps(clock, nbytes // 2)               # reads + writes the same bytes
        row.update({"hip_us": h["kernel_ms"] * 1e3, "GB/s": h["gbps"], "copy_GB/s": copy["gbps"],
                    "vs_copy": h["gbps"] / copy["gbps"]})
        row["bar>=85%"] = row["vs_copy"] >= 0.85
        if ht and ht.get("kernel_ms"):
            row["transposed_us"] = ht["kernel_ms"] * 1e3
            row["t/c"] = ht["kernel_ms"] / h["kernel_ms"]
            row["bar<=2x"] = row["t/c"] <= 2.0
        else:
            row["bar<=2x"] = False
        if c and c.get("kernel_ms"):
            row["cupy_us"] = c["kernel_ms"] * 1e3
        ct = by.get((tid, "cupy"))
        if ct and ct.get("kernel_ms"):
            row["cupy_t_us"] = ct["kernel_ms"] * 1e3
        ok &= bool(row["bar>=85%"]) and bool(row["bar<=2x"])
        table.append(row)
    return table, ok


def part_b(out: Path) -> tuple[list[dict], bool]:
    import cupy
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    from parity.timing import CupyClock, TimingOptions, event_overhead, launch_floor, sample, subtract_event_overhead
    ex = HipOnNvidiaExecutor()
    clock = CupyClock()
    overhead, how = event_overhead(clock)
    log(f"[b] event overhead subtracted: {overhead * 1e3:.2f} us ({how})")
    opts = TimingOptions(mode="cold", max_noise=0.01, time_cap_s=3.0)
    table = []
    for spec in NCU_SPECS:
        func, grid, block, args, bufs = spec_launch(spec, ex)
        enqueue = lambda: func(grid, block, args)
        t = subtract_event_overhead(sample(lambda k: clock.measure(enqueue, k, clock.flush), opts), clock)
        table.append({"kernel": spec["kernel"], "shape": "x".join(map(str, spec["shape"])), "layout": spec["layout"],
                      "parity_us": t.median_ms * 1e3, "p10-p90_us": f"{t.p10_ms * 1e3:.2f}-{t.p90_ms * 1e3:.2f}",
                      "n": t.n, "events_us": t.event_ms * 1e3})
        del bufs
        cupy.get_default_memory_pool().free_all_blocks()
    floor = launch_floor(clock)
    ncu = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu" if Path("/usr/local/cuda/bin/ncu").exists() else None)
    if ncu is None:
        for r in table:
            r["note"] = "ncu not found"
        return table, False
    spec_path = out / "ncu_specs.json"
    spec_path.write_text(json.dumps(NCU_SPECS))
    names = "|".join(sorted({s["kernel"] for s in NCU_SPECS}))
    log_path = out / "ncu.csv"
    cmd = [ncu, "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base", "--cache-control", "all",
           "--clock-control", "none", "--kernel-name", f"regex:^({names})$", "--log-file", str(log_path),
           sys.executable, str(Path(__file__).resolve()), "--ncu-driver", str(spec_path)]
    t = time.time()
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    (out / "ncu.log").write_text(f"$ {' '.join(cmd)}\nrc={r.returncode}\n{r.stdout}\n{r.stderr}")
    log(f"[ncu] rc={r.returncode} in {time.time() - t:.0f} s")
    text = (log_path.read_text() if log_path.exists() else "") + "\n" + r.stdout
    launches = parse_ncu_csv(text)
    per = NCU_WARM + NCU_REPS
    ok = len(launches) == per * len(NCU_SPECS)
    if not ok:
        msg = f"ncu returned {len(launches)} launches, expected {per * len(NCU_SPECS)} (see ncu.log: rc={r.returncode}; " \
              f"{(r.stderr or r.stdout).strip()[-300:]})"
        log(msg)
        for row in table:
            row["note"] = msg[:200]
        return table, False
    for i, row in enumerate(table):
        mine = launches[i * per + NCU_WARM:(i + 1) * per]
        ncu_ms = statistics.median(ms for _, ms in mine)
        row["ncu_us"] = ncu_ms * 1e3
        row["diff_%"] = 100.0 * (row["parity_us"] / 1e3 - ncu_ms) / ncu_ms
        row["events_diff_%"] = 100.0 * (row["events_us"] / 1e3 - ncu_ms) / ncu_ms
        row["bar<=5%"] = abs(row["diff_%"]) <= 5.0
        row["launch_floor_us"] = floor[0] * 1e3
        ok &= row["bar<=5%"]
    return table, ok


def part_c(rows1: list[dict], rows2: list[dict]) -> tuple[list[dict], bool]:
    a = {r["case_id"]: r for r in rows1 if r["level"] == "hip-on-nvidia" and r.get("kernel_ms")}
    b = {r["case_id"]: r for r in rows2 if r["level"] == "hip-on-nvidia" and r.get("kernel_ms")}
    table, ok = [], bool(a) and a.keys() == b.keys()
    for cid in a:
        if cid not in b:
            continue
        m1, m2 = a[cid]["kernel_ms"], b[cid]["kernel_ms"]
        d = 100.0 * abs(m2 - m1) / m1
        table.append({"case": cid, "run1_us": m1 * 1e3, "run2_us": m2 * 1e3, "diff_%": d, "bar<=3%": d <= 3.0,
                      "noise1_%": 100 * (a[cid].get("time_noise") or 0), "n1": a[cid].get("samples")})
        ok &= d <= 3.0
    return table, ok


# ------------------------------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--ncu-driver":
        return ncu_driver(argv[1])
    if not argv:
        print(__doc__)
        return 2
    parts = argv[argv.index("--parts") + 1] if "--parts" in argv else "abc"
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    import cupy
    if not cupy.cuda.is_available():
        log("no CUDA device visible to CuPy")
        return 2
    from parity.timing import gpu_environment
    env = gpu_environment()
    (out / "environment.json").write_text(json.dumps(env, indent=1, default=str))
    log(f"device: {env.get('name')} ({env.get('sm_count')} SMs), driver {env.get('driver')}, "
        f"CUDA runtime {env.get('cuda_runtime')}, nvcc {env.get('nvcc')}, CuPy {env.get('cupy')}")
    report, verdicts = {"environment": env}, {}
    md = [f"# parity timing validation on {env.get('name')}\n"]

    def section(key, title, fn, cols):
        t = time.time()
        try:
            table, ok = fn()
        except Exception:
            tb = traceback.format_exc()
            log(tb)
            table, ok = [{"note": tb.strip().splitlines()[-1][:300]}], False
            cols = ["note"]
        report[key] = table
        verdicts[key] = ok
        text = f"## {title}: {'PASS' if ok else 'FAIL'} ({time.time() - t:.0f} s)\n\n" + md_table(table, cols) + "\n"
        md.append(text)
        log("\n" + text)

    res1 = res2 = None
    if "a" in parts or "c" in parts:
        res1, _ = run_bench(out, "bench1", "hip-on-nvidia,cupy")
    if "c" in parts:
        res2, _ = run_bench(out, "bench2", "hip-on-nvidia")
    rows1, rows2 = load_rows(res1), load_rows(res2)
    if rows1:
        bad = [r for r in rows1 if r.get("verdict") != "pass" and r.get("level") == "hip-on-nvidia"]
        md.append(f"bench1: {len(rows1)} rows, {len(bad)} hip-on-nvidia rows not passing "
                  + ", ".join(f"{r['case_id']}={r['verdict']}" for r in bad[:10]) + "\n")
    if "a" in parts:
        section("a", "(a) elementwise bandwidth, f32 at 2^26 (hip-on-nvidia, bundled suite)", lambda: part_a(rows1),
                ["op", "hip_us", "GB/s", "copy_GB/s", "vs_copy", "bar>=85%", "transposed_us", "t/c", "bar<=2x",
                 "cupy_us", "cupy_t_us", "note"])
    if "b" in parts:
        section("b", "(b) parity cold median vs Nsight Compute gpu__time_duration.sum", lambda: part_b(out),
                ["kernel", "shape", "layout", "parity_us", "p10-p90_us", "n", "ncu_us", "diff_%", "bar<=5%",
                 "events_us", "events_diff_%", "launch_floor_us", "note"])
    if "c" in parts:
        section("c", "(c) stability: two back-to-back `parity bench` runs (hip-on-nvidia)", lambda: part_c(rows1, rows2),
                ["case", "run1_us", "run2_us", "diff_%", "bar<=3%", "noise1_%", "n1"])
    if time.time() - T0 < BUDGET_S:                       # the GPU tests of the timing module, if time allows
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/test_timing.py"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
        (out / "pytest_gpu.txt").write_text(r.stdout + r.stderr)
        md.append(f"pytest -m gpu tests/test_timing.py: rc={r.returncode}: {r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ''}\n")
    total = time.time() - T0
    md.append(f"total {total:.0f} s; verdicts: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in verdicts.items()))
    report["verdicts"], report["seconds"] = verdicts, total
    (out / "validate.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "validate.md").write_text("\n".join(md) + "\n")
    log(md[-1])
    return 0 if verdicts and all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
