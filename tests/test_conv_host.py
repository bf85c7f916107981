"""Candle's backend conv1d/conv2d host path (`conv.conv1d_host`, `conv.conv2d_host`): the reference
against a direct convolution, the exact launch sequence, broken subjects caught with their worst
element, the CUDA known divergence, and the amd level's MIOpen route (argument marshalling, cache,
fallback decisions, error mapping) on a fake libMIOpen over host memory. No GPU needed; the GPU
side is tests/test_matmul_conv_gpu.py."""
import ctypes

import numpy as np
import pytest

from fakes_matmul_conv import (ConvGemmReadsOriginalKernel, HostMemory, Im2colIgnoresDilation, MiopenOnHost,
                               NumpyMiopen, direct_conv)
from parity.core import resources
from parity.executors.cpu import CpuExecutor
from parity.run.cases import Case
from parity.run.engine import prepare_case, run_case
from parity.core.numerics import to_f64
from parity.ops import CATALOG
from parity.ops.conv_host import HostConv

HOST_OPS = ("conv.conv1d_host", "conv.conv2d_host")
ALL = [f"{op}/{dt}/{sh}/normal/s0" for op in HOST_OPS for sh in CATALOG[op].spec.shapes
       for dt in CATALOG[op].dtypes]


def _prepared(case: Case):
    p = prepare_case(case)
    return p.built, p.launch, p.expected


def _geo(b):
    """(pad, stride, dilation) per axis for direct_conv; conv1d runs as H = 1."""
    g = b.geo
    if b.op.root == "conv1d_host":
        return (0, g["padding"]), (1, g["stride"]), (1, g["dilation"])
    return (g["padding"],) * 2, (g["stride"],) * 2, (g["dilation"],) * 2


def _direct(b, w=None) -> np.ndarray:
    x, w = to_f64(b.inputs["src"]), to_f64(b.inputs["k"] if w is None else w)
    if b.op.root == "conv1d_host":
        return direct_conv(x[:, :, None, :], w[:, :, None, :], *_geo(b))[:, :, 0, :]
    return direct_conv(x, w, *_geo(b))


# ------------------------------------------------------------------------------ reference
@pytest.mark.parametrize("op", HOST_OPS)
def test_reference_is_a_direct_convolution(op):
    """Every shape class: the float64 reference equals the convolution from its definition, and
    the CPU level's im2col -> GEMM -> copy sequence computes it."""
    n = 0
    for sh in CATALOG[op].spec.shapes:
        b, launch, expected = _prepared(Case.parse(f"{op}/f64/{sh}/normal/s0"))
        want = _direct(b)
        assert expected.shape == want.shape == b.out_shape, sh
        np.testing.assert_allclose(expected, want, rtol=1e-13, atol=1e-13, err_msg=sh)
        got = CpuExecutor().run(launch).outputs["dst"].reshape(b.out_shape)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=sh)
        n += 1
    assert n == 8


def test_every_case_passes_on_the_cpu_level():
    rows = [run_case(Case.parse(c), CpuExecutor()) for c in ALL]
    assert len(rows) == 64
    assert {(r["verdict"], r["conv_route"]) for r in rows} == {("pass", "im2col+gemm")}
    assert {r["tolerance"] for r in rows} == {"|err| <= 2*sqrt(n)*eps_acc*sum|x*w| + 1 ulp vs float64"}


# ------------------------------------------------------------------------ the host sequence
class Recording(CpuExecutor):
    def __init__(self, gemm_kernel="copy"):
        super().__init__()
        self.conv_gemm_kernel = gemm_kernel
        self.launches = []

    def run(self, launch):
        self.launches.append(launch)
        return super().run(launch)


def _args(launch) -> dict:
    return {a.name: a.value for a in launch.args}


