"""Who owns a compile error (issue #30): an identifier ROCm declares in a header the file never
includes is the port's `compile-error`, naming the header (hipcc rejects the file too); only a name
the file does include the ROCm header of, and the mapping still lacks, is parity's `mapping-gap`.
And a message served from the compile cache names the folder compiled now, not the first one."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from parity.suite import compile_cache as cc
from parity.suite.compile_cache import CompileError, CompileResult
from parity.executors.preflight import compile_failure
from parity.suite.hip_api import hip_device_api, included_headers, rocm_headers

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
needs_hipcc = pytest.mark.skipif(not shutil.which("hipcc"), reason="hipcc not installed")

HALF_KERNEL = ('extern "C" __global__ void conv_f16(const half* x, half* y, size_t n) {\n'
               '  size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n'
               '  if (i < n) y[i] = x[i];\n'
               '}\n')
GAP_KERNEL = ('#include <hip/hip_runtime.h>\n'
              'extern "C" __global__ void k(unsigned* o) { o[0] = __fns32(0xffull, 0, 1); }\n')


def _failed(text: str) -> CompileResult:
    return CompileResult(False, "k", error=CompileError(text))


def _nvcc_undefined(src: Path, name: str, line: int = 1) -> str:
    return (f'{src}({line}): error: identifier "{name}" is undefined\n'
            f'1 error detected in the compilation of "{src}".\n')


# ------------------------------------------------------------------ which header, which includes
def test_rocm_header_of_half_types_and_the_runtime():
    assert rocm_headers("half") == ("hip/hip_fp16.h",)
    assert rocm_headers("__float2half") == ("hip/hip_fp16.h",)
    assert rocm_headers("__hip_bfloat16") == ("hip/hip_bf16.h",)
    assert rocm_headers("hip_bfloat16") == ("hip/hip_bfloat16.h",)
    assert rocm_headers("__hip_fp8_e4m3") == ("hip/hip_fp8.h",)
    assert rocm_headers("__hmax") == ("hip/hip_fp16.h", "hip/hip_bf16.h")      # ROCm 6 overloads it for bf16
    assert rocm_headers("__hadd") == ("hip/hip_runtime.h",)                      # the integer halving add
    assert rocm_headers("__shfl_xor_sync") == ("hip/hip_runtime.h",)
    assert rocm_headers("__fns32") == ("hip/hip_runtime.h",)


ROCM = Path("/usr/include/hip")


@pytest.mark.skipif(not (ROCM / "hip_runtime.h").is_file(), reason="ROCm headers not installed")
def test_rocm_header_table_matches_the_installed_rocm_headers():
    """Every name the installed hip_runtime.h / hip_fp16.h / hip_bfloat16.h brings (by the
    generator's own scan, following their includes) is placed under that header by the table."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
    try:
        import gen_hip_device_api as gen
    finally:
        sys.path.pop(0)
    inc = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)

    def brought_by(header: str) -> set[str]:
        seen, todo, names = set(), [ROCM / header], set()
        while todo:
            cur = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            text = cur.read_text(errors="replace")
            for spelled in inc.findall(text):
                for base in (cur.parent, ROCM.parent):
                    cand = (base / spelled).resolve()
                    if cand.is_file() and cand.is_relative_to(ROCM) and "nvidia" not in cand.as_posix() \
                            and "nvcc" not in cand.as_posix():
                        todo.append(cand)
                        break
            text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
            for rx in gen.DECL:
                names.update(m.group(1) for m in rx.finditer(text))
        return names & hip_device_api()

    runtime = brought_by("hip_runtime.h")
    wrong = {n: rocm_headers(n) for n in runtime if "hip/hip_runtime.h" not in rocm_headers(n)}
    for header in ("hip_fp16.h", "hip_bfloat16.h"):
        wrong |= {n: rocm_headers(n) for n in brought_by(header) - runtime
                  if f"hip/{header}" not in rocm_headers(n)}
    assert wrong == {}


