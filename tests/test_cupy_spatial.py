"""The `cupy` level's spatial array code (parity/executors/cupy_spatial.py): every pr case of matmul,
pool/upsample and the conv family (conv.host included) computed with xp=numpy and judged by each
op's own judge, the GEMM's reading of layouts against Candle's gemm_config, and deliberately wrong
variants caught with exact verdicts. The GPU run (xp=cupy) of these ops is
tests/test_cupy_structured.py::test_gpu_cupy_level_passes_every_pr_case_of_every_array_code_op."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from test_cupy_structured import SPATIAL_OPS, NumpyStructured, assert_all_pass

from parity.executors import cupy_spatial as sp
from parity.run.cases import Case, Filters, load_sweep
from parity.run.engine import run_case
from parity.ops.matmul import SHAPES, MatMulNonContiguous, gemm_config
from parity.ops.structured import HostRefused


def test_every_pr_case_of_the_spatial_families_passes_its_own_judge():
    cases = load_sweep("pr", Filters(ops=SPATIAL_OPS))
    rows = assert_all_pass(cases, NumpyStructured())
    assert Counter(c.op for c in cases) == {
        "matmul.gemm": 96, "pool.avg": 36, "pool.max": 72, "upsample.nearest2d": 30, "upsample.bilinear2d": 36,
        "conv.conv1d": 30, "conv.conv2d": 30, "conv.conv_transpose1d": 24, "conv.conv_transpose2d": 18,
        "conv.im2col": 30, "conv.im2col1d": 24, "conv.col2im1d": 18, "conv.conv1d_host": 32, "conv.conv2d_host": 32}
    refused = [r for r in rows if r["message"].startswith("refused as expected")]
    assert len(refused) == 5 * 4                                 # the five mm-refuse-* classes x 4 dtypes


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_gemm_reads_layouts_as_candles_gemm_config(name):
    """The independent reading (row/column steps, batch stride, refusal) agrees with gemm_config."""
    g = SHAPES[name].geo
    (ls, lst), (rs, rst) = ((g[o]["shape"], g[o]["strides"]) for o in ("lhs", "rhs"))
    m, k, n = ls[-2], ls[-1], rs[-1]
    if 0 in (m, k, n):
        return                                   # not launched
    try:
        cfg = gemm_config((1, m, n, k), (ls, lst), (rs, rst))
    except MatMulNonContiguous:
        with pytest.raises(HostRefused):
            sp.blas_matrix(m, k, lst[-2], lst[-1], "lhs"), sp.blas_matrix(k, n, rst[-2], rst[-1], "rhs")
            sp.batch_step(list(ls), list(lst), "lhs"), sp.batch_step(list(rs), list(rst), "rhs")
        return
    # column-major op(B) = lhs: "N" reads row-major with ld = k, "T" column-major with ld = m
    assert sp.blas_matrix(m, k, lst[-2], lst[-1], "lhs") == ((cfg.ldb, 1) if cfg.transb == "N" else (1, cfg.ldb))
    assert sp.blas_matrix(k, n, rst[-2], rst[-1], "rhs") == ((cfg.lda, 1) if cfg.transa == "N" else (1, cfg.lda))
    if len(ls) > 2:
        assert sp.batch_step(list(ls), list(lst), "lhs") == cfg.stride_b
    if len(rs) > 2:
        assert sp.batch_step(list(rs), list(rst), "rhs") == cfg.stride_a


# ------------------------------------------------------- deliberately wrong variants, caught
_blas, _taps, _bilinear = sp.blas_matrix, sp.conv_taps, sp.bilinear_taps


def _lhs_as_row_major(rows, cols, s_r, s_c, what):
    """The lhs's transposed strides ignored: always read as row-major (ld = k)."""
    return (cols, 1) if what == "lhs" else _blas(rows, cols, s_r, s_c, what)


