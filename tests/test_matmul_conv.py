"""Matmul (gemm_config, BLAS marshalling), pooling/upsampling, convolution and MIOpen: host
rules, marshalling and the CPU emulation against the reference, plus broken subjects each
caught. No GPU needed (the GPU side is tests/test_matmul_conv_gpu.py)."""

import numpy as np
import pytest

from fakes_matmul_conv import (Im2colIgnoresDilation, LdaFromWrongOperand, NeverRefuses, NoBatchStrideForBroadcast,
                               PoolIgnoresSwappedNames)
from parity.core import resources
from parity.executors.cpu import CpuExecutor
from parity.run.cases import Case
from parity.run.engine import run_case
from parity.ops import CATALOG
from parity.ops.matmul import GemmConfig, MatMulNonContiguous, gemm_config

NEW_FAMILIES = ("matmul", "pool", "conv")


# ------------------------------------------------------------------------------ gemm_config
def L(shape, strides):
    return (tuple(shape), tuple(strides))


# (bmnk, lhs, rhs) -> (transa, transb, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch)
ACCEPTED = [
    ((2, 7, 5, 9), L((2, 7, 9), (63, 9, 1)), L((2, 9, 5), (45, 5, 1)), ("N", "N", 5, 7, 9, 5, 9, 5, 45, 63, 35, 2)),
    ((2, 7, 5, 9), L((2, 7, 9), (63, 9, 1)), L((2, 9, 5), (45, 1, 9)), ("T", "N", 5, 7, 9, 9, 9, 5, 45, 63, 35, 2)),
    ((2, 7, 5, 9), L((2, 7, 9), (63, 1, 7)), L((2, 9, 5), (45, 5, 1)), ("N", "T", 5, 7, 9, 5, 7, 5, 45, 63, 35, 2)),
    # sheet section 6: strides [6,1,2] on either side
    ((2, 2, 4, 3), L((2, 2, 3), (6, 1, 2)), L((2, 3, 4), (12, 4, 1)), ("N", "T", 4, 2, 3, 4, 2, 4, 12, 6, 8, 2)),
    ((2, 4, 3, 2), L((2, 4, 2), (8, 2, 1)), L((2, 2, 3), (6, 1, 2)), ("T", "N", 3, 4, 2, 2, 2, 3, 6, 8, 12, 2)),
    # broadcast batch (stride 0) and rank-2 rhs broadcast_left
    ((3, 7, 5, 9), L((3, 7, 9), (63, 9, 1)), L((3, 9, 5), (0, 5, 1)), ("N", "N", 5, 7, 9, 5, 9, 5, 0, 63, 35, 3)),
    ((3, 7, 5, 9), L((3, 7, 9), (0, 9, 1)), L((3, 9, 5), (45, 5, 1)), ("N", "N", 5, 7, 9, 5, 9, 5, 45, 0, 35, 3)),
    # two batch dims: s1 == s*dims[1] -> s; dims[0] == 1 -> s; dims[1] == 1 -> s1
    ((6, 7, 5, 9), L((2, 3, 7, 9), (189, 63, 9, 1)), L((2, 3, 9, 5), (135, 45, 5, 1)),
     ("N", "N", 5, 7, 9, 5, 9, 5, 45, 63, 35, 6)),
    ((3, 7, 5, 9), L((1, 3, 7, 9), (999, 63, 9, 1)), L((1, 3, 9, 5), (135, 45, 5, 1)),
     ("N", "N", 5, 7, 9, 5, 9, 5, 45, 63, 35, 3)),
    ((3, 7, 5, 9), L((3, 1, 7, 9), (63, 5, 9, 1)), L((3, 1, 9, 5), (45, 7, 5, 1)),
     ("N", "N", 5, 7, 9, 5, 9, 5, 45, 63, 35, 3)),
    # no batch dim: packed strides
    ((1, 7, 5, 9), L((7, 9), (9, 1)), L((9, 5), (5, 1)), ("N", "N", 5, 7, 9, 5, 9, 5, 45, 63, 35, 1)),
    # squeeze_mm: m == 1 relaxes the lhs check; rhs = w.t()
    ((1, 1, 32, 16), L((1, 16), (128, 1)), L((16, 32), (1, 16)), ("T", "N", 32, 1, 16, 16, 16, 32, 512, 16, 32, 1)),
    # unit n / unit k relax the minor-stride checks
    ((2, 7, 1, 9), L((2, 7, 9), (63, 9, 1)), L((2, 9, 1), (9, 1, 7)), ("N", "N", 1, 7, 9, 1, 9, 1, 9, 63, 7, 2)),
    ((2, 7, 5, 1), L((2, 7, 1), (7, 1, 3)), L((2, 1, 5), (5, 5, 1)), ("N", "N", 5, 7, 1, 5, 1, 5, 5, 7, 35, 2)),
]
REFUSED = [
    ((2, 7, 5, 9), L((2, 7, 9), (84, 12, 1)), L((2, 9, 5), (45, 5, 1)), "lhs"),        # narrowed last dim
    ((2, 7, 5, 9), L((2, 7, 9), (63, 9, 1)), L((2, 9, 5), (90, 10, 2)), "rhs"),        # stepped
    ((1, 7, 1, 9), L((7, 9), (9, 1)), L((9, 1), (5, 1)), "rhs"),                        # a narrowed column
    ((6, 7, 5, 9), L((2, 3, 7, 9), (200, 63, 9, 1)), L((2, 3, 9, 5), (135, 45, 5, 1)), "batch strides"),
    ((4, 7, 5, 9), L((2, 1, 2, 7, 9), (126, 126, 63, 9, 1)), L((2, 1, 2, 9, 5), (90, 90, 45, 5, 1)),
     "3 batch dimensions"),
]


