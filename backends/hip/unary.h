// Unary family, shared by unary_<dtype>.hip and ucopy.hip (one file per dtype: each compiles in
// parallel with the others, and a case needs only its dtype's file):
// u{neg,recip,exp,log,sin,cos,tanh,erf,ceil,floor,round,normcdf,
// abs,sqr,sqrt,gelu,gelu_erf,relu,silu,sign,sigmoid}_T, uelu_T, upowf_T for
// T in f16, bf16, f32, f64, fp8_e4m3; ucopy_T for u8 u32 i64 f16 bf16 f32 f64
// f8_e4m3.
//   u<op>_T(size_t numel, size_t num_dims, const size_t* info, const T* inp, T* out)
//   uelu_T / upowf_T(numel, num_dims, info, T param, const T* inp, T* out)
// info == nullptr or a contiguous layout -> fast path; inp == nullptr -> in place.
#pragma once
#include "common.h"

namespace pk {

// float / double overloads of the device math functions. The heaviest double ones stay out of
// line on AMD: inlined into both the packed and the strided path they push gfx908/gfx1030
// (64 VGPRs at 1024 threads per block) into SGPR spills.
#if defined(__HIPCC__) && !defined(__CUDACC__)
#define PK_HEAVY __attribute__((noinline)) __device__
#else
#define PK_HEAVY PK_DEV
#endif
PK_DEV float m_exp(float x) { return expf(x); }
PK_DEV double m_exp(double x) { return exp(x); }
PK_DEV float m_log(float x) { return logf(x); }
PK_DEV double m_log(double x) { return log(x); }
PK_DEV float m_sin(float x) { return sinf(x); }
PK_HEAVY double m_sin(double x) { return sin(x); }
PK_DEV float m_cos(float x) { return cosf(x); }
PK_HEAVY double m_cos(double x) { return cos(x); }
PK_DEV float m_tanh(float x) { return tanhf(x); }
PK_DEV double m_tanh(double x) { return tanh(x); }
PK_DEV float m_erf(float x) { return erff(x); }
PK_HEAVY double m_erf(double x) { return erf(x); }
PK_DEV float m_normcdf(float x) { return normcdff(x); }
PK_HEAVY double m_normcdf(double x) { return normcdf(x); }
PK_DEV float m_ceil(float x) { return ceilf(x); }
PK_DEV double m_ceil(double x) { return ceil(x); }
PK_DEV float m_floor(float x) { return floorf(x); }
PK_DEV double m_floor(double x) { return floor(x); }
PK_DEV float m_round(float x) { return roundf(x); }  // half away from zero
PK_DEV double m_round(double x) { return round(x); }
PK_DEV float m_abs(float x) { return fabsf(x); }
PK_DEV double m_abs(double x) { return fabs(x); }
PK_DEV float m_sqrt(float x) { return sqrtf(x); }
PK_DEV double m_sqrt(double x) { return sqrt(x); }
PK_HEAVY float m_pow(float x, float y) { return powf(x, y); }
PK_HEAVY double m_pow(double x, double y) { return pow(x, y); }

PK_DEV float fmaf_c(float a, float b, float c) { return fmaf(a, b, c); }
PK_DEV double fmaf_c(double a, double b, double c) { return fma(a, b, c); }

// Each op: template <class T> C f(C x) const, C = Num<T>::C. Intermediate
// results go through N::rd so f16/bf16 arithmetic rounds to the storage type
// after every operation (identity for f32/f64/fp8); the final rounding is
// done by the kernel (Num<T>::fin1).
#define PK_UOP(NAME, EXPR)                                   \
  struct NAME {                                              \
    template <class T>                                       \
    PK_DEV typename Num<T>::C f(typename Num<T>::C x) const { \
      typedef Num<T> N;                                      \
      typedef typename N::C C;                               \
      (void)sizeof(C);                                       \
      return EXPR;                                           \
    }                                                        \
  };

PK_UOP(OpNeg, -x)
PK_UOP(OpRecip, C(1) / x)
PK_UOP(OpExp, m_exp(x))
PK_UOP(OpLog, m_log(x))
PK_UOP(OpSin, m_sin(x))
PK_UOP(OpCos, m_cos(x))
PK_UOP(OpTanh, m_tanh(x))
PK_UOP(OpErf, m_erf(x))
PK_UOP(OpCeil, m_ceil(x))
PK_UOP(OpFloor, m_floor(x))
PK_UOP(OpRound, m_round(x))
PK_UOP(OpNormcdf, m_normcdf(x))
PK_UOP(OpAbs, m_abs(x))
PK_UOP(OpSqr, x * x)
PK_UOP(OpSqrt, m_sqrt(x))
// sign(NaN) = sign(+-0) = 0
PK_UOP(OpSign, C((x > C(0)) ? 1 : 0) - C((x < C(0)) ? 1 : 0))
// relu: fmax(x, 0) (NaN -> 0) for f32/f64/fp8; NaN propagates for f16/bf16
PK_UOP(OpRelu, (N::nan_max && is_nan(x)) ? x : ((x > C(0)) ? x : C(0)))
// silu = x / (1 + exp(-x)), sigmoid = 1 / (1 + exp(-x))
PK_UOP(OpSilu, x / N::rd(C(1) + N::rd(m_exp(-x))))
PK_UOP(OpSigmoid, C(1) / N::rd(C(1) + N::rd(m_exp(-x))))
// gelu_erf = x * normcdf(x)
PK_UOP(OpGeluErf, x * N::rd(m_normcdf(x)))

// gelu (tanh form): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
struct OpGelu {
  template <class T>
  PK_DEV typename Num<T>::C f(typename Num<T>::C x) const {
    typedef Num<T> N;
    typedef typename N::C C;
    const C x_sq = N::rd(x * x);
    const C x_cube = N::rd(x_sq * x);
    const C alpha = N::rd(fmaf_c(N::kst(0.044715), x_cube, x));  // nvcc fuses this (f16/bf16 too)
    const C k = N::kst(0.79788456080286535587989211986876);  // sqrt(2/pi)
    const C t = N::rd(m_tanh(N::rd(k * alpha)));
    return N::rd(N::kst(0.5) * x) * N::rd(C(1) + t);
  }
};

// elu = x > 0 ? x : alpha (exp(x) - 1)
struct OpElu {
  template <class T>
  PK_DEV typename Num<T>::C f(typename Num<T>::C x, typename Num<T>::C alpha) const {
    typedef Num<T> N;
    typedef typename N::C C;
    return (x > C(0)) ? x : alpha * N::rd(N::rd(m_exp(x)) - C(1));
  }
};
struct OpPowf {
  template <class T>
  PK_DEV typename Num<T>::C f(typename Num<T>::C x, typename Num<T>::C p) const {
    return m_pow(x, p);
  }
};

// Shared driver: y = g(x) for every element; x from inp (strided by info) or,
// when inp is null, from out[i] (in place). Output dense.
template <class T, class G>
PK_DEV void map_unary(usize numel, usize num_dims, const usize* info, const T* inp, T* out, const G& g) {
  if (idle_block()) return;
  if (info == nullptr || is_contiguous(num_dims, info, info + num_dims)) {
    contiguous_map1(numel, inp ? inp : out, out, g);
  } else {
    strided_map<1, StridedK<T>::v>(
        numel, num_dims, info, info + num_dims, out,
        [&](usize i, const usize(&off)[1]) { return inp ? inp[off[0]] : out[i]; }, g);
  }
}

template <class T, class Op>
struct Apply1 {
  PK_DEV T operator()(T v) const {
    typedef Num<T> N;
    const typename N::C x = N::to_c(v);
    return N::fin1(Op().template f<T>(x), x);
  }
};
template <class T, class Op>
struct Apply1P {
  typename Num<T>::C p;
  PK_DEV T operator()(T v) const {
    typedef Num<T> N;
    const typename N::C x = N::to_c(v);
    return N::fin1(Op().template f<T>(x, p), x);
  }
};
template <class T>
struct Identity {
  PK_DEV T operator()(T v) const { return v; }
};

}  // namespace pk

