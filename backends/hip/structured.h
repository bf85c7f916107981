// Helpers for the structured kernel families (reduce.hip, nn.hip, indexing.hip,
// sort.hip) on top of common.h. Wavefront-size correct: block_tree goes through
// shared memory and __syncthreads over blockDim; seg_allreduce and seg_down shuffle inside
// segments of kSeg = 32 consecutive threads with HIP's width argument, which cuts a
// 64-lane AMD wavefront into two such segments as it leaves a 32-lane one whole. No
// lane masks, no ballots, nothing that depends on warpSize.
#pragma once
#include "common.h"

namespace pk {

// max_value<I>(): the "no index" sentinel of the indexing kernels.
template <class I> struct MaxValue;
template <> struct MaxValue<u8> { static PK_DEV u8 v() { return (u8)0xffu; } };
template <> struct MaxValue<u32> { static PK_DEV u32 v() { return 0xffffffffu; } };
template <> struct MaxValue<i64> { static PK_DEV i64 v() { return (i64)0x7fffffffffffffffll; } };
template <> struct MaxValue<i16> { static PK_DEV i16 v() { return (i16)0x7fff; } };
template <> struct MaxValue<i32> { static PK_DEV i32 v() { return (i32)0x7fffffff; } };
template <class I> PK_DEV bool is_sentinel(I id) { return id == MaxValue<I>::v(); }

// Lowest / highest value of T in its compute type C: what -INFINITY / +INFINITY
// become when stored to T (integers saturate to their limits).
template <class T> struct Limits {
  static PK_DEV typename Num<T>::C lowest() { return -__builtin_huge_valf(); }
  static PK_DEV typename Num<T>::C highest() { return __builtin_huge_valf(); }
};
template <> struct Limits<double> {
  static PK_DEV double lowest() { return -__builtin_huge_val(); }
  static PK_DEV double highest() { return __builtin_huge_val(); }
};
template <> struct Limits<u8> {
  static PK_DEV u8 lowest() { return 0; }
  static PK_DEV u8 highest() { return 0xff; }
};
template <> struct Limits<u32> {
  static PK_DEV u32 lowest() { return 0; }
  static PK_DEV u32 highest() { return 0xffffffffu; }
};
template <> struct Limits<i64> {
  static PK_DEV i64 lowest() { return (i64)(1ull << 63); }
  static PK_DEV i64 highest() { return (i64)0x7fffffffffffffffll; }
};

// Accumulator of a sum in T: rounds to T after every add (f16/bf16 "add in T");
// integers wrap (unsigned arithmetic, no signed-overflow UB).
template <class T> PK_DEV typename Num<T>::C add_in_t(typename Num<T>::C a, typename Num<T>::C b) {
  typedef typename Num<T>::C C;
  if constexpr (Num<T>::is_float) {
    return Num<T>::rd(a + b);
  } else {
    return (C)((u64)a + (u64)b);
  }
}

// maxg / ming: f32/f64 ignore NaN (fmaxf), f16/bf16 propagate it (__hmax_nan);
// integers plain. Evaluated in the compute type (exact for every T here).
template <class T, bool IS_MAX> PK_DEV typename Num<T>::C maxg(typename Num<T>::C a, typename Num<T>::C b) {
  if constexpr (Num<T>::is_float) {
    const bool na = is_nan(a), nb = is_nan(b);
    if (na || nb) {
      if (Num<T>::nan_max) return na ? a : b;  // propagate
      return na ? b : a;                       // ignore (both NaN -> NaN)
    }
  }
  return IS_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

// log2s of powers of two, and of the next power of two up (straight-line: no loop)
PK_DEV u32 log2_ceil(u32 x) { return (u32)(32 - __clz((int)(x - 1))); }  // 32 for x = 0
// The place of x's highest set bit, 0xffffffff for x = 0 (one bfind on NVIDIA, where 31 - __clz(x)
// took two instructions).
PK_DEV u32 top_bit(u32 x) {
#if defined(PK_NVIDIA) && defined(__CUDA_ARCH__)
  u32 r;
  asm("bfind.u32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
#else
  return (u32)(31 - __clz((int)x));
#endif
}
PK_DEV u32 log2_pow2(u32 x) { return (u32)(__ffs((int)x) - 1); }  // x a power of two
template <int N> struct Log2 { static constexpr u32 v = 1 + Log2<N / 2>::v; };
template <> struct Log2<1> { static constexpr u32 v = 0; };

// ------------------------------------------------------------- segment reductions
// A segment: kSeg consecutive threads of the block (linear id), the unit that is a whole
// warp on NVIDIA and half or all of a wavefront on AMD.
constexpr unsigned kSeg = 32;
constexpr u32 kLgSeg = Log2<kSeg>::v;

// v combined (f) over this thread's segment, every thread of it getting the same bits: an
// xor butterfly (lane i meets i^16, i^8, ... i^1) gives each lane the same tree with the
// operands of each f swapped or not, and f here commutes (+, fmaxf). It is the tree that
// Candle's warp_reduce_sum leaves in lane 0. Every thread of the segment must call it.
// (H200, one run, when nn.hip's and quantize_q8_1's sums left shared memory for it: layernorm
// f32 4096x4096 56.2 -> 47.9 us, rmsnorm f32 44.7 -> 41.2 us, quantize_q8_1 of 14336 4.70 ->
// 4.58 us against Candle's 4.54.)
// span < kSeg (a power of two, the same on every thread of the segment): v combined over each aligned
// span of that many threads. (A loop bounded by span kept nn.hip's 1024-thread norms under 32
// registers at 4 packs a thread where an unrolled butterfly with its large masks skipped spilled
// more: H200, rmsnorm f32 2048x8192 at 4 packs, 92% of copy with the loop, 66% unrolled. On NVIDIA
// it also leaves softmax_f16, which never runs the loop under Candle's launch, at 80 registers
// with spills, measured no slower than at 127 without.) m & (kSeg - 1) is m: it shows the 32-lane
// mapping (hip_runtime.h) a mask under 32, so that each step is one SHFL.BFLY on NVIDIA.
// The array form steps all N values together, so that their shuffles' latencies overlap where span
// is known only at run time (group_allreduce's second stage: one loop, not N in turn). m /= 2, not
// m >>= 1: with the shift nvcc unrolled the loop (layernorm_f16 2232 -> 3368 instructions, spills).
template <int N, class V, class F> PK_DEV void seg_allreduce(V (&v)[N], F&& f, unsigned span = kSeg) {
#pragma unroll
  for (int m = (int)span / 2; m > 0; m /= 2)
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = f(v[i], __shfl_xor(v[i], m & (int)(kSeg - 1), (int)kSeg));
}
template <class V, class F> PK_DEV V seg_allreduce(V v, F&& f, unsigned span = kSeg) {
  V a[1] = {v};
  seg_allreduce(a, f, span);
  return a[0];
}

// v of the thread s lanes further on in this thread's segment (s < kSeg; a thread whose lane + s
// leaves the segment gets its own v): the step of a tree that, level by level, combines lane t with
// lane t + s, as Candle's block trees do. Every thread of the segment must call it.
template <class V> PK_DEV V seg_down(V v, unsigned s) { return (V)__shfl_down(v, s, (int)kSeg); }

// ------------------------------------------------------------- groups of segments
PK_DEV unsigned thread_in_block() { return threadIdx.x + blockDim.x * threadIdx.y; }
PK_DEV unsigned block_threads() { return blockDim.x * blockDim.y; }

// Shared memory of one group_allreduce call: the segment partials of up to NMAX values a thread in
// blocks of up to NT threads. A kernel holds one per call, so no call waits for the readers of the
// last (static shared memory is held by every block of the kernel: 512 bytes for the norms, where a
// buffer of one value per thread took 4 KB and left 12 of Candle's 32-thread blocks an SM).
template <class V, int NMAX, int NT> struct GroupScratch {
  V part[NMAX][NT / kSeg];
};

// v[i] combined (f) over the G threads of this thread's group (groups of G consecutive threads,
// G a multiple of kSeg dividing the block); every thread gets the same bits: each segment's
// butterfly (seg_allreduce), then, for groups of several segments, one barrier and a butterfly over
// the group's nseg segment partials, lane l of every segment reading partial l % nseg (the same
// tree in every span of nseg lanes of every segment of the group). A fold of the partials in turn
// was nseg dependent shared reads a value, 32 in a 1024-thread group. A named barrier per group
// (NVIDIA's bar.sync id, count) in place of the block's gained nothing on 1024-thread blocks (H200,
// rmsnorm f16 4096x4096: 74 -> 73% of copy), and in the same kernels the 32-thread-block rows ran
// at a third to a half of their speed (rmsnorm f32 32768x512: 96 -> 25%).
template <int N, class V, int NMAX, int NT, class F>
PK_DEV void group_allreduce(V (&v)[N], unsigned G, GroupScratch<V, NMAX, NT>& sh, F&& f) {
  static_assert(N <= NMAX, "room for every value");
  seg_allreduce(v, f);
  if (G == kSeg) return;  // uniform over the block
  const unsigned t = thread_in_block(), seg = t / kSeg;
  if (t % kSeg == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) sh.part[i][seg] = v[i];
  }
  __syncthreads();
  const unsigned nseg = G / kSeg, s0 = seg & ~(nseg - 1);  // nseg: a power of two <= kSeg
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = sh.part[i][s0 + t % nseg];
  seg_allreduce(v, f, nseg);
}

// In-place shared-memory tree over the first `n` (a power of two) entries of
// `buf`, combining with f(receiver, partner). All threads of the block call it.
template <class V, class F>
PK_DEV void block_tree(V* buf, unsigned tid, unsigned n, F&& f) {
  // Two levels (s, s/2) per barrier give the same pairs in the same order as one
  // level per barrier, so results are bit-identical to candle's tree with half
  // the barriers (H100, f32 4096x16384 sum: 94% -> 95% of copy bandwidth).
  unsigned s = n / 2;
  for (; s >= 2; s >>= 2) {
    __syncthreads();
    const unsigned h = s / 2;
    if (tid < h) buf[tid] = f(f(buf[tid], buf[tid + s]), f(buf[tid + h], buf[tid + h + s]));
  }
  if (s == 1) {
    __syncthreads();
    if (tid == 0) buf[0] = f(buf[0], buf[1]);
  }
  __syncthreads();
}

}  // namespace pk
