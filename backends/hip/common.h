// Shared helpers for the bundled HIP implementation of Candle's elementwise
// kernel ABI (see docs/candle-kernel-abi.md). Device code only; the same source
// builds with hipcc (AMD) and, through include/hip/*, with nvcc / NVRTC.
#pragma once

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

// Fixed-width names without <stdint.h> so that NVRTC (no libc) works too.
namespace pk {
typedef unsigned char u8;
typedef unsigned short u16;
typedef short i16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef decltype(sizeof(0)) usize;  // == size_t
static_assert(sizeof(usize) == 8, "ABI needs a 64-bit size_t");
}  // namespace pk

#define PK_DEV __device__ __forceinline__

#if defined(__CUDACC__)
#define PK_NVIDIA 1  // CUDA compiler: native arithmetic already has CUDA's NaN bits
// Candle launches 1024-thread blocks; ask for two resident blocks per SM
// (<= 32 registers) so that enough loads are in flight to saturate HBM.
// (CUDA's meaning of the 2nd argument: the mapping's __launch_bounds__ keeps HIP's.)
#define PK_BOUNDS __hip_cuda_launch_bounds__(1024, 2)
#else
// HIP: the second argument means something else (min waves per EU); the
// max block size is all we promise.
#define PK_BOUNDS __launch_bounds__(1024)
#endif

