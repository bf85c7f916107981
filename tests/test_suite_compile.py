"""Suite discovery, coverage, the compile cache, amd-static and the hip-on-nvidia compile path.

No GPU needed. Tests that compile need nvcc (hip-on-nvidia) or hipcc (amd-static) on PATH and
skip without them.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from parity.suite.compile_cache import cache_key, compile_source, error_locations
from parity.suite.coverage import coverage
from parity.ops import expected_kernels
from parity.ops.base import Arg, Launch
from parity.suite.elf import kernels_from_binary, unbundle
from parity.suite.scan import detailed_type, discover, normalize_type

SUITES = Path(__file__).parent / "fixtures" / "suites"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_hipcc = pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not on PATH")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PARITY_FORCE_RECOMPILE", raising=False)


# ------------------------------------------------------------------------------ discovery
def test_discover_literal_and_macro_kernels():
    s = discover(SUITES / "good")
    assert s.language == "hip"
    assert set(s.kernels) == {"uneg_f32", "ucopy_f32"}
    neg, cp = s.kernels["uneg_f32"], s.kernels["ucopy_f32"]
    assert neg.params == ["size_t", "size_t", "ptr", "ptr", "ptr"]
    assert cp.params == ["size_t", "size_t", "ptr", "ptr", "ptr"]      # through the ## macro
    assert neg.file.name == "good.hip" and neg.line == 4
    assert cp.line == 20                                              # the macro invocation


def test_discover_without_cpp_finds_literal_declarations():
    s = discover(SUITES / "good", use_cpp=False)
    assert "uneg_f32" in s.kernels and "ucopy_f32" not in s.kernels


@pytest.mark.parametrize("use_cpp", [True, False])
def test_discover_sees_past_attributes_and_unexpanded_macros(tmp_path, use_cpp):
    """A kernel behind an attribute parity's headers do not define, or with nested parentheses in
    its launch bounds, is still found (it was reported missing: 'unported')."""
    (tmp_path / "k.hip").write_text(
        '#include "not_here.h"\n'
        'extern "C" __global__ __hip_cuda_launch_bounds__(256, sizeof(float) == 2 ? 3 : 0) '
        'void k1(const float* x, int n) {}\n'
        'extern "C" __global__ void __launch_bounds__(256, (4))\n  k2(float* x) {}\n'
        'extern "C" __global__ KERNEL_BOUNDS(128) void k3(float* x) {}\n'
        'extern "C" __global__ MY_ATTR static void k4(int n);\n'
        'extern "C" __global__ void k5(float* x) __attribute__((noinline));\n'
        'extern "C" __global__ void k6(float* x) throw() {}\n'
        'extern "C" __global__ int not_a_kernel(int n) { return n; }\n'
        '#define DECL(n) extern "C" __global__ void n(float* x)\n'
        'DECL(k7) {}\n')
    s = discover(tmp_path, use_cpp=use_cpp)
    # without cpp a macro that names its kernel by a parameter declares none (its use is not seen)
    assert sorted(s.kernels) == ["k1", "k2", "k3", "k4", "k5", "k6"] + (["k7"] if use_cpp else [])
    assert s.kernels["k1"].params == ["ptr", "i32"] and s.kernels["k4"].params == ["i32"]


@pytest.mark.parametrize("ctype,want", [
    ("size_t numel", "size_t"), ("const size_t* info", "ptr"), ("const __half* inp", "ptr"),
    ("__half param", "f16"), ("__nv_bfloat16 v", "bf16"), ("uint8_t x", "u8"), ("float mul", "f32"),
    ("double add", "f64"), ("unsigned int d1", "u32"), ("int n_cols", "i32"), ("bool flag", "bool"),
    ("const float* __restrict__ src", "ptr"), ("__nv_fp8_e4m3 value", "f8_e4m3"), ("int64_t x", "i64"),
    ("unsigned long long n", "u64"), ("float arr[]", "ptr"),
])
def test_normalize_type(ctype, want):
    assert normalize_type(ctype) == want


@pytest.mark.parametrize("ctype,want", [
    ("const size_t *info", "const size_t*"), ("const uint32_t* info", "const u32*"), ("float *buf", "f32*"),
    ("const float* __restrict__ src", "const f32*"), ("float * const p", "f32*"), ("float arr[]", "f32*"),
    ("const unsigned char* a", "const u8*"), ("const void * vx", "const void*"), ("T **p", "T**"),
    ("const block_q8_1 *y", "const block_q8_1*"), ("unsigned long long n", "u64"), ("unsigned char", "u8"),
])
def test_pointer_parameters_keep_what_they_point_to(ctype, want):
    """The drift record and coverage see a pointer's pointee (`const size_t*` turning `const u32*` is a
    change) and its const; an unnamed `unsigned char` is u8, not an `unsigned` named `char`."""
    assert detailed_type(ctype) == want
    assert detailed_type("fptr x", {"fptr": "float *"}) == "f32*"


def test_normalize_type_follows_typedefs():
    tds = {"usize": "decltype(sizeof(0))", "f16": "__half", "f8e4m3": "fp8e4m3", "T": "pk::f16"}
    assert normalize_type("pk::usize numel", tds) == "size_t"
    assert normalize_type("pk::f16 param", tds) == "f16"
    assert normalize_type("pk::f8e4m3 param", tds) == "f8_e4m3"


# ------------------------------------------------------------------------------- coverage
def test_coverage_suggests_closest_name_for_misnamed_kernel():
    rows = {r.kernel: r for r in coverage(discover(SUITES / "misnamed"))}
    miss = rows["utanh_f32"]
    assert miss.status == "missing" and miss.suggestion == "utan_f32"
    extra = rows["utan_f32"]
    assert extra.status == "extra" and extra.suggestion == "utanh_f32"
    assert "unary.hip" in extra.where


def test_coverage_present_and_signature_mismatch():
    s = discover(SUITES / "good")
    rows = {r.kernel: r for r in coverage(s)}
    assert rows["uneg_f32"].status == "present"
    s.kernels["uneg_f32"].params = ["size_t", "ptr", "ptr", "ptr"]
    rows = {r.kernel: r for r in coverage(s)}
    assert rows["uneg_f32"].status == "signature-mismatch"
    assert "expected 5 parameters" in rows["uneg_f32"].suggestion


def test_a_pointer_to_pointers_is_no_element_pointer():
    """`const float* const* rows` for a declared `rows: in` (f32*) was skipped as an unknown pointee: present."""
    from parity.suite.coverage import compare_pointees
    assert compare_pointees(["f32*", "f32*", "u32"], ["const f32**", "f32*", "u32"]) == (
        ["#0: expected f32*, suite has const f32** (2 levels of pointer, not 1)"], [])
    assert compare_pointees(["ptr", "f32*"], ["f32**", "const f32*"]) == ([], [])   # unknown, and const-ness


def test_coverage_custom_expected():
    op, key = expected_kernels()["uneg_f32"]
    rows = coverage(discover(SUITES / "good"), expected={"uneg_f32": (op, key)})
    assert [(r.kernel, r.status) for r in rows] == [("uneg_f32", "present"), ("ucopy_f32", "extra")]


# ------------------------------------------------------------------------- compile cache
def test_cache_key_covers_source_headers_flags_toolchain_target(tmp_path):
    src, hdr = tmp_path / "a.hip", tmp_path / "a.h"
    src.write_text('#include "a.h"\n')
    hdr.write_text("// v1\n")
    base = cache_key(src, [hdr], ["-O3"], "tc 1", "gfx90a")
    assert base == cache_key(src, [hdr], ["-O3"], "tc 1", "gfx90a")
    hdr.write_text("// v2\n")
    assert base != cache_key(src, [hdr], ["-O3"], "tc 1", "gfx90a")
    hdr.write_text("// v1\n")
    assert base != cache_key(src, [hdr], ["-O2"], "tc 1", "gfx90a")
    assert base != cache_key(src, [hdr], ["-O3"], "tc 2", "gfx90a")
    assert base != cache_key(src, [hdr], ["-O3"], "tc 1", "gfx908")


def test_error_locations_gcc_and_nvcc_styles():
    text = ("a.hip:6:3: error: expected ';'\n"
            "b.hip(12): error: identifier \"__builtin_amdgcn_readfirstlane\" is undefined\n"
            "c.hip:3:1: warning: unused\n")
    assert error_locations(text) == [("a.hip", 6), ("b.hip", 12)]


def test_missing_compiler_is_an_error_result(tmp_path):
    src = tmp_path / "x.hip"
    src.write_text("")
    r = compile_source(src, ["no-such-compiler-xyz"], [])
    assert not r.ok and "not found" in r.error.message


def test_a_lane_compile_runs_at_a_lower_cpu_priority(tmp_path):
    """compile_source(nice=N): the compiler (and what it forks) runs N steps nicer than parity, so
    parity mutate's GPU runners are not starved by the lanes' compiles."""
    import os
    import sys
    cc = tmp_path / "cc"
    cc.write_text(f"#!{sys.executable}\nimport os, sys\n"         # (its --version answer: empty)
                  "if sys.argv[-1] != '--version': open(sys.argv[-1], 'w').write(str(os.nice(0)))\n")
    cc.chmod(0o755)
    src = tmp_path / "x.hip"
    for nice, body in ((0, ""), (10, "// nicer\n")):
        src.write_text(body)
        r = compile_source(src, [str(cc)], [], nice=nice)
        assert r.ok, r.text
        assert int(r.read().decode()) == min(19, os.nice(0) + nice)


def test_a_copy_of_a_suite_elsewhere_hits_the_originals_cache_entries(tmp_path):
    """The cache key holds the source's folder by content (its headers), not by path: parity mutate's
    slot copies compile only what a mutant changed; a changed header is a miss."""
    import sys
    cc = tmp_path / "cc"
    cc.write_text(f"#!{sys.executable}\nimport sys\nif sys.argv[-1] != '--version': open(sys.argv[-1], 'w').write('o')\n")
    cc.chmod(0o755)
    dirs = [tmp_path / "suite", tmp_path / "elsewhere" / "slot0", tmp_path / "slot1"]
    for d in dirs:
        d.mkdir(parents=True)
        (d / "k.hip").write_text('#include "common.h"\nint k;\n')
        (d / "common.h").write_text("int c;\n")
    (dirs[2] / "common.h").write_text("int c2;\n")
    got = [compile_source(d / "k.hip", [str(cc)], [f"-I{d}", "-O3"]) for d in dirs]
    assert [r.cached for r in got] == [False, True, False] and got[0].key == got[1].key != got[2].key


# ------------------------------------------------------------- hip-on-nvidia (compile only)
def _exe(name, **kw):
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    return HipOnNvidiaExecutor(SUITES / name, arch="90", compiler="nvcc", **kw)


@needs_nvcc
def test_nvcc_compile_and_cache_hit():
    ex = _exe("good")
    (src, first), = ex.compile_all().items()
    assert first.ok and not first.cached, first.error
    assert set(kernels_from_binary(first.binary)) == {"uneg_f32", "ucopy_f32"}
    (_, second), = _exe("good").compile_all().items()    # a fresh executor: served from disk
    assert second.ok and second.cached and second.key == first.key


@needs_nvcc
def test_nvcc_compile_error_verdict_has_file_and_line():
    src, err = _exe("compile_error").locate("uneg_f32")
    assert src is None and err.status == "compile-error"
    assert "broken.hip:6" in err.message or "broken.hip:7" in err.message
    res = _exe("compile_error").compile_all()
    (r,) = res.values()
    assert r.error.locations and r.error.locations[0][0].endswith("broken.hip")
    assert r.error.locations[0][1] in (6, 7)


@needs_nvcc
def test_nvcc_amd_only_intrinsic_is_compile_error_naming_it():
    src, err = _exe("amd_only").locate("warp_sum_f32")
    assert err is not None and err.status == "compile-error"
    assert "__builtin_amdgcn_readfirstlane" in err.message


@needs_nvcc
def test_missing_kernel_suggests_closest():
    src, err = _exe("misnamed").locate("utanh_f32")
    assert err.status == "missing" and "utan_f32" in err.message


# --------------------------------------------------------------------- packing and judging
def _launch(**bufs):
    return Launch("k", [Arg("size_t", 4, name="numel"), Arg("info", None, name="info"),
                        Arg("ptr", ("x", 1), name="x"), Arg("ptr", None, name="y"),
                        Arg("scalar", 1.5, dtype="bf16", name="p"), Arg("scalar", 2.0, dtype="f16", name="q"),
                        Arg("u32", 7, name="d"), Arg("ptr", ("out", 0), name="out")],
                  bufs, ("out",), (1, 1, 1), (32, 1, 1))


def test_arg_values_abi_order_and_types():
    from parity.executors.hip_nvidia import arg_values
    lau = _launch(x=np.zeros(5, np.float32), out=np.zeros(4, np.float32))
    vals = arg_values(lau, {"x": 0x1000, "out": 0x2000}.__getitem__, lambda a: 0)
    assert [type(v) for v in vals] == [np.uint64, np.uint64, np.uint64, np.uint64, np.uint16, np.float16,
                                       np.uint32, np.uint64]
    assert int(vals[2]) == 0x1000 + 4 and int(vals[3]) == 0 and int(vals[7]) == 0x2000
    assert int(vals[4]) == 0x3FC0                     # bf16 1.5 as raw bits
    assert float(vals[5]) == 2.0


def test_kernel_arg_buffer_alignment():
    from parity.executors.amd import ctypes_args, kernel_arg_buffer
    vals = [np.uint64(1), np.uint16(2), np.uint64(3), np.uint8(4), np.float32(1.0)]
    buf = kernel_arg_buffer(vals)
    assert len(buf) == 32
    assert buf[0:8] == (1).to_bytes(8, "little") and buf[8:10] == (2).to_bytes(2, "little")
    assert buf[16:24] == (3).to_bytes(8, "little") and buf[24] == 4
    assert buf[28:32] == np.float32(1.0).tobytes()
    assert [type(c).__name__ for c in ctypes_args([np.float16(1.0), np.uint64(5)])] == ["c_ushort", "c_ulong"]


def test_judge_detects_oob_and_clobber_without_gpu():
    from parity.host.marshal import guarded_image, judge_images
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    lau = _launch(x=x, out=out)
    hosts = {"x": x, "out": out}
    ok = {"x": guarded_image(x), "out": guarded_image(out)}
    assert judge_images(lau, hosts, ok).status == "ok"
    bad = {"x": guarded_image(x), "out": guarded_image(out)}
    bad["out"][256 + 16] ^= 1
    assert judge_images(lau, hosts, bad).status == "oob-write"
    clob = {"x": guarded_image(x), "out": guarded_image(out)}
    clob["x"][256] ^= 1
    r = judge_images(lau, hosts, clob)
    assert r.status == "input-clobbered" and "x:" in r.message


# ---------------------------------------------------------------------------- amd-static
@needs_hipcc
def test_amd_static_rows_for_good_suite():
    from parity.suite.amd_static import analyze
    rows = analyze(SUITES / "good", targets=("gfx90a", "gfx1030"))
    got = {(r.kernel, r.arch): r for r in rows}
    assert set(got) == {(k, a) for k in ("uneg_f32", "ucopy_f32") for a in ("gfx90a", "gfx1030")}
    for r in rows:
        assert r.status == "ok" and r.vgprs and r.sgprs and r.occupancy
        assert r.vgpr_spill == 0 and r.sgpr_spill == 0 and r.lds_bytes == 0 and r.scratch_bytes == 0
    assert got[("uneg_f32", "gfx90a")].wavefront == 64 and got[("uneg_f32", "gfx1030")].wavefront == 32
    assert got[("uneg_f32", "gfx90a")].agprs == 0


@needs_hipcc
def test_amd_static_compile_error_and_wavefront_notes():
    from parity.suite.amd_static import analyze
    rows = analyze(SUITES / "compile_error", targets=("gfx90a",))
    (r,) = rows
    assert r.status == "compile-error" and r.kernel == "uneg_f32" and "broken.hip:6" in r.message
    rows = analyze(SUITES / "amd_only", targets=("gfx90a",))
    (r,) = rows
    assert r.status == "ok", r.message                # AMD code compiles for AMD
    notes = "\n".join(r.notes)
    assert "literal lane count" in notes and "64-bit mask" in notes and "warp.hip:6" in notes


@needs_hipcc
def test_parity_compile_says_a_kernel_one_targets_build_leaves_out_is_missing_there(tmp_path):
    """A kernel under `#if !defined(__gfx1030__)` was `ok` on gfx1030 (from the source's scan) and the
    command exited 0, where `parity run --levels amd-static` said `missing` from its code object."""
    from click.testing import CliRunner

    from parity.cli.main import main
    from parity.suite.amd_static import analyze
    (tmp_path / "k.hip").write_text('#include <hip/hip_runtime.h>\n'
                                    'extern "C" __global__ void k_all(float* x) { x[0] = 1.f; }\n'
                                    '#if !defined(__gfx1030__)\n'
                                    'extern "C" __global__ void k_not1030(float* x) { x[0] = 2.f; }\n#endif\n')
    got = {(r.kernel, r.arch): r.status for r in analyze(tmp_path, targets=("gfx90a", "gfx1030"))}
    assert got == {("k_all", "gfx90a"): "ok", ("k_all", "gfx1030"): "ok", ("k_not1030", "gfx90a"): "ok",
                   ("k_not1030", "gfx1030"): "missing"}
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(tmp_path), "--amd-arch", "gfx90a,gfx1030"])
    assert r.exit_code == 1, r.output
    assert ("missing (gfx1030): k_not1030 is defined in k.hip but absent from its code object for gfx1030 "
            "(left out for this target by an #if on the arch, or a static kernel: internal linkage renames it)") in r.output


@needs_hipcc
def test_amd_static_reports_rejected_target():
    from parity.suite.amd_static import analyze
    rows = analyze(SUITES / "good", targets=("gfx90a", "gfx9999"))
    bad = [r for r in rows if r.arch == "gfx9999"]
    assert len(bad) == 1 and bad[0].status == "unavailable" and "gfx9999" in bad[0].message


def _hipcc_compiling_for(monkeypatch, *ok: str) -> None:
    """A hipcc (none runs) that compiles for the targets `ok` only, rejecting others as clang does."""
    from parity.suite import amd_static
    monkeypatch.setattr(amd_static, "hipcc", lambda: ["hipcc"])
    monkeypatch.setattr(amd_static, "accepted_targets", lambda targets, cache_root=None: {
        a: (True, "") if a in ok else (False, f"clang: error: invalid target ID '{a}'") for a in targets})


@pytest.mark.parametrize("arch,line", [
    ("gfx90", "unknown AMD target 'gfx90'; did you mean 'gfx90a' or 'gfx908' or 'gfx940'?"),
    ("gfx90a,gfx9999", "unknown AMD target 'gfx9999'; did you mean 'gfx909' or 'gfx90a' or 'gfx908'?"),
    ("vega", "unknown AMD target 'vega' (53 known: e.g. gfx90a, gfx908, gfx1030, gfx940)"),
    ("gfx90a,gfx942", "hipcc cannot compile for gfx942 here: clang: error: invalid target ID 'gfx942'"),
])
def test_compile_amd_arch_that_hipcc_rejects_is_exit_2_not_a_green_unavailable_row(monkeypatch, arch, line):
    """Before: `--amd-arch gfx9999` (or gfx90) was one `unavailable` row, "0 compile errors", exit 0:
    a CI gate with a typo stayed green. Now one line, exit 2, before compiling anything."""
    from click.testing import CliRunner

    from parity.cli.main import main
    from parity.suite import amd_static
    _hipcc_compiling_for(monkeypatch, "gfx90a")
    monkeypatch.setattr(amd_static, "analyze", lambda *a, **k: pytest.fail("compiled"))
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(SUITES / "good"), "--amd-arch", arch])
    assert r.exit_code == 2 and r.output == f"Error: --amd-arch: {line}\n", r.output


def test_compile_default_target_this_hipcc_lacks_stays_an_unavailable_row(monkeypatch):
    """Targets nobody named (the defaults) are not the user's mistake: one this hipcc lacks is an
    `unavailable` row, as before, and the others are compiled."""
    from click.testing import CliRunner

    from parity.cli.main import main
    from parity.suite import amd_static
    _hipcc_compiling_for(monkeypatch, "gfx90a", "gfx908", "gfx1030")
    seen = []
    monkeypatch.setattr(amd_static, "analyze", lambda suite, targets, **k: seen.append(targets) or [
        amd_static.StaticRow("*", "gfx940", "unavailable", message="hipcc rejects --offload-arch=gfx940"),
        amd_static.StaticRow("uneg_f32", "gfx90a", "ok", vgprs=8, sgprs=16, vgpr_spill=0, sgpr_spill=0)])
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(SUITES / "good")])
    assert r.exit_code == 0, r.output
    assert seen == [amd_static.DEFAULT_TARGETS]


@needs_hipcc
def test_compile_amd_arch_typo_with_a_real_hipcc_is_exit_2():
    from click.testing import CliRunner

    from parity.cli.main import main
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(SUITES / "good"), "--amd-arch", "gfx90"])
    assert r.exit_code == 2 and r.output.startswith("Error: --amd-arch: unknown AMD target 'gfx90'; did you mean "
                                                    "'gfx90a'") and r.output.count("\n") == 1, r.output


@needs_hipcc
def test_hsaco_symbols_through_unbundle():
    from parity.suite.amd_static import compile_for_arch
    r = compile_for_arch((SUITES / "good" / "good.hip"), "gfx90a")
    assert r.ok
    assert any("gfx90a" in t for t in unbundle(r.read()))
    assert kernels_from_binary(r.binary) == ["ucopy_f32", "uneg_f32"]


def test_compile_of_a_folder_with_no_kernel_is_exit_2_not_a_pass(monkeypatch, tmp_path):
    """`0 kernels x 0 targets: 0 compile errors`, exit 0, was a green compile gate over a wrong folder:
    no source is exit 2 before hipcc is looked for; sources without a kernel are exit 2 after."""
    from click.testing import CliRunner

    from parity.cli.main import main
    from parity.suite import amd_static
    for args in ((), ("--json",)):
        r = CliRunner().invoke(main, ["compile", "--hip-src", str(tmp_path), *args])
        assert (r.exit_code, r.output) == (2, f"Error: no HIP source in {tmp_path}: nothing to compile "
                                              "(is it the suite's folder?)\n")
    (tmp_path / "helpers.hip").write_text("__device__ int twice(int x) { return 2 * x; }\n")
    _hipcc_compiling_for(monkeypatch, "gfx90a")
    monkeypatch.setattr(amd_static, "analyze", lambda suite, targets, **k: [])
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(tmp_path), "--amd-arch", "gfx90a"])
    assert r.exit_code == 2 and r.output.endswith(
        f"Error: 1 HIP source(s) in {tmp_path}, no kernel in them: nothing compiled\n"), r.output


def test_a_hip_source_is_read_as_hipccs_amd_pass_reads_it(tmp_path):
    """`#ifdef __CUDA_ARCH__` picks a parameter type: hipcc for AMD does not define it, so the port
    ships the other branch; discovery read the CUDA one and called a real mismatch present."""
    (tmp_path / "k.hip").write_text(
        "#include <hip/hip_runtime.h>\n#ifdef __CUDA_ARCH__\n#define REAL float\n#else\n#define REAL double\n#endif\n"
        'extern "C" __global__ void uneg_f32(const size_t numel, const size_t num_dims, const size_t *info, '
        "const REAL *inp, REAL *out) {}\n")
    s = discover(tmp_path)
    assert s.kernels["uneg_f32"].types[3:] == ["const f64*", "f64*"]
    row = {r.kernel: r for r in coverage(s)}["uneg_f32"]
    assert row.status == "signature-mismatch", row


@needs_hipcc
def test_a_compile_leaves_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    """hipcc left an empty /tmp/<stem>-<hex> folder per compile (962 on this machine after an hour)."""
    from parity.suite.amd_static import compile_for_arch
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)              # (read TMPDIR again)
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "k.hip"
    src.write_text('#include <hip/hip_runtime.h>\nextern "C" __global__ void k(float* x) { x[0] = 1; }\n')
    assert compile_for_arch(src, "gfx90a").ok
    assert list(tmp.iterdir()) == []
