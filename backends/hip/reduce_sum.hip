// Atomic sums over dims: sum_<f32|f64|f16|bf16|u32> of Candle's reduce.cu (SUM_OP), written from
// the parameter list and the launch Candle's host issued for them (parity/ops/reduce_sum.py):
//   (size_t numel, size_t num_dims, size_t num_sum_dims,
//    const size_t* info /*[dims, strides, sum_dims_l, sum_dims_s] of the source*/,
//    const T* inp, T* out /*zeroed by the host*/)
// grid ceil(numel/1024) x 1024 threads, grid-stride over the source's logical elements: element i
// goes to out[dst(i)], dst(i) dropping the reduced dims (ascending) from i, by an atomic add.
// f32, f64, u32: the native atomicAdd. f16, bf16: a compare-and-swap loop on the aligned 32-bit
// word that holds the element (the other half is kept as it is), the add done in float and rounded
// once to T (RNE), as CUDA's atomicAdd(__half*) / atomicAdd(__nv_bfloat16*) round. No cross-lane
// operation: the same on 32- and 64-lane wavefronts.
#include "common.h"

namespace pk {
namespace red_sum {

PK_DEV void atomic_add(float* p, float v) { atomicAdd(p, v); }
PK_DEV void atomic_add(double* p, double v) { atomicAdd(p, v); }
PK_DEV void atomic_add(u32* p, u32 v) { atomicAdd(reinterpret_cast<unsigned int*>(p), (unsigned int)v); }

// The 16-bit value at p (f16 or bf16 bits) replaced by add(old): CAS on its 32-bit word.
template <class F> PK_DEV void atomic_update16(u16* p, F&& add) {
  const usize a = reinterpret_cast<usize>(p);
  unsigned int* w = reinterpret_cast<unsigned int*>(a & ~(usize)3);
  const unsigned int shift = (a & 2) ? 16u : 0u;
  unsigned int seen = *w, want;
  do {
    want = seen;
    const u16 old = (u16)((want >> shift) & 0xffffu);
    const u16 nw = add(old);
    const unsigned int next = (want & ~(0xffffu << shift)) | ((unsigned int)nw << shift);
    seen = atomicCAS(w, want, next);
  } while (seen != want);
}
PK_DEV void atomic_add(f16* p, f16 v) {
  const float x = __half2float(v);
  atomic_update16(reinterpret_cast<u16*>(p),
                  [x](u16 old) { return h_bits(__float2half(__half2float(h_from(old)) + x)); });
}
PK_DEV void atomic_add(bf16* p, bf16 v) {
  const float x = bf16_to_float(v);
  atomic_update16(reinterpret_cast<u16*>(p), [x](u16 old) {
    bf16 o;
    o.bits = old;
    return float_to_bf16(bf16_to_float(o) + x).bits;
  });
}

template <class T>
PK_DEV void sum_dims(usize numel, usize num_dims, usize num_sum_dims, const usize* info, const T* inp, T* out) {
  const usize* dims = info;
  const usize* strides = info + num_dims;
  const usize* sum_l = info + 2 * num_dims;
  const usize* sum_s = sum_l + num_sum_dims;
  const bool contiguous = is_contiguous(num_dims, dims, strides);
  for (usize i = (usize)blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += (usize)blockDim.x * gridDim.x) {
    const usize src = contiguous ? i : strided_index<usize>(i, num_dims, dims, strides);
    usize dst = i;
    for (usize k = 0; k < num_sum_dims; ++k) {
      const usize s = sum_s[k];
      dst = (dst / s / sum_l[k]) * s + dst % s;
    }
    atomic_add(out + dst, inp[src]);
  }
}

}  // namespace red_sum
}  // namespace pk

#define PK_SUM(T, SFX)                                                                                 \
  extern "C" __global__ void sum_##SFX(const pk::usize numel, const pk::usize num_dims,               \
                                       const pk::usize num_sum_dims, const pk::usize* info,           \
                                       const T* inp, T* out) {                                         \
    pk::red_sum::sum_dims<T>(numel, num_dims, num_sum_dims, info, inp, out);                          \
  }
PK_SUM(float, f32)
PK_SUM(double, f64)
PK_SUM(pk::f16, f16)
PK_SUM(pk::bf16, bf16)
PK_SUM(pk::u32, u32)
