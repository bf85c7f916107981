// Argsort: asort_asc_T / asort_desc_T(const T* x, uint32_t* dst, int ncols,
// int ncols_pad), T in u8 u32 i64 f32 f64 f16 bf16. One block per row (grid
// rows), block min(ncols_pad, 1024), dynamic shared memory ncols_pad*4 bytes:
// a bitonic network over ncols_pad indices, each thread handling columns
// tid, tid+blockDim.x, ... so rows longer than a block (up to the shared-memory
// limit) sort too. Indices >= ncols are padding and sort last; unstable.
#include "structured.h"

namespace pk {

template <class T, bool ASC>
PK_DEV void argsort(const T* x, u32* dst, int ncols, int ncols_pad) {
  typedef typename Num<T>::C C;
  extern __shared__ int dst_row[];
  const usize row = blockIdx.x;
  const T* xr = x + row * (usize)ncols;
  for (int c = threadIdx.x; c < ncols_pad; c += blockDim.x) dst_row[c] = c;
  __syncthreads();
  for (int k = 2; k <= ncols_pad; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      for (int c = threadIdx.x; c < ncols_pad; c += blockDim.x) {
        const int p = c ^ j;
        if (p <= c) continue;
        const int a = dst_row[c], b = dst_row[p];
        const bool a_pad = a >= ncols, b_pad = b >= ncols;
        bool swap;
        if (a_pad || b_pad) {
          swap = ((c & k) == 0) ? a_pad && !b_pad : b_pad && !a_pad;
        } else {
          const C xa = Num<T>::to_c(xr[a]), xb = Num<T>::to_c(xr[b]);
          const bool after = ASC ? xa > xb : xa < xb;
          const bool before = ASC ? xa < xb : xa > xb;
          swap = ((c & k) == 0) ? after : before;
        }
        if (swap) {
          dst_row[c] = b;
          dst_row[p] = a;
        }
      }
      __syncthreads();
    }
  }
  for (int c = threadIdx.x; c < ncols; c += blockDim.x) dst[row * (usize)ncols + c] = (u32)dst_row[c];
}

}  // namespace pk

#define PK_SORT(T, SFX)                                                                            \
  extern "C" __global__ void asort_asc_##SFX(const T* x, pk::u32* dst, int ncols, int ncols_pad) {  \
    pk::argsort<T, true>(x, dst, ncols, ncols_pad);                                                 \
  }                                                                                                  \
  extern "C" __global__ void asort_desc_##SFX(const T* x, pk::u32* dst, int ncols, int ncols_pad) { \
    pk::argsort<T, false>(x, dst, ncols, ncols_pad);                                                \
  }

PK_SORT(pk::u8, u8)
PK_SORT(pk::u32, u32)
PK_SORT(pk::i64, i64)
PK_SORT(pk::f32, f32)
PK_SORT(pk::f64, f64)
PK_SORT(pk::f16, f16)
PK_SORT(pk::bf16, bf16)