def test_included_headers_follow_the_port_s_headers_and_rocm_s(tmp_path: Path):
    (tmp_path / "compat.h").write_text('#pragma once\n#include "hip/hip_fp8.h"\n')
    (tmp_path / "k.hip").write_text('#include <hip/hip_runtime.h>\n#include "compat.h"\n')
    # hip_fp8.h brings hip_fp16.h and hip_bf16.h, in ROCm as in the mapping that mirrors it
    assert {"hip/hip_runtime.h", "hip/hip_fp8.h", "hip/hip_fp16.h", "hip/hip_bf16.h"} <= \
        included_headers(tmp_path / "k.hip")
    (tmp_path / "bare.hip").write_text(HALF_KERNEL)
    assert included_headers(tmp_path / "bare.hip") == set()


# ------------------------------------------------------------------------------ the verdicts
def test_half_without_its_header_is_the_port_s_compile_error_not_a_mapping_gap(tmp_path: Path):
    src = tmp_path / "conv.hip"
    src.write_text(HALF_KERNEL)
    r = compile_failure(src, _failed(_nvcc_undefined(src, "half")), hip_mapping=True)
    assert r.status == "compile-error"
    assert r.message == (f'half is declared in <hip/hip_fp16.h>, which conv.hip does not include — '
                         f'{src}:1: error: identifier "half" is undefined')
    assert r.detail == {"source": str(src), "missing_include": ["hip/hip_fp16.h"]}


def test_a_header_the_port_force_includes_counts_as_included(tmp_path: Path):
    """A shim port's compat header (-include shim/hip_compat.h) brings hip_fp16.h to every Candle .cu: the
    advice `half is declared in <hip/hip_fp16.h>, which conv.hip does not include` was false there."""
    from parity.suite.port import Port
    src = tmp_path / "conv.hip"
    src.write_text(HALF_KERNEL)
    (tmp_path / "shim").mkdir()
    compat = tmp_path / "shim" / "hip_compat.h"
    compat.write_text("#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n")
    failed = _failed(_nvcc_undefined(src, "half"))
    port = Port(tmp_path, force_includes=(compat,))
    r = compile_failure(src, failed, port=port)
    assert r.status == "compile-error" and "does not include" not in r.message, r.message
    assert compile_failure(src, failed, hip_mapping=True, port=port).status == "mapping-gap"   # ours, then
    assert "does not include" in compile_failure(src, failed).message          # without the build line: as before


def test_hipcc_s_unknown_type_names_the_missing_header_too(tmp_path: Path):
    src = tmp_path / "conv.hip"
    src.write_text(HALF_KERNEL)
    out = (f"{src}:1:50: error: unknown type name 'half'\n"
           'extern "C" __global__ void conv_f16(const half* x, half* y, size_t n) {\n'
           "1 error generated when compiling for gfx90a.\n")
    r = compile_failure(src, _failed(out))
    assert r.status == "compile-error"
    assert r.message == (f"half is declared in <hip/hip_fp16.h>, which conv.hip does not include — "
                         f"{src}:1: error: unknown type name 'half'")


def test_a_name_of_two_headers_neither_included_names_both(tmp_path: Path):
    src = tmp_path / "minmax.hip"
    src.write_text('#include <hip/hip_runtime.h>\n__device__ float f(float a) { return __hmax(a, a); }\n')
    r = compile_failure(src, _failed(_nvcc_undefined(src, "__hmax", 2)), hip_mapping=True)
    assert r.status == "compile-error"
    assert r.message.startswith("__hmax is declared in <hip/hip_fp16.h> and <hip/hip_bf16.h>, "
                                "neither of which minmax.hip includes — ")


def test_a_name_the_file_includes_the_rocm_header_of_is_parity_s_mapping_gap(tmp_path: Path):
    src = tmp_path / "gap.hip"
    src.write_text(GAP_KERNEL)
    r = compile_failure(src, _failed(_nvcc_undefined(src, "__fns32", 2)), hip_mapping=True)
    assert r.status == "mapping-gap" and r.detail == {"source": str(src), "mapping_gap": "__fns32"}
    assert r.message == (f"mapping-gap: __fns32 (ROCm declares it in <hip/hip_runtime.h>, which gap.hip includes; "
                         f"parity's HIP-on-NVIDIA mapping does not: parity's bug, not the port's) — "
                         f'{src}:2: error: identifier "__fns32" is undefined')
    # on AMD (no mapping involved) the same output is the port's
    assert compile_failure(src, _failed(_nvcc_undefined(src, "__fns32", 2))).status == "compile-error"


