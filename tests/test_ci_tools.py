"""CI tooling: JUnit against the JUnit XSD's rules, baselines, diff, repro, resumable runs,
GitHub annotations and the pytest plugin — on fixture runs with failures, fixes and slowdowns."""
import json
import re
import shutil
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import parity.run.engine
from parity.render import baseline as bl
from parity.cli.main import main
from parity.render.diff import diff, render
from parity.run.journal import NAME as JOURNAL
from parity.render import github, junit
from parity.run.results import FAILING, Results

import runs

pytest_plugins = ["pytester"]


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


@pytest.fixture(scope="module")
def failing():
    return runs.failing_run()


# ------------------------------------------------------------------------- JUnit XSD rules
# The common JUnit schema (Jenkins xunit junit-10.xsd): element nesting, order, allowed and
# required attributes, and their types.
DEC, INT = r"-?\d+(\.\d+)?", r"\d+"
SCHEMA = {
    "testsuites": ({"name": None, "time": DEC, "tests": INT, "failures": INT, "disabled": INT, "errors": INT},
                   set(), ["testsuite"]),
    "testsuite": ({"name": None, "tests": INT, "failures": INT, "errors": INT, "time": DEC, "disabled": INT,
                   "skipped": INT, "timestamp": None, "hostname": None, "id": None, "package": None,
                   "file": None, "log": None, "url": None, "version": None},
                  {"name", "tests"}, ["properties", "testcase", "system-out", "system-err"]),
    "properties": ({}, set(), ["property"]),
    "property": ({"name": None, "value": None}, {"name", "value"}, []),
    "testcase": ({"name": None, "assertions": None, "time": DEC, "classname": None, "status": None, "file": None,
                  "line": None}, {"name"}, ["skipped", "error", "failure", "system-out", "system-err"]),
    "skipped": ({"message": None}, set(), []),
    "error": ({"message": None, "type": None}, set(), []),
    "failure": ({"message": None, "type": None}, set(), []),
    "system-out": ({}, set(), []),
    "system-err": ({}, set(), []),
}


def junit_problems(xml: str) -> list[str]:
    root = ET.fromstring(xml)
    out = []

    def walk(el, path):
        spec = SCHEMA.get(el.tag)
        if spec is None:
            return out.append(f"{path}: unknown element <{el.tag}>")
        attrs, required, children = spec
        for a, v in el.attrib.items():
            if a not in attrs:
                out.append(f"{path}: attribute {a!r} not allowed")
            elif attrs[a] and not re.fullmatch(attrs[a], v):
                out.append(f"{path}: {a}={v!r} is not a {('decimal' if attrs[a] == DEC else 'count')}")
        out.extend(f"{path}: missing attribute {a!r}" for a in required - set(el.attrib))
        last = -1
        for ch in el:
            if ch.tag not in children:
                out.append(f"{path}: <{ch.tag}> not allowed in <{el.tag}>")
                continue
            i = children.index(ch.tag)
            if i < last:
                out.append(f"{path}: <{ch.tag}> out of order in <{el.tag}>")
            last = i
            walk(ch, f"{path}/{ch.tag}")
        if el.tag == "testcase" and len(el.findall("skipped")) > 1:
            out.append(f"{path}: more than one <skipped>")
        if el.tag == "testsuite":
            cases = el.findall("testcase")
            if int(el.get("tests")) != len(cases):
                out.append(f"{path}: tests={el.get('tests')} but {len(cases)} testcases")
            if int(el.get("failures", 0)) != sum(bool(c.findall("failure")) for c in cases):
                out.append(f"{path}: failures count does not match")
            if int(el.get("skipped", 0)) != sum(bool(c.findall("skipped")) for c in cases):
                out.append(f"{path}: skipped count does not match")

    if root.tag != "testsuites":
        return [f"root is <{root.tag}>"]
    walk(root, "testsuites")
    return out


def test_junit_follows_the_xsd_rules(failing):
    res = bl.apply(failing, bl.Baseline([bl.Entry("binary.minimum/f32/*", reason="known")]))
    xml = junit.render(res)
    assert junit_problems(xml) == []
    root = ET.fromstring(xml)
    cases = [f for suite in root.findall("testsuite") if suite.get("name") != "parity.outcome"
             for f in suite.iter("failure")]
    assert len(cases) == int(res.table["verdict"].isin(FAILING).sum()) == 5
    assert root.find("testsuite[@name='parity.outcome']/testcase").get("name") == "fail"
    ran = {lv["level"] for lv in res.meta["levels"] if lv["available"]}
    reference_passes = int((res.table["verdict"].isin(["pass", "xpass"]) & res.table["level"].isin(["cpu", "cupy"])).sum())
    assert sum(len(root.findall(f"testsuite[@name='parity.{lv}']//skipped")) for lv in ran) == \
        5 + reference_passes                                    # the xfails, and the reference's passes
    for lv in (lv for lv in res.meta["levels"] if not lv["available"]):       # a level that did not run: skipped
        assert root.find(f"testsuite[@name='parity.{lv['level']}']/testcase/skipped") is not None


