"""Fourteen deliberately broken HIP kernels (tests/fixtures/broken_hip/): each is caught with the
expected verdict. Where a NumPy model of the same bug exists (tests/fakes.py), the GPU result
must match the model's verdict, bad-element count and worst element exactly.

The AMD compile of every fixture runs on CI (amd-static); the launches need a CUDA device."""
from pathlib import Path

import pytest

import fakes
from parity.core import resources
from parity.suite.amd_static import analyze, hipcc
from parity.run.cases import Case
from parity.suite.coverage import coverage
from parity.run.engine import run_case
from parity.ops import expected_kernels
from parity.suite.scan import discover

BROKEN = Path(__file__).parent / "fixtures" / "broken_hip"

# fixture -> (case, verdict, NumPy model of the bug or None, text the message must contain)
FIXTURES = {
    "misnamed": ("unary.tanh/f32/contiguous/normal/s0", "missing", None, "utan_f32"),
    "swapped_strides": ("binary.add/f32/transposed/normal/s0", "fail", fakes.SwappedStrides, ""),
    "one_stride_array": ("where/u8-f32/transposed/normal/s0", "fail", fakes.OneStrideArray, ""),
    "const_set_ignores_view": ("fill.const_set/f32/narrowed/normal/s0@value=3", "fail", fakes.ConstSetIgnoresView, ""),
    "no_inplace": ("unary.exp/f32/inplace/normal/s0", "crash", None, ""),
    "nan_dropping_minimum": ("binary.minimum/f16/contiguous/special/s0", "fail", fakes.NanDroppingMinimum, ""),
    "saturating_u8_cast": ("cast/f32-u8/contiguous/out-of-range/s0", "fail", fakes.SaturatingU8Cast, ""),
    "off_by_one_grid": ("unary.neg/f32/contiguous/normal/s0", "oob-write", None, ""),
    "wrong_fp8_spelling": ("unary.neg/f8_e4m3/contiguous/normal/s0", "missing", None, "uneg_f8_e4m3"),
    "bf16_truncation": ("cast/f32-bf16/contiguous/normal/s0", "fail", fakes.Bf16Truncation, ""),
    "unwritten_tail": ("unary.sqrt/f32/len1025/normal/s0", "fail", fakes.UnwrittenTail, ""),
    "int32_index": ("copy.ucopy/u8/huge/normal/s0", "crash", None, ""),
    "assumed_alignment": ("nn.rmsnorm/f32/offset-packs/normal/s0@alpha=1", "crash", None, "misaligned"),
    "dropped_odd_row": ("nn.rmsnorm/f32/c512/normal/s0@alpha=1", "fail", None, "unwritten"),
}


def test_every_fixture_is_listed():
    assert sorted(p.name for p in BROKEN.iterdir() if p.is_dir()) == sorted(FIXTURES)


@pytest.mark.slow
@pytest.mark.skipif(not hipcc(), reason="hipcc not installed (apt-get install hipcc libamdhip64-dev)")
def test_broken_fixtures_compile_for_amd():
    for name in FIXTURES:
        rows = analyze(BROKEN / name, ("gfx90a", "gfx1030"))
        assert rows and all(r.status == "ok" for r in rows), (name, [r.message for r in rows])
        assert all((r.vgpr_spill or 0) == 0 for r in rows)
        assert {r.wavefront for r in rows} == {64, 32}


@pytest.mark.parametrize("name,wanted,suggested", [("misnamed", "utanh_f32", "utan_f32"),
                                                     ("wrong_fp8_spelling", "uneg_fp8_e4m3", "uneg_f8_e4m3")])
def test_misnamed_kernels_get_the_closest_present_name(name, wanted, suggested):
    rows = {r.kernel: r for r in coverage(discover(BROKEN / name), expected_kernels())}
    assert rows[wanted].status == "missing" and rows[wanted].suggestion == suggested
    assert rows[suggested].status == "extra"


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in FIXTURES if n != "int32_index"])
def test_broken_kernel_is_caught_on_gpu(name):
    from parity.run.levels import make
    case_id, verdict, model, needle = FIXTURES[name]
    level = make("hip-on-nvidia", BROKEN / name, None, case_timeout=60)
    assert level.availability.available, level.availability.reason
    try:
        row = run_case(Case.parse(case_id), level.executor)
    finally:
        level.executor.close()
    assert row["verdict"] == verdict, row["message"]
    assert needle in row["message"]
    if model is not None:                       # the GPU shows exactly the bug the model predicts
        want = run_case(Case.parse(case_id), model())
        assert (row["n_bad"], row["worst"]) == (want["n_bad"], want["worst"])


@pytest.mark.gpu
@pytest.mark.slow
def test_int32_index_overflows_past_2_31():
    from parity.run.levels import make
    case_id, verdict, _, _ = FIXTURES["int32_index"]
    level = make("hip-on-nvidia", BROKEN / "int32_index", None, case_timeout=120)
    try:
        row = run_case(Case.parse(case_id), level.executor)
    finally:
        level.executor.close()
    assert row["verdict"] == verdict, row["message"]
    good = make("hip-on-nvidia", resources.hip_suite(), None, case_timeout=120)
    try:                                        # the bundled suite's size_t indexing passes the same case
        assert run_case(Case.parse(case_id), good.executor)["verdict"] == "pass"
    finally:
        good.executor.close()


@pytest.mark.gpu
def test_assumed_alignment_is_caught_only_by_the_rows_of_whole_packs():
    """The layout class a bug needs: the same misaligned source, 77 columns (the element path), passes."""
    from parity.run.levels import make
    level = make("hip-on-nvidia", BROKEN / "assumed_alignment", None, case_timeout=60)
    try:
        verdicts = {lay: run_case(Case.parse(f"nn.rmsnorm/f32/{lay}/normal/s0@alpha=1"), level.executor)["verdict"]
                    for lay in ("offset", "c100", "offset-1024")}
    finally:
        level.executor.close()
    assert verdicts == {"offset": "pass", "c100": "pass", "offset-1024": "crash"}


@pytest.mark.gpu
def test_dropped_odd_row_is_caught_only_by_the_aligned_rows_of_an_odd_count():
    """Its two-rows-a-block path takes rows of whole aligned packs on every thread: c512 (37 rows) and
    c16384 (3) lose their last row; c1024 has 4 rows, c2048's row is half a pack a thread on 1024
    threads, offset-packs is not aligned."""
    from parity.run.levels import make
    level = make("hip-on-nvidia", BROKEN / "dropped_odd_row", None, case_timeout=60)
    try:
        rows = {lay: run_case(Case.parse(f"nn.rmsnorm/f32/{lay}/normal/s0@alpha=1"), level.executor)
                for lay in ("c100", "c512", "c1024", "c2048", "c3000", "c16384", "offset-packs")}
    finally:
        level.executor.close()
    assert {lay: r["verdict"] for lay, r in rows.items()} == {
        "c100": "pass", "c512": "fail", "c1024": "pass", "c2048": "pass", "c3000": "pass", "c16384": "fail",
        "offset-packs": "pass"}
    assert (rows["c512"]["n_bad"], rows["c16384"]["n_bad"]) == (512, 16384)   # the last row, whole
    assert rows["c512"]["worst"]["coords"][0] == 36
