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
// __HIP__ (clang's "compiling the HIP language") stays undefined, as on HIP's NVIDIA platform.

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
#include "parity_cuda.h"  // <cuda_fp16.h>, <cuda_bf16.h>: the toolkit's, past a shim's shadows

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
#define __shfl_xor(v, m, ...) __hip_map_shfl_xor(0xffffffffu, (v), (m), ##__VA_ARGS__)
#define __shfl_up(v, d, ...) __shfl_up_sync(0xffffffffu, (v), (d), ##__VA_ARGS__)
#define __shfl_down(v, d, ...) __shfl_down_sync(0xffffffffu, (v), (d), ##__VA_ARGS__)

// A width that keeps every lane inside a 32-lane segment of its warp: a power of two, 1 ... 32
// (the 32-lane forms below, and parity_wave64.h's test for a shuffle within one warp).
__device__ __forceinline__ bool __hip_map_narrow(int width) {
  return width > 0 && width <= 32 && (width & (width - 1)) == 0;
}

// HIP's __shfl reads lane src_lane + (lane & ~(width-1)) with no modulo (amd_warp_functions.h),
// CUDA's reads src_lane % width of the segment: for src_lane >= width HIP reads a later
// segment. Reproduce HIP's index; one beyond the 32-lane warp wraps here, where a wave64
// would read lanes 32..63.
// For 0 <= src_lane < width (a power of two up to 32) both read lane src_lane of the segment: one
// SHFL.IDX with no lane arithmetic (the test folds where src_lane and width are constants).
template <class T>
__device__ __forceinline__ T __hip_map_shfl(unsigned mask, T var, int src_lane, int width = warpSize) {
  if (__hip_map_narrow(width) && (unsigned)src_lane < (unsigned)width)
    return __shfl_sync(mask, var, src_lane, width);
  unsigned int lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return __shfl_sync(mask, var, src_lane + (int)(lane & ~(unsigned)(width - 1)), warpSize);
}

// HIP's __shfl_xor reads lane ^ lane_mask unless that is beyond the lane's segment, then its own
// value (amd_warp_functions.h); CUDA's shfl.bfly keeps only 5 bits of the mask, so a mask >= 32
// reads another lane (measured: 0 ^ 63 read lane 31 on an H100).
// For lane_mask < 32 and a width of 1..32 (a power of two) that rule is shfl.bfly's own: lane ^ m
// beyond the segment's last lane gives the lane its own value, below its first reads that lane
// (PTX ISA, shfl.sync .bfly: j = lane ^ b, valid while j <= maxLane). There one SHFL.BFLY does
// it, where the index form adds a LOP3, an ISETP and a SEL to every shuffle (60 SHFL.IDX in
// layernorm_f16): the test folds where the mask and width are constants or known under 32.
template <class T>
__device__ __forceinline__ T __hip_map_shfl_xor(unsigned mask, T var, int lane_mask, int width = warpSize) {
  if (__hip_map_narrow(width) && (unsigned)lane_mask < 32u)
    return __shfl_xor_sync(mask, var, lane_mask, width);
  unsigned int lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  int index = (int)lane ^ lane_mask;
  if (index >= (int)((lane + width) & ~(unsigned)(width - 1))) index = (int)lane;
  return __shfl_sync(mask, var, index, warpSize);
}

// ROCm's _sync variants take a 64-bit mask (static_assert'ed in amd_warp_sync_functions.h)
// because a wavefront has up to 64 lanes. An NVIDIA warp has 32, so lanes 32..63 of the
// mask name no thread: pass the low 32 bits. CUDA's own 32-bit-mask overloads remain, so
// ports that pass 0xffffffff keep compiling (with CUDA's __shfl_sync lane rule); ROCm would
// reject them. Only 8-byte integer masks select these (ROCm's static_assert); a 32-bit mask
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
  return __hip_map_shfl_xor(static_cast<unsigned>(mask), var, lane_mask, width);
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

