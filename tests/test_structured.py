"""Structured families (reduce, candle-nn, indexing, sort): host preparation, judging rules, and
broken subjects (tests/fakes_structured.py) each caught with an exact verdict. No GPU needed."""
import numpy as np
import pytest

from fakes_structured import (ArgFreeOverHeadNaN, ArgLateNaNWins, ArgmaxWritesF32, OnlineSoftmax,
                              PackRowInElements, ReduceIgnoresPermutation, RopeIgnoresStrideB,
                              ScatterFirstWriterWins, SentinelIgnored, SortPaddingLeaks, SortRepeatsTiedIndex,
                              StoresBeforeView,
                              SumAccumulatesInFloat, SumTreeStopsEarly, TieBlockSizeBug, UnrolledArgIndexBug,
                              WarpOnlyFastPath, WritesZeros)
from parity.executors.cpu import CpuExecutor
from parity.run.cases import Case, expand, load_sweep
from parity.core.dtypes import dtype
from parity.run.engine import run_case
from parity.ops import CATALOG
from parity.ops.reduce import cuda_block_reduce

# (subject, case, verdict, n_bad, worst coords, expected, got)
CAUGHT = [
    (ReduceIgnoresPermutation, "reduce.sum/f32/dim0/normal/s0", "fail", 37, [30],
     "20.126422882080078", "-52.93903732299805"),
    (TieBlockSizeBug, "reduce.argmax/f32/row100/ties/s0", "fail", 1, [25], "64", "32"),
    (UnrolledArgIndexBug, "reduce.argmax/f32/row9000/normal/s0", "fail", 2, [0], "3869", "6725"),
    (ArgLateNaNWins, "reduce.argmax/f32/row4096/special/s0", "fail", 1, [4], "640", "1025"),
    (ArgFreeOverHeadNaN, "reduce.argmax/f32/row4096/special/s0", "fail", 1, [0], "0", "2304"),
    (WarpOnlyFastPath, "reduce.sum/f32/row1024/normal/s0", "fail", 5, [2], "-169.98146057128906", "48.776100158691406"),
    (SumAccumulatesInFloat, "reduce.sum/u32/row1900/normal/s0", "fail", 3, [1], "544441891", "4294967295"),
    (ArgmaxWritesF32, "reduce.argmax/f32/row100/normal/s0", "fail", 37, [34], "96", "1119879168"),
    (RopeIgnoresStrideB, "nn.rope/f32/rope3d/normal/s0", "fail", 120, [1, 2, 4, 1],
     "4.97548770904541", "-5.497806072235107"),
    (SortPaddingLeaks, "sort.asc/f32/c100/normal/s0", "fail", 700, [0, 0],
     "-4.940114974975586", "index 117 (out of range: padding or garbage)"),
    (ScatterFirstWriterWins, "index.scatter/u32-f32/dups/normal/s0", "fail", 39, [3, 2, 2],
     "4.319894790649414", "-4.7507004737854"),
    (SentinelIgnored, "index.index_select/u8-f32/sentinel/normal/s0", "crash", 0, None, None, None),
    (PackRowInElements, "index.index_select/u32-f32/rows/normal/s0", "fail", 512, [4, 35],
     "4.91038703918457", "-4.6865129470825195"),
    (OnlineSoftmax, "nn.softmax/f16/c1024/peaked/s0", "fail", 1024, [0, 1],
     "0.000823974609375", "0.0008258819580078125"),
    # 16-bit sums of zero-mean rows sit inside their worst-case bound whatever is written; rows of
    # one sign (the positive class) do not
    (SumTreeStopsEarly, "reduce.sum/f16/row4096/positive/s0", "fail", 5, [2], "12488.0", "6160.0"),
    (SumTreeStopsEarly, "reduce.sum/bf16/row1024/positive/s0", "fail", 5, [4], "3040.0", "1480.0"),
    (WritesZeros, "reduce.sum/f16/row9000/positive/s0", "fail", 2, [1], "27120.0", "0.0"),
    (WritesZeros, "reduce.sum/bf16/row1900/positive/s0", "fail", 3, [0], "5792.0", "0.0"),
    (WritesZeros, "reduce.sum_atomic/bf16/row100/positive/s0", "fail", 37, [5, 0], "338.0", "0.0"),
    (SortRepeatsTiedIndex, "sort.asc/f32/c100/ties/s0", "fail", 665, [0, 1], "-2.0",
     "index 1 -> -2.0 (repeated index)"),
    (SortRepeatsTiedIndex, "sort.desc/i64/c1500/ties/s0", "fail", 2990, [0, 1], "7", "index 14 -> 7 (repeated index)"),
]


