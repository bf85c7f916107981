// Wave64 emulation for the hip-on-nvidia level (compiled with -DPARITY_WAVE64).
//
// An AMD CDNA wavefront is 64 lanes; an NVIDIA warp 32. Here a wavefront is two
// consecutive NVIDIA warps of the block (linear thread id / 64), and every
// wave-wide operation behaves as ROCm documents it for a 64-lane wavefront:
//
//   warpSize, __AMDGCN_WAVEFRONT_SIZE      64 (compile-time constants, as on AMD)
//   __lane_id()                            linear thread id % 64
//   __shfl/_up/_down/_xor (v, x, width=64) ROCm's index formulas (amd_warp_functions.h,
//                                          ds_bpermute: lane = index mod 64; a source
//                                          lane that is inactive reads 0)
//   __shfl*_sync(mask, ...)                ROCm >= 6.2 (amd_warp_sync_functions.h): the
//                                          mask must be a 64-bit integer (static_assert);
//                                          unless NDEBUG, a lane missing from its own mask
//                                          or a mask naming inactive lanes traps (ROCm's
//                                          __hip_check_mask assertion, simplified)
//   __ballot(p), __ballot64(p)             unsigned long long over the 64 lanes
//   __ballot_sync(mask, p)                 __ballot(p) & mask
//   __any, __all, __any_sync, __all_sync   over the active lanes / (ballot & mask) == mask
//   __activemask()                         64-bit mask of the active lanes
//   __syncwarp(mask)                       a barrier over the wavefront (both warps)
//   __lanemask_lt/_gt/_eq()                as ROCm (64-bit)
// __popc / __popcll / __ffs / __ffsll keep their CUDA (= HIP) signatures: __popc of a
// 64-bit ballot truncates to 32 bits on AMD too.
//
// How two warps meet: a software barrier in shared memory (one per wavefront, 16 per
// 1024-thread block), not PTX named barriers (16 ids minus __syncthreads' id 0 leave 15,
// and a named barrier cannot time out). Each warp of a wave owns an episode counter;
// an operation writes its lanes' words into a double-buffered slot array (buffer =
// episode parity), publishes its counter and spins until the partner warp's counter
// reaches the same episode. Shared memory is not initialised at block start, so each
// counter carries a tag naming the block instance (%gridid, blockIdx): a counter whose
// tag is not this block's is stale and restarts at 0. One barrier per 4-byte word moved
// (8-byte types move in two rounds, as ROCm's own __shfl does). A shuffle whose (wave-uniform)
// arguments keep every lane inside its own 32-lane half (width <= 32, xor mask < 32, delta 0)
// skips the exchange: a native warp shuffle, inactive source lanes read 0.
//
// Inactive lanes: lanes beyond the block (a block size that is not a multiple of 64)
// are inactive, as in AMD's partial wavefronts; a wavefront whose second warp does not
// exist never waits for it. A wave-wide operation that needs the other half and is reached
// by only one of the two warps
// (divergence across the 32-lane halves, which AMD executes with those lanes masked off)
// cannot be emulated: the waiting warp gives up after PARITY_W64_TIMEOUT_NS (1 s) of
// spinning and executes __trap() without writing anything, so the launch is a `crash`
// whose message names divergent wave-wide operations as the likely cause.
//
// Names this header defines (as macros onto __pw64_* functions, so CUDA's own overloads
// never win overload resolution): warpSize __AMDGCN_WAVEFRONT_SIZE __lane_id __shfl
// __shfl_up __shfl_down __shfl_xor __shfl_sync __shfl_up_sync __shfl_down_sync
// __shfl_xor_sync __ballot __ballot64 __ballot_sync __any __all __any_sync __all_sync
// __activemask __syncwarp __lanemask_lt __lanemask_gt __lanemask_eq __mbcnt_lo __mbcnt_hi; plus
// PARITY_WAVE_SIZE (64).
#pragma once
#ifndef __CUDACC__
#error "parity_wave64.h is the CUDA emulation of AMD wavefronts; it is not for AMD compilers"
#endif

