"""Issue #33: ABI profiles. Candle's ABI is the first profile (no result changes); rocm-rs's rocarray
kernels the second: every kernel of rocm-rs master's kernels.hip and sorting_kernels.hip known, checked
in its own conventions, with its divergences from Candle stated; our own broken kernels in rocm-rs's
conventions (tests/fixtures/ports/rocm-rs-broken) get the exact verdict and worst element their
NumPy model (tests/fakes_rocm_rs.py) gives.

rocm-rs's sources are not part of parity: tests that read them take PARITY_ROCM_RS_SRC or
.rocm-rs/src/rocarray (`git archive HEAD src/rocarray | tar -x -C .rocm-rs` in a clone of
github.com/RustNSparks/rocm-rs) and skip without them.
GPU: `python3 -m pytest -q -s -m gpu tests/test_rocm_rs_profile.py`."""
from __future__ import annotations

import collections
import os
import shutil
from pathlib import Path

import pytest

from fakes_rocm_rs import DTYPES, FIXTURE, KERNELS, OPS, RocmRsBroken
from parity import profiles
from parity.suite.amd_static import hipcc
from parity.run.cases import Case, Filters, load_sweep
from parity.suite.coverage import coverage, summary
from parity.run.engine import prepare_case, run_case, run_cases
from parity.executors.cpu import CpuExecutor
from parity.ops import CATALOG, expected_kernels
from parity.suite.scan import discover

ROOT = Path(__file__).resolve().parents[1]
ROCM_RS = Path(os.environ.get("PARITY_ROCM_RS_SRC") or ROOT / ".rocm-rs" / "src" / "rocarray")
COMPAT = ROOT / "tests" / "fixtures" / "ports" / "rocm-rs-compat" / "atomic64.h"
needs_rocm_rs = pytest.mark.skipif(not (ROCM_RS / "kernels.hip").is_file(),
                                   reason="rocm-rs sources not here (PARITY_ROCM_RS_SRC or .rocm-rs/src/rocarray)")
needs_hipcc = pytest.mark.skipif(not hipcc(), reason="hipcc not installed (apt-get install hipcc libamdhip64-dev)")
RR = profiles.get("rocm-rs")


# ------------------------------------------------------------------------------ profiles
def test_candle_is_the_first_profile_unchanged():
    candle = profiles.get(None)
    assert candle.name == "candle" and candle.ops is CATALOG and candle.prefix == ""
    assert candle.expected_kernels().keys() == expected_kernels().keys()
    assert [c.id for c in load_sweep("smoke")] == [c.id for c in load_sweep("smoke", profile=candle)]
    assert profiles.get("candle") is candle and profiles.resolve(None, None) == (candle, "default")


def test_profile_names_and_errors():
    assert {"candle", "rocm-rs"} <= set(profiles.names())
    with pytest.raises(KeyError, match="did you mean 'rocm-rs'"):
        profiles.get("rocm_rs")
    with pytest.raises(KeyError, match="does not exist"):
        profiles.get("nowhere/parity-kernels.toml")


def test_recognised_from_the_kernel_names():
    prof, hits = profiles.recognise(RR.expected_kernels())
    assert prof is RR and hits == len(RR.expected_kernels()) == 165
    prof, hits = profiles.recognise(discover(ROOT / "backends" / "hip").kernels)
    assert prof.name == "candle" and hits > 900
    assert profiles.recognise(["my_kernel_f32"]) == (profiles.get(None), 0)
    prof, how = profiles.resolve(None, ROOT / FIXTURE, lambda: list(discover(ROOT / FIXTURE).kernels))
    assert prof is RR and how.startswith("recognised: 6 of the suite's 6 kernels")


def test_every_op_resolves_from_its_case_id():
    for name, op in RR.ops.items():
        assert name.startswith("rocm-rs.") and profiles.lookup_op(name) is op
        case = Case(name, op.dtypes[0], op.spec.layouts()[0], op.value_classes[0])
        assert Case.parse(case.id).catalog_op is op
    with pytest.raises(KeyError):
        profiles.lookup_op("rocm-rs.no.such")


