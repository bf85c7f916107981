"""The best plain copy a launch allows: a row's bytes copied by a kernel on the launch's own grid and
block, so that a ceiling counts what the launch's shape costs beyond an empty kernel.

An empty kernel (the launch floor) is no proof that a grid can move its bytes at copy speed: under
Candle's 1024-thread norm launch (one block per row, two blocks an SM) a copy of 16384 rows of 1024
f16 elements reaches about half the speed of a device-to-device copy however its blocks share the
rows, though the empty kernel takes 80% of the copy's time (H200). This times a copy of nbytes/2
bytes in 16-byte packs on the launch's grid and block, the blocks sharing it as a kernel behind that
launch can: each block its own 1/nblocks of the bytes, or every S-th block S blocks' shares and the
others returning at once (S = 2 ... 32), with 1, 4 or 16 packs a thread in flight; the fastest is
the launch's copy. It is a measured bound of those ways, not of every kernel: a row whose kernel beats it is
possible, and is shown as such (its share of the ceiling over 100%).
"""
from __future__ import annotations

from math import prod

STRIDES = (1, 2, 4, 8, 16, 32)       # blocks sharing one working block's bytes (1: every block its own)
UNROLLS = {1: 1024, 4: 1024, 16: 256}  # packs a thread keeps in flight: the largest block it serves
SOURCE = r'''
typedef unsigned long long u64;
// U packs a thread in flight per iteration (a 32-thread block copying a 4096-column f16 row with one
// load at a time would understate what its launch allows)
template <int U>
__device__ void launch_copy(const uint4* __restrict__ s, uint4* __restrict__ d, u64 npk, u64 share, unsigned S) {
  const u64 b = blockIdx.x + (u64)gridDim.x * (blockIdx.y + (u64)gridDim.y * blockIdx.z);
  if (b % S) return;
  const unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const u64 p0 = b * share, p1 = min(npk, p0 + S * share);
  for (u64 p = p0 + t; p < p1; p += (u64)U * nt) {
    uint4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (p + (u64)u * nt < p1) r[u] = s[p + (u64)u * nt];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (p + (u64)u * nt < p1) d[p + (u64)u * nt] = r[u];
  }
}
// bounded by the blocks each runs in: 16 packs a thread spill under a 1024-thread bound (63
// registers) and ask for more registers than an SM has without one, so U = 16 serves blocks of <= 256
#define PARITY_COPY(U, NT) extern "C" __global__ __launch_bounds__(NT) void parity_launch_copy##U(const uint4* s, \
    uint4* d, u64 npk, u64 share, unsigned S) { launch_copy<U>(s, d, npk, share, S); }
PARITY_COPY(1, 1024)
PARITY_COPY(4, 1024)
PARITY_COPY(16, 256)
'''
_KERNELS: dict = {}
_CACHE: dict = {}


def launch_copy_ms(grid, block, nbytes: int, timed, opts=None) -> float:
    """Milliseconds of the fastest copy of nbytes/2 bytes (nbytes moved) on `grid` x `block`, timed by
    `timed(fn, opts)` (bench/harness.py's cold-L2 clock); the result is checked once."""
    import cupy as cp
    key = (tuple(grid), tuple(block), nbytes)
    if key in _CACHE:
        return _CACHE[key]
    if not _KERNELS:
        mod = cp.RawModule(code=SOURCE, options=("-std=c++17",))
        _KERNELS.update({u: mod.get_function(f"parity_launch_copy{u}") for u in UNROLLS})
    npk = max(1, (nbytes // 2 + 15) // 16)
    nblocks = prod(grid)
    share = -(-npk // nblocks)
    src = cp.arange(npk * 4, dtype=cp.uint32)
    dst = cp.zeros_like(src)
    best = None
    nt = prod(block)
    for s in (s for s in STRIDES if s <= nblocks):
        for u in (u for u, most in UNROLLS.items() if nt <= most and (u == 1 or s * share >= u * nt)):
            args = (src, dst, cp.uint64(npk), cp.uint64(share), cp.uint32(s))
            ms = timed(lambda: _KERNELS[u](tuple(grid), tuple(block), args), opts)
            if not bool((dst == src).all()):
                raise RuntimeError(f"launch copy (S={s}, U={u}) on {grid} x {block} copied wrongly")
            dst.fill(0)
            best = ms if best is None else min(best, ms)
    del src, dst
    _CACHE[key] = best
    return best
