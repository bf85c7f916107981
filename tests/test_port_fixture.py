"""Issue #20's evidence: a realistic work-in-progress HIP port of Candle's kernels
(tests/fixtures/ports/candle-rocm-wip/), broken in many ways at once, and a copy of the bundled
suite without its in-place path (tests/fixtures/ports/make_inplace_fault.py).

CPU (CI): the port compiles for AMD; coverage reports exactly the planted missing / misnamed /
signature-mismatch kernels; the NumPy model of the port (tests/fakes_port.py) fails exactly where
the bugs are planted. GPU (`-m gpu`): every case of a `pr` subset gets the model's verdict, and
every failing case the model's bad-element count and worst element."""
from __future__ import annotations

import collections
import importlib.util
import shutil
import time
from pathlib import Path

import pytest

from fakes_port import PORT, PortModel, port_kernels
from parity.suite.amd_static import analyze, hipcc
from parity.executors.cpu import CpuExecutor
from parity.run.cases import Filters, load_sweep
from parity.suite.coverage import coverage
from parity.run.engine import run_case
from parity.core.layouts import LAYOUT_CLASSES
from parity.suite.scan import discover

_spec = importlib.util.spec_from_file_location(
    "make_inplace_fault", Path(__file__).parent / "fixtures" / "ports" / "make_inplace_fault.py")
make_inplace_fault = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_inplace_fault)

needs_hipcc = pytest.mark.skipif(not hipcc(), reason="hipcc not installed (apt-get install hipcc libamdhip64-dev)")

# ------------------------------------------------------------------ what the port defines
F32_UNARY = "neg recip exp log sin cos tanh abs sqr sqrt ceil floor round gelu".split()
F16_UNARY = "neg abs exp log tanh sqr sqrt gelu".split()
BF16_UNARY = "neg exp sqrt tanh".split()
PRESENT = {
    *(f"u{o}_f32" for o in F32_UNARY), *(f"u{o}_f16" for o in F16_UNARY), *(f"u{o}_bf16" for o in BF16_UNARY),
    *(f"ucopy_{t}" for t in ("u8", "i64", "f16", "bf16", "f32", "f64")),
    *(f"b{o}_{t}" for o in ("add", "sub", "mul", "div", "minimum", "maximum") for t in ("f32", "f16", "bf16", "u8", "i64")),
    *(f"{o}_{t}" for o in ("eq", "ne", "lt", "gt") for t in ("f32", "f16")),
    *(f"affine_{t}" for t in ("f32", "f64", "u8", "i64")),
    *(f"cast_{p}" for p in ("f32_f64", "f64_f32", "f32_f16", "f16_f32", "f32_bf16", "bf16_f32", "u8_f32",
                            "i64_f32", "f32_i64", "f32_u8")),
    "where_u8_f32", "where_u32_f32", "where_i64_f32", "where_u8_f16", "where_u8_bf16", "where_u8_u8", "where_u8_i64",
    *(f"fill_{t}" for t in ("u8", "u32", "i64", "f16", "f32", "f64")),
    *(f"const_set_{t}" for t in ("u8", "f16", "bf16", "f32", "f64")),
    *(f"copy2d_{t}" for t in ("f32", "u32", "f16")),
    "fast_sum_f32", "fast_min_f32", "fast_max_f32", "softmax_f32", "asort_asc_f32", "asort_desc_f32",
}
# bug 3: uelu with alpha as the first parameter; affine_f16 taking float scalars
SIGNATURE_MISMATCH = {"uelu_f32", "uelu_f16", "affine_f16"}
# bug 1 (misnamed): urelu written as relu (extra name -> the ABI name it should have been)
MISNAMED = {"relu_f32": "urelu_f32", "relu_f16": "urelu_f16"}

# the pr-sweep subset the port's families cover (every other dtype is missing anyway)
OPS = ["unary.*", "copy.ucopy", "binary.*", "cmp.*", "affine", "cast", "where", "fill.*",
       "reduce.sum", "reduce.min", "reduce.max", "nn.softmax", "sort.*"]