@pytest.mark.parametrize("bmnk,lhs,rhs,want", ACCEPTED)
def test_gemm_config_accepted(bmnk, lhs, rhs, want):
    cfg = gemm_config(bmnk, lhs, rhs)
    got = (cfg.transa, cfg.transb, cfg.m, cfg.n, cfg.k, cfg.lda, cfg.ldb, cfg.ldc, cfg.stride_a, cfg.stride_b,
           cfg.stride_c, cfg.batch)
    assert got == want


@pytest.mark.parametrize("bmnk,lhs,rhs,why", REFUSED)
def test_gemm_config_refused(bmnk, lhs, rhs, why):
    with pytest.raises(MatMulNonContiguous, match=why):
        gemm_config(bmnk, lhs, rhs)


def test_every_shape_class_agrees_with_its_declaration():
    from parity.ops.matmul import SHAPES, _layout, case_bmnk
    for name, sc in SHAPES.items():
        ll, rl = _layout(sc.geo["lhs"]), _layout(sc.geo["rhs"])
        bmnk = case_bmnk(ll.shape, rl.shape)
        if bmnk[3] == 0 or 0 in bmnk:
            continue
        try:
            gemm_config(bmnk, ll, rl)
            refused = False
        except MatMulNonContiguous:
            refused = True
        assert refused == sc.geo["refuse"], name


# ------------------------------------------------------------------------- BLAS marshalling
CFG = GemmConfig("T", "N", 5, 7, 9, 9, 9, 5, 45, 63, 35, 2)


def test_cublas_call_marshalling():
    from parity.host.marshal import cublas_call
    c = cublas_call(CFG, "f16", 11, 100, 200, 300, 1, 2)
    assert c.fn == "gemmStridedBatchedEx" and c.compute == "CUBLAS_COMPUTE_32F"
    assert c.args == (11, 1, 0, 5, 7, 9, 1, 100, 2, 9, 45, 200, 2, 9, 63, 2, 300, 2, 5, 35, 2, 68, 99)
    c = cublas_call(CFG, "bf16", 11, 100, 200, 300, 1, 2)
    assert c.args[8] == c.args[12] == c.args[17] == 14
    c = cublas_call(CFG, "f32", 11, 100, 200, 300, 1, 2)
    assert c.args[8] == 0 and c.args[21] == 68                       # COMPUTE_32F: no TF32
    c = cublas_call(CFG, "f64", 11, 100, 200, 300, 1, 2)
    assert c.fn == "dgemmStridedBatched"
    assert c.args == (11, 1, 0, 5, 7, 9, 1, 100, 9, 45, 200, 9, 63, 2, 300, 5, 35, 2)