# ------------------------------------------------------------------------------ the catalog
def test_rocm_rs_catalog_in_its_own_conventions():
    k = RR.expected_kernels()
    assert len(k) == 165 and len(RR.ops) == 43
    for name in ("elementwise_add_uchar", "elementwise_div_broadcast_uint", "scalar_mul_ulong", "reduce_sum_long",
                 "reduce_max_double", "reduce_sum_axis_float", "matrix_multiply_shared_double", "transpose_ulong",
                 "transpose_2d_shared_float", "generic_range_long", "linspace_double", "copy_element", "generic_search",
                 "reverse_array_uint", "simple_sort_int", "bitonic_sort_ASCENDING_float", "bitonic_sort_DESCENDING_uint",
                 "radix_sort_ascending_ulong", "init_indices", "argsort_long", "is_sorted_double", "partial_sort_int",
                 "nth_element_uint", "merge_sorted_float", "stable_sort_double", "test_simple_kernel"):
        assert name in k, name
    op, key = k["elementwise_add_broadcast_float"]
    assert op.signature(key) == ["ptr"] * 5 + ["u32", "ptr", "ptr", "u32", "ptr", "u32", "u32"]
    assert k["scalar_add_long"][0].signature("i64") == ["ptr", "i64", "ptr", "u32"]
    assert k["generic_range_double"][0].signature("f64") == ["f64", "f64", "u32", "ptr"]
    for op in RR.ops.values():
        assert op.semantics and op.spec.shapes, op.name


def test_divergences_from_candle_are_stated_on_the_ops():
    """Atomic accumulation order and NaN in min/max: said on the op, as Candle's divergences are."""
    summ, mx, mn = (RR.ops[f"rocm-rs.reduce.{k}"] for k in ("sum", "max", "min"))
    assert any("atomic" in d and "order" in d and "fast_sum" in d for d in summ.divergences)
    for op in (mx, mn):
        assert any("NaN" in d and "Candle" in d and "index 0" in d for d in op.divergences), op.divergences
        assert "NaN" in op.semantics and "input[0]" in op.semantics
    assert any("input_strides" in d for d in RR.ops["rocm-rs.transpose.reverse"].divergences)
    assert any("float" in d for d in RR.ops["rocm-rs.memory.copy_element"].divergences)
    assert "tolerance" not in summ.spec.tolerance("f32") and "sum|terms|" in summ.spec.tolerance("f32")


