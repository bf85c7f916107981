// cast_S_D(size_t numel, size_t num_dims, const size_t* info, const S* inp, D* out)
// info null / contiguous -> fast path; no in-place form. Conversions follow CUDA:
//   float -> u32: truncate, saturate, NaN -> 0 (f64 NaN -> 0x80000000);  float -> u8: that u32's low byte
//   (300 -> 44);  float -> i64: truncate, saturate, NaN -> i64::MIN;
//   float -> i32: truncate, saturate, NaN -> 0;  f32 -> f16/bf16/fp8: RNE (fp8
//   satfinite);  f64 -> f16/bf16/fp8: one rounding from double;  f16/bf16/fp8 ->
//   anything: through f32 (exact);  u32 -> bf16: one rounding;  same type: bits.
// Pairs: exactly the set Candle's cast.cu defines (58 kernels), instantiated by source type in
// cast_<source>.hip (they compile in parallel).
#pragma once
#include "common.h"

namespace pk {

template <class F> PK_DEV u32 to_u32_sat(F v) {
  // cvt.rzi.u32.f32 gives 0 for NaN, cvt.rzi.u32.f64 gives 0x80000000 (measured)
  if (is_nan(v)) return sizeof(F) == 8 ? 0x80000000u : 0u;
  if (!(v > F(-1))) return 0u;  // v <= -1
  if (v >= F(4294967296.0)) return 0xffffffffu;
  return (u32)v;
}
template <class F> PK_DEV i32 to_i32_sat(F v) {
  if (is_nan(v)) return 0;
  if (v >= F(2147483648.0)) return 2147483647;
  if (v < F(-2147483648.0)) return (i32)(-2147483647 - 1);
  return (i32)v;
}
template <class F> PK_DEV i64 to_i64_sat(F v) {
  if (is_nan(v) || v < F(-9223372036854775808.0)) return (i64)(-9223372036854775807ll - 1);
  if (v >= F(9223372036854775808.0)) return 9223372036854775807ll;
  return (i64)v;
}

template <class T> struct Is { static constexpr int k = 0; };  // 0 int, 1 float-like, 2 double
template <> struct Is<float> { static constexpr int k = 1; };
template <> struct Is<f16> { static constexpr int k = 1; };
template <> struct Is<bf16> { static constexpr int k = 1; };
template <> struct Is<fp8e4m3> { static constexpr int k = 1; };
template <> struct Is<double> { static constexpr int k = 2; };

template <class A, class B> struct Same { static constexpr bool v = false; };
template <class A> struct Same<A, A> { static constexpr bool v = true; };

// from a float or double value V (already exact for f16/bf16/fp8 sources)
template <class D, class V> PK_DEV D from_real(V v) {
  if constexpr (Same<D, float>::v) return (float)v;
  else if constexpr (Same<D, double>::v) return (double)v;
  else if constexpr (Same<D, f16>::v) { if constexpr (Same<V, double>::v) return double_to_half(v); else return float_to_half(v); }
  else if constexpr (Same<D, bf16>::v) { if constexpr (Same<V, double>::v) return double_to_bf16(v); else return float_to_bf16(v); }
  else if constexpr (Same<D, fp8e4m3>::v) { if constexpr (Same<V, double>::v) return double_to_fp8(v); else return float_to_fp8(v); }
  else if constexpr (Same<D, u8>::v) return (u8)(to_u32_sat(v) & 0xffu);
  else if constexpr (Same<D, u32>::v) return to_u32_sat(v);
  else if constexpr (Same<D, i32>::v) return to_i32_sat(v);
  else return to_i64_sat(v);
}

template <class S, class D> PK_DEV D convert(S x) {
  if constexpr (Same<S, D>::v) {
    return x;  // bit copy
  } else if constexpr (Is<S>::k == 1) {
    return from_real<D>(Num<S>::to_c(x));  // f16/fp8 NaN -> canonical f32 NaN; bf16 keeps bits
  } else if constexpr (Is<S>::k == 2) {
    return from_real<D>(x);
  } else {  // integer source
    if constexpr (Is<D>::k == 0) return (D)x;                                // wrap / extend
    else if constexpr (Same<D, double>::v || Same<D, float>::v) return (D)x;  // RNE
    else if constexpr (Same<D, bf16>::v) return double_to_bf16((double)x);   // one rounding
    else return from_real<D>((float)x);  // f16 (u8/u32), fp8 (u8/i32): exact or saturating
  }
}

template <class S, class D>
PK_DEV void cast_impl(usize numel, usize num_dims, const usize* info, const S* inp, D* out) {
  if (idle_block()) return;
  if (info == nullptr || is_contiguous(num_dims, info, info + num_dims)) {
    contiguous_map1(numel, inp, out, [](S x) { return convert<S, D>(x); });
  } else {
    strided_map<1, StridedK<S, D>::v>(
        numel, num_dims, info, info + num_dims, out, [&](usize, const usize(&off)[1]) { return inp[off[0]]; },
        [](S x) { return convert<S, D>(x); });
  }
}

}  // namespace pk

#define PK_CAST(S, SS, D, DS)                                                                                     \
  extern "C" __global__ PK_BOUNDS void cast_##SS##_##DS(pk::usize numel, pk::usize num_dims, const pk::usize* info,     \
                                              const S* inp, D* out) {                                       \
    pk::cast_impl<S, D>(numel, num_dims, info, inp, out);                                                     \
  }

