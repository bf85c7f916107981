"""The `cupy` level's array code (parity/executors/cupy_structured.py): the bit conversions, every
pr case of reduce / softmax / rmsnorm / layernorm / rope / indexing / argsort / const_set / copy2d
/ fill computed by the same array code with xp=numpy and judged by each op's own judge,
deliberately wrong variants caught with exact verdicts, and on a GPU (`pytest -m gpu`) the level
itself with xp=cupy on every array-code op (the spatial families' NumPy tests are in
tests/test_cupy_spatial.py)."""
from __future__ import annotations

from collections import Counter

import ml_dtypes
import numpy as np
import pytest

from parity.executors import cupy_ref
from parity.executors import cupy_structured as cs
from parity.executors.base import Availability, Executor
from parity.ops.base import ExecResult
from parity.executors.cupy_ref import NP_NAMES, CupyRefExecutor
from parity.executors.cupy_spatial import execute_array_code
from parity.run.cases import Case, Filters, load_sweep
from parity.run.engine import run_case, run_cases
from parity.ops import CATALOG, expected_kernels
from parity.ops.structured import HostRefused

COVERED_OPS = ["reduce.*", "nn.*", "index.*", "sort.*", "fill.*"]
SPATIAL_OPS = ["matmul.*", "pool.*", "upsample.*", "conv.*"]          # cupy_spatial.py


class NumpyStructured(Executor):
    """cupy_spatial.execute_array_code with xp=numpy on the launch's buffers (storage dtypes, as on the GPU)."""
    level = "cupy-on-numpy"

    def __init__(self) -> None:
        self._kernels = expected_kernels()

    def availability(self) -> Availability:
        return Availability(True, device="NumPy")

    def run(self, launch) -> ExecResult:
        op, key = self._kernels[launch.kernel]
        bufs = {n: np.ascontiguousarray(b).reshape(-1).copy().view(NP_NAMES[launch.dtypes[n]])
                for n, b in launch.buffers.items()}
        try:
            execute_array_code(np, launch, op, key, bufs)
        except HostRefused as e:
            return ExecResult("refused", message=str(e))
        except IndexError as e:                  # NumPy bounds-checks what a GPU would read or write
            return ExecResult("crash", message=f"{launch.kernel} out of bounds: {e}")
        return ExecResult("ok", outputs={n: bufs[n].view(launch.buffers[n].dtype).reshape(launch.buffers[n].shape)
                                         for n in launch.outputs})


@pytest.fixture(scope="module")
def pr_cases():
    return load_sweep("pr", Filters(ops=COVERED_OPS))


def assert_all_pass(cases, ex) -> list[dict]:
    rows = run_cases(cases, ex)
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{len(bad)} cases:\n" + "\n".join(bad[:40])
    return rows


# ------------------------------------------------------------------------ bit conversions
@pytest.mark.parametrize("t,npd,nan", [("f16", np.float16, 0x7FFF), ("bf16", ml_dtypes.bfloat16, 0x7FFF),
                                       ("f8_e4m3", ml_dtypes.float8_e4m3fn, 0x7F)])
def test_every_16_and_8_bit_pattern_widens_exactly_and_narrows_back(t, npd, nan):
    u = np.arange(1 << np.dtype(npd).itemsize * 8).astype(f"uint{np.dtype(npd).itemsize * 8}")
    with np.errstate(invalid="ignore"):                          # ml_dtypes warns on NaN
        ref = u.view(npd).astype(np.float64)
    w = cs.widen(np, u, t)
    assert np.array_equal(w, ref, equal_nan=True) and np.array_equal(np.signbit(w), np.signbit(ref))
    back = cs.narrow(np, w, t)
    assert np.all((back == u) | np.isnan(ref))
    assert np.all(back[np.isnan(ref)] == nan)                    # CUDA's canonical NaN


def test_fp8_narrows_like_cvt_rn_satfinite_and_host_scalars_like_from_f64():
    x = np.array([448.0, 464.0, 470.0, 1e9, np.inf, -np.inf, np.nan, -0.0, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 0.3])
    assert [hex(v) for v in cs.narrow(np, x, "f8_e4m3")] == [
        "0x7e", "0x7e", "0x7e", "0x7e", "0x7e", "0xfe", "0x7f", "0x80", "0x1", "0x0", "0x2", "0x2a"]
    # T::from_f64: floats round once (fp8 without saturation), integers truncate and saturate
    assert [int(cs.host_scalar(v, "f8_e4m3")[0]) for v in (3.0, -0.5, 464.0, 465.0)] == [0x44, 0xB0, 0x7E, 0x7F]
    assert [int(cs.host_scalar(v, t)[0]) for v, t in ((-0.5, "u8"), (300.0, "u8"), (-2.7, "i64"), (np.nan, "u32"))] \
        == [0, 255, -2, 0]
    assert cs.host_scalar(-0.5, "bf16")[0] == 0xBF00 and cs.host_scalar(0.1, "f32")[0] == np.float32(0.1)


