// CUDA mapping of <hip/hip_bfloat16.h> (same as hip_bf16.h here).
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_bfloat16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include "hip_bf16.h"
