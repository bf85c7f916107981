"""What an executor decides before a launch (parity/executors/preflight.py): signature drift is not
launched, a file that does not compile makes its kernels `compile-error` (never `missing`)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from parity.executors.preflight import compile_failure, not_found, signature_mismatch
from parity.run.cases import Case
from parity.suite.compile_cache import CompileError, CompileResult
from parity.run.engine import prepare_case
from parity.suite.scan import discover

ELU = "unary.elu/f32/contiguous/normal/s0@param=0.5"


def _suite(tmp_path: Path, text: str):
    (tmp_path / "unary.hip").write_text("#include <hip/hip_runtime.h>\n" + text)
    return discover(tmp_path)


def test_a_drifted_signature_is_not_launched(tmp_path: Path):
    suite = _suite(tmp_path, 'extern "C" __global__ void uelu_f32(float alpha, size_t numel, size_t num_dims, '
                             "const size_t* info, const float* inp, float* out) {}\n")
    launch = prepare_case(Case.parse(ELU)).launch
    r = signature_mismatch(suite, launch)
    assert r.status == "signature-mismatch"
    assert r.detail["expected_params"] == ["size_t", "size_t", "ptr", "f32", "ptr", "ptr"]
    assert r.detail["found_params"] == ["f32", "size_t", "size_t", "ptr", "ptr", "ptr"]
    assert "unary.hip:2" in r.message and "not launched" in r.message


def test_an_abi_identical_spelling_is_launched(tmp_path: Path):
    suite = _suite(tmp_path, 'extern "C" __global__ void uelu_f32(unsigned long long numel, size_t num_dims, '
                             "const size_t* info, float alpha, const float* inp, float* out) {}\n")
    assert signature_mismatch(suite, prepare_case(Case.parse(ELU)).launch) is None


EXP16 = "unary.exp/f16/contiguous/normal/s0"


def test_a_pointer_to_elements_of_another_width_is_not_launched(tmp_path: Path):
    """The ABI classes agree (every pointer is a pointer), but the f16 kernel reads and writes floats:
    the verdict `parity coverage` gives, not a launch that reads past its buffer."""
    suite = _suite(tmp_path, '#include <hip/hip_fp16.h>\nextern "C" __global__ void uexp_f16(size_t numel, '
                             "size_t num_dims, const size_t* info, const float* inp, float* out) {}\n")
    launch = prepare_case(Case.parse(EXP16)).launch
    assert launch.typed == ["size_t", "size_t", "const size_t*", "const f16*", "f16*"]
    r = signature_mismatch(suite, launch)
    assert r.status == "signature-mismatch"
    assert r.detail["expected_params"] == ["size_t", "size_t", "const size_t*", "const f16*", "f16*"]
    assert r.detail["found_params"] == ["size_t", "size_t", "const size_t*", "const f32*", "f32*"]
    assert ("#3: expected const f16*, suite has const f32* (2-byte elements, not 4); "
            "#4: expected f16*, suite has f32* (2-byte elements, not 4); not launched") in r.message
    assert "unary.hip:3: uexp_f16(size_t, size_t, const size_t*, const f32*, f32*)" in r.message


def test_an_info_array_of_32_bit_words_is_not_launched(tmp_path: Path):
    suite = _suite(tmp_path, 'extern "C" __global__ void uexp_f32(size_t numel, size_t num_dims, '
                             "const unsigned int* info, const float* inp, float* out) {}\n")
    r = signature_mismatch(suite, prepare_case(Case.parse("unary.exp/f32/contiguous/normal/s0")).launch)
    assert r.status == "signature-mismatch"
    assert "#2: expected const size_t*, suite has const u32* (8-byte elements, not 4)" in r.message


def test_a_pointer_of_the_same_width_spelled_otherwise_is_launched(tmp_path: Path):
    suite = _suite(tmp_path, 'extern "C" __global__ void uexp_f32(size_t numel, size_t num_dims, '
                             "const unsigned long* info, const int* inp, void* out) {}\n")
    assert signature_mismatch(suite, prepare_case(Case.parse("unary.exp/f32/contiguous/normal/s0")).launch) is None


def test_a_declared_kernel_is_told_its_own_pointees():
    from parity import profiles
    profiles.get(str(Path(__file__).parents[1] / "docs" / "examples" / "declared-port" / "hip" / "parity-kernels.toml"))
    launch = prepare_case(Case.parse("vecops.blas.scale_strided/f32/transposed/normal/s0@factor=3")).launch
    assert launch.typed is not None and [t for t in launch.typed if t.endswith("*")] == ["f32*", "f32*", "u64*", "u64*"]


def _failed(message: str) -> CompileResult:
    return CompileResult(False, "k", error=CompileError(message, [("x.hip", 7)]))


NVCC_OUT = ('x.hip(3): warning #177-D: variable "unused" was declared but never referenced\n'
            'x.hip(7): error: expected a ";"\n'
            '1 error detected in the compilation of "x.hip".\n')


def test_compile_error_shows_the_first_error_not_the_first_warning():
    r = compile_failure(Path("x.hip"), _failed(NVCC_OUT))
    assert r.status == "compile-error" and r.message == 'x.hip:7: error: expected a ";"'
    assert r.detail == {"source": "x.hip"}


def test_kernels_of_a_file_that_does_not_compile_are_compile_errors_not_missing(tmp_path: Path):
    suite = _suite(tmp_path, 'extern "C" __global__ void uexp_f32(size_t n) { broken }\n')
    src = tmp_path / "unary.hip"
    r = not_found("uexp_f32", suite, str(tmp_path), [(src, _failed(NVCC_OUT))])
    assert r.status == "compile-error" and r.detail["source"] == str(src)
    r = not_found("uneg_f32", suite, str(tmp_path), [(src, _failed(NVCC_OUT))])
    assert r.status == "missing" and "failed to compile" in r.message
    assert "closest defined: uexp_f32" in r.message


def test_a_rocm_identifier_the_mapping_lacks_is_parity_s_gap_not_the_port_s():
    out = 'x.hip(4): error: identifier "__fns32" is undefined\n1 error detected in the compilation of "x.hip".\n'
    r = compile_failure(Path("x.hip"), _failed(out), hip_mapping=True)
    assert r.status == "mapping-gap" and r.detail["mapping_gap"] == "__fns32"
    assert r.message.startswith("mapping-gap: __fns32") and "x.hip:4: error" in r.message
    assert compile_failure(Path("x.hip"), _failed(out)).status == "compile-error"      # AMD: the port's
    own = 'x.hip(4): error: identifier "my_helper" is undefined\n'
    assert compile_failure(Path("x.hip"), _failed(own), hip_mapping=True).status == "compile-error"


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_a_kernel_the_suite_cannot_serve_is_looked_up_once(tmp_path: Path, monkeypatch):
    """A port's thousands of `missing` cases: the verdict is decided once per kernel and run."""
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    good = Path(__file__).parent / "fixtures" / "suites" / "good"
    ex = HipOnNvidiaExecutor(good, arch="90", compiler="nvcc", cache_root=tmp_path)
    calls = []
    real = ex.locate
    monkeypatch.setattr(ex, "locate", lambda k: calls.append(k) or real(k))
    first, second = ex.prepare("utanh_f32"), ex.prepare("utanh_f32")
    assert first.status == second.status == "missing" and first.message == second.message
    assert calls == ["utanh_f32"]