@pytest.mark.parametrize("api,dtype_code,compute", [("v1", 150, 151), ("v2", 2, 2), ("v2-suffixed", 2, 2)])
def test_hipblas_call_marshalling(api, dtype_code, compute):
    from parity.host.marshal import HIPBLAS_ARGTYPES, hipblas_call
    c = hipblas_call(CFG, "f16", 7, 100, 200, 300, 1, 2, api)
    assert c.fn == "hipblasGemmStridedBatchedEx" + ("_v2" if api == "v2-suffixed" else "")
    assert c.args == (7, 112, 111, 5, 7, 9, 1, 100, dtype_code, 9, 45, 200, dtype_code, 9, 63, 2, 300, dtype_code, 5,
                      35, 2, compute, 160)
    assert len(HIPBLAS_ARGTYPES[c.fn]) == len(c.args)
    s = hipblas_call(CFG, "f32", 7, 100, 200, 300, 1, 2, api)
    assert s.fn == "hipblasSgemmStridedBatched" and len(HIPBLAS_ARGTYPES[s.fn]) == len(s.args)
    assert hipblas_call(CFG, "f64", 7, 1, 2, 3, 4, 5).fn == "hipblasDgemmStridedBatched"
    assert hipblas_call(CFG, "bf16", 7, 1, 2, 3, 4, 5, "v1").args[8] == 168


def test_hipblas_fake_library_call_and_status():
    from parity.host.blas import HipBlas
    from parity.host.marshal import hipblas_call, hipblas_status

    class Fn:
        def __init__(self, log, name, ret=0):
            self.log, self.name, self.ret = log, name, ret

        def __call__(self, *a):
            self.log.append((self.name, a))
            return self.ret

    class FakeLib:
        def __init__(self):
            self.log = []
            self.hipblasCreate = Fn(self.log, "create")
            self.hipblasGemmStridedBatchedEx_v2 = Fn(self.log, "ex_v2")
            self.hipblasSgemmStridedBatched = Fn(self.log, "sgemm", ret=3)
    lib = FakeLib()
    h = HipBlas(lib)
    assert h.api == "v2-suffixed" and lib.log[0][0] == "create"
    h.call(hipblas_call(CFG, "f16", 0, 1, 2, 3, 4, 5, h.api))
    assert lib.log[-1][0] == "ex_v2" and lib.log[-1][1][21] == 2
    with pytest.raises(RuntimeError, match="HIPBLAS_STATUS_INVALID_VALUE"):
        h.call(hipblas_call(CFG, "f32", 0, 1, 2, 3, 4, 5, h.api))
    assert hipblas_status(99) == "hipblasStatus 99"


def test_gemm_pointers_swap_operands_and_apply_offsets():
    from parity.host.marshal import gemm_pointers
    b = CATALOG["matmul.gemm"].spec
    case = Case.parse("matmul.gemm/f32/mm-offset/normal/s0")
    la = b.pack(b.build(case, np.random.default_rng(0)))
    a, bb, c = gemm_pointers(la, {"lhs": 1000, "rhs": 5000, "dst": 9000}, 4)
    assert (a, bb, c) == (5000 + 45 * 4, 1000 + 18 * 4, 9000)       # a = rhs, b = lhs
    assert la.library == "blas.gemm"


# --------------------------------------------------------------------- emulation vs reference
def _cases(family):
    for name, op in CATALOG.items():
        if op.family != family:
            continue
        for key in op.dtypes:
            for shape in op.spec.shapes:
                for v in op.value_classes:
                    yield Case(name, key, shape, v)


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_cpu_emulation_passes_every_case(family):
    ex = CpuExecutor()
    bad = []
    n = 0
    for c in _cases(family):
        r = run_case(c, ex)
        n += 1
        if r["verdict"] != "pass":
            bad.append(f"{c.id}: {r['verdict']} {r['message'][:120]}")
    assert n > 20 and not bad, "\n".join(bad[:20])


def test_refused_and_host_zero_rows():
    r = run_case(Case.parse("matmul.gemm/f32/mm-refuse-rank5/normal/s0"), CpuExecutor())
    assert r["verdict"] == "pass" and r["message"].startswith("refused as expected") and r["launch"]
    r = run_case(Case.parse("matmul.gemm/f16/mm-empty-k/normal/s0"), CpuExecutor())
    assert r["verdict"] == "pass" and "not launched" in r["message"] and r["launch"] == ""
    r = run_case(Case.parse("matmul.gemm/bf16/mm-batch2/normal/s0"), CpuExecutor())
    assert r["compute_type"] == "CUBLAS_COMPUTE_32F" and r["gemm_config"]["batch"] == 6
    assert r["flops"] == 2 * 6 * 7 * 5 * 9


