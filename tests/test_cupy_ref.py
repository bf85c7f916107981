"""The `cupy` level (parity/executors/cupy_ref.py): kernel sources, the NVRTC -ftz rewrite, the
subnormal self-check and its gating, without a GPU; the kernels compiled by nvcc (CuPy's own
generated source) and their bodies run on the host against the CPU reference when nvcc is on
PATH; the level on the smoke sweep's elementwise cases on a GPU (`pytest -m gpu`)."""
from __future__ import annotations

import importlib.util
import re
import shutil
import struct
import subprocess
import types
from collections import Counter

import numpy as np
import pytest

from parity.executors import cupy_ref
from parity.executors.cupy_ref import (CT, FTZ_SENSITIVE, MARKER, NP_NAMES, SUBNORMAL_PROBE, CupyRefExecutor,
                                      install_ftz_rewrite, keep_subnormals, kernel_source, subnormal_verdict,
                                      supported, without_ftz)
from parity.run.cases import Case, Filters, load_sweep
from parity.core.compare import compare
from parity.run.engine import prepare_case, run_case, run_cases
from parity.core.numerics import scalar_to_dtype
from parity.ops import CATALOG

needs_cupy = pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy not installed")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None or importlib.util.find_spec("cupy") is None,
                                reason="nvcc not on PATH or CuPy not installed (the kernels are CuPy's)")
ELEMENTWISE = [name for name, op in CATALOG.items() if op.spec.elementwise]
REFERENCE = [(op, key) for op in CATALOG.values() if op.spec.elementwise for key in op.dtypes if not supported(op, key)]
C_OF = {NP_NAMES[k]: CT[k] for k in NP_NAMES}            # storage dtype name -> C type
SCALARS = ("p", "mul", "add")                            # the kernels' by-value parameters


def _params(spec: str) -> list[tuple[str, str]]:
    """ElementwiseKernel parameter list -> [(dtype name, variable)]."""
    return [tuple(p.split()) for p in spec.split(",")]


# ------------------------------------------------------------------------------- coverage
def test_every_elementwise_kernel_but_the_fill_family_has_an_elementwise_kernel():
    missing = {op.name for op in CATALOG.values() if op.spec.elementwise for k in op.dtypes if supported(op, k)}
    assert missing == {"fill.const_set", "fill.copy2d", "fill.fill"}
    assert "not in the CuPy reference" in supported(CATALOG["fill.const_set"], "bf16")
    assert cupy_ref.level_supported(CATALOG["fill.const_set"], "bf16") == ""    # array code instead
    assert "not in the CuPy reference" in supported(CATALOG["reduce.sum"], "f32")
    keys = {key for _, key in REFERENCE}
    assert {"bf16", "f8_e4m3", "f16-bf16", "f8_e4m3-u8", "u8-f8_e4m3", "i16-f8_e4m3"} <= keys
    assert len(REFERENCE) == 313


def test_narrow_floats_are_raw_bits_converted_by_nvidia_intrinsics():
    for op, key in REFERENCE:
        ins, outs, body, pre = kernel_source(op, key)
        assert pre.startswith(MARKER) and body.endswith(";"), (op.name, key)
        assert not re.search(r"\bfloat16\b", ins + outs + body), (op.name, key)   # not CuPy's half type
        for dt, _ in _params(ins) + _params(outs):
            assert dt in C_OF, (op.name, key, dt)
        parts = key.split("-")
        if op.family in ("unary", "binary", "affine", "cast") and op.root != "ucopy":
            if "bf16" in parts:
                assert "#include <cuda_bf16.h>" in pre and "bfloat16" in body, (op.name, key)
            if "f8_e4m3" in parts:
                assert "#include <cuda_fp8.h>" in pre and "__NV_E4M3" in body, (op.name, key)
    body = kernel_source(CATALOG["cast"], "f32-f8_e4m3")[2]
    assert "__nv_cvt_float_to_fp8(x0, __NV_SATFINITE, __NV_E4M3)" in body
    # Candle keeps the low byte of cvt.rzi.u32 (fp8 448 -> 0xc0), unlike NVIDIA's saturating operator
    assert "(unsigned int)v" in kernel_source(CATALOG["cast"], "f8_e4m3-u8")[2]
    assert "__hfma" in kernel_source(CATALOG["affine"], "bf16")[2]
    assert kernel_source(CATALOG["copy.ucopy"], "bf16")[:3] == ("uint16 x0", "uint16 y", "y = x0;")


