// Indexing: is_I_T (index_select), gather_I_T, ia_I_T (index_add),
// sa_I_T (scatter_add), s_I_T (scatter); I in u8 u32 i64 x T in u8 u32 i64
// f32 f64 f16 bf16, plus fp8 (f8_e4m3) with I in u8 u32 i64 i16 i32 (no s_* fp8).
//   is_I_T(size_t numel, size_t num_dims, const size_t* info /*ids dims+strides*/,
//          const I* ids, const T* inp, T* out, left, src_dim, ids_dim, right)
//   gather_I_T(size_t numel, ids, inp, out, left, src_dim, ids_dim, right)
//   ia_I_T(ids, size_t ids_dim, inp, out, left, src_dim, dst_dim, right)
//   sa_I_T / s_I_T(ids, inp, out, left, src_dim, dst_dim, right)
// An id == max_value<I>() writes 0 (is/gather) or is skipped (ia/s/sa; the fp8
// variants check it too, instead of writing out of bounds). ia/s/sa: one thread
// per (left, right), j serial: deterministic, scatter's last j wins.
#include "structured.h"

namespace pk {

template <class T> PK_DEV T t_zero() { return Num<T>::from_c((typename Num<T>::C)0); }
template <class T> PK_DEV T t_add(T a, T b) {
  return Num<T>::from_c(add_in_t<T>(Num<T>::to_c(a), Num<T>::to_c(b)));
}

// Rows of whole 16-byte packs (right % V == 0, both pointers aligned: the common embedding case)
// go to the working blocks (idle_block, vthreads) a pack a thread: one id read and 32-bit index
// math per pack, 16-byte loads and stores. One element a thread with three 64-bit divisions took
// 1.61x the time of Candle's kernel (H200, u32 -> bf16, 4096 ids of an 8192 x 4096 table). Other
// rows keep that path on every block; a strided input found by a working block takes it on the
// working blocks (the idle ones have returned).
template <class I, class T>
PK_DEV void index_select(usize numel, usize num_dims, const usize* info, const I* ids, const T* inp, T* out,
                         usize left, usize src_dim, usize ids_dim, usize right) {
  const usize* dims = info;
  const usize* strides = info + num_dims;
  (void)left;
  auto element = [&](usize i, bool contig) {
    const usize left_i = i / (ids_dim * right);
    const usize id_i = i / right % ids_dim;
    const usize right_i = i % right;
    const I id = ids[id_i];
    if (is_sentinel(id)) {
      out[i] = t_zero<T>();
    } else {
      const usize src_i = left_i * (src_dim * right) + (usize)id * right + right_i;
      out[i] = inp[contig ? src_i : strided_index<u64>(src_i, num_dims, dims, strides)];
    }
  };
  constexpr int V = PackWidth<T>::v;
  if (right % V == 0 && pack_aligned<V>(inp) && pack_aligned<V>(out) && numel <= 0xffffffffull &&
      src_dim * right <= 0xffffffffull) {
    if (idle_block()) return;
    const VThreads vt = vthreads();
    if (!is_contiguous(num_dims, dims, strides)) {
      for (usize i = vt.id; i < numel; i += vt.step) element(i, false);
      return;
    }
    const u32 rp = (u32)(right / V), row = (u32)(src_dim * right), nd = (u32)ids_dim;
    for (usize p = vt.id; p < numel / V; p += vt.step) {
      const u32 r = (u32)p / rp, right_p = (u32)p - r * rp;               // r = left_i * ids_dim + id_i
      const u32 left_i = r / nd, id_i = r - left_i * nd;
      const I id = ids[id_i];
      Pack<T, V> x;
      if (is_sentinel(id)) {
#pragma unroll
        for (int k = 0; k < V; ++k) x.v[k] = t_zero<T>();
      } else {
        x = load_pack<V>(inp, (usize)left_i * row + (usize)id * right + (usize)right_p * V);
      }
      store_pack<V>(out, p * V, x);
    }
    return;
  }
  const bool contig = is_contiguous(num_dims, dims, strides);
  grid_stride(numel, [&](usize i) { element(i, contig); });
}

template <class I, class T>
PK_DEV void gather(usize numel, const I* ids, const T* inp, T* out, usize left, usize src_dim, usize ids_dim,
                   usize right) {
  (void)left;
  grid_stride(numel, [&](usize i) {
    const usize post = i % right;
    const I id = ids[i];
    if (is_sentinel(id)) {
      out[i] = t_zero<T>();
    } else {
      const usize pre = i / (right * ids_dim);
      out[i] = inp[(pre * src_dim + (usize)id) * right + post];
    }
  });
}

template <class I, class T>
PK_DEV void index_add(const I* ids, usize ids_dim, const T* inp, T* out, usize left, usize src_dim, usize dst_dim,
                      usize right) {
  (void)src_dim;
  grid_stride(left * right, [&](usize i) {
    const usize pre = i / right, post = i % right;
    for (usize j = 0; j < ids_dim; ++j) {
      const I id = ids[j];
      if (is_sentinel(id)) continue;
      const usize dst_i = (pre * dst_dim + (usize)id) * right + post;
      out[dst_i] = t_add(out[dst_i], inp[(pre * ids_dim + j) * right + post]);
    }
  });
}

template <bool ADD, class I, class T>
PK_DEV void scatter(const I* ids, const T* inp, T* out, usize left, usize src_dim, usize dst_dim, usize right) {
  grid_stride(left * right, [&](usize i) {
    const usize pre = i / right, post = i % right;
    for (usize j = 0; j < src_dim; ++j) {
      const usize src_i = (pre * src_dim + j) * right + post;
      const I id = ids[src_i];
      if (is_sentinel(id)) continue;
      const usize dst_i = (pre * dst_dim + (usize)id) * right + post;
      if (ADD) out[dst_i] = t_add(out[dst_i], inp[src_i]);
      else out[dst_i] = inp[src_i];
    }
  });
}

}  // namespace pk

