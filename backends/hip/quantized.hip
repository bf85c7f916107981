// GGUF dequantize: dequantize_block_<fmt>_<f32|f16>, the kernels of Candle's quantized.cu
// (docs/candle-kernel-abi.md §4b), written from the block formats:
//   (const void* vx, T* y, const int k)  q4_0 q4_1 q8_0 (k = n/32), q5_0 q5_1 (k = n)
//   (const void* vx, T* y)               q2_K q3_K q4_K q5_K q6_K q8_K
// with Candle's launches: q4_0/q4_1/q8_0 grid ceil(n/256) x 32 threads (8 quant blocks per CUDA
// block; blocks >= k skipped), q5_0/q5_1 grid ceil(n/512) x 256 (two elements per thread,
// elements >= k skipped), K-quants grid n/256 (one super-block per CUDA block) x 64 (q2_K q3_K
// q5_K q6_K) or 32 (q4_K q8_K).
//
// Arithmetic: every product is exact in f32 (an f16 scale times integers of at most 14 bits,
// or an int8 times q8_K's f32 d), so each element is rounded once, in the subtraction or
// addition after it (or not at all), whether the compiler contracts it into an FMA or not; the
// f16 kernels round that f32 once more on the store (RNE). q4_0 is d*q + (-8d): its zeros are +0.
//
// Memory: each thread takes 4 consecutive elements of a quant (group of) block(s) and stores
// them as one 16-byte (f32) or 8-byte (f16) access, a warp's store instruction covering whole
// 32-byte sectors; the block's bytes are read as u32 words where the array's alignment allows
// (the fast path: vx aligned to what the block size keeps, y to the store width), byte by byte
// otherwise. No cross-lane operations: the same on 32- and 64-lane wavefronts.
#include "quantized.h"

namespace pk {
namespace gguf {

PK_DEV void put(float* y, float v) { *y = v; }
PK_DEV void put(f16* y, float v) { *y = __float2half(v); }
// One vector store of four values. On NVIDIA through __stwb (st.global.wb, the default
// write-back store): nvcc split a plain 16-byte store into four scalar ones whenever a value
// came out of a branch or loop (seen in PTX for q4_K, q4_0, q8_0).
PK_DEV void vstore4(float* y, float v0, float v1, float v2, float v3) {
#if defined(PK_NVIDIA)
  __stwb(reinterpret_cast<float4*>(y), make_float4(v0, v1, v2, v3));
#else
  *reinterpret_cast<float4*>(y) = make_float4(v0, v1, v2, v3);
#endif
}
PK_DEV void vstore4(f16* y, float v0, float v1, float v2, float v3) {
  const uint2 w = make_uint2((u32)h_bits(__float2half(v0)) | ((u32)h_bits(__float2half(v1)) << 16),
                             (u32)h_bits(__float2half(v2)) | ((u32)h_bits(__float2half(v3)) << 16));
#if defined(PK_NVIDIA)
  __stwb(reinterpret_cast<uint2*>(y), w);
#else
  *reinterpret_cast<uint2*>(y) = w;
#endif
}

// y[0..3] = v: one vector store on the fast path (y is then 4*sizeof(T)-aligned).
template <bool FAST, class T> PK_DEV void store4(T* y, float v0, float v1, float v2, float v3) {
  if constexpr (FAST) {
    vstore4(y, v0, v1, v2, v3);
  } else {
    put(y, v0), put(y + 1, v1), put(y + 2, v2), put(y + 3, v3);
  }
}

template <bool B> struct Fast { static constexpr bool value = B; };
// Runs body(Fast<FAST>) with FAST = vx is AL-aligned and y 4*sizeof(T)-aligned (always, for
// Candle's device allocations; the byte path keeps host-side offsets correct).
template <int AL, class T, class F> PK_DEV void dispatch(const void* vx, const T* y, F&& body) {
  const bool fast = ((usize)vx % AL) == 0 && ((usize)y % (4 * sizeof(T))) == 0;
  if (fast) body(Fast<true>());
  else body(Fast<false>());
}

// ----------------------------------------------------------- q4_0, q4_1, q8_0: 8 blocks a CUDA block
// Quant block qb = 8*blockIdx + u/4, u = 0..31 over the threads: nibble formats take bytes
// 4g..4g+3 (g = u%4) of qs, elements 4g.. (low nibbles) and 16+4g.. (high nibbles); q8_0 takes
// int8 quants 4g.. and 16+4g...
template <class T, int SIZE, int QS, bool ASYM> PK_DEV void q4_01(const void* vx, T* y, int k) {
  constexpr int AL = align_of_size(SIZE);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    for (int u = threadIdx.x; u < 32; u += blockDim.x) {
      const usize qb = (usize)blockIdx.x * 8 + (usize)(u / 4);
      if (qb >= (usize)(unsigned)k) return;
      const int g = u % 4;
      const u8* blk = static_cast<const u8*>(vx) + qb * SIZE;
      const float d = half_at<A>(blk);
      const float add = ASYM ? half_at<A>(blk + 2) : -8.0f * d;
      const u32 q = ld32<A>(blk + QS + 4 * g);
      T* o = y + qb * 32 + 4 * g;
      store4<FAST>(o, d * (float)(q & 0xfu) + add, d * (float)((q >> 8) & 0xfu) + add,
                   d * (float)((q >> 16) & 0xfu) + add, d * (float)((q >> 24) & 0xfu) + add);
      store4<FAST>(o + 16, d * (float)((q >> 4) & 0xfu) + add, d * (float)((q >> 12) & 0xfu) + add,
                   d * (float)((q >> 20) & 0xfu) + add, d * (float)(q >> 28) + add);
    }
  });
}

