"""What the first H200 run of Candle's #31 kernels found, proven without a GPU (the same 680 cases
failed on Candle's CUDA kernels and on the bundled HIP at wave 64 and 32, so parity was wrong):

1. get_rows_*: `crash setting up buffers: ValueError: not a by-value argument kind: i64`. The launch
   passes `const int64_t ne00`, which the marshalling (parity/host/marshal.py) did not know. Every
   by-value kind now marshals to the numpy type of its C size; and a failure before the launch is
   parity's own `error`, never the kernel's `crash` (a crash means the kernel faulted).
2. mmvq_gguf_<q8_0|q2_K..q6_K>_<T>_plain_cuda<b> on `special`: expected NaN, got finite. The fast
   path's special activations include blocks whose sum overflows half, so the q8_1 block's s is
   inf; the reference added the s term c * (s - d8*sum(q8)) with c = 0 for the formats whose vec_dot
   never reads s (q8_0 and the K-quants take only __low2float(ds) = d8): 0 * inf = NaN, in the
   value and in the tolerance. The kernel computes no such term (matvec.reads_s).
"""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from parity.run.cases import Case, expand
from parity.core.dtypes import dtype
from parity.run.engine import run_case
from parity.executors.cpu import CpuExecutor
from parity.host.marshal import INT_KINDS, arg_values, scalar_arg, scalar_args, setup_error
from parity.core.numerics import round_float, to_f64
from parity.ops import CATALOG
from parity.ops.base import Arg, Launch
from parity.ops.quantized import matvec, q8_1

NEW_PREFIXES = ("reduce.sum_atomic", "quant.get_rows_", "quant.mmvq_gguf_", "quant.indexed_moe_")
# C size of each normalised parameter type (parity/suite/coverage.py's ABI table)
C_BYTES = {"size_t": 8, "u64": 8, "i64": 8, "u32": 4, "i32": 4, "u16": 2, "i16": 2, "u8": 1, "i8": 1,
           "bool": 1, "f32": 4, "f64": 8}


def _prepared(case_id):
    c = Case.parse(case_id)
    return c.catalog_op.spec.prepare(c)


# ------------------------------------------------------------------------ 1. by-value arguments
@pytest.mark.parametrize("kind,value,np_type", [
    ("i32", -7, np.int32), ("u32", 4_000_000_000, np.uint32), ("i64", -(2 ** 40), np.int64),
    ("u64", 2 ** 63 + 5, np.uint64), ("size_t", 2 ** 40 + 3, np.uint64), ("i16", -300, np.int16),
    ("u16", 65535, np.uint16), ("i8", -128, np.int8), ("u8", 255, np.uint8),
    ("f32", 1.5, np.float32), ("f64", -2.25, np.float64), ("bool", True, np.bool_)])
def test_every_by_value_kind_marshals_to_its_c_size_and_bytes(kind, value, np_type):
    v = scalar_arg(Arg(kind, value, name="p"))
    assert type(v) is np_type and v.nbytes == C_BYTES[kind]
    assert v.tobytes() == np.array([value], np_type).tobytes()       # little-endian, two's complement


@pytest.mark.parametrize("kind,value", [("i32", 2 ** 31), ("u32", -1), ("i64", 2 ** 63), ("size_t", -1),
                                        ("u8", 256)])
def test_a_value_out_of_its_kinds_range_is_refused_not_wrapped(kind, value):
    with pytest.raises(ValueError, match="does not fit its kind"):
        scalar_arg(Arg(kind, value, name="p"))


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="not a by-value argument kind: i128"):
        scalar_arg(Arg("i128", 1))