@pytest.mark.parametrize("case_id,kernels", [
    ("conv.conv1d_host/f32/c1-basic/normal/s0", ["im2col1d_f32", "gemm_f32", "ucopy_f32"]),
    ("conv.conv1d_host/bf16/c1-kslice/normal/s0", ["im2col1d_bf16", "ucopy_bf16", "gemm_bf16", "ucopy_bf16"]),
    ("conv.conv1d_host/f16/c1-cout1/normal/s0", ["im2col1d_f16", "gemm_f16"]),
    ("conv.conv2d_host/f64/c2-kslice/normal/s0", ["im2col_f64", "ucopy_f64", "gemm_f64", "ucopy_f64"]),
    ("conv.conv2d_host/f32/c2-cout1/normal/s0", ["im2col_f32", "gemm_f32"]),
])
def test_launch_sequence(case_id, kernels):
    ex = Recording()
    assert run_case(Case.parse(case_id), ex)["verdict"] == "pass"
    assert [la.kernel for la in ex.launches] == [case_id.split("/")[0].split(".")[1] + "_" + case_id.split("/")[1]] \
        + kernels


def test_conv1d_steps_carry_candles_arguments():
    """c1-kslice: src (2,3,11) stride 1, kernel (4,3,3) strides [15,3,1] at offset 3."""
    for gemm_kernel, rhs_off in (("copy", 0), ("original", 3)):
        ex = Recording(gemm_kernel)
        run_case(Case.parse("conv.conv1d_host/f32/c1-kslice/normal/s0"), ex)
        host, im2col, kcopy, gemm, back = ex.launches
        assert host.library == "conv.host" and host.grid == (1, 1, 1)
        a = _args(im2col)
        assert [a[n] for n in ("n_threads", "l_out", "l_k", "stride", "padding", "dilation")] == [54, 9, 3, 1, 0, 1]
        assert list(a["info"]) == [2, 3, 11, 33, 11, 1] and im2col.grid == (1, 1, 1)
        a = _args(kcopy)
        assert (a["numel"], a["num_dims"], list(a["info"]), a["x"]) == (36, 3, [4, 3, 3, 15, 3, 1], ("x", 3))
        a = _args(gemm)
        assert [a[n] for n in "bmnk"] == [1, 18, 4, 9]
        assert list(a["lhs_layout"]) == [18, 9, 9, 1] and list(a["rhs_layout"]) == [9, 4, 1, 9]
        assert a["rhs"] == ("rhs", rhs_off)
        assert gemm.buffers["rhs"].size == (36 if gemm_kernel == "copy" else 57)   # kernel_c or the original base
        a = _args(back)                                                           # (b, l_out, c_out) -> N,C,L
        assert (a["numel"], list(a["info"])) == (72, [2, 4, 9, 36, 1, 4])


def test_conv2d_steps_carry_candles_arguments():
    """c2-src-strided: src (2,3,7,6) with H/W strides swapped, stride 2, padding 1, kernel (4,3,3,2)."""
    ex = Recording()
    run_case(Case.parse("conv.conv2d_host/f32/c2-src-strided/normal/s0"), ex)
    _, im2col, gemm, back = ex.launches
    a = _args(im2col)
    assert [a[n] for n in ("dst_numel", "h_out", "w_out", "h_k", "w_k", "stride", "padding", "dilation")] == \
        [2 * 4 * 4 * 3 * 3 * 2, 4, 4, 3, 2, 2, 1, 1]
    assert list(a["info"]) == [2, 3, 7, 6, 126, 42, 1, 7]
    a = _args(gemm)
    assert [a[n] for n in "bmnk"] == [1, 32, 4, 18] and a["rhs"] == ("rhs", 0)
    assert list(_args(back)["info"]) == [2, 4, 4, 4, 64, 1, 16, 4]


def test_host_conv_round_trips_through_its_launch():
    b, launch, _ = _prepared(Case.parse("conv.conv2d_host/bf16/c2-koffset/normal/s0"))
    hc = HostConv.from_launch(launch)
    assert (hc.key, hc.src.shape, hc.kernel.shape, hc.kernel.offset) == ("bf16", (2, 3, 7, 6), (4, 3, 3, 2), 18)
    assert hc.kernel.is_contiguous() and hc.out_spatial() == (5, 5) and hc.bmnk() == (1, 50, 4, 18)