def test_junit_checker_catches_violations():
    bad = ('<testsuites><testsuite tests="2" failures="1"><testcase name="a" time="nan">'
           '<properties/><failure/></testcase></testsuite></testsuites>')
    problems = junit_problems(bad)
    assert any("missing attribute 'name'" in p for p in problems)
    assert any("time='nan'" in p for p in problems)
    assert any("<properties> not allowed in <testcase>" in p for p in problems)
    assert any("tests=2 but 1 testcases" in p for p in problems)


# ------------------------------------------------------------------------------ baselines
def test_baseline_known_failures_become_xfail_and_passes_xpass(failing, tmp_path):
    path = tmp_path / "known.toml"
    bl.dump(bl.Baseline([bl.Entry("binary.minimum/f16/*", "cpu", "fp16 NaN, #12"),
                         bl.Entry("unary.neg/f32/contiguous/*", None, "stale entry")]), path)
    known = bl.load(path)
    res = bl.apply(failing, known)
    t = res.table.set_index("case_id")
    assert t.loc["binary.minimum/f16/contiguous/special/s0", "verdict"] == "xfail"
    assert t.loc["binary.minimum/f16/contiguous/special/s0", "raw_verdict"] == "fail"
    assert t.loc["binary.minimum/f16/contiguous/special/s0", "baseline_reason"] == "fp16 NaN, #12"
    assert t.loc["binary.minimum/f16/contiguous/normal/s0", "verdict"] == "xpass"     # passes, baselined
    assert t.loc["binary.minimum/f32/contiguous/special/s0", "verdict"] == "fail"     # not baselined
    assert t.loc["unary.neg/f32/contiguous/normal/s0", "verdict"] == "xpass"
    assert not res.ok                                                                 # f32 still fails
    strict = bl.apply(res, known, strict=True)                                        # idempotent from raw
    named = res.table["case_id"].str.startswith("binary.minimum/f16/") & (res.table["verdict"] == "xpass")
    assert (strict.table["verdict"] == "xpass-strict").sum() == named.sum() > 0      # the entry naming cpu; the
    assert "xpass-strict" not in set(strict.table.loc[res.table["case_id"].str.startswith("unary.neg/"), "verdict"])
    #                                                          a reference's pass is no evidence a kernel's failure is gone
    assert res.meta["baseline"]["xfail"] == 5
    level_mismatch = bl.apply(failing, bl.Baseline([bl.Entry("binary.minimum/f16/*", "amd", "")]))
    assert "xfail" not in set(level_mismatch.table["verdict"])


def test_baseline_update_then_run_and_report_gate(failing, tmp_path):
    results = tmp_path / "results.json"
    failing.to_json(results)
    out = tmp_path / "baseline.toml"
    r = invoke("baseline", "update", results, "-o", out)
    assert r.exit_code == 0 and "10 entries" in r.output and "10 need a reason" in r.output
    known = bl.load(out)
    assert all(e.reason.startswith(bl.PLACEHOLDER) for e in known.entries)
    assert {e.level for e in known.entries} == {"cpu"}
    r = invoke("report", results, "--baseline", out)                    # every failure known: exit 0
    assert r.exit_code == 0, r.output
    assert "xfail **10**" in r.output
    # keep a hand-written reason on update; drop entries that no longer fail
    text = out.read_text().replace(bl.PLACEHOLDER, "reviewed", 1)
    out.write_text(text)
    fixed = Results.from_rows([dict(r, verdict="pass") if "f32" in r["case_id"] else r
                               for r in failing.table.to_dict("records")], failing.meta)
    fixed.to_json(results)
    r = invoke("baseline", "update", results, "-o", out)
    assert "5 entries (5 kept from the old file, 5 dropped" in r.output
    assert sum(e.reason.startswith("reviewed") for e in bl.load(out).entries) <= 1
    # strict: the old baseline's f32 entries now pass -> xpass-strict fails the report
    out.write_text(text)
    assert invoke("report", results, "--baseline", out).exit_code == 0
    r = invoke("report", results, "--baseline", out, "--strict", "--format", "junit")
    assert r.exit_code == 1 and 'type="xpass-strict"' in r.output
    assert invoke("report", results, "--strict").exit_code == 2


def test_baseline_json_and_bad_files(tmp_path):
    p = tmp_path / "b.json"
    bl.dump(bl.Baseline([bl.Entry("cast/*", None, "r")]), p)
    assert bl.load(p).entries == [bl.Entry("cast/*", None, "r")]
    (tmp_path / "bad.toml").write_text("[[known]]\nreason = 'no pattern'\n")
    with pytest.raises(ValueError, match="entry 1 has no `pattern`"):
        bl.load(tmp_path / "bad.toml")
    r = invoke("run", "--ops", "unary.neg", "--baseline", tmp_path / "missing.toml", "--out", tmp_path)
    assert r.exit_code == 2 and "cannot read baseline" in r.output