def test_get_rows_marshals_ne00_as_int64_and_nb01_as_size_t():
    """Candle: get_rows_q4_0(const void*, const uint32_t*, float*, const int64_t ne00, const size_t nb01)."""
    _, launch, _ = _prepared("quant.get_rows_q4_0/f32/h4096/normal/s0")
    vals = arg_values(launch, {"src0": 0x1000, "src1": 0x2000, "dst": 0x3000}.__getitem__, lambda a: 0)
    assert [type(v) for v in vals] == [np.uint64, np.uint64, np.uint64, np.int64, np.uint64]
    assert int(vals[3]) == 4096 and int(vals[4]) == 4096 // 32 * 18
    from parity.executors.amd import kernel_arg_buffer
    buf = kernel_arg_buffer(vals)                       # the C argument block: 3 pointers, 2 x 8 bytes
    assert len(buf) == 40 and buf[24:32] == (4096).to_bytes(8, "little", signed=True)


def test_every_new_kernels_launch_marshals_with_the_c_sizes_of_its_parameters():
    """One case of every #31 op: each by-value argument marshals, at the byte size of its kind (the
    kinds the suite's signature check compares with the kernel's declared parameter types)."""
    seen = set()
    for name, op in CATALOG.items():
        if not name.startswith(NEW_PREFIXES):
            continue
        case = next(iter(expand(op, None, None, None, [0])))
        _, launch, _ = case.catalog_op.spec.prepare(case)
        if launch is None:
            continue
        vals = scalar_args(launch)
        kinds = [a.kind for a in launch.args if a.kind not in ("ptr", "info")]
        assert [v.nbytes for v in vals] == [C_BYTES[k] for k in kinds], name
        seen.update(kinds)
    assert {"i32", "i64", "size_t"} <= seen and seen <= set(INT_KINDS) | {"f32", "f64", "bool"}


# A CuPy stand-in on host memory: enough of the API for HipOnNvidiaExecutor.run, so the executor's
# real setup / launch / judge path runs without a GPU.
class _Mem:
    def __init__(self, a):
        self.host = np.array(a)
        self.data = types.SimpleNamespace(ptr=self.host.ctypes.data)


def _fake_cupy(fail_upload=False):
    m = types.ModuleType("cupy")

    def asarray(a):
        if fail_upload:
            raise MemoryError("out of memory allocating 1,024 bytes")
        return _Mem(a)
    m.asarray = asarray
    m.asnumpy = lambda d: d.host.copy()
    m.cuda = types.SimpleNamespace(Device=lambda *a: types.SimpleNamespace(synchronize=lambda: None))
    return m


class _Kernel:
    def __init__(self):
        self.calls = []

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append(args)


def _executor(monkeypatch, cupy, kernel_name):
    from parity.executors import hip_nvidia as hn
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(hn, "signature_mismatch", lambda suite, launch: None)
    ex = hn.HipOnNvidiaExecutor()
    monkeypatch.setattr(ex, "prepare", lambda kernel: None)
    k = _Kernel()
    ex._functions[kernel_name] = k
    return ex, k


def test_executor_launches_get_rows_with_an_int64_ne00(monkeypatch):
    _, launch, _ = _prepared("quant.get_rows_f32/f32/h512/normal/s0")
    ex, k = _executor(monkeypatch, _fake_cupy(), launch.kernel)
    res = ex.run(launch)
    assert res.status == "ok" and len(k.calls) == 1
    assert type(k.calls[0][3]) is np.int64 and int(k.calls[0][3]) == 512


@pytest.mark.parametrize("why", ["unknown kind", "out of range", "upload fails"])
def test_a_launch_parity_cannot_set_up_is_parity_error_not_a_crash(monkeypatch, why):
    case = Case.parse("quant.get_rows_f32/f32/h512/normal/s0")
    built, launch, expected = case.catalog_op.spec.prepare(case)
    if why == "unknown kind":
        launch.args[3] = Arg("i128", 512, name="ne00")
    elif why == "out of range":
        launch.args[3] = Arg("i32", 2 ** 31, name="ne00")
    ex, k = _executor(monkeypatch, _fake_cupy(fail_upload=why == "upload fails"), launch.kernel)
    res = ex.run(launch)
    assert res.status == "error" and not k.calls, res
    assert "not launched" in res.message and "parity internal error" in res.message
    assert not ex._dead                                       # the context is not declared lost
    fields, _ = case.catalog_op.spec.verdict(built, expected, res)
    assert fields["verdict"] == "error"
    if why != "upload fails":                                 # the next launch runs normally
        _, good, _ = _prepared("quant.get_rows_f32/f32/h512/normal/s0")
        ex2, _ = _executor(monkeypatch, _fake_cupy(), good.kernel)
        assert ex2.run(good).status == "ok"