# -------------------------------------------------------------------------- broken subjects
CAUGHT = [
    (LdaFromWrongOperand, "matmul.gemm/f32/mm-contig/normal/s0", "crash"),     # reads past the rhs
    (LdaFromWrongOperand, "matmul.gemm/f32/mm-both-t/normal/s0", "fail"),
    (NoBatchStrideForBroadcast, "matmul.gemm/f32/mm-bcast-rhs/normal/s0", "crash"),
    (NeverRefuses, "matmul.gemm/f32/mm-refuse-gap/normal/s0", "fail"),
    (NeverRefuses, "matmul.gemm/f64/mm-refuse-batch2/normal/s0", "fail"),
    (Im2colIgnoresDilation, "conv.im2col/f32/i2-dilation/normal/s0", "fail"),
    (Im2colIgnoresDilation, "conv.im2col1d/bf16/i1-dilation/normal/s0", "fail"),
    (PoolIgnoresSwappedNames, "pool.avg/f32/p-offset/normal/s0", "fail"),
    (PoolIgnoresSwappedNames, "pool.max/f32/p-contig/normal/s0", "crash"),    # writes past the output
    (PoolIgnoresSwappedNames, "pool.avg/u8/p-stepped/normal/s0", "fail"),
]


@pytest.mark.parametrize("subject,case_id,verdict", CAUGHT, ids=[f"{c[0].__name__}:{c[1]}" for c in CAUGHT])
def test_broken_subject_is_caught(subject, case_id, verdict):
    row = run_case(Case.parse(case_id), subject())
    assert row["verdict"] == verdict, row["message"]
    if verdict == "fail" and "refuse" not in case_id:
        assert row["n_bad"] > 0 and row["worst"]["coords"] is not None
    assert run_case(Case.parse(case_id), CpuExecutor())["verdict"] == "pass"


def test_swap_is_invisible_for_square_pools():
    """Square kernel and stride: the swap cancels, so no case of that class can catch it."""
    assert run_case(Case.parse("pool.max/f32/p-square/normal/s0"), PoolIgnoresSwappedNames())["verdict"] == "pass"


# ------------------------------------------------------------------ conv / pool references
def _naive_conv1d(x, w, s, p, d):
    b, ci, l = x.shape
    co, _, k = w.shape
    lo = (l + 2 * p - d * (k - 1) - 1) // s + 1
    out = np.zeros((b, co, lo))
    for bb in range(b):
        for o in range(co):
            for i in range(lo):
                for c in range(ci):
                    for t in range(k):
                        j = i * s + t * d - p
                        if 0 <= j < l:
                            out[bb, o, i] += x[bb, c, j] * w[o, c, t]
    return out


def _naive_conv_t1d(x, w, s, p, d, op_):
    b, ci, l = x.shape
    _, co, k = w.shape
    lo = (l - 1) * s - 2 * p + d * (k - 1) + op_ + 1
    out = np.zeros((b, co, lo))
    for bb in range(b):
        for c in range(ci):
            for i in range(l):
                for t in range(k):
                    o = i * s + t * d - p
                    if 0 <= o < lo:
                        out[bb, :, o] += x[bb, c, i] * w[c, :, t]
    return out


@pytest.mark.parametrize("s,p,d", [(1, 0, 1), (2, 1, 1), (1, 1, 2), (3, 2, 3)])
def test_conv_reference_matches_naive_loops(s, p, d):
    from parity.core.dtypes import dtype
    from parity.ops.conv import compute
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 13)), rng.standard_normal((4, 3, 3))
    g = {"stride": s, "padding": p, "dilation": d, "out_padding": 0}
    assert np.allclose(compute("conv1d", g, x, w, dtype("f64")), _naive_conv1d(x, w, s, p, d))
    wt = rng.standard_normal((3, 4, 3))
    g["out_padding"] = 1 if s > 1 else 0
    assert np.allclose(compute("conv_transpose1d", g, x, wt, dtype("f64")),
                       _naive_conv_t1d(x, wt, s, p, d, g["out_padding"]))
    x2, w2 = rng.standard_normal((1, 2, 6, 7)), rng.standard_normal((3, 2, 2, 3))
    ref = compute("conv2d", g, x2, w2, dtype("f64"))
    # a 2-D conv over rows equals a sum of 1-D convs (check one output row)
    r0 = sum(_naive_conv1d(np.pad(x2, ((0, 0), (0, 0), (p, p), (0, 0)))[:, :, d * t, :], w2[:, :, t, :], s, p, d)
             for t in range(2))
    assert np.allclose(ref[:, :, 0, :], r0)


