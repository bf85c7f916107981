// candle-nn kernels: softmax_T, rmsnorm_T, layernorm_T, rope_i_T, rope_T,
// rope_thd_T for T in f32 f64 f16 bf16 (see docs/candle-kernel-abi.md).
//   softmax_T(const T* src, T* dst, int n_cols)                grid (rows), block (1,32,1)
//   rmsnorm_T(src, dst, const T* alpha, int n_cols, int block_size, float eps)
//   layernorm_T(src, dst, alpha, beta, int n_cols, int block_size, float eps)
//                                     grid (rows), block (block_size = n_cols<1024 ? 32 : 1024)
//   rope_i_T(src, cos, sin, dst, u32 bh, u32 td, u32 stride_b)
//   rope_T(src, cos, sin, dst, u32 bh, u32 td, u32 d, u32 stride_b)
//   rope_thd_T(src, cos, sin, dst, u32 b, u32 t, u32 h, u32 d, u32 stride_b)
//
// Row ops (softmax, rmsnorm, layernorm) under Candle's launch: one block per row, its threads a
// multiple of 32 (softmax's block is (1,n,1), the norms' (n,1,1)). The kernels keep a row in
// registers, read it with 16-byte loads and write it once:
//  * batch path (16-byte aligned rows that split into exactly P packs a thread on G threads, G a
//    power of two >= 32, P <= PMAX; or into one pack on each of the first G threads): the block's
//    threads work in groups of G threads per row and each group takes K rows, so a working block
//    handles nt/G*K consecutive rows and the blocks in between return at once, as the elementwise
//    kernels' idle blocks do (common.h): one 4096-column f16 row is 8 KB, too little in flight
//    for a block of its own;
//  * stream path (longer rows, other lengths, unaligned rows element by element): one row per
//    block in chunks of PMAX packs a thread, in passes that alternate direction, so that each pass
//    starts on the chunk the last one left in registers; a row of one chunk is read once, and
//    f32/f64 softmax keeps its first chunks in shared memory too (PK_SOFTMAX_KEEP).
// Cross-thread sums and maxima: group_allreduce, shuffles inside 32-thread segments (HIP's width
// argument: the same segments on 32- and 64-lane wavefronts), then shared memory across them
// (structured.h).
#include "structured.h"
#include "pairs.h"

// Packs of 16 bytes each thread holds per row: the register budget of the batch path and the
// chunk of the stream path. Softmax: 16 packs, a 2048-column f32 row in one warp's registers;
// f16/bf16 and f64 take half. (H200, f32: 32 packs, a 4096-column row read once at 12 resident
// warps per SM, gave 48 us at 4096x4096 (70% of copy) and 61 us at 16384x1024 (55%); 16 packs, the
// 4096-column row in two chunks, 45 us (75%) and 38 us (89%). f16/bf16 stream chunks of 16 packs
// (102 registers): 4096x4096 +3 / -3 points, 8192 and 16384 columns +2 to +6, but 512 and 1024
// columns -3 to -9, the whole kernel's warps a SM fewer; 16 packs for the batch path alone, 115
// registers: 512 and 1024 columns -13 to -24.)
#ifndef PK_SOFTMAX_PACKS
#define PK_SOFTMAX_PACKS 16
#endif
#ifndef PK_SOFTMAX_ROWS
#define PK_SOFTMAX_ROWS 8
#endif
// Bytes of static shared memory an f32/f64 softmax block keeps row chunks in, beside its
// registers: a row of up to one chunk more is then read from memory once, where the write pass read
// it again (H200, f32 % of copy, 0 -> 8 KB: 4096x4096 79 -> 86, 2048x8192 63 -> 68, 1024x16384
// 65 -> 67; 16 KB: 78, 71, 66, with 1024-2048-column rows -10 points). f16/bf16 keep none: their
// 4096-column row read once gained nothing (72.5 vs 75.9%), and the smaller share of an SM's warps
// cost 1024- and 2048-column rows 5 to 11 points. AMD: none until measured (8 KB of a CU's 64 KB
// of LDS a one-wave block would halve the waves its VGPRs allow, and RowChunks' keep puts the f32
// chunk in scratch there).
#ifndef PK_SOFTMAX_KEEP
#if defined(PK_NVIDIA)
#define PK_SOFTMAX_KEEP 8192
#else
#define PK_SOFTMAX_KEEP 0
#endif
#endif
// Packs (16 bytes each) of static shared memory an f16/bf16 softmax block holds a row in beside its
// registers' PMAX packs a thread: a row of up to PMAX * threads + this many packs (4096 columns) is
// read from memory once (softmax_resident), where the stream path read it three times. 256 packs (4
// KB) leave all 32 one-warp blocks an SM resident, as the registers' 64 do. H100, % of copy, side by
// side in one run (bench/suite_speed.py --variant), stream path -> 256 packs at 64 registers -> 768
// packs (12 KB, an 8192-column row) at 128 registers: f16 4096x4096 79.5 -> 90.2 -> 85.5, bf16 81.0 ->
// 89.3 -> 86.2; f16 / bf16 2048x8192 74.3 / 73.1 -> 74.0 / 73.3 -> 79.5 / 77.1; but 768 packs cost the
// rows dealt to a warp their blocks an SM (17 where 32): 512-1024 columns -1.4 to -4 (f16 1024 97.6 ->
// 93.9), where 256 packs are within -2.1 to +2 of the stream path on every other row but bf16 2048
// columns, 95.0 -> 90.9 (one run; 93.9 there for the same path in another build). The rest of an 8192-column row read from memory in each pass (the registers'
// and 4 KB once, the rest three times) was slower than the stream path: f16 2048x8192 74 -> 70,
// 1024x16384 66 -> 49. AMD: none until measured (as PK_SOFTMAX_KEEP).
#ifndef PK_SOFTMAX_RESIDENT
#if defined(PK_NVIDIA)
#define PK_SOFTMAX_RESIDENT 256
#else
#define PK_SOFTMAX_RESIDENT 0
#endif
#endif
// Norms: <= 32 registers, so that two 1024-thread blocks fit an SM: with one, each block that
// returns at once holds the SM for itself (H200, rmsnorm f32 16384x1024 / 4096x4096 / 1024x16384:
// 2 packs, 32 registers: 81 / 44 / 41 us; 4 packs, 64 registers: 131 / 64 / 54 us). Under that cap,
// the batch path's packs a thread and rows a group are kNormPacks / kNormRows below.
#ifndef PK_NORM_MIN_BLOCKS
#define PK_NORM_MIN_BLOCKS 2
#endif

namespace pk {

template <class T> PK_DEV typename Num<T>::C expg(typename Num<T>::C x) {
  if constexpr (sizeof(typename Num<T>::C) == 8) return exp(x);
  else return expf(x);
}

template <int N> struct Int { static constexpr int v = N; };

// ------------------------------------------------------------------ packs in registers
// V elements of T (16 bytes, or one element on the element path) held as 32-bit words: an array of
// 16-bit values would take one register per element, twice the bytes a row needs.
template <class T> struct Bits;
template <> struct Bits<float> {
  static PK_DEV u32 to(float x) { return fbits(x); }
  static PK_DEV float from(u32 b) { return ffrom(b); }
};
template <> struct Bits<f16> {
  static PK_DEV u32 to(f16 x) { return h_bits(x); }
  static PK_DEV f16 from(u32 b) { return h_from((u16)b); }
};
template <> struct Bits<bf16> {
  static PK_DEV u32 to(bf16 x) { return x.bits; }
  static PK_DEV bf16 from(u32 b) { return bf16{(u16)b}; }
};

template <class T, int V> struct alignas(sizeof(T) * V) Vec {
  static_assert(sizeof(T) * V % 4 == 0, "whole words");
  u32 w[sizeof(T) * V / 4];
  static PK_DEV Vec splat(T x) {
    Vec r = {};
#pragma unroll
    for (int e = 0; e < V; ++e) r.set(e, x);
    return r;
  }
  PK_DEV T get(int e) const {
    if constexpr (sizeof(T) == 8) return dfrom(((u64)w[2 * e + 1] << 32) | w[2 * e]);
    else if constexpr (sizeof(T) == 4) return Bits<T>::from(w[e]);
    else return Bits<T>::from(w[e / 2] >> (16 * (e % 2)));
  }
  PK_DEV void set(int e, T x) {
    if constexpr (sizeof(T) == 8) {
      w[2 * e] = (u32)dbits(x);
      w[2 * e + 1] = (u32)(dbits(x) >> 32);
    } else if constexpr (sizeof(T) == 4) {
      w[e] = Bits<T>::to(x);
    } else {
      const int sh = 16 * (e % 2);
      w[e / 2] = (w[e / 2] & ~(0xffffu << sh)) | (Bits<T>::to(x) << sh);
    }
  }
};
template <class T> struct Vec<T, 1> {  // element path
  T x;
  static PK_DEV Vec splat(T v) { return Vec{v}; }
  PK_DEV T get(int) const { return x; }
  PK_DEV void set(int, T v) { x = v; }
};
template <int V, class T> PK_DEV Vec<T, V> vload(const T* p, u32 off) {
  return *reinterpret_cast<const Vec<T, V>*>(p + off);
}
template <int V, class T> PK_DEV void vstore(T* p, u32 off, const Vec<T, V>& v) {
  *reinterpret_cast<Vec<T, V>*>(p + off) = v;
}

// L2 placement of the stream path's 16-byte loads and stores (NVIDIA sm_80+; elsewhere plain loads
// and stores): a chunk's last read and the row's writes are evict-first (ld/st.global.cs), so that
// they do not push out of L2 the chunks a later pass reads again. H200, % of copy, side by side:
// softmax f32 8192x2048 86 -> 93, f16 2048x8192 67 -> 73, f16 1024x16384 57 -> 62, bf16 4096x4096
// 76 -> 81; the chunks to be read again loaded evict-last as well (createpolicy ... evict_last) lost
// most of that (f16 1024x16384 57, f32 1024x16384 65).
enum class Ld { again, last };  // a later pass reads the chunk again; this is its last read
#if defined(PK_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define PK_L2_HINTS 1
#endif
template <Ld L, int V, class T> PK_DEV Vec<T, V> vload_l2(const T* p) {
#if defined(PK_L2_HINTS)
  if constexpr (L == Ld::last && sizeof(Vec<T, V>) == 16) {
    Vec<T, V> v;
    asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                 : "l"(p));
    return v;
  }
#endif
  return vload<V>(p, 0);
}
template <int V, class T> PK_DEV void vstore_l2(T* p, const Vec<T, V>& v) {
#if defined(PK_L2_HINTS)
  if constexpr (sizeof(Vec<T, V>) == 16) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]),
                 "r"(v.w[3])
                 : "memory");
    return;
  }