def test_a_chain_step_parity_cannot_marshal_is_parity_error(monkeypatch):
    from parity.ops.base import ChainStep
    _, launch, _ = _prepared("quant.get_rows_f32/f32/h512/normal/s0")
    launch.args[3] = Arg("i128", 512, name="ne00")
    ex, k = _executor(monkeypatch, _fake_cupy(), launch.kernel)
    step = ChainStep(launch=launch, reads={}, writes={"dst": "t0"}, label="get_rows")
    res = ex.chain_step(step, {})
    assert res.status == "error" and not k.calls


def test_setup_error_names_the_kernel_and_the_exception():
    lau = Launch("k", [], {}, (), (1, 1, 1), (1, 1, 1))
    r = setup_error(ValueError("boom"), lau)
    assert r.status == "error" and r.message == \
        "parity internal error setting up buffers for k (not launched): ValueError: boom"


# --------------------------------------------------------------- 2. mmvq_gguf on special values
# Values measured on an H200 (/work/.device/4: new_gpu.log, x/bundled.summary.md), output (0, 0).
GPU = {  # case id: [value(s) the GPU wrote]; q8_0 f32: Candle's source at warp 32, then the bundled HIP at wave 64
    "quant.mmvq_gguf_q8_0_f32_b1/f32/c256/special/s0": [0.0006525255739688873, 0.0006525266217067838],
    "quant.mmvq_gguf_q8_0_f16_b1/f16/c256/special/s0": [0.006595611572265625],
    "quant.mmvq_gguf_q8_0_bf16_b1/bf16/c256/special/s0": [0.00860595703125],
    "quant.mmvq_gguf_q2_K_f32_b1/f32/c256/special/s0": [386472869888.0],
    "quant.mmvq_gguf_q2_K_f16_b1/f16/c256/special/s0": [np.inf],
    "quant.mmvq_gguf_q2_K_bf16_b1/bf16/c256/special/s0": [371514671104.0],
    "quant.mmvq_gguf_q3_K_f32_b1/f32/c256/special/s0": [778249043968.0],
    "quant.mmvq_gguf_q3_K_bf16_b1/bf16/c256/special/s0": [816043786240.0],
    "quant.mmvq_gguf_q4_K_f32_b1/f32/c256/special/s0": [7781485641728.0],
    "quant.mmvq_gguf_q4_K_bf16_b1/bf16/c256/special/s0": [7971459301376.0],
    "quant.mmvq_gguf_q5_K_f32_b1/f32/c256/special/s0": [16870615810048.0],
    "quant.mmvq_gguf_q5_K_bf16_b1/bf16/c256/special/s0": [17729624997888.0],
    "quant.mmvq_gguf_q6_K_f32_b1/f32/c256/special/s0": [-242898403328.0],
    "quant.mmvq_gguf_q6_K_f16_b1/f16/c256/special/s0": [-np.inf],
    "quant.mmvq_gguf_q6_K_bf16_b1/bf16/c256/special/s0": [-294205259776.0],
}


