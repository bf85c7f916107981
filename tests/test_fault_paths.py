"""A faulting path is launched once (issue #30, item 2): after a kernel crashes or times out on a
code path (in place, empty, a layout class), its later cases on that path are `not-run` — failing,
counted, named after the first fault — and `--every-fault` launches every case. No GPU: the
kernels fault in a scripted worker (tests/fakes_fault.py) that logs every launch."""
from __future__ import annotations

import collections

import pandas as pd
import pytest

from fakes_fault import PathFaults, launches
from parity.run.cases import Filters, load_sweep
from parity.run.engine import fault_path, run_cases
from parity.executors.worker import IsolatedExecutor
from parity.render.findings import analyze
from parity.run.results import FAILING, Results

FAULTY = ("inplace", "empty")          # the fake's kernels fault on these paths


def cases():
    return load_sweep("pr", Filters(ops=["unary.neg", "unary.exp"], dtypes=["f32"],
                                    layouts=["contiguous", "empty", "inplace", "transposed", "inplace-strided"]))


def path(case) -> str:
    return fault_path(case.catalog_op.kernel_name(case.dtype), case.layout)[1]


def expected(cs) -> list[tuple[str, str]]:
    """(verdict, message) per case: the first case of each kernel x faulting path faults, the later
    ones are not run and name it, every other case passes."""
    first: dict = {}
    out = []
    for c in cs:
        key = (c.catalog_op.kernel_name(c.dtype), path(c))
        if key[1] not in FAULTY:
            out.append(("pass", None))
        elif key in first:
            out.append(("not-run", f"same fault path as {first[key]}"))
        else:
            first[key] = c.id
            out.append(("fault", None))
    return out


def check(rows, cs, fault: str) -> None:
    assert [r["case_id"] for r in rows] == [c.id for c in cs]
    for r, (verdict, message) in zip(rows, expected(cs)):
        assert r["verdict"] == (fault if verdict == "fault" else verdict), (r["case_id"], r["verdict"], r["message"])
        if message is not None:
            assert r["message"] == message, r["case_id"]


def test_paths_group_both_inplace_classes_and_keep_other_layouts_apart():
    assert fault_path("uneg_f32", "inplace") == fault_path("uneg_f32", "inplace-strided") == ("uneg_f32", "inplace")
    assert fault_path("uneg_f32", "empty") == ("uneg_f32", "empty")
    assert fault_path("uneg_f32", "transposed") != fault_path("uneg_f32", "contiguous")
    assert fault_path("uneg_f32", "inplace") != fault_path("uexp_f32", "inplace")


@pytest.mark.parametrize("mode", ["crash", "exit"])
def test_a_faulting_path_is_launched_once_in_the_worker(tmp_path, mode):
    """crash: the kernel loses its context (the worker answers); exit: the worker process dies.
    The case queued behind the fault is held back, not re-sent to the new worker."""
    log = str(tmp_path / "launches")
    cs = cases()
    ex = IsolatedExecutor(PathFaults, timeout_s=10.0, log=log, paths=FAULTY, mode=mode)
    try:
        rows = run_cases(cs, ex)
    finally:
        ex.close()
    check(rows, cs, "crash")
    assert rows[6]["case_id"] == "unary.neg/f32/inplace/normal/s0" and rows[6]["verdict"] == "crash"
    assert [r["message"] for r in rows[7:10]] == ["same fault path as unary.neg/f32/inplace/normal/s0"] * 3
    assert {r["verdict"] for r in rows if r["layout"] in ("contiguous", "transposed")} == {"pass"}
    n_faulty = sum(path(c) in FAULTY for c in cs)
    got = collections.Counter(launches(log))
    assert got == {("uneg_f32", "other"): 4, ("uexp_f32", "other"): 4, ("uneg_f32", "empty"): 1,
                   ("uexp_f32", "empty"): 1, ("uneg_f32", "inplace"): 1, ("uexp_f32", "inplace"): 1}
    assert sum(got.values()) == len(cs) - n_faulty + 4          # one launch per kernel x faulting path
    assert ex.restarts == 4