#endif
  vstore<V>(p, 0, v);
}

// Whole 16-bit words: the pair path applies.
template <class T, int V> constexpr bool kPairs = sizeof(T) == 2 && V > 1;

// The pack of V elements whose element e is Cv<T>::out(f(e)) (f: a value of the compute type).
template <class T, int V, class F> PK_DEV Vec<T, V> make_pack(F&& f) {
  Vec<T, V> y = {};
  if constexpr (kPairs<T, V>) {
#pragma unroll
    for (int i = 0; i < V / 2; ++i) y.w[i] = Pair<T>::pack(f(2 * i), f(2 * i + 1));
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) y.set(e, Cv<T>::out(f(e)));
  }
  return y;
}

// ------------------------------------------------------------------ how a block covers rows
// Batch path: G = 2^lg_g threads per row, P = 2^lg_p packs per thread and row, K = 2^lg_k rows per
// group; a working block takes nt/G*K consecutive rows and the blocks in between return at once.
// Everything before an idle block returns is shifts and compares on log2s, no division, no loop and
// no memory read: Candle's 1024-thread norm blocks are mostly idle, and their warps' preamble was
// what the kernel spent its issue slots on (H200, rmsnorm f16 16384x1024: 85 instructions a warp,
// 47 M in all, the working warps' about 5 M of them; issue slots 72% busy at 13% of DRAM bandwidth;
// in log2s, 65.2 -> 53.9 us).
struct RowPlan {
  u32 lg_g, lg_p, lg_k;  // lg_k: rows per group, RowsPerGroup's
  bool fits;             // G within the block
  bool single;           // one row of PMAX packs a thread on the whole block, and that is the stream
                         // path's chunk (CHUNK == PMAX): the stream path reads it once
};
// The fewest threads per row (G a power of two >= kSeg, at most the block's 2^lg_nt) that hold a row
// of npk packs as exactly P packs each (P a power of two <= PMAX: npk a power of two), or else as one
// pack on each of the first npk threads; rows of other lengths, and rows of PMAX packs a thread on
// all the block's threads when the stream path's chunk is PMAX packs too (softmax), take the stream
// path. (The norms' stream chunk is smaller than their PMAX: such a row took two chunks, read twice,
// where the batch path reads it once: H200, layernorm f32 1024x16384 72 -> 79% of copy.) Straight-line
// min/max on log2s, as every warp of an idle block runs it before it returns: with the cases as
// branches, such a warp ran 46 instructions (rmsnorm f16), now 40-46 with no branch but the exit
// (H200, % of copy: layernorm f16 4096x4096 62 -> 68, rmsnorm bf16 8192x2048 65 -> 72, layernorm
// f32 16384x1024 54 -> 62). Where ptxas loads this prologue's parameters into uniform registers
// (ULDC) rather than vector ones (LDC: 7 of them), the kernel is faster still. ptxas makes that
// choice for the whole kernel, from code far from here. With norm_stream's L2 prefetch of a 16-bit
// row, nvcc 13.0 loads every norm's prologue uniformly but rmsnorm_f32's (H200, % of copy, side by
// side, without -> with: rmsnorm f16 4096x4096 77 -> 82, 8192x2048 67 -> 73, 16384x1024 47 -> 52).
// rmsnorm_f32's is uniform since its stream passes read their chunk count once (kNormCountOnce).
// Check a change to this file by the idle path's SASS:
// python3 bench/idle_prologue.py (LDC vs ULDC before its EXIT). (Worked out with selects and one
// test for every warp, idle or not, the plan cost the idle blocks more: rmsnorm f16 16384x1024
// 47 -> 41% of copy.)
template <int PMAX, int KMAX, int CHUNK> PK_DEV RowPlan plan_rows(u32 npk, u32 lg_nt) {
  constexpr u32 lg_pmax = Log2<PMAX>::v, lg_kmax = Log2<KMAX>::v;
  const u32 lg_n = log2_ceil(npk), s = (npk & (npk - 1)) == 0 ? lg_pmax : 0u;
  const u32 lg_g = lg_n > s + kLgSeg ? lg_n - s : kLgSeg;
  const u32 lg_p = lg_n > lg_g ? lg_n - lg_g : 0u;
  const u32 lg_k = lg_pmax - lg_p < lg_kmax ? lg_pmax - lg_p : lg_kmax;
  return RowPlan{lg_g, lg_p, lg_k, lg_g <= lg_nt, CHUNK == PMAX && lg_p == lg_pmax && lg_g == lg_nt};
}
// The same plan as 16-bit rows' idle warps work it out: the block's groups as nt >> lg_g (no log2
// of nt), log2_ceil as one bfind, lg_k folded where KMAX is 1, and no branch before the idle test
// (row_dispatch): such a warp runs 32-37 instructions where plan_rows' took 39-44 with two
// branches. H100, side by side, three runs (% of copy): layernorm f16 / bf16 4096x4096 76-78 ->
// 78.5-79.5 / 76-77 -> 78.5-79, 8192x2048 65-66 -> 68-69 / 65 -> 66.5-68, 16384x1024 +2 to +3.5,
// rmsnorm f16 8192x2048 84-86 -> 88-89.5, 16384x1024 61-62 -> 65, softmax f16 / bf16 4096x4096
// 80 -> 81 / 79 -> 80-80.6; the other 16-bit rows -3 to +2 (rmsnorm bf16 2048x8192 85 -> 82-83,
// in every run). f32 and f64 keep plan_rows and its branches: in this form ptxas gave softmax_f32
// 128 registers where 139 (softmax f32 4096x4096 93 -> 89-90, 2048x8192 78 -> 75-76, flat or
// branched) and layernorm_f32 other spills (flat: 4096x4096 91-92 -> 89, 8192x2048 89 -> 86-87).
struct FlatPlan {
  u32 lg_g, lg_p;
  u32 groups;  // groups a block holds, nt / G; 0 where a row's group is larger than the block
  u32 mask;    // rows a working block - 1: nt / G * K - 1
  bool single;
};
template <int PMAX, int KMAX, int CHUNK> PK_DEV FlatPlan flat_plan(u32 npk, u32 nt) {
  constexpr int lg_pmax = Log2<PMAX>::v, lg_kmax = Log2<KMAX>::v;
  const u32 m1 = npk - 1;
  // log2_ceil(npk), 32 for npk = 0 (then s = lg_pmax: no group fits); log2_ceil itself keeps its
  // __clz form, which its callers' measured SASS is compiled from
  const int lg_n = (int)top_bit(m1) + 1;
  const int s = (npk & m1) == 0 ? lg_pmax : 0;
  const int lg_g = max(lg_n - s, (int)kLgSeg);
  const int lg_p = max(lg_n - lg_g, 0);  // <= lg_pmax
  const int lg_k = lg_kmax == 0 ? 0 : lg_kmax >= lg_pmax ? lg_pmax - lg_p : min(lg_pmax - lg_p, lg_kmax);
  const u32 groups = nt >> lg_g;
  return FlatPlan{(u32)lg_g, (u32)lg_p, groups, (groups << lg_k) - 1, CHUNK == PMAX && lg_p == lg_pmax && groups == 1};
}
// Rows per group: the register budget of PMAX packs, at most KMAX rows (the per-row partials).
template <int PMAX, int KMAX, int P> struct RowsPerGroup {
  static constexpr int v = PMAX / P < KMAX ? PMAX / P : KMAX;
};
// This thread's rows in a working block of the batch path: rows row .. row+K-1 of its group (one
// block per row in the launch: gridDim.x rows).
struct RowSlot {
  usize row;
  unsigned g;
  u32 nrows;
};
PK_DEV RowSlot row_slot(u32 lg_g, int K) {
  return RowSlot{(usize)blockIdx.x + (usize)(thread_in_block() >> lg_g) * K, thread_in_block() & ((1u << lg_g) - 1),
                 gridDim.x};
}