// __hip_atomic_* are clang builtins that ROCm's headers and some ports call directly. Here:
// CUDA's device-scope atomics; any order but relaxed adds __threadfence() on both sides. The
// scope argument is accepted and not narrowed (device scope is at least as strong, except
// __HIP_MEMORY_SCOPE_SYSTEM, which gets no host-visible ordering here).
#define __HIP_MEMORY_SCOPE_SINGLETHREAD 1
#define __HIP_MEMORY_SCOPE_WAVEFRONT 2
#define __HIP_MEMORY_SCOPE_WORKGROUP 3
#define __HIP_MEMORY_SCOPE_AGENT 4
#define __HIP_MEMORY_SCOPE_SYSTEM 5
#ifndef __ATOMIC_RELAXED  // predefined by GCC/clang; not under NVRTC
#define __ATOMIC_RELAXED 0
#define __ATOMIC_CONSUME 1
#define __ATOMIC_ACQUIRE 2
#define __ATOMIC_RELEASE 3
#define __ATOMIC_ACQ_REL 4
#define __ATOMIC_SEQ_CST 5
#endif
__device__ __forceinline__ void __hip_map_fence(int order) {
  if (order != __ATOMIC_RELAXED) __threadfence();
}
#define __HIP_MAP_RMW(name, cuda)                                              \
  template <class T>                                                           \
  __device__ __forceinline__ T name(T* p, T v, int order, int /*scope*/) {     \
    __hip_map_fence(order);                                                    \
    T old = cuda(p, v);                                                        \
    __hip_map_fence(order);                                                    \
    return old;                                                                \
  }
__HIP_MAP_RMW(__hip_atomic_fetch_add, atomicAdd)
__HIP_MAP_RMW(__hip_atomic_fetch_and, atomicAnd)
__HIP_MAP_RMW(__hip_atomic_fetch_or, atomicOr)
__HIP_MAP_RMW(__hip_atomic_fetch_xor, atomicXor)
__HIP_MAP_RMW(__hip_atomic_fetch_max, atomicMax)
__HIP_MAP_RMW(__hip_atomic_fetch_min, atomicMin)
__HIP_MAP_RMW(__hip_atomic_exchange, atomicExch)
#undef __HIP_MAP_RMW
template <class T>
__device__ __forceinline__ T __hip_atomic_load(T* p, int order, int /*scope*/) {
  T v = *const_cast<volatile T*>(p);
  __hip_map_fence(order);
  return v;
}
template <class T>
__device__ __forceinline__ void __hip_atomic_store(T* p, T v, int order, int /*scope*/) {
  __hip_map_fence(order);
  *const_cast<volatile T*>(p) = v;
}
template <class T>
__device__ __forceinline__ bool __hip_atomic_compare_exchange_strong(T* p, T* expected, T desired,
                                                                     int order, int, int) {
  __hip_map_fence(order);
  T seen = atomicCAS(p, *expected, desired);
  __hip_map_fence(order);
  bool ok = seen == *expected;
  *expected = seen;
  return ok;
}
// ROCm's deprecated no-return add.
__device__ __forceinline__ void atomicAddNoRet(float* p, float v) { atomicAdd(p, v); }

// ------------------------------------------------------------- other HIP device functions
#ifdef __CUDA_ARCH__  // feature flags, as HIP's NVIDIA platform sets them
#define __HIP_ARCH_HAS_GLOBAL_INT32_ATOMICS__ 1
#define __HIP_ARCH_HAS_GLOBAL_FLOAT_ATOMIC_EXCH__ 1
#define __HIP_ARCH_HAS_SHARED_INT32_ATOMICS__ 1
#define __HIP_ARCH_HAS_SHARED_FLOAT_ATOMIC_EXCH__ 1
#define __HIP_ARCH_HAS_FLOAT_ATOMIC_ADD__ 1
#define __HIP_ARCH_HAS_GLOBAL_INT64_ATOMICS__ 1
#define __HIP_ARCH_HAS_SHARED_INT64_ATOMICS__ 1
#define __HIP_ARCH_HAS_DOUBLES__ 1
#define __HIP_ARCH_HAS_WARP_VOTE__ 1
#define __HIP_ARCH_HAS_WARP_BALLOT__ 1
#define __HIP_ARCH_HAS_WARP_SHUFFLE__ 1
#define __HIP_ARCH_HAS_WARP_FUNNEL_SHIFT__ 1
#define __HIP_ARCH_HAS_THREAD_FENCE_SYSTEM__ 1
#define __HIP_ARCH_HAS_SYNC_THREAD_EXT__ 1
#define __HIP_ARCH_HAS_SURFACE_FUNCS__ 1
#define __HIP_ARCH_HAS_3DGRID__ 1
#define __HIP_ARCH_HAS_DYNAMIC_PARALLEL__ 1
#endif
typedef int hipLaunchParm;

