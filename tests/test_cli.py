"""The command line as a user drives it: exit codes, one-line errors, reports on disk."""
import json
import time
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from parity.cli import main
from parity.render import junit, markdown
from parity.results import Results


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


def test_run_writes_reports_and_lists_unavailable_levels(tmp_path):
    r = invoke("run", "--out", str(tmp_path), "--ops", "unary.exp,cast", "--dtypes", "f16,u8",
               "--layouts", "transposed,broadcast-leading", "--levels", "cpu,cuda", "-q")
    assert r.exit_code == 0, r.output
    (folder,) = tmp_path.iterdir()
    res = Results.from_json(folder / "results.json")
    assert set(res.table["verdict"]) == {"pass"}
    assert set(res.table["level"]) == {"cpu"}                 # cuda was not run, so has no rows
    levels = {lv["level"]: lv for lv in res.meta["levels"]}
    assert levels["cuda"]["available"] is False
    md = (folder / "summary.md").read_text()
    assert "**unavailable**" in md and "neither passed nor failed" in md
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
    assert "parity: 42857/50000 cases pass, 7143 failing — 1 finding" in md       # one cause, not 7143 rows
    assert "1. **fail** — `unary.exp` f32, values: 7,143 cases wrong (values: special; layouts: transposed)" in md
    assert "- … 7,113 more: see index.html or results.json" in md


def test_junit_has_one_testcase_per_case_and_failures():
    res = Results.from_rows(_fake_rows(30), {})
    root = ET.fromstring(junit.render(res))
    cases = root.findall(".//testcase")
    assert len(cases) == 30
    assert len(root.findall(".//failure")) == 5
    suite = root.find("testsuite")
    assert suite.get("failures") == "5" and suite.get("tests") == "30"


def test_smoke_sweep_under_60_seconds(tmp_path):
    t = time.perf_counter()
    r = invoke("run", "--out", str(tmp_path), "--levels", "cpu", "-q")
    elapsed = time.perf_counter() - t
    assert r.exit_code == 0, r.output[-2000:]
    assert elapsed < 60, elapsed


def test_run_options_reach_the_run_as_arguments(tmp_path):
    """--shard / --gpus go into this run's cases and meta, and nothing is left behind for the next caller."""
    from parity.cases import Filters, load_sweep
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
    assert head == ("## ⚠️ parity: 14/14 cases pass on the cpu level only: no kernel of the suite ran "
                    "(no GPU level was available)")
    levels[1]["available"] = True
    head = markdown.render(Results.from_rows(rows, {"sweep": "smoke", "levels": levels})).splitlines()[0]
    assert head == "## ✅ parity: 14/14 cases pass"