#define PK_IDX_ARGS pk::usize left, pk::usize src_dim
#define PK_INDEX_NOS(I, IS, T, TS)                                                                            \
  extern "C" __global__ void is_##IS##_##TS(pk::usize numel, pk::usize num_dims, const pk::usize* info,     \
                                            const I* ids, const T* inp, T* out, PK_IDX_ARGS,                 \
                                            pk::usize ids_dim, pk::usize right) {                           \
    pk::index_select<I, T>(numel, num_dims, info, ids, inp, out, left, src_dim, ids_dim, right);            \
  }                                                                                                          \
  extern "C" __global__ void gather_##IS##_##TS(pk::usize numel, const I* ids, const T* inp, T* out,         \
                                                PK_IDX_ARGS, pk::usize ids_dim, pk::usize right) {          \
    pk::gather<I, T>(numel, ids, inp, out, left, src_dim, ids_dim, right);                                  \
  }                                                                                                          \
  extern "C" __global__ void ia_##IS##_##TS(const I* ids, pk::usize ids_dim, const T* inp, T* out,          \
                                            PK_IDX_ARGS, pk::usize dst_dim, pk::usize right) {              \
    pk::index_add<I, T>(ids, ids_dim, inp, out, left, src_dim, dst_dim, right);                             \
  }                                                                                                          \
  extern "C" __global__ void sa_##IS##_##TS(const I* ids, const T* inp, T* out, PK_IDX_ARGS,                \
                                            pk::usize dst_dim, pk::usize right) {                           \
    pk::scatter<true, I, T>(ids, inp, out, left, src_dim, dst_dim, right);                                  \
  }
#define PK_INDEX(I, IS, T, TS)                                                                                \
  PK_INDEX_NOS(I, IS, T, TS)                                                                                 \
  extern "C" __global__ void s_##IS##_##TS(const I* ids, const T* inp, T* out, PK_IDX_ARGS,                 \
                                           pk::usize dst_dim, pk::usize right) {                            \
    pk::scatter<false, I, T>(ids, inp, out, left, src_dim, dst_dim, right);                                 \
  }
#define PK_INDEX_T(T, TS)         \
  PK_INDEX(pk::u8, u8, T, TS)     \
  PK_INDEX(pk::u32, u32, T, TS)   \
  PK_INDEX(pk::i64, i64, T, TS)

PK_INDEX_T(pk::u8, u8)
PK_INDEX_T(pk::u32, u32)
PK_INDEX_T(pk::i64, i64)
PK_INDEX_T(pk::f32, f32)
PK_INDEX_T(pk::f64, f64)
PK_INDEX_T(pk::f16, f16)
PK_INDEX_T(pk::bf16, bf16)
PK_INDEX_NOS(pk::u8, u8, pk::f8e4m3, f8_e4m3)
PK_INDEX_NOS(pk::u32, u32, pk::f8e4m3, f8_e4m3)
PK_INDEX_NOS(pk::i64, i64, pk::f8e4m3, f8_e4m3)
PK_INDEX_NOS(pk::i16, i16, pk::f8e4m3, f8_e4m3)
PK_INDEX_NOS(pk::i32, i32, pk::f8e4m3, f8_e4m3)
