// 16-bit values as floats and as 32-bit words of two (nn.hip's rows, reduce.hip's folds).
#pragma once
#include "common.h"
#if defined(PK_NVIDIA)
#include <hip/hip_bf16.h>  // cvt.rn.bf16.f32 (Cv<bf16>), the bf16x2 instructions (Pair<bf16>)
#endif

namespace pk {

// ------------------------------------------------------------------------ conversions
// Between T and the compute type, one rounding, NaN staying NaN (its bits are free in nn.hip: a NaN
// input makes its whole row NaN; CUDA's canonical bits are not reproduced). Num<T>'s conversions
// canonicalise NaN with a compare per element, which cost a 64-bit exec mask each on CDNA (SGPR
// spills on gfx908) and instructions everywhere. bf16: NVIDIA's cvt.rn.bf16.f32 (one instruction)
// where the platform has it, else round-to-nearest-even in integers, a NaN kept NaN by or-ing in
// its quiet exponent (H200, softmax bf16 4096x4096: integer RNE with a compare-free NaN blend per
// element left the kernel compute-bound).
template <class T> struct Cv {  // f32, f64
  typedef T C;
  static PK_DEV C in(T x) { return x; }
  static PK_DEV T out(C x) { return x; }
  static PK_DEV C rd(C x) { return x; }
};
template <> struct Cv<f16> {
  typedef float C;
  static PK_DEV C in(f16 x) { return __half2float(x); }
  static PK_DEV f16 out(C x) { return __float2half(x); }
  static PK_DEV C rd(C x) { return __half2float(__float2half(x)); }
};
template <> struct Cv<bf16> {
  typedef float C;
  static PK_DEV u32 rn(float x) {
#if defined(PK_NVIDIA)
    return __bfloat16_as_ushort(__float2bfloat16(x));
#else
    const u32 u = fbits(x);
    const u32 nan = (((u & 0x7fffffffu) + 0x007fffffu) >> 31) * 0x7fc0u;
    return ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) | nan;
#endif
  }
  static PK_DEV C in(bf16 x) { return ffrom((u32)x.bits << 16); }
  static PK_DEV bf16 out(C x) { return bf16{(u16)rn(x)}; }
  static PK_DEV C rd(C x) { return ffrom(rn(x) << 16); }
};

// ------------------------------------------------------------------------ 16-bit pairs
// Two elements of a 16-bit T in one 32-bit word of a Vec (lo: the lower address), worked on a
// word at a time: on NVIDIA a pair converts to T (cvt.rn.f16x2.f32, cvt.rn.bf16x2.f32), takes
// its maximum, difference or product in T (max/sub/mul.f16x2, .bf16x2) in one instruction each,
// where element by element it took a conversion and a masked insert per element (H200, softmax
// f16 4096x4096 was bound by issue slots); reduce.hip's folds take sums, minima and maxima so
// (add, min/max.NaN). Elsewhere the same results in floats: a max, and a
// product of two 16-bit values, are exact in float, and a difference is rounded to T once more.
#if defined(PK_NVIDIA)
template <class H2> PK_DEV u32 h2_bits(H2 h) { return *reinterpret_cast<const u32*>(&h); }
template <class H2> PK_DEV H2 h2_from(u32 w) { return *reinterpret_cast<const H2*>(&w); }
#endif
// Lanes: lo(w), hi(w) as floats, pack(a, b) rounded to T, and on NVIDIA H2, T's two-lane type.
template <class Lanes> struct PairOps : Lanes {
  using Lanes::hi;
  using Lanes::lo;
  using Lanes::pack;
#if defined(PK_NVIDIA)
  typedef typename Lanes::H2 H2;
  static PK_DEV u32 max(u32 a, u32 b) { return h2_bits(__hmax2(h2_from<H2>(a), h2_from<H2>(b))); }
  static PK_DEV u32 sub(u32 a, u32 b) { return h2_bits(__hsub2(h2_from<H2>(a), h2_from<H2>(b))); }
  static PK_DEV u32 mul(u32 a, u32 b) { return h2_bits(__hmul2(h2_from<H2>(a), h2_from<H2>(b))); }
  // add, max_nan, min_nan: NVIDIA only (reduce.hip's folds, kPairFold; elsewhere they go
  // element by element)
  static PK_DEV u32 add(u32 a, u32 b) { return h2_bits(__hadd2(h2_from<H2>(a), h2_from<H2>(b))); }
  static PK_DEV u32 max_nan(u32 a, u32 b) { return h2_bits(__hmax2_nan(h2_from<H2>(a), h2_from<H2>(b))); }
  static PK_DEV u32 min_nan(u32 a, u32 b) { return h2_bits(__hmin2_nan(h2_from<H2>(a), h2_from<H2>(b))); }
  // min, any_nan, any_eq: NVIDIA only (reduce.hip's arg_held); min and max pass a NaN over
  static PK_DEV u32 min(u32 a, u32 b) { return h2_bits(__hmin2(h2_from<H2>(a), h2_from<H2>(b))); }
  static PK_DEV bool any_nan(u32 a) { return !__hbeq2(h2_from<H2>(a), h2_from<H2>(a)); }
  static PK_DEV bool any_eq(u32 a, u32 b) { return !__hbneu2(h2_from<H2>(a), h2_from<H2>(b)); }
#else
  static PK_DEV u32 max(u32 a, u32 b) { return pack(fmaxf(lo(a), lo(b)), fmaxf(hi(a), hi(b))); }
  static PK_DEV u32 sub(u32 a, u32 b) { return pack(lo(a) - lo(b), hi(a) - hi(b)); }
  static PK_DEV u32 mul(u32 a, u32 b) { return pack(lo(a) * lo(b), hi(a) * hi(b)); }
#endif
};
struct F16Lanes {
  static PK_DEV float lo(u32 w) { return __half2float(h_from((u16)w)); }
  static PK_DEV float hi(u32 w) { return __half2float(h_from((u16)(w >> 16))); }
#if defined(PK_NVIDIA)
  typedef __half2 H2;
  static PK_DEV u32 pack(float a, float b) { return h2_bits(__floats2half2_rn(a, b)); }
#else
  static PK_DEV u32 pack(float a, float b) { return (u32)h_bits(__float2half(a)) | (u32)h_bits(__float2half(b)) << 16; }
#endif
};
struct Bf16Lanes {
  static PK_DEV float lo(u32 w) { return ffrom(w << 16); }
  static PK_DEV float hi(u32 w) { return ffrom(w & 0xffff0000u); }
#if defined(PK_NVIDIA)
  typedef __nv_bfloat162 H2;
  static PK_DEV u32 pack(float a, float b) { return h2_bits(__floats2bfloat162_rn(a, b)); }
#else
  static PK_DEV u32 pack(float a, float b) { return Cv<bf16>::rn(a) | Cv<bf16>::rn(b) << 16; }
#endif
};
template <class T> struct Pair;
template <> struct Pair<f16> : PairOps<F16Lanes> {};
template <> struct Pair<bf16> : PairOps<Bf16Lanes> {};

// A fold of 16-bit floats a word at a time, two elements an instruction: where the pair
// instructions are native (NVIDIA's add/min/max{.NaN}.f16x2 and .bf16x2). Elsewhere the element
// fold: a pair op through floats would convert each element to float and back, no cheaper.
#if defined(PK_NVIDIA)
template <class T> constexpr bool kPairFold = sizeof(T) == 2 && Num<T>::is_float;
#else
template <class T> constexpr bool kPairFold = false;
#endif

}  // namespace pk