def test_every_fault_launches_every_case(tmp_path):
    log = str(tmp_path / "launches")
    cs = cases()
    ex = IsolatedExecutor(PathFaults, timeout_s=10.0, log=log, paths=FAULTY)
    try:
        rows = run_cases(cs, ex, every_fault=True)
    finally:
        ex.close()
    assert [r["verdict"] for r in rows] == ["crash" if path(c) in FAULTY else "pass" for c in cs]
    assert len(launches(log)) == len(cs) and ex.restarts == sum(path(c) in FAULTY for c in cs)


def test_a_timeout_is_a_fault_path_too(tmp_path):
    log = str(tmp_path / "launches")
    cs = [c for c in cases() if c.op == "unary.neg"]
    ex = IsolatedExecutor(PathFaults, timeout_s=1.0, log=log, paths=("inplace",), mode="hang")
    try:
        rows = run_cases(cs, ex)
    finally:
        ex.close()
    got = [(r["layout"], r["verdict"]) for r in rows if r["layout"].startswith("inplace")]
    assert got == [("inplace", "timeout"), ("inplace", "not-run"), ("inplace-strided", "not-run"),
                   ("inplace-strided", "not-run")]
    assert launches(log).count(("uneg_f32", "inplace")) == 1


def test_fail_and_oob_write_are_not_fault_paths(tmp_path):
    """Only crash and timeout (a worker restart) hold back a path: a wrong answer launches on."""
    from parity.run.engine import FaultPaths
    faults = FaultPaths()
    for verdict in ("fail", "oob-write", "input-clobbered", "pass"):
        faults.note({"case_id": "x", "verdict": verdict, "kernel": "uneg_f32", "layout": "inplace"})
    assert faults.faulted(cases()[6]) is None
    faults.note({"case_id": "y", "verdict": "crash", "kernel": "uneg_f32", "layout": "inplace"})
    assert faults.faulted(cases()[8]) == "y"                      # inplace-strided: the same path


def test_an_executor_in_this_process_skips_faulted_paths_too(tmp_path):
    """No worker (an executor that cannot queue, or a timed run): the same rows, one launch a path."""
    log = str(tmp_path / "launches")
    cs = cases()
    rows = run_cases(cs, PathFaults(log, FAULTY, "contained"))
    check(rows, cs, "crash")
    assert len(launches(log)) == len(cs) - sum(path(c) in FAULTY for c in cs) + 4


def test_each_gpu_of_a_pool_launches_a_faulting_path_once(tmp_path):
    from parity.executors.pool import GpuPool
    log = str(tmp_path / "launches")
    cs = cases()
    pool = lambda: GpuPool("fake-gpu", [PathFaults(log, FAULTY, "contained") for _ in range(2)])  # noqa: E731
    rows = run_cases(cs, pool())
    assert [r["case_id"] for r in rows] == [c.id for c in cs]
    for k in range(2):                                  # drive process k ran cases k, k+2, ...
        check(rows[k::2], cs[k::2], "crash")
    assert collections.Counter(launches(log))[("uneg_f32", "inplace")] == 2   # once per GPU
    every = run_cases(cs, pool(), every_fault=True)
    assert [r["verdict"] for r in every] == ["crash" if path(c) in FAULTY else "pass" for c in cs]


# ------------------------------------------------------------------------------ reports
def _rows(tmp_path) -> list[dict]:
    return run_cases(cases(), PathFaults(str(tmp_path / "launches"), FAULTY, "contained"))


def test_not_run_is_failing_and_counted(tmp_path):
    res = Results.from_rows(_rows(tmp_path))
    assert "not-run" in FAILING and not res.ok
    assert res.counts()["not-run"] == 8 and res.counts()["crash"] == 4
    assert set(res.failures()["verdict"]) == {"crash", "not-run"}
    f = analyze(res.table)
    assert f.failing_cases == 12


def test_the_crash_finding_names_the_cases_not_run_on_its_path(tmp_path):
    f = analyze(Results.from_rows(_rows(tmp_path)).table)
    titles = sorted(x.title for x in f.findings)
    assert titles == ["empty tensor path: 2 kernels crash (2 cases; 2 more on the same path not run)",
                      "in-place (null input) path: 2 kernels crash (2 cases; 6 more on the same path not run)"]
    assert {x.cause for x in f.findings} == {"crash"}            # no finding of its own: counted there