namespace pk {

// ---------------------------------------------------------------- bit casts
PK_DEV u32 fbits(float x) { return __float_as_uint(x); }
PK_DEV float ffrom(u32 b) { return __uint_as_float(b); }
PK_DEV u64 dbits(double x) { return (u64)__double_as_longlong(x); }
PK_DEV double dfrom(u64 b) { return __longlong_as_double((long long)b); }
PK_DEV bool is_nan(float x) { return (fbits(x) & 0x7fffffffu) > 0x7f800000u; }
PK_DEV bool is_nan(double x) { return (dbits(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }

// CUDA's f32 arithmetic returns the canonical NaN 0x7fffffff.
PK_DEV float canon_nan(float r) { return is_nan(r) ? ffrom(0x7fffffffu) : r; }
// CUDA's f64 arithmetic propagates an input NaN (quieted) and creates the
// default NaN 0xfff8000000000000 for invalid operations. AMD creates
// 0x7ff8000000000000, so we rewrite that case (no-op when compiled by nvcc).
PK_DEV double quiet(double x) { return dfrom(dbits(x) | 0x0008000000000000ull); }
PK_DEV double fix_nan(double r, double a) {
#if defined(PK_NVIDIA) && !defined(PK_EMULATE_NAN_F64)
  (void)a;
  return r;
#else
  if (!is_nan(r)) return r;
  return is_nan(a) ? quiet(a) : dfrom(0xfff8000000000000ull);
#endif
}
PK_DEV double fix_nan(double r, double a, double b) {
#if defined(PK_NVIDIA) && !defined(PK_EMULATE_NAN_F64)
  (void)a; (void)b;
  return r;
#else
  if (!is_nan(r)) return r;
  if (is_nan(a)) return quiet(a);
  return is_nan(b) ? quiet(b) : dfrom(0xfff8000000000000ull);
#endif
}

// ------------------------------------------- round a wide float to a small one
// Rounds |x| (given as the bits of a finite, non-NaN IEEE value with FRAC
// fraction bits and exponent bias SBIAS) to nearest-even in a format with
// MBITS mantissa bits and exponent bias BIAS (with subnormals). Returns the
// encoded magnitude; it may exceed the largest finite encoding (caller decides
// between inf and saturation). Source subnormals round to 0 (true for every
// (source, target) pair used here).
template <class UInt, int FRAC, int SBIAS, int MBITS, int BIAS>
PK_DEV u32 round_magnitude(UInt mag) {
  const int efield = (int)(mag >> FRAC);
  if (efield == 0) return 0u;
  const int e = efield - SBIAS;  // unbiased exponent
  const UInt mant = (mag & ((((UInt)1) << FRAC) - 1)) | (((UInt)1) << FRAC);
  int shift = FRAC - MBITS;
  const int emin = 1 - BIAS;
  if (e < emin) shift += emin - e;
  if (shift > FRAC + 1) return 0u;  // below half the smallest subnormal
  if (e > BIAS + 2) return 0xffffffu;  // far above the range: overflow marker
  const UInt q = mant >> shift;
  const UInt rem = mant & ((((UInt)1) << shift) - 1);
  const UInt half = ((UInt)1) << (shift - 1);
  u32 r = (u32)q + ((rem > half || (rem == half && (q & 1))) ? 1u : 0u);
  if (e >= emin) r += (u32)(e + BIAS - 1) << MBITS;  // q carries the hidden bit
  return r;
}

}  // namespace pk

#include "fp8.h"

namespace pk {

// ------------------------------------------------------------------- bf16
struct bf16 {
  u16 bits;
};
PK_DEV float bf16_to_float(bf16 h) { return ffrom(((u32)h.bits) << 16); }  // keeps NaN payload
PK_DEV bf16 float_to_bf16(float f) {  // RNE, NaN -> 0x7fff (CUDA cvt.rn.bf16.f32)
  const u32 u = fbits(f);
  bf16 r;
  r.bits = ((u & 0x7fffffffu) > 0x7f800000u) ? (u16)0x7fff : (u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return r;
}
PK_DEV bf16 double_to_bf16(double d) {  // one rounding from double
  const u64 u = dbits(d);
  const u16 sign = (u16)((u >> 48) & 0x8000u);
  const u64 mag = u & 0x7fffffffffffffffull;
  bf16 r;
  if (mag > 0x7ff0000000000000ull) { r.bits = (u16)(sign | 0x7fc0u | (u16)((mag >> 45) & 0x3fu)); return r; }
  if (mag == 0x7ff0000000000000ull) { r.bits = (u16)(sign | 0x7f80u); return r; }
  u32 m = round_magnitude<u64, 52, 1023, 7, 127>(mag);
  if (m >= 0x7f80u) m = 0x7f80u;
  r.bits = (u16)(sign | m);
  return r;
}

// ------------------------------------------------------------------- f16
typedef __half f16;
PK_DEV u16 h_bits(f16 h) { return __half_as_ushort(h); }
PK_DEV f16 h_from(u16 b) { return __ushort_as_half(b); }
PK_DEV float half_to_float(f16 h) { return canon_nan(__half2float(h)); }  // CUDA: NaN -> 0x7fffffff
PK_DEV f16 float_to_half(float f) { return is_nan(f) ? h_from(0x7fff) : __float2half(f); }  // RNE
PK_DEV f16 double_to_half(double d) {  // one rounding from double
  const u64 u = dbits(d);
  const u16 sign = (u16)((u >> 48) & 0x8000u);
  const u64 mag = u & 0x7fffffffffffffffull;
  if (mag > 0x7ff0000000000000ull) return h_from((u16)(sign | 0x7e00u | (u16)((mag >> 42) & 0x1ffu)));
  if (mag == 0x7ff0000000000000ull) return h_from((u16)(sign | 0x7c00u));
  u32 m = round_magnitude<u64, 52, 1023, 10, 15>(mag);
  if (m >= 0x7c00u) m = 0x7c00u;
  return h_from((u16)(sign | m));
}

// ------------------------------------------------------------- dtype names
typedef float f32;
typedef double f64;
typedef fp8e4m3 f8e4m3;

// ---------------------------------------------------------- numeric traits
// Num<T>: C = compute type (float for f16/bf16/fp8, T otherwise);
// to_c: storage -> compute; from_c: compute -> storage (one rounding, CUDA
// NaN bits); rd: round to storage precision and back (f16/bf16 "arithmetic
// in the storage dtype"); identity for other types.
template <class T> struct Num {  // integers
  typedef T C;
  static PK_DEV C to_c(T x) { return x; }
  static PK_DEV T from_c(C x) { return x; }
  static PK_DEV C rd(C x) { return x; }
  static PK_DEV C kst(double v) { return (C)v; }
  static PK_DEV T fin1(C r, C) { return r; }
  static PK_DEV T fin2(C r, C, C) { return r; }
  static constexpr bool is_float = false;
  static constexpr bool nan_max = false;
};
template <> struct Num<float> {
  typedef float C;
  static PK_DEV C to_c(float x) { return x; }
  static PK_DEV float from_c(C x) { return canon_nan(x); }
  static PK_DEV C rd(C x) { return x; }
  static PK_DEV C kst(double v) { return (float)v; }
  static PK_DEV float fin1(C r, C) { return canon_nan(r); }
  static PK_DEV float fin2(C r, C, C) { return canon_nan(r); }
  static constexpr bool is_float = true;
  static constexpr bool nan_max = false;  // fmaxf: NaN ignored
};
template <> struct Num<double> {
  typedef double C;
  static PK_DEV C to_c(double x) { return x; }
  static PK_DEV double from_c(C x) { return x; }
  static PK_DEV C rd(C x) { return x; }
  static PK_DEV C kst(double v) { return v; }
  static PK_DEV double fin1(C r, C a) { return fix_nan(r, a); }
  static PK_DEV double fin2(C r, C a, C b) { return fix_nan(r, a, b); }
  static constexpr bool is_float = true;
  static constexpr bool nan_max = false;
};
template <> struct Num<f16> {
  typedef float C;
  static PK_DEV C to_c(f16 x) { return half_to_float(x); }
  static PK_DEV f16 from_c(C x) { return float_to_half(x); }
  static PK_DEV C rd(C x) { return __half2float(__float2half(x)); }
  static PK_DEV C kst(double v) { return __half2float(double_to_half(v)); }
  static PK_DEV f16 fin1(C r, C) { return float_to_half(r); }
  static PK_DEV f16 fin2(C r, C, C) { return float_to_half(r); }
  static constexpr bool is_float = true;
  static constexpr bool nan_max = true;  // __hmax_nan / max.NaN
};
template <> struct Num<bf16> {
  typedef float C;
  static PK_DEV C to_c(bf16 x) { return bf16_to_float(x); }
  static PK_DEV bf16 from_c(C x) { return float_to_bf16(x); }
  static PK_DEV C rd(C x) { return bf16_to_float(float_to_bf16(x)); }
  static PK_DEV C kst(double v) { return bf16_to_float(double_to_bf16(v)); }
  static PK_DEV bf16 fin1(C r, C) { return float_to_bf16(r); }
  static PK_DEV bf16 fin2(C r, C, C) { return float_to_bf16(r); }
  static constexpr bool is_float = true;
  static constexpr bool nan_max = true;
};
template <> struct Num<fp8e4m3> {  // fp8: to float, compute, round once
  typedef float C;
  static PK_DEV C to_c(fp8e4m3 x) { return fp8_to_float(x); }
  static PK_DEV fp8e4m3 from_c(C x) { return float_to_fp8(x); }
  static PK_DEV C rd(C x) { return x; }
  static PK_DEV C kst(double v) { return (float)v; }
  static PK_DEV fp8e4m3 fin1(C r, C) { return float_to_fp8(r); }
  static PK_DEV fp8e4m3 fin2(C r, C, C) { return float_to_fp8(r); }
  static constexpr bool is_float = true;
  static constexpr bool nan_max = false;  // fminf/fmaxf in float
};

// ------------------------------------------- fused multiply-add, one rounding
// CUDA fuses f16/bf16 `x * m + a` into fma.rn.{f16,bf16} (one rounding). We
// reproduce that exactly: the f32 inputs' product is exact in f64, the sum is
// rounded to odd in f64 (TwoSum), and one RNE rounding to T follows.
PK_DEV double fma_round_to_odd(float x, float m, float a) {
  const double p = (double)x * (double)m;  // exact
  const double b = (double)a;
  const double s = p + b;
  if (is_nan(s) || (dbits(s) & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) return s;
  const double bv = s - p, av = s - bv;
  const double e = (p - av) + (b - bv);  // exact error of s
  if (e == 0.0) return s;
  u64 u = dbits(s);
  if ((e > 0.0) != (s > 0.0)) u -= 1;  // truncate toward zero
  return dfrom(u | 1ull);
}

// --------------------------------------------------------------- indexing
// Candle contiguity: every dim of size > 1 has stride == product of later dims.
PK_DEV bool is_contiguous(usize num_dims, const usize* dims, const usize* strides) {
  usize acc = 1;
  bool ok = true;  // no early exit: lets the loads of dims/strides overlap
#pragma unroll 4
  for (usize d = num_dims; d-- > 0;) {
    const usize dim = dims[d], st = strides[d];
    ok &= (dim <= 1) | (st == acc);
    acc *= dim;
  }
  return ok;
}

// Offsets of element i (row-major over dims) in N operands whose stride arrays
// are strides[k*num_dims ...]. Index type I: u32 when numel < 2^32 (cheap
// division), u64 otherwise; offsets are always 64-bit. Returns the index along
// the innermost dimension.
template <int N, class I>
PK_DEV usize strided_offsets(I i, usize num_dims, const usize* dims, const usize* strides, usize (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  usize inner = 0;
#pragma unroll 1
  for (usize d = num_dims; d-- > 0;) {
    const I dim = (I)dims[d];
    const I q = i / dim;
    const usize r = (usize)(i - q * dim);
    if (d == num_dims - 1) inner = r;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += r * strides[k * num_dims + d];
    i = q;
  }
  return inner;
}
template <class I>
PK_DEV usize strided_index(I i, usize num_dims, const usize* dims, const usize* strides) {
  usize off[1];
  strided_offsets<1, I>(i, num_dims, dims, strides, off);
  return off[0];
}

// Grid-stride loop over [0, n) with a 64-bit index.
template <class F>
PK_DEV void grid_stride(usize n, F&& f) {
  const usize step = (usize)blockDim.x * (usize)gridDim.x;
  for (usize i = (usize)blockIdx.x * (usize)blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

// Largest block any Candle launch uses (cudarc's cap): the size of per-thread shared arrays.
constexpr int kMaxBlock = 1024;

// Candle launches one thread per element (grid ceil(n/1024), block 1024). The
// elementwise kernels deal their work (16-byte packs, strided groups, tiles) to
// "virtual" threads: every block of the first kDenseBlocks, then every
// kBlockStride-th block, and every other block returns as its first instruction
// (idle_block), before any memory or constant read: an idle warp costs five
// instructions, and its slot goes at once to the next block. Interleaving the
// working blocks with the idle ones, rather than taking the first
// 1/kBlockStride of the grid, keeps the idle blocks flowing between them; the
// dense prefix keeps small grids at >= 128 working blocks. H200, f32 neg on
// 2^26 elements: 70% of copy bandwidth when every block ran the path's
// preamble, 89% this way; 2^20..2^24 elements 7-18% faster than before.
constexpr u32 kBlockStride = 32, kDenseBlocks = 128;
static_assert(kDenseBlocks % kBlockStride == 0, "the dense prefix ends on a working block");
PK_DEV bool idle_block() { return blockIdx.x >= kDenseBlocks && blockIdx.x % kBlockStride != 0; }

struct VThreads {
  usize id, step;
};
// A working block's threads as virtual threads (ids 0 .. step-1).
PK_DEV VThreads vthreads() {
  const u32 b = blockIdx.x, g = gridDim.x;
  const u32 vb = b < kDenseBlocks ? b : kDenseBlocks + (b - kDenseBlocks) / kBlockStride;
  const u32 nvb = g <= kDenseBlocks ? g : kDenseBlocks + (g - kDenseBlocks + kBlockStride - 1) / kBlockStride;
  VThreads v;
  v.id = (usize)vb * blockDim.x + threadIdx.x;
  v.step = (usize)blockDim.x * nvb;
  return v;
}

// Walks consecutive elements of a strided layout: one division chain per
// seek, then steps along the innermost dimension by adding its strides.
template <int N>
struct StridedCursor {
  usize off[N];
  usize inner, inner_dim, num_dims;
  usize inner_stride[N];
  const usize* dims;
  const usize* strides;
  bool small;  // numel < 2^32: 32-bit division
  PK_DEV void seek(usize i) {
    inner = small ? strided_offsets<N, u32>((u32)i, num_dims, dims, strides, off)
                  : strided_offsets<N, u64>((u64)i, num_dims, dims, strides, off);
  }
  PK_DEV void next(usize i_next) {
    if (++inner == inner_dim) {
      seek(i_next);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += inner_stride[k];
    }
  }
};

// Strided loop over the virtual threads: each takes K consecutive elements
// [i0, i0+cnt) and calls body(i0, cnt, cursor); the cursor is positioned on
// i0 and the body calls cursor.next(i) between elements. K consecutive
// elements per thread give K independent loads in flight and amortise the
// index division.
template <int N, int K, class F>
PK_DEV void strided_groups(usize n, usize num_dims, const usize* dims, const usize* strides, F&& body) {
  StridedCursor<N> cur;
  cur.num_dims = num_dims;
  cur.dims = dims;
  cur.strides = strides;
  cur.small = n <= 0xffffffffull;
  cur.inner_dim = dims[num_dims - 1];
#pragma unroll
  for (int k = 0; k < N; ++k) cur.inner_stride[k] = strides[k * num_dims + num_dims - 1];
  const usize groups = (n + K - 1) / K;
  const VThreads vt = vthreads();
  for (usize g = vt.id; g < groups; g += vt.step) {
    const usize i0 = g * K;
    const usize rest = n - i0;
    const int cnt = rest < (usize)K ? (int)rest : K;
    cur.seek(i0);
    body(i0, cnt, cur);
  }
}
// Number of consecutive elements per thread on the strided path.
constexpr int kStridedK = 4;

template <class A, class B> struct Two { A a; B b; };
template <class A, class B, class C> struct Three { A a; B b; C c; };

// ------------------------------------------------------- tiled transpose path
// A transposed operand read in output order touches one 32-byte sector per
// element (H100, f32 8192x8192 t(): 33% of copy bandwidth). When every operand
// is unit-stride (or broadcast) along one dim p and not along the last dim,
// blocks instead read TD x TD tiles along p, apply g, transpose the results
// through shared memory and write them along the last dim (H100, uexp_f32 on
// an 8192x8192 t(): 0.88 -> 0.47 ms; contiguous 0.21 ms). Per tile, each thread
// computes its first element's offsets once and steps by rows from there, and
// only the tile extent is checked (H200: 270 -> 262 us; badd_f32 448 -> 396 us).
struct TilePlan {
  bool ok;        // tiles apply; only when every offset and index < 2^32 (32-bit index arithmetic)
  usize p;        // the dim the operands are unit-stride along
  usize dense_p;  // output (row-major) stride of dim p
};
template <int N>
PK_DEV TilePlan tile_plan(usize n, usize num_dims, const usize* dims, const usize* strides, unsigned td) {
  TilePlan t{false, 0, 0};
  if (num_dims < 2 || blockDim.x % td != 0 || blockDim.x > td * td) return t;
  const usize l = num_dims - 1;
  if (dims[l] < 16 || strides[l] == 1) return t;  // operand 0 decides p
  usize p = l;
  for (usize d = 0; d < l; ++d)
    if (strides[d] == 1 && dims[d] > 1) p = d;
  if (p == l || dims[p] < 16) return t;
  if (n > 0xffffffffull) return t;
  for (int k = 0; k < N; ++k) {
    if (k > 0 && strides[k * num_dims + p] > 1) return t;
    usize last = 0;  // largest offset of operand k
    for (usize d = 0; d < num_dims; ++d) last += (dims[d] - 1) * strides[k * num_dims + d];
    if (last > 0xffffffffull) return t;
  }
  usize acc = 1;
  for (usize d = l; d > p; --d) acc *= dims[d];
  t.ok = true;
  t.p = p;
  t.dense_p = acc;
  return t;
}

// Tiles of TD x TD elements over dims (p, last), every other dim enumerated as
// a batch, dealt to the virtual threads' blocks; E loads in flight per thread;
// 32-bit index arithmetic (tile_plan). load(i, off) reads element i (dense
// index; offsets per operand), g(x) gives the output value.
template <int N, int E, int TD, class O, class L, class G>
PK_DEV void tiled_map(usize n, usize num_dims, const usize* dims, const usize* strides, const TilePlan& tp, O* out,
                      const L& load, const G& g) {
  __shared__ O tile[TD][TD + 1];  // +1: conflict-free column reads
  const VThreads vt = vthreads();  // whole blocks only: the loop below synchronises
  const u32 bid = (u32)(vt.id / blockDim.x), nblocks = (u32)(vt.step / blockDim.x);
  const usize l = num_dims - 1, p = tp.p;
  const u32 dp = (u32)dims[p], dl = (u32)dims[l], dense_p = (u32)tp.dense_p;
  u32 sp[N], sl[N];  // strides along p and the last dim, in registers
#pragma unroll
  for (int k = 0; k < N; ++k) {
    sp[k] = (u32)strides[k * num_dims + p];
    sl[k] = (u32)strides[k * num_dims + l];
  }
  const u32 tiles_l = (dl + TD - 1) / TD, tiles = ((dp + TD - 1) / TD) * tiles_l;
  const u32 ntiles = ((u32)n / (dp * dl)) * tiles;  // n < 2^32 here (tile_plan)
  const unsigned lane = threadIdx.x % TD, rows = blockDim.x / TD, row = threadIdx.x / TD;
  for (u32 t = bid; t < ntiles; t += nblocks) {
    u32 batch = t / tiles;
    const u32 rem = t - batch * tiles;
    const u32 p0 = (rem / tiles_l) * TD, l0 = (rem % tiles_l) * TD;
    u32 base[N], obase = 0, acc = 1;  // offsets of the tile's batch index
#pragma unroll
    for (int k = 0; k < N; ++k) base[k] = 0;
    if (num_dims > 2) {
      for (usize d = num_dims; d-- > 0;) {
        const u32 dim = (u32)dims[d];
        if (d != p && d != l) {
          const u32 i = batch % dim;
          batch /= dim;
          obase += i * acc;
#pragma unroll
          for (int k = 0; k < N; ++k) base[k] += i * (u32)strides[k * num_dims + d];
        }
        acc *= dim;
      }
    }
    // this thread's first element of the tile: operand offsets, dense index; then rows apart
    const u32 ip = p0 + lane;
    const bool pin = ip < dp;                                      // lane inside the tile along p
    const u32 nl = dl - l0 < TD ? dl - l0 : TD, np = dp - p0 < TD ? dp - p0 : TD;  // tile extent
    u32 o0[N];
#pragma unroll
    for (int k = 0; k < N; ++k) o0[k] = base[k] + ip * sp[k] + (l0 + row) * sl[k];
    const u32 d0 = obase + ip * dense_p + l0 + row;
    // read along p (coalesced for every operand), E rows in flight per pass
    for (unsigned r0 = 0; r0 < TD; r0 += rows * E) {
      typedef usize Offsets[N];
      decltype(load((usize)0, *(const Offsets*)nullptr)) x[E];  // unevaluated: the load's type
#pragma unroll
      for (int j = 0; j < E; ++j) {
        const u32 dr = r0 + j * rows;  // row offset from this thread's first row
        if (pin && row + dr < nl) {
          usize off[N];
#pragma unroll
          for (int k = 0; k < N; ++k) off[k] = (usize)(o0[k] + dr * sl[k]);
          x[j] = load((usize)(d0 + dr), off);
        }
      }
#pragma unroll
      for (int j = 0; j < E; ++j) {
        const u32 r = row + r0 + j * rows;
        if (pin && r < nl) tile[r][lane] = g(x[j]);
      }
    }
    __syncthreads();
    // write along the last dim (coalesced in the dense output)
    if (lane < nl) {
      O* o = out + (usize)(obase + (p0 + row) * dense_p + l0 + lane);
      const usize ostep = (usize)rows * dense_p;
      for (unsigned r = row; r < np; r += rows, o += ostep) *o = tile[lane][r];
    }
    __syncthreads();
  }
}
// out[i] = g(load(i, off)) on the strided path: tiles when the operands are
// transposed (tile_plan), else groups of K consecutive elements per thread,
// all loads of a group issued before the first store.
template <int N, int K, class O, class L, class G>
PK_DEV void strided_map(usize n, usize num_dims, const usize* dims, const usize* strides, O* out, const L& load,
                        const G& g) {
  constexpr int TD = K == 4 ? 64 : 32;  // K = 4: <= 4-byte operands
  const TilePlan tp = tile_plan<N>(n, num_dims, dims, strides, TD);
  if (tp.ok) {
    // two rows per operand in flight with two or more operands (H200, badd_f32 on an 8192x8192 t():
    // 437 us with one, 396 with two, 409 with four: spills)
    tiled_map<N, (N >= 2 ? 2 : K), TD>(n, num_dims, dims, strides, tp, out, load, g);
    return;
  }
  strided_groups<N, K>(n, num_dims, dims, strides, [&](usize i0, int cnt, StridedCursor<N>& cur) {
    decltype(load(i0, cur.off)) x[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (j < cnt) {
        x[j] = load(i0 + j, cur.off);
        if (j + 1 < cnt) cur.next(i0 + j + 1);
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (j < cnt) out[i0 + j] = g(x[j]);
  });
}

// ------------------------------------------------- contiguous fast path
// With Candle's launch (block 1024, grid ceil(n/1024)) one 4-byte element per
// thread keeps too few bytes in flight to saturate HBM. The contiguous path
// therefore walks 16-byte packs (V elements) in a grid-stride loop when every
// pointer is aligned; threads beyond n/V exit at once. Any tail (n % V) and
// unaligned pointers (host-side slicing) take the scalar grid-stride loop.
template <class T, int V> struct alignas(sizeof(T) * V) Pack {
  T v[V];
};
template <class... Ts> struct MaxSize;
template <class T> struct MaxSize<T> { static constexpr usize v = sizeof(T); };
template <class T, class... Ts> struct MaxSize<T, Ts...> {
  static constexpr usize v = sizeof(T) > MaxSize<Ts...>::v ? sizeof(T) : MaxSize<Ts...>::v;
};
// consecutive elements per thread on the strided path (fewer for 8-byte
// types: keeps the f64 math kernels free of register spills on AMD)
template <class... Ts> struct StridedK { static constexpr int v = MaxSize<Ts...>::v >= 8 ? 1 : 4; };
// elements per 16-byte pack of the widest operand
template <class... Ts> struct PackWidth { static constexpr int v = (int)(16 / MaxSize<Ts...>::v); };

template <int V, class T> PK_DEV bool pack_aligned(const T* p) {
  return (((usize)p) & (sizeof(T) * V - 1)) == 0;
}
template <int V, class T> PK_DEV Pack<T, V> load_pack(const T* p, usize base) {
  return *reinterpret_cast<const Pack<T, V>*>(p + base);
}
template <int V, class T> PK_DEV void store_pack(T* p, usize base, const Pack<T, V>& x) {
  *reinterpret_cast<Pack<T, V>*>(p + base) = x;
}

// Packs of V elements over the virtual threads, one 16-byte access per
// operand and iteration (measured: more packs in flight per thread gained
// nothing and cost registers); ld(base) loads the pack of elements [base,
// base+V), st(base, x) computes and stores it. The tail (n % V) and unaligned
// pointers (host-side slicing) take fs(i), element by element.
template <int V, class LD, class ST, class FS>
PK_DEV void contiguous_loop(usize n, bool aligned, LD&& ld, ST&& st, FS&& fs) {
  const VThreads vt = vthreads();
  usize done = 0;
  if (aligned) {
    const usize nv = n / V;
    for (usize v = vt.id; v < nv; v += vt.step) st(v * V, ld(v * V));
    done = nv * V;
  }
  for (usize i = done + vt.id; i < n; i += vt.step) fs(i);
}

// out[i] = g(a[i]) over a contiguous range (a may alias out: in place).
template <class A, class O, class G>
PK_DEV void contiguous_map1(usize n, const A* a, O* out, const G& g) {
  constexpr int V = PackWidth<A, O>::v;
  contiguous_loop<V>(
      n, pack_aligned<V>(a) && pack_aligned<V>(out), [&](usize b) { return load_pack<V>(a, b); },
      [&](usize b, const Pack<A, V>& x) {
        Pack<O, V> y;
#pragma unroll
        for (int k = 0; k < V; ++k) y.v[k] = g(x.v[k]);
        store_pack<V>(out, b, y);
      },
      [&](usize i) { out[i] = g(a[i]); });
}
// out[i] = g(a[i], b[i])
template <class A, class B, class O, class G>
PK_DEV void contiguous_map2(usize n, const A* a, const B* b, O* out, const G& g) {
  constexpr int V = PackWidth<A, B, O>::v;
  typedef Two<Pack<A, V>, Pack<B, V>> In;
  contiguous_loop<V>(
      n, pack_aligned<V>(a) && pack_aligned<V>(b) && pack_aligned<V>(out),
      [&](usize base) { return In{load_pack<V>(a, base), load_pack<V>(b, base)}; },
      [&](usize base, const In& x) {
        Pack<O, V> z;
#pragma unroll
        for (int k = 0; k < V; ++k) z.v[k] = g(x.a.v[k], x.b.v[k]);
        store_pack<V>(out, base, z);
      },
      [&](usize i) { out[i] = g(a[i], b[i]); });
}
// out[i] = g(a[i], b[i], c[i])
template <class A, class B, class C, class O, class G>
PK_DEV void contiguous_map3(usize n, const A* a, const B* b, const C* c, O* out, const G& g) {
  constexpr int V = PackWidth<A, B, C, O>::v;
  typedef Three<Pack<A, V>, Pack<B, V>, Pack<C, V>> In;
  contiguous_loop<V>(
      n, pack_aligned<V>(a) && pack_aligned<V>(b) && pack_aligned<V>(c) && pack_aligned<V>(out),
      [&](usize base) { return In{load_pack<V>(a, base), load_pack<V>(b, base), load_pack<V>(c, base)}; },
      [&](usize base, const In& x) {
        Pack<O, V> z;
#pragma unroll
        for (int k = 0; k < V; ++k) z.v[k] = g(x.a.v[k], x.b.v[k], x.c.v[k]);
        store_pack<V>(out, base, z);
      },
      [&](usize i) { out[i] = g(a[i], b[i], c[i]); });
}
// out[i] = value
template <class T>
PK_DEV void contiguous_fill(usize n, T* out, T value) {
  constexpr int V = PackWidth<T>::v;
  Pack<T, V> p;
#pragma unroll
  for (int k = 0; k < V; ++k) p.v[k] = value;
  contiguous_loop<V>(
      n, pack_aligned<V>(out), [&](usize) { return 0; }, [&](usize b, int) { store_pack<V>(out, b, p); },
      [&](usize i) { out[i] = value; });
}
}  // namespace pk
