// Shim ports on hip-on-nvidia (-DPARITY_SHIM_PORT; docs/shim-ports.md): CUDA sources compiled as HIP
// through the port's shim. The shim supplies, for AMD, intrinsics CUDA has and ROCm's HIP lacks
// (16-bit atomicAdd, __dp4a, __vsubss4, bf16 __hmax_nan). Here CUDA's own would either clash with the
// shim's definitions or silently win overload resolution, and the shim's fallbacks (what runs on
// AMD, where a shim's bugs live) would never run. So those names are renamed after CUDA's headers:
// the shim's definitions and the kernels' calls get the new name alike, and only the overloads
// ROCm declares (amd_hip_atomic.h, hip_fp16.h) forward to CUDA's. A kernel that calls one the shim
// does not define fails to compile, as it does with hipcc. Included last by hip_runtime.h.
#pragma once

__device__ __forceinline__ int __parity_hip_atomicAdd(int* p, int v) { return atomicAdd(p, v); }
__device__ __forceinline__ unsigned int __parity_hip_atomicAdd(unsigned int* p, unsigned int v) { return atomicAdd(p, v); }
__device__ __forceinline__ unsigned long long __parity_hip_atomicAdd(unsigned long long* p, unsigned long long v) {
  return atomicAdd(p, v);
}
__device__ __forceinline__ unsigned long __parity_hip_atomicAdd(unsigned long* p, unsigned long v) {
  static_assert(sizeof(unsigned long) == sizeof(unsigned long long), "LP64");
  return (unsigned long)atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
__device__ __forceinline__ float __parity_hip_atomicAdd(float* p, float v) { return atomicAdd(p, v); }
__device__ __forceinline__ double __parity_hip_atomicAdd(double* p, double v) { return atomicAdd(p, v); }
__device__ __forceinline__ __half __parity_hip_hmax_nan(__half a, __half b) { return __hmax_nan(a, b); }
__device__ __forceinline__ __half __parity_hip_hmin_nan(__half a, __half b) { return __hmin_nan(a, b); }

#define atomicAdd __parity_hip_atomicAdd
#define __hmax_nan __parity_hip_hmax_nan
#define __hmin_nan __parity_hip_hmin_nan
// No HIP overload at all: the shim must define them (the names say so in a compile error).
#define __dp4a __parity_hip_lacks___dp4a
#define __vsubss4 __parity_hip_lacks___vsubss4