def test_not_run_cases_whose_fault_is_missing_get_a_finding(tmp_path):
    rows = [r for r in _rows(tmp_path) if r["verdict"] != "crash"]     # e.g. a filtered results file
    f = analyze(pd.DataFrame(rows))
    assert [(x.cause, x.cases) for x in f.findings] == [("not-run", 4), ("not-run", 4)]
    assert f.findings[0].title == "`unary.neg`: 4 cases not run after a fault that is not in these results"


def test_a_kernel_that_crashes_on_every_layout_counts_its_not_run_cases(tmp_path):
    log = str(tmp_path / "launches")
    cs = [c for c in cases() if c.layout in ("inplace", "inplace-strided", "empty")]
    f = analyze(pd.DataFrame(run_cases(cs, PathFaults(log, FAULTY, "contained"))))
    assert [x.title for x in f.findings] == \
        ["2 kernels crash on every layout (4 cases; 8 more on the same path not run)"]


# ------------------------------------------------------------------------------ CLI
@pytest.mark.parametrize("flag", [False, True])
def test_every_fault_option_reaches_run_cases(tmp_path, monkeypatch, flag):
    from click.testing import CliRunner

    import parity.run.engine
    from parity.cli.main import main
    seen = []
    real = parity.run.engine.run_cases

    def spy(*a, **kw):
        seen.append(kw.get("every_fault"))
        return real(*a, **kw)
    monkeypatch.setattr(parity.run.engine, "run_cases", spy)
    args = ["run", "--levels", "cpu", "--ops", "unary.neg", "--dtypes", "f32", "--layouts", "inplace",
            "--out", str(tmp_path), "-q"] + (["--every-fault"] if flag else [])
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert seen == [flag]
    res = Results.from_json(next(tmp_path.glob("*/results.json")))
    assert res.meta.get("every_fault", False) is flag


# ------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
def test_inplace_fault_suite_launches_each_faulting_path_once_on_gpu(tmp_path):
    """The bundled suite without its in-place path (tests/fixtures/ports/make_inplace_fault.py):
    per kernel, its first in-place case crashes and the others are not run; every other case
    passes; --every-fault crashes on every in-place case (shown on three ops' f32 and bf16 cases:
    each fault costs a GPU recovery, and all 672 of them took minutes). Prints both wall times."""
    import importlib.util
    import time
    from pathlib import Path

    from parity.run.levels import make
    spec = importlib.util.spec_from_file_location(
        "make_inplace_fault", Path(__file__).parent / "fixtures" / "ports" / "make_inplace_fault.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dest = mod.make(tmp_path / "suite")
    cs = load_sweep("pr", Filters(ops=["unary.*", "copy.ucopy", "affine"],
                                  layouts=["inplace", "inplace-strided", "contiguous", "transposed"]))
    every_cs = [c for c in cs if c.op in ("unary.exp", "copy.ucopy", "affine") and c.dtype in ("f32", "bf16")]
    walls, runs = {}, {}
    for every in (False, True):
        level = make("hip-on-nvidia", dest, None, case_timeout=60)
        assert level.availability.available, level.availability.reason
        t0 = time.perf_counter()
        try:
            runs[every] = run_cases(every_cs if every else cs, level.executor, every_fault=every)
        finally:
            level.executor.close()
        walls[every] = time.perf_counter() - t0
    inplace = [c.layout.startswith("inplace") for c in cs]
    first = {}
    for c, r in zip(cs, runs[False]):
        key = fault_path(c.catalog_op.kernel_name(c.dtype), c.layout)
        if not c.layout.startswith("inplace"):
            assert r["verdict"] == "pass", (c.id, r["verdict"], r["message"][:200])
        elif key in first:
            assert (r["verdict"], r["message"]) == ("not-run", f"same fault path as {first[key]}"), c.id
        else:
            first[key] = c.id
            assert r["verdict"] == "crash", (c.id, r["verdict"], r["message"][:200])
    assert any(c.layout.startswith("inplace") for c in every_cs)
    assert [r["verdict"] for r in runs[True]] == ["crash" if c.layout.startswith("inplace") else "pass" for c in every_cs]
    print(f"inplace-fault suite: {len(cs)} cases, {sum(inplace)} in place, {len(first)} faulting paths: "
          f"{walls[False]:.1f} s (each path launched once); --every-fault on {len(every_cs)} of them: {walls[True]:.1f} s")