#if !defined(__CUDACC_RTC__)
#include <cuda_runtime.h>
#endif
// CUDA's fp16/bf16 headers declare __shfl_* overloads of their own: include them
// before the macros below rename the HIP spellings.
#include "parity_cuda.h"

#define PARITY_WAVE_SIZE 64
#ifndef PARITY_W64_TIMEOUT_NS
#define PARITY_W64_TIMEOUT_NS 1000000000ull
#endif

namespace parity_w64 {
constexpr int kWaves = 16;  // 1024 threads per block at most
struct State {
  unsigned slot[kWaves][2][64];        // [wave][buffer][lane]: one 4-byte word per lane
  unsigned act[kWaves][2][2];          // [wave][buffer][half]: active lanes of that warp
  unsigned bal[kWaves][2][2];          // [wave][buffer][half]: that warp's ballot word
  unsigned cnt[kWaves][2];             // [wave][half]: episodes the warp has published
  unsigned long long tag[kWaves][2];   // [wave][half]: block instance that owns cnt
};
}  // namespace parity_w64

static __shared__ parity_w64::State __pw64_state;

__device__ __forceinline__ unsigned __pw64_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned __pw64_lane_id() { return __pw64_tid() & 63u; }

__device__ __forceinline__ unsigned long long __pw64_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned long long __pw64_block_tag() {
  unsigned long long grid;
  asm("mov.u64 %0, %%gridid;" : "=l"(grid));
  const unsigned long long blk =
      blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  // Never 0 and never the same for two blocks of one context (up to hash collisions).
  return ((grid + 1) * 0x9E3779B97F4A7C15ull) ^ (blk * 0xC2B2AE3D27D4EB4Full) ^ 0x5057363420202020ull;
}

struct __pw64_result {
  unsigned val;               // the word of the source lane (0 if that lane is inactive)
  unsigned long long act;     // active lanes of the wavefront
  unsigned long long bal;     // ballot of `pred` over the wavefront
};

// One exchange round over the wavefront: every active lane offers `v` and a
// predicate, and reads the word offered by lane `src` (0..63; any other value
// reads 0). All wave-wide operations are built on this.
__device__ __noinline__ __pw64_result __pw64_round(unsigned v, int pred, int src) {
  using parity_w64::State;
  volatile State& S = __pw64_state;
  const unsigned t = __pw64_tid();
  const unsigned w = t >> 6, h = (t >> 5) & 1u, lane = t & 63u, wl = t & 31u;
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const bool partner = h ? true : (w * 64u + 32u < nthreads);
  const unsigned m = __activemask();
  const unsigned b = __ballot_sync(m, pred);
  const unsigned leader = __ffs(m) - 1;
  const unsigned long long tag = __pw64_block_tag();
  unsigned k = 0;
  if (wl == leader) {
    if (S.tag[w][h] != tag) {          // first operation of this warp in this block
      S.cnt[w][h] = 0;
      __threadfence_block();
      S.tag[w][h] = tag;
    }
    k = S.cnt[w][h] + 1;
  }
  k = __shfl_sync(m, k, leader);
  const unsigned buf = k & 1u;
  S.slot[w][buf][lane] = v;
  if (wl == leader) {
    S.act[w][buf][h] = m;
    S.bal[w][buf][h] = b;
  }
  __threadfence_block();
  __syncwarp(m);
  if (wl == leader) {
    S.cnt[w][h] = k;
    if (partner) {
      const unsigned o = h ^ 1u;
      const unsigned long long t0 = __pw64_globaltimer();
      for (unsigned spin = 1;; ++spin) {
        if (S.tag[w][o] == tag) {
          __threadfence_block();
          if ((int)(S.cnt[w][o] - k) >= 0) break;
        }
        if ((spin & 1023u) == 0 && __pw64_globaltimer() - t0 > PARITY_W64_TIMEOUT_NS) {
          // Only one warp of the wavefront reached a wave-wide operation.
          __trap();
        }
      }
    }
  }
  __syncwarp(m);
  __threadfence_block();
  __pw64_result r;
  const unsigned a0 = (h == 0 || partner) ? S.act[w][buf][0] : 0u;
  const unsigned a1 = (h == 1 || partner) ? S.act[w][buf][1] : 0u;
  const unsigned b0 = (h == 0 || partner) ? S.bal[w][buf][0] : 0u;
  const unsigned b1 = (h == 1 || partner) ? S.bal[w][buf][1] : 0u;
  r.act = (unsigned long long)a0 | ((unsigned long long)a1 << 32);
  r.bal = (unsigned long long)b0 | ((unsigned long long)b1 << 32);
  r.val = (src >= 0 && src < 64 && ((r.act >> src) & 1ull)) ? S.slot[w][buf][src] : 0u;
  return r;
}

