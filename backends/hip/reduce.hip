// Reductions: fast_{sum,min,max}_T and fast_arg{min,max}_T (u32 out),
// T in u8 u32 i64 f32 f64 f16 bf16.
//   (size_t src_numel, size_t el_to_sum_per_block, size_t num_dims,
//    const size_t* info /*[permuted dims, permuted strides], never null*/,
//    const T* src, T* dst /* uint32_t* for arg* */)
// One block per output element (grid dst_el); block = a power of two <= 1024.
// Same algorithm as candle's reduce.cu, so results (and argmin/argmax ties)
// match for any block size: thread t folds t, t+B, ...; a shared-memory tree
// halves B. Sums accumulate in T; min/max use maxg/ming; arg* keep the first
// element then strict improvements, the tree takes the partner only when it is
// strictly better. No warp intrinsics: wavefront-size agnostic.
#include "structured.h"

namespace pk {

template <class T> struct RedBuf {
  typedef typename Num<T>::C C;
};

template <class T> PK_DEV usize red_offset(usize idx, usize nd, const usize* info, usize numel) {
  return numel <= 0xffffffffull ? strided_index<u32>((u32)idx, nd, info, info + nd)
                                : strided_index<u64>((u64)idx, nd, info, info + nd);
}

// Folds the elements start+tid, start+tid+B, ... (< stop) of this thread in
// that order: fold(idx, value). A contiguous (permuted) layout, the usual case,
// loads U elements before folding them: U loads in flight instead of one
// (H100, f32 4096x16384 sum: 22% -> 73% of copy bandwidth), same order; then
// U/2 at a time, so that a row of 4*B elements is not read one dependent load
// at a time (H200, f32 4096x4096 fast_sum: 58 us one at a time, 47 us with the
// last elements' loads issued together).
template <class T, class F>
PK_DEV void fold_thread(usize start, usize stop, usize nd, const usize* info, usize numel, const T* src, F&& fold) {
  constexpr int U = 8;
  const usize b = blockDim.x;
  usize idx = start + threadIdx.x;
  if (is_contiguous(nd, info, info + nd)) {
    for (; idx + (U - 1) * b < stop; idx += U * b) {
      T x[U];
#pragma unroll
      for (int j = 0; j < U; ++j) x[j] = src[idx + j * b];
#pragma unroll
      for (int j = 0; j < U; ++j) fold(idx + j * b, x[j]);
    }
    for (; idx + (U / 2 - 1) * b < stop; idx += U / 2 * b) {
      T x[U / 2];
#pragma unroll
      for (int j = 0; j < U / 2; ++j) x[j] = src[idx + j * b];
#pragma unroll
      for (int j = 0; j < U / 2; ++j) fold(idx + j * b, x[j]);
    }
    for (; idx < stop; idx += b) fold(idx, src[idx]);
  } else {
    for (; idx < stop; idx += b) fold(idx, src[red_offset<T>(idx, nd, info, numel)]);
  }
}

template <class T>
PK_DEV void fast_sum(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  typedef typename Num<T>::C C;
  __shared__ C shr[kMaxBlock];
  const unsigned tid = threadIdx.x;
  const usize start = (usize)blockIdx.x * el;
  const usize stop = start + el < numel ? start + el : numel;
  C acc = (C)0;
  fold_thread(start, stop, nd, info, numel, src, [&](usize, T v) { acc = add_in_t<T>(acc, Num<T>::to_c(v)); });
  shr[tid] = acc;
  block_tree(shr, tid, blockDim.x, [](C a, C b) { return add_in_t<T>(a, b); });
  if (tid == 0) dst[blockIdx.x] = Num<T>::from_c(shr[0]);
}

template <class T, bool IS_MAX>
PK_DEV void fast_minmax(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  typedef typename Num<T>::C C;
  __shared__ C shr[kMaxBlock];
  const unsigned tid = threadIdx.x;
  const usize start = (usize)blockIdx.x * el;
  const usize stop = start + el < numel ? start + el : numel;
  C acc = IS_MAX ? Limits<T>::lowest() : Limits<T>::highest();
  fold_thread(start, stop, nd, info, numel, src, [&](usize, T v) { acc = maxg<T, IS_MAX>(acc, Num<T>::to_c(v)); });
  shr[tid] = acc;
  block_tree(shr, tid, blockDim.x, [](C a, C b) { return maxg<T, IS_MAX>(a, b); });
  if (tid == 0) dst[blockIdx.x] = Num<T>::from_c(shr[0]);
}

template <class T, bool IS_MAX>
PK_DEV void fast_arg(usize numel, usize el, usize nd, const usize* info, const T* src, u32* dst) {
  typedef typename Num<T>::C C;
  __shared__ C shr[kMaxBlock];
  __shared__ u32 shr_idx[kMaxBlock];
  const unsigned tid = threadIdx.x;
  const usize start = (usize)blockIdx.x * el;
  const usize stop = start + el < numel ? start + el : numel;
  const usize last = info[nd - 1];
  C best = IS_MAX ? Limits<T>::lowest() : Limits<T>::highest();
  u32 best_idx = 0xffffffffu;
  bool not_set = true;
  fold_thread(start, stop, nd, info, numel, src, [&](usize idx, T x) {
    const C v = Num<T>::to_c(x);
    if (not_set || (IS_MAX ? v > best : v < best)) {  // NaN never improves, and sticks
      best = v;
      best_idx = (u32)(idx % last);
      not_set = false;
    }
  });
  shr[tid] = best;
  shr_idx[tid] = best_idx;
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (tid < s && (IS_MAX ? shr[tid + s] > shr[tid] : shr[tid + s] < shr[tid])) {
      shr[tid] = shr[tid + s];
      shr_idx[tid] = shr_idx[tid + s];
    }
  }
  __syncthreads();
  if (tid == 0) dst[blockIdx.x] = shr_idx[0];
}

}  // namespace pk

