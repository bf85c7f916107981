// Device-code mapping of the HIP names used by backends/hip onto CUDA, so the
// same .hip sources build with nvcc (-D__HIPCC__ -I backends/hip/include -x cu)
// and NVRTC. Not a general HIP-on-CUDA layer.
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_runtime.h is the CUDA mapping; on AMD use ROCm's own <hip/hip_runtime.h> (do not pass -I backends/hip/include)"
#endif

#if !defined(__CUDACC_RTC__)
#include <cuda_runtime.h>
#endif
// Pull in the fp16/bf16 headers before the shuffle macros below: they declare
// __shfl_* overloads of their own.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z

// HIP warp intrinsics take no mask; CUDA needs the _sync form.
#define __shfl(v, lane, ...) __shfl_sync(0xffffffffu, (v), (lane), ##__VA_ARGS__)
#define __shfl_xor(v, m, ...) __shfl_xor_sync(0xffffffffu, (v), (m), ##__VA_ARGS__)
#define __shfl_up(v, d, ...) __shfl_up_sync(0xffffffffu, (v), (d), ##__VA_ARGS__)
#define __shfl_down(v, d, ...) __shfl_down_sync(0xffffffffu, (v), (d), ##__VA_ARGS__)

// ---- wave64 emulation (issue #16): BEGIN -----------------------------------------
// With -DPARITY_WAVE64 (parity run --wave 64) a wavefront is 64 lanes: two NVIDIA
// warps. parity_wave64.h (#undef'ing then) redefines every wave-wide name; keep this
// block last so nothing above can redefine them with 32-lane semantics again.
#if defined(PARITY_WAVE64)
#include "parity_wave64.h"
#endif
// ---- wave64 emulation: END -------------------------------------------------------
