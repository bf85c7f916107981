"""The `cupy` level's structured families (parity/backends/cupy_structured.py): the bit
conversions, every pr case of reduce / softmax / rmsnorm / layernorm / argsort computed by the
same array code with xp=numpy and judged by each op's structured judge, deliberately wrong
variants caught with exact verdicts, and on a GPU (`pytest -m gpu`) the level itself with xp=cupy."""
from __future__ import annotations

from collections import Counter

import ml_dtypes
import numpy as np
import pytest

from parity.backends import cupy_ref
from parity.backends import cupy_structured as cs
from parity.backends.base import Availability, ExecResult, Executor
from parity.backends.cupy_ref import NP_NAMES, CupyRefExecutor
from parity.cases import Case, Filters, load_sweep
from parity.engine import run_case, run_cases
from parity.ops import CATALOG, expected_kernels

COVERED_OPS = ["reduce.*", "nn.softmax", "nn.rmsnorm", "nn.layernorm", "sort.*"]


class NumpyStructured(Executor):
    """cupy_structured.execute with xp=numpy on the launch's buffers (storage dtypes, as on the GPU)."""
    level = "cupy-on-numpy"

    def __init__(self) -> None:
        self._kernels = expected_kernels()

    def availability(self) -> Availability:
        return Availability(True, device="NumPy")

    def run(self, launch) -> ExecResult:
        op, key = self._kernels[launch.kernel]
        bufs = {n: np.ascontiguousarray(b).reshape(-1).copy().view(NP_NAMES[launch.dtypes[n]])
                for n, b in launch.buffers.items()}
        cs.execute(np, launch, op, key, bufs)
        return ExecResult("ok", outputs={n: bufs[n].view(launch.buffers[n].dtype).reshape(launch.buffers[n].shape)
                                         for n in launch.outputs})


@pytest.fixture(scope="module")
def pr_cases():
    return load_sweep("pr", Filters(ops=COVERED_OPS))


# ------------------------------------------------------------------------ bit conversions
@pytest.mark.parametrize("t,npd", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_every_16_bit_pattern_widens_exactly_and_narrows_back(t, npd):
    u = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):                          # ml_dtypes warns on NaN
        ref = u.view(npd).astype(np.float64)
    w = cs.widen(np, u, t)
    assert np.array_equal(w, ref, equal_nan=True) and np.array_equal(np.signbit(w), np.signbit(ref))
    back = cs.narrow(np, w, t)
    assert np.all((back == u) | np.isnan(ref))
    assert np.all(back[np.isnan(ref)] == 0x7FFF)                 # CUDA's canonical NaN


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
def test_every_pr_case_of_the_covered_families_passes_the_structured_judge(pr_cases):
    rows = run_cases(pr_cases, NumpyStructured())
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')}" for r in rows if r["verdict"] != "pass"]
    assert not bad, "\n".join(bad[:30])
    fams = Counter(CATALOG[c.op].family for c in pr_cases)
    assert fams == {"reduce": 861, "nn": 96, "sort": 196}
    assert {c.dtype for c in pr_cases} == {"u8", "u32", "i64", "f32", "f64", "f16", "bf16"}


def test_supported_ops_and_reasons():
    assert all(cupy_ref.level_supported(CATALOG[n], "bf16") == "" for n in ("reduce.argmin", "nn.layernorm", "sort.desc"))
    for name in ("nn.rope_i", "index.gather", "conv.conv2d", "pool.max"):
        why = cupy_ref.level_supported(CATALOG[name], CATALOG[name].dtypes[0])
        assert why.startswith(f"{name} is not in the CuPy reference") and "argsort" in why, name


def test_structured_kernels_skip_the_subnormal_self_check(monkeypatch):
    """float64/integer arithmetic is not flushed, so a failing self-check leaves them available."""
    def probe():
        raise RuntimeError("no device")
    monkeypatch.setattr(cupy_ref, "run_subnormal_probe", probe)
    ex = CupyRefExecutor()
    assert ex.prepare("fast_argmax_f32") is None and ex.prepare("softmax_bf16") is None
    assert ex.prepare("uneg_f32").status == "unavailable"
    res = ex.prepare("rope_thd_f32")
    assert res.status == "unavailable" and "not in the CuPy reference" in res.message


# ------------------------------------------------------- deliberately wrong variants, caught
def _first_tie(xp, kind, v, block):
    return (xp.argmax(v, axis=1) if kind == "argmax" else xp.argmin(v, axis=1)).astype(xp.int64)


def _softmax_without_max(xp, x, t):
    e = cs.round_trip(xp, xp.exp(x), t)
    return e * cs.round_trip(xp, 1.0 / e.sum(axis=-1, keepdims=True), t)


# (what is broken, case, n_bad, worst coords, expected, got)
WRONG = [
    (("arg_tree", _first_tie), "reduce.argmax/f32/row100/ties/s0", 29, [20], "96", "2"),
    (("arg_tree", _first_tie), "reduce.argmin/u8/dim0/ties/s0", 26, [5], "64", "1"),
    (("NAN_IGNORING", ("f32", "f64", "f16", "bf16")), "reduce.max/f16/row100/special/s0", 26, [0], "nan", "inf"),
    (("softmax_rows", _softmax_without_max), "nn.softmax/bf16/c100/normal/s0", 727, [12, 63],
     "2.6226043701171875e-05", "2.7298927307128906e-05"),
]


@pytest.mark.parametrize("patch,case_id,n_bad,coords,expected,got", WRONG, ids=[w[1] for w in WRONG])
def test_wrong_variant_is_caught(monkeypatch, patch, case_id, n_bad, coords, expected, got):
    assert run_case(Case.parse(case_id), NumpyStructured())["verdict"] == "pass"
    monkeypatch.setattr(cs, *patch)
    row = run_case(Case.parse(case_id), NumpyStructured())
    assert (row["verdict"], row["n_bad"]) == ("fail", n_bad)
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == (coords, expected, got)


# ------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_cupy_level_passes_every_pr_case_of_the_covered_families(pr_cases):
    ex = CupyRefExecutor()
    av = ex.availability()
    if not av.available:
        pytest.skip(f"cupy level unavailable: {av.reason}")
    try:
        rows = run_cases(pr_cases, ex)
    finally:
        ex.close()
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{len(bad)} cases:\n" + "\n".join(bad[:40])
    assert Counter(r["verdict"] for r in rows) == Counter({"pass": len(pr_cases)})
