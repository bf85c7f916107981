"""Speed of the bundled HIP suite on an NVIDIA GPU (hip-on-nvidia), side by side in one process:

* contiguous f32 unary (exp, neg) and binary (add) at 2^26 elements: GB/s vs a device-to-device
  copy of the same bytes (bar: >= 85%), transposed (strided) time vs contiguous (bar: <= 2x);
* fast_sum f32 over the last dim of 4096x16384 vs copy bandwidth (bar: >= 80%);
* softmax / rmsnorm f16 and f32 at 4096x4096;
each beside the CuPy equivalent. Launches use Candle's geometry and argument packing.
Timed with parity's CUDA clock (parity.timing.CupyClock) on raw device events for the kernels and
the copy alike (ratios of like with like): L2 flushed by reading 2x L2 before every sample, samples
queued behind a hold kernel, sampled until the spread is under 1% (median reported).

    python3 bench/kernel_speed.py [OUT_DIR]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import gpu_clock, timed  # noqa: E402
from parity.executors.hip_nvidia import HipOnNvidiaExecutor  # noqa: E402

N = 1 << 26
CLOCK = gpu_clock()


def main(out_dir: str | None) -> None:
    ex = HipOnNvidiaExecutor()
    ex.precompile(ex.sources_for(["uexp_f32", "badd_f32", "fast_sum_f32", "softmax_f32"]))
    def fn(name):
        f, err = ex._function(name)
        if err is not None:
            raise RuntimeError(f"{name}: {err.status} {err.message[:300]}")
        return f
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []

    def row(name, ms, nbytes, ref_ms=None, copy_ms=None, note=""):
        r = {"case": name, "ms": round(ms, 4), "GB/s": round(nbytes / ms / 1e6, 1)}
        if copy_ms:
            r["copy GB/s"] = round(nbytes / copy_ms / 1e6, 1)
            r["% of copy"] = round(100 * copy_ms / ms, 1)
        if ref_ms:
            r["cupy ms"] = round(ref_ms, 4)
            r["hip/cupy"] = round(ms / ref_ms, 3)
        r["note"] = note
        rows.append(r)
        print(r, flush=True)

    def copy_ms(nbytes):
        a = cp.empty(nbytes // 2, dtype=cp.uint8)
        b = cp.empty_like(a)
        return timed(lambda: CLOCK.copy(b.data.ptr, a.data.ptr, a.nbytes))

    grid, block = ((N + 1023) // 1024,), (1024,)
    x = cp.random.uniform(-4, 4, N, dtype=cp.float32)
    y = cp.random.uniform(-4, 4, N, dtype=cp.float32)
    o = cp.empty_like(x)
    u64 = np.uint64
    # transposed 8192x8192 views: dims + strides (+ rhs strides for binary)
    info_t1 = cp.asarray(np.array([8192, 8192, 1, 8192], dtype=np.uint64))
    info_t2 = cp.asarray(np.array([8192, 8192, 1, 8192, 1, 8192], dtype=np.uint64))
    c2 = copy_ms(2 * 4 * N)
    c3 = copy_ms(3 * 4 * N)
    for op, ref in (("uexp_f32", lambda: cp.exp(x, out=o)), ("uneg_f32", lambda: cp.negative(x, out=o))):
        k = fn(op)
        cont = timed(lambda: k(grid, block, (u64(N), u64(2), u64(0), x, o)))
        row(f"{op} contiguous 2^26", cont, 2 * 4 * N, timed(ref), c2)
        tr = timed(lambda: k(grid, block, (u64(N), u64(2), info_t1, x, o)))
        xt = x.reshape(8192, 8192).T
        ref_t = timed(lambda: (cp.exp if op == "uexp_f32" else cp.negative)(xt, out=o.reshape(8192, 8192)))
        row(f"{op} transposed 8192x8192", tr, 2 * 4 * N, ref_t, c2, note=f"{tr / cont:.2f}x contiguous")
    k = fn("badd_f32")
    cont = timed(lambda: k(grid, block, (u64(N), u64(2), u64(0), x, y, o)))
    row("badd_f32 contiguous 2^26", cont, 3 * 4 * N, timed(lambda: cp.add(x, y, out=o)), c3)
    tr = timed(lambda: k(grid, block, (u64(N), u64(2), info_t2, x, y, o)))
    xt, yt = x.reshape(8192, 8192).T, y.reshape(8192, 8192).T
    row("badd_f32 transposed 8192x8192", tr, 3 * 4 * N, timed(lambda: cp.add(xt, yt, out=o.reshape(8192, 8192))),
        c3, note=f"{tr / cont:.2f}x contiguous")

    # fast_sum over the last dim of 4096 x 16384: grid 4096, block 1024, info = dims + strides
    rows_, cols = 4096, 16384
    src = cp.random.uniform(-1, 1, rows_ * cols, dtype=cp.float32)
    dst = cp.empty(rows_, dtype=cp.float32)
    info = cp.asarray(np.array([rows_, cols, cols, 1], dtype=np.uint64))
    k = fn("fast_sum_f32")
    ms = timed(lambda: k((rows_,), (1024,), (u64(rows_ * cols), u64(cols), u64(2), info, src, dst)))
    got, want = dst.get(), src.reshape(rows_, cols).sum(axis=1, dtype=cp.float64).get()
    err = float(np.max(np.abs(got - want)))
    row("fast_sum_f32 4096x16384 (last dim)", ms, 4 * rows_ * cols + 4 * rows_,
        timed(lambda: src.reshape(rows_, cols).sum(axis=1, out=dst)), copy_ms(4 * rows_ * cols),
        note=f"max |err| vs f64 {err:.2e}")

    for dt, name in ((cp.float16, "f16"), (cp.float32, "f32")):
        a = cp.random.uniform(-3, 3, 4096 * 4096).astype(dt)
        b = cp.empty_like(a)
        alpha = cp.ones(4096, dtype=dt)
        k = fn(f"softmax_{name}")
        ms = timed(lambda: k((4096,), (1, 32, 1), (a, b, np.int32(4096))))
        a2 = a.reshape(4096, 4096)

        def sm_ref():
            m = a2.max(axis=1, keepdims=True)
            e = cp.exp(a2 - m)
            return e / e.sum(axis=1, keepdims=True)
        row(f"softmax_{name} 4096x4096", ms, 2 * a.nbytes, timed(sm_ref), copy_ms(2 * a.nbytes))
        k = fn(f"rmsnorm_{name}")
        ms = timed(lambda: k((4096,), (1024,), (a, b, alpha, np.int32(4096), np.int32(1024), np.float32(1e-5))))

        def rms_ref():
            f = a2.astype(cp.float32)
            return (f * cp.reciprocal(cp.sqrt((f * f).mean(axis=1, keepdims=True) + 1e-5))).astype(dt) * alpha
        row(f"rmsnorm_{name} 4096x4096", ms, 2 * a.nbytes + alpha.nbytes, timed(rms_ref), copy_ms(2 * a.nbytes))

    table = ["| case | ms | GB/s | copy GB/s | % of copy | cupy ms | hip/cupy | note |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append("| " + " | ".join(str(r.get(c, "")) for c in
                                       ("case", "ms", "GB/s", "copy GB/s", "% of copy", "cupy ms", "hip/cupy", "note")) + " |")
    text = f"device: {dev}\n\n" + "\n".join(table)
    print(text)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        Path(out_dir, "kernel_speed.md").write_text(text + "\n")
        Path(out_dir, "kernel_speed.json").write_text(json.dumps({"device": dev, "rows": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
