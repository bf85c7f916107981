// CUDA mapping of <hip/hip_bf16.h> (ROCm >= 6.0): as on HIP's NVIDIA platform the vendor
// type is NVIDIA's. Finite values round the same (RNE); NaN bits differ: ROCm's
// __float2bfloat16 keeps the payload's top bits (0x7fc00001 -> 0x7fc1, signaling NaNs stay
// NaN by setting bit 0), CUDA's returns the canonical 0x7fff. Tested in
// tests/test_hip_mapping.py; a port comparing NaN bits will differ on this level only.
// (The legacy struct hip_bfloat16 is a different type: hip_bfloat16.h.)
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_bf16.h is the CUDA mapping; on AMD use ROCm's own header"
#endif
#include "parity_cuda.h"  // the toolkit's <cuda_bf16.h>, past a shim port's shadow
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;
typedef __nv_bfloat16_raw __hip_bfloat16_raw;
typedef __nv_bfloat162_raw __hip_bfloat162_raw;