def test_run_with_baseline_writes_xfail_and_html(tmp_path):
    known = tmp_path / "k.toml"
    bl.dump(bl.Baseline([bl.Entry("unary.neg/f16/contiguous/*", "cpu", reason="demo")]), known)
    r = invoke("run", "--ops", "unary.neg", "--dtypes", "f16", "--levels", "cpu", "-q", "--out", tmp_path / "o",
               "--baseline", known, "--strict")
    assert r.exit_code == 1                                   # the baselined cases pass: xpass-strict
    (folder,) = (tmp_path / "o").iterdir()
    res = Results.from_json(folder / "results.json")
    assert set(res.table.loc[res.table["case_id"].str.startswith("unary.neg/f16/contiguous/"), "verdict"]) == {"xpass-strict"}
    assert (folder / "index.html").exists() and "xpass-strict" in (folder / "index.html").read_text()
    assert not (folder / JOURNAL).exists()                    # a finished run needs no journal



def test_strict_flags_a_baselined_amd_static_failure_that_now_compiles():
    """256 baselined missing/compile-error cases that compiled again: --strict said nothing (exit 0)."""
    rows = [{"case_id": f"affine/u8/contiguous/normal/s{i}", "op": "affine", "family": "affine", "dtype": "u8",
             "layout": "contiguous", "values": "normal", "seed": i, "level": "amd-static", "verdict": "compiled",
             "message": ""} for i in range(3)]
    base = bl.Baseline([bl.Entry("affine/u8/*", "amd-static", "missing until #12")])
    res = Results.from_rows(rows, {})
    assert set(bl.apply(res, base, strict=True).table["verdict"]) == {"xpass-strict"}
    assert set(bl.apply(res, base).table["verdict"]) == {"compiled"}       # not evidence of a pass without strict
    ref = Results.from_rows([{**r, "level": "cpu", "verdict": "pass"} for r in rows], {})
    assert set(bl.apply(ref, bl.Baseline([bl.Entry("affine/u8/*", None, "r")]), strict=True).table["verdict"]) == \
        {"xpass"}                             # the reference's pass is no evidence the kernel's failure is gone
    for level in ("amd*", None):              # entries that also take a GPU's runtime failures: a compile clears none
        other = bl.Baseline([bl.Entry("affine/u8/*", level, "wrong on the ROCm GPU")])
        assert set(bl.apply(res, other, strict=True).table["verdict"]) == {"compiled"}

# ----------------------------------------------------------------------------------- diff
def test_diff_new_failures_fixed_and_slowdowns():
    d = diff(runs.old_run(), runs.new_run(), slowdown=1.10)
    assert len(d.new_failures) == 24 and all(c.case_id.startswith("unary.neg/") for c in d.new_failures)
    assert len(d.fixed) == 10 and all(c.old == "fail" and c.new == "pass" for c in d.fixed)
    assert [s.case_id for s in d.slowdowns] == ["binary.minimum/f32/transposed/normal/s0",
                                                "binary.minimum/f32/transposed/special/s0"]
    assert d.slowdowns[0].ratio == pytest.approx(1.5)
    assert d.regressions
    text = render(d)
    assert "24 new failure(s), 10 fixed, 2 slowdown(s)" in text and "**1.50x**" in text
    assert not diff(runs.old_run(), runs.new_run(), slowdown=1.6).slowdowns      # under the threshold