// K rows of P packs (V elements) per thread: pack j of a row is the row's pack j*G + g. The plan
// (plan_rows) makes a row exactly P packs per thread, or one pack on the first npk threads of the
// group, so a thread's packs are all inside or all outside the row: the bounds are one test per
// row, not per pack (a test per pack kept alive from load to store took a 64-bit exec mask each:
// SGPR spills on CDNA). Rows past the launch's and idle threads hold `fill` (the reduction's
// neutral value: -inf for softmax, 0 for the norms' sums).
template <class T, int V, int P, int K>
struct RowTile {
  Vec<T, V> x[K][P];
  int nk;         // rows of the group inside the launch
  bool on;        // this thread has packs in the row
  u32 at0, step;  // element offset of pack 0 in the row, and from one pack to the next

  PK_DEV void load(const T* base, u32 ncols, const RowSlot& s, unsigned G, T fill) {
    nk = s.row < s.nrows ? (int)(s.nrows - s.row < (usize)K ? s.nrows - s.row : K) : 0;
    on = s.g < ncols / V;
    at0 = s.g * V;
    step = G * V;
    const Vec<T, V> pad = Vec<T, V>::splat(fill);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const T* r = base + (s.row + k) * ncols + at0;
      const bool in = on && k < nk;
#pragma unroll
      for (int j = 0; j < P; ++j, r += step) x[k][j] = in ? vload<V>(r, 0) : pad;
    }
  }
  // stores out(k, j) to pack j of row k of dst, for the rows inside
  template <class F> PK_DEV void store(T* dst, u32 ncols, const RowSlot& s, F&& out) const {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      T* r = dst + (s.row + k) * ncols + at0;
      if (on && k < nk) {
#pragma unroll
        for (int j = 0; j < P; ++j, r += step) vstore<V>(r, 0, out(k, j));
      }
    }
  }
};

// Stream path: one row in chunks of P packs per thread (chunk c, pack j: the row's pack
// (c*P + j)*G + g), visited by passes in alternating directions; the chunk in registers (cur) is
// not loaded again. Padding as RowTile's. A chunk's bounds are worked out where they are used, not
// kept in members from its load (H200, softmax f32 4096x4096: 79% of copy in this form; 60% in a
// build that kept them, among other differences). A second buffer that loaded the next chunk
// while f worked on this one took the kernel from 165 registers to 196 and its 512-2048-column
// rows from 86-95% to 68-80% of copy; two buffers of half a chunk each, the next one's loads in
// flight during f, cost softmax 8 to 22 points at 4096x4096 and 2048-16384 columns (45% more code,
// bf16 at 102 registers); the next chunk copied into 4 KB of shared memory (cp.async, no register
// held) while f worked on this one, f16/bf16 at 64 registers: -2 to -17 from 1024 columns up (f16
// 1024x16384 60 -> 43, 4096x4096 80 -> 72; through L1, cp.async.ca, the same). sm_90's bulk
// prefetch into L2 of the next one to four chunks was slower on every row of two chunks or more
// (H200, % of copy: softmax f32 1024x16384 67 -> 58-63, f16 4096x4096 78 -> 69-71), and so was the
// next chunk asked of L1 or L2 by each thread (prefetch.global, a 128-byte line a thread) before f
// (H100: softmax f16/bf16 8192-16384 columns -2 to -7; f32 -2 to +2.5, then -7 to -2 in a rerun).
// Keep: chunks 0 .. nkeep-1 (as many whole chunks as keep_len packs hold) are also kept in `keep`
// (shared memory, each thread its own packs: no barrier) from their first load on, so later passes
// read them from there rather than from memory. A compile-time choice, so that the kernels without
// a keep compile as they did: with the shared loads and stores both in a kernel, every AMD target
// put the registers' chunk in scratch (320 bytes a lane for f32 softmax).
template <class T, int V, int P, bool Keep = false>
struct RowChunks {
  const T* row;
  u32 npk;
  unsigned G, g;
  int nch, cur;  // chunks, the chunk in x
  Vec<T, V>* keep;
  int nkeep, nkept;  // chunks kept, and of them those in keep now (all after the first pass)
  Vec<T, V> x[P];

  PK_DEV RowChunks(const T* r, u32 ncols, Vec<T, V>* keep_packs = nullptr, u32 keep_len = 0)
      : row(r), npk(ncols / V), G(block_threads()), g(thread_in_block()), keep(keep_packs), nkept(0) {
    nch = (int)((npk + (u32)P * G - 1) / ((u32)P * G));
    nkeep = (int)(keep_len / ((u32)P * G));
    cur = -1;
  }
  PK_DEV u32 at(int c) const { return ((u32)c * P * G + g) * V; }  // element offset of pack 0 of chunk c
  PK_DEV bool full(int c) const { return (u32)(c + 1) * P * G <= npk; }  // P packs on every thread
  PK_DEV int packs(int c) const {  // this thread's packs in chunk c
    const u32 first = (u32)c * P * G + g;
    return first < npk ? (int)((npk - first + G - 1) / G) : 0;
  }
  // f(c, fresh): chunk c is in x; fresh when it was loaded for this visit. fill: the padding, an
  // argument rather than a member: `in ? *p : member` became a select of pointers into a private
  // copy of the object on the element path (scratch on every AMD target). CountOnce: the chunk
  // count read into a local before the loop (f holds a reference to *this, so the member is read
  // again each time round): a choice for ptxas's uniform prologue, see kNormCountOnce.
  template <Ld L, bool CountOnce = false, class F> PK_DEV void pass(bool forward, T fill, F&& f) {
    const int n = nch;
    for (int i = 0; i < (CountOnce ? n : nch); ++i) {
      const int c = forward ? i : (CountOnce ? n : nch) - 1 - i;
      const bool fresh = c != cur;
      if (fresh) {
        Vec<T, V>* k = Keep ? keep + (u32)c * P * G + g : nullptr;  // (no offset on a null keep)
        if (Keep && c < nkept) {
#pragma unroll
          for (int j = 0; j < P; ++j) x[j] = k[j * G];
        } else {
          const bool all = full(c);
          const int np = packs(c);
          const T* q = row + at(c);
#pragma unroll
          for (int j = 0; j < P; ++j, q += G * V) x[j] = all || j < np ? vload_l2<L, V>(q) : Vec<T, V>::splat(fill);
          if (Keep && c < nkeep) {
#pragma unroll
            for (int j = 0; j < P; ++j) k[j * G] = x[j];
          }
        }
        cur = c;
      }
      f(c, fresh);
    }
    nkept = nkeep;
  }
  // stores out(j) to each pack of chunk c (== cur) inside the row
  template <class F> PK_DEV void store(T* dst, int c, F&& out) const {
    const bool all = full(c);
    const int np = packs(c);
    T* q = dst + at(c);
#pragma unroll
    for (int j = 0; j < P; ++j, q += G * V)
      if (all || j < np) vstore_l2<V>(q, out(j));
  }
};

// Rows of whole packs and every pointer on a 16-byte boundary (a null alpha or beta is 0: aligned).
// Idle blocks run this test. Without the pointers in it (idle test on ncols and the block's shape,
// the pointers tested by working blocks, which then take unaligned rows on a second batch path of
// element loads and stores: the norms' idle path 40-42 -> 36 instructions) the 16-bit rows gained
// 0 to 3 points and the f32 ones lost up to 9 (H200, % of copy, side by side: layernorm f16
// 4096x4096 68 -> 71, 8192x2048 55 -> 58; layernorm f32 4096x4096 90 -> 83, 2048x8192 89 -> 82,
// softmax f32 2048x8192 80 -> 71, 156 registers where 139; layernorm bf16 2048x8192 77 -> 74). The
// block's unaligned rows as a loop on the stream path in elements in place of the second batch path
// was slower still (layernorm f32 4096x4096 90 -> 75: 68 bytes of spills where 16).
template <class T, int V> PK_DEV bool aligned_rows(u32 ncols, const T* a, const T* b, const T* c = nullptr,
                                                   const T* d = nullptr) {
  // one test, no branch: idle blocks run it (ncols % V == 0 is ncols * sizeof(T) on a 16-byte boundary)
  return (((usize)a | (usize)b | (usize)c | (usize)d | (usize)ncols * sizeof(T)) & (sizeof(T) * V - 1)) == 0;
}

