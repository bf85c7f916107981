// Reductions: fast_{sum,min,max}_T and fast_arg{min,max}_T (u32 out),
// T in u8 u32 i64 f32 f64 f16 bf16.
//   (size_t src_numel, size_t el_to_sum_per_block, size_t num_dims,
//    const size_t* info /*[permuted dims, permuted strides], never null*/,
//    const T* src, T* dst /* uint32_t* for arg* */)
// One block per output element (grid dst_el); block = a power of two <= 1024.
// arg*: the same algorithm as candle's reduce.cu, so their results (ties
// included) match for any block size: thread t folds t, t+B, ...; a
// shared-memory tree halves B; they keep the first element then strict
// improvements, the tree takes the partner only when it is strictly better.
// Sums (accumulated in T) and min/max (maxg/ming) take rows in groups where the
// block allows (reduce_rows), else the same tree. Wave-size correct: the trees
// go through shared memory, the groups' butterflies shuffle inside 32-thread
// segments (structured.h).
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

// ------------------------------------------------------------ rows dealt to groups
// Candle launches one block per row, the row's length rounded up to a power of two and at most
// 1024 threads: a 4096-float row is 4 elements a thread, and two such blocks an SM wait on their
// loads, then on their tree (H200, fast_sum f32 4096x4096: 39-41% of copy, Candle's own 18%). Sums,
// minima and maxima, whose judges take any order (a sum within its bound; min/max exact in every
// order, +-0 equal), deal rows to groups instead: G threads a row, the fewest (a power of two, at
// least a segment, at most the block) that hold it at kRedBytes bytes a thread; a working block
// takes R = B/G consecutive rows, and the blocks in between return at once, before any memory read
// (as common.h's idle blocks do; under the 32-register cap their warps still store two spilled
// values first). A group folds its row (16-byte packs, two in flight, when the rows are contiguous
// and aligned; elements otherwise), then combines: a butterfly in each segment, then its segments'
// partials through shared memory. H200, side by side, % of copy at 4096x4096 f32 (R = 4): fast_sum
// 39 -> 63, fast_min/max 34 -> 50 (Candle 18). Rows of 64 KB and more keep one block a row
// (G = B). argmin/argmax keep Candle's tree: their judge is exact on rows up to a block.
constexpr u32 kRedBytes = 64;
struct RedGroups {
  u32 lg_g, lg_r;  // G = 2^lg_g threads a row, R = 2^lg_r rows a working block (0: one block a row)
};
template <class T> PK_DEV RedGroups red_groups(usize numel, usize el) {
  const u32 b = blockDim.x, lg_b = (u32)(__ffs((int)b) - 1);
  if ((b & (b - 1)) != 0 || b < 2 * kSeg || numel > 0xffffffffull) return RedGroups{lg_b, 0};
  const usize need = (el + kRedBytes / sizeof(T) - 1) / (kRedBytes / sizeof(T));  // threads at kRedBytes
  const u32 lg_need = need <= 1 ? 0u : (u32)(64 - __clzll((long long)(need - 1)));
  constexpr u32 kLgSeg = 5;
  static_assert(1u << kLgSeg == kSeg, "kLgSeg is log2(kSeg)");
  const u32 lg_g = lg_need < kLgSeg ? kLgSeg : (lg_need > lg_b ? lg_b : lg_need);
  return RedGroups{lg_g, lg_b - lg_g};
}

