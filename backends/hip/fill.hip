// fill_T(T* buf, T value, size_t numel)
// copy2d_T(const T* src, T* dst, uint32_t d1, uint32_t d2, uint32_t src_s, uint32_t dst_s):
//   dst[r*dst_s + c] = src[r*src_s + c] for r < d1, c < d2 (64-bit offsets)
// const_set_T(size_t numel, size_t num_dims, const size_t* info, T value, T* out):
//   out[strided(i)] = value (info null / contiguous -> out[i])
// T in u8 u32 i64 f16 bf16 f32 f64 f8_e4m3.
#include "common.h"

namespace pk {

template <class T>
PK_DEV void copy2d_impl(const T* src, T* dst, u32 d1, u32 d2, u32 src_s, u32 dst_s) {
  const usize n = (usize)d1 * (usize)d2;
  if (n <= 0xffffffffull) {
    grid_stride(n, [&](usize i) {
      const u32 r = (u32)i / d2, c = (u32)i - r * d2;
      dst[(usize)r * dst_s + c] = src[(usize)r * src_s + c];
    });
  } else {
    grid_stride(n, [&](usize i) {
      const usize r = i / d2, c = i - r * d2;
      dst[r * dst_s + c] = src[r * src_s + c];
    });
  }
}

template <class T>
PK_DEV void const_set_impl(usize numel, usize num_dims, const usize* info, T value, T* out) {
  if (idle_block()) return;
  if (info == nullptr || is_contiguous(num_dims, info, info + num_dims)) {
    contiguous_fill(numel, out, value);
  } else {
    strided_groups<1, kStridedK>(numel, num_dims, info, info + num_dims,
                                 [&](usize i0, int cnt, StridedCursor<1>& cur) {
#pragma unroll
                                   for (int j = 0; j < kStridedK; ++j) {
                                     if (j < cnt) {
                                       out[cur.off[0]] = value;
                                       if (j + 1 < cnt) cur.next(i0 + j + 1);
                                     }
                                   }
                                 });
  }
}

}  // namespace pk

#define PK_FILL_ALL(T, SFX)                                                                                   \
  extern "C" __global__ PK_BOUNDS void fill_##SFX(T* buf, T value, pk::usize numel) {                                \
    if (pk::idle_block()) return;                                                                           \
    pk::contiguous_fill(numel, buf, value);                                                                 \
  }                                                                                                         \
  extern "C" __global__ PK_BOUNDS void copy2d_##SFX(const T* src, T* dst, pk::u32 d1, pk::u32 d2, pk::u32 src_s,     \
                                          pk::u32 dst_s) {                                                  \
    pk::copy2d_impl<T>(src, dst, d1, d2, src_s, dst_s);                                                     \
  }                                                                                                         \
  extern "C" __global__ PK_BOUNDS void const_set_##SFX(pk::usize numel, pk::usize num_dims, const pk::usize* info, \
                                             T value, T* out) {                                             \
    pk::const_set_impl<T>(numel, num_dims, info, value, out);                                               \
  }

PK_FILL_ALL(pk::u8, u8)
PK_FILL_ALL(pk::u32, u32)
PK_FILL_ALL(pk::i64, i64)
PK_FILL_ALL(pk::f16, f16)
PK_FILL_ALL(pk::bf16, bf16)
PK_FILL_ALL(pk::f32, f32)
PK_FILL_ALL(pk::f64, f64)
PK_FILL_ALL(pk::f8e4m3, f8_e4m3)
