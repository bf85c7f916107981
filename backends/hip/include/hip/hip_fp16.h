// CUDA mapping of <hip/hip_fp16.h>: HIP's __half/__half2 and their intrinsics have
// CUDA's names and semantics (IEEE binary16, RNE conversions), so cuda_fp16.h serves;
// HIP adds the short names half/half2 (unless HIP_NO_HALF).
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_fp16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include "parity_cuda.h"  // the toolkit's <cuda_fp16.h>, past a shim port's shadow
#if !defined(HIP_NO_HALF)
typedef __half half;
typedef __half2 half2;
#endif

// ROCm's __hisinf2: 1.0 in each half that is +-inf, else 0.0 (CUDA has no half2 form).
__host__ __device__ inline __half2 __hisinf2(const __half2 x) {
  return __halves2half2(__float2half(__hisinf(__low2half(x)) ? 1.0f : 0.0f),
                        __float2half(__hisinf(__high2half(x)) ? 1.0f : 0.0f));
}