# -------------------------------------------------------------------------- broken subjects
# (subject, case, n_bad, worst coords, expected, got)
CAUGHT = [
    (ConvGemmReadsOriginalKernel, "conv.conv1d_host/f32/c1-kslice/normal/s0", 54, [0, 1, 0], "-24.13575553894043",
     "nan"),
    (ConvGemmReadsOriginalKernel, "conv.conv2d_host/f32/c2-kslice/normal/s0", 150, [0, 1, 0, 0],
     "14.197373390197754", "nan"),
    (ConvGemmReadsOriginalKernel, "conv.conv2d_host/bf16/c2-kslice/normal/s0", 150, [0, 1, 0, 0], "35.75", "nan"),
    (Im2colIgnoresDilation, "conv.conv1d_host/f32/c1-dilation/normal/s0", 80, [1, 3, 0], "23.457172393798828",
     "-34.759708404541016"),
    (Im2colIgnoresDilation, "conv.conv2d_host/f32/c2-dilation/normal/s0", 144, [0, 0, 6, 7], "4.377922534942627",
     "-25.93653106689453"),
]


@pytest.mark.parametrize("subject,case_id,n_bad,coords,expected,got", CAUGHT,
                         ids=[f"{c[0].__name__}:{c[1]}" for c in CAUGHT])
def test_broken_subject_is_caught(subject, case_id, n_bad, coords, expected, got):
    row = run_case(Case.parse(case_id), subject())
    assert row["verdict"] == "fail" and row["n_bad"] == n_bad
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == (coords, expected, got)
    assert run_case(Case.parse(case_id), CpuExecutor())["verdict"] == "pass"


@pytest.mark.parametrize("case_id", ["conv.conv1d_host/f32/c1-kslice/normal/s0",
                                     "conv.conv2d_host/f64/c2-kslice/normal/s0"])
def test_cuda_gemm_bug_matches_its_numpy_model(case_id):
    """What the GEMM computes when it reads the original buffer as a packed (c_out, c_in*k) matrix
    from the kernel's start offset: the poisoned gaps of the channel slice come in as NaN (out
    channels 1..3); out channel 0 reads exactly its own slice (offset 3, then 9 packed values)."""
    b, launch, expected = _prepared(Case.parse(case_id))
    kl = b.layouts["k"]
    packed = b.bases["k"][kl.offset:kl.offset + kl.numel].reshape(kl.shape)
    model = _direct(b, packed)
    got = ConvGemmReadsOriginalKernel().run(launch).outputs["dst"].reshape(b.out_shape)
    np.testing.assert_array_equal(np.isnan(to_f64(got)), np.isnan(model))
    assert np.isnan(model[:, 1:]).all() and not np.isnan(model[:, 0]).any()
    np.testing.assert_allclose(to_f64(got)[:, 0], model[:, 0], rtol=1e-6)
    np.testing.assert_allclose(model[:, 0], to_f64(expected)[:, 0], rtol=1e-6)


def test_cuda_bug_is_invisible_for_contiguous_kernels():
    """Offset but contiguous kernels are read in place by both backends: no case but kslice can
    catch the bug, which is why the shape classes include it."""
    sub = ConvGemmReadsOriginalKernel()
    bad = [c for c in ALL if run_case(Case.parse(c), sub)["verdict"] != "pass"]
    assert sorted(bad) == sorted(c for c in ALL if "-kslice/" in c) and len(bad) == 8