# ------------------------------------------------------------------ flush-to-zero rewrite
def test_without_ftz_leaves_exactly_one_trailing_ftz_false():
    assert without_ftz(("-O3", "-ftz=true", "--ftz=true", "-arch=sm_90")) == ("-O3", "-arch=sm_90", "-ftz=false")
    assert without_ftz(()) == ("-ftz=false",)


def test_keep_subnormals_rewrites_only_the_reference_sources():
    seen = []

    def fake(source, options=(), arch=None, **kw):
        seen.append(tuple(options))
        return b"ptx", {}
    wrapped = keep_subnormals(fake)
    wrapped(f"{MARKER}\nk", ("-std=c++17", "-ftz=true"), "90")
    wrapped(f"{MARKER}\nk", options=("-ftz=true",))
    wrapped("other kernel", ("-ftz=true",), "90")
    assert seen == [("-std=c++17", "-ftz=false"), ("-ftz=false",), ("-ftz=true",)]
    assert wrapped.parity_keeps_subnormals and wrapped.__name__ == "fake"


def test_install_ftz_rewrite_wraps_the_entry_point_once():
    def nvrtc(source, options=(), *a):
        return options
    cupy14 = types.SimpleNamespace(_compile_using_nvrtc_no_warning=nvrtc, compile_using_nvrtc=nvrtc)
    assert install_ftz_rewrite(cupy14) == "_compile_using_nvrtc_no_warning"
    first = cupy14._compile_using_nvrtc_no_warning
    assert install_ftz_rewrite(cupy14) == "_compile_using_nvrtc_no_warning"
    assert cupy14._compile_using_nvrtc_no_warning is first                  # idempotent
    assert first(MARKER, ("-ftz=true",)) == ("-ftz=false",)
    assert cupy14.compile_using_nvrtc is nvrtc
    older = types.SimpleNamespace(compile_using_nvrtc=nvrtc)
    assert install_ftz_rewrite(older) == "compile_using_nvrtc"
    with pytest.raises(RuntimeError, match="flush-to-zero"):
        install_ftz_rewrite(types.SimpleNamespace())


@needs_cupy
def test_cupys_own_compile_path_reaches_the_rewrite(monkeypatch):
    """CuPy's _compile_with_cache_cuda (which appends -ftz=true) with only NVRTC itself faked."""
    from cupy.cuda import compiler
    seen = []

    def nvrtc(source, options=(), *a, **kw):
        seen.append(tuple(options))
        return b"ptx", {}
    monkeypatch.setattr(compiler, "_compile_using_nvrtc_no_warning", nvrtc)
    monkeypatch.setattr(compiler, "_get_nvrtc_version", lambda: (12, 8))
    monkeypatch.setattr(compiler, "_preprocess", lambda *a, **kw: "")
    monkeypatch.setattr(compiler, "_get_arch_for_options_for_nvrtc", lambda arch=None: ("-arch=sm_90", "cubin"))
    install_ftz_rewrite(compiler)
    for src in (f"{MARKER}\nextern \"C\" __global__ void k() {{}}", "extern \"C\" __global__ void k() {}"):
        assert compiler._compile_with_cache_cuda(src, ("-O3",), "90", cache_in_memory=True, to_ltoir=True) == b"ptx"
    marked, other = seen
    assert marked[-1] == "-ftz=false" and "-ftz=true" not in marked
    assert "-ftz=true" in other and "-ftz=false" not in other


