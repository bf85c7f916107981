// where_I_T(size_t numel, size_t num_dims, const size_t* info, const I* ids,
//           const T* t, const T* f, T* out): out[i] = ids[..] != 0 ? t[..] : f[..]
// info = [dims, cond_strides, t_strides, f_strides] (always provided).
// I in u8 u32 i64 x T in u8 u32 i64 f16 bf16 f32 f64 fp8_e4m3; fp8 also I in i16 i32.
// Values are copied bit for bit.
#include "common.h"

namespace pk {

template <class I, class T>
PK_DEV void where_impl(usize numel, usize num_dims, const usize* info, const I* ids, const T* t, const T* f,
                       T* out) {
  if (idle_block()) return;
  const usize* dims = info;
  const usize* s = info + num_dims;
  if (is_contiguous(num_dims, dims, s) && is_contiguous(num_dims, dims, s + num_dims) &&
      is_contiguous(num_dims, dims, s + 2 * num_dims)) {
    contiguous_map3(numel, ids, t, f, out, [](I c, T a, T b) { return c != I(0) ? a : b; });
  } else {
    strided_map<3, StridedK<I, T>::v>(
        numel, num_dims, dims, s, out,
        [&](usize, const usize(&off)[3]) { return Three<I, T, T>{ids[off[0]], t[off[1]], f[off[2]]}; },
        [](const Three<I, T, T>& v) { return v.a != I(0) ? v.b : v.c; });
  }
}

}  // namespace pk

#define PK_WHERE(I, IS, T, TS)                                                                                 \
  extern "C" __global__ PK_BOUNDS void where_##IS##_##TS(pk::usize numel, pk::usize num_dims, const pk::usize* info, \
                                               const I* ids, const T* t, const T* f, T* out) {           \
    pk::where_impl<I, T>(numel, num_dims, info, ids, t, f, out);                                           \
  }
#define PK_WHERE_ALL(I, IS)                 \
  PK_WHERE(I, IS, pk::u8, u8)               \
  PK_WHERE(I, IS, pk::u32, u32)             \
  PK_WHERE(I, IS, pk::i64, i64)             \
  PK_WHERE(I, IS, pk::f16, f16)             \
  PK_WHERE(I, IS, pk::bf16, bf16)           \
  PK_WHERE(I, IS, pk::f32, f32)             \
  PK_WHERE(I, IS, pk::f64, f64)             \
  PK_WHERE(I, IS, pk::f8e4m3, fp8_e4m3)

PK_WHERE_ALL(pk::u8, u8)
PK_WHERE_ALL(pk::u32, u32)
PK_WHERE_ALL(pk::i64, i64)
PK_WHERE(pk::i16, i16, pk::f8e4m3, fp8_e4m3)
PK_WHERE(pk::i32, i32, pk::f8e4m3, fp8_e4m3)
