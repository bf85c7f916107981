// Software OCP fp8 e4m3fn (ml_dtypes float8_e4m3fn): 1 sign, 4 exponent
// (bias 7), 3 mantissa bits; no infinities; NaN = 0x7f / 0xff; max 448.
// Conversions follow CUDA's cvt.rn.satfinite.e4m3x2: round to nearest even,
// |x| > 448 and +-inf saturate to +-448 (0x7e / 0xfe), NaN -> 0x7f.
// Does not use hip_fp8.h (absent from ROCm 5.2). Included by common.h.
#pragma once

namespace pk {

struct fp8e4m3 {
  u8 bits;
};

// Exact; NaN -> canonical f32 NaN 0x7fffffff (as CUDA's fp8 -> f32 path).
PK_DEV float fp8_to_float(fp8e4m3 v) {
  const u32 b = v.bits;
  const u32 mag = b & 0x7fu;
  if (mag == 0x7fu) return ffrom(0x7fffffffu);
  const u32 sign = (b & 0x80u) << 24;
  const u32 e = mag >> 3, m = mag & 7u;
  if (e == 0) {  // subnormal: m * 2^-9, exact in f32
    const float s = (float)m * 0.001953125f;
    return ffrom(fbits(s) | sign);
  }
  return ffrom(sign | ((e + 120u) << 23) | (m << 20));
}

PK_DEV fp8e4m3 fp8_from_magnitude(u32 sign, u32 m) {
  fp8e4m3 r;
  r.bits = (u8)(sign | (m > 0x7eu ? 0x7eu : m));
  return r;
}

PK_DEV fp8e4m3 float_to_fp8(float f) {
  const u32 u = fbits(f);
  const u32 mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) { fp8e4m3 r; r.bits = 0x7f; return r; }
  const u32 sign = (u >> 24) & 0x80u;
  if (mag == 0x7f800000u) return fp8_from_magnitude(sign, 0x7eu);
  return fp8_from_magnitude(sign, round_magnitude<u32, 23, 127, 3, 7>(mag));
}

PK_DEV fp8e4m3 double_to_fp8(double d) {  // one rounding from double
  const u64 u = dbits(d);
  const u64 mag = u & 0x7fffffffffffffffull;
  if (mag > 0x7ff0000000000000ull) { fp8e4m3 r; r.bits = 0x7f; return r; }
  const u32 sign = (u32)(u >> 56) & 0x80u;
  if (mag == 0x7ff0000000000000ull) return fp8_from_magnitude(sign, 0x7eu);
  return fp8_from_magnitude(sign, round_magnitude<u64, 52, 1023, 3, 7>(mag));
}

}  // namespace pk