@pytest.mark.parametrize("subject,case_id,verdict,n_bad,coords,expected,got", CAUGHT,
                         ids=[f"{c[0].__name__}:{c[1]}" for c in CAUGHT])
def test_broken_structured_subject_is_caught(subject, case_id, verdict, n_bad, coords, expected, got):
    row = run_case(Case.parse(case_id), subject())
    assert row["verdict"] == verdict
    assert row["n_bad"] == n_bad
    if verdict == "fail":
        w = row["worst"]
        assert w["coords"] == coords
        assert (w["expected"], w["got"]) == (expected, got)
    else:
        assert "out of bounds" in row["message"]


def _failing(subject, cases) -> set[str]:
    """The ids of the cases the subject does not pass."""
    return {c.id for c in cases if run_case(c, subject)["verdict"] != "pass"}


@pytest.mark.parametrize("case_id,stored", [("index.gather/u32-f32/offset/normal/s0", "-2.8735182454018313e-16"),
                                            ("index.index_add/u32-f16/rows-offset/normal/s0", "-0.0220489501953125")])
def test_a_store_before_the_output_view_is_an_oob_write(case_id, stored):
    """The view's values are right; the buffer before `dst + offset` is not as the launch left it."""
    row = run_case(Case.parse(case_id), StoresBeforeView())
    assert row["verdict"] == "oob-write"
    assert row["message"] == ("wrote outside its output view: 5 element(s) of the buffer around it changed "
                              f"(buffer index 0, the view starts at 5: {stored} -> 7.0)")


def test_a_sum_that_writes_zeros_fails_every_positive_fast_sum_row_its_bound_can_tell():
    """The blind spots, named: an empty row (nothing to write) and bf16 rows of 4096 elements and
    more, where the worst case of a 32-lane split (gamma_d, d = n/32 + 8 additions) passes u = 2^-8
    times d = 1, and the rocBLAS-style cap (2^-7*2*sqrt(n)*sum|x|) is the sum or more; a result far
    off still fails there (it passed any finite one for a moment, where gamma_d was infinite)."""
    cases = [c for c in load_sweep("pr") if c.op == "reduce.sum" and c.values == "positive"]
    assert {c.dtype for c in cases} == {"f16", "bf16"}
    passing = {c.id for c in cases} - _failing(WritesZeros(), cases)
    assert passing == {"reduce.sum/f16/empty/positive/s0", "reduce.sum/bf16/empty/positive/s0"} | {
        f"reduce.sum/bf16/{lay}/positive/s0" for lay in ("row4096", "row9000")}
    from parity.ops.reduce import _judge
    from parity.run.engine import prepare_case
    p = prepare_case(Case.parse("reduce.sum/bf16/row9000/normal/s0"))
    assert not _judge(p.expected, np.full_like(p.expected, 1e30), p.built).passed


def test_online_softmax_passes_every_softmax_case_but_the_peaked_rows():
    """The value class its bug needs: 16-bit rows of normal or special values cannot tell an online
    sum from Candle's (the errors of e's rounding cancel), a row of one value and a peak can."""
    cases = [c for c in load_sweep("pr") if c.op == "nn.softmax" and c.dtype in ("f16", "bf16")]
    failing = _failing(OnlineSoftmax(), cases)
    assert failing == {f"nn.softmax/{t}/{lay}/peaked/s0" for t in ("f16", "bf16")
                       for lay in ("c512", "c1024", "c2048", "c3000", "c16384", "offset-1024")} | {
                           "nn.softmax/bf16/offset-packs/peaked/s0"}


