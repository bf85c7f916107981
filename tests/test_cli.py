"""The command line as a user drives it: exit codes, one-line errors, reports on disk."""
import json
import time
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from parity.cli.main import main
from parity.render import junit, markdown
from parity.run.results import Results


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_list_shows_kernel_names():
    r = invoke("list", "--ops", "unary.tanh", "--json")
    assert r.exit_code == 0
    (op,) = json.loads(r.output)
    assert "utanh_fp8_e4m3" in op["kernels"] and "utanh_f32" in op["kernels"]


@pytest.mark.parametrize("args,needle", [
    (["--ops", "unary.nope"], "unknown op 'unary.nope'"),
    (["--dtypes", "f17"], "unknown dtype 'f17'"),
    (["--layouts", "sideways"], "unknown layout 'sideways'"),
    (["--sweep", "tiny"], "no sweep 'tiny'"),
    (["--levels", "gpu9"], "unknown level 'gpu9'"),
    (["--hip-src", "/nonexistent/suite"], "does not exist"),
])
def test_usage_errors_exit_2_with_one_line(args, needle, tmp_path):
    r = invoke("run", "--out", str(tmp_path), *args)
    assert r.exit_code == 2
    assert needle in r.output
    assert "Traceback" not in r.output


def test_require_unavailable_level_exits_2(tmp_path):
    r = invoke("run", "--out", str(tmp_path), "--ops", "unary.neg", "--require", "cuda")
    assert r.exit_code == 2 and "required level cuda is unavailable" in r.output


def test_a_level_named_in_levels_that_is_unavailable_exits_2(tmp_path):
    r = invoke("run", "--out", str(tmp_path), "--ops", "unary.neg", "--levels", "cpu,cuda", "-q")
    assert r.exit_code == 2
    assert r.output == "Error: level cuda (named in --levels) is unavailable: no CUDA suite given (--cuda-src DIR)\n"
    assert not list(tmp_path.iterdir())                       # a setup error writes no run folder


def test_run_writes_reports_and_lists_unavailable_levels(tmp_path):
    r = invoke("run", "--out", str(tmp_path), "--ops", "unary.exp,cast", "--dtypes", "f16,u8",
               "--layouts", "transposed,broadcast-leading", "--levels", "cpu", "-q")
    assert r.exit_code == 0, r.output
    (folder,) = tmp_path.iterdir()
    res = Results.from_json(folder / "results.json")
    assert set(res.table["verdict"]) == {"pass"}
    assert set(res.table["level"]) == {"cpu"}
    md = (folder / "summary.md").read_text()
    assert md.startswith("## ⚠️ parity: reference only — cpu passed ")
    ET.fromstring((folder / "junit.xml").read_text())
    r2 = invoke("report", str(folder / "results.json"), "--format", "junit")
    assert r2.exit_code == 0 and "<testsuites" in r2.output