def test_layouts_value_classes_and_lengths_the_abi_allows():
    cases = load_sweep("pr", profile=RR)
    ids = {c.id for c in cases}
    lays = collections.defaultdict(set)
    for c in cases:
        lays[c.op].add(c.layout)
    # contiguous kernels: lengths from one element to 640 blocks, pointer offsets, n = 0 refused
    assert {"len1", "len255", "len256", "len257", "len163835", "offset", "empty"} <= lays["rocm-rs.elementwise.add"]
    # dims/strides kernels: strided and broadcast views, numpy broadcasting across ranks
    assert {"transposed", "permuted4d", "stepped", "narrowed", "broadcast-leading", "scalar", "rank0", "bcast-rank",
            "bcast-ones", "bcast-rank3"} <= lays["rocm-rs.broadcast.add"]
    assert {"transposed", "narrowed", "permuted"} <= lays["rocm-rs.reduce.sum_axis"]
    assert "rocm-rs.reduce.max/i32/contiguous/wide/s0" in ids          # integers beyond 2^24
    assert not any(c.layout == "huge" for c in cases)                   # opt-in
    huge = load_sweep("huge", profile=RR)
    assert huge and {c.layout for c in huge} == {"huge"} and {c.dtype for c in huge} <= {"u8", "i8"}
    # launches as rocm-rs's host makes them
    p = prepare_case(Case.parse("rocm-rs.elementwise.add/f32/len257/normal/s0"))
    assert p.launch.grid == (2, 1, 1) and p.launch.block == (256, 1, 1)
    assert [a.kind for a in p.launch.args] == ["ptr", "ptr", "ptr", "u32"] and p.launch.args[3].value == 257
    p = prepare_case(Case.parse("rocm-rs.broadcast.sub/i32/bcast-rank3/normal/s0"))
    a = {x.name: x for x in p.launch.args}
    assert list(p.launch.buffers["a_dims"]) == [5, 1, 7] and list(p.launch.buffers["b_dims"]) == [6, 1]
    assert p.launch.buffers["a_strides"].dtype.name == "uint32" and a["b_ndim"].value == 2
    assert list(p.launch.buffers["result_dims"]) == [5, 6, 7] and a["total_elements"].value == 210
    p = prepare_case(Case.parse("rocm-rs.matmul.multiply/f32/tails/normal/s0"))
    assert p.launch.grid == (3, 3, 1) and p.launch.block == (16, 16, 1)
    p = prepare_case(Case.parse("rocm-rs.reduce.max/f32/contiguous/normal/s0"))
    assert p.launch.buffers["result"][0] == p.built.inputs["input"][0]        # the host starts at input[0]
    p = prepare_case(Case.parse("rocm-rs.sort.argsort/f32/len100/normal/s0"))
    assert list(p.launch.buffers["indices"]) == list(range(100))             # init_indices first
    p = prepare_case(Case.parse("rocm-rs.sort.bitonic_descending/i32/len100/normal/s0"))
    assert p.launch.kernel == "bitonic_sort_DESCENDING_int" and p.launch.block == (128, 1, 1)
    for cid, why in (("rocm-rs.elementwise.add/f32/empty/normal/s0", "no blocks"),
                     ("rocm-rs.sort.argsort/f32/len1/normal/s0", "len <= 1"),
                     ("rocm-rs.sort.partial_sort/f32/k-all/normal/s0", "k >= len")):
        r = run_case(Case.parse(cid), CpuExecutor("rocm-rs"))
        assert r["verdict"] == "pass" and why in r["message"], (cid, r["message"])


def test_cpu_level_runs_every_rocm_rs_kernel():
    """One case of every kernel of the profile on the ABI emulation (the whole pr sweep: slow set)."""
    cases = load_sweep("smoke", Filters(values=["normal"]), profile=RR)
    seen, pick = set(), []
    for c in cases:
        k = c.catalog_op.kernel_name(c.dtype)
        if k not in seen:
            seen.add(k)
            pick.append(c)
    assert len(seen) == 165
    rows = run_cases(pick, CpuExecutor("rocm-rs"), "cpu")
    assert {r["verdict"] for r in rows} == {"pass"}, [(r["case_id"], r["message"][:200]) for r in rows
                                                      if r["verdict"] != "pass"]


@pytest.mark.slow
def test_cpu_level_passes_the_rocm_rs_pr_sweep():
    cases = load_sweep("pr", profile=RR)
    rows = run_cases(cases, CpuExecutor("rocm-rs"), "cpu")
    assert len(rows) == len(cases)
    assert {r["verdict"] for r in rows} == {"pass"}, [(r["case_id"], r["message"][:200]) for r in rows
                                                      if r["verdict"] != "pass"][:10]


# ------------------------------------------------------------------------------ rocm-rs master
@needs_rocm_rs
def test_coverage_of_rocm_rs_master_knows_every_kernel():
    rows = coverage(discover(ROCM_RS), RR.expected_kernels())
    assert summary(rows) == {"present": 165}


@needs_rocm_rs
@needs_hipcc
def test_rocm_rs_master_on_amd_static():
    """kernels.hip does not compile with ROCm (no atomicAdd(long long*, long long): kernels.hip:581);
    sorting_kernels.hip does; with the one-overload compat header, everything does."""
    from parity.executors.amd_compile import AmdStaticExecutor
    from parity.suite.port import Port
    ex = AmdStaticExecutor(ROCM_RS, profile="rocm-rs")
    assert ex.availability().available
    suite = discover(ROCM_RS)
    for kernel, decl in suite.kernels.items():
        v = ex.kernel_verdict(kernel)
        if decl.file.name == "kernels.hip":
            assert v.status == "compile-error" and "kernels.hip:581" in v.message and "atomicAdd" in v.message
        else:
            assert v.status == "compiled", (kernel, v.message)
    port = Port(root=ROCM_RS).extended(force_includes=[str(COMPAT)])
    ex = AmdStaticExecutor(ROCM_RS, profile="rocm-rs", port=port)
    ex.availability()
    assert {ex.kernel_verdict(k).status for k in suite.kernels} == {"compiled"}