# -------------------------------------------------------------------------- self-check
def test_subnormal_verdict():
    assert subnormal_verdict([want for _, _, want in SUBNORMAL_PROBE]) == ""
    why = subnormal_verdict([0x000116C2, 0x80000000, 0x00400000])
    assert "0x80000001 * 0x3f800000 gave 0x80000000, expected 0x80000001" in why and "f32/bf16" in why
    assert all(np.float32(np.uint32(a).view(np.float32) * np.uint32(b).view(np.float32)).view(np.uint32) == want
               for a, b, want in SUBNORMAL_PROBE)                          # the table itself is right


def test_ftz_sensitive_dtypes_are_the_ones_with_f32_subnormals_once_widened():
    from parity.core.dtypes import DTYPES
    widened_subnormal = {n for n, d in DTYPES.items() if d.is_float and d.bits <= 32
                         and 2.0 ** (d.emin - d.mant_bits) < np.finfo(np.float32).tiny}
    assert set(FTZ_SENSITIVE) == widened_subnormal


@pytest.fixture
def flushing(monkeypatch):
    """An executor whose self-check finds flushed subnormals; kernels are not built."""
    calls = []

    def probe():
        calls.append(1)
        return [0, 0x80000000, 0]
    monkeypatch.setattr(cupy_ref, "run_subnormal_probe", probe)
    monkeypatch.setattr(cupy_ref, "_elementwise", lambda *a: "kernel")
    ex = CupyRefExecutor()
    ex.probe_calls = calls
    return ex


def test_flushed_subnormals_make_f32_and_bf16_kernels_unavailable(flushing):
    for kernel in ("uneg_f32", "cast_f16_bf16", "cast_f32_u8", "where_u8_bf16"):
        res = flushing.prepare(kernel)
        assert res.status == "unavailable" and "flushes f32 subnormals" in res.message, kernel
    for kernel in ("uneg_f16", "uneg_f64", "uexp_fp8_e4m3", "cast_f16_f8_e4m3", "badd_u8"):
        assert flushing.prepare(kernel) is None, kernel
    assert flushing.probe_calls == [1]                                       # once per executor
    row = run_case(Case.parse("unary.neg/f32/transposed/special/s0"), flushing)
    assert row["verdict"] == "unavailable" and "self-check" in row["message"]


def test_a_self_check_that_cannot_run_is_a_reason_too(monkeypatch):
    def probe():
        raise RuntimeError("cudaErrorInsufficientDriver")
    monkeypatch.setattr(cupy_ref, "run_subnormal_probe", probe)
    ex = CupyRefExecutor()
    res = ex.prepare("bmul_bf16")
    assert res.status == "unavailable"
    assert "self-check failed (RuntimeError: cudaErrorInsufficientDriver)" in res.message
    assert ex.prepare("const_set_bf16") is None          # the fill family is array code: no self-check


# ------------------------------------------------------------------------------ nvcc
def _cupy_kernel_code(op, key: str, name: str) -> str:
    """The source CuPy's ElementwiseKernel generates for a 2-D strided launch (private CuPy API)."""
    import cupy
    from cupy._core import _carray, _kernel, _scalar
    ins, outs, body, pre = kernel_source(op, key)
    params = (_kernel._get_param_info(ins, True) + _kernel._get_param_info(outs, False)
              + (_kernel.ParameterInfo("CIndexer _ind", False),))
    args = tuple(_kernel._ArgInfo(3, _scalar.CScalar, p.dtype, 0, True, True) if p.name in SCALARS
                 else _kernel._ArgInfo(1, cupy.ndarray, p.dtype, 2, False, True) for p in params[:-1])
    args += (_kernel._ArgInfo(2, _carray.Indexer, None, 2, True, True),)
    return _kernel._get_elementwise_kernel_code(args, _kernel._TypeMap(()), params, body, name, pre)


