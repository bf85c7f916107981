// Candle's fast GGUF mat-vec path (mmvq_gguf.cu, host candle-core/src/quantized/fast_mmvq.rs), written
// from the parameter lists and the launches of its C launchers (parity/ops/quantized/gguf_fast.py):
//
//   mmvq_gguf_quantize_q8_1_<bf16|f16|f32>(const T* x, void* vy, const int kx, const int kx_padded)
//     grid (ceil(kx_padded/256), rows), block 256: quantized_dot.h's quantize_q8_1 with T
//     activations (converted to float exactly): d = amax/127, s = the butterfly sum, qs = round(x/d).
//   mmvq_gguf_<fmt>_<bf16|f16|f32>_plain_cuda<B>(const void* vx, const void* vy, T* dst,
//       const int ncols_x, const int nrows_x, const int stride_col_y, const int stride_col_dst)
//     fmt q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k, B = 1..8 columns of y; grid
//     ceil(nrows/rows), rows 1 (B == 1) or 2, block (32, 4) (B <= 4) or (32, 2):
//     dst[j*stride_col_dst + row] = (T) x[row] . y[j], y[j] at q8_1 block j*stride_col_y; rows past
//     nrows_x neither read nor written. The dot products are quantized_dot.h's (the same integer
//     decoding and scaling as llama.cpp's vec_dot, which mmvq_gguf.cu shares with quantized.cu).
//
// Cross-thread sums through shared memory over the block, never lane masks or shuffles: the same on
// 32-lane warps and 64-lane wavefronts.
#include "quantized_dot.h"

namespace pk {
namespace gguf_fast {
using namespace gguf;

PK_DEV void put(float* p, float v) { *p = v; }
PK_DEV void put(f16* p, float v) { *p = __float2half(v); }        // RNE, as CUDA's (half) cast
PK_DEV void put(bf16* p, float v) { *p = float_to_bf16(v); }      // RNE, as (__nv_bfloat16)

// Each thread's partial sums over the 32-element groups gi = tid, tid + nthreads, ... of its rows.
template <class F, int NCOLS>
PK_DEV void partial(const u8* x, const u8* yq, int ncols_x, int nrows_x, int stride_col_y, int row0,
                    float (&acc)[NCOLS][NCOLS == 1 ? 1 : 2]) {
  constexpr int RPB = NCOLS == 1 ? 1 : 2, G = F::qk / QK8_1, A = F::align;
  const int groups = ncols_x / QK8_1, blocks_per_row = ncols_x / F::qk;
  const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll(NCOLS == 1 ? 4 : 1)
  for (int gi = tid; gi < groups; gi += nthreads) {
    XGroup g[RPB];
#pragma unroll
    for (int i = 0; i < RPB; ++i)
      if (row0 + i < nrows_x)
        Group<F>::template load<A>(x + ((usize)(row0 + i) * blocks_per_row + gi / G) * F::size, gi % G, g[i]);
#pragma unroll
    for (int j = 0; j < NCOLS; ++j) {
      YBlock y;
      load_y(yq + ((usize)j * (usize)stride_col_y + gi) * kSizeQ8_1, y);
#pragma unroll
      for (int i = 0; i < RPB; ++i)
        if (row0 + i < nrows_x) acc[j][i] += group_dot<Group<F>::kind>(g[i], y);
    }
  }
}

template <class F, int NCOLS, class T>
PK_DEV void mmvq(const void* vx, const void* vy, T* dst, int ncols_x, int nrows_x, int stride_col_y,
                 int stride_col_dst) {
  constexpr int RPB = NCOLS == 1 ? 1 : 2;
  const int row0 = RPB * blockIdx.x;
  float acc[NCOLS][RPB];
#pragma unroll
  for (int j = 0; j < NCOLS; ++j)
#pragma unroll
    for (int i = 0; i < RPB; ++i) acc[j][i] = 0.0f;
  partial<F, NCOLS>(static_cast<const u8*>(vx), static_cast<const u8*>(vy), ncols_x, nrows_x, stride_col_y,
                    row0, acc);
  // every thread's partials to shared memory; 16 threads per output add a 16th each, then one
  // thread per output adds those 16 (nthreads, 128 or 64 in Candle's launches, a multiple of 16)
  constexpr int NOUT = NCOLS * RPB, PARTS = 16;
  __shared__ float part[NOUT][128];
  __shared__ float part2[NOUT][PARTS];
  const int t = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
#pragma unroll
  for (int j = 0; j < NCOLS; ++j)
#pragma unroll
    for (int i = 0; i < RPB; ++i) part[j * RPB + i][t] = acc[j][i];
  __syncthreads();
  for (int u = t; u < NOUT * PARTS; u += nthreads) {
    const int o = u / PARTS, k = u % PARTS;
    float s = 0.0f;
    for (int w = k; w < nthreads; w += PARTS) s += part[o][w];
    part2[o][k] = s;
  }
  __syncthreads();
  if (t < NOUT) {
    const int j = t / RPB, i = t % RPB;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PARTS; ++k) s += part2[t][k];
    if (row0 + i < nrows_x) put(dst + (usize)j * (usize)stride_col_dst + row0 + i, s);
  }
}

}  // namespace gguf_fast
}  // namespace pk