def test_pool_and_nearest_formulas():
    from parity.ops.pool import f32_scale, nearest_index
    assert f32_scale(3, 3) == np.float32(1 / 9)
    assert list(nearest_index(7, 4, 4 / 7)) == [0, 0, 1, 1, 2, 2, 3]
    assert list(nearest_index(4, 9, 9 / 4)) == [0, 2, 4, 6]
    r = run_case(Case.parse("pool.avg/u8/p-contig/normal/s0"), CpuExecutor())
    assert r["verdict"] == "pass"


def test_known_divergence_is_a_baseline_entry():
    from parity.render.baseline import Entry
    (known,) = CATALOG["conv.conv1d"].known
    e = Entry(f"conv.conv1d/{known.cases}", known.level, known.reason)
    assert e.matches("conv.conv1d/f32/c1-dilation/normal/s0", "cuda")
    assert not e.matches("conv.conv1d/f32/c1-basic/normal/s0", "cuda")
    assert any("cuda-conv1d-dilation" in d for d in CATALOG["conv.conv1d"].divergences)


def test_library_ops_are_not_expected_suite_kernels():
    from parity.host.routines import is_library_kernel
    from parity.suite.coverage import coverage
    from parity.suite.scan import discover
    assert is_library_kernel("gemm_f32") and not is_library_kernel("conv2d_f32")
    rows = coverage(discover(resources.hip_suite()))
    names = {r.kernel: r.status for r in rows}
    assert "gemm_f32" not in names
    for k in ("avg_pool2d_bf16", "upsample_bilinear2d_u8", "conv_transpose2d_f16", "im2col1d_u32", "col2im1d_f64"):
        assert names[k] == "present", k


def test_hip_nvidia_prepare_skips_library_kernels():
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    assert HipOnNvidiaExecutor().prepare("gemm_bf16") is None


# ---------------------------------------------------------------------------------- MIOpen
class FakeMiopen:
    """Records every call; out-params are filled like MIOpen would."""

    def __init__(self, fail: dict | None = None, out_dims=None):
        self.calls, self.fail, self.out_dims = [], fail or {}, out_dims

    def __getattr__(self, name):
        if not name.startswith("miopen"):
            raise AttributeError(name)

        def fn(*args):
            self.calls.append((name, args))
            if name == "miopenGetConvolutionForwardOutputDim":
                for ref, v in zip(args[3:], self.out_dims):
                    ref._obj.value = v
            if name == "miopenConvolutionForwardGetWorkSpaceSize":
                args[5]._obj.value = 4096
            if name == "miopenFindConvolutionForwardAlgorithm":
                args[10][0] = 3            # fwd_algo = miopenConvolutionFwdAlgoWinograd
                args[9]._obj.value = 1
            return self.fail.get(name, 0)
        return fn

    def names(self):
        return [c[0] for c in self.calls]


def test_miopen_marshalling_and_cache():
    from parity.host.miopen import ConvProblem, Miopen
    p = ConvProblem("f16", (2, 3, 7, 6), (4, 3, 3, 2), (1, 1), (2, 2), (1, 1))
    lib = FakeMiopen(out_dims=p.out_dims())
    mi = Miopen(lib)
    allocs = []
    r = mi.forward(p, 0x1000, 0x2000, 0x3000, alloc=lambda n: allocs.append(n) or 0x9000, free=lambda ptr: None)
    assert r == {"algo": 3, "workspace": 4096, "cached": False, "out_dims": (2, 4, 4, 4)}
    calls = dict((n, a) for n, a in lib.calls)
    assert calls["miopenSet4dTensorDescriptor"][1:] == (0, 2, 4, 4, 4)        # y: miopenHalf, out dims
    assert calls["miopenInitConvolutionDescriptor"][1:] == (0, 1, 1, 2, 2, 1, 1)
    find = calls["miopenFindConvolutionForwardAlgorithm"]
    assert find[8] == 1 and find[13] is False and find[2].value == 0x1000 and find[12].value == 4096
    fwd = calls["miopenConvolutionForward"]
    assert fwd[1]._obj.value == 1.0 and fwd[8]._obj.value == 0.0 and fwd[7] == 3
    n_find = lib.names().count("miopenFindConvolutionForwardAlgorithm")
    r2 = mi.forward(p, 0x1000, 0x2000, 0x3000, alloc=lambda n: 0x9000)
    assert r2["cached"] and lib.names().count("miopenFindConvolutionForwardAlgorithm") == n_find
    assert lib.names().count("miopenDestroyTensorDescriptor") == 6
    assert lib.names().count("miopenDestroyConvolutionDescriptor") == 2
    assert allocs == [4096]
    mi.close()
    assert lib.names()[-1] == "miopenDestroy"