def test_narrow_rounds_once_to_nearest_even():
    f32 = np.float32
    with np.errstate(all="ignore"):
        x = np.random.default_rng(0).standard_normal(100_000) * 10.0 ** np.random.default_rng(1).integers(-320, 300, 100_000)
        assert np.array_equal(cs.narrow(np, x, "f32").view(np.uint32), x.astype(f32).view(np.uint32))
        assert np.array_equal(cs.narrow(np, x, "f16").view(np.float16), x.astype(np.float16))
    # bf16: ties to even, a carry into the next binade, subnormals, overflow, and a value just
    # above a midpoint that f64 -> f32 -> bf16 (double rounding) gets wrong
    x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 2 - 2 ** -9, 2.0 ** -133, 2.0 ** -134, 3.4e38, 1e39, -0.0,
                  -(0.11962890625 + 0.1201171875) / 2 * (1 - 2 ** -40)])
    assert [hex(v) for v in cs.narrow(np, x, "bf16")] == [
        "0x3f80", "0x3f82", "0x4000", "0x1", "0x0", "0x7f80", "0x7f80", "0x8000", "0xbdf5"]


# ------------------------------------------------------------------ the pr cases, xp=numpy
def test_every_pr_case_of_the_covered_families_passes_its_own_judge(pr_cases):
    assert_all_pass(pr_cases, NumpyStructured())
    assert Counter(c.op for c in pr_cases if not c.op.startswith(("reduce.", "sort."))) == {
        "nn.softmax": 90, "nn.rmsnorm": 72, "nn.layernorm": 72, "nn.rope_i": 16, "nn.rope": 16, "nn.rope_thd": 16,
        "index.index_select": 468, "index.gather": 468, "index.index_add": 468, "index.scatter_add": 468,
        "index.scatter": 378, "fill.const_set": 432, "fill.fill": 256, "fill.copy2d": 32}
    fams = Counter(CATALOG[c.op].family for c in pr_cases)
    assert fams == {"reduce": 1176 + 135 + 2 * 21, "nn": 282, "sort": 196, "indexing": 2250, "fill": 720}   # + sum_T (#31), + positive sums
    assert {p for c in pr_cases for p in c.dtype.split("-")} == {"u8", "u32", "i16", "i32", "i64", "f32", "f64",
                                                                 "f16", "bf16", "f8_e4m3"}


def test_every_catalog_op_is_on_the_level():
    """No op answers `unavailable` on the cupy level: an ElementwiseKernel or array code each
    (but the quantized family, #18's first landing: no CuPy dequantizer yet)."""
    assert all(cupy_ref.level_supported(op, k) == "" for op in CATALOG.values() for k in op.dtypes
               if op.family != "quantized")
    assert {op.family for op in CATALOG.values() if cs.array_code(op)} == set(cs.ARRAY_FAMILIES) | {"quantized"}
    assert not cs.array_code(CATALOG["unary.exp"]) and cs.array_code(CATALOG["fill.copy2d"])
    from types import SimpleNamespace
    why = cs.structured_supported(SimpleNamespace(name="x.y", family="quantized"))
    assert why.startswith("x.y is not in the CuPy reference") and "conv" in why


def test_structured_kernels_skip_the_subnormal_self_check(monkeypatch):
    """float64/integer arithmetic is not flushed, so a failing self-check leaves them available."""
    def probe():
        raise RuntimeError("no device")
    monkeypatch.setattr(cupy_ref, "run_subnormal_probe", probe)
    ex = CupyRefExecutor()
    assert ex.prepare("fast_argmax_f32") is None and ex.prepare("softmax_bf16") is None
    assert ex.prepare("uneg_f32").status == "unavailable"
    for kernel in ("rope_thd_f32", "const_set_bf16", "copy2d_f32", "sa_u8_bf16", "gemm_f32", "conv2d_host_bf16",
                   "max_pool2d_f32", "im2col_bf16"):
        assert ex.prepare(kernel) is None, kernel


def test_array_code_is_not_a_timing_baseline():
    """Array code is several launches: timing it would make HIP/CuPy ratios meaningless."""
    from parity.run.engine import prepare_case
    launch = prepare_case(Case.parse("fill.fill/f32/len1025/normal/s0@value=3")).launch
    with pytest.raises(RuntimeError, match="fill_f32: the CuPy reference runs it as array code, not a timing baseline"):
        CupyRefExecutor().prepared(launch)


# ------------------------------------------------------- deliberately wrong variants, caught
def _first_tie(xp, kind, v, block):
    return (xp.argmax(v, axis=1) if kind == "argmax" else xp.argmin(v, axis=1)).astype(xp.int64)


def _softmax_without_max(xp, x, t):
    e = cs.round_trip(xp, xp.exp(x), t)
    return e * cs.round_trip(xp, 1.0 / e.sum(axis=-1, keepdims=True), t)