# ------------------------------------------------------------------------------ the broken fixture
def model_rows(cases):
    return run_cases(cases, RocmRsBroken(), "model")


def by_id(rows):
    return {r["case_id"]: r for r in rows}


def test_fixture_defines_six_kernels_in_rocm_rs_conventions():
    rows = {r.kernel: r for r in coverage(discover(ROOT / FIXTURE), RR.expected_kernels())}
    present = {k for k, r in rows.items() if r.status == "present"}
    assert present == {k for k, _ in KERNELS.values()}
    assert not [r for r in rows.values() if r.status in ("signature-mismatch", "extra")]


def test_planted_bugs_get_their_verdict_and_worst_element():
    cases = load_sweep("pr", Filters(ops=OPS, dtypes=DTYPES), profile=RR)
    rows = by_id(model_rows(cases))
    # stride array reused: b read with a's strides (a transposed, b contiguous)
    r = rows["rocm-rs.broadcast.add/f32/transposed/normal/s0"]
    assert r["verdict"] == "fail" and r["n_bad"] == 1548
    w = r["worst"]
    assert w["coords"] == [5, 19] and w["inputs"] == {"a": "0.3921426832675934", "b": "-4.628123760223389"}
    assert (w["expected"], w["got"]) == ("-4.235980987548828", "4.670539379119873")
    assert rows["rocm-rs.broadcast.add/f32/contiguous/normal/s0"]["verdict"] == "pass"   # same strides: hidden
    # a stepped b read with a's unit strides: parity's NaN poison from its gaps reaches the output
    r = rows["rocm-rs.broadcast.add/f32/len257/normal/s0"]
    assert r["verdict"] == "fail" and r["worst"]["got"] == "nan" and r["worst"]["kind"] == "outside-view"
    # off-by-one tail: the last element keeps the 0xA5 sentinel
    r = rows["rocm-rs.scalar.add/f32/len257/normal/s0@scalar=2.5"]
    assert r["verdict"] == "fail" and r["n_bad"] == 1
    assert r["worst"]["coords"] == [256] and r["worst"]["expected"] == "6.502591133117676"
    assert "0xA5 sentinel" in r["worst"]["note"] and r["worst"]["got_bits"] == "0xa5a5a5a5"
    assert all(rows[c.id]["verdict"] == ("pass" if c.layout == "empty" else "fail")
               for c in cases if c.op == "rocm-rs.scalar.add")
    # NaN lost in max: the host starts the accumulator at a NaN first element, the kernel replaces it
    r = rows["rocm-rs.reduce.max/f32/nan-first/normal/s0"]
    assert r["verdict"] == "fail" and r["worst"]["expected"] == "nan" and r["worst"]["got"] == "4.99704647064209"
    assert rows["rocm-rs.reduce.max/f32/contiguous/normal/s0"]["verdict"] == "pass"
    # the correct kernels pass everything
    for c in cases:
        if KERNELS[(c.op, c.dtype)][1] == "":
            assert rows[c.id]["verdict"] == "pass", (c.id, rows[c.id]["message"])
    # every failing case fails on the model alone: the ABI emulation passes it
    ref = CpuExecutor("rocm-rs")
    for cid in ("rocm-rs.broadcast.add/f32/transposed/normal/s0", "rocm-rs.reduce.max/f32/nan-first/normal/s0"):
        assert run_case(Case.parse(cid), ref)["verdict"] == "pass"


def test_index_overflow_model_writes_nothing_past_int_max():
    """The 32-bit overflow shows on `huge` (2^31 + 1029 elements: GPU only); the model's rule on a
    length past a lowered INT_MAX: every element keeps the sentinel."""
    class Small(RocmRsBroken):
        INT_MAX = 1000
    case = Case.parse("rocm-rs.elementwise.add/u8/len1025/normal/s0")
    r = run_case(case, Small())
    unwritten = int((prepare_case(case).expected["result"] != 0xA5).sum())    # a sum that is 0xA5 looks written
    assert r["verdict"] == "fail" and r["n_bad"] == unwritten > 1000 and "sentinel" in r["worst"]["note"]
    assert run_case(Case.parse("rocm-rs.elementwise.add/u8/len255/normal/s0"), Small())["verdict"] == "pass"