// Runs f(Int<P>()) for the power of two P == p (1 <= p <= PMAX).
template <int P, int PMAX, class F> PK_DEV void with_packs(int p, F&& f) {
  if constexpr (P < PMAX) {
    if (p > P) return with_packs<2 * P, PMAX>(p, f);
  }
  f(Int<P>());
}

// Row dispatch: the batch path when plan_rows has a plan, else the stream path in 16-byte packs
// (aligned) or in elements: batch(V, P, K, lg_g) with V, P and K as Int<>s. Idle blocks of the batch
// path return here, before the dispatch on P.
template <class T, int PMAX, int KMAX, int CHUNK, class B, class S>
PK_DEV void row_dispatch(u32 ncols, bool aligned, B&& batch, S&& stream) {
  constexpr int V = 16 / sizeof(T);
  const unsigned nt = block_threads();
  auto run_batch = [&](u32 lg_p, u32 lg_g) {
    with_packs<1, PMAX>(1 << lg_p, [&](auto P) {
      batch(Int<V>(), P, Int<RowsPerGroup<PMAX, KMAX, decltype(P)::v>::v>(), lg_g);
    });
  };
  if constexpr (sizeof(T) == 2) {  // flat_plan
    const FlatPlan p = flat_plan<PMAX, KMAX, CHUNK>(ncols / V, nt);
    const bool packs = aligned && (nt & (nt - 1)) == 0;  // Candle's blocks: 32 or 1024 threads
    if (packs && p.groups != 0 && (blockIdx.x & p.mask) != 0) return;  // another block's rows
    if (packs && p.groups != 0 && !p.single) return run_batch(p.lg_p, p.lg_g);
    if (packs) return stream(Int<V>());
    return stream(Int<1>());
  }
  if (aligned && (nt & (nt - 1)) == 0) {
    const u32 lg_nt = log2_pow2(nt);
    const RowPlan p = plan_rows<PMAX, KMAX, CHUNK>(ncols / V, lg_nt);
    if (p.fits) {
      if ((blockIdx.x & ((1u << (lg_nt - p.lg_g + p.lg_k)) - 1)) != 0) return;  // another block's rows
      if (!p.single) return run_batch(p.lg_p, p.lg_g);
    }
    stream(Int<V>());
    return;
  }
  stream(Int<1>());
}

// ------------------------------------------------------------------------------- softmax
// max in T, e = exp(x - max) in T, sum in float (double for f64), dst = e * (1/sum) with 1/sum
// rounded to T (Candle's reduce.cu). C == A for every T here.
// The max is fmax (NaN ignored) where Candle's f16/bf16 maxg propagates NaN: a NaN in a row makes
// every output NaN either way (its exp poisons the sum), and fmax is one instruction where maxg's
// NaN tests took a compare mask per element (SGPR spills on CDNA).
template <class T> using SmC = typename Num<T>::C;
constexpr int kSoftmaxThreads = 256;  // the launch bound (Candle: 32)
template <class T> using SmScratch = GroupScratch<SmC<T>, PK_SOFTMAX_ROWS, kSoftmaxThreads>;

template <class T> PK_DEV SmC<T> sm_max(SmC<T> a, SmC<T> b) {
  if constexpr (sizeof(SmC<T>) == 8) return fmax(a, b);
  else return fmaxf(a, b);
}
template <class T, int V> PK_DEV SmC<T> pack_max(const Vec<T, V>& x, SmC<T> m) {
  if constexpr (kPairs<T, V>) {  // in T, a word at a time: no conversion the exp loop could reuse
    u32 w = x.w[0];
#pragma unroll
    for (int i = 1; i < V / 2; ++i) w = Pair<T>::max(w, x.w[i]);
    return fmaxf(m, fmaxf(Pair<T>::lo(w), Pair<T>::hi(w)));
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) m = sm_max<T>(m, Cv<T>::in(x.get(e)));
    return m;
  }
}
// e = exp(x - max) is kept in the row's registers (in T: it is already rounded to T) for the write.
// f16/bf16: exp as 2^(v*log2 e), one multiply and the hardware exp2 (Candle's hexp is the same
// ex2.approx): its error, a few float ulps (the product's rounding times |v*log2 e| < 200 among
// them), is far under half an f16 or bf16 ulp, where expf adds a range reduction to every element
// of a kernel that issue slots bound (ncu, H200, softmax f16 4096x4096: 61% of issue slots busy at
// 3.7 warps a scheduler). f32 keeps expf: its 16-ulp tolerance is narrower than that product error.
constexpr float kLog2e = 1.44269504088896341f;
// e = exp(d), d = x - max <= 0 (or NaN), for an e rounded to T. f16 rounds every result under 2^-25
// to 0, so flushing results and inputs under 2^-126 cannot change an f16 e: on NVIDIA,
// ex2.approx.ftz alone, where exp2f adds a range test and two multiplies for subnormal results (the
// same MUFU.EX2 above 2^-126; H200, % of copy: f16 4096x4096 79 -> 84, 512-16384 columns -2 to +3).
// bf16 keeps subnormal results (Candle's uexp_bf16(-88.5) is 0x0028): 2^(v+8), always normal for
// a result bf16 does not round to 0, times 2^-8 (exact, or the one rounding of a subnormal result),
// with v+8 one fma: 3 instructions where exp2f took 5 (a bf16 softmax chunk 580 -> 454
// instructions, sm_90; softmax_bf16's 28 bytes of spills gone). v+8 rounds at 2^-22 where v did at
// 2^-25 for |v| < 1: 1.7e-7 of the result, against bf16's half ulp of 2^-9. H100, side by side,
// two runs (% of copy): 4096x4096 78-79 -> 79.4 and 81.1 -> 81.5, 512-2048 columns -0.4 to +3.4,
// 2048x8192 70-70.4 -> 72.0 and 73.0 -> 72.5, 1024x16384 61-62 -> 62.6 and 63.2 -> 63.9; the pr and
// nightly sweeps pass. (An
// ex2.approx.ftz for a bf16 pack whose every d was >= -87, exp2f otherwise, was no faster: 8192 /
// 16384 columns -3.)
#if defined(PK_NVIDIA) && defined(__CUDA_ARCH__)
PK_DEV float ex2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#endif
template <class T> PK_DEV float exp_e(float d) {
#if defined(PK_NVIDIA) && defined(__CUDA_ARCH__)
  if constexpr (std::is_same<T, f16>::value) return ex2_ftz(d * kLog2e);
  else return ex2_ftz(fmaf(d, kLog2e, 8.f)) * 0x1p-8f;
#endif
  return exp2f(d * kLog2e);
}
template <class T> PK_DEV SmC<T> sm_exp(SmC<T> x, SmC<T> m) {
  if constexpr (sizeof(T) == 2) return Cv<T>::rd(exp_e<T>(Cv<T>::rd(x - m)));
  else return Cv<T>::rd(expg<T>(Cv<T>::rd(x - m)));
}
template <class T> PK_DEV SmC<T> sm_inv(SmC<T> sum) {
  return Cv<T>::rd((SmC<T>)((SmC<T>)1 / sum));  // f16/bf16: 1/sum rounded to T first
}
// x := e = exp(x - max), each rounded to T, added to s (in C). Pairs: x - max in T (one rounding,
// as Candle's T subtraction), e rounded to T two at a time, the pack's words summed as a tree and
// then added to s (one dependent add on s a pack, not one a word; speed unchanged, H100).
template <class T, int V> PK_DEV void exp_pack(Vec<T, V>& x, SmC<T> m, SmC<T>& s) {
  if constexpr (kPairs<T, V>) {
    const u32 m2 = Pair<T>::pack(m, m);  // exact: m is a T value
    SmC<T> w[V / 2];
#pragma unroll
    for (int i = 0; i < V / 2; ++i) {
      const u32 d = Pair<T>::sub(x.w[i], m2);
      x.w[i] = Pair<T>::pack(exp_e<T>(Pair<T>::lo(d)), exp_e<T>(Pair<T>::hi(d)));
      w[i] = Pair<T>::lo(x.w[i]) + Pair<T>::hi(x.w[i]);
    }
#pragma unroll
    for (int h = V / 4; h >= 1; h /= 2)
#pragma unroll
      for (int i = 0; i < h; ++i) w[i] += w[i + h];
    s += w[0];
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {  // padding: exp(-inf - max) = 0
      const SmC<T> ex = sm_exp<T>(Cv<T>::in(x.get(e)), m);
      x.set(e, Cv<T>::out(ex));
      s += ex;
    }
  }
}
// dst's pack: e * inv in T (inv is a T value; the product of two 16-bit values is exact in float).
template <class T, int V> PK_DEV Vec<T, V> scale_pack(const Vec<T, V>& e, SmC<T> inv) {
  if constexpr (kPairs<T, V>) {
    const u32 i2 = Pair<T>::pack(inv, inv);
    Vec<T, V> y;
#pragma unroll
    for (int i = 0; i < V / 2; ++i) y.w[i] = Pair<T>::mul(e.w[i], i2);
    return y;
  } else {
    return make_pack<T, V>([&](int k) { return Cv<T>::in(e.get(k)) * inv; });
  }
}

