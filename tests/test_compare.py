import numpy as np

from parity.core.compare import compare
from parity.core.dtypes import dtype
from parity.core.tolerance import EXACT, Tolerance

F32 = dtype("f32")


def test_ulp_budget_and_worst_element():
    e = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    g = e.copy()
    g[1, 0] = np.nextafter(np.float32(3.0), np.float32(10), dtype=np.float32)   # 1 ulp
    g[0, 1] = np.float32(2.0) + np.float32(4 * 2.0**-22)                           # 4 ulp
    c = compare(e, g, F32, Tolerance(ulp=2), inputs={"x": e})
    assert not c.passed and c.n_bad == 1 and c.max_ulp == 4
    assert c.worst.coords == [0, 1] and c.worst.index == 1 and c.worst.inputs == {"x": "2.0"}
    assert compare(e, g, F32, Tolerance(ulp=4)).passed


def test_nan_positions_must_match_and_inf_is_exact():
    e = np.array([np.nan, np.inf, 1.0], np.float32)
    assert not compare(e, np.array([1.0, np.inf, 1.0], np.float32), F32, Tolerance(ulp=100)).passed
    assert not compare(e, np.array([np.nan, 3.4e38, 1.0], np.float32), F32, Tolerance(ulp=10**9)).passed
    assert compare(e, np.array([np.nan, np.inf, 1.0], np.float32), F32, EXACT).passed


def test_signed_zero_policy():
    e, g = np.array([-0.0], np.float32), np.array([0.0], np.float32)
    assert compare(e, g, F32, Tolerance(ulp=0)).passed
    assert not compare(e, g, F32, Tolerance(ulp=0, signed_zero=True)).passed


def test_absolute_floor_near_zero():
    e, g = np.array([1e-9], np.float32), np.array([2e-9], np.float32)
    assert not compare(e, g, F32, Tolerance(ulp=2)).passed
    assert compare(e, g, F32, Tolerance(ulp=2, atol=1e-8)).passed


def test_nan_payload_for_copies():
    e = np.array([0x7FC00001], np.uint32).view(np.float32)
    g = np.array([0x7FFFFFFF], np.uint32).view(np.float32)
    assert compare(e, g, F32, EXACT).passed
    assert not compare(e, g, F32, Tolerance(exact=True, nan_payload=True)).passed


def test_integers_exact_with_coordinates():
    e = np.arange(12, dtype=np.int64).reshape(3, 4)
    g = e.copy()
    g[2, 3] = -5
    c = compare(e, g, dtype("i64"), EXACT)
    assert c.worst.coords == [2, 3] and c.worst.expected == "11" and c.worst.got == "-5" and c.worst.ulps is None


def test_empty_passes():
    assert compare(np.zeros((3, 0), np.float32), np.zeros((3, 0), np.float32), F32, EXACT).passed