@needs_hipcc
def test_fixture_on_amd_static():
    from parity.executors.amd_compile import AmdStaticExecutor
    ex = AmdStaticExecutor(ROOT / FIXTURE, profile="rocm-rs")
    assert ex.availability().available
    defined = {k for k, _ in KERNELS.values()}
    for kernel in RR.expected_kernels():
        assert ex.kernel_verdict(kernel).status == ("compiled" if kernel in defined else "missing"), kernel


# ------------------------------------------------------------------------------ GPU
def _run_on(level_name: str, suite: Path, cases, port=None, every_fault=True):
    from parity.run.levels import make
    level = make(level_name, suite, None, case_timeout=60, port=port, profile="rocm-rs")
    assert level.availability.available, level.availability.reason
    try:
        return run_cases(cases, level.executor, every_fault=every_fault)
    finally:
        level.executor.close()


@pytest.mark.gpu
def test_fixture_on_gpu_gets_the_models_verdicts_and_worst_elements():
    """Every pr case of the fixture's ops: a kernel it defines gets the model's verdict, bad-element count
    and worst element; where the model reads outside an operand (b with a's larger strides) the GPU
    reads whatever lies there: not a pass. A kernel it does not define: missing."""
    cases = load_sweep("pr", Filters(ops=OPS, dtypes=DTYPES), profile=RR)
    want = by_id(model_rows(cases))
    got = by_id(_run_on("hip-on-nvidia", ROOT / FIXTURE, cases))
    assert len(got) == len(cases)
    print(collections.Counter(r["verdict"] for r in got.values()))
    for c in cases:
        g, w = got[c.id], want[c.id]
        if w["verdict"] in ("crash", "not-run"):
            assert g["verdict"] in ("fail", "crash", "oob-write"), (c.id, g["verdict"], g["message"])
            continue
        assert g["verdict"] == w["verdict"], (c.id, g["verdict"], g["message"], w["message"])
        if w["verdict"] == "fail":
            assert g["n_bad"] == w["n_bad"], (c.id, g["message"], w["message"])
            gw, ww = g["worst"], w["worst"]
            assert (gw["coords"], gw["expected"], gw["got"]) == (ww["coords"], ww["expected"], ww["got"]), c.id


@pytest.mark.gpu
@pytest.mark.slow
def test_fixture_index_overflow_on_huge_on_gpu():
    """elementwise_add_uchar's `(int)n` at 2^31 + 1029 elements (6 GiB of buffers): the NumPy model says
    no thread writes; on an H200 the launch faults instead (`crash`, measured at stop 28), and the level
    goes on: a case of one block's length right after it passes."""
    case = Case.parse("rocm-rs.elementwise.add/u8/huge/normal/s0")
    g = _run_on("hip-on-nvidia", ROOT / FIXTURE, [case])[0]
    assert g["verdict"] == "crash", (g["verdict"], g["message"][:300])
    ok = _run_on("hip-on-nvidia", ROOT / FIXTURE, [Case.parse("rocm-rs.elementwise.add/u8/len163835/normal/s0")])[0]
    assert ok["verdict"] == "pass"


def _kernels_hip_cases(cases):
    suite = discover(ROCM_RS)
    return [c for c in cases if suite.kernels[c.catalog_op.kernel_name(c.dtype)].file.name == "kernels.hip"]