def test_warp_only_fast_path_fails_the_rows_of_one_element_a_thread_only():
    """The shape class its bug needs: a row exactly as long as its 1024-thread block (row1024).
    Its min/max on `ties` rows (the extreme among the first 32) and its bf16 sums of zero-mean rows
    (inside their worst-case bound) pass: blind spots of the values, not of the launch; the
    positive rows' sums do not."""
    cases = [c for c in load_sweep("pr") if c.op.startswith("reduce.")]
    failing = _failing(WarpOnlyFastPath(), cases)
    row1024 = {c.id for c in cases if c.layout == "row1024"}
    assert failing <= row1024
    arg_or_wide_sum = ("reduce.argmin", "reduce.argmax", "reduce.sum/f32", "reduce.sum/u32")
    assert {c for c in row1024 if c.startswith(arg_or_wide_sum)} <= failing
    assert {f"reduce.sum/{t}/row1024/positive/s0" for t in ("f16", "bf16")} <= failing
    assert {f"reduce.sum/bf16/row1024/{v}/s0" for v in ("normal", "ties")}.isdisjoint(failing)
    assert len(failing) == 91


def test_pack_row_in_elements_fails_the_aligned_rows_of_whole_packs_only():
    """The shape class its bug needs: index_select rows of whole 16-byte packs, aligned (`rows`); at
    offsets (`rows-offset`) the pointers send it to the element path, as the bundled suite's."""
    cases = [c for c in load_sweep("pr") if c.op.startswith("index.")]
    failing = _failing(PackRowInElements(), cases)
    assert failing == {c.id for c in cases if c.op == "index.index_select" and c.layout == "rows"}
    assert len(failing) == 52


def test_peaked_rows_are_cases_of_16_bit_softmax_only():
    """f32's float sum of thousands of equal terms is off by more than its 16 ulps in Candle's own
    kernel (17 at (3, 3000), H200): the class is for the rounding of e to T."""
    op = CATALOG["nn.softmax"]
    assert op.values_for("f16") == ("normal", "special", "peaked") and op.values_for("f32") == ("normal", "special")
    peaked = {c.dtype for c in load_sweep("pr") if c.values == "peaked"}
    assert peaked == {"f16", "bf16"}


@pytest.mark.parametrize("case_id", [c[1] for c in CAUGHT])
def test_correct_subject_passes_the_same_cases(case_id):
    assert run_case(Case.parse(case_id), CpuExecutor())["verdict"] == "pass"


def test_sentinel_cases_write_zero():
    row = run_case(Case.parse("index.gather/u8-f32/sentinel/normal/s0"), CpuExecutor())
    assert row["verdict"] == "pass"
    assert run_case(Case.parse("index.gather/u8-f32/sentinel/normal/s0"), SentinelIgnored())["verdict"] == "crash"


def test_reduce_host_preparation():
    """kept dims first, reduced last in the given order; block next_pow2(min(1024, el)); info never null."""
    op = CATALOG["reduce.sum"]
    import zlib
    case = Case.parse("reduce.sum/f32/multi/normal/s0")
    b = op.spec.build(case, np.random.default_rng([zlib.crc32(case.id.encode()), 0]))
    la = op.spec.pack(b)
    args = {a.name: a for a in la.args}
    assert list(map(int, args["info"].value)) == [6, 5, 4, 5, 1, 30]   # (4,6,5) over (2,0): dims [6,5,4]
    assert (int(args["src_numel"].value), int(args["el_to_sum_per_block"].value)) == (120, 20)
    assert int(args["num_dims"].value) == 3
    assert la.grid == (6, 1, 1) and la.block == (32, 1, 1)
    case = Case.parse("reduce.argmax/f32/row1900/normal/s0")
    b = CATALOG["reduce.argmax"].spec.build(case, np.random.default_rng(0))
    la = CATALOG["reduce.argmax"].spec.pack(b)
    assert la.grid == (3, 1, 1) and la.block == (1024, 1, 1)


def test_empty_min_is_refused_not_launched():
    row = run_case(Case.parse("reduce.max/f32/empty/normal/s0"), CpuExecutor())
    assert row["verdict"] == "pass" and "EmptyTensor" in row["message"] and row["launch"] == ""
    row = run_case(Case.parse("reduce.sum/u8/empty/normal/s0"), CpuExecutor())
    assert row["verdict"] == "pass" and row["launch"].startswith("fast_sum_u8<<<(3, 1, 1), (1, 1, 1)>>>")


