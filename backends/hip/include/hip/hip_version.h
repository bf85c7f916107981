// CUDA mapping of <hip/hip_version.h>: the HIP API level the mapping follows (ROCm 6.4:
// OCP and FNUZ fp8, 64-bit _sync masks), for ports that gate features on HIP_VERSION.
#pragma once
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 4
#define HIP_VERSION_PATCH 0
#define HIP_VERSION_GITHASH ""
#define HIP_VERSION_BUILD_ID 0
#define HIP_VERSION_BUILD_NAME ""
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)
