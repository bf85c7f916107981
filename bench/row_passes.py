"""What the bundled softmax's passes over a long row cost as memory traffic alone, under Candle's launch.

One 32-thread block (1,32,1) per row, as Candle launches softmax; a row in chunks of P 16-byte packs
a thread (8 under 64 registers for f16/bf16 rows, 16 for f32, as backends/hip/nn.hip); R-1
read-only passes in alternating directions (the chunk left in registers is not read again), then a
pass that reads and writes evict-first. R = 1 is a copy on that launch; R = 3 is the f16/bf16
stream path's traffic (max, sum, write), R = 2 the f32 one's without its shared-memory keep. exps3
is R = 3 with the exps Candle's rounding costs each element at the least: e rounded to T under the
row's final max can be worked out only after a whole pass for that max, so the sum pass and the
write pass each take one 2^x an element (MUFU.EX2, 16 a cycle an SM), the sum pass with the DRAM
idle (every row's max pass ends at about the same time: all the rows' one-warp blocks are resident).
% of copy as bench/suite_speed.py counts it. H200, two runs: f16 3 reads 92-93 / 92-93 / 83% at
4096 / 8192 / 16384 columns, where the kernel stood at 79 / 70 / 59 (84 / 73 / 61 with its exp as
ex2.approx.ftz, a later run); f32 2 reads 90 / 76 / 73, the kernel 90 / 80 / 69. H100, one run beside
suite_speed's softmax rows: f16 3 reads 88.9 / 87.7 / 81.0, exps3 88.0 / 78.9 / 70.9, the kernel
f16 79.9 / 71.6 / 64.7 and bf16 79.2 / 71.3 / 62.5 (91% and 88-91% of exps3 at 8192 and 16384
columns); f32 2 reads 88.7 / 75.6 / 73.9, the kernel 92.7 / 80.3 / 71.5.
onchip_R_S: the whole f16 row on chip, R packs a thread in registers and S in shared memory (cp.async),
read once, one exp an element, a real softmax checked against a float one: what a row costs when it
is not read again. onrows_P_K: K short rows of P packs dealt to a warp, as the kernel's batch path,
with and without 24 KB more shared memory a block (the share of an SM's blocks a kernel keeping longer
rows in shared memory would leave them). H100, one run (% of copy): 4096x4096 93.4 (93.1 / 93.8 with
16 / 24 KB more: 14 or 9 blocks an SM cost nothing), 2048x8192 92.2 (all in 167 registers) / 91.4 (8
packs in registers, 24 in 12 KB) / 86.7 (16 + 16), 1024x16384 77.5 (32 + 32) / 79.1 (16 + 48, 24 KB):
read once, a 16384-column row still leaves its 1024 blocks' load, reduce and write phases in lockstep;
short rows 512 / 1024 / 2048 columns 89.0 / 98.8 / 100.1, with 24 KB more 83.6 / 95.3 / 95.0.

    python3 bench/row_passes.py        # NVIDIA, CuPy (ld/st.global.cs as nn.hip uses there)
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cupy as cp  # noqa: E402

from harness import copy_ms, timed  # noqa: E402

SRC = r'''
typedef unsigned u32;
__device__ __forceinline__ uint4 ld_cs(const uint4* p) {
  uint4 v; asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void st_cs(uint4* p, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
#include <cuda_fp16.h>
__device__ __forceinline__ float ex2(float x) {
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r;
}
// EXP: the exps Candle's rounding makes each element cost (f16): 2^x summed by the second pass and
// 2^x packed to f16 by the last, on the registers' f16 pairs unpacked to float (no x - max, no
// rounding of e before the sum: what a softmax row costs beyond its traffic at the least).
__device__ __forceinline__ float exp_sum(uint4 v) {
  const u32 w[4] = {v.x, v.y, v.z, v.w};
  float s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    s += ex2(f.x) + ex2(f.y);
  }
  return s;
}
__device__ __forceinline__ uint4 exp_pack(uint4 v) {
  u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    const __half2 e = __floats2half2_rn(ex2(f.x), ex2(f.y));
    w[i] = *reinterpret_cast<const u32*>(&e);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}
template <int P, int R, bool EXP = false>
__device__ void rows(const uint4* src, uint4* dst, u32 npk) {
  const u32 G = blockDim.x * blockDim.y, g = threadIdx.y * blockDim.x + threadIdx.x;
  const uint4* s = src + (size_t)blockIdx.x * npk;
  uint4* d = dst + (size_t)blockIdx.x * npk;
  const int nch = (int)(npk / (P * G));
  uint4 x[P];
  u32 acc = 0;
  float sum = 0;
  int cur = -1;
  bool fwd = true;
  for (int r = 0; r < R - 1; ++r, fwd = !fwd)
    for (int i = 0; i < nch; ++i) {
      const int c = fwd ? i : nch - 1 - i;
      if (c != cur) {
#pragma unroll
        for (int j = 0; j < P; ++j) x[j] = s[(c * P + j) * G + g];
        cur = c;
      }
#pragma unroll
      for (int j = 0; j < P; ++j) {
        if (EXP && r == 1) sum += exp_sum(x[j]);
        else acc ^= x[j].x ^ x[j].y ^ x[j].z ^ x[j].w;
      }
    }
  const u32 k = acc == 0x9e3779b9u || sum == 1.5f;  // 0 but for one case in billions: keeps the read passes
  for (int i = 0; i < nch; ++i) {
    const int c = fwd ? i : nch - 1 - i;
    if (c != cur) {
#pragma unroll
      for (int j = 0; j < P; ++j) x[j] = ld_cs(s + (c * P + j) * G + g);
      cur = c;
    }
#pragma unroll
    for (int j = 0; j < P; ++j) {
      uint4 v = EXP ? exp_pack(x[j]) : x[j];
      v.x ^= k;
      st_cs(d + (c * P + j) * G + g, v);
    }
  }
}
extern "C" __global__ __launch_bounds__(256, 4) void reads1_p8(const uint4* s, uint4* d, u32 n) { rows<8, 1>(s, d, n); }
extern "C" __global__ __launch_bounds__(256, 4) void reads3_p8(const uint4* s, uint4* d, u32 n) { rows<8, 3>(s, d, n); }
extern "C" __global__ __launch_bounds__(256, 4) void exps3_p8(const uint4* s, uint4* d, u32 n) { rows<8, 3, true>(s, d, n); }
extern "C" __global__ __launch_bounds__(256) void reads1_p16(const uint4* s, uint4* d, u32 n) { rows<16, 1>(s, d, n); }
extern "C" __global__ __launch_bounds__(256) void reads2_p16(const uint4* s, uint4* d, u32 n) { rows<16, 2>(s, d, n); }
__device__ __forceinline__ u32 hmax2(u32 a, u32 b) { __half2 r = __hmax2(*(__half2*)&a, *(__half2*)&b); return *(u32*)&r; }
__device__ __forceinline__ u32 hsub2(u32 a, u32 b) { __half2 r = __hsub2(*(__half2*)&a, *(__half2*)&b); return *(u32*)&r; }
__device__ __forceinline__ u32 hmul2(u32 a, u32 b) { __half2 r = __hmul2(*(__half2*)&a, *(__half2*)&b); return *(u32*)&r; }
__device__ __forceinline__ float2 f2(u32 a) { return __half22float2(*(__half2*)&a); }
__device__ __forceinline__ u32 pk(float a, float b) { __half2 r = __floats2half2_rn(a, b); return *(u32*)&r; }
__device__ __forceinline__ u32 wmax(uint4 v, u32 w) { return hmax2(hmax2(hmax2(w, v.x), hmax2(v.y, v.z)), v.w); }
// e = 2^((x - m) log2 e) rounded to f16, in place; their sum added to s
__device__ __forceinline__ uint4 epack(uint4 v, u32 m2, float& s) {
  u32 w[4] = {v.x, v.y, v.z, v.w};
  float t[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 d = f2(hsub2(w[i], m2));
    w[i] = pk(ex2(d.x * 1.44269504088896341f), ex2(d.y * 1.44269504088896341f));
    const float2 e = f2(w[i]);
    t[i] = e.x + e.y;
  }
  s += (t[0] + t[1]) + (t[2] + t[3]);
  return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ uint4 spack(uint4 v, u32 i2) { return make_uint4(hmul2(v.x, i2), hmul2(v.y, i2), hmul2(v.z, i2), hmul2(v.w, i2)); }
// A whole f16 row on chip: PR packs a thread in registers, PS in shared memory (cp.async), read once.
template <int PR, int PS>
__device__ void onchip(const uint4* src, uint4* dst) {
  __shared__ uint4 sh[PS > 0 ? PS * 32 : 1];
  const u32 g = threadIdx.y;
  constexpr int NP = PR + PS;
  const uint4* s = src + (size_t)blockIdx.x * NP * 32;
  uint4* d = dst + (size_t)blockIdx.x * NP * 32;
#pragma unroll
  for (int j = 0; j < PS; ++j) {
    const u32 a = (u32)__cvta_generic_to_shared(&sh[j * 32 + g]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(a), "l"(s + (PR + j) * 32 + g) : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  uint4 x[PR > 0 ? PR : 1];
#pragma unroll
  for (int j = 0; j < PR; ++j) x[j] = ld_cs(s + j * 32 + g);
  u32 w = 0xfc00fc00u;
#pragma unroll
  for (int j = 0; j < PR; ++j) w = wmax(x[j], w);
  asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
  for (int j = 0; j < PS; ++j) w = wmax(sh[j * 32 + g], w);
  float m = fmaxf(f2(w).x, f2(w).y);
#pragma unroll
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
  const u32 m2 = pk(m, m);
  float sum = 0;
#pragma unroll
  for (int j = 0; j < PR; ++j) x[j] = epack(x[j], m2, sum);
#pragma unroll
  for (int j = 0; j < PS; ++j) sh[j * 32 + g] = epack(sh[j * 32 + g], m2, sum);
#pragma unroll
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
  const float inv = __half2float(__float2half_rn(1.f / sum));
  const u32 i2 = pk(inv, inv);
#pragma unroll
  for (int j = 0; j < PR; ++j) st_cs(d + j * 32 + g, spack(x[j], i2));
#pragma unroll
  for (int j = 0; j < PS; ++j) st_cs(d + (PR + j) * 32 + g, spack(sh[j * 32 + g], i2));
}
// K short rows of P packs a thread each on one warp (the first of every K blocks; the others return),
// all in registers: what the same softmax costs on rows short enough to be dealt K to a warp.
template <int P, int K>
__device__ void onrows(const uint4* src, uint4* dst) {
  if (blockIdx.x % K) return;
  const u32 g = threadIdx.y;
  const size_t base = (size_t)blockIdx.x * P * 32;
  uint4 x[K][P];
  const int nk = min(K, (int)(gridDim.x - blockIdx.x));
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int j = 0; j < P; ++j) x[k][j] = k < nk ? ld_cs(src + base + (k * P + j) * 32 + g) : make_uint4(0, 0, 0, 0);
  float m[K], sum[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    u32 w = 0xfc00fc00u;
#pragma unroll
    for (int j = 0; j < P; ++j) w = wmax(x[k][j], w);
    m[k] = fmaxf(f2(w).x, f2(w).y);
  }
#pragma unroll
  for (int o = 16; o; o >>= 1)
#pragma unroll
    for (int k = 0; k < K; ++k) m[k] = fmaxf(m[k], __shfl_xor_sync(~0u, m[k], o));
#pragma unroll
  for (int k = 0; k < K; ++k) {
    sum[k] = 0;
    const u32 m2 = pk(m[k], m[k]);
#pragma unroll
    for (int j = 0; j < P; ++j) x[k][j] = epack(x[k][j], m2, sum[k]);
  }
#pragma unroll
  for (int o = 16; o; o >>= 1)
#pragma unroll
    for (int k = 0; k < K; ++k) sum[k] += __shfl_xor_sync(~0u, sum[k], o);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const float inv = __half2float(__float2half_rn(1.f / sum[k]));
    const u32 i2 = pk(inv, inv);
    if (k < nk)
#pragma unroll
      for (int j = 0; j < P; ++j) st_cs(dst + base + (k * P + j) * 32 + g, spack(x[k][j], i2));
  }
}
extern "C" __global__ __launch_bounds__(32) void onrows_2_4(const uint4* s, uint4* d) { onrows<2, 4>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onrows_4_2(const uint4* s, uint4* d) { onrows<4, 2>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onrows_8_1(const uint4* s, uint4* d) { onrows<8, 1>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onchip_16_0(const uint4* s, uint4* d) { onchip<16, 0>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onchip_32_0(const uint4* s, uint4* d) { onchip<32, 0>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onchip_16_16(const uint4* s, uint4* d) { onchip<16, 16>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onchip_8_24(const uint4* s, uint4* d) { onchip<8, 24>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onchip_32_32(const uint4* s, uint4* d) { onchip<32, 32>(s, d); }
extern "C" __global__ __launch_bounds__(32) void onchip_16_48(const uint4* s, uint4* d) { onchip<16, 48>(s, d); }
'''


# (kernel, bytes of dynamic shared memory a block): the latter holds fewer blocks an SM, as a kernel
# that kept longer rows in 16 or 24 KB of static shared memory would for these rows too
ONCHIP = {512: (("onrows_2_4", 0), ("onrows_2_4", 24576)), 1024: (("onrows_4_2", 0), ("onrows_4_2", 24576)),
          2048: (("onrows_8_1", 0), ("onrows_8_1", 24576)),
          4096: (("onchip_16_0", 0), ("onchip_16_0", 16384), ("onchip_16_0", 24576)),
          8192: (("onchip_32_0", 0), ("onchip_16_16", 0), ("onchip_8_24", 0)),
          16384: (("onchip_32_32", 0), ("onchip_16_48", 0))}


def main() -> None:
    """Prints each kernel's % of copy at 4096, 8192 and 16384 columns (32 MB of f16, 64 MB of f32)."""
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print("kernel        rows x cols  dtype  % of copy")
    for esize, kernels in ((2, ("reads1_p8", "reads3_p8", "exps3_p8")), (4, ("reads1_p16", "reads2_p16"))):
        for nrows, ncols in ((4096, 4096), (2048, 8192), (1024, 16384)):
            nbytes = nrows * ncols * esize
            a = cp.random.randint(0, 2**31, size=nbytes // 4, dtype=cp.uint32)
            b = cp.empty_like(a)
            npk = ncols * esize // 16
            cp_ms = copy_ms(2 * nbytes)
            for name in kernels:
                f = mod.get_function(name)
                launch = lambda: f((nrows,), (1, 32, 1), (a, b, cp.uint32(npk)))
                launch()
                cp.cuda.runtime.deviceSynchronize()
                assert name.startswith("exps") or bool((a == b).all()), name
                ms = timed(launch)
                print(f"{name:12s}  {nrows}x{ncols:<6d} {'f16' if esize == 2 else 'f32'}  {100 * cp_ms / ms:6.1f}")
            if esize == 2:
                onchip(mod, nrows, ncols, cp_ms)
    for nrows, ncols in ((32768, 512), (16384, 1024), (8192, 2048)):   # short rows: the same 32 MB of f16
        onchip(mod, nrows, ncols, copy_ms(4 * nrows * ncols))


def onchip(mod, nrows: int, ncols: int, cp_ms: float) -> None:
    """The whole-row-on-chip f16 softmax variants for this row length, checked against a float softmax."""
    x = cp.random.standard_normal((nrows, ncols), dtype=cp.float32).astype(cp.float16)
    y = cp.empty_like(x)
    xf = x.astype(cp.float32)
    ref = cp.exp(xf - xf.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    for name, dyn in ONCHIP[ncols]:
        f = mod.get_function(name)
        launch = lambda: f((nrows,), (1, 32, 1), (x, y), shared_mem=dyn)
        launch()
        err = float(cp.abs(y.astype(cp.float32) - ref).max() / ref.max())
        assert err < 4e-3, (name, err)
        ms = timed(launch)
        print(f"{name:12s}  {nrows}x{ncols:<6d} f16  {100 * cp_ms / ms:6.1f}   ({f.num_regs} registers, "
              f"{f.shared_size_bytes + dyn} B shared)")


if __name__ == "__main__":
    main()