@pytest.mark.slow
@needs_nvcc
def test_every_reference_kernel_compiles_with_nvcc(tmp_path):
    from cupy._core.core import _get_header_dir_path
    src = ["#include <cupy/complex.cuh>", "#include <cupy/carray.cuh>", "#include <cupy/atomics.cuh>"]
    src += [_cupy_kernel_code(op, key, f"parity_ref_{op.kernel_name(key)}") for op, key in REFERENCE]
    (tmp_path / "ref.cu").write_text("\n".join(src))
    r = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-std=c++17", "-ftz=false", f"-I{_get_header_dir_path()}",
                        "-o", str(tmp_path / "ref.ptx"), str(tmp_path / "ref.cu")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    assert (tmp_path / "ref.ptx").read_text().count(".entry parity_ref_") == len(REFERENCE)


# Device-only names the host build maps to host code: math, not conversions (f16/bf16 affine uses
# the device-only __hfma and runs on the GPU tests only)
_HOST_SHIMS = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cmath>
#include <cstdio>
#include <cstring>
static float host_int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static float host_normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
static double host_normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
#define __int_as_float host_int_as_float
#define normcdff host_normcdff
#define normcdf host_normcdf
using std::isnan; using std::signbit;
"""


def _host_program(kernels) -> str:
    """A host program running kernel k's body over n elements: stdin (k, n, inputs, params) -> stdout."""
    src, table = [_HOST_SHIMS], []
    for k, (op, key) in enumerate(kernels):
        ins, outs, body, _ = kernel_source(op, key)
        lines = [f"static void k{k}(unsigned char** in, unsigned char* out, const double* pv, long n) {{",
                 "  for (long j = 0; j < n; ++j) {"]
        n_in = n_par = 0
        for dt, name in _params(ins):
            if name in SCALARS:
                lines.append(f"    const double {name} = pv[{n_par}];")
                n_par += 1
            else:
                lines.append(f"    const {C_OF[dt]} {name} = (({C_OF[dt]}*)in[{n_in}])[j];")
                n_in += 1
        (odt, oname), = _params(outs)
        lines += [f"    {C_OF[odt]} &{oname} = (({C_OF[odt]}*)out)[j];", f"    {body}", "  }", "}"]
        src.append("\n".join(lines))
        table.append(f"k{k}")
    src.append("typedef void (*K)(unsigned char**, unsigned char*, const double*, long);")
    src.append(f"static K table[] = {{{', '.join(table)}}};")
    src.append(r"""
#include <vector>
int main() {
  int k, n_in, n_par, out_size; long n;
  while (fread(&k, 4, 1, stdin) == 1) {
    fread(&n, 8, 1, stdin); fread(&n_in, 4, 1, stdin); fread(&n_par, 4, 1, stdin); fread(&out_size, 4, 1, stdin);
    std::vector<std::vector<unsigned char>> bufs(n_in);
    std::vector<unsigned char*> ptrs(n_in + 1);
    for (int a = 0; a < n_in; ++a) {
      int size; fread(&size, 4, 1, stdin);
      bufs[a].resize(n * size + 1); fread(bufs[a].data(), 1, n * size, stdin); ptrs[a] = bufs[a].data();
    }
    double pv[4]; fread(pv, 8, n_par, stdin);
    std::vector<unsigned char> out(n * out_size + 1);
    table[k](ptrs.data(), out.data(), pv, n);
    fwrite(out.data(), 1, n * out_size, stdout); fflush(stdout);
  }
}""")
    return "\n".join(src)