@pytest.mark.gpu
@needs_rocm_rs
def test_rocm_rs_master_pr_sweep_on_gpu():
    """rocm-rs master as it is: every kernels.hip case a compile-error at kernels.hip:581; with the compat
    header, every kernel runs and the findings below are rocm-rs's own bugs."""
    from parity.suite.port import Port
    cases = load_sweep("pr", profile=RR)
    rows = _run_on("hip-on-nvidia", ROCM_RS, cases, every_fault=False)
    assert len(rows) == len(cases) and not [r for r in rows if r["verdict"] in ("error", "mapping-gap")]
    in_kernels_hip = {c.id for c in _kernels_hip_cases(cases)}
    for r in rows:
        if r["case_id"] in in_kernels_hip and not r["message"].startswith("expected error"):
            assert r["verdict"] == "compile-error" and "kernels.hip:581" in r["message"], r["case_id"]
    print("master:", collections.Counter(r["verdict"] for r in rows))
    port = Port(root=ROCM_RS).extended(force_includes=[str(COMPAT)])
    rows = by_id(_run_on("hip-on-nvidia", ROCM_RS, cases, port=port, every_fault=False))
    print("master + compat:", collections.Counter(r["verdict"] for r in rows.values()))
    assert not [r for r in rows.values() if r["verdict"] in ("compile-error", "error", "mapping-gap", "missing")]
    wrong = []

    def expect(cid, ok, what):
        if not ok(rows[cid]["verdict"]):
            wrong.append(f"{cid}: {rows[cid]['verdict']} ({what}) {rows[cid]['message'][:160]}")
    for cid in ("rocm-rs.elementwise.add/f32/contiguous/normal/s0", "rocm-rs.sort.argsort/f32/len100/normal/s0",
                "rocm-rs.reduce.sum/f32/len163835/normal/s0", "rocm-rs.matmul.multiply/f32/tails/normal/s0"):
        expect(cid, lambda v: v == "pass", "a correct kernel")
    # rocm-rs's bugs (kernels.hip / sorting_kernels.hip)
    # unravel_index (kernels.hip:12-18) walks the dims innermost first dividing by stride 1: the last
    # index takes the whole flat index, so every broadcast of rank >= 2 reads the wrong elements
    # (measured on an H200, stop 28: (5,1,7)+(6,1) 203 of 210 elements off, the first 7 right)
    expect("rocm-rs.broadcast.add/f32/bcast-rank3/normal/s0", lambda v: v == "fail", "unravel_index")
    if rows["rocm-rs.broadcast.add/f32/bcast-rank3/normal/s0"]["verdict"] == "fail":
        assert rows["rocm-rs.broadcast.add/f32/bcast-rank3/normal/s0"]["n_bad"] == 203
    for op in ("max", "min"):                 # fmaxf/fminf through float: doubles and wide integers rounded
        for cid in (f"rocm-rs.reduce.{op}/f64/contiguous/normal/s0", f"rocm-rs.reduce.{op}/i32/contiguous/wide/s0"):
            p = prepare_case(Case.parse(cid))
            x = p.built.inputs["input"]
            if (x.argmax() if op == "max" else x.argmin()) != 0:          # the accumulator's start is exact
                expect(cid, lambda v: v == "fail", "fmaxf/fminf through float")
    expect("rocm-rs.memory.copy_element/u8/middle/normal/s0", lambda v: v == "oob-write", "4 bytes into 1")
    expect("rocm-rs.memory.copy_element/f64/middle/normal/s0", lambda v: v == "fail", "half a double")
    # transpose: the same unravel_index puts the whole flat index in the last input index, which becomes
    # output index 0: output_idx = idx * output_strides[0] lands past the output (H100, this run: every
    # transpose case of rank >= 2 an oob-write, 12 per shape class)
    expect("rocm-rs.transpose.reverse/f32/transposed/normal/s0", lambda v: v == "oob-write", "unravel_index")
    # bitonic: both threads of a pair run the compare-exchange (each with the opposite comparison), so a
    # pair already in order is swapped back; and the padding's sentinel 999999 is no maximum of int
    expect("rocm-rs.sort.bitonic_ascending/i32/len100/normal/s0", lambda v: v == "fail", "bitonic pairs")
    expect("rocm-rs.sort.bitonic_ascending/f32/len8/normal/s0", lambda v: v == "fail", "bitonic pairs")
    expect("rocm-rs.sort.simple_sort/i32/empty/normal/s0", lambda v: v in ("crash", "timeout", "oob-write"),
           "n - 1 with unsigned n = 0")
    assert not wrong, "\n".join(wrong)

