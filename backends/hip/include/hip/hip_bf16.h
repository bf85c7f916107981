// CUDA mapping of <hip/hip_bf16.h>. backends/hip uses its own bf16 storage
// struct (common.h); this maps the HIP header for code that wants the vendor type.
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_bf16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include <cuda_bf16.h>
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;