def test_diff_command_exit_codes(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    runs.old_run().to_json(old)
    runs.new_run().to_json(new)
    r = invoke("diff", old, new)
    assert r.exit_code == 1 and "### New failures (24)" in r.output and "### Fixed (10)" in r.output
    assert "### Slowdowns beyond 1.1x (2)" in r.output
    r = invoke("diff", new, old, "--slowdown", "1.2")          # reverse: 10 new failures, speedups only
    assert r.exit_code == 1 and "### Speedups (2)" in r.output
    r = invoke("diff", old, old)
    assert r.exit_code == 0 and "No regressions." in r.output
    assert invoke("diff", old, tmp_path / "none.json").exit_code == 2
    assert invoke("diff", old, new, "--slowdown", "0.9").exit_code == 2



def test_diff_flags_cases_no_longer_verified(tmp_path):
    """NEW's GPU runner gone: every pass became `unavailable` and diff said ✅ No regressions, exit 0."""
    gpu = runs.old_run()
    ran = {**gpu.meta, "levels": [{"level": "hip-on-nvidia", "available": True, "reason": "", "device": "H100"}]}
    old = Results.from_rows([{**r, "level": "hip-on-nvidia"} for r in gpu.records()], ran)
    new = Results.from_rows([{**r, "verdict": "unavailable" if r["verdict"] == "pass" else r["verdict"],
                              "message": "no NVIDIA driver"} for r in old.records()], old.meta)
    d = diff(old, new)
    passed = int((old.table["verdict"] == "pass").sum())
    assert len(d.unverified) == passed > 0 and not d.new_failures and d.regressions
    assert not diff(gpu, Results.from_rows([{**r, "verdict": "unavailable"} for r in gpu.records()], gpu.meta)).unverified
    both = Results.from_rows([*gpu.records(), *old.records()], gpu.meta)   # cpu + hip-on-nvidia; NEW: cpu only
    assert [lv["level"] for lv in gpu.meta["levels"] if not lv["available"]] == ["hip-on-nvidia"]
    gone = diff(both, gpu)                                           # NEW named hip-on-nvidia and could not run it
    assert len(gone.unverified) == passed and gone.regressions       # (the reference's rows above: not a regression)
    cpu_only = {**gpu.meta, "levels": [lv for lv in gpu.meta["levels"] if lv["level"] == "cpu"]}
    assert not diff(both, Results.from_rows(gpu.records(), cpu_only)).unverified   # a level NEW did not name (a
    #                                                                   nightly's extra levels against a PR job): ⚠️
    narrower = diff(old, Results.from_rows([r for r in old.records() if r["verdict"] != "pass"], old.meta))
    assert not narrower.unverified and narrower.partial               # fewer cases of the same level: partial, ⚠️
    text = render(d)
    assert text.startswith("## ❌ parity diff: 0 new failure(s)")
    assert f"❌ {passed:,} case(s) OLD verified are not verified in NEW (now unavailable): a regression cannot be " \
           "ruled out." in text and f"### No longer verified ({passed})" in text
    assert text.rstrip().endswith("A regression cannot be ruled out: exit 1.")

# ---------------------------------------------------------------------------------- repro
def test_repro_writes_npz_and_snippet_on_cpu(tmp_path):
    case = "binary.minimum/bf16/transposed/special/s0"
    out = tmp_path / "case.npz"
    r = invoke("repro", case, "--level", "cpu", "-o", out)
    assert r.exit_code == 2, r.output                 # the reference alone: never a pass of a kernel that did not run
    assert f"# {case} on cpu: the reference alone, no kernel of the suite ran" in r.output
    z = np.load(out)
    meta = json.loads(str(z["meta"]))
    assert str(z["kernel"]) == meta["kernel"] == "bminimum_bf16" and meta["verdict"] == "pass"
    assert meta["launch"].startswith("bminimum_bf16<<<")
    for n in ("lhs", "rhs", "out"):
        assert f"buf_{n}" in z.files
    assert z["buf_lhs"].dtype == np.uint16                      # bf16 kept as raw bits
    assert list(z["shape_lhs"]) == list(z["expected"].shape) and "strides_rhs" in z.files and "offset_lhs" in z.files
    assert "info_info" in z.files and z["info_info"].dtype == np.uint64       # a strided launch has info
    assert z["expected"].shape == z["got"].shape == (33, 47)
    assert np.array_equal(z["expected"], z["got"])
    ptrs = [a for a in meta["args"] if a["kind"] == "ptr"]
    assert [a["buffer"] for a in ptrs] == ["lhs", "rhs", "out"]
    assert "RawModule" in r.output and "binary_bf16.hip" in r.output and "-D__HIPCC__" in r.output
    snippet = r.output[:r.output.index("\n# " + case)] if ("\n# " + case) in r.output else r.output
    compile(snippet, "replay.py", "exec")                       # the printed script is valid Python


def test_repro_that_runs_nothing_keeps_an_earlier_output(tmp_path):
    """A repro on a level unavailable here (a usage mistake: --level cuda without --cuda-src) replaced
    the .npz a GPU repro had written with one without its `got`."""
    case, out = "unary.exp/f32/transposed/special/s0", tmp_path / "case.npz"
    assert invoke("repro", case, "--level", "cpu", "-o", out, "--no-snippet").exit_code == 2
    before = out.read_bytes()
    r = invoke("repro", case, "--level", "cuda", "-o", out, "--no-snippet")
    assert r.exit_code == 2 and f"# kept {out} as it was: it holds the output of an earlier run" in r.output, r.output
    assert out.read_bytes() == before
    other = "unary.neg/f32/contiguous/normal/s0"              # another case named the same file: its own
    r = invoke("repro", other, "--level", "cuda", "-o", out, "--no-snippet")
    assert r.exit_code == 2 and f"# wrote {out}" in r.output and json.loads(str(np.load(out)["meta"]))["case_id"] == other
    fresh = tmp_path / "fresh.npz"                             # nothing there yet: the inputs are written
    assert invoke("repro", case, "--level", "cuda", "-o", fresh, "--no-snippet").exit_code == 2
    assert "got" not in np.load(fresh).files and "buf_x" in np.load(fresh).files


def test_repro_reproduces_a_failure_and_handles_bad_input(tmp_path, monkeypatch):
    from fakes import NanDroppingMinimum
    from parity.run import levels
    monkeypatch.setattr(levels, "CpuExecutor", NanDroppingMinimum)
    out = tmp_path / "f.npz"
    r = invoke("repro", "binary.minimum/f16/contiguous/special/s0", "--level", "cpu", "-o", out, "--no-snippet")
    assert r.exit_code == 1 and "expected nan got -4.93359375" in r.output
    z = np.load(out)
    assert not np.array_equal(z["expected"], z["got"])
    assert z["expected"].view(np.uint16)[0, 21] == 0x7FFF
    other = tmp_path / "other.npz"
    r = invoke("repro", "binary.minimum/f16/contiguous/special/s0", "--level", "cuda", "-o", other, "--no-snippet")
    assert r.exit_code == 2 and "unavailable" in r.output and "got" not in np.load(other).files
    assert invoke("repro", "not-a-case").exit_code == 2
    assert invoke("repro", "binary.minimum/f17/contiguous/special/s0", "-o", out).exit_code == 2


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed")
def test_repro_on_amd_static_is_not_a_failure(tmp_path):
    """amd-static compiles the kernel and runs nothing: exit 2 (no case ran), where it was 1 (`fails`)."""
    out = tmp_path / "c.npz"
    r = invoke("repro", "unary.neg/f32/contiguous/normal/s0", "--level", "amd-static", "-o", out, "--no-snippet")
    assert r.exit_code == 2 and "on amd-static: compiled" in r.output and "not executed" in r.output, r.output
    assert "got" not in np.load(out).files


# --------------------------------------------------------------------------- resumable runs
def test_interrupted_run_keeps_rows_and_resumes(tmp_path, monkeypatch):
    real = parity.run.engine.run_case
    calls = []

    def interrupting(case, executor, device=""):
        calls.append(case.id)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real(case, executor, device)
    monkeypatch.setattr(parity.run.engine, "run_case", interrupting)
    args = ["run", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--levels", "cpu", "-q", "--out", tmp_path]
    r = invoke(*args)
    assert r.exit_code == 130, r.output
    (folder,) = tmp_path.iterdir()
    assert f"--resume {folder}" in r.output and "6 finished case(s) kept" in r.output
    lines = (folder / JOURNAL).read_text().splitlines()
    assert len(lines) == 6
    assert len(Results.from_json(folder / "results.json").table) == 6
    page = (folder / "index.html").read_text()
    assert ">STOPPED EARLY</span>" in page and "stopped early: interrupted after 6 of " in page
    assert "· stopped early: interrupted after 6 of " in (folder / "summary.md").read_text().splitlines()[0]
    (folder / JOURNAL).write_text("\n".join(lines) + '\n{"case_id": "trunc')   # died mid-line
    calls.clear()
    monkeypatch.setattr(parity.run.engine, "run_case", lambda c, e, d="": (calls.append(c.id), real(c, e, d))[1])
    r = invoke(*args, "--resume", folder)
    assert r.exit_code == 0, r.output
    res = Results.from_json(folder / "results.json")
    total = len(res.table)
    assert total == 6 + len(calls) and not set(calls) & {json.loads(l)["case_id"] for l in lines}
    assert res.table["case_id"].is_unique and res.meta["resumed_rows"] == 6
    assert not (folder / JOURNAL).exists()
    r = invoke(*args, "--resume", folder)                       # resuming a finished run runs nothing
    assert r.exit_code == 0 and len(Results.from_json(folder / "results.json").table) == total
    assert invoke(*args, "--resume", tmp_path / "nope").exit_code == 2


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    (line,) = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    return line


def _interrupt_after(monkeypatch, n: int) -> None:
    """run_case raises KeyboardInterrupt at its n-th call (a Ctrl-C in the middle of a run)."""
    real, calls = parity.run.engine.run_case, []

    def interrupting(case, executor, device=""):
        calls.append(case.id)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(case, executor, device)
    monkeypatch.setattr(parity.run.engine, "run_case", interrupting)


def test_resume_after_the_sweep_changed_is_refused_and_drops_nothing(tmp_path, monkeypatch):
    """run.json records which cases the run selected; a resume that would select others (its sweep file
    edited, a parity upgrade's bundled sweeps) dropped the finished rows not selected now and said
    `pass`: it is exit 2, the journal kept."""
    sweep = tmp_path / "mine.toml"
    sweep.write_text('seeds = [0]\n[[group]]\nops = ["unary.neg", "unary.exp"]\ndtypes = ["f32"]\n')
    _interrupt_after(monkeypatch, 5)
    r = invoke("run", "--sweep", sweep, "--levels", "cpu", "-q", "--out", tmp_path / "out")
    assert r.exit_code == 130, r.output
    (folder,) = (tmp_path / "out").iterdir()
    kept = (folder / JOURNAL).read_text()
    sweep.write_text('seeds = [0]\n[[group]]\nops = ["binary.add"]\ndtypes = ["f32"]\n')
    line = one_line_error(invoke("run", "--resume", folder, "-q"))
    assert line.startswith(f"Error: --resume {folder}: this command selects other cases than that run (") and \
        line.endswith("start a new run"), line
    assert (folder / JOURNAL).read_text() == kept


def _edited_git_suite(tmp_path: Path):
    """(a suite folder in a new git repository, its one file edited since the first commit; a git(*args)
    of that repository)."""
    import subprocess
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "good.hip").write_text((Path(__file__).parent / "fixtures" / "suites" / "good" / "good.hip").read_text())

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path), *args], check=True)
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "init")
    with (suite / "good.hip").open("a") as f:
        f.write("// edited\n")
    return suite, git


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_resume_of_a_since_run_after_new_commits_is_refused(tmp_path, monkeypatch):
    """Resumed after the change was committed, --since HEAD selects nothing: it said `nothing to run`,
    exit 0, with most of the run's cases never run."""
    suite, git = _edited_git_suite(tmp_path)
    _interrupt_after(monkeypatch, 3)
    r = invoke("run", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--levels", "cpu", "-q", "--out",
               tmp_path / "out", "--hip-src", suite, "--since", "HEAD")
    assert r.exit_code == 130, r.output
    git("commit", "-qam", "edit")
    (folder,) = (tmp_path / "out").iterdir()
    monkeypatch.undo()
    line = one_line_error(invoke("run", "--resume", folder, "-q"))
    assert "this command selects other cases than that run (" in line and "0 now" in line, line


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_since_selects_before_the_shard_splits(tmp_path):
    """--since was applied to each shard's own cases: a shard holding none of the changed ones said
    `nothing to run` and wrote no report, and the merge of the matrix then failed (`shard 1/8 missing`)."""
    suite, git = _edited_git_suite(tmp_path)
    outs = []
    for k in range(1, 41):                                     # more shards than changed cases
        out = tmp_path / f"s{k}"
        r = invoke("run", "--ops", "unary.neg", "--dtypes", "f32", "--levels", "cpu", "-q", "--out", out,
                   "--hip-src", suite, "--since", "HEAD", "--shard", f"{k}/40")
        assert r.exit_code == 0, r.output
        (folder,) = out.iterdir()
        outs.append(folder)
    r = invoke("merge", *outs, "-o", tmp_path / "m.json")
    assert r.exit_code == 0, r.output
    whole = invoke("run", "--ops", "unary.neg", "--dtypes", "f32", "--levels", "cpu", "-q", "--out",
                   tmp_path / "w", "--hip-src", suite, "--since", "HEAD")
    assert whole.exit_code == 0
    (w,) = (tmp_path / "w").iterdir()
    assert len(Results.from_json(tmp_path / "m.json").table) == len(Results.from_json(w / "results.json").table)