template <class T> PK_DEV void q8_0(const void* vx, T* y, int k) {
  constexpr int AL = align_of_size(kSizeQ8_0);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    for (int u = threadIdx.x; u < 32; u += blockDim.x) {
      const usize qb = (usize)blockIdx.x * 8 + (usize)(u / 4);
      if (qb >= (usize)(unsigned)k) return;
      const int g = u % 4;
      const u8* blk = static_cast<const u8*>(vx) + qb * kSizeQ8_0;
      const float d = half_at<A>(blk);
      T* o = y + qb * 32 + 4 * g;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const u32 q = ld32<A>(blk + 2 + 16 * h + 4 * g);
        store4<FAST>(o + 16 * h, d * (float)sbyte(q, 0), d * (float)sbyte(q, 1), d * (float)sbyte(q, 2),
                     d * (float)sbyte(q, 3));
      }
    }
  });
}

// ----------------------------------------------------------- q5_0, q5_1: two elements a thread
// Thread i (over the grid) takes elements 2i's pair: block i/16, byte j = i%16 of qs, its low
// nibble + bit j of qh (element j) and its high nibble + bit j+16 (element j+16).
template <class T, int SIZE, bool ASYM> PK_DEV void q5_01(const void* vx, T* y, int k) {
  constexpr int AL = align_of_size(SIZE);
  constexpr int QH = ASYM ? 4 : 2, QS = QH + 4;
  const usize i = (usize)blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * i >= (usize)(unsigned)k) return;
  const usize qb = i / 16;
  const int j = (int)(i % 16);
  const u8* blk = static_cast<const u8*>(vx) + qb * SIZE;
  float d, m;
  u32 qh;
  if (((usize)vx % AL) == 0) {
    d = half_at<AL>(blk), m = ASYM ? half_at<AL>(blk + 2) : 0.0f, qh = ld32<AL>(blk + QH);
  } else {
    d = half_at<1>(blk), m = ASYM ? half_at<1>(blk + 2) : 0.0f, qh = ld32<1>(blk + QH);
  }
  const u32 q = blk[QS + j];
  const float x0 = (float)((q & 0xfu) | (((qh >> j) & 1u) << 4));
  const float x1 = (float)((q >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  T* o = y + qb * 32 + j;
  if (ASYM) {
    put(o, x0 * d + m), put(o + 16, x1 * d + m);
  } else {
    put(o, (x0 - 16.0f) * d), put(o + 16, (x1 - 16.0f) * d);
  }
}

// ----------------------------------------------------------- K-quants: one super-block a CUDA block
// Each unit u (over the threads) dequantizes elements 4u..4u+3 of the super-block (q4_K, q8_K:
// two such quads); with Candle's block sizes every thread runs one unit.
template <int SIZE, class F> PK_DEV void units(const void* vx, int n_units, F&& unit) {
  const u8* blk = static_cast<const u8*>(vx) + (usize)blockIdx.x * SIZE;
  for (int u = threadIdx.x; u < n_units; u += blockDim.x) unit(blk, u);
}

// q2_K: element e = 128n + 32j + l (l < 32) = ((qs[32n+l] >> 2j) & 3) * d*(sc & 15) - dmin*(sc >> 4),
// sc = scales[8n + 2j + l/16].
template <class T> PK_DEV void q2_k(const void* vx, T* y) {
  constexpr int AL = align_of_size(kSizeQ2_K);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    units<kSizeQ2_K>(vx, 64, [&](const u8* blk, int u) {
      const int n = u / 32, j = (u % 32) / 8, l0 = 4 * (u % 8);
      const u32 q = ld32<A>(blk + 16 + 32 * n + l0) >> (2 * j);
      const u32 dm = ld32<A>(blk + 80);
      const u32 sc = blk[8 * n + 2 * j + l0 / 16];
      const float dl = lo_half(dm) * (float)(sc & 0xfu), ml = hi_half(dm) * (float)(sc >> 4);
      store4<FAST>(y + (usize)blockIdx.x * QK_K + 4 * u, dl * (float)(q & 3u) - ml, dl * (float)((q >> 8) & 3u) - ml,
                   dl * (float)((q >> 16) & 3u) - ml, dl * (float)((q >> 24) & 3u) - ml);
    });
  });
}