// acc folded (f(acc, T value)) over row `row` by thread g of its group of G (the source's elements
// fewer than 2^32: red_groups).
template <class T, class C, class F>
PK_DEV C group_fold(u32 row, u32 el, unsigned g, unsigned G, usize nd, const usize* info, u32 numel, const T* src,
                    C acc, F&& f) {
  constexpr int V = 16 / sizeof(T);
  const u32 start = row * el, stop = start + el < numel ? start + el : numel;
  const bool contig = is_contiguous(nd, info, info + nd);
  if (contig && pack_aligned<V>(src) && (el * sizeof(T)) % 16 == 0 && stop - start == el) {
    const Pack<T, V>* p = reinterpret_cast<const Pack<T, V>*>(src + start);
    const u32 npk = el / V;
    u32 k = g;
    for (; k + G < npk; k += 2 * G) {
      const Pack<T, V> x0 = p[k], x1 = p[k + G];
#pragma unroll
      for (int e = 0; e < V; ++e) acc = f(acc, x0.v[e]);
#pragma unroll
      for (int e = 0; e < V; ++e) acc = f(acc, x1.v[e]);
    }
    if (k < npk) {
      const Pack<T, V> x = p[k];
#pragma unroll
      for (int e = 0; e < V; ++e) acc = f(acc, x.v[e]);
    }
  } else {
    for (u32 idx = start + g; idx < stop; idx += G) acc = f(acc, src[contig ? idx : red_offset<T>(idx, nd, info, numel)]);
  }
  return acc;
}

// The working blocks' rows (see red_groups): returns false where the launch keeps one block a row.
// op(a, b) combines two partials; fold(acc, T value) folds an element.
template <class T, class C, class Op, class Fold>
PK_DEV bool reduce_rows(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst, C init, Op&& op,
                        Fold&& fold) {
  __shared__ C part[kMaxBlock / kSeg];
  const RedGroups rg = red_groups<T>(numel, el);
  if (rg.lg_r == 0) return false;
  if ((blockIdx.x & ((1u << rg.lg_r) - 1)) != 0) return true;  // idle: its rows are a working block's
  const unsigned tid = threadIdx.x, G = 1u << rg.lg_g, g = tid & (G - 1);
  const u32 row = blockIdx.x + (tid >> rg.lg_g);
  const bool live = row < gridDim.x;
  C acc = live ? group_fold(row, (u32)el, g, G, nd, info, (u32)numel, src, init, fold) : init;
  acc = seg_allreduce(acc, op, G < kSeg ? G : kSeg);
  if (G > kSeg) {  // the group's segment partials, through shared memory (G uniform: every thread syncs)
    if (tid % kSeg == 0) part[tid / kSeg] = acc;
    __syncthreads();
    if (g == 0) {
      const unsigned s0 = tid / kSeg;
      acc = part[s0];
      for (unsigned s = 1; s < G / kSeg; ++s) acc = op(acc, part[s0 + s]);
    }
  }
  if (live && g == 0) dst[row] = Num<T>::from_c(acc);
  return true;
}

// One output element per block (Candle's launch) of a fold that takes its elements in any order:
// op(a, b) combines two values of the compute type, init is its identity. Rows in groups where the
// block allows (reduce_rows), else each thread's fold and the block's tree.
template <class T, class C, class Op>
PK_DEV void fast_fold(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst, C init, Op&& op) {
  __shared__ C shr[kMaxBlock];
  const unsigned tid = threadIdx.x;
  const usize start = (usize)blockIdx.x * el;
  const usize stop = start + el < numel ? start + el : numel;
  if (reduce_rows(numel, el, nd, info, src, dst, init, op, [&](C a, T v) { return op(a, Num<T>::to_c(v)); }))
    return;
  C acc = init;
  fold_thread(start, stop, nd, info, numel, src, [&](usize, T v) { acc = op(acc, Num<T>::to_c(v)); });
  shr[tid] = acc;
  block_tree(shr, tid, blockDim.x, op);
  if (tid == 0) dst[blockIdx.x] = Num<T>::from_c(shr[0]);
}

template <class T>
PK_DEV void fast_sum(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  typedef typename Num<T>::C C;
  fast_fold(numel, el, nd, info, src, dst, (C)0, [](C a, C b) { return add_in_t<T>(a, b); });
}

template <class T, bool IS_MAX>
PK_DEV void fast_minmax(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  typedef typename Num<T>::C C;
  fast_fold(numel, el, nd, info, src, dst, IS_MAX ? Limits<T>::lowest() : Limits<T>::highest(),
            [](C a, C b) { return maxg<T, IS_MAX>(a, b); });
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
