// One 32-element group of a GGUF weight block times one q8_1 block of the activations, as integer
// dot products scaled the way llama.cpp's vec_dot does (quantized_mmv.hip's mmvq comment says how
// per format). Shared by quantized_mmv.hip (mmvq) and quantized_mmq.hip (mmq), so both multiply
// with the same integer decoding of every format.
#pragma once
#include "quantized.h"
#include "structured.h"  // seg_allreduce

namespace pk {
namespace gguf {

constexpr int QK8_1 = 32;

// 4 signed bytes of a times 4 signed bytes of b, summed.
PK_DEV int dot4(u32 a, u32 b) {
#if defined(PK_NVIDIA)
  return __dp4a((int)a, (int)b, 0);
#else
  int s = 0;
#pragma unroll
  for (int l = 0; l < 4; ++l) s += sbyte(a, l) * sbyte(b, l);
  return s;
#endif
}

// One 32-element group of an x block as llama.cpp's vec_dot reads it: the quants as 32 signed bytes
// (v[0..3]: elements 0..15, v[4..7]: 16..31, each kept non-negative where the format subtracts an
// offset: off*sum(y) is taken off instead), the integer scale and min of each half, the f32 scales.
// kMinS (mmq's q4_K / q5_K): the mins times the q8_1 block's stored sum s instead of d8*sum(q8).
enum class Dot { kSub, kAsym, kPure, kMin, kScaled, kMinS };
struct XGroup {
  u32 v[8];
  int c[2], m[2], off;
  float d, dm;   // d; and dmin (K) or m (q4_1/q5_1)
};

// Bytes 0..15 (h = 0) or 16..31 of 4-bit quants at q (16 bytes): word i = low or high nibbles.
template <int A> PK_DEV void nibbles16(const u8* q, XGroup& g) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const u32 w = ld32<A>(q + 4 * i);
    g.v[i] = w & 0x0f0f0f0fu;
    g.v[4 + i] = (w >> 4) & 0x0f0f0f0fu;
  }
}
// Bit 4 of byte l of word i := bit (i*4 + l) of qh (q5's fifth bits).
PK_DEV void fifth_bits(u32 qh, XGroup& g) {
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int l = 0; l < 4; ++l) g.v[i] |= ((qh >> (4 * i + l)) & 1u) << (8 * l + 4);
}