def test_the_ops_stated_divergence_turns_the_cuda_failures_into_xfail():
    """The host conv ops state Candle's CUDA bug next to themselves (Op.known); the baseline
    machinery applies it to a run's cuda rows without any baseline file, and only to those."""
    from parity.render.baseline import apply, with_stated, with_stated_for
    from parity.run.results import Results

    class CudaLike(ConvGemmReadsOriginalKernel):
        level = "cuda"
    entries = with_stated(None, HOST_OPS, ["cuda"]).entries
    assert [e.pattern for e in entries] == ["conv.conv1d_host/*/c[12]-kslice/*", "conv.conv2d_host/*/c[12]-kslice/*"]
    kd = entries[1]
    assert kd.stated and kd.level == "cuda" and kd.reason.startswith("KD cuda-conv-noncontiguous-kernel")
    assert with_stated(None, HOST_OPS, ["hip-on-nvidia", "cpu"]) is None      # no cuda row: nothing stated
    assert kd.matches("conv.conv2d_host/bf16/c2-kslice/normal/s0", "cuda")
    assert not kd.matches("conv.conv2d_host/bf16/c2-kslice/normal/s0", "hip-on-nvidia")
    assert not kd.matches("conv.conv2d/f32/c2-kslice/normal/s0", "cuda")        # the direct kernel reads strides
    assert not kd.matches("conv.conv1d_host/f32/c1-koffset/normal/s0", "cuda")
    rows = [run_case(Case.parse(c), CudaLike()) for c in ALL]
    raw = Results.from_rows(rows)
    res = apply(raw, with_stated_for(None, raw), strict=True)
    assert res.counts() == {"pass": 56, "xfail": 8}
    assert res.meta["baseline"]["unused"] == [] and res.meta["baseline"]["entries"] == 0
    assert res.meta["baseline"]["stated_by_ops"] == ["KD cuda-conv-noncontiguous-kernel"]
    assert all("cuda-conv-noncontiguous-kernel" in d for op in HOST_OPS for d in CATALOG[op].divergences)


# ------------------------------------------------------------------------ library plumbing
def test_suite_kernels_of_host_routines():
    from parity.host.routines import is_library_kernel, suite_kernels
    assert is_library_kernel("conv1d_host_f16") and is_library_kernel("conv2d_host_f64")
    assert suite_kernels(["conv1d_host_f16", "gemm_f32", "uneg_f32", "conv2d_host_f16"]) == \
        ["im2col1d_f16", "ucopy_f16", "uneg_f32", "im2col_f16"]


def test_coverage_does_not_expect_host_routines_in_a_suite():
    from parity.suite.coverage import coverage
    from parity.suite.scan import discover
    names = {r.kernel: r.status for r in coverage(discover(resources.hip_suite()))}
    assert not [n for n in names if "_host_" in n]
    assert names["im2col1d_bf16"] == names["im2col_f16"] == names["ucopy_f64"] == "present"


def test_hip_nvidia_precompiles_what_the_host_routine_launches():
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor()
    assert [p.name for p in ex.sources_for(["conv2d_host_bf16"])] == ["conv.hip", "ucopy.hip"]
    assert [p.name for p in ex.sources_for(["gemm_f32", "conv1d_host_f64", "uneg_f32"])] == \
        ["conv.hip", "ucopy.hip", "unary_f32.hip"]


def test_cuda_level_reads_the_original_kernel_and_the_rocm_levels_the_copy():
    from parity.executors.amd import AmdExecutor
    from parity.executors.cuda import CudaExecutor
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    assert CudaExecutor.conv_gemm_kernel == "original"
    assert HipOnNvidiaExecutor.conv_gemm_kernel == AmdExecutor.conv_gemm_kernel == "copy"