// Bit-field extract/insert: offset and width taken mod 32 (64), width 0 extracts 0 (ROCm).
__device__ __forceinline__ unsigned int __bitextract_u32(unsigned int src, unsigned int off, unsigned int width) {
  off &= 31;
  width &= 31;
  return width == 0 ? 0u : (src << (32 - off - width)) >> (32 - width);
}
__device__ __forceinline__ unsigned long long __bitextract_u64(unsigned long long src, unsigned int off, unsigned int width) {
  off &= 63;
  width &= 63;
  return width == 0 ? 0ull : (src << (64 - off - width)) >> (64 - width);
}
__device__ __forceinline__ unsigned int __bitinsert_u32(unsigned int dst, unsigned int src, unsigned int off, unsigned int width) {
  off &= 31;
  width &= 31;
  unsigned int m = (1u << width) - 1u;
  return (dst & ~(m << off)) | ((src & m) << off);
}
__device__ __forceinline__ unsigned long long __bitinsert_u64(unsigned long long dst, unsigned long long src, unsigned int off, unsigned int width) {
  off &= 63;
  width &= 63;
  unsigned long long m = (1ull << width) - 1ull;
  return (dst & ~(m << off)) | ((src & m) << off);
}
// Lane masks over the active lanes (ROCm: ballot(1) & mask); 64-bit, high half 0 here.
#define __HIP_MAP_LANEMASK(name, reg)                                      \
  __device__ __forceinline__ unsigned long long name() {                   \
    unsigned int m;                                                        \
    asm("mov.u32 %0, %%" reg ";" : "=r"(m));                              \
    return (unsigned long long)(m & __activemask());                       \
  }
__HIP_MAP_LANEMASK(__lanemask_lt, "lanemask_lt")
__HIP_MAP_LANEMASK(__lanemask_gt, "lanemask_gt")
__HIP_MAP_LANEMASK(__lanemask_eq, "lanemask_eq")
#undef __HIP_MAP_LANEMASK
// mbcnt: popcount of the mask bits below this lane (low / high 32 lanes) plus y; ports use
// __mbcnt_hi(~0u, __mbcnt_lo(~0u, 0)) as the lane id.
__device__ __forceinline__ unsigned int __mbcnt_lo(unsigned int x, unsigned int y) {
  unsigned int lt;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  return __popc(x & lt) + y;
}
__device__ __forceinline__ unsigned int __mbcnt_hi(unsigned int, unsigned int y) { return y; }
// Hardware ids and clocks. __smid: the SM here (ROCm packs CU and SE ids). wall_clock64:
// nanoseconds (%globaltimer) here, ROCm counts at a device-specific constant rate.
__device__ __forceinline__ unsigned int __smid(void) {
  unsigned int r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ long long int __clock64() { return (long long int)clock64(); }
__device__ __forceinline__ long long int __clock() { return (long long int)clock64(); }
__device__ __forceinline__ long long int wall_clock64() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return (long long int)t;
}
__device__ __forceinline__ void __named_sync(int, int) { __syncthreads(); }
// The dynamic shared memory base (ROCm: __get_dynamicgroupbaseptr / HIP_DYNAMIC_SHARED).
__device__ __forceinline__ void* __get_dynamicgroupbaseptr() {
  extern __shared__ unsigned char __hip_map_dyn_smem[];
  return __hip_map_dyn_smem;
}
__device__ __forceinline__ void* __amdgcn_get_dynamicgroupbaseptr() { return __get_dynamicgroupbaseptr(); }

// Like ROCm's, this header does not define half/half2: include <hip/hip_fp16.h>.

// ---- wave64 emulation (issue #16): BEGIN -----------------------------------------
// With -DPARITY_WAVE64 (parity run --wave 64) a wavefront is 64 lanes: two NVIDIA
// warps. parity_wave64.h (#undef'ing then) redefines every wave-wide name; keep this
// block last so nothing above can redefine them with 32-lane semantics again.
#if defined(PARITY_WAVE64)
#include "parity_wave64.h"
#endif
// ---- wave64 emulation: END -------------------------------------------------------
// Shim ports: CUDA-only names the port's shim defines for AMD (parity_shim_port.h); last, after
// every CUDA header.
#if defined(PARITY_SHIM_PORT)
#include "parity_shim_port.h"
#endif