def _scatter_drops_duplicates(xp, root, ids, inp, out, pre, post, n_j, dst_dim, right, t):
    """Every j at once: a fancy-index store keeps one write per element, so duplicate ids lose adds."""
    P, Q = xp.repeat(pre, n_j), xp.repeat(post, n_j)
    src_i = (P * n_j + xp.tile(xp.arange(n_j), pre.size)) * right + Q
    idv = ids[src_i]
    live = ~cs.is_sentinel(xp, idv)
    dst_i = ((P * dst_dim + idv.astype(xp.int64)) * right + Q)[live]
    out[dst_i] = cs.add_in_t(xp, out[dst_i], inp[src_i[live]], t)


def _no_batch_table(xp, idx, stride_b, half):
    return 0


# (what is broken, case, n_bad, worst coords, expected, got)
WRONG = [
    (("arg_tree", _first_tie), "reduce.argmax/f32/row100/ties/s0", 29, [20], "96", "2"),
    (("arg_tree", _first_tie), "reduce.argmin/u8/dim0/ties/s0", 26, [5], "64", "1"),
    (("NAN_IGNORING", ("f32", "f64", "f16", "bf16")), "reduce.max/f16/row100/special/s0", 26, [0], "nan", "inf"),
    (("softmax_rows", _softmax_without_max), "nn.softmax/bf16/c100/normal/s0", 727, [12, 63],
     "2.6226043701171875e-05", "2.7298927307128906e-05"),
    # rope with per-batch (3-D) cos/sin but stride_b ignored: every batch reads batch 0's table
    (("table_offset", _no_batch_table), "nn.rope_thd/bf16/rope3d/normal/s0", 117, [1, 0, 3, 4], "-6.25", "5.0"),
    (("table_offset", _no_batch_table), "nn.rope/f32/rope3d-big/normal/s0", 2176, [2, 0, 15, 8],
     "6.662434101104736", "-6.0758209228515625"),
    (("scatter_loop", _scatter_drops_duplicates), "index.scatter_add/u8-u32/dups/normal/s0", 38, [1, 0, 0],
     "4062820225", "180381242"),
    (("scatter_loop", _scatter_drops_duplicates), "index.scatter_add/u32-f16/dups/normal/s0", 40, [1, 2, 4],
     "4.390625", "-3.64453125"),
    # const_set writing out[0..numel) densely, ignoring info: the stepped view's gaps get the value
    (("strided_index", lambda xp, i, dims, strides: i), "fill.const_set/f16/stepped/normal/s0@value=-0.5", 462, [4],
     "-0.0220489501953125", "-0.5"),
]


@pytest.mark.parametrize("patch,case_id,n_bad,coords,expected,got", WRONG, ids=[w[1] for w in WRONG])
def test_wrong_variant_is_caught(monkeypatch, patch, case_id, n_bad, coords, expected, got):
    assert run_case(Case.parse(case_id), NumpyStructured())["verdict"] == "pass"
    monkeypatch.setattr(cs, *patch)
    row = run_case(Case.parse(case_id), NumpyStructured())
    assert (row["verdict"], row["n_bad"]) == ("fail", n_bad)
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == (coords, expected, got)


def test_ignored_u8_sentinel_reads_out_of_bounds(monkeypatch):
    """index_select taking 255 (max_value<u8>) as an id reads 255*right past the row: NumPy's bounds
    check makes it a crash (a GPU would read or fault outside the source)."""
    cid = "index.index_select/u8-f32/sentinel/normal/s0"
    assert run_case(Case.parse(cid), NumpyStructured())["verdict"] == "pass"
    monkeypatch.setattr(cs, "is_sentinel", lambda xp, ids: ids != ids)
    row = run_case(Case.parse(cid), NumpyStructured())
    assert (row["verdict"], row["message"]) == (
        "crash", "is_u8_f32 out of bounds: index 1275 is out of bounds for axis 0 with size 140")


# ------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_cupy_level_passes_every_pr_case_of_every_array_code_op(pr_cases):
    """The level itself (xp=cupy) on every pr case of the ops it runs as array code: the structured
    families, the fill family, matmul, pool/upsample and conv (conv.host included)."""
    cases = pr_cases + load_sweep("pr", Filters(ops=SPATIAL_OPS))
    ex = CupyRefExecutor()
    av = ex.availability()
    if not av.available:
        pytest.skip(f"cupy level unavailable: {av.reason}")
    try:
        rows = assert_all_pass(cases, ex)
    finally:
        ex.close()
    # one row per case, and the cases are every pr case of an array-code family (derived from the
    # sweep and the catalog, never a count: a count went stale as the sweep grew)
    assert len(rows) == len(cases)
    array_code = {c.id for c in load_sweep("pr", Filters()) if c.op in CATALOG and CATALOG[c.op].family in cs.ARRAY_FAMILIES}
    assert {r["case_id"] for r in rows} == {c.id for c in cases} == array_code
    assert {CATALOG[c.op].family for c in cases} == set(cs.ARRAY_FAMILIES)
