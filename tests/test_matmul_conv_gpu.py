"""GPU side of matmul / pool / conv: the pr sweep of the new families on hip-on-nvidia (cuBLAS for
matmul, the bundled HIP suite for pool/conv), Candle's backend conv host path (im2col + cuBLAS
GEMM + ucopy) on hip-on-nvidia and on the `cuda` level, and the compute type of the cuBLAS GEMM
(its throughput against the device's peak: bench/cublas_peak.py). Needs a CUDA GPU (CuPy) and nvcc
or NVRTC.

    python3 -m pytest -m gpu tests/test_matmul_conv_gpu.py -s

The `cuda` level runs on tests/fixtures/suites/cuda_conv (im2col/ucopy in the candle-kernels ABI)
and, with PARITY_CANDLE_KERNELS=/path/to/candle/candle-kernels/src, on Candle's own kernels too.
"""
import os
from collections import Counter
from pathlib import Path

import pytest

from fakes_matmul_conv import ConvGemmReadsOriginalKernel
from parity.run.cases import Case, Filters, load_sweep
from parity.run.engine import run_case, run_cases
from parity.ops import CATALOG

FAMILIES = {"matmul": "matmul.*", "pool": "pool.*,upsample.*", "conv": "conv.*"}


@pytest.mark.gpu
@pytest.mark.parametrize("family", list(FAMILIES))
def test_pr_sweep_passes_on_hip_on_nvidia(level, family):
    cases = load_sweep("pr", Filters(ops=FAMILIES[family].split(",")))
    assert cases
    rows = run_cases(cases, level.executor, level.availability.device)
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:200]}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{len(bad)}/{len(rows)} not passing:\n" + "\n".join(bad[:40])
    if family == "matmul":
        timed = [r for r in rows if r.get("tflops")]
        assert timed and all(r["compute_type"] for r in timed)


@pytest.fixture(scope="module")
def blas():
    try:
        import cupy
        if not cupy.cuda.is_available():
            pytest.skip("no CUDA device")
    except Exception as e:
        pytest.skip(f"CuPy unusable: {e}")
    from parity.host.blas import CupyBlas
    return CupyBlas()


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["f16", "bf16", "f32"])
def test_cublas_gemm_accumulates_in_f32(blas, dt):
    """The GEMM parity times runs with Candle's compute type (f32 accumulation, no TF32) and times
    something. How fast it is against the device's peak is a benchmark, not a test:
    `python3 bench/cublas_peak.py` reports it against its 70% bar."""
    r = blas.bench(dt, 4096, 4096, 4096, iters=3, warmup=1)
    assert r["compute_type"] == "CUBLAS_COMPUTE_32F"
    assert r["ms"] > 0 and r["tflops"] > 0


# ------------------------------------------------------------------ conv host path (conv.host)
HOST_OPS = ["conv.conv1d_host", "conv.conv2d_host"]
CUDA_CONV_SUITES = [Path(__file__).parent / "fixtures" / "suites" / "cuda_conv"] + \
    ([Path(os.environ["PARITY_CANDLE_KERNELS"])] if os.environ.get("PARITY_CANDLE_KERNELS") else [])


def _host_cases():
    cases = load_sweep("pr", Filters(ops=HOST_OPS))
    # every dtype of both host ops (derived from the catalog, not a count that goes stale)
    assert {(c.op, c.dtype) for c in cases} == {(op, dt) for op in HOST_OPS for dt in CATALOG[op].dtypes}
    return cases


def _listing(rows) -> str:
    return "\n".join(f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:200]}" for r in rows
                     if r["verdict"] != "pass")


@pytest.mark.gpu
def test_conv_host_path_on_hip_on_nvidia(level):
    """The ROCm port's sequence (GEMM on kernel_c) with the bundled suite's im2col/ucopy and cuBLAS:
    every case passes, the channel-sliced kernels included."""
    cases = _host_cases()
    rows = run_cases(cases, level.executor, level.availability.device)
    assert Counter((r["verdict"], r.get("conv_route")) for r in rows) == {("pass", "im2col+gemm"): len(cases)}, \
        _listing(rows)


@pytest.fixture(scope="module", params=CUDA_CONV_SUITES, ids=lambda p: p.name)
def cuda_level(request):
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    lv = make("cuda", DEFAULT_HIP_SRC, request.param, case_timeout=120)
    if not lv.availability.available:
        pytest.skip(f"cuda level unavailable: {lv.availability.reason}")
    yield lv
    lv.executor.close()


@pytest.mark.gpu
def test_conv_host_path_on_the_cuda_level(cuda_level):
    """CUDA Candle's sequence: the GEMM reads the original buffer of a channel-sliced kernel, so
    exactly the 8 kslice cases fail, each like the CPU model of that bug (the poisoned gaps come
    in as NaN: same count, same first element), and KD cuda-conv-noncontiguous-kernel turns
    them into xfail."""
    from parity.render.baseline import apply, with_stated_for
    from parity.run.results import Results
    cases = _host_cases()
    rows = run_cases(cases, cuda_level.executor, cuda_level.availability.device)
    assert Counter(r["verdict"] for r in rows) == {"pass": 56, "fail": 8}, _listing(rows)
    failing = [r for r in rows if r["verdict"] == "fail"]
    assert sorted(r["case_id"] for r in failing) == sorted(c.id for c in cases if "-kslice/" in c.id)
    for r in failing:
        cpu = run_case(Case.parse(r["case_id"]), ConvGemmReadsOriginalKernel())
        assert (r["n_bad"], r["worst"]["coords"], r["worst"]["got"]) == \
            (cpu["n_bad"], cpu["worst"]["coords"], "nan"), r["case_id"]
    raw = Results.from_rows(rows)
    assert apply(raw, with_stated_for(None, raw), strict=True).counts() == {"pass": 56, "xfail": 8}
