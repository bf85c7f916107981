// CUDA mapping of <hip/hip_fp16.h> (see hip_runtime.h in this folder).
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_fp16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include <cuda_fp16.h>