# ----------------------------------------------------------------------- MIOpen on `amd`
@pytest.mark.parametrize("case_id,want", [
    ("conv.conv2d_host/f32/c2-stride-pad/normal/s0", ("f32", (2, 3, 7, 6), (4, 3, 3, 2), (1, 1), (2, 2), (1, 1))),
    ("conv.conv2d_host/bf16/c2-dilation/normal/s0", ("bf16", (1, 3, 8, 7), (2, 3, 3, 2), (2, 2), (1, 1), (2, 2))),
    ("conv.conv1d_host/f16/c1-dilation/normal/s0", ("f16", (2, 3, 1, 12), (4, 3, 1, 3), (0, 1), (1, 1), (1, 2))),
    ("conv.conv1d_host/f32/c1-koffset/normal/s0", ("f32", (2, 3, 1, 11), (4, 3, 1, 3), (0, 0), (1, 1), (1, 1))),
    ("conv.conv2d_host/f16/c2-offset/normal/s0", ("f16", (2, 3, 7, 6), (4, 3, 3, 2), (0, 0), (1, 1), (1, 1))),
    ("conv.conv2d_host/f64/c2-basic/normal/s0", "f64 is not one of f32/f16/bf16"),
    ("conv.conv1d_host/f32/c1-kslice/normal/s0", "non-contiguous kernel"),
    ("conv.conv1d_host/bf16/c1-src-nlc/normal/s0", "non-contiguous input"),
    ("conv.conv2d_host/f32/c2-src-strided/normal/s0", "non-contiguous input"),
])
def test_miopen_or_fallback_decision(case_id, want):
    from parity.host.miopen import conv_problem
    _, launch, _ = _prepared(Case.parse(case_id))
    p = conv_problem(HostConv.from_launch(launch))
    assert (p if isinstance(p, str) else (p.dtype, p.x, p.w, p.pad, p.stride, p.dilation)) == want


def test_every_case_passes_through_the_miopen_route():
    ex = MiopenOnHost(NumpyMiopen())
    rows = [run_case(Case.parse(c), ex) for c in ALL]
    routes = {}
    for r in rows:
        assert r["verdict"] == "pass", (r["case_id"], r["message"])
        routes[r["conv_route"]] = routes.get(r["conv_route"], 0) + 1
    assert routes == {"miopen": 36, "im2col+gemm (MIOpen skipped: f64 is not one of f32/f16/bf16)": 16,
                      "im2col+gemm (MIOpen skipped: non-contiguous kernel)": 6,
                      "im2col+gemm (MIOpen skipped: non-contiguous input)": 6}
    assert ex.memory.live == {}                                     # every workspace freed


@pytest.mark.parametrize("case_id,src_off,k_off", [("conv.conv1d_host/f32/c1-offset/normal/s0", 33, 0),
                                                   ("conv.conv2d_host/f16/c2-koffset/normal/s0", 0, 18)])
def test_miopen_gets_start_offsets_on_the_pointers(case_id, src_off, k_off):
    lib = NumpyMiopen()
    ex = MiopenOnHost(lib)
    row = run_case(Case.parse(case_id), ex)
    assert row["verdict"] == "pass" and row["conv_route"] == "miopen"
    item = 4 if "/f32/" in case_id else 2
    base = ex.memory.bases
    for fn in ("miopenFindConvolutionForwardAlgorithm", "miopenConvolutionForward"):
        x, w, y = next(a for n, a in lib.calls if n == fn)[:3]
        assert (x - base["src"], w - base["k"], y - base["dst"]) == (src_off * item, k_off * item, 0)


def test_miopen_algorithm_cache_per_device_dtype_problem():
    lib = NumpyMiopen()
    ex = MiopenOnHost(lib, device=1)
    finds = lambda: lib.names().count("miopenFindConvolutionForwardAlgorithm")
    r1 = run_case(Case.parse("conv.conv2d_host/f32/c2-basic/normal/s0"), ex)
    r2 = run_case(Case.parse("conv.conv2d_host/f32/c2-offset/normal/s0"), ex)      # same problem, offsets differ
    r3 = run_case(Case.parse("conv.conv2d_host/f16/c2-basic/normal/s0"), ex)
    assert (r1["miopen_cached"], r2["miopen_cached"], r3["miopen_cached"]) == (False, True, False)
    assert finds() == 2 and r1["miopen_algo"] == 1 and r1["miopen_workspace"] == 256
    assert sorted((k[0], k[1]) for k in ex.miopen().cache) == [(1, "f16"), (1, "f32")]
    assert ex.memory.allocs == [256, 256, 256] and ex.memory.live == {}
    assert lib.names().count("miopenConvolutionForward") == 3