// One 4-byte word of lane `src` of this warp (src in 0..31) without leaving the warp:
// a source lane that is inactive reads 0, as ds_bpermute does.
__device__ __forceinline__ unsigned __pw64_local_word(unsigned m, unsigned u, int src) {
  const unsigned r = __shfl_sync(m, u, src & 31);
  return ((m >> (src & 31)) & 1u) ? r : 0u;
}

// The value of lane `src` (0..63; ds_bpermute: an inactive source lane reads 0), any type of
// 1..8 bytes. `local`: the operation's arguments keep every lane of the wavefront inside its
// own 32-lane half (each warp decides from the same wave-uniform arguments, so both warps
// agree), so no exchange between the two warps is needed: a native warp shuffle does it.
template <class T> __device__ __forceinline__ T __pw64_fetch(T var, int src, bool local) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "wave64 shuffles move 1-, 2-, 4- or 8-byte values");
  T out;
  const unsigned m = __activemask();
  const bool fast = __all_sync(m, local);
  if constexpr (sizeof(T) <= 4) {
    unsigned u = 0;
    __builtin_memcpy(&u, &var, sizeof(T));
    const unsigned r = fast ? __pw64_local_word(m, u, src) : __pw64_round(u, 0, src).val;
    __builtin_memcpy(&out, &r, sizeof(T));
  } else {
    unsigned u[2];
    __builtin_memcpy(u, &var, 8);
    if (fast) {
      u[0] = __pw64_local_word(m, u[0], src);
      u[1] = __pw64_local_word(m, u[1], src);
    } else {
      u[0] = __pw64_round(u[0], 0, src).val;
      u[1] = __pw64_round(u[1], 0, src).val;
    }
    __builtin_memcpy(&out, u, 8);
  }
  return out;
}

// A shuffle keeps every lane of the wavefront in its own 32-lane half where its width is narrow
// (hip_runtime.h's __hip_map_narrow: a power of two <= 32), or its xor mask is below 32 or at
// least 64, or its delta is 0. That depends on the arguments only, never on the lane, so the two
// warps of a wavefront decide alike as long as the arguments are wave-uniform (a port that passes
// different widths/masks/deltas to the two halves of one wavefront is outside what the fast path
// assumes).

// ROCm's index formulas (amd_warp_functions.h); the source lane is index mod 64
// (ds_bpermute addresses lanes by byte address bits [7:2]).
// __shfl follows current ROCm ((src & (width-1)) + segment base); ROCm 5.2 did not
// mask src by width: -DPARITY_W64_ROCM52_SHFL selects that.
template <class T> __device__ __forceinline__ T __pw64_shfl(T var, int src_lane, int width = 64) {
  const int self = (int)__pw64_lane_id();
#ifdef PARITY_W64_ROCM52_SHFL
  const int index = src_lane + (self & ~(width - 1));
#else
  const int index = (src_lane & (width - 1)) + (self & ~(width - 1));
#endif
#ifdef PARITY_W64_ROCM52_SHFL
  const bool local = __hip_map_narrow(width) && src_lane >= 0 && src_lane < width;
#else
  const bool local = __hip_map_narrow(width);
#endif
  return __pw64_fetch(var, index & 63, local);
}
template <class T> __device__ __forceinline__ T __pw64_shfl_up(T var, unsigned int lane_delta, int width = 64) {
  const int self = (int)__pw64_lane_id();
  int index = self - lane_delta;
  index = (index < (self & ~(width - 1))) ? self : index;
  return __pw64_fetch(var, index & 63, __hip_map_narrow(width) || lane_delta == 0);
}
template <class T> __device__ __forceinline__ T __pw64_shfl_down(T var, unsigned int lane_delta, int width = 64) {
  const int self = (int)__pw64_lane_id();
  int index = self + lane_delta;
  index = (int)((self & (width - 1)) + lane_delta) >= width ? self : index;
  return __pw64_fetch(var, index & 63, (__hip_map_narrow(width) && lane_delta < 64) || lane_delta == 0);
}
template <class T> __device__ __forceinline__ T __pw64_shfl_xor(T var, int lane_mask, int width = 64) {
  const int self = (int)__pw64_lane_id();
  int index = self ^ lane_mask;
  index = index >= ((self + width) & ~(width - 1)) ? self : index;
  const bool pow2 = width > 0 && width <= 64 && (width & (width - 1)) == 0;
  return __pw64_fetch(var, index & 63, pow2 && ((lane_mask >= 0 && lane_mask < 32) || lane_mask >= 64));
}