// q3_K: element e = 128n + 32j + l = d*(scale_s - 32) * (((qs[32n+l] >> 2j) & 3) - (hmask[l] bit
// 4n+j ? 0 : 4)), s = 8n + 2j + l/16.
template <class T> PK_DEV void q3_k(const void* vx, T* y) {
  constexpr int AL = align_of_size(kSizeQ3_K);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    units<kSizeQ3_K>(vx, 64, [&](const u8* blk, int u) {
      const int n = u / 32, j = (u % 32) / 8, l0 = 4 * (u % 8);
      const u32 q = ld32<A>(blk + 32 + 32 * n + l0) >> (2 * j);
      const u32 h = ld32<A>(blk + l0) >> (4 * n + j);
      const int s = scale_q3_k(ld32<A>(blk + 96), ld32<A>(blk + 100), ld32<A>(blk + 104), 8 * n + 2 * j + l0 / 16);
      const float dl = half_at<A>(blk + 108) * (float)(s - 32);
      float v[4];
#pragma unroll
      for (int l = 0; l < 4; ++l)
        v[l] = dl * (float)((int)((q >> (8 * l)) & 3u) - (((h >> (8 * l)) & 1u) ? 0 : 4));
      store4<FAST>(y + (usize)blockIdx.x * QK_K + 4 * u, v[0], v[1], v[2], v[3]);
    });
  });
}