def test_miopen_error_falls_back_to_im2col_and_is_not_cached():
    lib = NumpyMiopen(fail={"miopenFindConvolutionForwardAlgorithm": 6})
    ex = MiopenOnHost(lib)
    for _ in range(2):
        r = run_case(Case.parse("conv.conv1d_host/bf16/c1-stride-pad/normal/s0"), ex)
        assert r["verdict"] == "pass"
        assert r["conv_route"] == ("im2col+gemm (MIOpen failed: miopenFindConvolutionForwardAlgorithm failed: "
                                   "miopenStatusNotImplemented (6): no solver for this dtype / problem on this "
                                   "architecture: fall back to im2col + rocBLAS)")
    assert lib.names().count("miopenFindConvolutionForwardAlgorithm") == 2 and not ex.miopen().cache
    assert "miopenConvolutionForward" not in lib.names() and ex.memory.live == {}
    lib = NumpyMiopen(fail={"miopenConvolutionForward": 3})
    r = run_case(Case.parse("conv.conv2d_host/f32/c2-basic/normal/s0"), MiopenOnHost(lib))
    assert r["verdict"] == "pass" and r["conv_route"].startswith("im2col+gemm (MIOpen failed: miopenConvolutionForward "
                                                                "failed: miopenStatusBadParm (3)")


def test_miopen_route_unavailable_without_libmiopen():
    ex = MiopenOnHost(lib=None)
    r = run_case(Case.parse("conv.conv2d_host/f16/c2-basic/normal/s0"), ex)
    assert r["verdict"] == "unavailable" and "libMIOpen" in r["message"]
    r = run_case(Case.parse("conv.conv2d_host/f64/c2-basic/normal/s0"), ex)     # never MIOpen: still tested
    assert r["verdict"] == "pass" and r["conv_route"].startswith("im2col+gemm (MIOpen skipped")


def test_miopen_writing_past_the_output_is_an_oob_write():
    """The guard bytes around every buffer see MIOpen too: y written one element too long."""
    class Overrun(NumpyMiopen):
        def miopenConvolutionForward(self, handle, alpha, xd, x, wd, w, cd, algo, beta, yd, y, ws, ws_size):
            st = super().miopenConvolutionForward(handle, alpha, xd, x, wd, w, cd, algo, beta, yd, y, ws, ws_size)
            dt, shape = self.tensors[yd.value]
            n = int(np.prod(shape)) * (4 if dt == "f32" else 2)
            ctypes.memset(y.value + n, 0, 4)
            return st
    r = run_case(Case.parse("conv.conv2d_host/f32/c2-basic/normal/s0"), MiopenOnHost(Overrun()))
    assert r["verdict"] == "oob-write" and "dst: bytes after the buffer" in r["message"]


def test_host_memory_stand_in_matches_the_amd_interface():
    from parity.host.hip import HipMemory
    for name in ("buffers", "alloc", "free", "synchronize"):
        assert callable(getattr(HipMemory, name)) and callable(getattr(HostMemory, name))


def test_baseline_update_leaves_what_the_ops_state_with_the_ops(tmp_path):
    """`parity baseline update` on a cuda run writes no entry for a failure its op states (Op.known):
    the statement stays next to the op, and the file keeps only the port's own known failures."""
    from parity.render.baseline import Baseline, update
    from parity.run.results import Results

    class CudaLike(ConvGemmReadsOriginalKernel):
        level = "cuda"
    rows = [run_case(Case.parse(c), CudaLike()) for c in ALL if "conv2d_host" in c]
    up = update(Baseline([]), Results.from_rows(rows))
    assert up.added == 0 and up.baseline.entries == []
    assert sum(r["verdict"] == "fail" for r in rows) == 4