@pytest.mark.gpu
def test_a_narrow_pointer_is_signature_mismatch_on_the_gpu_level(tmp_path: Path):
    """As users run it: the level's executor refuses the f16 kernel that takes floats, and launches
    the one whose pointers are right."""
    from parity.run.engine import run_cases
    from parity.run.levels import make
    (tmp_path / "unary.hip").write_text(
        '#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n'
        'extern "C" __global__ void uexp_f16(size_t numel, size_t num_dims, const size_t* info, '
        'const float* inp, float* out) { size_t i = blockIdx.x * blockDim.x + threadIdx.x; '
        'if (i < numel) out[i] = inp[i]; }\n'
        'extern "C" __global__ void uneg_f16(size_t numel, size_t num_dims, const size_t* info, '
        'const __half* inp, __half* out) { size_t i = blockIdx.x * blockDim.x + threadIdx.x; '
        'if (i < numel) out[i] = __hneg(inp[i]); }\n')
    level = make("hip-on-nvidia", tmp_path, None, case_timeout=60)
    try:
        rows = run_cases([Case.parse(EXP16), Case.parse("unary.neg/f16/contiguous/normal/s0")], level.executor)
    finally:
        level.executor.close()
    assert [r["verdict"] for r in rows] == ["signature-mismatch", "pass"], [r["message"][:300] for r in rows]
    assert "(2-byte elements, not 4)" in rows[0]["message"]


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed")
def test_a_narrow_pointer_is_signature_mismatch_on_amd_static_too(tmp_path: Path):
    """amd-static compared parameter lists by ABI class only: `const uint32_t *info` (one of the bugs
    ports ship) was `compiled`, exit 0, while coverage and the GPU level called it a mismatch."""
    from parity.run.engine import run_cases
    from parity.run.levels import make
    (tmp_path / "unary.hip").write_text(
        '#include <hip/hip_runtime.h>\n#include <stdint.h>\n'
        'extern "C" __global__ void uneg_f32(size_t numel, size_t num_dims, const uint32_t* info, '
        'const float* inp, float* out) { }\n'
        'extern "C" __global__ void uexp_f32(size_t numel, size_t num_dims, const size_t* info, '
        'const float* inp, float* out) { }\n')
    level = make("amd-static", tmp_path, None)
    level.executor.targets = ("gfx90a",)
    rows = run_cases([Case.parse("unary.neg/f32/contiguous/normal/s0"), Case.parse("unary.exp/f32/contiguous/normal/s0")],
                     level.executor)
    assert [r["verdict"] for r in rows] == ["signature-mismatch", "compiled"], [r["message"][:300] for r in rows]
    assert "uneg_f32(size_t, size_t, const u32*, const f32*, f32*) but the ABI passes (size_t, size_t, " \
           "const size_t*, const f32*, f32*)" in rows[0]["message"], rows[0]["message"]


