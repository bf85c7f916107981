"""hip-on-nvidia on a real GPU: fault verdicts and a correct kernel. Run with `pytest -m gpu`."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parity.executors.hip_nvidia import HipOnNvidiaExecutor
from parity.run.session import DEFAULT_HIP_SRC
from parity.executors.worker import IsolatedExecutor
from parity.ops.base import Arg, Launch

pytestmark = pytest.mark.gpu

SUITES = Path(__file__).parent / "fixtures" / "suites"
FAULTS = SUITES / "faults"


def _has_device() -> bool:
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


if not _has_device():
    pytest.skip("no CUDA device through CuPy", allow_module_level=True)


def _simple(kernel: str, n: int = 100, inp=None, inp_name: str = "x") -> Launch:
    x = np.arange(n, dtype=np.float32) if inp is None else inp
    return Launch(kernel, [Arg("size_t", n, name="numel"), Arg("ptr", (inp_name, 0), name=inp_name),
                           Arg("ptr", ("out", 0), name="out")],
                  {inp_name: x, "out": np.zeros(n, np.float32)}, ("out",), ((n + 127) // 128, 1, 1), (128, 1, 1))


def _unary(kernel: str, x: np.ndarray, inplace: bool = False) -> Launch:
    n = x.size
    bufs = {"out": x.copy() if inplace else np.full(n, np.nan, x.dtype)}
    if not inplace:
        bufs["x"] = x
    return Launch(kernel, [Arg("size_t", n, name="numel"), Arg("size_t", 1, name="num_dims"),
                           Arg("info", None, name="info"), Arg("ptr", None if inplace else ("x", 0), name="x"),
                           Arg("ptr", ("out", 0), name="out")],
                  bufs, ("out",), (max(1, (n + 1023) // 1024), 1, 1), (1024, 1, 1))


@pytest.fixture(scope="module")
def faults():
    ex = HipOnNvidiaExecutor(FAULTS)
    assert ex.availability().available, ex.availability().reason
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def isolated():
    ex = IsolatedExecutor(HipOnNvidiaExecutor, timeout_s=10.0, suite_dir=FAULTS)
    yield ex
    ex.close()


def test_correct_kernel_ok(faults):
    r = faults.run(_simple("copy_ok"))
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(r.outputs["out"], np.arange(100, dtype=np.float32))


def test_oob_write(faults):
    r = faults.run(_simple("write_oob"))
    assert r.status == "oob-write"
    assert "after" in r.message and "before" in r.message


def test_input_clobbered(faults):
    r = faults.run(_simple("clobber_input"))
    assert r.status == "input-clobbered" and "x:" in r.message


def test_missing_kernel(faults):
    r = faults.run(_simple("copy_okk"))
    assert r.status == "missing" and "copy_ok" in r.message


def test_crash_is_contained_and_run_continues(isolated):
    r = isolated.run(_simple("crash_illegal"))
    assert r.status == "crash", r.message
    r = isolated.run(_simple("copy_ok"))
    assert r.status == "ok", r.message
    assert isolated.restarts >= 1


def test_hang_times_out_and_run_continues(isolated):
    flag = np.zeros(1, np.uint32)
    r = isolated.run(_simple("hang_forever", n=1, inp=flag, inp_name="flag"))
    assert r.status == "timeout", r.message
    r = isolated.run(_simple("copy_ok"))
    assert r.status == "ok", r.message


def test_good_fixture_unary_and_inplace():
    ex = HipOnNvidiaExecutor(SUITES / "good")
    x = np.linspace(-3, 3, 1500, dtype=np.float32)
    r = ex.run(_unary("uneg_f32", x))
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(r.outputs["out"], -x)
    r = ex.run(_unary("uneg_f32", x, inplace=True))
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(r.outputs["out"], -x)


def test_amd_only_is_compile_error_on_nvidia():
    ex = HipOnNvidiaExecutor(SUITES / "amd_only")
    r = ex.run(_simple("warp_sum_f32"))
    assert r.status == "compile-error" and "__builtin_amdgcn_readfirstlane" in r.message


@pytest.mark.skipif(not (DEFAULT_HIP_SRC / "unary_f32.hip").is_file(), reason="bundled suite absent")
def test_bundled_suite_uexp_f32_through_catalog_packing():
    """The bundled HIP suite, launched exactly as the catalog packs it, agrees with the reference."""
    from parity.ops import CATALOG
    from parity.ops.abi import pack, extract
    from parity.ops.base import Operands
    from parity.core.dtypes import dtype
    from parity.core.layouts import contiguous
    op = CATALOG["unary.exp"]
    x = np.linspace(-5, 5, 3000, dtype=np.float32)
    lay = contiguous(x.shape)
    ops = Operands(("x",), {"x": dtype("f32")}, {"x": lay}, {"x": x}, {"x": x})
    launch = pack(op, "f32", ops, {})
    ex = IsolatedExecutor(HipOnNvidiaExecutor, timeout_s=30.0)
    try:
        r = ex.run(launch)
    finally:
        ex.close()
    assert r.status == "ok", r.message
    got = extract(op, r.outputs["out"], x.shape)
    np.testing.assert_allclose(got, np.exp(x), rtol=2e-6)


@pytest.mark.gpu
def test_cuda_level_runs_a_cuda_suite():
    """The `cuda` level: a .cu suite compiled without the HIP mapping, launched the same way."""
    from parity.run.cases import Case
    from parity.run.engine import run_case
    from parity.run.levels import make
    suite = Path(__file__).parent / "fixtures" / "suites" / "cuda_small"
    level = make("cuda", Path("backends/hip"), suite, case_timeout=60)
    assert level.availability.available, level.availability.reason
    try:
        for cid in ("unary.neg/f32/transposed/special/s0", "binary.add/f32/broadcast-leading/normal/s0"):
            assert run_case(Case.parse(cid), level.executor)["verdict"] == "pass", cid
        assert run_case(Case.parse("unary.exp/f32/contiguous/normal/s0"), level.executor)["verdict"] == "missing"
    finally:
        level.executor.close()


def test_faults_between_good_launches_each_cost_one_case():
    """A sweep over a port whose in-place path faults: every fault is a `crash` and the good launch
    right after it is `ok` (a spare worker takes over). What a fault costs in seconds is measured by
    bench/fault_cost.py against its bar, not asserted here: a loaded machine moves it."""
    ex = IsolatedExecutor(HipOnNvidiaExecutor, timeout_s=10.0, suite_dir=FAULTS)
    try:
        statuses = []
        for _ in range(5):
            statuses += [ex.run(_simple("crash_illegal")).status, ex.run(_simple("copy_ok")).status]
        assert statuses == ["crash", "ok"] * 5
    finally:
        ex.close()
