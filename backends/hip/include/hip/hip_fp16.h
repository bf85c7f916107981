// CUDA mapping of <hip/hip_fp16.h>: HIP's __half/__half2 and their intrinsics have
// CUDA's names and semantics (IEEE binary16, RNE conversions), so cuda_fp16.h serves;
// HIP adds the short names half/half2 (unless HIP_NO_HALF).
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_fp16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include <cuda_fp16.h>
#if !defined(HIP_NO_HALF)
typedef __half half;
typedef __half2 half2;
#endif
