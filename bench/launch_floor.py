"""The floor Candle's dequantize launch puts under any kernel (issue #18's speed bar).

Candle launches dequantize_block_q4_K_<f32|f16> with grid n/256 x 32 threads: one 32-thread block
per super-block, 229,376 blocks on a 4096 x 14336 matrix. This times, with parity's CUDA clock (L2
flushed before each sample), on that grid: an empty kernel; a store-only kernel writing each
block's 256 f32 as the real kernel's 16-byte stores; the same stores from 8x fewer, 8x larger
blocks; and a device-to-device copy of the f32 output's bytes. On an H100 the empty kernel takes
as long as both suites' dequantize (141.6 us): the grid, not the kernel, sets the time.

    python3 bench/launch_floor.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quant_speed import CLOCK, COLS, ROWS, timed  # noqa: E402

SOURCE = r'''
extern "C" __global__ void empty(const void* x, float* y) {}
extern "C" __global__ void store32(const void* x, float* y) {
  float4* o = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * 256);
  const float v = (float)threadIdx.x;
  o[threadIdx.x] = make_float4(v, v, v, v);
  o[threadIdx.x + 32] = make_float4(v, v, v, v);
}
extern "C" __global__ void store256(const void* x, float* y) {
  float4* o = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * 2048);
  const float v = (float)threadIdx.x;
  o[threadIdx.x] = make_float4(v, v, v, v);
  o[threadIdx.x + 256] = make_float4(v, v, v, v);
}
'''


def main() -> None:
    n = ROWS * COLS
    nb = n // 256
    mod = cp.RawModule(code=SOURCE)
    x, y = cp.zeros(nb * 144, cp.uint8), cp.zeros(n, cp.float32)
    a = cp.empty(n * 4 // 2, cp.uint8)           # CLOCK.copy reads a and writes b: n*4 bytes moved
    b = cp.empty_like(a)
    rows = {
        "empty, grid n/256 x 32": lambda: mod.get_function("empty")((nb,), (32,), (x, y)),
        "store-only, grid n/256 x 32": lambda: mod.get_function("store32")((nb,), (32,), (x, y)),
        "store-only, grid n/2048 x 256": lambda: mod.get_function("store256")((nb // 8,), (256,), (x, y)),
        "copy of the f32 output's bytes": lambda: CLOCK.copy(b.data.ptr, a.data.ptr, a.nbytes),
    }
    for label, fn in rows.items():
        ms = timed(fn)
        print(f"{label:34s} {ms * 1000:8.1f} us   {n * 4 / ms / 1e6:7.0f} GB/s of f32 output", flush=True)


if __name__ == "__main__":
    main()
