"""The bundled chains on GPU levels: hip-on-nvidia on the bundled HIP suite (through the isolated
worker, one message per chain), and `cuda` on Candle's own kernels when PARITY_CANDLE_KERNELS
points at candle-kernels/src. Every chain must pass, and the level must compute every
intermediate the cpu level computes within the step's own tolerance (rows carry the per-step
verdicts). Needs a CUDA GPU (CuPy) and nvcc or NVRTC."""
import os
from pathlib import Path

import pytest

from parity.cases import Filters, load_sweep
from parity.engine import run_cases


def _check(rows, level_name):
    assert rows
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:400]}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{level_name}: {len(bad)}/{len(rows)} chains not passing:\n" + "\n".join(bad)
    for r in rows:                               # a pass is every step judged twice, none skipped
        steps = r["chain"]["steps"]
        assert steps and all(s["own"] == "pass" and s["solo"] == "pass" for s in steps), r["case_id"]
        print(r["case_id"], r["message"])


@pytest.mark.gpu
def test_bundled_chains_pass_on_hip_on_nvidia(level):
    cases = load_sweep("pr", Filters(ops=["chain.*"]))
    assert len(cases) == 24
    _check(run_cases(cases, level.executor, level.availability.device), level.name)


@pytest.mark.gpu
def test_bundled_chains_pass_on_cuda_with_candles_kernels():
    src = os.environ.get("PARITY_CANDLE_KERNELS")
    if not src:
        pytest.skip("PARITY_CANDLE_KERNELS (Candle's candle-kernels/src) not set")
    from parity.levels import DEFAULT_HIP_SRC, make
    lv = make("cuda", DEFAULT_HIP_SRC, Path(src), case_timeout=600)
    if not lv.availability.available:
        pytest.skip(f"cuda unavailable: {lv.availability.reason}")
    try:
        _check(run_cases(load_sweep("smoke", Filters(ops=["chain.*"])), lv.executor, lv.availability.device), lv.name)
    finally:
        lv.executor.close()