def test_shards_are_merged_by_their_suite_s_content_not_its_path(tmp_path):
    """Shards of one suite checked out in other paths (runners' workspaces) were `not parts of one run`
    (hip_src A vs B), and shards of an edited suite at one path merged silently."""
    good = (Path(__file__).parent / "fixtures" / "suites" / "good" / "good.hip").read_text()
    suites = {name: tmp_path / name for name in ("a", "b", "edited")}
    for name, d in suites.items():
        d.mkdir()
        (d / "good.hip").write_text(good + ("// edited\n" if name == "edited" else ""))

    def shard(k: int, suite: Path) -> Path:
        out = tmp_path / f"out-{k}-{suite.name}-{len(list(tmp_path.iterdir()))}"
        r = invoke("run", "--ops", "unary.neg", "--dtypes", "f32", "--levels", "cpu", "-q", "--out", out,
                   "--hip-src", suite, "--shard", f"{k}/2")
        assert r.exit_code == 0, r.output
        (folder,) = out.iterdir()
        return folder
    assert invoke("merge", shard(1, suites["a"]), shard(2, suites["b"]), "-o", tmp_path / "m.json").exit_code == 0
    r = invoke("merge", shard(1, suites["a"]), shard(2, suites["edited"]), "-o", tmp_path / "m2.json")
    assert r.exit_code == 2 and "not parts of one run (suite sources " in r.output, r.output
    run = shard(1, suites["b"])                              # into a run's own folder: its reports and resume
    before = (run / "results.json").read_bytes()             # would disagree with the file
    r = invoke("merge", shard(1, suites["a"]), shard(2, suites["b"]), "-o", run / "results.json")
    assert r.exit_code == 2 and f"{run} is a run's folder (it has run.json)" in r.output, r.output
    r = invoke("merge", shard(1, suites["a"]), shard(2, suites["b"]), "-o", run)     # the folder itself: no
    assert r.exit_code == 2 and "write the merge elsewhere" in r.output, r.output    # `name RUN/results.json`
    other = shard(2, suites["a"])                            # report -o into another run's folder: refused too
    for name in ("results.json", "summary.md"):
        r = invoke("report", other, "--format", "md", "-o", run / name)
        assert r.exit_code == 2 and "write the report elsewhere" in r.output, r.output
    assert (run / "results.json").read_bytes() == before
    assert invoke("report", run, "--format", "md", "-o", run / "summary.md").exit_code == 0   # its own: re-rendered
    summary = (run / "summary.md").read_bytes()                              # in its own format only (XML
    r = invoke("report", run, "--format", "junit", "-o", run / "summary.md")  # replaced the summary)
    assert r.exit_code == 2 and "is the run's md report: --format junit would replace it" in r.output, r.output
    assert (run / "summary.md").read_bytes() == summary
    for name in ("run.json", "results.partial.jsonl"):                                         # but never over
        r = invoke("report", run, "--format", "junit", "-o", run / name)                       # what --resume reads
        assert r.exit_code == 2 and "write the report elsewhere" in r.output, r.output