// q4_K: sub-block pair il (elements 64il..64il+63): low nibbles of qs[32il..] are sub-block 2il,
// high nibbles 2il+1; element = d*scale * nibble - dmin*min. Unit u = (il, ir) takes bytes
// 32il + 4ir .. +3: elements 64il + 4ir.. and 64il + 32 + 4ir...
template <class T> PK_DEV void q4_k(const void* vx, T* y) {
  constexpr int AL = align_of_size(kSizeQ4_K);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    units<kSizeQ4_K>(vx, 32, [&](const u8* blk, int u) {
      const int il = u / 8, ir = u % 8;
      const u32 dm = ld32<A>(blk), w0 = ld32<A>(blk + 4), w1 = ld32<A>(blk + 8), w2 = ld32<A>(blk + 12);
      const u32 q = ld32<A>(blk + 16 + 32 * il + 4 * ir);
      u32 s1, m1, s2, m2;
      scale_min_k4(w0, w1, w2, 2 * il, s1, m1);
      scale_min_k4(w0, w1, w2, 2 * il + 1, s2, m2);
      const float d = lo_half(dm), dmin = hi_half(dm);
      const float d1 = d * (float)s1, c1 = dmin * (float)m1, d2 = d * (float)s2, c2 = dmin * (float)m2;
      T* o = y + (usize)blockIdx.x * QK_K + 64 * il + 4 * ir;
      store4<FAST>(o, d1 * (float)(q & 0xfu) - c1, d1 * (float)((q >> 8) & 0xfu) - c1,
                   d1 * (float)((q >> 16) & 0xfu) - c1, d1 * (float)((q >> 24) & 0xfu) - c1);
      store4<FAST>(o + 32, d2 * (float)((q >> 4) & 0xfu) - c2, d2 * (float)((q >> 12) & 0xfu) - c2,
                   d2 * (float)((q >> 20) & 0xfu) - c2, d2 * (float)(q >> 28) - c2);
    });
  });
}

// q5_K: as q4_K plus a fifth bit: element 64il + w (w < 32: low nibble of qs[32il+w], sub-block
// 2il, qh[w] bit 2il; w >= 32: high nibble of qs[32il+w-32], sub-block 2il+1, qh[w-32] bit 2il+1).
template <class T> PK_DEV void q5_k(const void* vx, T* y) {
  constexpr int AL = align_of_size(kSizeQ5_K);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    units<kSizeQ5_K>(vx, 64, [&](const u8* blk, int u) {
      const int il = u / 16, w = 4 * (u % 16), hi = w / 32, w32 = w % 32;
      const u32 dm = ld32<A>(blk), w0 = ld32<A>(blk + 4), w1 = ld32<A>(blk + 8), w2 = ld32<A>(blk + 12);
      const u32 qh = ld32<A>(blk + 16 + w32) >> (2 * il + hi);
      const u32 q = ld32<A>(blk + 48 + 32 * il + w32) >> (4 * hi);
      u32 sc, mn;
      scale_min_k4(w0, w1, w2, 2 * il + hi, sc, mn);
      const float dl = lo_half(dm) * (float)sc, ml = hi_half(dm) * (float)mn;
      float v[4];
#pragma unroll
      for (int l = 0; l < 4; ++l)
        v[l] = dl * (float)(((q >> (8 * l)) & 0xfu) | (((qh >> (8 * l)) & 1u) << 4)) - ml;
      store4<FAST>(y + (usize)blockIdx.x * QK_K + 4 * u, v[0], v[1], v[2], v[3]);
    });
  });
}

// q6_K: element e = 128ip + 32k + l = d * scales[8ip + 2k + l/16] * (q6 - 32), q6 = the low
// (k < 2) or high (k >= 2) nibble of ql[64ip + 32*(k%2) + l] | ((qh[32ip + l] >> 2k) & 3) << 4.
template <class T> PK_DEV void q6_k(const void* vx, T* y) {
  constexpr int AL = align_of_size(kSizeQ6_K);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    units<kSizeQ6_K>(vx, 64, [&](const u8* blk, int u) {
      const int ip = u / 32, k = (u % 32) / 8, l0 = 4 * (u % 8);
      const u32 ql = ld32<A>(blk + 64 * ip + 32 * (k & 1) + l0) >> (4 * (k >> 1));
      const u32 qh = ld32<A>(blk + 128 + 32 * ip + l0) >> (2 * k);
      const int sc = (int)(signed char)blk[192 + 8 * ip + 2 * k + l0 / 16];
      const float ds = half_at<A>(blk + 208) * (float)sc;
      float v[4];
#pragma unroll
      for (int l = 0; l < 4; ++l)
        v[l] = ds * (float)((int)(((ql >> (8 * l)) & 0xfu) | (((qh >> (8 * l)) & 3u) << 4)) - 32);
      store4<FAST>(y + (usize)blockIdx.x * QK_K + 4 * u, v[0], v[1], v[2], v[3]);
    });
  });
}

