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
// 32-byte sectors; the block's bytes are read as the widest words the block size keeps aligned
// (align_of_size). Candle's quantized buffers are whole device allocations (vx and y start
// 256-byte aligned), so there is no path for other alignments: it would be code no Candle launch
// reaches. No cross-lane operations: the same on 32- and 64-lane wavefronts.
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

// The quads at e0 and (when TWO) e1 of the block at blk, stored at y + e0 and y + e1: both read
// before either is stored, so the block's scale words are loaded once (a store in between may
// alias them for all the compiler knows).
template <class F, bool TWO, class T> PK_DEV void put_quads(const u8* blk, int e0, int e1, T* y) {
  float a[4], b[4];
  F::template deq4<F::align>(blk, e0, a);
  if (TWO) F::template deq4<F::align>(blk, e1, b);
  vstore4(y + e0, a[0], a[1], a[2], a[3]);
  if (TWO) vstore4(y + e1, b[0], b[1], b[2], b[3]);
}

// ----------------------------------------------------------- q4_0, q4_1, q8_0: 8 blocks a CUDA block
// Quant block qb = 8*blockIdx + u/4, u = 0..31 over the threads, takes the quads 4g.. and 16+4g..
// (g = u%4): for q4, bytes 4g..4g+3 of qs, low nibbles then high nibbles.
template <class F, class T> PK_DEV void tile8(const void* vx, T* y, int k) {
  for (int u = threadIdx.x; u < 32; u += blockDim.x) {
    const usize qb = (usize)blockIdx.x * 8 + (usize)(u / 4);
    if (qb >= (usize)(unsigned)k) return;
    const u8* blk = static_cast<const u8*>(vx) + qb * F::size;
    T* o = y + qb * 32;
    put_quads<F, true>(blk, 4 * (u % 4), 16 + 4 * (u % 4), o);
  }
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
  const float d = half_at<AL>(blk), m = ASYM ? half_at<AL>(blk + 2) : 0.0f;
  const u32 qh = ld32<AL>(blk + QH);
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
// Unit u (over the threads) stores the quad at e0 = (u/G)*P + 4*(u%G) and, when H > 0, the one at
// e0 + H: q2_K q3_K q5_K q6_K 64 units of one quad; q4_K 32 units (bytes 32il+4ir.. of qs, low
// nibbles at 64il+4ir, high ones 32 further); q8_K 32 units (quads 4u and 128+4u). With Candle's
// block sizes every thread runs one unit.
template <class F, int G, int P, int H, class T> PK_DEV void kquant(const void* vx, T* y) {
  constexpr int units = H > 0 ? 32 : 64;
  const u8* blk = static_cast<const u8*>(vx) + (usize)blockIdx.x * F::size;
  T* o = y + (usize)blockIdx.x * QK_K;
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    const int e0 = (u / G) * P + 4 * (u % G);
    put_quads<F, (H > 0)>(blk, e0, e0 + H, o);
  }
}

template <class T> PK_DEV void q4_0(const void* vx, T* y, int k) { tile8<fmt::q4_0>(vx, y, k); }
template <class T> PK_DEV void q4_1(const void* vx, T* y, int k) { tile8<fmt::q4_1>(vx, y, k); }
template <class T> PK_DEV void q8_0(const void* vx, T* y, int k) { tile8<fmt::q8_0>(vx, y, k); }
template <class T> PK_DEV void q5_0(const void* vx, T* y, int k) { q5_01<T, kSizeQ5_0, false>(vx, y, k); }
template <class T> PK_DEV void q5_1(const void* vx, T* y, int k) { q5_01<T, kSizeQ5_1, true>(vx, y, k); }
template <class T> PK_DEV void q2_k(const void* vx, T* y) { kquant<fmt::q2_K, 64, 0, 0>(vx, y); }
template <class T> PK_DEV void q3_k(const void* vx, T* y) { kquant<fmt::q3_K, 64, 0, 0>(vx, y); }
template <class T> PK_DEV void q4_k(const void* vx, T* y) { kquant<fmt::q4_K, 8, 64, 32>(vx, y); }
template <class T> PK_DEV void q5_k(const void* vx, T* y) { kquant<fmt::q5_K, 64, 0, 0>(vx, y); }
template <class T> PK_DEV void q6_k(const void* vx, T* y) { kquant<fmt::q6_K, 64, 0, 0>(vx, y); }
template <class T> PK_DEV void q8_k(const void* vx, T* y) { kquant<fmt::q8_K, 32, 0, 128>(vx, y); }

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