template <class T, int V, int P, int K>
PK_DEV void softmax_batch(const T* src, T* dst, u32 ncols, u32 lg_g, SmScratch<T> (&smem)[2]) {
  typedef SmC<T> C;
  const unsigned G = 1u << lg_g;
  const RowSlot s = row_slot(lg_g, K);
  RowTile<T, V, P, K> t;
  t.load(src, ncols, s, G, Cv<T>::out(Limits<T>::lowest()));
  C m[K], sum[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    m[k] = Limits<T>::lowest();
#pragma unroll
    for (int j = 0; j < P; ++j) m[k] = pack_max(t.x[k][j], m[k]);
  }
  group_allreduce(m, G, smem[0], [](C a, C b) { return sm_max<T>(a, b); });
#pragma unroll
  for (int k = 0; k < K; ++k) {
    sum[k] = 0;
#pragma unroll
    for (int j = 0; j < P; ++j) exp_pack(t.x[k][j], m[k], sum[k]);
  }
  group_allreduce(sum, G, smem[1], [](C a, C b) { return a + b; });
#pragma unroll
  for (int k = 0; k < K; ++k) sum[k] = sm_inv<T>(sum[k]);
  t.store(dst, ncols, s, [&](int k, int j) { return scale_pack(t.x[k][j], sum[k]); });
}

// One row per block. A row of one chunk: max, sum and write on the registers (one read). Longer
// rows: f32/f64 take max and sum in one pass (the sum rescaled when the running max grows: e is
// not rounded to T, so that is float rounding only), then write: 2 reads of the row, less the
// chunks kept in shared memory; f16/bf16 round each e to T under the final max, so max, sum and
// write are 3 passes. Each pass after the first starts on the chunk still in registers. (f16/bf16
// max and sum in one pass under the warp's running max, only the chunks before its last rise summed
// again, was slower: 4096-16384 columns -2 to -8 points, H200. The three passes' memory traffic
// alone, bench/row_passes.py, runs at 92-93 / 92-93 / 83% of copy at 4096 / 8192 / 16384 columns,
// the f16 kernel at 84 / 73 / 61 (exp_e); e written to dst by the sum pass and read back by the
// write pass, so that its exp is worked out once, was slower still: 81 -> 72, 73 -> 66, 61 -> 58.)
// Also slower (H200, % of copy, side by side, f16 / bf16 1024x16384 first): the whole 16-bit row
// asked of L2 at once by one thread (sm_90 bulk prefetch, as norm_stream does) 62 -> 58 / 59 -> 56,
// 2048x8192 and 4096x4096 -3 to -5; e summed by tensor-core mma (m16n8k16 against a column of
// ones, a pack an mma: 8 per chunk where 64 conversions and adds) 62 -> 61 / 59 -> 57, its mma a
// serial chain; pack j of the pass's next chunk loaded into x[j] as soon as f is done with pack j
// (the next chunk in flight in the registers this one frees) f16 -1 to +1, bf16 -1 to -9 (80
// registers: 4096x4096 79 -> 70). ncu, f16 1024x16384: 1.9 warps a scheduler, one instruction
// issued every 5.7 cycles; stalls: fixed-latency dependencies 27%, memory 22%, issuing 18%,
// instruction fetch 13% (at 4096x4096 the fetch is 29%: the passes' unrolled code).
template <class T> constexpr u32 kSoftmaxKeep = sizeof(T) >= 4 ? PK_SOFTMAX_KEEP : 0;
template <class T> struct alignas(16) SmKeep {
  u32 w[kSoftmaxKeep<T> >= 16 ? kSoftmaxKeep<T> / 4 : 4];
};
template <class T, int V, int P>
PK_DEV void softmax_stream(const T* src, T* dst, u32 ncols, SmScratch<T> (&smem)[2], SmKeep<T>& keep) {
  typedef SmC<T> C;
  const usize row = blockIdx.x;
  const unsigned nt = block_threads();
  const C neg_inf = Limits<T>::lowest();
  constexpr bool kKeep = V > 1 && kSoftmaxKeep<T> >= sizeof(Vec<T, V>);
  RowChunks<T, V, P, kKeep> rc(src + row * ncols, ncols, reinterpret_cast<Vec<T, V>*>(keep.w),
                               kKeep ? kSoftmaxKeep<T> / sizeof(Vec<T, V>) : 0);
  const T pad = Cv<T>::out(neg_inf);
  C mx[1] = {neg_inf}, sm[1] = {0};
  bool forward = true;  // direction of the next pass
  bool x_holds_e = false;
  constexpr bool kOnline = sizeof(T) >= 4;  // f32, f64
  if (kOnline && rc.nch > 1) {
    // this thread's running max m and sum s of exp(x - ref), ref = m (0 while m is -inf: then s
    // holds zeros or a NaN, and exp(-inf - 0) adds 0); the sum is rescaled when m grows
    C m = neg_inf, s = 0;
    rc.template pass<Ld::again>(forward, pad, [&](int, bool) {
      C cm = neg_inf;
#pragma unroll
      for (int j = 0; j < P; ++j) cm = pack_max(rc.x[j], cm);
      if (cm > m) {
        if (m != neg_inf) s *= expg<T>(m - cm);
        m = cm;
      }
      const C ref = m == neg_inf ? (C)0 : m;
#pragma unroll
      for (int j = 0; j < P; ++j)
#pragma unroll
        for (int e = 0; e < V; ++e) s += expg<T>(Cv<T>::in(rc.x[j].get(e)) - ref);
    });
    forward = !forward;
    mx[0] = m;
    group_allreduce(mx, nt, smem[0], [](C a, C b) { return sm_max<T>(a, b); });
    sm[0] = s == 0 ? s : s * expg<T>((m == neg_inf ? (C)0 : m) - mx[0]);
  } else {
    rc.template pass<Ld::again>(forward, pad, [&](int, bool) {
#pragma unroll
      for (int j = 0; j < P; ++j) mx[0] = pack_max(rc.x[j], mx[0]);
    });
    forward = !forward;
    group_allreduce(mx, nt, smem[0], [](C a, C b) { return sm_max<T>(a, b); });
    rc.template pass<Ld::again>(forward, pad, [&](int, bool) {  // e stays in x: the write pass starts on this chunk
#pragma unroll
      for (int j = 0; j < P; ++j) exp_pack(rc.x[j], mx[0], sm[0]);
    });
    forward = !forward;
    x_holds_e = true;
  }
  group_allreduce(sm, nt, smem[1], [](C a, C b) { return a + b; });
  const C inv = sm_inv<T>(sm[0]);
  rc.template pass<Ld::last>(forward, pad, [&](int c, bool fresh) {
    const bool e_in_x = x_holds_e && !fresh;
    rc.store(dst + row * ncols, c, [&](int j) {
      Vec<T, V> e = rc.x[j];
      C s = 0;  // unused: the sum is known
      if (!e_in_x) exp_pack(e, mx[0], s);
      return scale_pack(e, inv);
    });
  });
}

// 16 bytes from global into shared memory with no register held (NVIDIA sm_80+: cp.async, all a
// thread's in flight at once; elsewhere a load and a store), and the wait for this thread's copies.
template <class T, int V> PK_DEV void copy_to_shared(Vec<T, V>* sh, const T* p) {
#if defined(PK_L2_HINTS)
  if constexpr (sizeof(Vec<T, V>) == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((u32)__cvta_generic_to_shared(sh)), "l"(p)
                 : "memory");
    return;
  }
