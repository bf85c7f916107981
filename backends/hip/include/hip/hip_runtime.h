// Device-code mapping of HIP's public device API onto CUDA, so HIP sources build
// with nvcc (-D__HIPCC__ -I backends/hip/include -x cu) and NVRTC. This is HIP's
// own NVIDIA platform, written for the way ports use HIP (ROCm 6.x API level):
// names CUDA lacks are defined here; where HIP and CUDA differ in meaning (64-bit
// masks, __launch_bounds__, legacy hip_bfloat16, fp8) the HIP meaning wins and the
// difference is commented. A name ROCm declares but this mapping lacks is a
// `mapping-gap` (parity/hip_api.py), our bug, not the port's.
#pragma once
#ifndef __CUDACC__
#error "backends/hip/include/hip/hip_runtime.h is the CUDA mapping; on AMD use ROCm's own <hip/hip_runtime.h> (do not pass -I backends/hip/include)"
#endif

// Platform macros as hipcc sets them for the NVIDIA platform. __HIP_PLATFORM_AMD__
// stays undefined: ports use it to pick AMD-only builtins.
#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#ifndef __HIP_PLATFORM_NVCC__
#define __HIP_PLATFORM_NVCC__ 1
#endif
#if defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define __HIP_DEVICE_COMPILE__ 1
#endif
#ifndef __HIP__
// (__HIP__ is clang's "compiling HIP language" flag; it stays undefined here like on
// HIP's NVIDIA platform.)
#endif

#include "hip_version.h"

#if !defined(__CUDACC_RTC__)
#include <cuda_runtime.h>
#endif
// hipcc's hip_runtime.h brings <cstdint>; ports rely on it. NVRTC has no libc: parity adds
// backends/cuda_rtc (stdint.h stub) to its include path; without one, skip it.
#if !defined(__CUDACC_RTC__)
#include <stdint.h>
#elif defined(__has_include)
#if __has_include(<stdint.h>)
#include <stdint.h>
#endif
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

#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(X) &X
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#if !defined(__CUDACC_RTC__)
// Host side, nvcc only (NVRTC compiles no host code).
#define hipLaunchKernelGGL(kernelName, numBlocks, numThreads, memPerBlock, streamId, ...) \
  do {                                                                                     \
    (kernelName)<<<(numBlocks), (numThreads), (memPerBlock), (streamId)>>>(__VA_ARGS__);   \
  } while (0)
#endif

// __launch_bounds__(MAX_THREADS, MIN_WAVES_PER_EU): HIP's second argument is the
// minimum number of waves per SIMD (amdgpu_waves_per_eu), CUDA's is min resident
// blocks per SM; passing it through would cap registers on NVIDIA for a request that
// means something else (and can add spills the AMD build does not have). Keep the
// max block size only. __hip_cuda_launch_bounds__ is CUDA's meaning, for code that
// knows it is on NVIDIA (backends/hip/common.h).
#ifdef __launch_bounds__
#undef __launch_bounds__
#endif
#define __hip_map_first_arg(first, ...) first
#define __launch_bounds__(...) __attribute__((launch_bounds(__hip_map_first_arg(__VA_ARGS__, 0))))
#define __hip_cuda_launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))

// ------------------------------------------------------------------ warp functions
// HIP's non-_sync intrinsics take no mask (the whole wavefront); CUDA needs the _sync
// form. width defaults to warpSize on both (64 on CDNA, 32 here).
#define __shfl(v, lane, ...) __hip_map_shfl(0xffffffffu, (v), (lane), ##__VA_ARGS__)
#define __shfl_xor(v, m, ...) __shfl_xor_sync(0xffffffffu, (v), (m), ##__VA_ARGS__)
#define __shfl_up(v, d, ...) __shfl_up_sync(0xffffffffu, (v), (d), ##__VA_ARGS__)
#define __shfl_down(v, d, ...) __shfl_down_sync(0xffffffffu, (v), (d), ##__VA_ARGS__)