DTYPES = ["f32", "f16", "bf16", "f64", "u8", "i64"]

# bug 4 (bf16 binary truncation), bug 5 (f16 minimum/maximum drop NaN), bug 6 (f32->u8 saturates):
# the only (op, dtype, value class) groups with failing cases
FAIL_GROUPS = {
    *((f"binary.{o}", "bf16", v) for o in ("add", "sub", "mul", "div") for v in ("normal", "special")),
    *((f"binary.{o}", "f16", "special") for o in ("minimum", "maximum")),
    ("cast", "f32-u8", "out-of-range"),
}


def port_cases():
    return load_sweep("pr", Filters(ops=list(OPS), dtypes=list(DTYPES)))


def kernel_of(case) -> str:
    return case.catalog_op.kernel_name(case.dtype)


def planted_verdict(case) -> str:
    """The verdict class each case must get, from the bug list alone (fail groups -> 'fail?')."""
    k = kernel_of(case)
    if case.op in ("reduce.min", "reduce.max") and case.layout == "empty":
        return "pass"                             # the host refuses (EmptyTensor): nothing launched
    if k in SIGNATURE_MISMATCH:
        return "signature-mismatch"
    if k not in PRESENT:
        return "missing"
    if case.layout in LAYOUT_CLASSES and LAYOUT_CLASSES[case.layout].inplace and case.catalog_op.family in ("unary", "affine"):
        return "crash"                            # bug 2: PORT_MAP_KERNEL has no null-input path
    if (case.op, case.dtype, case.values) in FAIL_GROUPS:
        return "fail?"                            # fails wherever the data hits the bug
    return "pass"


# --------------------------------------------------------------------------- CPU tests
def test_port_is_a_multi_file_suite_with_its_bug_list():
    files = sorted(p.name for p in PORT.iterdir())
    assert len(files) >= 8 and "hip_compat.h" in files and "README.md" in files
    readme = (PORT / "README.md").read_text()
    for needle in ("float_to_bf16_trunc", "fminf", "inp ?", "alpha", "relu_f32", "cast_f32_u8"):
        assert needle in readme, needle


@needs_hipcc
def test_port_compiles_for_amd():
    rows = analyze(PORT, ("gfx90a",))
    assert rows and all(r.status == "ok" for r in rows), [(r.kernel, r.message[:300]) for r in rows if r.status != "ok"]
    assert {r.kernel for r in rows} >= PRESENT | SIGNATURE_MISMATCH | set(MISNAMED)
    assert all((r.vgpr_spill or 0) == 0 for r in rows)


def test_coverage_reports_exactly_the_planted_statuses():
    rows = coverage(discover(PORT))
    by = collections.defaultdict(set)
    for r in rows:
        by[r.status].add(r.kernel)
    assert by["present"] == PRESENT
    assert by["signature-mismatch"] == SIGNATURE_MISMATCH
    assert by["extra"] == set(MISNAMED)
    assert set(by) == {"present", "missing", "signature-mismatch", "extra"}
    rows = {r.kernel: r for r in rows}
    for extra, wanted in MISNAMED.items():       # the misnamed kernel is found by its suggestion
        assert rows[wanted].status == "missing" and rows[wanted].suggestion == extra
        assert rows[extra].suggestion == wanted
    assert "f16" in rows["affine_f16"].suggestion and "#5" in rows["affine_f16"].suggestion
    assert rows["uelu_f32"].suggestion.startswith("#0: expected size_t, suite has f32")
    # bug 1: a port in progress -- no fp8 at all, no u32 elementwise math, no f64 unary/binary
    assert not any(("f8" in k or "fp8" in k) for k in by["present"])
    assert not any(k.endswith("_f64") and k[0] in "ub" and not k.startswith("ucopy") for k in by["present"])
    for k in ("ugelu_erf_f32", "usilu_f32", "upowf_f32", "le_f32", "ge_f32", "badd_u32", "fast_argmax_f32"):
        assert rows[k].status == "missing", k
    assert port_kernels() == (frozenset(PRESENT), frozenset(SIGNATURE_MISMATCH))


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_port_compiles_with_the_cuda_mapping():
    """The hip-on-nvidia compile of every file (no GPU needed). A failure here is a gap of
    backends/hip/include/hip/ (the port uses HIP's public API: the legacy hip_bfloat16 struct with
    .data, HIP_DYNAMIC_SHARED, ...), never the port's bug."""
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor(PORT, compiler="nvcc", arch="90")
    results = ex.compile_all()
    failed = {src.name: next((ln.strip() for ln in res.error.message.splitlines() if "error" in ln),
                             res.error.message[:300])
              for src, res in results.items() if not res.ok}
    assert not failed, "\n".join(f"{k}: {v}" for k, v in sorted(failed.items()))


