"""Speed of GGUF dequantize: the bundled HIP suite (backends/hip/quantized.hip on hip-on-nvidia, wave 64
as the default level compiles it) beside Candle's own quantized.cu (the `cuda` level), side by side
in one process, on a 4096 x 14336 q4_K matrix (an LLM's FFN weight) to f32 and to f16.

Both get Candle's launch (grid n/256, block 32: `candle-core/src/quantized/cuda.rs`), the same
random q4_K blocks, and parity's CUDA clock (parity.timing.CupyClock: L2 flushed before every
sample, median of samples until the spread is under 1%). Reported: ms, GB/s (q4_K bytes read +
output bytes written), % of a device-to-device copy of the same number of bytes, and the HIP/CUDA
time ratio. Before timing, each output is checked bit for bit against gguf's NumPy dequantizer on
the first 4096 super-blocks and the two suites' outputs against each other on all of them.
Then mmvq at batch 1 on the same matrix (nrows 4096, ncols 14336): y (f32) quantized to q8_1 by each
suite's own quantize_q8_1 (grid kx_padded/256 x 1, block 256, rows padded to 512), then
mul_mat_vec_q4_K_q8_1_cuda1 (grid nrows, block 32 x 4), only the latter timed; bytes = q4_K weights +
q8_1 activations + f32 output; the two suites' outputs compared (largest difference relative to the
largest output: float sums in different orders).

    python3 bench/quant_speed.py OUT_DIR [--cuda-src .candle/src] [--wave 64|32] [--hip-src DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import gpu_clock, suite_kernel as kernel, timed  # noqa: E402,F401 (launch_floor.py imports them here)
from parity.executors.cuda import CudaExecutor
from parity.executors.hip_nvidia import HipOnNvidiaExecutor  # noqa: E402
from parity.ops.quantized.blocks import FORMATS, dequantize_reference, random_blocks  # noqa: E402

ROWS, COLS = 4096, 14336
CLOCK = gpu_clock()
CHECKED_BLOCKS = 4096


def mmvq_rows(suites, blocks, vx, nblocks) -> list[dict]:
    """mul_mat_vec_q4_K_q8_1_cuda1 (after each suite's quantize_q8_1) as Candle's mul_mat_vec_via_q8_1
    launches it at batch 1."""
    ncols_padded = -(-COLS // 512) * 512
    y = cp.asarray(np.random.default_rng(1).standard_normal(COLS).astype(np.float32))
    i32 = np.int32
    nbytes = blocks.nbytes + ncols_padded // 32 * 36 + ROWS * 4
    a_ = cp.empty(nbytes // 2, dtype=cp.uint8)
    b_ = cp.empty_like(a_)
    copy_ms = timed(lambda: CLOCK.copy(b_.data.ptr, a_.data.ptr, a_.nbytes))
    outs, ms = {}, {}
    for label, ex in suites.items():
        quant, mmvq = kernel(ex, "quantize_q8_1"), kernel(ex, "mul_mat_vec_q4_K_q8_1_cuda1")
        vy = cp.zeros(ncols_padded // 32 * 36, dtype=cp.uint8)
        quant((ncols_padded // 256, 1), (256, 1, 1), (y, vy, i32(COLS), i32(ncols_padded)))
        dst = cp.full(ROWS, np.nan, dtype=cp.float32)
        launch = lambda: mmvq((ROWS,), (32, 4, 1), (vx, vy, dst, i32(COLS), i32(ROWS), i32(ncols_padded),  # noqa: E731
                                                  i32(ROWS)))
        launch()
        cp.cuda.Device().synchronize()
        outs[label] = dst.get()
        ms[label] = timed(launch)
    diff = float(np.max(np.abs(outs["hip"] - outs["cuda"])) / max(float(np.max(np.abs(outs["cuda"]))), 1e-30))
    rows = []
    for label in suites:
        r = {"case": f"mul_mat_vec_q4_K_q8_1_cuda1 {ROWS}x{COLS}", "suite": label, "ms": round(ms[label], 4),
             "GB/s": round(nbytes / ms[label] / 1e6, 1), "copy GB/s": round(nbytes / copy_ms / 1e6, 1),
             "% of copy": round(100 * copy_ms / ms[label], 1), "hip/cuda": round(ms["hip"] / ms["cuda"], 3),
             "outputs equal": f"max rel. diff {diff:.1e}"}
        rows.append(r)
        print(r, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="folder for quant_speed.md / .json")
    ap.add_argument("--cuda-src", type=Path, default=Path(__file__).resolve().parents[1] / ".candle" / "src",
                    help="Candle's candle-kernels/src (quantized.cu) [default: .candle/src]")
    ap.add_argument("--wave", type=int, default=64, choices=(64, 32), help="hip-on-nvidia wavefront size")
    ap.add_argument("--hip-src", type=Path, help="HIP suite folder [default: the bundled backends/hip]")
    a = ap.parse_args()
    fmt = FORMATS["q4_K"]
    n = ROWS * COLS
    nblocks = n // fmt.qk
    blocks = random_blocks(fmt, nblocks, np.random.default_rng(0))
    vx = cp.asarray(blocks.reshape(-1))
    ref = dequantize_reference("q4_K", blocks[:CHECKED_BLOCKS].reshape(-1))
    hip = HipOnNvidiaExecutor(wave=a.wave, **({"suite_dir": a.hip_src} if a.hip_src else {}))
    suites = {"hip": hip, "cuda": CudaExecutor(suite_dir=a.cuda_src)}
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    for out_dt, np_dt in (("f32", np.float32), ("f16", np.float16)):
        name = f"dequantize_block_q4_K_{out_dt}"
        nbytes = blocks.nbytes + n * np.dtype(np_dt).itemsize
        a_ = cp.empty(nbytes // 2, dtype=cp.uint8)
        b_ = cp.empty_like(a_)
        copy_ms = timed(lambda: CLOCK.copy(b_.data.ptr, a_.data.ptr, a_.nbytes))
        outs, ms = {}, {}
        for label, ex in suites.items():
            f = kernel(ex, name)
            y = cp.full(n, np.nan, dtype=np_dt)
            launch = lambda: f((nblocks,), (fmt.block,), (vx, y))    # noqa: E731 (Candle: grid n/256, block 32)
            launch()
            cp.cuda.Device().synchronize()
            got = y[:CHECKED_BLOCKS * fmt.qk].get()
            bad = int(np.count_nonzero(got.view(np.uint16 if out_dt == "f16" else np.uint32)
                                       != ref.astype(np_dt).view(np.uint16 if out_dt == "f16" else np.uint32)))
            if bad:
                raise SystemExit(f"{label} {name}: {bad} of the first {got.size} elements differ from gguf")
            outs[label] = y
            ms[label] = timed(launch)
        same = bool(cp.array_equal(outs["hip"].view(cp.uint16 if out_dt == "f16" else cp.uint32),
                                   outs["cuda"].view(cp.uint16 if out_dt == "f16" else cp.uint32)))
        for label in suites:
            r = {"case": f"{name} {ROWS}x{COLS}", "suite": label, "ms": round(ms[label], 4),
                 "GB/s": round(nbytes / ms[label] / 1e6, 1), "copy GB/s": round(nbytes / copy_ms / 1e6, 1),
                 "% of copy": round(100 * copy_ms / ms[label], 1),
                 "hip/cuda": round(ms["hip"] / ms["cuda"], 3), "outputs equal": same}
            rows.append(r)
            print(r, flush=True)
    rows += mmvq_rows(suites, blocks, vx, nblocks)
    for ex in suites.values():
        ex.close()
    cols = ("case", "suite", "ms", "GB/s", "copy GB/s", "% of copy", "hip/cuda", "outputs equal")
    table = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    table += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    text = f"device: {dev}; hip-on-nvidia wave {a.wave}; cold L2\n\n" + "\n".join(table)
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        Path(a.out, "quant_speed.md").write_text(text + "\n")
        Path(a.out, "quant_speed.json").write_text(json.dumps({"device": dev, "wave": a.wave, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
