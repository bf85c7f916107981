"""parity.suite.hip_api: the ROCm device-API list, mapping-gap detection and first-error extraction.

The compiler outputs below are real: deliberately broken snippets compiled here with nvcc 13.0
(-D__HIPCC__ -I backends/hip/include -x cu) and Debian's hipcc (ROCm 5.2, --offload-arch=gfx90a).
NVRTC prints the same EDG messages as nvcc (`name(line): error: ...`); parity's NVRTC path
replaces the program name with the source path (hip_nvidia._nvrtc_log).
"""
from __future__ import annotations

from parity.suite.hip_api import first_error, hip_device_api, mapping_gap, undefined_identifiers

NVCC_GAP = '''gap.hip(4): error: identifier "hip_bfloat16" is undefined
    hip_bfloat16 x;
    ^

gap.hip(5): error: identifier "port_helper" is undefined
    o[0] = port_helper(o[1]);
           ^

2 errors detected in the compilation of "gap.hip".
'''

NVCC_PORT_BUG_AFTER_WARNING = '''port.hip(3): warning #177-D: variable "unused" was declared but never referenced
    int unused = 3;
        ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

port.hip(4): error: identifier "port_helper" is undefined
    o[0] = port_helper(o[1]);
           ^

1 error detected in the compilation of "port.hip".
'''

NVCC_FP8_GAP = '''fp8gap.hip(3): error: identifier "__hip_fp8_e4m3" is undefined
    __hip_fp8_e4m3 v = x;
    ^

1 error detected in the compilation of "fp8gap.hip".
'''

NVCC_NO_INSTANCE = '''/work/wt-mapping/backends/hip/include/hip/hip_runtime.h(94): error: no instance of overloaded function "__shfl_sync" matches the argument list
            argument types are: (unsigned int, S, int, const int)
    return __shfl_sync(mask, var, src_lane + (int)(lane & ~(unsigned)(width - 1)), warpSize);
           ^
/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include/sm_30_intrinsics.hpp(369): note #3326-D: function "__shfl_sync(unsigned int, int, int, int)" does not match because argument #2 does not match parameter
  static __attribute__((device)) __inline__ int __shfl_sync(unsigned mask, int var, int srcLane, int width) {
                                                ^
          detected during:
            instantiation of "T __hip_map_shfl(unsigned int, T, int, int) [with T=S]" at line 111
            instantiation of "__hip_map_m64<M, T>::type __shfl_sync(M, T, int, int) [with M=unsigned long long, T=S]" at line 5 of ovl.hip

1 error detected in the compilation of "ovl.hip".
'''

NVCC_MISSING_INCLUDE = '''pp.hip:2:10: fatal error: hip/hip_nonexistent.h: No such file or directory
    2 | #include <hip/hip_nonexistent.h>
      |          ^~~~~~~~~~~~~~~~~~~~~~~
compilation terminated.
'''

HIPCC_GAP = '''gap.hip:4:3: error: unknown type name 'hip_bfloat16'
  hip_bfloat16 x;
  ^
gap.hip:5:10: error: use of undeclared identifier 'port_helper'
  o[0] = port_helper(o[1]);
         ^
gap.hip:7:9: error: use of undeclared identifier '__shfl_sync'
  S t = __shfl_sync(0xffffffffu, s, 0);
        ^
3 errors generated when compiling for gfx90a.
'''

HIPCC_PORT_BUG = '''port.hip:4:10: error: use of undeclared identifier 'port_helper'
  o[0] = port_helper(o[1]);
         ^
1 error generated when compiling for gfx90a.
'''

HIPCC_MISSING_INCLUDE = '''pp.hip:2:10: fatal error: 'hip/hip_nonexistent.h' file not found
#include <hip/hip_nonexistent.h>
         ^~~~~~~~~~~~~~~~~~~~~~~
1 error generated when compiling for gfx90a.
'''

NVRTC_GAP = '''kernels/port.hip(12): error: identifier "__hip_cvt_float_to_fp8" is undefined
      out[i] = __hip_cvt_float_to_fp8(x, __HIP_SATFINITE, __HIP_E4M3);
               ^

1 error detected in the compilation of "kernels/port.hip".
'''