@pytest.fixture(scope="module")
def model_rows():
    cases = port_cases()
    model = PortModel()
    return cases, [run_case(c, model) for c in cases]


@pytest.mark.slow
def test_model_fails_exactly_where_the_bugs_are(model_rows):
    cases, rows = model_rows
    assert len(cases) > 10000
    failing_groups = set()
    for c, r in zip(cases, rows):
        want = planted_verdict(c)
        if want == "fail?":
            assert r["verdict"] in ("fail", "pass"), (c.id, r["verdict"], r["message"])
            if r["verdict"] == "fail":
                failing_groups.add((c.op, c.dtype, c.values))
        else:
            assert r["verdict"] == want, (c.id, r["verdict"], r["message"])
    assert failing_groups == FAIL_GROUPS          # every planted math bug shows, nowhere else
    by_id = {c.id: r for c, r in zip(cases, rows)}
    for op in ("add", "sub", "mul", "div"):       # bf16 truncation: 1 ulp, on every dense layout
        for v in ("normal", "special"):
            r = by_id[f"binary.{op}/bf16/contiguous/{v}/s0"]
            assert r["verdict"] == "fail" and r["max_ulp"] == 1, (op, v, r["message"])
    for op in ("minimum", "maximum"):             # f16 fminf/fmaxf: NaN expected, a number got
        r = by_id[f"binary.{op}/f16/contiguous/special/s0"]
        assert r["verdict"] == "fail" and r["worst"]["expected"] == "nan" and r["worst"]["got"] != "nan"
        assert by_id[f"binary.{op}/bf16/contiguous/special/s0"]["verdict"] == "pass"   # bf16 keeps NaN
        assert by_id[f"binary.{op}/f16/contiguous/normal/s0"]["verdict"] == "pass"
    r = by_id["cast/f32-u8/contiguous/out-of-range/s0"]
    assert r["verdict"] == "fail" and r["worst"]["got"] in ("0", "255")
    crashes = {(c.op, c.dtype) for c, r in zip(cases, rows) if r["verdict"] == "crash"}
    assert ("affine", "f64") in crashes and ("copy.ucopy", "u8") in crashes and ("unary.exp", "bf16") in crashes
    assert ("affine", "f16") not in crashes       # signature-mismatch wins: never launched


@pytest.mark.slow
def test_model_bug_cases_pass_on_the_reference(model_rows):
    """The failing cases fail because of the modelled bug: the ABI emulation passes each of them."""
    cases, rows = model_rows
    ref = CpuExecutor()
    failing = [c for c, r in zip(cases, rows) if r["verdict"] == "fail"]
    assert failing
    for c in failing[::7]:
        assert run_case(c, ref)["verdict"] == "pass", c.id