def test_a_kernel_defined_only_in_cpp_form_is_missing_with_where_and_why(tmp_path: Path):
    """A declared kernel in a namespace (or a template) was `missing` with no word of where it is: the
    ABI finds kernels by their C names, and discovery reads extern "C" kernels only."""
    (tmp_path / "k.hip").write_text('#include <hip/hip_runtime.h>\nnamespace m {\n'
                                    '__global__ void scale_cpp(float* x) { x[0] = 1; }\n}\n'
                                    'extern "C" __global__ void other(float* x) {}\n')
    msg = not_found("scale_cpp", discover(tmp_path), "the suite", []).message
    assert msg.startswith(f"no kernel scale_cpp in the suite ({tmp_path / 'k.hip'}:3 has a kernel of that name that "
                          "discovery did not take: a C++ kernel (a namespace, a template, no extern \"C\") has a "
                          "mangled symbol"), msg
    assert "declare it extern \"C\"" in msg
    assert "C++ kernel" not in not_found("nothere", discover(tmp_path), "the suite", []).message


def test_a_kernel_only_in_a_file_the_build_does_not_compile_says_so(tmp_path: Path):
    """Candle's affine.cu kept beside a .hip port: `missing — declared at affine.cu:47 but absent from the
    compiled module: excluded by #if, or not extern "C"?`, of a file that was never compiled."""
    (tmp_path / "k.hip").write_text('extern "C" __global__ void other(float* x) {}\n')
    (tmp_path / "affine.cu").write_text('extern "C" __global__ void affine_u8(unsigned char* x) {}\n')
    s = discover(tmp_path)
    s.sources = [p for p in s.sources if Path(p).suffix == ".hip"]     # what a .hip suite's build compiles
    msg = not_found("affine_u8", s, "the suite", []).message
    assert msg.startswith(f"no kernel affine_u8 in the suite (declared at {tmp_path / 'affine.cu'}:1, a file the "
                          "port's build does not compile"), msg


def test_a_kernel_an_arch_if_leaves_out_for_amd_is_named_where_it_is(tmp_path):
    """Candle's `#if __CUDA_ARCH__ >= 800` around a macro-stamped bf16 kernel: hipcc's AMD pass
    leaves it out, so it is missing, and the message says where it is and why (it said only the
    closest name)."""
    from parity.executors.preflight import not_found
    from parity.suite.scan import discover
    (tmp_path / "affine.hip").write_text(
        '#include <hip/hip_runtime.h>\n#define OP(T, FN) extern "C" __global__ void FN(const size_t numel, T *out) { }\n'
        "#if __CUDA_ARCH__ >= 800\nOP(float, affine_bf16)\n#endif\nOP(float, affine_f32)\n")
    r = not_found("affine_bf16", discover(tmp_path), str(tmp_path), [])
    assert r.status == "missing" and f"({tmp_path / 'affine.hip'}:4 names it, but the sources read as hipcc's AMD " \
        "pass reads them (no __CUDA_ARCH__) define no such kernel" in r.message