def test_resume_restores_the_port_options_and_refuses_others(tmp_path, monkeypatch):
    """A port's --port-* options are the run's too: the bare resume parity prints after Ctrl-C found the
    sources `changed` (its include folder gone from the record); another --port-define mixed two build
    lines' verdicts."""
    suite, inc = tmp_path / "suite", tmp_path / "inc"
    suite.mkdir(), inc.mkdir()
    (suite / "good.hip").write_text((Path(__file__).parent / "fixtures" / "suites" / "good" / "good.hip").read_text())
    (inc / "extra.h").write_text("// a header of the port's build line\n")
    _interrupt_after(monkeypatch, 3)
    r = invoke("run", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--levels", "cpu", "-q", "--out",
               tmp_path / "out", "--hip-src", suite, "--port-include", inc, "--port-define", "PORT_X=1")
    assert r.exit_code == 130, r.output
    (folder,) = (tmp_path / "out").iterdir()
    line = one_line_error(invoke("run", "--resume", folder, "-q", "--port-define", "PORT_X=2"))
    assert line == (f"Error: --resume {folder} continues a run with --port-define PORT_X=1; this command says "
                    "--port-define PORT_X=2: drop the option, or start a new run")
    monkeypatch.undo()
    r = invoke("run", "--resume", folder, "-q")
    assert r.exit_code == 0, r.output
    assert Results.from_json(folder / "results.json").meta["resumed_rows"] == 2