// q8_K: element e = qs[e] * d (f32 d); unit u takes elements 4u.. and 128+4u...
template <class T> PK_DEV void q8_k(const void* vx, T* y) {
  constexpr int AL = align_of_size(kSizeQ8_K);
  dispatch<AL>(vx, y, [&](auto fast) {
    constexpr bool FAST = decltype(fast)::value;
    constexpr int A = FAST ? AL : 1;
    units<kSizeQ8_K>(vx, 32, [&](const u8* blk, int u) {
      const float d = ffrom(ld32<A>(blk));
      T* o = y + (usize)blockIdx.x * QK_K + 4 * u;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const u32 q = ld32<A>(blk + 4 + 128 * h + 4 * u);
        store4<FAST>(o + 128 * h, (float)sbyte(q, 0) * d, (float)sbyte(q, 1) * d, (float)sbyte(q, 2) * d,
                     (float)sbyte(q, 3) * d);
      }
    });
  });
}

template <class T> PK_DEV void q4_0(const void* vx, T* y, int k) { q4_01<T, kSizeQ4_0, 2, false>(vx, y, k); }
template <class T> PK_DEV void q4_1(const void* vx, T* y, int k) { q4_01<T, kSizeQ4_1, 4, true>(vx, y, k); }
template <class T> PK_DEV void q5_0(const void* vx, T* y, int k) { q5_01<T, kSizeQ5_0, false>(vx, y, k); }
template <class T> PK_DEV void q5_1(const void* vx, T* y, int k) { q5_01<T, kSizeQ5_1, true>(vx, y, k); }

}  // namespace gguf
}  // namespace pk

#define PK_DEQUANT_K(FMT, CALL)                                                                           \
  extern "C" __global__ void dequantize_block_##FMT##_f32(const void* __restrict__ vx, float* __restrict__ y) { \
    pk::gguf::CALL<float>(vx, y);                                                                         \
  }                                                                                                       \
  extern "C" __global__ void dequantize_block_##FMT##_f16(const void* __restrict__ vx,                    \
                                                          pk::f16* __restrict__ y) {                      \
    pk::gguf::CALL<pk::f16>(vx, y);                                                                       \
  }
#define PK_DEQUANT(FMT)                                                                                   \
  extern "C" __global__ void dequantize_block_##FMT##_f32(const void* __restrict__ vx, float* __restrict__ y, \
                                                          const int k) {                                  \
    pk::gguf::FMT<float>(vx, y, k);                                                                       \
  }                                                                                                       \
  extern "C" __global__ void dequantize_block_##FMT##_f16(const void* __restrict__ vx,                    \
                                                          pk::f16* __restrict__ y, const int k) {         \
    pk::gguf::FMT<pk::f16>(vx, y, k);                                                                     \
  }

PK_DEQUANT_K(q2_K, q2_k)
PK_DEQUANT_K(q3_K, q3_k)
PK_DEQUANT_K(q4_K, q4_k)
PK_DEQUANT_K(q5_K, q5_k)
PK_DEQUANT_K(q6_K, q6_k)
PK_DEQUANT_K(q8_K, q8_k)
PK_DEQUANT(q4_0)
PK_DEQUANT(q4_1)
PK_DEQUANT(q5_0)
PK_DEQUANT(q5_1)
PK_DEQUANT(q8_0)