def test_miopen_conv1d_maps_to_w_axis_and_errors_are_readable():
    from parity.host.miopen import ConvProblem, Miopen, MiopenError, status_message
    p = ConvProblem.conv1d("f32", (2, 3, 11), (4, 3, 3), padding=1, stride=2, dilation=1)
    assert p.x == (2, 3, 1, 11) and p.pad == (0, 1) and p.stride == (1, 2) and p.out_dims() == (2, 4, 1, 6)
    lib = FakeMiopen(fail={"miopenFindConvolutionForwardAlgorithm": 6}, out_dims=p.out_dims())
    with pytest.raises(MiopenError, match="miopenStatusNotImplemented.*fall back"):
        Miopen(lib).forward(p, 1, 2, 3)
    assert "miopenDestroyConvolutionDescriptor" in lib.names()             # cleaned up on error
    lib = FakeMiopen(out_dims=(2, 4, 1, 7))                                 # disagrees with Candle's shape
    with pytest.raises(MiopenError, match="BadParm"):
        Miopen(lib).forward(p, 1, 2, 3)
    with pytest.raises(MiopenError, match="UnsupportedOp"):
        Miopen(FakeMiopen(out_dims=(1,) * 4)).forward(ConvProblem("f64", (1,) * 4, (1,) * 4, (0, 0), (1, 1), (1, 1)),
                                                       1, 2, 3)
    assert status_message(3) == "miopenStatusBadParm" and status_message(42) == "miopenStatus 42"


def test_miopen_unavailable_without_library(monkeypatch):
    from parity.host import miopen

    def boom():
        raise ImportError("libMIOpen.so not found")
    monkeypatch.setattr(miopen, "load_library", boom)
    ok, why = miopen.detect()
    assert not ok and "libMIOpen" in why


# ------------------------------------------------------------------------------------ peak
def test_peak_table_and_fallback():
    from parity.timing.peak import lookup, peak
    peaks, src = lookup("NVIDIA H100 80GB HBM3")
    assert peaks == {"f16": 989.4, "bf16": 989.4, "f32": 66.9, "f64": 66.9} and "datasheet" in src
    assert lookup("NVIDIA H200")[0]["bf16"] == 989.4
    assert lookup("NVIDIA H100 PCIe")[0]["f16"] == 756.5
    assert lookup("NVIDIA H100 NVL") is None and lookup("NVIDIA H200 NVL") is None   # other clocks: not SXM numbers
    got = peak("Some GPU", measure=lambda dt: {"f16": 100, "bf16": 90, "f32": 20, "f64": 10}[dt])
    assert got["peaks"]["bf16"] == 90 and got["source"].startswith("measured")
    assert peak("Some GPU")["peaks"] == {}


def test_peak_cli_never_labels_a_measurement_with_another_devices_name():
    """`parity peak --device MI300X` measured this machine's GPU under that name (or, without one, was an
    internal error); with --no-measure it printed no peak and exited 0."""
    import json

    from click.testing import CliRunner

    from parity.cli.main import main
    for extra in ((), ("--no-measure",), ("--json",)):
        r = CliRunner().invoke(main, ["peak", "--device", "MI300X", *extra])
        assert (r.exit_code, r.output) == (2, "Error: --device MI300X: not in parity's table (H200, H100 PCIe, H100, "
                                              "A100); run `parity peak` without --device on a machine with that GPU "
                                              "to measure it\n")
    r = CliRunner().invoke(main, ["peak", "--device", "NVIDIA H100 80GB HBM3", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["peaks"]["f32"] == 66.9