__device__ __forceinline__ unsigned long long __pw64_ballot(int pred) { return __pw64_round(0u, pred, -1).bal; }
__device__ __forceinline__ unsigned long long __pw64_activemask() { return __pw64_round(0u, 1, -1).act; }
__device__ __forceinline__ int __pw64_any(int pred) { return __pw64_round(0u, pred, -1).bal != 0ull; }
__device__ __forceinline__ int __pw64_all(int pred) {
  const __pw64_result r = __pw64_round(0u, pred, -1);
  return r.bal == r.act;
}
__device__ __forceinline__ void __pw64_syncwarp() { (void)__pw64_round(0u, 0, -1); }

template <class M> __device__ __forceinline__ unsigned long long __pw64_mask(M mask) {
  static_assert(sizeof(M) == 8 && (M)-1 != 0 && (M)0.5 == 0,
                "The mask must be a 64-bit integer (ROCm >= 6.2 _sync builtins). "
                "Implicitly promoting a smaller integer is almost always an error.");
  return (unsigned long long)mask;
}

// ROCm's __hip_check_mask, simplified: each lane names itself, and the mask names only
// active lanes. Assertions are on unless NDEBUG (then trap -> `crash`).
__device__ __forceinline__ void __pw64_check_mask(unsigned long long mask, unsigned long long act) {
#ifndef NDEBUG
  if (mask == 0ull || !((mask >> __pw64_lane_id()) & 1ull) || (mask & ~act) != 0ull) __trap();
#endif
}

template <class M> __device__ __forceinline__ unsigned long long __pw64_ballot_sync(M mask, int pred) {
  const unsigned long long mk = __pw64_mask(mask);
  const __pw64_result r = __pw64_round(0u, pred, -1);
  __pw64_check_mask(mk, r.act);
  return r.bal & mk;
}
template <class M> __device__ __forceinline__ int __pw64_any_sync(M mask, int pred) {
  return __pw64_ballot_sync(mask, pred) != 0ull;
}
template <class M> __device__ __forceinline__ int __pw64_all_sync(M mask, int pred) {
  return __pw64_ballot_sync(mask, pred) == (unsigned long long)mask;
}
template <class M> __device__ __forceinline__ void __pw64_sync_check(M mask) {
  const unsigned long long mk = __pw64_mask(mask);
  __pw64_check_mask(mk, __pw64_round(0u, 1, -1).act);
}
template <class M, class T> __device__ __forceinline__ T __pw64_shfl_sync(M mask, T var, int src, int width = 64) {
  __pw64_sync_check(mask);
  return __pw64_shfl(var, src, width);
}
template <class M, class T> __device__ __forceinline__ T __pw64_shfl_up_sync(M mask, T var, unsigned d, int width = 64) {
  __pw64_sync_check(mask);
  return __pw64_shfl_up(var, d, width);
}
template <class M, class T> __device__ __forceinline__ T __pw64_shfl_down_sync(M mask, T var, unsigned d, int width = 64) {
  __pw64_sync_check(mask);
  return __pw64_shfl_down(var, d, width);
}
template <class M, class T> __device__ __forceinline__ T __pw64_shfl_xor_sync(M mask, T var, int lm, int width = 64) {
  __pw64_sync_check(mask);
  return __pw64_shfl_xor(var, lm, width);
}
template <class M> __device__ __forceinline__ void __pw64_syncwarp(M mask) {
  __pw64_sync_check(mask);
}

