// affine_T(size_t numel, size_t num_dims, const size_t* info, const T* inp,
//          T* out, T mul, T add): out = x * mul + add
// T in u8 u32 i16 i32 i64 f16 bf16 f32 f64 f8_e4m3. f32/f64: one fused fma;
// f16/bf16: fused too (nvcc contracts the half ops into fma.rn.f16/bf16, as the
// golden data shows), one rounding; fp8: fmaf in float, rounded once;
// integers wrap. info null / contiguous -> fast path; inp null -> in place.
#include "common.h"

namespace pk {

template <class T> struct WideA { typedef u32 U; };
template <> struct WideA<u64> { typedef u64 U; };
template <> struct WideA<i64> { typedef u64 U; };

PK_DEV float fused(float x, float m, float a) { return fmaf(x, m, a); }
PK_DEV double fused(double x, double m, double a) { return fma(x, m, a); }

template <class A, class B> struct Same2 { static constexpr bool v = false; };
template <class A> struct Same2<A, A> { static constexpr bool v = true; };

template <class T> struct AffineFn {
  typename Num<T>::C mul, add;
  PK_DEV T operator()(T v) const {
    typedef Num<T> N;
    if constexpr (N::is_float) {
      const typename N::C x = N::to_c(v);
      typename N::C r;
      if constexpr (sizeof(T) == 2) {  // f16 / bf16: fma.rn.{f16,bf16}
        const double d = fma_round_to_odd(x, mul, add);
        if (is_nan(d)) return N::from_c(ffrom(0x7fffffffu));
        if constexpr (Same2<T, f16>::v) return double_to_half(d);
        else return double_to_bf16(d);
      } else {
        r = fused(x, mul, add);  // f32, f64: fma.rn; fp8: fmaf in float, one rounding to fp8
        return N::fin2(r, x, x);
      }
    } else {
      typedef typename WideA<T>::U U;
      return (T)((U)v * (U)mul + (U)add);
    }
  }
};

template <class T>
PK_DEV void affine_impl(usize numel, usize num_dims, const usize* info, const T* inp, T* out, T mul, T add) {
  if (idle_block()) return;
  AffineFn<T> g;
  g.mul = Num<T>::to_c(mul);
  g.add = Num<T>::to_c(add);
  if (info == nullptr || is_contiguous(num_dims, info, info + num_dims)) {
    contiguous_map1(numel, inp ? inp : out, out, g);
  } else {
    strided_map<1, StridedK<T>::v>(
        numel, num_dims, info, info + num_dims, out,
        [&](usize i, const usize(&off)[1]) { return inp ? inp[off[0]] : out[i]; }, g);
  }
}

}  // namespace pk

#define PK_AFFINE(T, SFX)                                                                                  \
  extern "C" __global__ PK_BOUNDS void affine_##SFX(pk::usize numel, pk::usize num_dims, const pk::usize* info, \
                                          const T* inp, T* out, T mul, T add) {                      \
    pk::affine_impl<T>(numel, num_dims, info, inp, out, mul, add);                                     \
  }

PK_AFFINE(pk::u8, u8)
PK_AFFINE(pk::u32, u32)
PK_AFFINE(pk::i16, i16)
PK_AFFINE(pk::i32, i32)
PK_AFFINE(pk::i64, i64)
PK_AFFINE(pk::f16, f16)
PK_AFFINE(pk::bf16, bf16)
PK_AFFINE(pk::f32, f32)
PK_AFFINE(pk::f64, f64)
PK_AFFINE(pk::f8e4m3, f8_e4m3)
