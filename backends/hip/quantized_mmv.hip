// GGUF matrix-vector products of Candle's quantized.cu, written from the block formats and the
// kernels' parameter lists (docs/candle-kernel-abi.md; launches as candle-core/src/quantized/cuda.rs
// issues them):
//
//   quantize_q8_1(const float* x, void* vy, const int kx, const int kx_padded)
//     grid (kx_padded/256, rows), block 256: row iy's kx floats (zero-padded to kx_padded) to q8_1
//     blocks: d = amax/127 and s = the block's float sum (both f16), qs = round(x/d).
//   dequantize_mul_mat_vec_<q4_0|q4_1|q5_0|q5_1|q8_0>_cuda, dequantize_mul_mat_vec_<q2_k|q3_k|q4_k|q6_k>
//     (const void* vx, const float* y, float* dst, const int ncols, const int nrows), and
//     dequantize_mul_mat_vec_q5_k without nrows: dst[row] = sum over the row of dequantized x * y;
//     row = blockIdx.x*blockDim.y + threadIdx.y, the blockDim.x = 32 threads of a row reduce.
//   mul_mat_vec_<fmt>_q8_1_cuda<B> (B = 1..8 columns of y)
//     (const void* vx, const void* vy, float* dst, const int ncols_x, const int nrows_x,
//      const int nrows_y, const int nrows_dst): rows 1 (B == 1) or 2 per CUDA block from
//     row0 = rows*blockIdx.x; dst[j*nrows_dst + row] = x[row] . y[j] as integer dot products of x's
//     quants with y's q8_1 quants per 32-element group, scaled as llama.cpp's vec_dot does: q4_0 /
//     q5_0 d*(sumi*d8 - 8 or 16 * s8), q4_1 / q5_1 sumi*d*d8 + m*s8 (s8: the q8_1 block's stored
//     sum), q8_0 d*d8*sumi, K-quants d*d8*(scaled sumi) - dmin*d8*(min-scaled sum of y's quants).
//
// Cross-thread sums: the mat-vec kernels add through shared memory over the block, in an order of
// their own (float rounding only); quantize_q8_1 (quantized_dot.h) reduces each 32-element block with
// shuffles of width 32 (the same segments on 32- and 64-lane wavefronts) and stores its sum as
// Candle's warp_reduce_sum leaves it, bit for bit.
#include "quantized_dot.h"

namespace pk {
namespace gguf {

// ------------------------------------------------------------- dequantize_mul_mat_vec (float y)
// The 32 threads of a row take quads 4q.. of it (q = threadIdx.x, +32, ...): x's four dequantized
// elements (deq4, the dequantize kernels' values) times y's, summed in f32, then over the row.
template <class F, int A> PK_DEV float dmmv_row(const u8* x, const float* y, int ncols, usize row) {
  const int blocks_per_row = ncols / F::qk;
  float acc = 0.0f;
  for (int q = threadIdx.x; 4 * q < ncols; q += blockDim.x) {
    const int e = 4 * q;
    float v[4];
    F::template deq4<A>(x + ((usize)row * blocks_per_row + e / F::qk) * F::size, e % F::qk, v);
#pragma unroll
    for (int l = 0; l < 4; ++l) acc += v[l] * y[e + l];
  }
  return acc;
}
// A row's threads (threadIdx.x) leave their sums in shared memory; its first thread adds them up.
template <class F> PK_DEV void dmmv(const void* vx, const float* y, float* dst, int ncols, int nrows, bool bounded) {
  __shared__ float part[kMaxBlock];
  const usize row = (usize)blockIdx.x * blockDim.y + threadIdx.y;
  const bool live = !bounded || row < (usize)(unsigned)nrows;   // threads of a row past nrows: barrier only
  const u8* x = static_cast<const u8*>(vx);
  float s = 0.0f;
  if (live) s = dmmv_row<F, F::align>(x, y, ncols, row);   // vx: a whole allocation (quantized.hip)
  part[threadIdx.y * blockDim.x + threadIdx.x] = s;
  __syncthreads();
  if (!live || threadIdx.x != 0) return;
  float t = 0.0f;
  for (unsigned k = 0; k < blockDim.x; ++k) t += part[threadIdx.y * blockDim.x + k];
  dst[row] = t;
}

// ------------------------------------------------------------------ mul_mat_vec_<fmt>_q8_1_cuda<B>
// Integer dot products per 32-element group: quantized_dot.h (shared with quantized_mmq.hip).
template <class F, int NCOLS, int A>
PK_DEV void mmvq_partial(const u8* x, const u8* yq, int ncols_x, int nrows_x, int nrows_y, int row0,
                         float (&acc)[NCOLS][NCOLS == 1 ? 1 : 2]) {
  constexpr int RPB = NCOLS == 1 ? 1 : 2, G = F::qk / QK8_1;
  const int groups = ncols_x / QK8_1, blocks_per_row = ncols_x / F::qk, yblocks = nrows_y / QK8_1;
  const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  // one row (batch 1): four groups' loads in flight at once, not one memory round trip per group
#pragma unroll(NCOLS == 1 ? 4 : 1)
  for (int gi = tid; gi < groups; gi += nthreads) {
    XGroup g[RPB];
#pragma unroll
    for (int i = 0; i < RPB; ++i)
      if (row0 + i < nrows_x)
        Group<F>::template load<A>(x + ((usize)(row0 + i) * blocks_per_row + gi / G) * F::size, gi % G, g[i]);
    // one y block at a time, used by every row before the next is read: short live ranges (AMD
    // spilled with the blocks of all columns in flight)
#pragma unroll
    for (int j = 0; j < NCOLS; ++j) {
      YBlock y;
      load_y(yq + ((usize)j * yblocks + gi) * kSizeQ8_1, y);
#pragma unroll
      for (int i = 0; i < RPB; ++i)
        if (row0 + i < nrows_x) acc[j][i] += group_dot<Group<F>::kind>(g[i], y);
    }
  }
}

template <class F, int NCOLS>
PK_DEV void mmvq(const void* vx, const void* vy, float* dst, int ncols_x, int nrows_x, int nrows_y, int nrows_dst) {
  constexpr int RPB = NCOLS == 1 ? 1 : 2;   // blockDim.x * blockDim.y <= 128 (the launch bound)
  const int row0 = RPB * blockIdx.x;
  float acc[NCOLS][RPB];
#pragma unroll
  for (int j = 0; j < NCOLS; ++j)
#pragma unroll
    for (int i = 0; i < RPB; ++i) acc[j][i] = 0.0f;
  const u8* x = static_cast<const u8*>(vx);
  const u8* yq = static_cast<const u8*>(vy);
  mmvq_partial<F, NCOLS, F::align>(x, yq, ncols_x, nrows_x, nrows_y, row0, acc);
  // every thread's partial sums to shared memory; 16 threads per output (j, i) add up a 16th of
  // them each, then thread (j, i) adds those 16: two short serial sums, not one of 128 (nthreads,
  // 128 or 64 in Candle's launches, is a multiple of 16)
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
    if (row0 + i < nrows_dst) dst[(usize)j * nrows_dst + row0 + i] = s;
  }
}

}  // namespace gguf
}  // namespace pk