def test_argmax_tie_rule_is_the_cuda_tree_not_first_index():
    """candle's tree keeps the receiver on ties: [0,2,2,0] with block 4 gives index 2."""
    v = np.array([0, 2, 2, 0], dtype=np.float32)
    assert cuda_block_reduce("argmax", v, 4, dtype("f32"))[1] == 2
    v = np.array([np.nan, 1, 5], dtype=np.float32)             # NaN wins at index 0 only
    assert cuda_block_reduce("argmax", v, 4, dtype("f32"))[1] == 0
    v = np.array([1, np.nan, 5], dtype=np.float32)
    assert cuda_block_reduce("argmax", v, 4, dtype("f32"))[1] == 2


def test_max_nan_rules():
    f32 = cuda_block_reduce("max", np.array([np.nan, 1.0], np.float32), 2, dtype("f32"))[0]
    f16 = cuda_block_reduce("max", np.array([np.nan, 1.0], np.float16), 2, dtype("f16"))[0]
    assert f32 == 1.0 and np.isnan(f16)


def test_launch_geometry_of_nn_and_sort():
    import zlib

    def launch(cid):
        c = Case.parse(cid)
        op = CATALOG[c.op]
        return op.spec.pack(op.spec.build(c, np.random.default_rng([zlib.crc32(c.id.encode()), 0])))
    assert launch("nn.softmax/f32/c100/normal/s0").block == (1, 32, 1)
    assert launch("nn.rmsnorm/f32/c100/normal/s0@alpha=0").block == (32, 1, 1)
    la = launch("nn.rmsnorm/f32/c1024/normal/s0@alpha=0")
    assert la.block == (1024, 1, 1) and [a.value for a in la.args if a.name == "alpha"] == [None]
    la = launch("nn.rope/f32/rope3d/normal/s0")
    assert {a.name: a.value for a in la.args}["stride_b"] == 3 * 5 * 8
    assert {a.name: a.value for a in launch("nn.rope/f32/rope2d/normal/s0").args}["stride_b"] == 0
    la = launch("sort.desc/f32/c1500/normal/s0")
    assert la.grid == (2, 1, 1) and la.block == (1024, 1, 1) and la.shared_mem == 2048 * 4


def test_kernel_names_and_dtypes():
    assert CATALOG["index.index_select"].kernel_name("u8-f8_e4m3") == "is_u8_f8_e4m3"
    assert "i16-f8_e4m3" in CATALOG["index.scatter_add"].dtypes
    assert not any(k.endswith("f8_e4m3") for k in CATALOG["index.scatter"].dtypes)
    assert CATALOG["reduce.argmin"].kernel_name("bf16") == "fast_argmin_bf16"


def test_structured_ids_round_trip_and_sweeps():
    for op in ("reduce.sum", "nn.rope_thd", "index.gather", "sort.asc"):
        for c in expand(CATALOG[op], None, None, None, [0])[:5]:
            assert Case.parse(c.id) == c
    smoke = load_sweep("smoke")
    fams = {c.catalog_op.family for c in smoke}
    assert {"reduce", "nn", "indexing", "sort"} <= fams


@pytest.mark.parametrize("family", ["reduce", "nn", "indexing", "sort"])
def test_cpu_level_passes_the_family(family):
    """The emulation (which walks info/pointers like the kernels) agrees with the reference."""
    rows = [run_case(c, CpuExecutor()) for op in CATALOG.values() if op.family == family
            for c in expand(op, None, None, None, [1])[::7]]
    assert rows and all(r["verdict"] == "pass" for r in rows), [r["case_id"] for r in rows if r["verdict"] != "pass"]


def test_unrolled_groups_need_rows_of_eight_blocks():
    """The contiguous path's 8-load groups run only when a row holds >= 8 blocks (row9000); the
    shorter rows never reach them, so the same bug passes there."""
    for shape in ("row100", "row1900", "row4000"):
        assert run_case(Case.parse(f"reduce.argmax/f32/{shape}/normal/s0"), UnrolledArgIndexBug())["verdict"] == "pass"
