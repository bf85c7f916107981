// GGUF matrix-matrix products of Candle's quantized.cu (mmq), written from the block formats, the
// kernels' parameter lists and what they compute (docs/candle-kernel-abi.md §4b'):
//
//   mul_mat_<q4_0|q4_1|q5_0|q5_1|q8_0|q2_K|q3_K|q4_K|q5_K|q6_K>
//     (const void* vx, const void* vy, float* dst, const int ncols_x, const int nrows_x,
//      const int ncols_y, const int nrows_y, const int nrows_dst)
//   x: nrows_x rows of ncols_x weights (row-major blocks); y: ncols_y columns, each nrows_y/32 q8_1
//   blocks (quantize_q8_1 of an activation row, padded to 512); dst[col*nrows_dst + row] = x[row] . y[col].
//   Launch (candle-core's mul_mat_via_q8_1): grid (ceil(nrows_x/MMQ_Y), ceil(ncols_y/MMQ_X)), block
//   (32, 4); the CUDA block at (bx, by) owns the tile rows bx*MMQ_Y.., columns by*MMQ_X...
//
// Each 32-element group is multiplied with quantized_dot.h's integer dot products (mmvq's), with two
// differences in scaling that Candle's mmq has: q5_0 folds its -16 into the int8 quants (no s term),
// and q4_K / q5_K multiply the sub-block's min by the q8_1 block's stored sum s.
//
// No cross-thread sums at all: each thread owns whole outputs (a row and CHUNK columns of the tile)
// and adds its groups in k order, so wave 32 and wave 64 run the same code (and, with no barrier, a
// host build runs it one thread at a time: tests/hip_host.py). Correctness over speed:
// the weights are re-read for every CHUNK columns (caches absorb it), there is no shared-memory tile.
#include "quantized_dot.h"

namespace pk {
namespace gguf {

// Group<F> as mmq reads and scales it: mmvq's, but for q5_0 and q4_K / q5_K (see above).
template <class F> struct MmqGroup : Group<F> {};
template <> struct MmqGroup<fmt::q5_0> {
  static constexpr Dot kind = Dot::kPure;
  template <int A> static PK_DEV void load(const u8* b, int t, XGroup& g) {
    Group<fmt::q5_0>::load<A>(b, t, g);
    // each byte q (0..31) to the int8 q - 16: bytewise, no borrow between bytes (q | 0x80 >= 0x80)
#pragma unroll
    for (int i = 0; i < 8; ++i) g.v[i] = ((g.v[i] | 0x80808080u) - 0x10101010u) ^ 0x80808080u;
  }
};
template <> struct MmqGroup<fmt::q4_K> : Group<fmt::q4_K> { static constexpr Dot kind = Dot::kMinS; };
template <> struct MmqGroup<fmt::q5_K> : Group<fmt::q5_K> { static constexpr Dot kind = Dot::kMinS; };

constexpr int CHUNK = 8;   // outputs (columns of one row) a thread accumulates at a time

template <class F, int MMQ_X, int MMQ_Y, int A>
PK_DEV void mmq_tile(const u8* x, const u8* yq, float* dst, int ncols_x, int nrows_x, int ncols_y, int nrows_y,
                     int nrows_dst) {
  static_assert(MMQ_X % CHUNK == 0, "a tile's columns come in whole chunks");
  constexpr int G = F::qk / QK8_1;
  const int groups = ncols_x / QK8_1, blocks_per_row = ncols_x / F::qk, yblocks = nrows_y / QK8_1;
  const int row0 = blockIdx.x * MMQ_Y, col0 = blockIdx.y * MMQ_X;
  const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  // unit u: tile row u % MMQ_Y (consecutive threads, consecutive rows), columns CHUNK * (u / MMQ_Y)..
  for (int u = tid; u < MMQ_Y * (MMQ_X / CHUNK); u += nthreads) {
    const int row = row0 + u % MMQ_Y, c0 = col0 + CHUNK * (u / MMQ_Y);
    if (row >= nrows_dst || c0 >= ncols_y) continue;
    // a row past the weights reads the last one (Candle clamps the same way; unreachable when
    // nrows_dst == nrows_x, as Candle launches it)
    const u8* xr = x + (usize)(row < nrows_x ? row : nrows_x - 1) * blocks_per_row * F::size;
    float acc[CHUNK];
#pragma unroll
    for (int j = 0; j < CHUNK; ++j) acc[j] = 0.0f;
    for (int gi = 0; gi < groups; ++gi) {
      XGroup g;
      MmqGroup<F>::template load<A>(xr + (usize)(gi / G) * F::size, gi % G, g);
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) {
        if (c0 + j >= ncols_y) break;
        YBlock y;
        load_y(yq + ((usize)(c0 + j) * yblocks + gi) * kSizeQ8_1, y);
        acc[j] += group_dot<MmqGroup<F>::kind>(g, y);
      }
    }
#pragma unroll
    for (int j = 0; j < CHUNK; ++j)
      if (c0 + j < ncols_y) dst[(usize)(c0 + j) * nrows_dst + row] = acc[j];
  }
}

template <class F, int MMQ_X, int MMQ_Y>
PK_DEV void mmq(const void* vx, const void* vy, float* dst, int ncols_x, int nrows_x, int ncols_y, int nrows_y,
                int nrows_dst) {
  const u8* x = static_cast<const u8*>(vx);
  const u8* yq = static_cast<const u8*>(vy);
  mmq_tile<F, MMQ_X, MMQ_Y, F::align>(x, yq, dst, ncols_x, nrows_x, ncols_y, nrows_y, nrows_dst);
}

}  // namespace gguf
}  // namespace pk

// (MMQ_X, MMQ_Y): Candle's tile per format (its non-tensor-core AMPERE table), which its host code
// sizes the grid by; block (32, 4): 128 threads, the launch bound (AMD then allows 512 VGPRs a lane).
#define PK_MMQ(FMT, MMQ_X, MMQ_Y)                                                                        \
  extern "C" __global__ __launch_bounds__(128) void mul_mat_##FMT(                                       \
      const void* __restrict__ vx, const void* __restrict__ vy, float* __restrict__ dst, const int ncols_x, \
      const int nrows_x, const int ncols_y, const int nrows_y, const int nrows_dst) {                    \
    pk::gguf::mmq<pk::gguf::fmt::FMT, MMQ_X, MMQ_Y>(vx, vy, dst, ncols_x, nrows_x, ncols_y, nrows_y, nrows_dst); \
  }
PK_MMQ(q4_0, 64, 128)
PK_MMQ(q4_1, 64, 128)
PK_MMQ(q5_0, 128, 64)
PK_MMQ(q5_1, 128, 64)
PK_MMQ(q8_0, 128, 64)
PK_MMQ(q2_K, 64, 128)
PK_MMQ(q3_K, 128, 128)
PK_MMQ(q4_K, 64, 128)
PK_MMQ(q5_K, 64, 128)
PK_MMQ(q6_K, 64, 64)
