"""Benchmark of the harness itself: cases/s for a sweep, per-case time split into
generate (build + reference) / launch (executor.run: upload, kernel, download, guard checks) /
compare, and the per-case overhead outside kernel time (target < 2 ms median on an H100).
Also the kernel timing the other bench scripts share (gpu_clock, timed, copy_ms, suite_kernel).

    python3 bench/harness.py                      # cpu level, pr sweep (engine parts only)
    python3 bench/harness.py --level hip-on-nvidia --sweep pr --limit 2000   # GPU end to end
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from parity.run.cases import Filters, load_sweep  # noqa: E402
from parity.core.compare import compare  # noqa: E402
from parity.run.engine import prepare_case, run_case  # noqa: E402
from parity.ops.abi import extract  # noqa: E402


def measure(level: str, sweep: str, ops: str | None, limit: int | None, isolate: bool) -> dict:
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    cases = [c for c in load_sweep(sweep, Filters(ops=ops.split(",") if ops else None))
             if c.catalog_op.spec.elementwise]                     # elementwise: the phases are separable
    if limit:
        cases = cases[:limit]
    lv = make(level, DEFAULT_HIP_SRC, None, isolate=isolate)
    if not lv.availability.available:
        raise SystemExit(f"level {level} unavailable: {lv.availability.reason}")
    ex = lv.executor
    gen, launch, cmp_, kern, total = [], [], [], [], []
    for c in cases[:3]:                                       # warm: compile, module load, worker start
        run_case(c, ex)
    t_all = time.perf_counter()
    for c in cases:
        t0 = time.perf_counter()
        p = prepare_case(c)
        t1 = time.perf_counter()
        res = ex.run(p.launch)
        t2 = time.perf_counter()
        if res.status == "ok":
            op = p.built.op
            got = extract(op, res.outputs["out"], p.expected.shape)
            compare(p.expected, got, op.out_dtype(c.dtype), op.tolerance,
                    p.built.operands.logical if op.out_mode == "dense" else None, p.built.operands.dtypes)
        t3 = time.perf_counter()
        gen.append(t1 - t0), launch.append(t2 - t1), cmp_.append(t3 - t2), total.append(t3 - t0)
        kern.append((res.time_ms or 0.0) / 1e3)
    wall = time.perf_counter() - t_all
    ex.close()
    ms = lambda xs: 1e3 * statistics.median(xs) if xs else float("nan")
    overhead = [t - k for t, k in zip(total, kern)]
    return {"level": level, "device": lv.availability.device, "cases": len(cases), "wall_s": wall,
            "cases_per_s": len(cases) / wall if wall else float("nan"),
            "generate_ms": ms(gen), "launch_ms": ms(launch), "compare_ms": ms(cmp_), "total_ms": ms(total),
            "overhead_ms": ms(overhead), "p90_total_ms": 1e3 * sorted(total)[int(0.9 * (len(total) - 1))]}


# --------------------------------------------------------------- kernel timing shared by the bench scripts
# (kernel_speed.py, quant_speed.py, launch_floor.py, suite_speed.py): parity's CUDA clock on raw device
# events, L2 flushed by reading 2x L2 before every sample, samples queued behind a hold kernel, sampled
# until the spread is under 1% (median). Kernels, copies and empty launches are timed alike, so their
# ratios compare like with like.
_CLOCK = None


def gpu_clock():
    """This process's CUDA clock (parity.timing.CupyClock), made on first use."""
    global _CLOCK
    if _CLOCK is None:
        from parity.timing import CupyClock
        _CLOCK = CupyClock()
    return _CLOCK


def cold_options(time_cap_s: float = 2.0, min_samples: int = 20, max_noise: float = 0.01):
    from parity.timing import TimingOptions
    return TimingOptions(mode="cold", max_noise=max_noise, min_samples=min_samples, time_cap_s=time_cap_s)


def timed(fn, opts=None, before=None) -> float:
    """Median milliseconds of fn() with the L2 flushed (after before(), if given) before each sample."""
    from parity.timing import sample
    clock = gpu_clock()

    def prep():
        if before is not None:
            before()
        clock.flush()
    return sample(lambda k: clock.measure(fn, k, prep), opts or cold_options()).median_ms


_COPIES: dict[int, float] = {}


def copy_ms(nbytes: int, opts=None) -> float:
    """A device-to-device copy moving nbytes (nbytes/2 read + nbytes/2 written), timed as timed() does."""
    if nbytes not in _COPIES:
        import cupy as cp
        a = cp.empty(max(nbytes // 2, 1), dtype=cp.uint8)
        b = cp.empty_like(a)
        clock = gpu_clock()
        _COPIES[nbytes] = timed(lambda: clock.copy(b.data.ptr, a.data.ptr, a.nbytes), opts)
        del a, b
    return _COPIES[nbytes]


def suite_kernel(ex, name: str):
    """The loaded function `name` of an executor's suite (compiled through parity's cache)."""
    ex.precompile(ex.sources_for([name]))
    f, err = ex._function(name)
    if err is not None:
        raise RuntimeError(f"{ex.level}: {name}: {err.status} {err.message[:300]}")
    return f


def table(rows: list[dict]) -> str:
    cols = ["level", "cases", "cases_per_s", "generate_ms", "launch_ms", "compare_ms", "total_ms", "p90_total_ms",
            "overhead_ms"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--level", default="cpu", help="cpu | hip-on-nvidia | cupy | ... (comma separated)")
    ap.add_argument("--sweep", default="pr")
    ap.add_argument("--ops", default=None)
    ap.add_argument("--limit", type=int, default=None, help="at most this many cases")
    ap.add_argument("--in-process", action="store_true", help="GPU levels without the worker process")
    a = ap.parse_args(argv)
    rows = [measure(lv, a.sweep, a.ops, a.limit, not a.in_process) for lv in a.level.split(",")]
    print(table(rows))
    print("per-case medians in ms; overhead = total - kernel time (target < 2 ms median on an H100, hip-on-nvidia)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