// HIP's __shfl reads lane src_lane + (lane & ~(width-1)) with no modulo (amd_warp_functions.h),
// CUDA's reads src_lane % width of the segment: for src_lane >= width HIP reads a later
// segment. Reproduce HIP's index; one beyond the 32-lane warp wraps here, where a wave64
// would read lanes 32..63.
template <class T>
__device__ __forceinline__ T __hip_map_shfl(unsigned mask, T var, int src_lane, int width = warpSize) {
  unsigned int lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return __shfl_sync(mask, var, src_lane + (int)(lane & ~(unsigned)(width - 1)), warpSize);
}

// ROCm's _sync variants take a 64-bit mask (static_assert'ed in amd_warp_sync_functions.h)
// because a wavefront has up to 64 lanes. An NVIDIA warp has 32, so lanes 32..63 of the
// mask name no thread: pass the low 32 bits. CUDA's own 32-bit-mask overloads remain, so
// ports that pass 0xffffffff keep compiling (with CUDA's __shfl_sync lane rule); ROCm would
// reject them. Only 8-byte integer masks select these (as ROCm's static_assert demands); a 32-bit mask
// goes straight to CUDA's overloads, so an unsupported T is a compile error, not a loop.
template <class M, class R> struct __hip_map_m64 {};
template <class R> struct __hip_map_m64<unsigned long long, R> { typedef R type; };
template <class R> struct __hip_map_m64<long long, R> { typedef R type; };
template <class R> struct __hip_map_m64<unsigned long, R> { typedef R type; };
template <class R> struct __hip_map_m64<long, R> { typedef R type; };
template <class M, class T>
__device__ __forceinline__ typename __hip_map_m64<M, T>::type
__shfl_sync(M mask, T var, int src_lane, int width = warpSize) {
  return __hip_map_shfl(static_cast<unsigned>(mask), var, src_lane, width);
}
template <class M, class T>
__device__ __forceinline__ typename __hip_map_m64<M, T>::type
__shfl_up_sync(M mask, T var, unsigned int delta, int width = warpSize) {
  return __shfl_up_sync(static_cast<unsigned>(mask), var, delta, width);
}
template <class M, class T>
__device__ __forceinline__ typename __hip_map_m64<M, T>::type
__shfl_down_sync(M mask, T var, unsigned int delta, int width = warpSize) {
  return __shfl_down_sync(static_cast<unsigned>(mask), var, delta, width);
}
template <class M, class T>
__device__ __forceinline__ typename __hip_map_m64<M, T>::type
__shfl_xor_sync(M mask, T var, int lane_mask, int width = warpSize) {
  return __shfl_xor_sync(static_cast<unsigned>(mask), var, lane_mask, width);
}
// HIP's ballot is a 64-bit lane mask (bit i = lane i); on a 32-lane warp the high half is 0.
template <class M>
__device__ __forceinline__ typename __hip_map_m64<M, unsigned long long>::type
__ballot_sync(M mask, int pred) {
  return __ballot_sync(static_cast<unsigned>(mask), pred);
}
template <class M>
__device__ __forceinline__ typename __hip_map_m64<M, int>::type __any_sync(M mask, int pred) {
  return __any_sync(static_cast<unsigned>(mask), pred);
}
template <class M>
__device__ __forceinline__ typename __hip_map_m64<M, int>::type __all_sync(M mask, int pred) {
  return __all_sync(static_cast<unsigned>(mask), pred);
}
// Non-_sync votes: HIP counts the lanes active at the call, hence __activemask(). CUDA
// still declares deprecated 32-bit __ballot/__any/__all (invalid on sm_70+): macros
// steer the HIP names to ours.
__device__ __forceinline__ unsigned long long __hip_map_ballot(int pred) {
  return __ballot_sync(__activemask(), pred);
}
__device__ __forceinline__ int __hip_map_any(int pred) { return __any_sync(__activemask(), pred); }
__device__ __forceinline__ int __hip_map_all(int pred) { return __all_sync(__activemask(), pred); }
#define __ballot(pred) __hip_map_ballot(pred)
#define __ballot64(pred) __hip_map_ballot(pred)
#define __any(pred) __hip_map_any(pred)
#define __all(pred) __hip_map_all(pred)
__device__ __forceinline__ unsigned int __lane_id() {
  unsigned int r;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
  return r;
}
// __activemask, __syncwarp, __popc/__popcll, __ffs/__ffsll, __clz/__clzll, __brev, __ldg,
// __syncthreads*, __threadfence*, warpSize and the math intrinsics come from CUDA as is.

