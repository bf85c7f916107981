// Mixture-of-experts mat-vec: indexed_moe_forward_<q2k|q3k|q4k|q5k|q6k|q8_0>_q8_1 of Candle's
// quantized.cu, written from the parameter list and Candle's launch
// (candle-core/src/quantized/cuda.rs indexed_moe_forward_fused_q8_1_input; parity/ops/quantized/moe.py):
//   (const void* all_weights, const void* all_inputs /*q8_1 rows of k_padded*/, const unsigned* indices,
//    float* all_outputs, const int n, const int k, const int batch, const int topk, const int k_padded,
//    const int input_dim1)
// grid (n, batch, topk), block (32, 4): task t = blockIdx.y*gridDim.z + blockIdx.z multiplies row
// blockIdx.x of expert indices[t] by input row (input_dim1 == 1 ? blockIdx.y : t) into
// all_outputs[t*n + row]. Experts are (n*k)/256 blocks apart for every format, as Candle's kernel
// strides them (for q8_0 an eighth of a matrix: the catalog follows the kernel). Dot products:
// quantized_dot.h; the block's threads add through shared memory (no lane masks: the same on 32-
// and 64-lane wavefronts).
#include "quantized_dot.h"

namespace pk {
namespace gguf_moe {
using namespace gguf;

template <class F>
PK_DEV void moe(const void* all_w, const void* all_in, const unsigned* ids, float* out, int n, int k, int topk,
                int k_padded, int input_dim1) {
  constexpr int G = F::qk / QK8_1, A = F::align;
  const usize task = (usize)blockIdx.y * gridDim.z + blockIdx.z;
  const usize in_row = input_dim1 == 1 ? (usize)blockIdx.y : task;
  const usize expert = ids[task];
  const u8* w = static_cast<const u8*>(all_w) + expert * ((usize)n * (usize)k / QK_K * F::size);
  const u8* y = static_cast<const u8*>(all_in) + in_row * ((usize)k_padded / QK8_1 * kSizeQ8_1);
  const int row = blockIdx.x, groups = k / QK8_1, blocks_per_row = k / F::qk;
  const int nthreads = blockDim.x * blockDim.y, t = threadIdx.y * blockDim.x + threadIdx.x;
  float acc = 0.0f;
#pragma unroll 4
  for (int gi = t; gi < groups; gi += nthreads) {
    XGroup g;
    Group<F>::template load<A>(w + ((usize)row * blocks_per_row + gi / G) * F::size, gi % G, g);
    YBlock yb;
    load_y(y + (usize)gi * kSizeQ8_1, yb);
    acc += group_dot<Group<F>::kind>(g, yb);
  }
  constexpr int PARTS = 16;
  __shared__ float part[128];
  __shared__ float part2[PARTS];
  part[t] = acc;
  __syncthreads();
  if (t < PARTS) {
    float s = 0.0f;
    for (int i = t; i < nthreads; i += PARTS) s += part[i];
    part2[t] = s;
  }
  __syncthreads();
  if (t == 0) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < PARTS; ++i) s += part2[i];
    out[task * (usize)n + row] = s;
  }
}

}  // namespace gguf_moe
}  // namespace pk

#define PK_MOE(TAG, FMT)                                                                               \
  extern "C" __global__ __launch_bounds__(128) void indexed_moe_forward_##TAG##_q8_1(                  \
      const void* __restrict__ all_weights, const void* __restrict__ all_inputs,                      \
      const unsigned int* __restrict__ indices, float* __restrict__ all_outputs, const int n, const int k, \
      const int batch, const int topk, const int k_padded, const int input_dim1) {                     \
    pk::gguf_moe::moe<pk::gguf::fmt::FMT>(all_weights, all_inputs, indices, all_outputs, n, k, topk, k_padded, \
                                          input_dim1);                                                 \
  }
PK_MOE(q2k, q2_K)
PK_MOE(q3k, q3_K)
PK_MOE(q4k, q4_K)
PK_MOE(q5k, q5_K)
PK_MOE(q6k, q6_K)
PK_MOE(q8_0, q8_0)
