// GGUF block formats as Candle's quantized kernels read them (docs/candle-kernel-abi.md §4b):
// byte layouts, field loads as wide as the alignment allows, the K-quants' 6-bit sub-block scales.
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
// Four little-endian u32 at p into w: one 16-byte load when p is 16-byte aligned (AL = 16).
template <int AL> PK_DEV void ld32x4(const u8* p, u32* w) {
  if constexpr (AL >= 16) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = ld32<AL>(p + 4 * i);
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


// ------------------------------------------------------------------ four elements at a time
// deq4<FMT, A>(blk, e, v): elements e..e+3 (e a multiple of 4) of one block at blk, in f32, as
// the dequantize kernels compute them (A: the alignment blk is known to have, 4, 2 or 1). Every
// product is exact in f32 (an f16 scale times integers of at most 14 bits), so each value is
// rounded once, in the final addition or subtraction, FMA-contracted or not.
PK_DEV float nib(u32 q, int l) { return (float)((q >> (8 * l)) & 0xfu); }

template <int A> PK_DEV void deq4_q4_0(const u8* blk, int e, float (&v)[4]) {
  const float d = half_at<A>(blk), add = -8.0f * d;            // d*q + (-8d): zeros are +0
  const u32 q = ld32<A>(blk + 2 + e % 16) >> (4 * (e / 16));
  for (int l = 0; l < 4; ++l) v[l] = d * nib(q, l) + add;
}
template <int A> PK_DEV void deq4_q4_1(const u8* blk, int e, float (&v)[4]) {
  const float d = half_at<A>(blk), m = half_at<A>(blk + 2);
  const u32 q = ld32<A>(blk + 4 + e % 16) >> (4 * (e / 16));
  for (int l = 0; l < 4; ++l) v[l] = d * nib(q, l) + m;
}
// q5: element i's fifth bit is bit i of qh (low nibbles: elements 0..15, high: 16..31).
template <int A, bool ASYM> PK_DEV void deq4_q5(const u8* blk, int e, float (&v)[4]) {
  constexpr int QH = ASYM ? 4 : 2;
  const float d = half_at<A>(blk), m = ASYM ? half_at<A>(blk + 2) : 0.0f;
  const u32 qh = ld32<A>(blk + QH) >> e;
  const u32 q = ld32<A>(blk + QH + 4 + e % 16) >> (4 * (e / 16));
  for (int l = 0; l < 4; ++l) {
    const float x = (float)(((q >> (8 * l)) & 0xfu) | (((qh >> l) & 1u) << 4));
    v[l] = ASYM ? x * d + m : (x - 16.0f) * d;
  }
}
template <int A> PK_DEV void deq4_q8_0(const u8* blk, int e, float (&v)[4]) {
  const float d = half_at<A>(blk);
  const u32 q = ld32<A>(blk + 2 + e);
  for (int l = 0; l < 4; ++l) v[l] = d * (float)sbyte(q, l);
}
// q2_K: element 128n + 32j + l = ((qs[32n+l] >> 2j) & 3) * d*(sc & 15) - dmin*(sc >> 4),
// sc = scales[8n + 2j + l/16].
template <int A> PK_DEV void deq4_q2_k(const u8* blk, int e, float (&v)[4]) {
  const int n = e / 128, j = (e % 128) / 32, l0 = e % 32;
  const u32 q = ld32<A>(blk + 16 + 32 * n + l0) >> (2 * j);
  const u32 dm = ld32<A>(blk + 80);
  const u32 sc = blk[8 * n + 2 * j + l0 / 16];
  const float dl = lo_half(dm) * (float)(sc & 0xfu), ml = hi_half(dm) * (float)(sc >> 4);
  for (int l = 0; l < 4; ++l) v[l] = dl * (float)((q >> (8 * l)) & 3u) - ml;
}
// q3_K: element 128n + 32j + l = d*(scale_s - 32) * (((qs[32n+l] >> 2j) & 3) - (hmask[l] bit
// 4n+j ? 0 : 4)), s = 8n + 2j + l/16.
template <int A> PK_DEV void deq4_q3_k(const u8* blk, int e, float (&v)[4]) {
  const int n = e / 128, j = (e % 128) / 32, l0 = e % 32;
  const u32 q = ld32<A>(blk + 32 + 32 * n + l0) >> (2 * j);
  const u32 h = ld32<A>(blk + l0) >> (4 * n + j);
  const int s = scale_q3_k(ld32<A>(blk + 96), ld32<A>(blk + 100), ld32<A>(blk + 104), 8 * n + 2 * j + l0 / 16);
  const float dl = half_at<A>(blk + 108) * (float)(s - 32);
  for (int l = 0; l < 4; ++l) v[l] = dl * (float)((int)((q >> (8 * l)) & 3u) - (((h >> (8 * l)) & 1u) ? 0 : 4));
}
// q4_K / q5_K: element 64il + w: w < 32 the low nibble of qs[32il + w] (sub-block 2il), else the
// high nibble of qs[32il + w - 32] (sub-block 2il+1); d*scale*q - dmin*min; q5_K adds 16 when
// bit (sub-block) of qh[w % 32] is set.
template <int A, bool Q5> PK_DEV void deq4_q45_k(const u8* blk, int e, float (&v)[4]) {
  const int il = e / 64, hi = (e % 64) / 32, w32 = e % 32, sub = 2 * il + hi;
  const u32 dm = ld32<A>(blk);
  u32 sc, mn;
  scale_min_k4(ld32<A>(blk + 4), ld32<A>(blk + 8), ld32<A>(blk + 12), sub, sc, mn);
  const u32 q = ld32<A>(blk + (Q5 ? 48 : 16) + 32 * il + w32) >> (4 * hi);
  const u32 qh = Q5 ? ld32<A>(blk + 16 + w32) >> sub : 0u;
  const float dl = lo_half(dm) * (float)sc, ml = hi_half(dm) * (float)mn;
  for (int l = 0; l < 4; ++l) v[l] = dl * (float)(((q >> (8 * l)) & 0xfu) | (((qh >> (8 * l)) & 1u) << 4)) - ml;
}
// q6_K: element 128ip + 32k + l = d * scales[8ip + 2k + l/16] * (q6 - 32), q6 = the low (k < 2) or
// high (k >= 2) nibble of ql[64ip + 32*(k%2) + l] | ((qh[32ip + l] >> 2k) & 3) << 4.
template <int A> PK_DEV void deq4_q6_k(const u8* blk, int e, float (&v)[4]) {
  const int ip = e / 128, k = (e % 128) / 32, l0 = e % 32;
  const u32 ql = ld32<A>(blk + 64 * ip + 32 * (k & 1) + l0) >> (4 * (k >> 1));
  const u32 qh = ld32<A>(blk + 128 + 32 * ip + l0) >> (2 * k);
  const int sc = (int)(signed char)blk[192 + 8 * ip + 2 * k + l0 / 16];
  const float ds = half_at<A>(blk + 208) * (float)sc;
  for (int l = 0; l < 4; ++l)
    v[l] = ds * (float)((int)(((ql >> (8 * l)) & 0xfu) | (((qh >> (8 * l)) & 3u) << 4)) - 32);
}
// q8_K: qs[e] * d, d an f32.
template <int A> PK_DEV void deq4_q8_k(const u8* blk, int e, float (&v)[4]) {
  const float d = ffrom(ld32<A>(blk));
  const u32 q = ld32<A>(blk + 4 + e);
  for (int l = 0; l < 4; ++l) v[l] = (float)sbyte(q, l) * d;
}

// An activation or table element as float, exactly.
PK_DEV float to_f32(float v) { return v; }
PK_DEV float to_f32(f16 v) { return __half2float(v); }
PK_DEV float to_f32(bf16 v) { return bf16_to_float(v); }

// The formats by name: block size, elements per block, and deq4.
#define PK_GGUF_FORMAT(NAME, SIZE, QK, DEQ)                                                    \
  struct NAME {                                                                               \
    static constexpr int size = SIZE, qk = QK, align = align_of_size(SIZE);                   \
    template <int A> static PK_DEV void deq4(const u8* blk, int e, float (&v)[4]) { DEQ; }    \
  };
namespace fmt {
PK_GGUF_FORMAT(q4_0, kSizeQ4_0, 32, deq4_q4_0<A>(blk, e, v))
PK_GGUF_FORMAT(q4_1, kSizeQ4_1, 32, deq4_q4_1<A>(blk, e, v))
PK_GGUF_FORMAT(q5_0, kSizeQ5_0, 32, (deq4_q5<A, false>(blk, e, v)))
PK_GGUF_FORMAT(q5_1, kSizeQ5_1, 32, (deq4_q5<A, true>(blk, e, v)))
PK_GGUF_FORMAT(q8_0, kSizeQ8_0, 32, deq4_q8_0<A>(blk, e, v))
PK_GGUF_FORMAT(q2_K, kSizeQ2_K, QK_K, deq4_q2_k<A>(blk, e, v))
PK_GGUF_FORMAT(q3_K, kSizeQ3_K, QK_K, deq4_q3_k<A>(blk, e, v))
PK_GGUF_FORMAT(q4_K, kSizeQ4_K, QK_K, (deq4_q45_k<A, false>(blk, e, v)))
PK_GGUF_FORMAT(q5_K, kSizeQ5_K, QK_K, (deq4_q45_k<A, true>(blk, e, v)))
PK_GGUF_FORMAT(q6_K, kSizeQ6_K, QK_K, deq4_q6_k<A>(blk, e, v))
PK_GGUF_FORMAT(q8_K, kSizeQ8_K, QK_K, deq4_q8_k<A>(blk, e, v))
}  // namespace fmt
#undef PK_GGUF_FORMAT

}  // namespace gguf
}  // namespace pk