# ------------------------------------------------------------------------ GitHub annotations
def test_github_annotations_capped_and_escaped(failing, tmp_path):
    lines = github.annotations(failing, cap=1)          # one annotation per finding: f16 and f32 minimum
    assert len(lines) == 2 and lines[-1].startswith("::warning") and "1 more findings" in lines[-1]
    first = lines[0]
    assert first.startswith("::error title=parity fail%3A `binary.minimum` f16%2C NaN handling%3A 5 cases wrong "
                            "(values%3A special; layouts%3A contiguous%2C ")
    assert "%0Arepro: parity repro binary.minimum/f16/" in first and "\n" not in first
    r = invoke("run", "--ops", "unary.neg", "--dtypes", "f16", "--levels", "cpu", "-q", "--out", tmp_path,
               env={"GITHUB_ACTIONS": "true"})
    assert r.exit_code == 0 and "::error" not in r.output
    assert invoke("run", "--ops", "unary.neg", "--dtypes", "f16", "--levels", "cpu", "-q",
                  "--out", tmp_path, env={"GITHUB_ACTIONS": ""}).exit_code == 0


def test_github_annotations_printed_for_failures(tmp_path, monkeypatch):
    from fakes import UnwrittenTail
    from parity.run import levels
    monkeypatch.setattr(levels, "CpuExecutor", UnwrittenTail)
    r = invoke("run", "--ops", "unary.neg", "--levels", "cpu", "-q", "--out", tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert r.exit_code == 1
    errors = [l for l in r.output.splitlines() if l.startswith("::error ")]
    from parity.render import findings
    from parity.run.results import Results
    (res,) = tmp_path.glob("*/results.json")
    causes = findings.analyze(Results.from_json(res).table).findings
    assert len(errors) == len(causes) and {f.cause for f in causes} == {"fail"}      # one per finding
    assert {f.key[1] for f in causes} == {"f8_e4m3", "f16", "bf16", "f32", "f64"}
    assert "::warning title=parity::" not in r.output


# ---------------------------------------------------------------------------- pytest plugin
def _plugin_args() -> list[str]:
    names = {e.name for e in entry_points(group="pytest11")}
    return [] if "parity" in names else ["-p", "parity.pytest_plugin"]


def test_pytest_plugin_turns_cases_into_tests(pytester):
    pytester.syspathinsert(str(Path(__file__).parent))
    r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-ops", "binary.minimum",
                           "--parity-dtypes", "f16", "--parity-executor", "fakes:NanDroppingMinimum", "-p",
                           "no:cacheprovider")
    r.assert_outcomes(passed=9, failed=5)       # 7 smoke layouts (binary has no in-place) x 2 value classes
    out = r.stdout.str()
    assert "FAILED parity[smoke]::binary.minimum/f16/contiguous/special/s0" in out
    assert "fail: 61/2405 elements off; worst at (0, 21): lhs=nan, rhs=-4.93359375: expected nan got -4.93359375" in out
    assert "repro: parity repro binary.minimum/f16/contiguous/special/s0 --level cpu" in out
    assert "Traceback" not in out


