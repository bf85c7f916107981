// NVRTC has no libc: the fixed-width integer names kernels include <stdint.h> for (LP64, as glibc).
// Used only on the NVRTC path of parity's `cuda` / `hip-on-nvidia` levels (-I backends/cuda_rtc).
#pragma once
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MAX 9223372036854775807L
#define UINT64_MAX 18446744073709551615UL
