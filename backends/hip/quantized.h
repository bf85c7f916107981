// GGUF block formats as Candle's quantized kernels read them (docs/candle-kernel-abi.md §4b):
// byte layouts, field loads at any alignment, and the 6-bit sub-block scales of the K-quants.
// Shared by quantized.hip (dequantize) and quantized_mmv.hip (matrix-vector products).
#pragma once
#include "common.h"

namespace pk {
namespace gguf {

constexpr int QK_K = 256;

// Byte layout of each block (offsets of its fields; d, m, dmin are f16 unless noted):
//   q4_0 d|qs[16]            q4_1 d m|qs[16]        q5_0 d|qh[4]|qs[16]   q5_1 d m|qh[4]|qs[16]
//   q8_0 d|qs[32] int8       q8_1 d s|qs[32] int8 (s = d * sum(qs), both f16)
//   q2_K scales[16]|qs[64]|d dmin            q3_K hmask[32]|qs[64]|scales[12]|d
//   q4_K d dmin|scales[12]|qs[128]           q5_K d dmin|scales[12]|qh[32]|qs[128]
//   q6_K ql[128]|qh[64]|scales[16] int8|d    q8_K d (f32)|qs[256] int8|bsums[16] int16
constexpr int kSizeQ4_0 = 18, kSizeQ4_1 = 20, kSizeQ5_0 = 22, kSizeQ5_1 = 24, kSizeQ8_0 = 34, kSizeQ8_1 = 36;
constexpr int kSizeQ2_K = 84, kSizeQ3_K = 110, kSizeQ4_K = 144, kSizeQ5_K = 176, kSizeQ6_K = 210, kSizeQ8_K = 292;

// The widest load a block field can take when the array starts `AL`-aligned: blocks of an
// even size keep 2-byte alignment, sizes divisible by 4 keep 4-byte alignment.
constexpr int align_of_size(int size) { return size % 4 == 0 ? 4 : size % 2 == 0 ? 2 : 1; }

// Little-endian u32 at p, which is AL-byte aligned (AL = 4, 2 or 1).
template <int AL> PK_DEV u32 ld32(const u8* p) {
  if constexpr (AL >= 4) {
    return *reinterpret_cast<const u32*>(p);
  } else if constexpr (AL == 2) {
    const u16* h = reinterpret_cast<const u16*>(p);
    return (u32)h[0] | ((u32)h[1] << 16);
  } else {
    return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24);
  }
}
template <int AL> PK_DEV u32 ld16(const u8* p) {
  if constexpr (AL >= 2) return *reinterpret_cast<const u16*>(p);
  else return (u32)p[0] | ((u32)p[1] << 8);
}
// An f16 field as f32 (exact; NaN stays NaN).
template <int AL> PK_DEV float half_at(const u8* p) { return __half2float(h_from((u16)ld16<AL>(p))); }
// The two f16 fields of a u32 word (d in the low half, m/dmin in the high half).
PK_DEV float lo_half(u32 w) { return __half2float(h_from((u16)(w & 0xffffu))); }
PK_DEV float hi_half(u32 w) { return __half2float(h_from((u16)(w >> 16))); }

// Byte k (0..11) of 12 bytes held as three little-endian words, k not known at compile time:
// selects rather than an indexed register array (which would go to scratch memory).
PK_DEV u32 byte12(u32 w0, u32 w1, u32 w2, int k) {
  const u32 w = k < 4 ? w0 : (k < 8 ? w1 : w2);
  return (w >> (8 * (k & 3))) & 0xffu;
}
// Signed byte l (0..3) of a word, as an int.
PK_DEV int sbyte(u32 w, int l) { return (int)(w << (24 - 8 * l)) >> 24; }

// q4_K / q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes: the
// first four sub-blocks keep theirs in the low 6 bits of bytes j and j+4, the last four in the
// nibbles of bytes j+4 with their top two bits in the high bits of bytes j-4 and j.
PK_DEV void scale_min_k4(u32 w0, u32 w1, u32 w2, int j, u32& sc, u32& mn) {
  // both readings, then a select: a branch here made nvcc split the vector stores of the values
  const u32 bj = byte12(w0, w1, w2, j), bj4 = byte12(w0, w1, w2, j + 4), bjm4 = byte12(w0, w1, w2, (j + 4) & 7);
  const bool first = j < 4;
  sc = first ? (bj & 63u) : ((bj4 & 0xfu) | ((bjm4 >> 6) << 4));
  mn = first ? (bj4 & 63u) : ((bj4 >> 4) | ((bj >> 6) << 4));
}

// q3_K: 6-bit scale s (0..15) from its 12 packed bytes: low nibble in byte s (s < 8) or the
// high nibble of byte s-8; top two bits in byte 8 + s%4 at bit 2*(s/4).
PK_DEV int scale_q3_k(u32 w0, u32 w1, u32 w2, int s) {
  const u32 lo = s < 8 ? byte12(w0, w1, w2, s) & 0xfu : byte12(w0, w1, w2, s - 8) >> 4;
  const u32 hi = (byte12(w0, w1, w2, 8 + (s & 3)) >> (2 * (s >> 2))) & 3u;
  return (int)(lo | (hi << 4));
}

}  // namespace gguf
}  // namespace pk