#define PK_GGUF_Q81(SFX, T)                                                                            \
  extern "C" __global__ void mmvq_gguf_quantize_q8_1_##SFX(const T* __restrict__ x, void* __restrict__ vy, \
                                                           const int kx, const int kx_padded) {        \
    pk::gguf::quantize_q8_1<T>(x, vy, kx, kx_padded);                                             \
  }
PK_GGUF_Q81(bf16, pk::bf16)
PK_GGUF_Q81(f16, pk::f16)
PK_GGUF_Q81(f32, float)

// 32 x 4 or 32 x 2 threads: a 128-thread bound (AMD then gives each lane up to 512 VGPRs).
#define PK_GGUF_MMVQ(TAG, FMT, SFX, T, B)                                                              \
  extern "C" __global__ __launch_bounds__(128) void mmvq_gguf_##TAG##_##SFX##_plain_cuda##B(           \
      const void* __restrict__ vx, const void* __restrict__ vy, T* __restrict__ dst, const int ncols_x, \
      const int nrows_x, const int stride_col_y, const int stride_col_dst) {                           \
    pk::gguf_fast::mmvq<pk::gguf::fmt::FMT, B, T>(vx, vy, dst, ncols_x, nrows_x, stride_col_y, stride_col_dst); \
  }
#define PK_GGUF_MMVQ_B(TAG, FMT, SFX, T)                                                               \
  PK_GGUF_MMVQ(TAG, FMT, SFX, T, 1) PK_GGUF_MMVQ(TAG, FMT, SFX, T, 2) PK_GGUF_MMVQ(TAG, FMT, SFX, T, 3) \
  PK_GGUF_MMVQ(TAG, FMT, SFX, T, 4) PK_GGUF_MMVQ(TAG, FMT, SFX, T, 5) PK_GGUF_MMVQ(TAG, FMT, SFX, T, 6) \
  PK_GGUF_MMVQ(TAG, FMT, SFX, T, 7) PK_GGUF_MMVQ(TAG, FMT, SFX, T, 8)
#define PK_GGUF_MMVQ_ALL(TAG, FMT)                                                                     \
  PK_GGUF_MMVQ_B(TAG, FMT, bf16, pk::bf16) PK_GGUF_MMVQ_B(TAG, FMT, f16, pk::f16)                      \
  PK_GGUF_MMVQ_B(TAG, FMT, f32, float)
PK_GGUF_MMVQ_ALL(q4_0, q4_0)
PK_GGUF_MMVQ_ALL(q4_1, q4_1)
PK_GGUF_MMVQ_ALL(q5_0, q5_0)
PK_GGUF_MMVQ_ALL(q5_1, q5_1)
PK_GGUF_MMVQ_ALL(q8_0, q8_0)
PK_GGUF_MMVQ_ALL(q2_k, q2_K)
PK_GGUF_MMVQ_ALL(q3_k, q3_K)
PK_GGUF_MMVQ_ALL(q4_k, q4_K)
PK_GGUF_MMVQ_ALL(q5_k, q5_K)
PK_GGUF_MMVQ_ALL(q6_k, q6_K)