// PK_BOUNDS (<= 32 registers on NVIDIA, two resident 1024-thread blocks per SM):
// one block loads while the other runs its tree (H100, f32 4096x16384 sum: 74%
// -> 94% of copy bandwidth; the 32-byte spill it costs sits outside the loop).
#define PK_REDUCE_ARGS pk::usize src_numel, pk::usize el, pk::usize num_dims, const pk::usize* info
#define PK_REDUCE_ALL(T, SFX)                                                                          \
  extern "C" __global__ PK_BOUNDS void fast_sum_##SFX(PK_REDUCE_ARGS, const T* src, T* dst) {          \
    pk::fast_sum<T>(src_numel, el, num_dims, info, src, dst);                                          \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_min_##SFX(PK_REDUCE_ARGS, const T* src, T* dst) {          \
    pk::fast_minmax<T, false>(src_numel, el, num_dims, info, src, dst);                                \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_max_##SFX(PK_REDUCE_ARGS, const T* src, T* dst) {          \
    pk::fast_minmax<T, true>(src_numel, el, num_dims, info, src, dst);                                 \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_argmin_##SFX(PK_REDUCE_ARGS, const T* src, pk::u32* dst) { \
    pk::fast_arg<T, false>(src_numel, el, num_dims, info, src, dst);                                   \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_argmax_##SFX(PK_REDUCE_ARGS, const T* src, pk::u32* dst) { \
    pk::fast_arg<T, true>(src_numel, el, num_dims, info, src, dst);                                    \
  }

PK_REDUCE_ALL(pk::u8, u8)
PK_REDUCE_ALL(pk::u32, u32)
PK_REDUCE_ALL(pk::i64, i64)
PK_REDUCE_ALL(pk::f32, f32)
PK_REDUCE_ALL(pk::f64, f64)
PK_REDUCE_ALL(pk::f16, f16)
PK_REDUCE_ALL(pk::bf16, bf16)
