"""cuBLAS GEMM throughput against the device's dense peak (parity.timing.peak), with its bar.

The speed bar that once sat inside tests/test_matmul_conv_gpu.py (a test asserted it: a slower
driver or a shared GPU failed CI, a faster one hid regressions). Here it is reported: each dtype's
best 4096^3 GEMM with Candle's compute type (f32 accumulation, CUBLAS_COMPUTE_32F) as TFLOP/s and
percent of the peak, against BAR. f16/bf16 run on tensor cores and must reach it; f32 without TF32
is reported, not held to it. Exit 1 when an enforced dtype is below the bar, 2 without a GPU.

    python3 bench/cublas_peak.py                 # f16, bf16, f32
    python3 bench/cublas_peak.py --dtypes f16 --bar 75
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BAR = 70.0                       # percent of the device's dense peak
ENFORCED = ("f16", "bf16")       # f32 with CUBLAS_COMPUTE_32F (no TF32): reported only


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="f16,bf16,f32")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--bar", type=float, default=BAR, help="percent of peak an enforced dtype must reach")
    args = ap.parse_args()
    try:
        import cupy
        if not cupy.cuda.is_available():
            raise RuntimeError("CuPy sees no CUDA device")
    except Exception as e:
        print(f"cublas_peak: needs a CUDA GPU and CuPy ({e})", file=sys.stderr)
        return 2
    from parity.host.blas import CupyBlas
    from parity.timing.peak import measured_peak, peak
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    blas = CupyBlas()
    info = peak(name, lambda dt: measured_peak(blas, dt))
    print(f"{name}: peaks {info['peaks']} ({info['source']}); bar {args.bar:.0f}% for {', '.join(ENFORCED)}")
    n, below = args.size, []
    for dt in args.dtypes.split(","):
        r = max((blas.bench(dt, n, n, n, iters=30) for _ in range(2)), key=lambda x: x["tflops"])
        pct = 100.0 * r["tflops"] / info["peaks"][dt]
        held = dt in ENFORCED
        verdict = ("ok" if pct >= args.bar else "BELOW BAR") if held else "reported"
        print(f"{dt:5s} {n}^3: {r['tflops']:7.1f} TFLOP/s = {pct:5.1f}% of {info['peaks'][dt]} "
              f"({r['compute_type']}, {r['call']}, {r['ms']:.3f} ms): {verdict}")
        if held and pct < args.bar:
            below.append(dt)
    if below:
        print(f"below the {args.bar:.0f}% bar: {', '.join(below)}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
