// CUDA mapping of <hip/hip_fp8.h> (ROCm >= 6.2 API; ROCm 5.2 has no fp8 header): the OCP
// types __hip_fp8_e4m3 / __hip_fp8_e5m2 and the FNUZ types __hip_fp8_e4m3_fnuz /
// __hip_fp8_e5m2_fnuz (bias one higher, no inf, no -0, the one NaN is 0x80), their x2/x4
// vectors and the __hip_cvt_* functions. Software conversions (host and device) with
// ROCm's semantics, which are not NVIDIA's __nv_fp8_* ones:
//   * finite values round to nearest even; a value that rounds to zero is +0 for FNUZ and
//     keeps its sign for OCP;
//   * |x| above the largest finite value (OCP e4m3 448, e5m2 57344; FNUZ e4m3 240, e5m2
//     57344), compared BEFORE rounding: __HIP_SATFINITE gives +-max; __HIP_NOSAT gives NaN
//     (OCP e4m3, FNUZ) or +-inf (OCP e5m2). So 449 -> NaN without saturation on ROCm,
//     where NVIDIA's __NV_NOSAT rounds it to 448;
//   * NaN -> NaN (OCP: sign|0x7f, FNUZ: 0x80); +-inf -> NaN for OCP e4m3 and both FNUZ
//     even with __HIP_SATFINITE (NVIDIA's __NV_SATFINITE gives +-448), +-inf for OCP e5m2;
//   * fp8 -> float is exact; a NaN decodes to a float NaN (its bits differ between ROCm's
//     paths, here 0x7fffffff).
// The structs' constructors are implicit and saturate (__HIP_SATFINITE), as ROCm's.
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_fp8.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include "hip_runtime.h"
#include "hip_fp16.h"  // as ROCm's hip_fp8.h
#include "hip_bf16.h"

enum __hip_fp8_interpretation_t {
  __HIP_E4M3 = 0,
  __HIP_E5M2 = 1,
  __HIP_E4M3_FNUZ = 2,
  __HIP_E5M2_FNUZ = 3,
};
enum __hip_saturation_t {
  __HIP_NOSAT = 0,
  __HIP_SATFINITE = 1,
};
typedef unsigned char __hip_fp8_storage_t;
typedef unsigned short int __hip_fp8x2_storage_t;
typedef unsigned int __hip_fp8x4_storage_t;