def _nan_dropping_max(xp, v, key):
    """fmax for every dtype: f16/bf16 NaN no longer propagates."""
    nan = xp.isnan(v)
    return xp.where(nan.all(axis=-1), np.nan, xp.where(nan, -np.inf, v).max(axis=-1))


def _no_dilation(xp, n_out, n_in, k, s, p, d, transposed):
    return _taps(xp, n_out, n_in, k, s, p, 1, transposed)


def _transposed_any_remainder(xp, n_out, n_in, k, s, p, d, transposed):
    """conv_transpose taking (o + p - k*d) / s even when s does not divide it."""
    if not transposed:
        return _taps(xp, n_out, n_in, k, s, p, d, transposed)
    num = xp.arange(n_out)[:, None] + p - xp.arange(k)[None, :] * d
    ok = (num >= 0) & (num // s < n_in)
    return xp.where(ok, num // s, 0), ok


def _dense_view(xp, buf, dims, strides):
    """Views read as contiguous from their start offset (CUDA Candle's GEMM on the original kernel
    buffer: KD cuda-conv-noncontiguous-kernel)."""
    return buf[:int(np.prod(dims))].reshape(dims)


def _no_scale_factors(xp, n_out, n_in, align, has_scale, factor):
    return _bilinear(xp, n_out, n_in, align, False, factor)


# (what is broken, case, n_bad, worst coords, expected, got)
WRONG = [
    (("blas_matrix", _lhs_as_row_major), "matmul.gemm/f32/mm-lhs-t/normal/s0", 70, [0, 1, 2],
     "27.00525665283203", "-65.33023071289062"),
    (("window_max", _nan_dropping_max), "pool.max/f16/p-contig/special/s0", 3, [0, 2, 2, 5], "nan", "-2.56640625"),
    (("bilinear_taps", _no_scale_factors), "upsample.bilinear2d/f64/b-scales/normal/s0", 160, [0, 0, 3, 10],
     "0.17356450914682398", "-0.6773451049570682"),
    (("conv_taps", _no_dilation), "conv.conv2d/f32/c2-dilation/normal/s0", 144, [0, 0, 0, 1],
     "17.363264083862305", "-31.120567321777344"),
    (("conv_taps", _no_dilation), "conv.im2col1d/u8/i1-dilation/normal/s0", 120, [1, 8, 0, 2], "12", "254"),
    (("conv_taps", _transposed_any_remainder), "conv.conv_transpose1d/u32/t1-basic/normal/s0", 80, [1, 2, 3],
     "4084406836", "456320800"),
    (("gather_view", _dense_view), "conv.conv1d_host/f32/c1-kslice/normal/s0", 54, [0, 1, 0],
     "-24.13575553894043", "nan"),
]


@pytest.mark.parametrize("patch,case_id,n_bad,coords,expected,got", WRONG, ids=[w[1] for w in WRONG])
def test_wrong_variant_is_caught(monkeypatch, patch, case_id, n_bad, coords, expected, got):
    assert run_case(Case.parse(case_id), NumpyStructured())["verdict"] == "pass"
    monkeypatch.setattr(sp, *patch)
    row = run_case(Case.parse(case_id), NumpyStructured())
    assert (row["verdict"], row["n_bad"]) == ("fail", n_bad)
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == (coords, expected, got)


def test_a_layout_candle_refuses_must_be_refused(monkeypatch):
    """Batch strides that do not collapse, taken anyway (the second one): a result where Candle errors."""
    cid = "matmul.gemm/bf16/mm-refuse-batch2/normal/s0"
    assert run_case(Case.parse(cid), NumpyStructured())["message"].startswith("refused as expected: MatMulNonContiguous")
    monkeypatch.setattr(sp, "batch_step", lambda shape, strides, what: strides[-3])
    row = run_case(Case.parse(cid), NumpyStructured())
    assert row["verdict"] == "fail" and row["message"].startswith("expected a refusal (MatMulNonContiguous")
    assert row["message"].endswith("but the executor computed a result")