@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_fixture_and_compat_compile_with_the_cuda_mapping():
    """hip-on-nvidia's compile (no GPU needed): the fixture as it is; rocm-rs master only with the
    compat header (kernels.hip:581 otherwise, the same error hipcc gives)."""
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor(ROOT / FIXTURE, compiler="nvcc", arch="90")
    assert all(r.ok for r in ex.compile_all().values())
    if (ROCM_RS / "kernels.hip").is_file():
        from parity.executors.preflight import compile_failure
        from parity.suite.port import Port
        ex = HipOnNvidiaExecutor(ROCM_RS, compiler="nvcc", arch="90")
        res = ex.compile_all()
        bad = {p.name: compile_failure(p, r, True) for p, r in res.items() if not r.ok}
        assert list(bad) == ["kernels.hip"] and bad["kernels.hip"].status == "compile-error"
        assert "kernels.hip:581" in bad["kernels.hip"].message and "atomicAdd" in bad["kernels.hip"].message
        port = Port(root=ROCM_RS).extended(force_includes=[str(COMPAT)])
        ex = HipOnNvidiaExecutor(ROCM_RS, compiler="nvcc", arch="90", port=port)
        assert all(r.ok for r in ex.compile_all().values())


# ------------------------------------------------------------------------------ the command line
def test_run_recognises_the_profile_names_it_and_resumes_with_it(tmp_path):
    from click.testing import CliRunner

    from parity.cli.main import main
    r = CliRunner().invoke(main, ["run", "--hip-src", str(ROOT / FIXTURE), "--levels", "cpu", "--ops", "reduce.sum",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "profile: rocm-rs (recognised: 6 of the suite's 6 kernels are rocm-rs's)" in r.output
    folder = next(tmp_path.iterdir())
    import json
    meta = json.loads((folder / "results.json").read_text())["meta"]
    assert meta["profile"]["name"] == "rocm-rs" and meta["profile"]["kernels"] == 165 and "golden" not in meta
    md = (folder / "summary.md").read_text()
    assert "ABI profile `rocm-rs`" in md and "kernels.hip:581" in md        # the profile and its notes
    assert "rocm-rs" in (folder / "index.html").read_text()
    assert json.loads((folder / "run.json").read_text())["profile_opt"] == "rocm-rs"
    r = CliRunner().invoke(main, ["run", "--resume", str(folder), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["run", "--resume", str(folder), "--profile", "candle"])
    assert r.exit_code == 2 and "continues a run with --profile rocm-rs" in r.output
    r = CliRunner().invoke(main, ["run", "--profile", "rocm-rs", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "has no bundled suite" in r.output
    r = CliRunner().invoke(main, ["run", "--profile", "rocm_rs", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "did you mean 'rocm-rs'" in r.output
    r = CliRunner().invoke(main, ["list", "--profile", "rocm-rs", "--ops", "sort.*", "--json"])
    assert r.exit_code == 0 and "bitonic_sort_ASCENDING_float" in r.output


def test_candle_runs_name_their_profile_too(tmp_path):
    from click.testing import CliRunner

    from parity.cli.main import main
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--ops", "unary.neg", "--dtypes", "f32",
                                  "--layouts", "contiguous", "--out", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    folder = next(tmp_path.iterdir())
    import json
    meta = json.loads((folder / "results.json").read_text())["meta"]
    assert meta["profile"]["name"] == "candle" and meta["golden"]["entries"] > 0
    assert "ABI profile `candle`" in (folder / "summary.md").read_text()


def test_repro_replays_a_profile_case(tmp_path):
    from parity.run import repro
    r = repro.run("rocm-rs.broadcast.add/f32/transposed/normal/s0", "cpu", ROOT / FIXTURE, out=tmp_path / "c.npz")
    assert r.verdict == "pass" and r.kernel == "elementwise_add_broadcast_float" and (tmp_path / "c.npz").is_file()
    with pytest.raises(ValueError, match="host refuses"):
        repro.run("rocm-rs.elementwise.add/f32/empty/normal/s0", "cpu", ROOT / FIXTURE)