extern "C" __global__ void quantize_q8_1(const float* __restrict__ x, void* __restrict__ vy, const int kx,
                                         const int kx_padded) {
  pk::gguf::quantize_q8_1<float>(x, vy, kx, kx_padded);
}

#define PK_DMMV(NAME, FMT)                                                                              \
  extern "C" __global__ void NAME(const void* __restrict__ vx, const float* __restrict__ y,             \
                                  float* __restrict__ dst, const int ncols, const int nrows) {          \
    pk::gguf::dmmv<pk::gguf::fmt::FMT>(vx, y, dst, ncols, nrows, true);                                \
  }
PK_DMMV(dequantize_mul_mat_vec_q4_0_cuda, q4_0)
PK_DMMV(dequantize_mul_mat_vec_q4_1_cuda, q4_1)
PK_DMMV(dequantize_mul_mat_vec_q5_0_cuda, q5_0)
PK_DMMV(dequantize_mul_mat_vec_q5_1_cuda, q5_1)
PK_DMMV(dequantize_mul_mat_vec_q8_0_cuda, q8_0)
PK_DMMV(dequantize_mul_mat_vec_q2_k, q2_K)
PK_DMMV(dequantize_mul_mat_vec_q3_k, q3_K)
PK_DMMV(dequantize_mul_mat_vec_q4_k, q4_K)
PK_DMMV(dequantize_mul_mat_vec_q6_k, q6_K)
// Candle's q5_k kernel has no nrows: one row per CUDA block row, no bound.
extern "C" __global__ void dequantize_mul_mat_vec_q5_k(const void* __restrict__ vx, const float* __restrict__ y,
                                                       float* __restrict__ dst, const int ncols) {
  pk::gguf::dmmv<pk::gguf::fmt::q5_K>(vx, y, dst, ncols, 0, false);
}

// Candle launches 32 x 4 (B <= 4) or 32 x 2 threads: a 128-thread bound lets AMD give each lane up
// to 512 VGPRs (the default 1024-thread bound capped it at 128, and the B > 1 kernels spilled).
#define PK_MMVQ(FMT, B)                                                                                  \
  extern "C" __global__ __launch_bounds__(128) void mul_mat_vec_##FMT##_q8_1_cuda##B(const void* __restrict__ vx,              \
                                                              const void* __restrict__ vy,              \
                                                              float* __restrict__ dst, const int ncols_x, \
                                                              const int nrows_x, const int nrows_y,     \
                                                              const int nrows_dst) {                    \
    pk::gguf::mmvq<pk::gguf::fmt::FMT, B>(vx, vy, dst, ncols_x, nrows_x, nrows_y, nrows_dst);          \
  }
#define PK_MMVQ_ALL(FMT)                                                                                 \
  PK_MMVQ(FMT, 1) PK_MMVQ(FMT, 2) PK_MMVQ(FMT, 3) PK_MMVQ(FMT, 4) PK_MMVQ(FMT, 5) PK_MMVQ(FMT, 6)       \
  PK_MMVQ(FMT, 7) PK_MMVQ(FMT, 8)
PK_MMVQ_ALL(q4_0)
PK_MMVQ_ALL(q4_1)
PK_MMVQ_ALL(q5_0)
PK_MMVQ_ALL(q5_1)
PK_MMVQ_ALL(q8_0)
PK_MMVQ_ALL(q2_K)
PK_MMVQ_ALL(q3_K)
PK_MMVQ_ALL(q4_K)
PK_MMVQ_ALL(q5_K)
PK_MMVQ_ALL(q6_K)
