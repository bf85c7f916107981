// CUDA mapping of <hip/hip_bfloat16.h>: the legacy rocBLAS-era struct hip_bfloat16.
// It is NOT NVIDIA's __nv_bfloat16 (nor HIP's __hip_bfloat16): a trivial struct with a
// public `uint16_t data`, explicit construction from float, implicit conversion to float,
// and arithmetic done in float then rounded back. Rounding is ROCm's:
//   * finite (and +-inf) input: round to nearest even on the top 16 bits; values rounding
//     past the largest bf16 become inf (0x7f7fffff -> 0x7f80);
//   * NaN: the top 16 bits are kept (sign and payload), and if the payload lies only in
//     the low 16 bits bit 0 is set so it stays NaN (0x7f800001 -> 0x7f81). NVIDIA's
//     __float2bfloat16 instead returns the canonical 0x7fff for every NaN;
//   * hip_bfloat16(f, hip_bfloat16::truncate): drop the low 16 bits, NaN kept as above.
// tests/test_hip_mapping.py checks these bit patterns on the GPU and on the host.
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_bfloat16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include "hip_runtime.h"
#if !defined(__CUDACC_RTC__)
#include <ostream>
#endif

struct hip_bfloat16 {
  unsigned short data;  // ROCm: uint16_t (the same type)

  enum truncate_t { truncate };

  hip_bfloat16() = default;  // trivial, as ROCm static_asserts
  explicit __host__ __device__ hip_bfloat16(float f) : data(float_to_bfloat16(f)) {}
  explicit __host__ __device__ hip_bfloat16(float f, truncate_t)
      : data(truncate_float_to_bfloat16(f)) {}

  __host__ __device__ operator float() const { return bits_to_float((unsigned int)data << 16); }

  static __host__ __device__ hip_bfloat16 round_to_bfloat16(float f) {
    hip_bfloat16 r;
    r.data = float_to_bfloat16(f);
    return r;
  }
  static __host__ __device__ hip_bfloat16 round_to_bfloat16(float f, truncate_t) {
    hip_bfloat16 r;
    r.data = truncate_float_to_bfloat16(f);
    return r;
  }

 private:
  static __host__ __device__ unsigned int float_bits(float f) {
    union { float f; unsigned int u; } c;
    c.f = f;
    return c.u;
  }
  static __host__ __device__ float bits_to_float(unsigned int u) {
    union { unsigned int u; float f; } c;
    c.u = u;
    return c.f;
  }
  static __host__ __device__ unsigned short float_to_bfloat16(float f) {
    unsigned int u = float_bits(f);
    if ((u & 0x7f800000u) != 0x7f800000u) {
      u += 0x7fffu + ((u >> 16) & 1u);  // RNE; a carry out of the mantissa bumps the exponent
    } else if (u & 0xffffu) {
      u |= 0x10000u;  // NaN whose payload is all in the dropped bits: stay NaN
    }
    return (unsigned short)(u >> 16);
  }
  static __host__ __device__ unsigned short truncate_float_to_bfloat16(float f) {
    unsigned int u = float_bits(f);
    bool nan_low = (u & 0x7f800000u) == 0x7f800000u && (u & 0xffffu);
    return (unsigned short)((u >> 16) | (nan_low ? 1u : 0u));
  }
};

#if !defined(__CUDACC_RTC__)
inline std::ostream& operator<<(std::ostream& os, const hip_bfloat16& v) { return os << float(v); }
#endif
inline __host__ __device__ hip_bfloat16 operator+(hip_bfloat16 a) { return a; }
inline __host__ __device__ hip_bfloat16 operator-(hip_bfloat16 a) {
  a.data ^= 0x8000;  // sign flip on the bits, NaN payload untouched
  return a;
}
inline __host__ __device__ hip_bfloat16 operator+(hip_bfloat16 a, hip_bfloat16 b) {
  return hip_bfloat16(float(a) + float(b));
}
inline __host__ __device__ hip_bfloat16 operator-(hip_bfloat16 a, hip_bfloat16 b) {
  return hip_bfloat16(float(a) - float(b));
}
inline __host__ __device__ hip_bfloat16 operator*(hip_bfloat16 a, hip_bfloat16 b) {
  return hip_bfloat16(float(a) * float(b));
}
inline __host__ __device__ hip_bfloat16 operator/(hip_bfloat16 a, hip_bfloat16 b) {
  return hip_bfloat16(float(a) / float(b));
}
inline __host__ __device__ bool operator<(hip_bfloat16 a, hip_bfloat16 b) { return float(a) < float(b); }
inline __host__ __device__ bool operator==(hip_bfloat16 a, hip_bfloat16 b) { return float(a) == float(b); }
inline __host__ __device__ bool operator>(hip_bfloat16 a, hip_bfloat16 b) { return b < a; }
// As ROCm: <=, >=, != are negations, so they are true when an operand is NaN.
inline __host__ __device__ bool operator<=(hip_bfloat16 a, hip_bfloat16 b) { return !(a > b); }
inline __host__ __device__ bool operator>=(hip_bfloat16 a, hip_bfloat16 b) { return !(a < b); }
inline __host__ __device__ bool operator!=(hip_bfloat16 a, hip_bfloat16 b) { return !(a == b); }
inline __host__ __device__ hip_bfloat16& operator+=(hip_bfloat16& a, hip_bfloat16 b) { return a = a + b; }
inline __host__ __device__ hip_bfloat16& operator-=(hip_bfloat16& a, hip_bfloat16 b) { return a = a - b; }
inline __host__ __device__ hip_bfloat16& operator*=(hip_bfloat16& a, hip_bfloat16 b) { return a = a * b; }
inline __host__ __device__ hip_bfloat16& operator/=(hip_bfloat16& a, hip_bfloat16 b) { return a = a / b; }
inline __host__ __device__ hip_bfloat16& operator++(hip_bfloat16& a) { return a += hip_bfloat16(1.0f); }
inline __host__ __device__ hip_bfloat16& operator--(hip_bfloat16& a) { return a -= hip_bfloat16(1.0f); }
inline __host__ __device__ hip_bfloat16 operator++(hip_bfloat16& a, int) {
  hip_bfloat16 o = a;
  ++a;
  return o;
}
inline __host__ __device__ hip_bfloat16 operator--(hip_bfloat16& a, int) {
  hip_bfloat16 o = a;
  --a;
  return o;
}

namespace std {
constexpr __host__ __device__ bool isinf(hip_bfloat16 a) {
  return (a.data & 0x7f80) == 0x7f80 && !(a.data & 0x7f);
}
constexpr __host__ __device__ bool isnan(hip_bfloat16 a) {
  return (a.data & 0x7f80) == 0x7f80 && (a.data & 0x7f);
}
constexpr __host__ __device__ bool iszero(hip_bfloat16 a) { return !(a.data & 0x7fff); }
}  // namespace std
