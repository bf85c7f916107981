// The CUDA toolkit's own cuda_fp16.h / cuda_bf16.h (and cuda_runtime.h), for the mapping headers.
// A shim port (docs/shim-ports.md) puts shadow headers of these names first on the include path,
// re-exporting HIP's; `#include <cuda_fp16.h>` would then reach the shadow, which includes
// <hip/hip_fp16.h>, which needs the real one: a cycle that leaves __half undefined. For such a
// port parity passes the toolkit's files by absolute path (-DPARITY_CUDA_FP16_H="/.../cuda_fp16.h"),
// so the mapping reaches them whatever the port puts first. Without the macros: the usual lookup.
#pragma once
#if defined(PARITY_CUDA_RUNTIME_H) && !defined(__CUDACC_RTC__)
#include PARITY_CUDA_RUNTIME_H
#endif
#ifdef PARITY_CUDA_FP16_H
#include PARITY_CUDA_FP16_H
#else
#include <cuda_fp16.h>
#endif
#ifdef PARITY_CUDA_BF16_H
#include PARITY_CUDA_BF16_H
#else
#include <cuda_bf16.h>
#endif
