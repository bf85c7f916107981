"""The engine must catch each deliberately broken subject, with the exact verdict and worst element."""
import pytest

from fakes import (DropsStartOffset, GeAsGt, I64DivByZeroAllOnes, IgnoresStrides, InPlaceReadsStrided, LostBlocksPast128,
                   NanDroppingMinimum, NoInPlacePath, OneStrideArray, SaturatingU8Cast, UnwrittenTail)
from parity.executors.cpu import CpuExecutor
from parity.run.cases import Case
from parity.run.engine import run_case

# (subject, case, n_bad, worst coords, worst inputs, expected, got)
CAUGHT = [
    # comparisons draw their normal values from a few, so that equal pairs are common
    (GeAsGt, "cmp.ge/f32/contiguous/normal/s0", 343, [0, 0], {"lhs": "0.0", "rhs": "0.0"}, "1", "0"),
    (GeAsGt, "cmp.ge/i64/transposed/normal/s0", 296, [0, 2], {"lhs": "2", "rhs": "2"}, "1", "0"),
    (IgnoresStrides, "unary.exp/f32/transposed/normal/s0", 1548, [1, 39],
     {"x": "4.849396228790283"}, "127.66328430175781", "0.00801017601042986"),
    (DropsStartOffset, "unary.neg/f32/narrowed/normal/s0", 384, [0, 0],
     {"x": "1.083400845527649"}, "-1.083400845527649", "nan"),
    (OneStrideArray, "where/u8-f32/transposed/normal/s0", 1549, [0, 1],
     {"cond": "0", "t": "4.488234043121338", "f": "0.009603574872016907"}, "0.009603574872016907", "nan"),
    (OneStrideArray, "binary.add/f32/transposed/normal/s0", 1548, [2, 45],
     {"lhs": "0.15844736993312836", "rhs": "4.682126522064209"}, "4.840573787689209", "-4.536996841430664"),
    (SaturatingU8Cast, "cast/f32-u8/contiguous/out-of-range/s0", 325, [0, 10],
     {"x": "2147483648.0"}, "0", "255"),
    (NanDroppingMinimum, "binary.minimum/f16/contiguous/special/s0", 61, [0, 21],
     {"lhs": "nan", "rhs": "-4.93359375"}, "nan", "-4.93359375"),
    (UnwrittenTail, "unary.sqrt/bf16/len1025/normal/s0", 1, [1024],
     {"x": "2.28125"}, "1.5078125", "-2.8622937353617317e-16"),
    (NoInPlacePath, "unary.exp/f32/inplace/normal/s0", 1485, [29, 13],
     {"x": "-4.997680187225342"}, "0.006753596011549234", "1.0"),
    (LostBlocksPast128, "unary.neg/f32/len163835/normal/s0", 32763, [145050],
     {"x": "-4.999904155731201"}, "4.999904155731201", "-2.8735182454018313e-16"),
    (I64DivByZeroAllOnes, "binary.div/i64/contiguous/special/s0", 23, [0, 41],
     {"lhs": "2147483647", "rhs": "0"}, "4294967295", "-1"),
    (InPlaceReadsStrided, "unary.exp/f32/inplace-strided/normal/s0", 1548, [24, 11],
     {"x": "4.967596054077148"}, "143.6810760498047", "0.00684918649494648"),
]


@pytest.mark.parametrize("subject,case_id,n_bad,coords,inputs,expected,got", CAUGHT,
                         ids=[f"{c[0].__name__}:{c[1]}" for c in CAUGHT])
def test_broken_subject_is_caught(subject, case_id, n_bad, coords, inputs, expected, got):
    row = run_case(Case.parse(case_id), subject())
    assert row["verdict"] == "fail"
    assert row["n_bad"] == n_bad
    w = row["worst"]
    assert w["coords"] == coords
    assert w["inputs"] == inputs
    assert (w["expected"], w["got"]) == (expected, got)


def test_unwritten_element_is_named():
    row = run_case(Case.parse("unary.sqrt/bf16/len1025/normal/s0"), UnwrittenTail())
    assert row["worst"]["note"] == "unwritten: still the 0xA5 sentinel"
    assert row["worst"]["got_bits"] == "0xa5a5"


def test_u8_wrap_300_is_44_and_saturation_is_caught():
    """The headline cast divergence: CUDA 300.0 -> 44, a saturating port gives 255."""
    row = run_case(Case.parse("cast/f32-u8/contiguous/out-of-range/s0"), SaturatingU8Cast())
    assert row["verdict"] == "fail"
    import numpy as np
    from parity.core.numerics import cast
    from parity.core.dtypes import dtype
    assert cast(np.array([300.0], np.float32), dtype("f32"), dtype("u8"))[0] == 44


@pytest.mark.parametrize("case_id", [c[1] for c in CAUGHT])
def test_correct_subject_passes_the_same_cases(case_id):
    """The fixtures fail because of their bug, not because the case is unpassable."""
    assert run_case(Case.parse(case_id), CpuExecutor())["verdict"] == "pass"


def test_nan_dropping_minimum_passes_for_f32_only_where_cuda_ignores_nan():
    """f32 fminf ignores NaN, so `a<b?a:b` still differs: NaN on the rhs leaks through."""
    row = run_case(Case.parse("binary.minimum/f32/contiguous/special/s0"), NanDroppingMinimum())
    assert row["verdict"] == "fail"
    assert row["worst"]["inputs"]["rhs"] == "nan" and row["worst"]["expected"] != "nan"


def test_strided_in_place_bug_needs_the_strided_in_place_class():
    """A null input read through the view's strides hides behind a null info (the `inplace` class):
    only `inplace-strided` sends the kernel down its strided path with a null input."""
    assert run_case(Case.parse("unary.exp/f32/inplace/normal/s0"), InPlaceReadsStrided())["verdict"] == "pass"
    assert run_case(Case.parse("affine/f32/inplace-strided/normal/s0@add=3,mul=2"),
                    InPlaceReadsStrided())["verdict"] == "fail"


def test_grids_past_128_blocks_need_the_160_block_class():
    """The suite's sparse working blocks start after 128 dense blocks of 1024: no other pr layout
    class reaches them, so a step that loses them passes everywhere else."""
    assert run_case(Case.parse("unary.neg/f32/len1025/normal/s0"), LostBlocksPast128())["verdict"] == "pass"
    assert run_case(Case.parse("unary.neg/f32/transposed-tiles/normal/s0"), LostBlocksPast128())["verdict"] == "pass"