@pytest.mark.slow
@needs_nvcc
def test_kernel_bodies_on_the_host_match_the_cpu_reference(tmp_path):
    """Each body (NVIDIA's host-side conversions are bit-identical to the device's) on the smoke
    sweep's inputs, judged like the level's results: every case passes."""
    kernels = [(op, key) for op, key in REFERENCE if not (op.family == "affine" and key in ("f16", "bf16"))]
    (tmp_path / "host.cu").write_text(_host_program(kernels))
    r = subprocess.run(["nvcc", "-std=c++17", "-O1", "-o", str(tmp_path / "host"), str(tmp_path / "host.cu")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    index = {(op.name, key): k for k, (op, key) in enumerate(kernels)}
    # integer x/0 (binary.div's special class) traps on the host CPU (SIGFPE); the device levels judge it
    cases = [c for c in load_sweep("smoke", Filters(ops=ELEMENTWISE)) if (c.op, c.dtype) in index
             and not (c.op == "binary.div" and c.values == "special" and c.dtype in ("u8", "u32", "i64"))]
    proc = subprocess.Popen([str(tmp_path / "host")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    failed, families = [], Counter()
    try:
        for c in cases:
            p = prepare_case(c)
            op, out_dt = p.built.op, p.built.op.out_dtype(c.dtype)
            n = p.expected.size
            inputs = [np.ascontiguousarray(p.built.operands.logical[name]).reshape(-1) for name in op.inputs]
            t = op.dtype_parts(c.dtype)[-1]
            params = [float(scalar_to_dtype(p.built.params[name], t).astype(np.float64)[0]) for name in op.params_abi]
            msg = struct.pack("<iqiii", index[(c.op, c.dtype)], n, len(inputs), len(params), out_dt.np.itemsize)
            for x in inputs:
                msg += struct.pack("<i", x.dtype.itemsize) + x.view(np.uint8).tobytes()
            proc.stdin.write(msg + struct.pack(f"<{len(params)}d", *params))
            proc.stdin.flush()
            got = np.frombuffer(proc.stdout.read(n * out_dt.np.itemsize), dtype=out_dt.np).reshape(p.expected.shape)
            res = compare(p.expected, got, out_dt, op.tolerance, p.built.operands.logical, p.built.operands.dtypes)
            families[op.family] += 1
            if not res.passed:
                failed.append(f"{c.id}: {res.n_bad} off, worst {res.worst.one_line()}")
    finally:
        proc.stdin.close()
        proc.wait()
    assert not failed, "\n".join(failed[:30])
    assert set(families) == {"unary", "binary", "affine", "cast", "ternary"} and sum(families.values()) > 5000


# ------------------------------------------------------------------------------- GPU
@pytest.fixture(scope="module")
def cupy_level():
    ex = CupyRefExecutor()
    av = ex.availability()
    if not av.available:
        pytest.skip(f"cupy level unavailable: {av.reason}")
    yield ex
    ex.close()


@pytest.mark.gpu
def test_gpu_self_check_keeps_subnormals(cupy_level):
    assert cupy_level.subnormal_problem() == ""
    assert cupy_ref.run_subnormal_probe() == [want for _, _, want in SUBNORMAL_PROBE]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,values", [("f32", "special"), ("bf16", None), ("f8_e4m3", None), ("f16", None)])
def test_gpu_cupy_level_passes_the_smoke_elementwise_cases(cupy_level, dtype, values):
    """Every smoke elementwise case with this dtype passes, the fill family (array code) included.
    (pr adds layouts, not value classes: `parity run --sweep pr --levels cupy` runs it.)"""
    cases = load_sweep("smoke", Filters(ops=ELEMENTWISE, dtypes=[dtype], values=[values] if values else None))
    rows = run_cases(cases, cupy_level)
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{len(bad)} cases:\n" + "\n".join(bad[:40])
    assert any(c.op.startswith("fill.") for c in cases)
    assert Counter(r["verdict"] for r in rows) == Counter({"pass": len(cases)})


@pytest.mark.gpu
def test_gpu_cupy_level_in_its_worker_process():
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    lv = make("cupy", DEFAULT_HIP_SRC, None)
    assert lv.availability.available, lv.availability.reason
    try:
        for cid in ("unary.neg/f32/transposed/special/s0", "cast/f32-bf16/narrowed/special/s0",
                    "binary.minimum/f8_e4m3/broadcast-leading/special/s0", "where/i32-f8_e4m3/transposed/normal/s0"):
            row = run_case(Case.parse(cid), lv.executor)
            assert row["verdict"] == "pass", (cid, row["message"])
    finally:
        lv.executor.close()