template <class F> struct Group;
template <> struct Group<fmt::q4_0> {
  static constexpr Dot kind = Dot::kSub;
  template <int A> static PK_DEV void load(const u8* b, int, XGroup& g) {
    nibbles16<A>(b + 2, g);
    g.d = half_at<A>(b), g.off = 8, g.c[0] = g.c[1] = 1;
  }
};
template <> struct Group<fmt::q4_1> {
  static constexpr Dot kind = Dot::kAsym;
  template <int A> static PK_DEV void load(const u8* b, int, XGroup& g) {
    nibbles16<A>(b + 4, g);
    g.d = half_at<A>(b), g.dm = half_at<A>(b + 2), g.c[0] = g.c[1] = 1;
  }
};
template <> struct Group<fmt::q5_0> {
  static constexpr Dot kind = Dot::kSub;
  template <int A> static PK_DEV void load(const u8* b, int, XGroup& g) {
    nibbles16<A>(b + 6, g);
    fifth_bits(ld32<A>(b + 2), g);
    g.d = half_at<A>(b), g.off = 16, g.c[0] = g.c[1] = 1;
  }
};
template <> struct Group<fmt::q5_1> {
  static constexpr Dot kind = Dot::kAsym;
  template <int A> static PK_DEV void load(const u8* b, int, XGroup& g) {
    nibbles16<A>(b + 8, g);
    fifth_bits(ld32<A>(b + 4), g);
    g.d = half_at<A>(b), g.dm = half_at<A>(b + 2), g.c[0] = g.c[1] = 1;
  }
};
template <> struct Group<fmt::q8_0> {
  static constexpr Dot kind = Dot::kPure;
  template <int A> static PK_DEV void load(const u8* b, int, XGroup& g) {
#pragma unroll
    for (int i = 0; i < 8; ++i) g.v[i] = ld32<A>(b + 2 + 4 * i);
    g.d = half_at<A>(b), g.c[0] = g.c[1] = 1;
  }
};
// K-quant group t (0..7) of a super-block: elements 32t..32t+31.
template <> struct Group<fmt::q2_K> {                 // 2-bit quants, 4-bit scale and min per 16
  static constexpr Dot kind = Dot::kMin;
  template <int A> static PK_DEV void load(const u8* b, int t, XGroup& g) {
#pragma unroll
    for (int i = 0; i < 8; ++i) g.v[i] = (ld32<A>(b + 16 + 32 * (t / 4) + 4 * i) >> (2 * (t % 4))) & 0x03030303u;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const u32 sc = b[2 * t + h];
      g.c[h] = (int)(sc & 0xfu), g.m[h] = (int)(sc >> 4);
    }
    const u32 dm = ld32<A>(b + 80);
    g.d = lo_half(dm), g.dm = hi_half(dm);
  }
};
template <> struct Group<fmt::q3_K> {                 // (2 bits | 4 * hmask bit) - 4, 6-bit scale - 32
  static constexpr Dot kind = Dot::kScaled;
  template <int A> static PK_DEV void load(const u8* b, int t, XGroup& g) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const u32 q = (ld32<A>(b + 32 + 32 * (t / 4) + 4 * i) >> (2 * (t % 4))) & 0x03030303u;
      const u32 h = (ld32<A>(b + 4 * i) >> t) & 0x01010101u;
      g.v[i] = q | (h << 2);
    }
    const u32 w0 = ld32<A>(b + 96), w1 = ld32<A>(b + 100), w2 = ld32<A>(b + 104);
    g.c[0] = scale_q3_k(w0, w1, w2, 2 * t) - 32, g.c[1] = scale_q3_k(w0, w1, w2, 2 * t + 1) - 32;
    g.off = 4, g.d = half_at<A>(b + 108);
  }
};
template <bool Q5> struct GroupQ45 {                   // 4 (+1) bits, 6-bit scale and min per 32
  static constexpr Dot kind = Dot::kMin;
  // 144- and 176-byte blocks of an allocation that starts 16-byte aligned (A = 4: a device
  // allocation, quantized.hip) start 16-byte aligned, as do all the fields read here: 16-byte loads
  // (a third of the load instructions; mmvq at batch 1 is bound by memory).
  static constexpr int W = (kSizeQ4_K % 16 == 0 && kSizeQ5_K % 16 == 0) ? 16 : 4;
  template <int A> static PK_DEV void load(const u8* b, int t, XGroup& g) {
    constexpr int L = A >= 4 ? W : A;
    const u8* q = b + (Q5 ? 48 : 16) + 32 * (t / 2);
    u32 qw[8], hw[8], head[4];
    ld32x4<L>(q, qw), ld32x4<L>(q + 16, qw + 4), ld32x4<L>(b, head);
    if (Q5) ld32x4<L>(b + 16, hw), ld32x4<L>(b + 32, hw + 4);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      g.v[i] = (qw[i] >> (4 * (t % 2))) & 0x0f0f0f0fu;
      if (Q5) g.v[i] |= ((hw[i] >> t) & 0x01010101u) << 4;
    }
    u32 sc, mn;
    scale_min_k4(head[1], head[2], head[3], t, sc, mn);
    g.c[0] = g.c[1] = (int)sc, g.m[0] = g.m[1] = (int)mn;
    g.d = lo_half(head[0]), g.dm = hi_half(head[0]);
  }
};
template <> struct Group<fmt::q4_K> : GroupQ45<false> {};
template <> struct Group<fmt::q5_K> : GroupQ45<true> {};
template <> struct Group<fmt::q6_K> {                 // (4 bits | 2 bits << 4) - 32, int8 scale per 16
  static constexpr Dot kind = Dot::kScaled;
  template <int A> static PK_DEV void load(const u8* b, int t, XGroup& g) {
    const int ip = t / 4, k = t % 4;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const u32 ql = (ld32<A>(b + 64 * ip + 32 * (k & 1) + 4 * i) >> (4 * (k >> 1))) & 0x0f0f0f0fu;
      const u32 qh = (ld32<A>(b + 128 + 32 * ip + 4 * i) >> (2 * k)) & 0x03030303u;
      g.v[i] = ql | (qh << 4);
    }
    g.c[0] = (int)(signed char)b[192 + 2 * t], g.c[1] = (int)(signed char)b[193 + 2 * t];
    g.off = 32, g.d = half_at<A>(b + 208);
  }
};

// One q8_1 block of y (4-byte aligned: 36-byte blocks of a device allocation).
struct YBlock {
  u32 q[8];
  float d, s;
};
PK_DEV void load_y(const u8* b, YBlock& y) {
  const u32 ds = ld32<4>(b);
  y.d = lo_half(ds), y.s = hi_half(ds);
#pragma unroll
  for (int i = 0; i < 8; ++i) y.q[i] = ld32<4>(b + 4 + 4 * i);
}