def test_pytest_plugin_ids_baseline_and_unavailable(pytester, tmp_path):
    r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-ops", "unary.neg",
                           "--parity-dtypes", "f16", "--collect-only", "-q")
    assert "parity[smoke]::unary.neg/f16/transposed/special/s0" in r.stdout.str()
    known = tmp_path / "k.toml"
    bl.dump(bl.Baseline([bl.Entry("unary.neg/f16/contiguous/*", "cpu", reason="demo")]), known)
    r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-ops", "unary.neg",
                           "--parity-dtypes", "f16", "--parity-baseline", str(known), "--parity-level", "cpu")
    r.assert_outcomes(skipped=16)               # the reference alone: never a pass (16 passed, no port in sight)
    assert "parity level cpu: the case machinery" in r.stdout.str()     # says what the cpu level proves
    r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-ops", "unary.neg",
                           "--parity-dtypes", "f16", "--parity-level", "cuda")
    assert r.ret == pytest.ExitCode.USAGE_ERROR                         # a named level that cannot run
    r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-ops", "unary.nope")
    assert r.ret == pytest.ExitCode.USAGE_ERROR


def test_pytest_plugin_takes_the_suites_profile_and_refuses_what_run_refuses(pytester, tmp_path):
    """The plugin swept Candle's cases over a port declaring its own kernels (9,931 `missing`), took a
    --parity-hip-src that does not exist (16 cpu passes), and a bad --parity-executor was an
    INTERNALERROR traceback."""
    hip = Path(__file__).parent.parent / "docs" / "examples" / "declared-port" / "hip"
    r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-hip-src", str(hip),
                           "--parity-level", "cpu", "--parity-ops", "blas.axpy", "-p", "no:cacheprovider")
    from parity import profiles
    from parity.run.cases import Filters, load_sweep
    vecops = profiles.load(hip / "parity-kernels.toml")
    cases = load_sweep("smoke", Filters(["blas.axpy"], profile=vecops), profile=vecops)
    assert cases and all(c.id.startswith("vecops.blas.axpy/") for c in cases)
    r.assert_outcomes(skipped=len(cases))
    for args, says in ((("--parity-hip-src", str(tmp_path / "nowhere")), f"kernel suite folder {tmp_path / 'nowhere'} "
                                                                          "does not exist"),
                       (("--parity-cuda-src", "/etc/passwd"), "kernel suite folder /etc/passwd does not exist"),
                       (("--parity-executor", "os:path"), "--parity-executor os:path: TypeError"),
                       (("--parity-executor", "no_such_module:X"), "--parity-executor no_such_module:X: "
                                                                   "ModuleNotFoundError"),
                       (("--parity-executor", "nocolon"), "expected MODULE:CLASS")):
        r = pytester.runpytest(*_plugin_args(), "--parity-sweep", "smoke", "--parity-ops", "unary.neg",
                               "--parity-level", "cpu", *args)
        assert r.ret == pytest.ExitCode.USAGE_ERROR and says in r.stderr.str(), (args, r.stderr.str())
        assert "Traceback" not in r.stderr.str() + r.stdout.str()


def test_pytest_plugin_is_inert_without_a_sweep(pytester):
    pytester.makepyfile("def test_x():\n    import sys\n    assert 'parity.run.engine' not in sys.modules\n")
    r = pytester.runpytest_subprocess(*_plugin_args())         # a fresh process: nothing imported yet
    r.assert_outcomes(passed=1)


def test_repro_structured_case_writes_npz(tmp_path):
    from parity.run.repro import run as repro_run
    r = repro_run("reduce.sum/f32/row100/normal/s0", "cpu", out=tmp_path / "c.npz")
    assert r.verdict == "pass" and r.kernel == "fast_sum_f32"
    import numpy as np
    d = np.load(tmp_path / "c.npz")
    assert {"buf_src", "expected", "got", "info_info", "shape_src"} <= set(d.files)
    with pytest.raises(ValueError, match="refuses this case"):
        repro_run("reduce.max/f32/empty/normal/s0", "cpu")
