// candle-nn kernels: softmax_T, rmsnorm_T, layernorm_T, rope_i_T, rope_T,
// rope_thd_T for T in f32 f64 f16 bf16 (see docs/candle-kernel-abi.md).
//   softmax_T(const T* src, T* dst, int n_cols)                grid (rows), block (1,32,1)
//   rmsnorm_T(src, dst, const T* alpha, int n_cols, int block_size, float eps)
//   layernorm_T(src, dst, alpha, beta, int n_cols, int block_size, float eps)
//                                     grid (rows), block (block_size = n_cols<1024 ? 32 : 1024)
//   rope_i_T(src, cos, sin, dst, u32 bh, u32 td, u32 stride_b)
//   rope_T(src, cos, sin, dst, u32 bh, u32 td, u32 d, u32 stride_b)
//   rope_thd_T(src, cos, sin, dst, u32 b, u32 t, u32 h, u32 d, u32 stride_b)
// Row reductions go through shared memory over the launch's own block shape,
// so a 32-thread block on a 64-lane wavefront is as correct as on a 32-lane warp.
#include "structured.h"

namespace pk {

template <class T> struct Acc { typedef float A; };   // softmax sum: float for f16/bf16/f32
template <> struct Acc<double> { typedef double A; };

template <class T> PK_DEV typename Num<T>::C expg(typename Num<T>::C x) {
  if constexpr (sizeof(typename Num<T>::C) == 8) return exp(x);
  else return expf(x);
}

template <class T>
PK_DEV void softmax(const T* x, T* dst, int ncols) {
  typedef typename Num<T>::C C;
  typedef typename Acc<T>::A A;
  __shared__ C smax[kMaxBlock];
  __shared__ A ssum[kMaxBlock];
  const usize row = (usize)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned tid = threadIdx.y, nt = blockDim.y;
  const T* xr = x + row * (usize)ncols;
  T* dr = dst + row * (usize)ncols;
  C m = Limits<T>::lowest();
  for (int c = tid; c < ncols; c += nt) m = maxg<T, true>(m, Num<T>::to_c(xr[c]));
  smax[tid] = m;
  unsigned p = 1;
  while (p < nt) p <<= 1;
  __syncthreads();
  for (unsigned s = p / 2; s > 0; s >>= 1) {
    if (tid < s && tid + s < nt) smax[tid] = maxg<T, true>(smax[tid], smax[tid + s]);
    __syncthreads();
  }
  m = smax[0];
  A sum = 0;
  for (int c = tid; c < ncols; c += nt) {
    const C e = Num<T>::rd(expg<T>(Num<T>::rd(Num<T>::to_c(xr[c]) - m)));   // in T
    sum += (A)e;
  }
  sum = block_sum<A>(sum, ssum, tid, nt);
  const A inv = (A)1 / sum;
  const C inv_t = Num<T>::rd((C)inv);                 // f16/bf16: 1/sum rounded to T first
  for (int c = tid; c < ncols; c += nt) {
    const C e = Num<T>::rd(expg<T>(Num<T>::rd(Num<T>::to_c(xr[c]) - m)));
    dr[c] = Num<T>::from_c(e * inv_t);
  }
}

template <class T>
PK_DEV void rmsnorm(const T* x, T* dst, const T* alpha, int ncols, int block_size, float eps) {
  __shared__ float s[kMaxBlock];
  const usize row = blockIdx.x;
  const unsigned tid = threadIdx.x;
  const T* xr = x + row * (usize)ncols;
  T* dr = dst + row * (usize)ncols;
  float acc = 0.f;
  for (int c = tid; c < ncols; c += block_size) {
    const float v = (float)Num<T>::to_c(xr[c]);
    acc += v * v;
  }
  acc = block_sum<float>(acc, s, tid, blockDim.x);
  const float scale = rsqrtf(acc / (float)ncols + eps);
  for (int c = tid; c < ncols; c += block_size) {
    float y = scale * (float)Num<T>::to_c(xr[c]);
    if (alpha != nullptr) y = y * (float)Num<T>::to_c(alpha[c]);
    dr[c] = Num<T>::from_c((typename Num<T>::C)y);
  }
}

template <class T>
PK_DEV void layernorm(const T* x, T* dst, const T* alpha, const T* beta, int ncols, int block_size, float eps) {
  __shared__ float s1[kMaxBlock];
  __shared__ float s2[kMaxBlock];
  const usize row = blockIdx.x;
  const unsigned tid = threadIdx.x;
  const T* xr = x + row * (usize)ncols;
  T* dr = dst + row * (usize)ncols;
  float a = 0.f, b = 0.f;
  for (int c = tid; c < ncols; c += block_size) {
    const float v = (float)Num<T>::to_c(xr[c]);
    a += v;
    b += v * v;
  }
  a = block_sum<float>(a, s1, tid, blockDim.x);
  b = block_sum<float>(b, s2, tid, blockDim.x);
  const float mean = a / (float)ncols;
  const float var = b / (float)ncols - mean * mean;
  const float inv_std = rsqrtf(var + eps);
  for (int c = tid; c < ncols; c += block_size) {
    float y = ((float)Num<T>::to_c(xr[c]) - mean) * inv_std;
    if (alpha != nullptr) y = y * (float)Num<T>::to_c(alpha[c]);
    if (beta != nullptr) y = y + (float)Num<T>::to_c(beta[c]);
    dr[c] = Num<T>::from_c((typename Num<T>::C)y);
  }
}

template <class T>
PK_DEV void rotate(const T* src, const T* cos, const T* sin, T* dst, u32 i1, u32 i2, u32 cs) {
  typedef typename Num<T>::C C;
  const C x1 = Num<T>::to_c(src[i1]), x2 = Num<T>::to_c(src[i2]);
  const C c = Num<T>::to_c(cos[cs]), s = Num<T>::to_c(sin[cs]);
  dst[i1] = Num<T>::from_c(x1 * c - x2 * s);
  dst[i2] = Num<T>::from_c(x1 * s + x2 * c);
}

template <class T>
PK_DEV void rope_i(const T* src, const T* cos, const T* sin, T* dst, u32 bh, u32 td, u32 stride_b) {
  const u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * idx >= bh * td) return;
  u32 cs = idx % (td / 2);
  if (stride_b > 0) cs += (2 * idx) / stride_b * (td / 2);
  rotate(src, cos, sin, dst, 2 * idx, 2 * idx + 1, cs);
}