namespace __hip_fp8_map {
__host__ __device__ inline unsigned long long dbits(double d) {
  union { double d; unsigned long long u; } c;
  c.d = d;
  return c.u;
}
__host__ __device__ inline float fbits(unsigned int u) {
  union { unsigned int u; float f; } c;
  c.u = u;
  return c.f;
}
__host__ __device__ inline bool fnuz(int t) { return t == __HIP_E4M3_FNUZ || t == __HIP_E5M2_FNUZ; }
__host__ __device__ inline int mant_bits(int t) { return (t == __HIP_E4M3 || t == __HIP_E4M3_FNUZ) ? 3 : 2; }
__host__ __device__ inline int bias(int t) { return mant_bits(t) == 3 ? (fnuz(t) ? 8 : 7) : (fnuz(t) ? 16 : 15); }

// Every float is exactly a double, so one routine serves float and double inputs.
__host__ __device__ inline __hip_fp8_storage_t to_fp8(double v, bool sat, int t) {
  const bool nz = fnuz(t);
  const int wm = mant_bits(t), b = bias(t);
  const unsigned long long u = dbits(v), a = u & 0x7fffffffffffffffull;
  const unsigned s = (unsigned)(u >> 63) << 7;
  const unsigned nan = nz ? 0x80u : (s | 0x7fu);
  if (a >= 0x7ff0000000000000ull)  // inf or NaN
    return (nz || wm == 3 || a != 0x7ff0000000000000ull) ? nan : (s | 0x7cu);
  const double maxv = wm == 3 ? (nz ? 240.0 : 448.0) : 57344.0;
  if (a > dbits(maxv)) {
    if (sat) return s | (nz ? 0x7fu : (wm == 3 ? 0x7eu : 0x7bu));
    return (nz || wm == 3) ? nan : (s | 0x7cu);
  }
  const int E = (int)(a >> 52);
  const unsigned zero = nz ? 0u : s;
  if (E == 0) return zero;  // zero, or a double subnormal: far below fp8's smallest
  const int e_in = E - 1023, emin = 1 - b;
  int e = e_in < emin ? emin : e_in;
  const unsigned long long sig = (a & 0xfffffffffffffull) | (1ull << 52);
  const int shift = 52 - wm + (e - e_in);  // bits of sig below the fp8 quantum
  unsigned long long q = 0;
  if (shift < 54) {
    q = sig >> shift;
    const unsigned long long rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  if (q == 0) return zero;
  if (q >= (2ull << wm)) {  // rounding carried into the next binade
    q >>= 1;
    ++e;
  }
  if (q < (1ull << wm)) return s | (unsigned)q;  // subnormal
  return s | ((unsigned)(e + b) << wm) | (unsigned)(q - (1ull << wm));
}

__host__ __device__ inline float to_float(__hip_fp8_storage_t x, int t) {
  const bool nz = fnuz(t);
  const int wm = mant_bits(t), b = bias(t);
  const float qnan = fbits(0x7fffffffu);
  if (nz && x == 0x80) return qnan;
  const unsigned a = x & 0x7fu, ex = a >> wm, m = a & ((1u << wm) - 1);
  if (!nz) {
    if (wm == 3 && a == 0x7fu) return qnan;
    if (wm == 2 && ex == 31u) return m ? qnan : fbits((x & 0x80u) ? 0xff800000u : 0x7f800000u);
  }
  const int k = (ex == 0 ? 1 - b : (int)ex - b) - wm;  // value = sig * 2^k, exact in float
  const float mag = (float)(ex == 0 ? m : (m | (1u << wm))) * fbits((unsigned)(127 + k) << 23);
  return (x & 0x80u) ? -mag : mag;
}
}  // namespace __hip_fp8_map

__host__ __device__ inline __hip_fp8_storage_t __hip_cvt_float_to_fp8(
    const float f, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return __hip_fp8_map::to_fp8((double)f, sat == __HIP_SATFINITE, type);
}
__host__ __device__ inline __hip_fp8_storage_t __hip_cvt_double_to_fp8(
    const double d, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return __hip_fp8_map::to_fp8(d, sat == __HIP_SATFINITE, type);
}
__host__ __device__ inline __hip_fp8x2_storage_t __hip_cvt_float2_to_fp8x2(
    const float2 f2, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return (__hip_fp8x2_storage_t)(__hip_cvt_float_to_fp8(f2.x, sat, type) |
                                 (__hip_cvt_float_to_fp8(f2.y, sat, type) << 8));
}
__host__ __device__ inline __hip_fp8x2_storage_t __hip_cvt_double2_to_fp8x2(
    const double2 d2, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return (__hip_fp8x2_storage_t)(__hip_cvt_double_to_fp8(d2.x, sat, type) |
                                 (__hip_cvt_double_to_fp8(d2.y, sat, type) << 8));
}
__host__ __device__ inline __hip_fp8_storage_t __hip_cvt_halfraw_to_fp8(
    const __half_raw x, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return __hip_cvt_float_to_fp8(__half2float(__half(x)), sat, type);
}
__host__ __device__ inline __hip_fp8x2_storage_t __hip_cvt_halfraw2_to_fp8x2(
    const __half2_raw x, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return __hip_cvt_float2_to_fp8x2(__half22float2(__half2(x)), sat, type);
}
__host__ __device__ inline __hip_fp8_storage_t __hip_cvt_bfloat16raw_to_fp8(
    const __hip_bfloat16_raw x, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return __hip_cvt_float_to_fp8(__bfloat162float(__hip_bfloat16(x)), sat, type);
}
__host__ __device__ inline __hip_fp8x2_storage_t __hip_cvt_bfloat16raw2_to_fp8x2(
    const __hip_bfloat162_raw x, const __hip_saturation_t sat, const __hip_fp8_interpretation_t type) {
  return __hip_cvt_float2_to_fp8x2(__bfloat1622float2(__hip_bfloat162(x)), sat, type);
}
// fp8 -> half is exact (every fp8 value is a binary16 value).
__host__ __device__ inline __half_raw __hip_cvt_fp8_to_halfraw(
    const __hip_fp8_storage_t x, const __hip_fp8_interpretation_t type) {
  return (__half_raw)__float2half(__hip_fp8_map::to_float(x, type));
}
__host__ __device__ inline __half2_raw __hip_cvt_fp8x2_to_halfraw2(
    const __hip_fp8x2_storage_t x, const __hip_fp8_interpretation_t type) {
  return (__half2_raw)__floats2half2_rn(__hip_fp8_map::to_float((__hip_fp8_storage_t)(x & 0xff), type),
                                        __hip_fp8_map::to_float((__hip_fp8_storage_t)(x >> 8), type));
}

#define __HIP_FP8_MAP_SCALAR(NAME, INTERP)                                                     \
  struct NAME {                                                                                \
    __hip_fp8_storage_t __x;                                                                   \
    static constexpr __hip_saturation_t __default_saturation = __HIP_SATFINITE;                \
    static constexpr __hip_fp8_interpretation_t __default_interpret = INTERP;                  \
    static constexpr unsigned int __we = (INTERP == __HIP_E4M3 || INTERP == __HIP_E4M3_FNUZ) ? 4 : 5; \
    static constexpr unsigned int __wm = 7 - __we;                                             \
    NAME() = default;                                                                          \
    __host__ __device__ NAME(const double f) : __x(__hip_fp8_map::to_fp8(f, true, INTERP)) {} \
    __host__ __device__ NAME(const float f) : __x(__hip_fp8_map::to_fp8(f, true, INTERP)) {}  \
    __host__ __device__ NAME(const int v) : NAME((float)v) {}                                  \
    __host__ __device__ NAME(const long int v) : NAME((float)v) {}                             \
    __host__ __device__ NAME(const long long int v) : NAME((float)v) {}                        \
    __host__ __device__ NAME(const short int v) : NAME((float)v) {}                            \
    __host__ __device__ NAME(const unsigned int v) : NAME((float)v) {}                         \
    __host__ __device__ NAME(const unsigned long int v) : NAME((float)v) {}                    \
    __host__ __device__ NAME(const unsigned long long int v) : NAME((float)v) {}               \
    __host__ __device__ NAME(const unsigned short int v) : NAME((float)v) {}                   \
    __host__ __device__ NAME(const __half f) : NAME(__half2float(f)) {}                        \
    __host__ __device__ NAME(const __hip_bfloat16 f) : NAME(__bfloat162float(f)) {}            \
    __host__ __device__ operator float() const { return __hip_fp8_map::to_float(__x, INTERP); } \
    __host__ __device__ operator double() const { return (double)(float)*this; }               \
    __host__ __device__ operator __half() const { return __float2half((float)*this); }         \
    __host__ __device__ operator __hip_bfloat16() const { return __float2bfloat16((float)*this); } \
    __host__ __device__ operator bool() const { return (__x & 0x7f) != 0 || (__x == 0x80 && __hip_fp8_map::fnuz(INTERP)); } \
    /* integer conversions: NaN -> 0, else truncation toward zero */                           \
    __host__ __device__ float __int_src() const { float f = *this; return f != f ? 0.0f : f; } \
    __host__ __device__ operator int() const { return (int)__int_src(); }                     \
    __host__ __device__ operator long int() const { return (long int)__int_src(); }           \
    __host__ __device__ operator long long int() const { return (long long int)__int_src(); } \
    __host__ __device__ operator unsigned int() const { float f = __int_src(); return f <= 0.0f ? 0u : (unsigned int)f; } \
    __host__ __device__ operator unsigned long long int() const { float f = __int_src(); return f <= 0.0f ? 0ull : (unsigned long long int)f; } \
  };

__HIP_FP8_MAP_SCALAR(__hip_fp8_e4m3, __HIP_E4M3)
__HIP_FP8_MAP_SCALAR(__hip_fp8_e5m2, __HIP_E5M2)
__HIP_FP8_MAP_SCALAR(__hip_fp8_e4m3_fnuz, __HIP_E4M3_FNUZ)
__HIP_FP8_MAP_SCALAR(__hip_fp8_e5m2_fnuz, __HIP_E5M2_FNUZ)
#undef __HIP_FP8_MAP_SCALAR

// Vectors: element 0 in the low byte, as ROCm.
#define __HIP_FP8_MAP_X2(NAME, INTERP)                                                          \
  struct NAME {                                                                                \
    __hip_fp8x2_storage_t __x;                                                                 \
    static constexpr __hip_saturation_t __default_saturation = __HIP_SATFINITE;                \
    static constexpr __hip_fp8_interpretation_t __default_interpret = INTERP;                  \
    NAME() = default;                                                                          \
    __host__ __device__ NAME(const float2 v) : __x(__hip_cvt_float2_to_fp8x2(v, __HIP_SATFINITE, INTERP)) {} \
    __host__ __device__ NAME(const double2 v) : __x(__hip_cvt_double2_to_fp8x2(v, __HIP_SATFINITE, INTERP)) {} \
    __host__ __device__ NAME(const __half2 v) : NAME(__half22float2(v)) {}                     \
    __host__ __device__ NAME(const __hip_bfloat162 v) : NAME(__bfloat1622float2(v)) {}         \
    __host__ __device__ operator float2() const {                                              \
      return make_float2(__hip_fp8_map::to_float((__hip_fp8_storage_t)(__x & 0xff), INTERP),   \
                         __hip_fp8_map::to_float((__hip_fp8_storage_t)(__x >> 8), INTERP));    \
    }                                                                                          \
    __host__ __device__ operator __half2() const { return __float22half2_rn((float2)*this); }  \
  };
__HIP_FP8_MAP_X2(__hip_fp8x2_e4m3, __HIP_E4M3)
__HIP_FP8_MAP_X2(__hip_fp8x2_e5m2, __HIP_E5M2)
__HIP_FP8_MAP_X2(__hip_fp8x2_e4m3_fnuz, __HIP_E4M3_FNUZ)
__HIP_FP8_MAP_X2(__hip_fp8x2_e5m2_fnuz, __HIP_E5M2_FNUZ)
#undef __HIP_FP8_MAP_X2

#define __HIP_FP8_MAP_X4(NAME, INTERP)                                                          \
  struct NAME {                                                                                \
    __hip_fp8x4_storage_t __x;                                                                 \
    static constexpr __hip_saturation_t __default_saturation = __HIP_SATFINITE;                \
    static constexpr __hip_fp8_interpretation_t __default_interpret = INTERP;                  \
    NAME() = default;                                                                          \
    __host__ __device__ NAME(const float4 v)                                                   \
        : __x((__hip_fp8x4_storage_t)__hip_cvt_float2_to_fp8x2(make_float2(v.x, v.y), __HIP_SATFINITE, INTERP) | \
              ((__hip_fp8x4_storage_t)__hip_cvt_float2_to_fp8x2(make_float2(v.z, v.w), __HIP_SATFINITE, INTERP) << 16)) {} \
    __host__ __device__ operator float4() const {                                              \
      return make_float4(__hip_fp8_map::to_float((__hip_fp8_storage_t)(__x & 0xff), INTERP),   \
                         __hip_fp8_map::to_float((__hip_fp8_storage_t)((__x >> 8) & 0xff), INTERP), \
                         __hip_fp8_map::to_float((__hip_fp8_storage_t)((__x >> 16) & 0xff), INTERP), \
                         __hip_fp8_map::to_float((__hip_fp8_storage_t)(__x >> 24), INTERP));   \
    }                                                                                          \
  };
__HIP_FP8_MAP_X4(__hip_fp8x4_e4m3, __HIP_E4M3)
__HIP_FP8_MAP_X4(__hip_fp8x4_e5m2, __HIP_E5M2)
__HIP_FP8_MAP_X4(__hip_fp8x4_e4m3_fnuz, __HIP_E4M3_FNUZ)
__HIP_FP8_MAP_X4(__hip_fp8x4_e5m2_fnuz, __HIP_E5M2_FNUZ)
#undef __HIP_FP8_MAP_X4