// x group . y block, scaled as the format's vec_dot.
template <Dot K> PK_DEV float group_dot(const XGroup& x, const YBlock& y) {
  int dot[2] = {0, 0}, ysum[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    dot[i / 4] += dot4(x.v[i], y.q[i]);
    if (K != Dot::kAsym && K != Dot::kPure && K != Dot::kMinS) ysum[i / 4] += dot4(0x01010101u, y.q[i]);
  }
  if (K == Dot::kSub) return x.d * ((float)(dot[0] + dot[1]) * y.d - (float)x.off * y.s);
  if (K == Dot::kAsym) return (float)(dot[0] + dot[1]) * (x.d * y.d) + x.dm * y.s;
  if (K == Dot::kPure) return (x.d * y.d) * (float)(dot[0] + dot[1]);
  if (K == Dot::kScaled)
    return x.d * (y.d * (float)(x.c[0] * (dot[0] - x.off * ysum[0]) + x.c[1] * (dot[1] - x.off * ysum[1])));
  if (K == Dot::kMinS)   // one min for the whole group (m[0] == m[1])
    return x.d * (y.d * (float)(x.c[0] * dot[0] + x.c[1] * dot[1])) - x.dm * ((float)x.m[0] * y.s);
  return x.d * (y.d * (float)(x.c[0] * dot[0] + x.c[1] * dot[1])) -
         x.dm * (y.d * (float)(x.m[0] * ysum[0] + x.m[1] * ysum[1]));
}

// ------------------------------------------------------------------------------ quantize_q8_1
// Float to int8 as a CUDA conversion does (saturating, NaN -> 0). quantize_q8_1's r = roundf(x / d)
// with d = amax / 127 is NaN or within [-127, 127], so on NVIDIA one cvt.rzi.s32.f32 (NaN -> 0)
// gives the same bits as the tests below, which took five instructions more.
PK_DEV int to_i8(float r) {
#if defined(PK_NVIDIA)
  return (signed char)r;
#else
  if (!(r == r)) return 0;
  return r >= 127.0f ? 127 : r <= -128.0f ? -128 : (int)r;
#endif
}

// quantize_q8_1 and mmvq_gguf_quantize_q8_1_<T>: one thread per element of the padded row (block
// 256 under Candle's launch); a q8_1 block is 32 consecutive threads (kx_padded is a multiple of 32:
// Candle pads rows to 512), one segment of seg_allreduce (structured.h), whose butterfly leaves the
// block's sum bit for bit as Candle's warp_reduce_sum does (lane 0's tree in every lane) and its
// amax exactly (fmaxf is exact and ignores NaN unless every element is NaN). No shared memory and
// no barrier (H200, quantize_q8_1 of 14336 over a 3.58 us launch floor: 4.83 us with one barrier
// through shared memory, 4.75 us this way, Candle's 4.67).
// I: the index type, u32 where the padded rows fit 2^32 elements (Candle's own is int), else u64.
template <class I, class T> PK_DEV void quantize_q8_1_at(const T* x, void* vy, int kx, int kx_padded) {
  const I ix = (I)blockDim.x * blockIdx.x + threadIdx.x;
  // whole segments return: kx_padded and the block's width are multiples of 32
  if (ix >= (I)(unsigned)kx_padded) return;
  const I iy = (I)blockDim.y * blockIdx.y + threadIdx.y;
  const I i = iy * (I)(unsigned)kx_padded + ix;
  const float xi = ix < (I)(unsigned)kx ? to_f32(x[(usize)iy * (unsigned)kx + ix]) : 0.0f;
  const float amax = seg_allreduce(fabsf(xi), [](float p, float q) { return fmaxf(p, q); });
  const float sum = seg_allreduce(xi, [](float p, float q) { return p + q; });
  const float d = amax / 127;
  const int q = amax == 0.0f ? 0 : to_i8(roundf(xi / d));
  u8* blk = static_cast<u8*>(vy) + (usize)(i / QK8_1) * kSizeQ8_1;  // (36 bytes a block: past u32 before i is)
  blk[4 + i % QK8_1] = (u8)(q & 0xff);
  if (i % QK8_1 == 0)  // d and s in one 4-byte store, as Candle stores its half2 ds
    reinterpret_cast<u32*>(blk)[0] = (u32)h_bits(__float2half(d)) | (u32)h_bits(__float2half(sum)) << 16;
}
template <class T> PK_DEV void quantize_q8_1(const T* x, void* vy, int kx, int kx_padded) {
  if ((u64)gridDim.y * blockDim.y * (unsigned)kx_padded <= 0xffffffffull) quantize_q8_1_at<u32>(x, vy, kx, kx_padded);
  else quantize_q8_1_at<usize>(x, vy, kx, kx_padded);
}

}  // namespace gguf
}  // namespace pk