#endif
  *sh = vload<V>(p, 0);
}
PK_DEV void copies_done() {
#if defined(PK_L2_HINTS)
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
// Rows of up to P packs a thread in registers and PK_SOFTMAX_RESIDENT packs of the block in shared
// memory (each thread its own: packs g, g + G, ...; no barrier): read once, e kept where x was, as the
// batch path does (one exp an element, where the stream path worked out two). The row's packs past
// P * G go to shared memory first, so that they are in flight while the registers' are loaded.
template <class T> constexpr u32 kSoftmaxResident = sizeof(T) == 2 ? PK_SOFTMAX_RESIDENT : 0;
template <class T> struct alignas(16) SmResident {
  u32 w[kSoftmaxResident<T> > 0 ? kSoftmaxResident<T> * 4 : 4];
};
template <class T, int V, int P>
PK_DEV void softmax_resident(const T* src, T* dst, u32 ncols, SmScratch<T> (&smem)[2], SmResident<T>& keep) {
  typedef SmC<T> C;
  const usize row = blockIdx.x;
  const unsigned G = block_threads(), g = thread_in_block();
  const u32 npk = ncols / V, first = (u32)P * G;  // packs: the row's, and those in registers
  const T* s = src + row * ncols;
  T* d = dst + row * ncols;
  Vec<T, V>* sh = reinterpret_cast<Vec<T, V>*>(keep.w);
  for (u32 i = g; first + i < npk; i += G) copy_to_shared<T, V>(sh + i, s + (first + i) * V);
  const Vec<T, V> pad = Vec<T, V>::splat(Cv<T>::out(Limits<T>::lowest()));
  Vec<T, V> x[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const u32 k = (u32)j * G + g;
    x[j] = k < npk ? vload_l2<Ld::last, V>(s + k * V) : pad;
  }
  C mx[1] = {Limits<T>::lowest()}, sm[1] = {0};
#pragma unroll
  for (int j = 0; j < P; ++j) mx[0] = pack_max(x[j], mx[0]);
  copies_done();
  for (u32 i = g; first + i < npk; i += G) mx[0] = pack_max(sh[i], mx[0]);
  group_allreduce(mx, G, smem[0], [](C a, C b) { return sm_max<T>(a, b); });
#pragma unroll
  for (int j = 0; j < P; ++j) exp_pack(x[j], mx[0], sm[0]);  // padding: exp(-inf - max) = 0
  for (u32 i = g; first + i < npk; i += G) {
    Vec<T, V> e = sh[i];
    exp_pack(e, mx[0], sm[0]);
    sh[i] = e;
  }
  group_allreduce(sm, G, smem[1], [](C a, C b) { return a + b; });
  const C inv = sm_inv<T>(sm[0]);
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const u32 k = (u32)j * G + g;
    if (k < npk) vstore_l2<V>(d + k * V, scale_pack(x[j], inv));
  }
  for (u32 i = g; first + i < npk; i += G) vstore_l2<V>(d + (first + i) * V, scale_pack(sh[i], inv));
}

template <class T> constexpr int kSoftmaxPacks = sizeof(T) == 4 ? PK_SOFTMAX_PACKS : PK_SOFTMAX_PACKS / 2;
// PK_SOFTMAX_BOUNDS: 16-bit softmax at 64 registers, so that all of a 4096x4096 launch's blocks fit an
// SM's registers (softmax_resident spills 4-8 bytes so)
template <class T> constexpr int kSoftmaxMinBlocks = sizeof(T) == 2 ? 4 : 0;

template <class T>
PK_DEV void softmax(const T* x, T* dst, int n_cols) {
  __shared__ SmScratch<T> smem[2];  // max, sum
  __shared__ SmKeep<T> keep;
  __shared__ SmResident<T> resident;
  const u32 ncols = (u32)n_cols;
  row_dispatch<T, kSoftmaxPacks<T>, PK_SOFTMAX_ROWS, kSoftmaxPacks<T>>(
      ncols, aligned_rows<T, 16 / sizeof(T)>(ncols, x, dst),
      [&](auto V, auto P, auto K, u32 lg_g) {
        softmax_batch<T, decltype(V)::v, decltype(P)::v, decltype(K)::v>(x, dst, ncols, lg_g, smem);
      },
      [&](auto V) {
        constexpr int v = decltype(V)::v;
        if constexpr (v > 1 && kSoftmaxResident<T> > 0) {
          if (ncols / v <= (u32)kSoftmaxPacks<T> * block_threads() + kSoftmaxResident<T>)
            return softmax_resident<T, v, kSoftmaxPacks<T>>(x, dst, ncols, smem, resident);
        }
        softmax_stream<T, v, kSoftmaxPacks<T>>(x, dst, ncols, smem, keep);
      });
}

// --------------------------------------------------------------------------- rms/layer norm
// float statistics (f64 rows are read as float): rmsnorm sum of squares, rsqrtf(mean + eps),
// T(scale * x * alpha); layernorm one-pass mean and E[x^2] - mean^2, rsqrtf(var + eps),
// T((x - mean) * inv_std * alpha + beta). alpha, beta may be null.
template <bool LN> struct NormStats;                       // per-row partial sums
// The batch path's packs a thread (P <= kNormPacks) and rows a group (K <= kNormRows): f16, bf16 and
// layernorm f32 4 packs, one row (64 KB of rows in flight per working 1024-thread block); rmsnorm f32
// and f64 2 packs, 2 rows. H200, % of copy, 2 packs -> 4: rmsnorm f16 1024x16384 68 -> 88, bf16
// 68 -> 84, layernorm f32 2048x8192 59 -> 79, f16 1024x16384 56 -> 77; rmsnorm f32 4096x4096
// 84 -> 63 and 8192x2048 74 -> 61 (it spills at 4 packs under the cap; f64 is not measured). The
// stream path's chunk: kNormChunk packs. alpha and beta are loaded by each row's group after its
// reduction (L1 hits after the first group). Staged as floats in shared memory, converted once by
// each working block, they were slower (H200, % of copy: layernorm f16 4096x4096 64 -> 39, and
// 32768x512 79 -> 25, where 33 KB of static shared memory leaves six 32-thread blocks an SM); loaded
// one pack ahead of the pack they scale, no faster (rmsnorm f16 4096x4096 73 -> 72); asked of L1
// (prefetch.global.L1) right after the row's load, slower on every row (layernorm f32 65536x256
// 80 -> 27, f16 4096x4096 68 -> 60). 16-bit rows at 2 packs a thread: 4096 columns -1 to -8
// points, 16384 columns -9 to -16 (rmsnorm f16 2048x8192 alone +2). ncu, f16 4096x4096, before
// plan_rows was straight-line: the schedulers issued on 67% (rmsnorm) and 78% (layernorm) of
// cycles; by the SASS, a warp of the 7 blocks in 8 that return at once ran 46 instructions (40-42
// now), about 5 M of rmsnorm's 12 M.
template <bool LN, class T> constexpr bool kNormWide = sizeof(T) == 2 || (LN && sizeof(T) == 4);
template <bool LN, class T> constexpr int kNormPacks = kNormWide<LN, T> ? 4 : 2;
template <bool LN, class T> constexpr int kNormRows = kNormWide<LN, T> ? 1 : 2;
constexpr int kNormChunk = 2;
// rmsnorm_f32's stream passes read their chunk count once: ptxas then loads its idle prologue into
// uniform registers as it does the other norms' (plan_rows; H200, % of copy, side by side: 16384x1024
// 59 -> 68, 8192x2048 75 -> 81, 4096x4096 87 -> 91). The other norms are slower so (layernorm f16
// 8192 and 16384 columns -8 to -10) and their SASS is left as it was.
template <bool LN, class T> constexpr bool kNormCountOnce = !LN && sizeof(T) == 4;
typedef GroupScratch<float, 4, kMaxBlock> NormScratch;  // N * K <= 4
template <> struct NormStats<false> { static constexpr int N = 1; };
template <> struct NormStats<true> { static constexpr int N = 2; };

template <bool LN> PK_DEV void stats_add(float* st, float v) {
  if constexpr (LN) {
    st[0] += v;
    st[1] += v * v;
  } else {
    st[0] += v * v;
  }
}

// (a, b) of y = x * a + b from a row's sums: rmsnorm a = rsqrtf(ss/n + eps), b = 0 (unused);
// layernorm a = inv_std, b = mean (y = (x - mean) * inv_std).
template <bool LN> PK_DEV void norm_coef(const float* st, u32 ncols, float eps, float& scale, float& mean) {
  if constexpr (LN) {
    mean = st[0] / (float)ncols;
    const float var = st[1] / (float)ncols - mean * mean;
    scale = rsqrtf(var + eps);
  } else {
    mean = 0.f;
    scale = rsqrtf(st[0] / (float)ncols + eps);
  }
}

// alpha's and beta's pack at element c0 (16-byte loads on the aligned path), when given. Layernorm
// takes 1 and -0 for a missing alpha or beta, which leave its fma exact: fma(x, 1, b) = x + b,
// fma(x, a, -0) = x * a. Given: alpha and beta both given (Candle's LayerNorm), loaded with no
// fallback, whose constants took 8 predicated moves a pack: layernorm f32's batch path alone
// (H200, % of copy, side by side: 4096x4096 85 -> 90, 2048x8192 84 -> 88, 1024x16384 82 -> 87).
// 16-bit layernorm was slower so, with 4% fewer instructions by ncu (f16 4096x4096 69 -> 65,
// 2048x8192 78 -> 72), and rmsnorm with a given alpha too (f16 4096x4096 79 -> 68).
template <bool LN, class T> constexpr bool kNormGiven = LN && std::is_same<T, f32>::value;
template <bool LN, class T, int V, bool Given = false> struct NormParams {
  Vec<T, V> a = {}, b = {};
  bool has_a;
  PK_DEV NormParams(const T* alpha, const T* beta, u32 c0) : has_a(Given || alpha != nullptr) {
    if constexpr (LN && Given) {
      a = vload<V>(alpha, c0);
      b = vload<V>(beta, c0);
    } else if constexpr (LN) {
      a = has_a ? vload<V>(alpha, c0) : Vec<T, V>::splat(Cv<T>::out(1.f));
      b = beta != nullptr ? vload<V>(beta, c0) : Vec<T, V>::splat(Cv<T>::out(-0.f));
    } else if (has_a) {
      a = vload<V>(alpha, c0);
    }
  }
};