__device__ __forceinline__ unsigned long long __pw64_lanemask_lt() {
  return __pw64_activemask() & ((1ull << __pw64_lane_id()) - 1ull);
}
__device__ __forceinline__ unsigned long long __pw64_lanemask_gt() {
  const unsigned lane = __pw64_lane_id();
  const unsigned long long act = __pw64_activemask();
  return lane == 63 ? 0ull : act & (~0ull << (lane + 1));
}
__device__ __forceinline__ unsigned long long __pw64_lanemask_eq() { return 1ull << __pw64_lane_id(); }
// mbcnt: popcount of the mask bits of the lanes below this one, low / high 32 lanes (ports
// use __mbcnt_hi(~0u, __mbcnt_lo(~0u, 0)) as the lane id).
__device__ __forceinline__ unsigned __pw64_mbcnt_lo(unsigned x, unsigned y) {
  const unsigned l = __pw64_lane_id();
  return __popc(x & (l >= 32 ? 0xffffffffu : ((1u << l) - 1u))) + y;
}
__device__ __forceinline__ unsigned __pw64_mbcnt_hi(unsigned x, unsigned y) {
  const unsigned l = __pw64_lane_id();
  return __popc(x & (l <= 32 ? 0u : ((1u << (l - 32)) - 1u))) + y;
}

// ------------------------------------------------------------------ HIP spellings
// A 32-lane mapping included before this header may have defined these as macros.
#undef __lane_id
#undef __shfl
#undef __shfl_up
#undef __shfl_down
#undef __shfl_xor
#undef __shfl_sync
#undef __shfl_up_sync
#undef __shfl_down_sync
#undef __shfl_xor_sync
#undef __ballot
#undef __ballot64
#undef __ballot_sync
#undef __any
#undef __all
#undef __any_sync
#undef __all_sync
#undef __activemask
#undef __syncwarp
#undef __lanemask_lt
#undef __lanemask_gt
#undef __lanemask_eq
#undef __mbcnt_lo
#undef __mbcnt_hi
#undef warpSize
#define warpSize 64
#undef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE 64
#define __lane_id() __pw64_lane_id()
#define __shfl(...) __pw64_shfl(__VA_ARGS__)
#define __shfl_up(...) __pw64_shfl_up(__VA_ARGS__)
#define __shfl_down(...) __pw64_shfl_down(__VA_ARGS__)
#define __shfl_xor(...) __pw64_shfl_xor(__VA_ARGS__)
#define __shfl_sync(...) __pw64_shfl_sync(__VA_ARGS__)
#define __shfl_up_sync(...) __pw64_shfl_up_sync(__VA_ARGS__)
#define __shfl_down_sync(...) __pw64_shfl_down_sync(__VA_ARGS__)
#define __shfl_xor_sync(...) __pw64_shfl_xor_sync(__VA_ARGS__)
#define __ballot(p) __pw64_ballot(p)
#define __ballot64(p) __pw64_ballot(p)
#define __ballot_sync(m, p) __pw64_ballot_sync((m), (p))
#define __any(p) __pw64_any(p)
#define __all(p) __pw64_all(p)
#define __any_sync(m, p) __pw64_any_sync((m), (p))
#define __all_sync(m, p) __pw64_all_sync((m), (p))
#define __activemask() __pw64_activemask()
#define __syncwarp(...) __pw64_syncwarp(__VA_ARGS__)
#define __lanemask_lt() __pw64_lanemask_lt()
#define __lanemask_gt() __pw64_lanemask_gt()
#define __lanemask_eq() __pw64_lanemask_eq()
#define __mbcnt_lo(x, y) __pw64_mbcnt_lo((x), (y))
#define __mbcnt_hi(x, y) __pw64_mbcnt_hi((x), (y))