def test_a_header_reached_through_the_port_s_own_header_counts_as_included(tmp_path: Path):
    (tmp_path / "compat.h").write_text("#pragma once\n#include <hip/hip_fp16.h>\n")
    src = tmp_path / "conv.hip"
    src.write_text('#include "compat.h"\n' + HALF_KERNEL)
    r = compile_failure(src, _failed(_nvcc_undefined(src, "half", 2)), hip_mapping=True)
    assert r.status == "mapping-gap" and r.detail["mapping_gap"] == "half"


def test_the_port_s_missing_include_outranks_a_gap_in_the_same_file(tmp_path: Path):
    src = tmp_path / "both.hip"
    src.write_text(GAP_KERNEL + "__device__ half h;\n")
    out = _nvcc_undefined(src, "__fns32", 2) + _nvcc_undefined(src, "half", 3)
    r = compile_failure(src, _failed(out), hip_mapping=True)
    assert r.status == "compile-error" and r.message.startswith("half is declared in <hip/hip_fp16.h>")


# ------------------------------------------------------------------------- real compilers
@needs_nvcc
def test_nvcc_through_the_mapping_blames_the_port_for_half_without_its_header(tmp_path: Path, monkeypatch):
    from parity.executors.hip_nvidia import HIP_MAPPING, CudaToolchain
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "conv.hip"
    src.write_text(HALF_KERNEL)
    res = CudaToolchain(arch="90", compiler="nvcc", include_dirs=[HIP_MAPPING]).compile(src)
    assert not res.ok
    r = compile_failure(src, res, hip_mapping=True)
    assert r.status == "compile-error"
    assert r.message == (f'half is declared in <hip/hip_fp16.h>, which conv.hip does not include — '
                         f'{src}:1: error: identifier "half" is undefined')


@needs_nvcc
def test_nvcc_through_the_mapping_reports_a_name_it_lacks_as_parity_s_gap(tmp_path: Path, monkeypatch):
    from parity.executors.hip_nvidia import HIP_MAPPING, CudaToolchain
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "gap.hip"
    src.write_text(GAP_KERNEL)
    res = CudaToolchain(arch="90", compiler="nvcc", include_dirs=[HIP_MAPPING]).compile(src)
    if res.ok:
        pytest.skip("the mapping defines __fns32 now (tests/test_hip_mapping.py KNOWN_GAPS)")
    r = compile_failure(src, res, hip_mapping=True)
    assert r.status == "mapping-gap" and r.detail["mapping_gap"] == "__fns32"


@needs_hipcc
def test_hipcc_blames_the_port_for_half_without_its_header(tmp_path: Path, monkeypatch):
    from parity.suite.amd_static import compile_for_arch
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "conv.hip"
    src.write_text(HALF_KERNEL)
    r = compile_failure(src, compile_for_arch(src, "gfx90a"))
    assert r.status == "compile-error"
    assert r.message.startswith(f"half is declared in <hip/hip_fp16.h>, which conv.hip does not include — "
                                f"{src}:1:")
    assert r.message.endswith("error: unknown type name 'half'")


# ---------------------------------------------------------------- cached messages, current paths
def test_a_cached_error_names_the_folder_compiled_now(tmp_path: Path):
    """The builder runs once (folder A); B, a copy, gets A's entry with B's paths."""
    calls = []

    def compile_in(folder: Path) -> CompileResult:
        src = folder / "k.hip"

        def build(out: Path):
            calls.append(folder)
            return 1, f"In file included from {folder}/k.hip:1:\n{folder}/common.h:4:2: error: boom\n"
        return cc.cached_build("ab" * 32, build, ["hipcc", f"-I{folder}", str(src), "-o", "<out>"],
                               root=tmp_path / "cache", source=src)
    a, b = tmp_path / "A", tmp_path / "B"
    first, second = compile_in(a), compile_in(b)
    assert calls == [a] and second.cached and not first.cached
    assert first.error.message == f"In file included from {a}/k.hip:1:\n{a}/common.h:4:2: error: boom"
    assert second.error.message == f"In file included from {b}/k.hip:1:\n{b}/common.h:4:2: error: boom"
    assert second.error.locations == [(f"{b}/common.h", 4)]
    assert second.log == f"In file included from {b}/k.hip:1:\n{b}/common.h:4:2: error: boom\n"
    assert second.command == ["hipcc", f"-I{b}", str(b / "k.hip"), "-o", "<out>"]