def test_api_list_has_rocm_52_and_current_names():
    api = hip_device_api()
    for name in ("__shfl", "__shfl_down", "__ballot", "__lane_id", "atomicAdd", "hipThreadIdx_x",
                 "HIP_DYNAMIC_SHARED", "hipLaunchKernelGGL", "__float2half", "hip_bfloat16", "half2",
                 "warpSize", "__launch_bounds__"):
        assert name in api, name
    for name in ("__hip_fp8_e4m3", "__hip_fp8_e5m2_fnuz", "__hip_bfloat16", "__shfl_sync",
                 "__activemask", "__hmax"):                 # ROCm >= 6 only
        assert name in api, name
    assert not any(n.startswith(("__ocml", "__ockl", "__builtin")) for n in api)
    assert "port_helper" not in api


def test_mapping_gap_nvcc_reports_the_rocm_name_not_the_port_one():
    assert undefined_identifiers(NVCC_GAP) == ["hip_bfloat16", "port_helper"]
    assert mapping_gap(NVCC_GAP) == "hip_bfloat16"
    assert mapping_gap(NVCC_FP8_GAP) == "__hip_fp8_e4m3"
    assert mapping_gap(NVRTC_GAP) == "__hip_cvt_float_to_fp8"


def test_port_bugs_and_overloads_are_not_gaps():
    assert mapping_gap(NVCC_PORT_BUG_AFTER_WARNING) is None
    assert mapping_gap(NVCC_NO_INSTANCE) is None
    assert mapping_gap(NVCC_MISSING_INCLUDE) is None
    assert mapping_gap(HIPCC_PORT_BUG) is None
    assert mapping_gap("") is None


def test_mapping_gap_reads_clang_wording():
    assert undefined_identifiers(HIPCC_GAP) == ["hip_bfloat16", "port_helper", "__shfl_sync"]
    assert mapping_gap(HIPCC_GAP) == "hip_bfloat16"


def test_first_error_nvcc_skips_warnings():
    assert first_error(NVCC_GAP) == 'gap.hip:4: error: identifier "hip_bfloat16" is undefined'
    assert first_error(NVCC_PORT_BUG_AFTER_WARNING) == 'port.hip:4: error: identifier "port_helper" is undefined'
    assert first_error(NVCC_NO_INSTANCE) == (
        '/work/wt-mapping/backends/hip/include/hip/hip_runtime.h:94: error: no instance of overloaded '
        'function "__shfl_sync" matches the argument list')


def test_first_error_preprocessor_and_clang():
    assert first_error(NVCC_MISSING_INCLUDE) == (
        "pp.hip:2: fatal error: hip/hip_nonexistent.h: No such file or directory")
    assert first_error(HIPCC_GAP) == "gap.hip:4: error: unknown type name 'hip_bfloat16'"
    assert first_error(HIPCC_MISSING_INCLUDE) == "pp.hip:2: fatal error: 'hip/hip_nonexistent.h' file not found"


def test_first_error_nvrtc_and_catastrophic():
    assert first_error(NVRTC_GAP) == 'kernels/port.hip:12: error: identifier "__hip_cvt_float_to_fp8" is undefined'
    cat = 'k.hip(2): catastrophic error: cannot open source file "hip/hip_fp8.h"\n\n1 catastrophic error detected'
    assert first_error(cat) == 'k.hip:2: catastrophic error: cannot open source file "hip/hip_fp8.h"'


def test_first_error_without_location_and_empty():
    assert first_error("nvcc fatal   : Unknown option '-foo'\n") == "nvcc fatal   : Unknown option '-foo'"
    assert first_error("x.hip(3): warning #177-D: unused\n") == ""
    assert first_error("") == ""


def test_committed_api_list_is_what_the_generator_writes():
    """parity/data/hip_device_api.txt == tools/gen_hip_device_api.py on this machine's ROCm headers."""
    import subprocess
    import sys
    from pathlib import Path

    import pytest
    if not Path("/usr/include/hip/hip_runtime.h").is_file():
        pytest.skip("no ROCm headers in /usr/include/hip")
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(repo / "tools" / "gen_hip_device_api.py")],
                         capture_output=True, text=True, check=True).stdout
    assert out == (repo / "parity" / "data" / "hip_device_api.txt").read_text()
