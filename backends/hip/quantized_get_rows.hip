// Embedding rows from a (quantized) table: get_rows_<f32|f16|bf16|q4_0|q4_1|q5_0|q5_1|q8_0|q2_K..q6_K>
// of Candle's quantized.cu, written from the parameter list and Candle's launch
// (candle-core/src/quantized/cuda.rs `get_rows`; parity/ops/quantized/get_rows.py):
//   (const void* src0, const uint32_t* src1 /*ids*/, float* dst, const int64_t ne00 /*hidden*/,
//    const size_t nb01 /*bytes per table row*/)
// dst row i = table row src1[blockIdx.x], in f32. Grid (n_ids, y): f32/f16/bf16 and the 32-element
// formats are grid-stride loops over the row from blockIdx.y (any y covers it: Candle caps y at
// 65535); the K-quants take super-block blockIdx.y, any block size (Candle: 64, or 32 for q4_K).
// Quant blocks are decoded four elements at a time with quantized.h's deq4 (the dequantize kernels'
// arithmetic: each value one f32 rounding of exact products) and stored as one 16-byte access
// (rows of a multiple of 32 floats keep them aligned). No cross-lane operation: the same on 32- and
// 64-lane wavefronts.
#include "quantized.h"

namespace pk {
namespace gguf {

PK_DEV void store4(float* y, const float (&v)[4]) { *reinterpret_cast<float4*>(y) = make_float4(v[0], v[1], v[2], v[3]); }

template <class F>
PK_DEV void get_rows_q(const void* src0, const u32* ids, float* dst, i64 ne00, usize nb01) {
  const usize row = ids[blockIdx.x];
  const u8* x = static_cast<const u8*>(src0) + row * nb01;
  float* y = dst + (usize)blockIdx.x * (usize)ne00;
  if constexpr (F::qk == QK_K) {
    const u8* blk = x + (usize)blockIdx.y * F::size;
    float* yb = y + (usize)blockIdx.y * QK_K;
    for (int e = 4 * threadIdx.x; e < QK_K; e += 4 * blockDim.x) {
      float v[4];
      F::template deq4<F::align>(blk, e, v);
      store4(yb + e, v);
    }
  } else {
    const i64 step = 4 * (i64)gridDim.y * blockDim.x;
    for (i64 e = 4 * ((i64)blockIdx.y * blockDim.x + threadIdx.x); e < ne00; e += step) {
      float v[4];
      F::template deq4<F::align>(x + (usize)(e / F::qk) * F::size, (int)(e % F::qk), v);
      store4(y + e, v);
    }
  }
}

template <class T>
PK_DEV void get_rows_float(const T* src0, const u32* ids, float* dst, i64 ne00) {
  const usize row = ids[blockIdx.x];
  const T* x = src0 + row * (usize)ne00;
  float* y = dst + (usize)blockIdx.x * (usize)ne00;
  for (i64 e = (i64)blockIdx.y * blockDim.x + threadIdx.x; e < ne00; e += (i64)gridDim.y * blockDim.x)
    y[e] = to_f32(x[e]);
}

}  // namespace gguf
}  // namespace pk

#define PK_GET_ROWS_Q(NAME, FMT)                                                                       \
  extern "C" __global__ void get_rows_##NAME(const void* __restrict__ src0, const unsigned int* __restrict__ src1, \
                                              float* __restrict__ dst, const long long ne00, const pk::usize nb01) { \
    pk::gguf::get_rows_q<pk::gguf::fmt::FMT>(src0, src1, dst, ne00, nb01);                           \
  }
#define PK_GET_ROWS_F(NAME, T)                                                                         \
  extern "C" __global__ void get_rows_##NAME(const T* __restrict__ src0, const unsigned int* __restrict__ src1, \
                                              float* __restrict__ dst, const long long ne00, const pk::usize nb01) { \
    pk::gguf::get_rows_float<T>(src0, src1, dst, ne00);                                                \
  }
PK_GET_ROWS_F(f32, float)
PK_GET_ROWS_F(f16, pk::f16)
PK_GET_ROWS_F(bf16, pk::bf16)
PK_GET_ROWS_Q(q4_0, q4_0)
PK_GET_ROWS_Q(q4_1, q4_1)
PK_GET_ROWS_Q(q5_0, q5_0)
PK_GET_ROWS_Q(q5_1, q5_1)
PK_GET_ROWS_Q(q8_0, q8_0)
PK_GET_ROWS_Q(q2_K, q2_K)
PK_GET_ROWS_Q(q3_K, q3_K)
PK_GET_ROWS_Q(q4_K, q4_K)
PK_GET_ROWS_Q(q5_K, q5_K)
PK_GET_ROWS_Q(q6_K, q6_K)