def test_report_on_a_bad_file_exits_2(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    r = invoke("report", str(bad))
    assert r.exit_code == 2 and "not a parity results file" in r.output


def _fake_rows(n, fail_every=7):
    rows = []
    for i in range(n):
        fail = i % fail_every == 0
        rows.append({"case_id": f"unary.exp/f32/transposed/special/s{i}", "op": "unary.exp", "family": "unary",
                     "dtype": "f32", "layout": "transposed", "values": "special", "seed": i, "level": "hip-on-nvidia",
                     "verdict": "fail" if fail else "pass", "max_ulp": 9.0 if fail else 1.0, "wall_ms": 1.0,
                     "worst": {"coords": [1, 2], "inputs": {"x": "1.5"}, "expected": "4.48", "got": "4.5",
                               "ulps": 9.0, "note": ""} if fail else None,
                     "message": "1/10 elements off" if fail else "", "divergences": []})
    return rows


def test_markdown_stays_under_60000_characters_for_50000_cases():
    res = Results.from_rows(_fake_rows(50_000), {"sweep": "nightly", "levels": []})
    md = markdown.render(res)
    assert len(md) < 60_000
    assert ("## ❌ parity: ported 1/1 kernels (100%) · 0 at parity, 1 wrong (1 cause) · "
            "42,857/50,000 cases pass\n") in md                                                  # one cause, not 7143 rows
    assert "1. **fail** — `unary.exp` f32, values: 7,143 cases wrong (values: special; layouts: transposed)" in md
    assert "- … 7,113 more: see index.html or results.json" in md


def test_junit_has_one_testcase_per_case_and_failures():
    res = Results.from_rows(_fake_rows(30), {})
    root = ET.fromstring(junit.render(res))
    (suite,) = root.findall("testsuite[@name='parity.hip-on-nvidia']")
    assert len(suite.findall("testcase")) == 30 and len(suite.findall(".//failure")) == 5
    assert suite.get("failures") == "5" and suite.get("tests") == "30"
    (outcome,) = root.findall("testsuite[@name='parity.outcome']")      # the run's one verdict, failed too
    assert outcome.find("testcase").get("name") == "fail" and outcome.get("failures") == "1"


def test_junit_counts_compiled_rows_as_skipped_never_passed():
    """amd-static's `compiled` is no pass (nothing ran): a CI's test report counted 16 of them as passed."""
    rows = [{**r, "level": "amd-static", "verdict": "compiled", "message": ""} for r in _fake_rows(4, fail_every=99)]
    root = ET.fromstring(junit.render(Results.from_rows(rows, {})))
    (suite,) = root.findall("testsuite[@name='parity.amd-static']")
    assert suite.get("tests") == "4" and suite.get("skipped") == "4" and suite.get("failures") == "0"
    assert [s.get("message") for s in suite.iter("skipped")] == ["compiled for the AMD targets, not executed"] * 4


def test_junit_counts_reference_passes_as_skipped_and_keeps_their_failures():
    """A run without a GPU: the cpu level's 10,019 passes were 10,019 passed tests on a CI dashboard,
    none of them a kernel of the port."""
    rows = [{**r, "level": "cpu"} for r in _fake_rows(6, fail_every=3)]
    rows[1]["verdict"] = "xpass"                                            # (a baselined reference pass: alike)
    root = ET.fromstring(junit.render(Results.from_rows(rows, {})))
    (suite,) = root.findall("testsuite[@name='parity.cpu']")
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("6", "4", "2")
    assert {s.get("message") for s in suite.iter("skipped")} == {"the reference alone: no kernel of the suite ran "
                                                                  "on this level"}


@pytest.mark.slow
def test_smoke_sweep_under_60_seconds(tmp_path):
    t = time.perf_counter()
    r = invoke("run", "--out", str(tmp_path), "--levels", "cpu", "-q")
    elapsed = time.perf_counter() - t
    assert r.exit_code == 0, r.output[-2000:]
    assert elapsed < 60, elapsed


def test_run_options_reach_the_run_as_arguments(tmp_path):
    """--shard / --gpus go into this run's cases and meta, and nothing is left behind for the next caller."""
    from parity.run.cases import Filters, load_sweep
    f = Filters(ops=["unary.neg", "binary.add"], dtypes=["f32"])
    r = invoke("run", "--levels", "cpu", "--ops", "unary.neg,binary.add", "--dtypes", "f32",
               "--shard", "2/3", "--gpus", "1", "--out", str(tmp_path), "-q")
    assert r.exit_code == 0, r.output
    res = Results.from_json(next(tmp_path.glob("*/results.json")))
    assert res.meta["shard"] == "2/3" and res.meta["gpus"] == "1" and "timing" not in res.meta
    assert list(res.table["case_id"]) == [c.id for c in load_sweep("smoke", f, shard=(2, 3))]
    assert len(load_sweep("smoke", f)) > len(res.table)


def test_a_cpu_only_run_does_not_claim_the_kernels_passed():
    rows = [{**r, "level": "cpu", "verdict": "pass", "worst": None, "message": ""} for r in _fake_rows(14)]
    levels = [{"level": "cpu", "available": True, "device": "numpy"},
              {"level": "hip-on-nvidia", "available": False, "reason": "no GPU"}]
    head = markdown.render(Results.from_rows(rows, {"sweep": "smoke", "levels": levels})).splitlines()[0]
    assert head == ("## ❌ parity: nothing verified — no level here ran or compiled the suite's kernels "
                    "(the reference alone ran 14 cases)")
    asked = {"sweep": "smoke", "levels": levels, "reference_only_requested": True}
    head = markdown.render(Results.from_rows(rows, asked)).splitlines()[0]
    assert head == ("## ⚠️ parity: reference only — cpu passed 14/14 cases of the case machinery; "
                    "no kernel of the suite ran or compiled")
    hip = [{**r, "level": "hip-on-nvidia"} for r in rows]
    levels[1]["available"] = True
    head = markdown.render(Results.from_rows(rows + hip, {"sweep": "smoke", "levels": levels})).splitlines()[0]
    assert head == "## ✅ parity: 14/14 cases pass on hip-on-nvidia — 1 kernel executed"


def test_an_empty_selection_names_what_emptied_it(tmp_path):
    """A sweep file whose own groups select nothing was told `the filters select no case` with no filter given."""
    sweep = tmp_path / "empty.toml"
    sweep.write_text('seeds = [0]\n[[group]]\nops = ["unary.exp"]\ndtypes = ["u8"]\n')
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--sweep", str(sweep), "--out", str(tmp_path)])
    assert r.exit_code == 2 and r.output.strip() == (
        f"Error: sweep {sweep} selects no case: its groups name no op, dtype, layout or value class that goes "
        "together (see `parity list` and `parity run --help`)")
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--ops", "unary.exp", "--dtypes", "u8", "--out",
                                  str(tmp_path)])
    assert r.exit_code == 2 and r.output.strip() == (
        "Error: the filters select no case of sweep smoke (see `parity list` and `parity run --help`)")


def test_per_op_table_counts_the_suite_s_rows_not_the_reference_s():
    """`unary.exp | 4 | 2 | 2` when nothing compiled: the cpu reference's passes were counted as the op's."""
    rows = [{**r, "level": "amd-static", "verdict": "compile-error", "message": "x"} for r in _fake_rows(2, 99)]
    rows += [{**r, "level": "cpu", "verdict": "pass"} for r in _fake_rows(2, 99)]
    levels = [{"level": "amd-static", "available": True}, {"level": "cpu", "available": True}]
    md = markdown.render(Results.from_rows(rows, {"levels": levels}))
    block = md[md.index("<details><summary>Per op (amd-static)</summary>"):]
    assert "| `unary.exp` | 1 | 2 | 0 | 2 |" in block


def test_timing_options_without_time_are_said(tmp_path):
    """--mode hot without --time was dropped without a word."""
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--ops", "unary.neg", "--dtypes", "f32", "--mode", "hot",
                                  "--out", str(tmp_path), "-q"])
    assert r.exit_code == 0 and r.stderr.startswith(
        "--mode: an option of --time, which this command does not give: nothing is timed\n"), r.output