#define PK_UNARY(NAME, OP, T)                                                                                  \
  extern "C" __global__ PK_BOUNDS void NAME(pk::usize numel, pk::usize num_dims, const pk::usize* info, const T* inp, \
                                  T* out) {                                                                  \
    pk::map_unary<T>(numel, num_dims, info, inp, out, pk::Apply1<T, pk::OP>());                              \
  }
#define PK_UNARY_PARAM(NAME, OP, T)                                                                            \
  extern "C" __global__ PK_BOUNDS void NAME(pk::usize numel, pk::usize num_dims, const pk::usize* info, T param,       \
                                  const T* inp, T* out) {                                                    \
    pk::Apply1P<T, pk::OP> g;                                                                                \
    g.p = pk::Num<T>::to_c(param);                                                                           \
    pk::map_unary<T>(numel, num_dims, info, inp, out, g);                                                    \
  }
#define PK_UCOPY(NAME, T)                                                                                      \
  extern "C" __global__ PK_BOUNDS void NAME(pk::usize numel, pk::usize num_dims, const pk::usize* info, const T* inp, \
                                  T* out) {                                                                  \
    pk::map_unary<T>(numel, num_dims, info, inp, out, pk::Identity<T>());                                    \
  }

// Instantiation per dtype (SFX = kernel name suffix).
#define PK_UNARY_ALL(T, SFX)                     \
  PK_UNARY(uneg_##SFX, OpNeg, T)                 \
  PK_UNARY(urecip_##SFX, OpRecip, T)             \
  PK_UNARY(uexp_##SFX, OpExp, T)                 \
  PK_UNARY(ulog_##SFX, OpLog, T)                 \
  PK_UNARY(usin_##SFX, OpSin, T)                 \
  PK_UNARY(ucos_##SFX, OpCos, T)                 \
  PK_UNARY(utanh_##SFX, OpTanh, T)               \
  PK_UNARY(uerf_##SFX, OpErf, T)                 \
  PK_UNARY(uceil_##SFX, OpCeil, T)               \
  PK_UNARY(ufloor_##SFX, OpFloor, T)             \
  PK_UNARY(uround_##SFX, OpRound, T)             \
  PK_UNARY(unormcdf_##SFX, OpNormcdf, T)         \
  PK_UNARY(uabs_##SFX, OpAbs, T)                 \
  PK_UNARY(usqr_##SFX, OpSqr, T)                 \
  PK_UNARY(usqrt_##SFX, OpSqrt, T)               \
  PK_UNARY(ugelu_##SFX, OpGelu, T)               \
  PK_UNARY(ugelu_erf_##SFX, OpGeluErf, T)        \
  PK_UNARY(urelu_##SFX, OpRelu, T)               \
  PK_UNARY(usilu_##SFX, OpSilu, T)               \
  PK_UNARY(usign_##SFX, OpSign, T)               \
  PK_UNARY(usigmoid_##SFX, OpSigmoid, T)         \
  PK_UNARY_PARAM(uelu_##SFX, OpElu, T)           \
  PK_UNARY_PARAM(upowf_##SFX, OpPowf, T)