def test_an_error_cached_before_folder_free_entries_is_compiled_again(tmp_path: Path):
    calls = []

    def build(out: Path):
        calls.append(out)
        return 1, f"{tmp_path}/B/k.hip:1:1: error: boom\n"
    cc.cached_build("cd" * 32, build, root=tmp_path / "cache")                     # an old-style entry
    r = cc.cached_build("cd" * 32, build, root=tmp_path / "cache", source=tmp_path / "B" / "k.hip")
    assert len(calls) == 2 and not r.cached and r.error.message == f"{tmp_path}/B/k.hip:1:1: error: boom"


@needs_hipcc
def test_a_port_copied_to_a_second_folder_reports_errors_in_the_second(tmp_path: Path, monkeypatch):
    from parity.suite.amd_static import compile_for_arch
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    a = tmp_path / "A"
    a.mkdir()
    (a / "common.h").write_text("#pragma once\n__device__ int helper() { return undefined_thing; }\n")
    (a / "k.hip").write_text('#include <hip/hip_runtime.h>\n#include "common.h"\n'
                             'extern "C" __global__ void k(int* o) { o[0] = helper(); }\n')
    b = tmp_path / "B"
    shutil.copytree(a, b)
    first = compile_for_arch(a / "k.hip", "gfx90a")
    second = compile_for_arch(b / "k.hip", "gfx90a")
    assert not first.ok and not second.ok and second.cached and second.key == first.key
    assert str(a) not in second.error.message and str(a) not in second.log
    assert second.error.locations == [(f"{b}/common.h", 2)]
    r = compile_failure(b / "k.hip", second)
    assert r.message == f"{b}/common.h:2: error: use of undeclared identifier 'undefined_thing'"


def test_unincluded_rocm_names_are_found_where_hipcc_stops_and_not_in_variables(tmp_path):
    """The scan behind hip-on-nvidia's strictness: `__half` used in a header of the port's own
    that nothing includes <hip/hip_fp16.h> for; a variable named `half` is no use of the type."""
    from parity.suite.hip_api import unincluded_rocm_uses
    (tmp_path / "common.h").write_text("#include <hip/hip_runtime.h>\n// a half comment\n"
                                       "__device__ inline __half h(float x) { int half = 2; return x * half; }\n")
    (tmp_path / "k.hip").write_text('#include "common.h"\n')
    assert [(f.name, line, n) for f, line, n in unincluded_rocm_uses(tmp_path / "k.hip")] == [("common.h", 3, "__half")]
    (tmp_path / "ok.hip").write_text('#include <hip/hip_fp16.h>\n#include "common.h"\n')
    assert unincluded_rocm_uses(tmp_path / "ok.hip") == []


@needs_nvcc
def test_hip_on_nvidia_is_as_strict_as_hipcc_about_a_missing_fp16_include(tmp_path):
    """parity's mapping brings CUDA's half types with <hip/hip_runtime.h>; ROCm's does not. A port
    file that uses __half without <hip/hip_fp16.h> compiles with nvcc, yet hipcc rejects it: on
    hip-on-nvidia it is the same compile-error, naming the header (the #30 fault port's fill.hip)."""
    import sys
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "ports"))
    from make_inplace_fault import make
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    port = make(tmp_path / "port", missing_include=True)
    ex = HipOnNvidiaExecutor(port, arch="90", compiler="nvcc")
    src, res = ex.locate("fill_f16")
    assert src is None and res.status == "compile-error"
    assert res.message.startswith(f"__half is declared in <hip/hip_fp16.h>, which fill.hip does not include — "
                                  f"{port}/common.h:")
    assert ex.locate("affine_f32")[1] is None                # its own include: compiles and is found