# -------------------------------------------------------------- the in-place-fault suite
def test_inplace_fault_patch_applies(tmp_path):
    dest = make_inplace_fault.make(tmp_path / "suite")
    assert make_inplace_fault.N_PATCHED == 4
    bundled = make_inplace_fault.BUNDLED
    assert (dest / "include" / "hip" / "hip_runtime.h").is_file()
    changed = []
    for p in sorted(bundled.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            q = dest / p.relative_to(bundled)
            assert q.is_file(), q
            if q.read_bytes() != p.read_bytes():
                changed.append(p.name)
    assert changed == ["affine.hip", "unary.h"]
    # the same kernels are still declared, with the same parameter lists
    before, after = discover(bundled).kernels, discover(dest).kernels
    assert {k: d.params for k, d in before.items()} == {k: d.params for k, d in after.items()}
    # a second make over an existing folder starts from a fresh copy
    assert make_inplace_fault.make(dest) == dest


def test_inplace_fault_patch_fails_loudly_on_a_refactored_suite(tmp_path, monkeypatch):
    fake = tmp_path / "bundled"
    fake.mkdir()
    for name in ("unary.h", "affine.hip"):
        (fake / name).write_text("contiguous_map1(numel, inp ? inp : out, out, g);\n")   # one site missing
    monkeypatch.setattr(make_inplace_fault, "BUNDLED", fake)
    with pytest.raises(AssertionError, match="expected 1"):
        make_inplace_fault.make(tmp_path / "out")


@pytest.mark.slow
@needs_hipcc
def test_inplace_fault_suite_compiles_for_amd(tmp_path):
    dest = make_inplace_fault.make(tmp_path / "suite")
    for name in ("unary_f32.hip", "affine.hip"):
        rows = analyze(discover(dest / name), ("gfx90a",), jobs=1)
        assert rows and all(r.status == "ok" for r in rows), [r.message[:300] for r in rows if r.status != "ok"]


# --------------------------------------------------------------------------- GPU tests
@pytest.mark.gpu
def test_port_on_gpu_gets_the_models_verdicts(model_rows):
    """Every case of the pr subset: the GPU verdict equals the model's; every failing case shows
    the model's bad-element count and worst element. No compile-error: a HIP name the CUDA mapping
    lacks is our gap (mapping-gap), never the port's. Run as users run it (fault paths on): a kernel
    that crashed is not launched again, so the model's later crashes of that kernel are `not-run`
    (every crash case launched: test_fault_paths's --every-fault test)."""
    from parity.run.engine import run_cases
    from parity.run.levels import make
    cases, want = model_rows
    level = make("hip-on-nvidia", PORT, None, case_timeout=60)
    assert level.availability.available, level.availability.reason
    t0 = time.perf_counter()
    try:
        got = run_cases(cases, level.executor)
    finally:
        level.executor.close()
    wall = time.perf_counter() - t0
    counts = collections.Counter(r["verdict"] for r in got)
    print(f"candle-rocm-wip: {len(cases)} cases in {wall:.1f} s: {dict(counts)}")
    assert not [r for r in got if r["verdict"] in ("compile-error", "mapping-gap")], \
        sorted({r["message"][:400] for r in got if r["verdict"] in ("compile-error", "mapping-gap")})
    bad, crashed = [], set()
    for c, g, w in zip(cases, got, want):
        if w["verdict"] == "crash" and g["verdict"] in ("crash", "not-run"):
            if g["verdict"] == "crash":
                crashed.add(g["kernel"])
            continue
        if g["verdict"] != w["verdict"]:
            bad.append((c.id, w["verdict"], g["verdict"], g["message"][:200]))
        elif w["verdict"] == "fail" and (g["n_bad"], g["worst"]) != (w["n_bad"], w["worst"]):
            bad.append((c.id, (w["n_bad"], w["worst"]), (g["n_bad"], g["worst"])))
    assert not bad, bad[:20]
    model_crashes = {g["kernel"] for g, w in zip(got, want) if w["verdict"] == "crash"}
    assert crashed == model_crashes, sorted(model_crashes ^ crashed)     # each crashing kernel shown crashing
