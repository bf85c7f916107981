"""The quantized family on Candle's own CUDA kernels (`cuda` level, quantized.cu) and on the bundled
HIP suite (`hip-on-nvidia`, wave 64 and 32): every case of the quant sweep must pass: dequantize and
quantize_q8_1 bit-exact, dmmv, mmvq (batch 1..8) and mmq within the tolerance
parity/ops/quantized/matvec.py derives. Needs a CUDA GPU (CuPy), nvcc or NVRTC, and
PARITY_CANDLE_KERNELS=/path/to/candle/candle-kernels/src (as tests/test_matmul_conv_gpu.py)."""

from collections import Counter

import pytest

from parity.run.cases import load_sweep
from parity.run.engine import run_cases
from parity.ops import CATALOG

# every (op, dtype) of the quantized family: dequantize, quantize_q8_1, dmmv, mmvq, mmq
QUANTIZED = {(op.name, dt) for op in CATALOG.values() if op.family == "quantized" for dt in op.dtypes}


@pytest.mark.gpu
def test_quant_sweep_passes_on_candles_cuda_kernels(candle_level):
    cases = load_sweep("quant")
    assert {(c.op, c.dtype) for c in cases} == QUANTIZED     # every kernel of the family (no count to go stale)
    rows = run_cases(cases, candle_level.executor, candle_level.availability.device)
    print(f"quant sweep, cuda (Candle's kernels): {len(rows)} cases: {dict(Counter(r['verdict'] for r in rows))}")
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:200]}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{len(bad)}/{len(rows)} not passing:\n" + "\n".join(bad[:40])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["hip-on-nvidia", "hip-on-nvidia/w32"])
def test_quant_sweep_passes_on_the_bundled_suite(name):
    """backends/hip/quantized.hip, quantized_mmv.hip and quantized_mmq.hip compiled for NVIDIA in both
    wavefront modes (wave 64: -DPARITY_WAVE64, two warps a wavefront): every quant case, mmq's included."""
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    lv = make(name, DEFAULT_HIP_SRC, None)
    if not lv.availability.available:
        pytest.skip(f"{name} unavailable: {lv.availability.reason}")
    try:
        cases = load_sweep("quant")
        rows = run_cases(cases, lv.executor, lv.availability.device)
    finally:
        lv.executor.close()
    print(f"quant sweep, {name}: {len(rows)} cases: {dict(Counter(r['verdict'] for r in rows))}")
    assert len(rows) == len(cases) and {(c.op, c.dtype) for c in cases} == QUANTIZED
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:200]}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{name}: {len(bad)}/{len(rows)} not passing:\n" + "\n".join(bad[:40])
