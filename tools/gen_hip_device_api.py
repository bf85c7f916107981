"""Generate parity/data/hip_device_api.txt: the HIP device-API identifiers ROCm declares.

Run once per ROCm release worth tracking (here Debian's ROCm 5.2 headers):

    python3 tools/gen_hip_device_api.py [/usr/include/hip] > parity/data/hip_device_api.txt

It scans the public device headers for declared functions, types and macros of the HIP API
(names starting with __, hip, HIP_, atomic..., plus warpSize/half/half2), drops AMD-internal
helpers (__ocml_*, __ockl_*, __builtin_*, __hip_internal, _impl, include guards), and adds
CURRENT_ROCM: names of newer ROCm releases (6.x: hip_bf16.h, hip_fp8.h, the _sync warp
functions, half min/max...) that 5.2 lacks. parity.suite.hip_api.mapping_gap uses the list to tell a
gap in our mapping from a port's own undefined name.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HEADERS = [
    "hip_runtime.h", "hip_fp16.h", "hip_bfloat16.h", "hip_vector_types.h", "math_functions.h",
    "device_functions.h", "hip_cooperative_groups.h",
    "amd_detail/amd_device_functions.h", "amd_detail/amd_warp_functions.h",
    "amd_detail/amd_hip_atomic.h", "amd_detail/amd_hip_unsafe_atomics.h",
    "amd_detail/amd_hip_fp16.h", "amd_detail/amd_hip_runtime.h", "amd_detail/hip_ldg.h",
    "amd_detail/amd_hip_vector_types.h", "amd_detail/host_defines.h",
    "amd_detail/amd_math_functions.h", "amd_detail/hip_fp16_math_fwd.h",
]

# Declared by ROCm >= 6.0 (hip_bf16.h, hip_fp8.h, warp sync functions, fp16 additions).
CURRENT_ROCM = """
__hip_bfloat16 __hip_bfloat162 __hip_bfloat16_raw __hip_bfloat162_raw __float2bfloat16
__bfloat162float __float2bfloat16_rn __float2bfloat16_rz __floats2bfloat162_rn
__float22bfloat162_rn __bfloat1622float2 __bfloat16_as_ushort __ushort_as_bfloat16
__bfloat16_as_short __short_as_bfloat16 __low2bfloat16 __high2bfloat16 __halves2bfloat162
__bfloat162bfloat162 __hisinf __hisnan __hmax __hmin __hmax_nan __hmin_nan __habs __hneg
__hfma __hadd_rn __hsub_rn __hmul_rn __hdiv __hmax2 __hmin2 __habs2 __hneg2 __hfma2
__hip_fp8_e4m3 __hip_fp8_e5m2 __hip_fp8_e4m3_fnuz __hip_fp8_e5m2_fnuz __hip_fp8x2_e4m3
__hip_fp8x2_e5m2 __hip_fp8x2_e4m3_fnuz __hip_fp8x2_e5m2_fnuz __hip_fp8x4_e4m3
__hip_fp8x4_e5m2 __hip_fp8x4_e4m3_fnuz __hip_fp8x4_e5m2_fnuz __hip_fp8_storage_t
__hip_fp8x2_storage_t __hip_fp8x4_storage_t __hip_fp8_interpretation_t __hip_saturation_t
__HIP_E4M3 __HIP_E5M2 __HIP_E4M3_FNUZ __HIP_E5M2_FNUZ __HIP_NOSAT __HIP_SATFINITE
__hip_cvt_float_to_fp8 __hip_cvt_double_to_fp8 __hip_cvt_float2_to_fp8x2
__hip_cvt_double2_to_fp8x2 __hip_cvt_halfraw_to_fp8 __hip_cvt_halfraw2_to_fp8x2
__hip_cvt_bfloat16raw_to_fp8 __hip_cvt_bfloat16raw2_to_fp8x2 __hip_cvt_fp8_to_halfraw
__hip_cvt_fp8x2_to_halfraw2
__shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync __ballot_sync __any_sync
__all_sync __activemask __syncwarp __match_any_sync __match_all_sync __reduce_add_sync
__reduce_min_sync __reduce_max_sync __reduce_and_sync __reduce_or_sync __reduce_xor_sync
unsafeAtomicAdd unsafeAtomicMax unsafeAtomicMin safeAtomicAdd safeAtomicMax safeAtomicMin
hip_bfloat16 HIP_VERSION HIP_VERSION_MAJOR HIP_VERSION_MINOR HIP_VERSION_PATCH
__HIP_PLATFORM_NVIDIA__ __HIP_DEVICE_COMPILE__ __HIPCC__
warpSize wall_clock64
""".split()

NAME = r"(?:__\w+|hip\w+|HIP_\w+|atomic\w+|unsafeAtomic\w+|safeAtomic\w+|warpSize|half2?)"
DECL = [
    re.compile(rf"^\s*#\s*define\s+({NAME})\b", re.M),                       # macros
    re.compile(rf"\b(?:struct|union|class|enum)\s+({NAME})\s*[{{:;]"),        # types
    re.compile(rf"\btypedef\b[^;]*?\b({NAME})\s*;"),                          # typedefs
    re.compile(rf"\busing\s+({NAME})\s*="),
    # functions: a return type (word, *, &) then the name and '(' -- not a call after return/=
    re.compile(rf"(?:^|[\s;}}])(?:[\w:<>]+[\s*&]+)+?({NAME})\s*\(", re.M),
]
INTERNAL = re.compile(r"^(__ocml|__ockl|__llvm|__builtin|__hip_internal|__clang|__attribute__|__CUDA|"
                      r"__cplusplus|__GNUC|__has_|__declspec|__HIP_CLANG_ONLY__|__hip_ds|__hip_move_dpp|"
                      r"__hip_get|__hip_hc|__hip_device_heap|__hip_malloc|__hip_free|__hip_assert|"
                      r"__HOST_DEVICE__|__DEVICE__|__HIP_FP16_DECL|__hip_fp16|__hip_bf16_|__HIP_BF16_)"
                      r"|_impl\d*$|_H_*$|_H_INCLUDED$|^__[A-Z_]+_H__?$")
# Helpers of ROCm's own headers (macro machinery, vector-type internals, compiler builtins),
# and HIP_ENABLE_WARP_SYNC_BUILTINS / __HIP_PLATFORM_AMD__, which a port defines or tests
# rather than uses: never a mapping gap.
INTERNAL_NAMES = set("""
HIP_ENABLE_WARP_SYNC_BUILTINS HIP_vector_base HIP_vector_type __DEFINE_HCC_FUNC __DEF_FLOAT_FUN2I
__DEF_FUN1 __DEF_FUN2 __DEF_FUNI __HCC_ACCELERATOR__ __HIP_BlockDim __HIP_BlockIdx
__HIP_Coordinates __HIP_GridDim __HIP_OVERLOAD1 __HIP_OVERLOAD2 __HIP_PLATFORM_AMD__
__HIP_ThreadIdx __MAKE_VECTOR_TYPE__ __NATIVE_VECTOR__ __RETURN_TYPE __assertfail
__atomic_fetch_max __atomic_fetch_min __barrier __clamp_01 __fn __hip_enable_if __hip_img_chk__
__lastbit_u32_u64 __local_to_generic __make_mantissa __make_mantissa_base10
__make_mantissa_base16 __make_mantissa_base8 __test __work_group_barrier hipLaunchKernelGGLInternal
""".split())
STOP = {"return", "if", "else", "while", "for", "sizeof", "decltype", "static_assert"}


def scan(root: Path) -> set[str]:
    names: set[str] = set()
    for rel in HEADERS:
        p = root / rel
        if not p.is_file():
            continue
        text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", p.read_text(errors="replace"), flags=re.S)
        for rx in DECL:
            for m in rx.finditer(text):
                n = m.group(1)
                if n not in STOP and not INTERNAL.search(n) and len(n) > 3:
                    names.add(n)
    return names


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/usr/include/hip")
    names = (scan(root) | set(CURRENT_ROCM)) - INTERNAL_NAMES
    print("# HIP device-API identifiers ROCm declares (tools/gen_hip_device_api.py).")
    print(f"# Scanned: {root} (ROCm 5.2 here) + names of ROCm >= 6.0 listed in the script.")
    for n in sorted(names):
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