def candle_q8_0_mmvq(vx, vy, ncols, nrows, batch, stride_col_y, nwarps, warp=32):
    """mmvq_core_impl<q8_0> of Candle's mmvq_gguf.cu, literally and apart from parity's emulation:
    thread tid takes blocks kbx = tid/4 + 32*i and ints kqs = 2*(tid%4), 2*(tid%4)+1 of each;
    vec_dot_q8_0_q8_1_impl = sumi * d(weight) * d8 in f32, __low2half(ds) only (s never read);
    tmp += per thread, warps 1.. added into warp 0 in order, then the xor butterfly."""
    QK, QI, VDR, QS = 32, 8, 2, 36
    bpr = ncols // QK
    per_iter = VDR * nwarps * warp // QI
    rows_cta = 1 if batch == 1 else 2
    ncta = -(-nrows // rows_cta)
    wb = vx[: ncta * rows_cta * bpr * 34].reshape(ncta * rows_cta, bpr, 34)   # row nrows: the padding
    wd = wb[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    wq = wb[..., 2:34].view(np.int8).astype(np.int64).reshape(-1, bpr, 4, 8)       # 4 parts of 2 ints
    yb = np.stack([vy[j * stride_col_y * QS:(j * stride_col_y + bpr) * QS] for j in range(batch)]).reshape(batch, bpr, QS)
    yd = yb[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    yq = yb[..., 4:36].view(np.int8).astype(np.int64).reshape(batch, bpr, 4, 8)
    sumi = np.einsum("rkpe,jkpe->jrkp", wq, yq)                                     # exact ints
    with np.errstate(all="ignore"):
        part = ((sumi.astype(np.float32) * wd[None, :, :, None]).astype(np.float32)
                * yd[:, None, :, None]).astype(np.float32)                          # (batch, rows, bpr, 4)
        tmp = np.zeros((batch, ncta * rows_cta, nwarps * warp), np.float32)
        for tid in range(nwarps * warp):
            for kbx in range(tid // (QI // VDR), bpr, per_iter):
                tmp[..., tid] = (tmp[..., tid] + part[..., kbx, tid % (QI // VDR)]).astype(np.float32)
        acc = tmp[..., :warp].copy()
        for w in range(1, nwarps):
            acc = (acc + tmp[..., w * warp:(w + 1) * warp]).astype(np.float32)
        lanes, m = np.arange(warp), warp // 2
        while m:
            acc = (acc + acc[..., lanes ^ m]).astype(np.float32)
            m //= 2
    return acc[..., 0][:, :nrows]


def test_the_special_activations_have_an_inf_s_that_q8_0_never_reads():
    built, launch, _ = _prepared("quant.mmvq_gguf_q8_0_f32_b1/f32/c256/special/s0")
    _, s, _ = q8_1.fields(built.inputs["vy"], 1)
    assert np.isinf(s).any()                                  # the overflow blocks (q8_1.activations)
    g = built.geo
    got = candle_q8_0_mmvq(built.inputs["vx"], built.inputs["vy"], g["ncols"], g["nrows"], 1, 16, 4)
    poisoned = built.inputs["vy"].reshape(-1, 36).copy()
    poisoned[:, 2:4] = np.array([np.nan], np.float16).view(np.uint8)   # every s NaN: nothing changes
    assert np.array_equal(candle_q8_0_mmvq(built.inputs["vx"], poisoned.reshape(-1), g["ncols"], g["nrows"],
                                           1, 16, 4), got)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_a_literal_emulation_of_candles_q8_0_kernel_gives_the_gpus_value(dt):
    case_id = f"quant.mmvq_gguf_q8_0_{dt}_b1/{dt}/c256/special/s0"
    built, launch, expected = _prepared(case_id)
    g = built.geo
    out = candle_q8_0_mmvq(built.inputs["vx"], built.inputs["vy"], g["ncols"], g["nrows"], 1,
                           q8_1.padded(g["ncols"]) // 32, int(launch.block[1]))
    got = to_f64(round_float(out.astype(np.float64), dtype(dt)))      # (dst_t) tmp
    assert got[0, 0] == GPU[case_id][0]                                # Candle's warp-32 value, bit for bit
    assert np.isfinite(expected).all()
    assert built.op.spec.judge(expected, round_float(out.astype(np.float64), dtype(dt)), built).passed


@pytest.mark.parametrize("case_id", sorted(GPU))
def test_the_gpus_values_pass_with_a_finite_derived_tolerance(case_id):
    built, _, expected = _prepared(case_id)
    e, tol = matvec.reference(built)
    assert np.isfinite(e).all() and np.isfinite(tol).all() and (tol > 0).all()
    assert (tol < 1e-3 * np.abs(e)).all()                    # a few f32 ulps per part, not a free pass
    for v in GPU[case_id]:
        got = round_float(np.array([[v]]), built.out_dtype)
        assert built.op.spec.judge(expected, got, built).passed, v
        far = round_float(np.array([[float(e[0, 0]) * 1.01]]), built.out_dtype)
        if np.isfinite(far).all():
            assert not built.op.spec.judge(expected, far, built).passed


@pytest.mark.parametrize("fmt", ["q8_0"])
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_every_q8_0_case_matches_the_literal_kernel_including_nans(fmt, batch):
    """Every shape and value class of the q8_0 fast kernels: the literal emulation (NaN exactly where
    a NaN weight scale is read) passes the reference's judge."""
    for dt in ("f32", "f16", "bf16"):
        op = CATALOG[f"quant.mmvq_gguf_{fmt}_{dt}_b{batch}"]
        for case in expand(op, None, None, None, [0]):
            built, launch, expected = case.catalog_op.spec.prepare(case)
            g = built.geo
            out = candle_q8_0_mmvq(built.inputs["vx"], built.inputs["vy"], g["ncols"], g["nrows"], batch,
                                   q8_1.padded(g["ncols"]) // 32, int(launch.block[1]))
            got = round_float(out.astype(np.float64), dtype(dt))
            assert built.op.spec.judge(expected, got, built).passed, case.id


def test_reads_s_is_the_kernels_vec_dot():
    """mmvq_gguf.cu: q4_0/q5_0 use d4*(sumi*d8 - k*s), q4_1/q5_1 m*s; q8_0 and the K-quants only
    __low2float(ds). mmq: q4_K/q5_K mins times s; q5_0 folds -16 into the quants."""
    assert [f for f in matvec.DOTS if matvec.reads_s(f, "mmvq")] == ["q4_0", "q4_1", "q5_0", "q5_1"]
    assert [f for f in matvec.DOTS if matvec.reads_s(f, "mmq")] == ["q4_0", "q4_1", "q5_1", "q4_K", "q5_K"]
    assert not any(matvec.reads_s(f, "dmmv") for f in matvec.DOTS)


def test_formats_that_read_s_still_get_the_inf_it_makes():
    """q4_0 reads s: its inf s makes the kernel's result non-finite, and the reference keeps it."""
    _, _, expected = _prepared("quant.mmvq_gguf_q4_0_f32_b1/f32/c256/special/s0")
    assert not np.isfinite(expected).all()


class _SPoisoned(CpuExecutor):
    """A cpu subject whose q8_1 s reads as NaN: only the formats whose kernel reads s may change."""
    def q8_1_sum(self, s):
        return np.full_like(s, np.nan)


@pytest.mark.parametrize("fmt,verdict", [("q8_0", "pass"), ("q2_K", "pass"), ("q4_K", "pass"), ("q6_K", "pass"),
                                         ("q4_0", "fail"), ("q5_1", "fail")])
def test_the_cpu_emulation_reads_s_only_where_the_kernel_does(fmt, verdict):
    row = run_case(Case.parse(f"quant.mmvq_gguf_{fmt}_f32_b1/f32/c768/normal/s0"), _SPoisoned())
    assert row["verdict"] == verdict
    row = run_case(Case.parse(f"quant.mmvq_{fmt}_b1/f32/c768/normal/s0"), _SPoisoned())
    assert row["verdict"] == verdict