// One pack of the output; p: the pack's alpha and beta. Candle's CUDA builds with -fmad=true, so its
// layernorm's lhs * a + b is one fma, as here (one instruction an element fewer than a product and
// a sum).
template <bool LN, class T, int V, bool Given>
PK_DEV Vec<T, V> norm_pack(const Vec<T, V>& x, float scale, float mean, const NormParams<LN, T, V, Given>& p) {
  return make_pack<T, V>([&](int e) {
    float v;
    if constexpr (LN) {
      v = fmaf(((float)Cv<T>::in(x.get(e)) - mean) * scale, (float)Cv<T>::in(p.a.get(e)),
               (float)Cv<T>::in(p.b.get(e)));
    } else {
      v = scale * (float)Cv<T>::in(x.get(e));
      if (p.has_a) v = v * (float)Cv<T>::in(p.a.get(e));
    }
    return (typename Num<T>::C)v;
  });
}

// A group's statistics and write, on its tile loaded by norm_batch. A function of its own only for
// ptxas: the same arithmetic, another register allocation (rmsnorm_f16's spills 8 -> 0 bytes,
// bf16's 20 -> 16). % of copy, side by side: H200, two runs, 16-bit rows +0 to +4 (rmsnorm f16
// 4096x4096 81 -> 85, 8192x2048 72 -> 75, 1024x16384 89 -> 91; layernorm bf16 4096x4096 69 -> 71),
// f32 -3 to +1 (layernorm 4096x4096 91 -> 89); H100, 16-bit +0 to +6 (rmsnorm f16 2048x8192
// 88 -> 94), layernorm f32 -1 to -4 (1024x16384 90 -> 86). A working block that took 2 or 4 times
// its rows a step at a time, the next step's rows loaded before this step's reduction so that they
// were in flight while it worked, was slower on every 1024-thread row (H200: rmsnorm f16 4096x4096
// 79 -> 61-66, layernorm f16 70 -> 47-51): under the 32-register cap its two tiles spilled 68-224
// bytes. The row's place worked out again after the reduction from an opaque copy of the thread's
// index, so that it is not kept across it (spills: layernorm f16 16 -> 12 bytes, bf16 40 -> 28,
// rmsnorm bf16 16 -> 8), was slower (H200, two runs: rmsnorm 8192x2048 -1 to -3 points, 16384x1024
// -2, layernorm 4096x4096 -1 to -2; rmsnorm bf16 2048x8192 +3 to +4).
template <bool LN, class T, int V, int P, int K, bool Given>
PK_DEV void norm_rows(const RowTile<T, V, P, K>& t, const RowSlot& s, T* dst, const T* alpha, const T* beta,
                      u32 ncols, float eps, u32 lg_g, NormScratch& smem) {
  constexpr int N = NormStats<LN>::N;
  float st[N * K];
#pragma unroll
  for (int i = 0; i < N * K; ++i) st[i] = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int j = 0; j < P; ++j)
#pragma unroll
      for (int e = 0; e < V; ++e) stats_add<LN>(st + N * k, (float)Cv<T>::in(t.x[k][j].get(e)));
  group_allreduce(st, 1u << lg_g, smem, [](float a, float b) { return a + b; });
  float scale[K], mean[K];
#pragma unroll
  for (int k = 0; k < K; ++k) norm_coef<LN>(st + N * k, ncols, eps, scale[k], mean[k]);
  t.store(dst, ncols, s, [&](int k, int j) {
    const NormParams<LN, T, V, Given> ab(alpha, beta, t.at0 + (u32)j * t.step);  // again per row: L1 hits
    return norm_pack<LN, T, V, Given>(t.x[k][j], scale[k], mean[k], ab);
  });
}

template <bool LN, class T, int V, int P, int K, bool Given>
PK_DEV void norm_batch(const T* src, T* dst, const T* alpha, const T* beta, u32 ncols, float eps, u32 lg_g,
                       NormScratch& smem) {
  const RowSlot s = row_slot(lg_g, K);
  RowTile<T, V, P, K> t;
  t.load(src, ncols, s, 1u << lg_g, Cv<T>::out(0));
  norm_rows<LN, T, V, P, K, Given>(t, s, dst, alpha, beta, ncols, eps, lg_g, smem);
}

// One row per block: the statistics pass, then the write pass backwards from the chunk in registers.
template <bool LN, class T, int V, int P>
PK_DEV void norm_stream(const T* src, T* dst, const T* alpha, const T* beta, u32 ncols, float eps,
                        NormScratch& smem) {
  constexpr int N = NormStats<LN>::N;
  const usize row = blockIdx.x;
#if defined(PK_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // 16-bit rows: the row asked of L2 at once (sm_90's bulk prefetch, one thread), as its two passes
  // read it; with it, ptxas loads rmsnorm_f16's prologue into uniform registers (plan_rows). Not for
  // f32: no change to its prologue, and its stream rows were no faster (rmsnorm f32 1024x16384, two
  // runs: 80 -> 79 and 84 -> 78% of copy).
  if constexpr (V > 1 && sizeof(T) == 2)
    if (thread_in_block() == 0)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src + row * ncols), "r"(ncols * (u32)sizeof(T))
                   : "memory");
#endif
  RowChunks<T, V, P> rc(src + row * ncols, ncols);
  const T pad = Cv<T>::out(0);
  float st[N];
#pragma unroll
  for (int i = 0; i < N; ++i) st[i] = 0.f;
  rc.template pass<Ld::again, kNormCountOnce<LN, T>>(true, pad, [&](int, bool) {
#pragma unroll
    for (int j = 0; j < P; ++j)
#pragma unroll
      for (int e = 0; e < V; ++e) stats_add<LN>(st, (float)Cv<T>::in(rc.x[j].get(e)));
  });
  group_allreduce(st, block_threads(), smem, [](float a, float b) { return a + b; });
  float scale, mean;
  norm_coef<LN>(st, ncols, eps, scale, mean);
  rc.template pass<Ld::last, kNormCountOnce<LN, T>>(false, pad, [&](int c, bool) {
    rc.store(dst + row * ncols, c, [&](int j) {
      const NormParams<LN, T, V> ab(alpha, beta, rc.at(c) + (u32)j * rc.G * V);
      return norm_pack<LN, T, V>(rc.x[j], scale, mean, ab);
    });
  });
}

// block_size (Candle passes blockDim.x) is not needed: the kernels stride by the block's threads.
template <bool LN, class T>
PK_DEV void norm(const T* x, T* dst, const T* alpha, const T* beta, int n_cols, float eps) {
  __shared__ NormScratch smem;
  const u32 ncols = (u32)n_cols;
  row_dispatch<T, kNormPacks<LN, T>, kNormRows<LN, T>, kNormChunk>(
      ncols, aligned_rows<T, 16 / sizeof(T)>(ncols, x, dst, alpha, beta),
      [&](auto V, auto P, auto K, u32 lg_g) {
        constexpr int v = decltype(V)::v, p = decltype(P)::v, k = decltype(K)::v;
        if (kNormGiven<LN, T> && alpha != nullptr && beta != nullptr)
          norm_batch<LN, T, v, p, k, kNormGiven<LN, T>>(x, dst, alpha, beta, ncols, eps, lg_g, smem);
        else
          norm_batch<LN, T, v, p, k, false>(x, dst, alpha, beta, ncols, eps, lg_g, smem);
      },
      [&](auto V) { norm_stream<LN, T, decltype(V)::v, kNormChunk>(x, dst, alpha, beta, ncols, eps, smem); });
}

// ----------------------------------------------------------------------------------- rope
// Candle launches one thread per pair (for_num_elems(el/2): block 1024). A thread per pair spent
// its time on two or three 32-bit divisions and 2-byte loads (H200, rope bf16 (1,32,4096,128): 47 us,
// 40% of copy). When the pairs come in packs (V consecutive pairs of one row: 16 bytes of x1 and of
// x2, `half` a multiple of V, pointers aligned), the working blocks of the elementwise kernels
// (common.h idle_block, vthreads) take a pack per thread: the index math once per pack, 16-byte
// loads and stores. Otherwise one pair per thread, as launched. Arithmetic in C, one rounding.
template <class T, int V>
PK_DEV void rotate_pack(const Vec<T, V>& x1, const Vec<T, V>& x2, const Vec<T, V>& c, const Vec<T, V>& s,
                        Vec<T, V>& y1, Vec<T, V>& y2) {
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const auto a = Cv<T>::in(x1.get(e)), b = Cv<T>::in(x2.get(e));
    const auto cc = Cv<T>::in(c.get(e)), ss = Cv<T>::in(s.get(e));
    y1.set(e, Cv<T>::out(a * cc - b * ss));
    y2.set(e, Cv<T>::out(a * ss + b * cc));
  }
}

template <class T>
PK_DEV void rotate(const T* src, const T* cos, const T* sin, T* dst, u32 i1, u32 i2, u32 cs) {
  Vec<T, 1> y1, y2;
  rotate_pack<T, 1>(Vec<T, 1>{src[i1]}, Vec<T, 1>{src[i2]}, Vec<T, 1>{cos[cs]}, Vec<T, 1>{sin[cs]}, y1, y2);
  dst[i1] = y1.x;
  dst[i2] = y2.x;
}

