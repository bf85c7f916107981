// Binary family: b{add,sub,mul,div,minimum,maximum}_T and {eq,ne,lt,le,gt,ge}_T
// (u8 output) for T in u8 u32 i64 f16 bf16 f32 f64 f8_e4m3: instantiated one dtype per
// binary_<dtype>.hip (they compile in parallel, and a case needs only its dtype's).
//   (size_t numel, size_t num_dims, const size_t* dims_and_strides,
//    const T* lhs, const T* rhs, T* out /* uint8_t* for cmp */)
// info = [dims, lhs_strides, rhs_strides]; null = both contiguous.
#pragma once
#include "common.h"

namespace pk {

template <class T> struct Wide { typedef u32 U; };  // wrapping integer arithmetic
template <> struct Wide<u64> { typedef u64 U; };
template <> struct Wide<i64> { typedef u64 U; };

// Integer ops wrap mod 2^n. Division reproduces what CUDA's code does for the
// undefined cases: x/0 -> all ones (u8, u32; i64 when both operands fit in
// 32 unsigned bits -> 0xffffffff, as nvcc's 32-bit fast path), MIN/-1 -> MIN.
template <class T> PK_DEV T int_div(T a, T b) { return b == 0 ? (T)~(T)0 : (T)(a / b); }
template <> PK_DEV i64 int_div<i64>(i64 a, i64 b) {
  if (b == 0) return ((((u64)a) >> 32) == 0) ? (i64)0xffffffffll : (i64)-1;
  if (b == -1) return (i64)(0ull - (u64)a);
  return a / b;
}

// min/max with CUDA semantics: -0 < +0; NaN ignored (fminf/fmaxf) unless
// NAN_PROP (f16/bf16 __hmin_nan/__hmax_nan); both NaN -> NaN.
PK_DEV bool sign_bit(float x) { return (fbits(x) >> 31) != 0; }
PK_DEV bool sign_bit(double x) { return (dbits(x) >> 63) != 0; }

template <bool NAN_PROP, bool IS_MAX, class C>
PK_DEV C fminmax(C a, C b) {
  const bool na = is_nan(a), nb = is_nan(b);
  if (na || nb) {
    if (NAN_PROP || (na && nb)) return na ? a : b;
    return na ? b : a;
  }
  if (a == b) {  // pick by sign so that min(-0, +0) = -0 and max = +0
    return (sign_bit(a) != IS_MAX) ? a : b;
  }
  return ((a < b) != IS_MAX) ? a : b;
}

struct OpAdd {
  template <class T> PK_DEV static typename Num<T>::C f(typename Num<T>::C a, typename Num<T>::C b) {
    if constexpr (Num<T>::is_float) return a + b;
    else { typedef typename Wide<T>::U U; return (T)((U)a + (U)b); }
  }
};
struct OpSub {
  template <class T> PK_DEV static typename Num<T>::C f(typename Num<T>::C a, typename Num<T>::C b) {
    if constexpr (Num<T>::is_float) return a - b;
    else { typedef typename Wide<T>::U U; return (T)((U)a - (U)b); }
  }
};
struct OpMul {
  template <class T> PK_DEV static typename Num<T>::C f(typename Num<T>::C a, typename Num<T>::C b) {
    if constexpr (Num<T>::is_float) return a * b;
    else { typedef typename Wide<T>::U U; return (T)((U)a * (U)b); }
  }
};
struct OpDiv {
  template <class T> PK_DEV static typename Num<T>::C f(typename Num<T>::C a, typename Num<T>::C b) {
    if constexpr (Num<T>::is_float) return a / b;
    else return int_div<T>(a, b);
  }
};
struct OpMin {
  template <class T> PK_DEV static typename Num<T>::C f(typename Num<T>::C a, typename Num<T>::C b) {
    if constexpr (Num<T>::is_float) return fminmax<Num<T>::nan_max, false>(a, b);
    else return b < a ? b : a;
  }
};
struct OpMax {
  template <class T> PK_DEV static typename Num<T>::C f(typename Num<T>::C a, typename Num<T>::C b) {
    if constexpr (Num<T>::is_float) return fminmax<Num<T>::nan_max, true>(a, b);
    else return b > a ? b : a;
  }
};
// Comparisons in the compute type; NaN compares false (ne -> true).
#define PK_CMP(NAME, EXPR)                                                             \
  struct NAME {                                                                        \
    template <class T> PK_DEV static u8 f(typename Num<T>::C a, typename Num<T>::C b) { \
      return (EXPR) ? (u8)1 : (u8)0;                                                   \
    }                                                                                  \
  };
PK_CMP(OpEq, a == b)
PK_CMP(OpNe, a != b)
PK_CMP(OpLt, a < b)
PK_CMP(OpLe, a <= b)
PK_CMP(OpGt, a > b)
PK_CMP(OpGe, a >= b)

template <class T, class Op> struct ArithFn {
  PK_DEV T operator()(T l, T r) const {
    typedef Num<T> N;
    const typename N::C a = N::to_c(l), b = N::to_c(r);
    return N::fin2(Op::template f<T>(a, b), a, b);
  }
};
template <class T, class Op> struct CmpFn {
  PK_DEV u8 operator()(T l, T r) const { return Op::template f<T>(Num<T>::to_c(l), Num<T>::to_c(r)); }
};

template <class T, class O, class G>
PK_DEV void map_binary(usize numel, usize num_dims, const usize* info, const T* lhs, const T* rhs, O* out,
                       const G& g) {
  if (idle_block()) return;
  if (info == nullptr || (is_contiguous(num_dims, info, info + num_dims) &&
                          is_contiguous(num_dims, info, info + 2 * num_dims))) {
    contiguous_map2(numel, lhs, rhs, out, g);
  } else {
    strided_map<2, StridedK<T>::v>(
        numel, num_dims, info, info + num_dims, out,
        [&](usize, const usize(&off)[2]) { return Two<T, T>{lhs[off[0]], rhs[off[1]]}; },
        [&](const Two<T, T>& v) { return g(v.a, v.b); });
  }
}

}  // namespace pk