// ------------------------------------------------------------------------- atomics
// ROCm has float/double atomicMax/atomicMin (CAS loops: NaN operands never replace and a
// NaN in memory is never replaced, since every comparison with NaN is false); CUDA has none.
__device__ __forceinline__ float atomicMax(float* addr, float val) {
  float old = *reinterpret_cast<volatile float*>(addr);
  while (old < val) {
    float seen = __uint_as_float(atomicCAS(reinterpret_cast<unsigned int*>(addr),
                                           __float_as_uint(old), __float_as_uint(val)));
    if (__float_as_uint(seen) == __float_as_uint(old)) break;
    old = seen;
  }
  return old;
}
__device__ __forceinline__ float atomicMin(float* addr, float val) {
  float old = *reinterpret_cast<volatile float*>(addr);
  while (val < old) {
    float seen = __uint_as_float(atomicCAS(reinterpret_cast<unsigned int*>(addr),
                                           __float_as_uint(old), __float_as_uint(val)));
    if (__float_as_uint(seen) == __float_as_uint(old)) break;
    old = seen;
  }
  return old;
}
__device__ __forceinline__ double atomicMax(double* addr, double val) {
  double old = *reinterpret_cast<volatile double*>(addr);
  while (old < val) {
    unsigned long long seen = atomicCAS(reinterpret_cast<unsigned long long*>(addr),
                                        (unsigned long long)__double_as_longlong(old),
                                        (unsigned long long)__double_as_longlong(val));
    if (seen == (unsigned long long)__double_as_longlong(old)) break;
    old = __longlong_as_double((long long)seen);
  }
  return old;
}
__device__ __forceinline__ double atomicMin(double* addr, double val) {
  double old = *reinterpret_cast<volatile double*>(addr);
  while (val < old) {
    unsigned long long seen = atomicCAS(reinterpret_cast<unsigned long long*>(addr),
                                        (unsigned long long)__double_as_longlong(old),
                                        (unsigned long long)__double_as_longlong(val));
    if (seen == (unsigned long long)__double_as_longlong(old)) break;
    old = __longlong_as_double((long long)seen);
  }
  return old;
}
#define __HIP_MAP_ATOMIC_ALIAS(name, base) \
  template <class T> __device__ __forceinline__ T name(T* addr, T val) { return base(addr, val); }
// unsafe/safe only choose AMD's FP atomic instruction vs a CAS loop; same value here.
__HIP_MAP_ATOMIC_ALIAS(unsafeAtomicAdd, atomicAdd)
__HIP_MAP_ATOMIC_ALIAS(safeAtomicAdd, atomicAdd)
__HIP_MAP_ATOMIC_ALIAS(unsafeAtomicMax, atomicMax)
__HIP_MAP_ATOMIC_ALIAS(unsafeAtomicMin, atomicMin)
__HIP_MAP_ATOMIC_ALIAS(safeAtomicMax, atomicMax)
__HIP_MAP_ATOMIC_ALIAS(safeAtomicMin, atomicMin)
#undef __HIP_MAP_ATOMIC_ALIAS

// hipcc pulls the fp16 header in with hip_runtime.h; so do we (half, half2).
#include "hip_fp16.h"