// rope and rope_thd over n elements: x1 at i1, x2 at i1 + half, cos/sin at cs for pair idx;
// index(idx, i1, cs). A pack's cos/sin batch (2*idx / stride_b) is one when stride_b is a multiple
// of 2V.
template <class T, class I>
PK_DEV void rope_halves(const T* src, const T* cos, const T* sin, T* dst, u32 n, u32 half, u32 stride_b,
                        I&& index) {
  constexpr int V = 16 / sizeof(T);
  const u32 npairs = n / 2;
  if (half % V == 0 && stride_b % (2 * V) == 0 && pack_aligned<V>(src) && pack_aligned<V>(dst) &&
      pack_aligned<V>(cos) && pack_aligned<V>(sin)) {
    if (idle_block()) return;
    const VThreads vt = vthreads();
#pragma unroll 1  // unrolled twice it spilled under PK_BOUNDS' 32 registers
    for (u32 g = (u32)vt.id; g < npairs / V; g += (u32)vt.step) {  // npairs / V + step < 2^32
      u32 i1, cs;
      index(g * V, i1, cs);
      Vec<T, V> y1, y2;
      rotate_pack<T, V>(vload<V>(src, i1), vload<V>(src, i1 + half), vload<V>(cos, cs), vload<V>(sin, cs), y1, y2);
      vstore<V>(dst, i1, y1);
      vstore<V>(dst, i1 + half, y2);
    }
    return;
  }
  const u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * idx >= n) return;
  u32 i1, cs;
  index(idx, i1, cs);
  rotate(src, cos, sin, dst, i1, i1 + half, cs);
}

// (Units of V pairs, two packs of x and a 16-byte pack of cos and of sin, in place of V/2: bf16
// (1,32,4096,128) 61.4 -> 62.1 and 62.4% of copy, H200, two runs, where its launch copy reaches 70-72;
// not worth a second pack path.)
template <class T>
PK_DEV void rope_i(const T* src, const T* cos, const T* sin, T* dst, u32 bh, u32 td, u32 stride_b) {
  // pairs (x[2i], x[2i+1]): a pack is V elements, V/2 pairs, their cos/sin V/2 consecutive values
  constexpr int V = 16 / sizeof(T), H = V / 2;
  const u32 npairs = bh * td / 2;
  auto cs_of = [&](u32 idx) {
    u32 cs = idx % (td / 2);
    if (stride_b > 0) cs += (2 * idx) / stride_b * (td / 2);
    return cs;
  };
  if (H > 0 && td % V == 0 && stride_b % V == 0 && pack_aligned<V>(src) && pack_aligned<V>(dst) &&
      pack_aligned<H>(cos) && pack_aligned<H>(sin)) {
    if (idle_block()) return;
    const VThreads vt = vthreads();
    for (usize g = vt.id; g < npairs / H; g += vt.step) {
      const u32 idx = (u32)g * H, cs = cs_of(idx);
      const Vec<T, V> x = vload<V>(src, 2 * idx);
      const Vec<T, H> c = vload<H>(cos, cs), s = vload<H>(sin, cs);
      Vec<T, V> y;
#pragma unroll
      for (int e = 0; e < H; ++e) {
        const auto a = Cv<T>::in(x.get(2 * e)), b = Cv<T>::in(x.get(2 * e + 1));
        const auto cc = Cv<T>::in(c.get(e)), ss = Cv<T>::in(s.get(e));
        y.set(2 * e, Cv<T>::out(a * cc - b * ss));
        y.set(2 * e + 1, Cv<T>::out(a * ss + b * cc));
      }
      vstore<V>(dst, 2 * idx, y);
    }
    return;
  }
  const u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * idx >= bh * td) return;
  rotate(src, cos, sin, dst, 2 * idx, 2 * idx + 1, cs_of(idx));
}

template <class T>
PK_DEV void rope(const T* src, const T* cos, const T* sin, T* dst, u32 bh, u32 td, u32 d, u32 stride_b) {
  rope_halves(src, cos, sin, dst, bh * td, d / 2, stride_b, [&](u32 idx, u32& i1, u32& cs) {
    const u32 i_bh = idx / (td / 2);
    const u32 i_td = idx - (td / 2) * i_bh;
    const u32 i_t = i_td / (d / 2);
    const u32 i_d = i_td - (d / 2) * i_t;
    i1 = i_bh * td + i_t * d + i_d;
    cs = i_t * (d / 2) + i_d;
    if (stride_b > 0) cs += (2 * idx) / stride_b * (td / 2);
  });
}

template <class T>
PK_DEV void rope_thd(const T* src, const T* cos, const T* sin, T* dst, u32 b, u32 t, u32 h, u32 d, u32 stride_b) {
  rope_halves(src, cos, sin, dst, b * t * h * d, d / 2, stride_b, [&](u32 idx, u32& i1, u32& cs) {
    const u32 i_bth = idx / (d / 2);
    const u32 i_d = idx - (d / 2) * i_bth;
    const u32 i_t = (i_bth / h) % t;
    i1 = i_bth * d + i_d;
    cs = i_t * (d / 2) + i_d;
    if (stride_b > 0) cs += (2 * idx) / stride_b * ((t * d) / 2);
  });
}

}  // namespace pk

// softmax: Candle launches 32 threads; a bound of 256 leaves room for a row's packs in registers
// on AMD too (the default 1024-thread bound caps a CDNA thread at 128 VGPRs).
// f16 and bf16 softmax at 64 registers (CUDA's meaning of the bounds' 2nd argument: 4 blocks of 256
// threads), so that Candle's 4096 one-warp blocks of a 4096x4096 softmax are resident at once, 32 an
// SM: at the 80 registers ptxas chose for f16, 25 an SM left a second wave (H200, % of copy: 77 ->
// 81; the other f16 rows within +-2); bf16 took 64 unbounded until flat_plan (77). f32 and f64 keep
// their registers for the row (f32 held to 128, 16 warps an SM rather than 14: +0.1 to +1.2 points
// on its rows, within the noise).
#if defined(PK_NVIDIA)
#define PK_NORM_BOUNDS __hip_cuda_launch_bounds__(1024, PK_NORM_MIN_BLOCKS)
#define PK_SOFTMAX_BOUNDS(T) __hip_cuda_launch_bounds__(pk::kSoftmaxThreads, pk::kSoftmaxMinBlocks<T>)
#else
#define PK_NORM_BOUNDS __launch_bounds__(1024)
#define PK_SOFTMAX_BOUNDS(T) __launch_bounds__(pk::kSoftmaxThreads)
#endif
#define PK_NN_ALL(T, SFX)                                                                                   \
  extern "C" __global__ PK_SOFTMAX_BOUNDS(T) void softmax_##SFX(const T* src, T* dst, int n_cols) {        \
    pk::softmax<T>(src, dst, n_cols);                                                                      \
  }                                                                                                         \
  extern "C" __global__ PK_NORM_BOUNDS void rmsnorm_##SFX(const T* src, T* dst, const T* alpha, int n_cols, \
                                                          int block_size, float eps) {                     \
    pk::norm<false, T>(src, dst, alpha, nullptr, n_cols, eps);                                             \
  }                                                                                                         \
  extern "C" __global__ PK_NORM_BOUNDS void layernorm_##SFX(const T* src, T* dst, const T* alpha,          \
                                                            const T* beta, int n_cols, int block_size,     \
                                                            float eps) {                                   \
    pk::norm<true, T>(src, dst, alpha, beta, n_cols, eps);                                                 \
  }                                                                                                         \
  extern "C" __global__ PK_BOUNDS void rope_i_##SFX(const T* src, const T* cos, const T* sin, T* dst, pk::u32 bh,    \
                                          pk::u32 td, pk::u32 stride_b) {                                  \
    pk::rope_i<T>(src, cos, sin, dst, bh, td, stride_b);                                                   \
  }                                                                                                         \
  extern "C" __global__ PK_BOUNDS void rope_##SFX(const T* src, const T* cos, const T* sin, T* dst, pk::u32 bh,      \
                                        pk::u32 td, pk::u32 d, pk::u32 stride_b) {                         \
    pk::rope<T>(src, cos, sin, dst, bh, td, d, stride_b);                                                  \
  }                                                                                                         \
  extern "C" __global__ PK_BOUNDS void rope_thd_##SFX(const T* src, const T* cos, const T* sin, T* dst, pk::u32 b,   \
                                            pk::u32 t, pk::u32 h, pk::u32 d, pk::u32 stride_b) {           \
    pk::rope_thd<T>(src, cos, sin, dst, b, t, h, d, stride_b);                                             \
  }

PK_NN_ALL(pk::f32, f32)
PK_NN_ALL(pk::f64, f64)
PK_NN_ALL(pk::f16, f16)
PK_NN_ALL(pk::bf16, bf16)