template <class T>
PK_DEV void rope(const T* src, const T* cos, const T* sin, T* dst, u32 bh, u32 td, u32 d, u32 stride_b) {
  const u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * idx >= bh * td) return;
  const u32 i_bh = idx / (td / 2);
  const u32 i_td = idx - (td / 2) * i_bh;
  const u32 i_t = i_td / (d / 2);
  const u32 i_d = i_td - (d / 2) * i_t;
  const u32 i1 = i_bh * td + i_t * d + i_d;
  u32 cs = i_t * (d / 2) + i_d;
  if (stride_b > 0) cs += (2 * idx) / stride_b * (td / 2);
  rotate(src, cos, sin, dst, i1, i1 + d / 2, cs);
}

template <class T>
PK_DEV void rope_thd(const T* src, const T* cos, const T* sin, T* dst, u32 b, u32 t, u32 h, u32 d, u32 stride_b) {
  const u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * idx >= b * t * h * d) return;
  const u32 i_bth = idx / (d / 2);
  const u32 i_d = idx - (d / 2) * i_bth;
  const u32 i_t = (i_bth / h) % t;
  const u32 i1 = i_bth * d + i_d;
  u32 cs = i_t * (d / 2) + i_d;
  if (stride_b > 0) cs += (2 * idx) / stride_b * ((t * d) / 2);
  rotate(src, cos, sin, dst, i1, i1 + d / 2, cs);
}

}  // namespace pk

#define PK_NN_ALL(T, SFX)                                                                                   \
  extern "C" __global__ void softmax_##SFX(const T* src, T* dst, int n_cols) {                             \
    pk::softmax<T>(src, dst, n_cols);                                                                      \
  }                                                                                                         \
  extern "C" __global__ void rmsnorm_##SFX(const T* src, T* dst, const T* alpha, int n_cols,               \
                                           int block_size, float eps) {                                    \
    pk::rmsnorm<T>(src, dst, alpha, n_cols, block_size, eps);                                              \
  }                                                                                                         \
  extern "C" __global__ void layernorm_##SFX(const T* src, T* dst, const T* alpha, const T* beta,          \
                                             int n_cols, int block_size, float eps) {                      \
    pk::layernorm<T>(src, dst, alpha, beta, n_cols, block_size, eps);                                      \
  }                                                                                                         \
  extern "C" __global__ void rope_i_##SFX(const T* src, const T* cos, const T* sin, T* dst, pk::u32 bh,    \
                                          pk::u32 td, pk::u32 stride_b) {                                  \
    pk::rope_i<T>(src, cos, sin, dst, bh, td, stride_b);                                                   \
  }                                                                                                         \
  extern "C" __global__ void rope_##SFX(const T* src, const T* cos, const T* sin, T* dst, pk::u32 bh,      \
                                        pk::u32 td, pk::u32 d, pk::u32 stride_b) {                         \
    pk::rope<T>(src, cos, sin, dst, bh, td, d, stride_b);                                                  \
  }                                                                                                         \
  extern "C" __global__ void rope_thd_##SFX(const T* src, const T* cos, const T* sin, T* dst, pk::u32 b,   \
                                            pk::u32 t, pk::u32 h, pk::u32 d, pk::u32 stride_b) {           \
    pk::rope_thd<T>(src, cos, sin, dst, b, t, h, d, stride_b);                                             \
  }

PK_NN_ALL(pk::f32, f32)
PK_NN_ALL(pk::f64, f64)
PK_NN_ALL(pk::f16, f16)
PK_NN_ALL(pk::bf16, bf16)