#define PK_BINARY(NAME, OP, T)                                                                                 \
  extern "C" __global__ PK_BOUNDS void NAME(pk::usize numel, pk::usize num_dims, const pk::usize* info, const T* lhs, \
                                  const T* rhs, T* out) {                                                    \
    pk::map_binary<T, T>(numel, num_dims, info, lhs, rhs, out, pk::ArithFn<T, pk::OP>());                    \
  }
#define PK_CMPK(NAME, OP, T)                                                                                   \
  extern "C" __global__ PK_BOUNDS void NAME(pk::usize numel, pk::usize num_dims, const pk::usize* info, const T* lhs, \
                                  const T* rhs, pk::u8* out) {                                               \
    pk::map_binary<T, pk::u8>(numel, num_dims, info, lhs, rhs, out, pk::CmpFn<T, pk::OP>());                 \
  }

#define PK_BINARY_ALL(T, SFX)            \
  PK_BINARY(badd_##SFX, OpAdd, T)        \
  PK_BINARY(bsub_##SFX, OpSub, T)        \
  PK_BINARY(bmul_##SFX, OpMul, T)        \
  PK_BINARY(bdiv_##SFX, OpDiv, T)        \
  PK_BINARY(bminimum_##SFX, OpMin, T)    \
  PK_BINARY(bmaximum_##SFX, OpMax, T)    \
  PK_CMPK(eq_##SFX, OpEq, T)             \
  PK_CMPK(ne_##SFX, OpNe, T)             \
  PK_CMPK(lt_##SFX, OpLt, T)             \
  PK_CMPK(le_##SFX, OpLe, T)             \
  PK_CMPK(gt_##SFX, OpGt, T)             \
  PK_CMPK(ge_##SFX, OpGe, T)

