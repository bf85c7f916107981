"""GPU side of matmul / pool / conv: the pr sweep of the new families on hip-on-nvidia (cuBLAS for
matmul, the bundled HIP suite for pool/conv), and cuBLAS GEMM throughput against the device's
dense peak (parity.peak). Needs a CUDA GPU (CuPy) and nvcc or NVRTC.

    python3 -m pytest -m gpu tests/test_matmul_conv_gpu.py -s
"""
import pytest

from parity.cases import Filters, load_sweep
from parity.engine import run_cases

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
def blas_and_peak():
    try:
        import cupy
        if not cupy.cuda.is_available():
            pytest.skip("no CUDA device")
    except Exception as e:
        pytest.skip(f"CuPy unusable: {e}")
    from parity.backends.blas import CupyBlas
    from parity.peak import measured_peak, peak
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    blas = CupyBlas()
    info = peak(name, lambda dt: measured_peak(blas, dt))
    print(f"\n{name}: peaks {info['peaks']} ({info['source']})")
    return blas, info


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["f16", "bf16", "f32"])
def test_cublas_4096_reaches_70_percent_of_peak(blas_and_peak, dt):
    blas, info = blas_and_peak
    r = max((blas.bench(dt, 4096, 4096, 4096, iters=30) for _ in range(2)), key=lambda x: x["tflops"])
    pk = info["peaks"][dt]
    pct = 100.0 * r["tflops"] / pk
    print(f"{dt} 4096^3: {r['tflops']:.1f} TFLOP/s = {pct:.1f}% of {pk} ({r['compute_type']}, {r['call']}, "
          f"{r['ms']:.3f} ms)")
    assert r["compute_type"] == "CUBLAS_COMPUTE_32F"
    if dt == "f32" and pct < 70.0:
        pytest.xfail(f"f32 with CUBLAS_COMPUTE_32F (no TF32) reached {r['tflops']:.1f} TFLOP/s = {pct:.1f}% of the "
                     f"{pk} FP32 peak: reported, not enforced")
    assert pct >= 70.0, f"{dt}: {r['tflops']:.1f} TFLOP/s is {pct:.1f}% of {pk}"
