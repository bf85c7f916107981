"""Commands over results files read them defensively and never hide a failure: baseline update
keeps what it cannot judge, merge refuses parts of different runs and missing shards and keeps the
worst verdict of a conflict, journals and results files with junk give one line (exit 2) or a
skipped line, never a row or a traceback, and diff says what it could not compare."""
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.render import baseline as bl
from parity.run import journal
from parity.cli.main import main
from parity.run.results import Results

CPU = {"level": "cpu", "available": True, "reason": "", "device": "NumPy ABI emulation"}
GPU = {"level": "hip-on-nvidia", "available": True, "reason": "", "device": "H100"}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def one_line_error(r, exit_code=2) -> str:
    """The single `Error: ...` line of a refused command (no traceback, nothing else on stdout)."""
    assert r.exit_code == exit_code, r.output
    assert "Traceback" not in r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    return lines[0]


def ids(op: str, n: int) -> list[str]:
    return [f"{op}/f32/contiguous/normal/s{i}" for i in range(n)]


def write(path: Path, verdicts: dict, levels=(CPU,), started="2026-01-01T00:00:00+00:00", **meta) -> Path:
    """A results file whose rows are {case_id: verdict} on every level of `levels` that ran."""
    rows = [{"case_id": c, "op": c.split("/")[0], "level": lv["level"], "verdict": v, "message": f"{v} here"}
            for lv in levels for c, v in verdicts.items()]
    m = {"sweep": "smoke", "hip_src": "backends/hip", "levels": list(levels),
         "environment": {"started": started}, "elapsed_s": 1.0, "reference_only_requested": True, **meta}
    Results.from_rows(rows, m).to_json(path)
    return path


def raw(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path


def doc(rows, **extra) -> dict:
    return {"schema": "parity.results/1", "meta": {"sweep": "smoke"}, "results": rows, **extra}


# ---------------------------------------------------------------------------- baseline update
def test_a_results_file_given_as_baseline_says_how_to_make_one(tmp_path):
    """It said `unknown key 'meta'; known: known, schema`."""
    res = write(tmp_path / "results.json", {c: "fail" for c in ids("unary.neg", 2)})
    line = one_line_error(invoke("run", "--ops", "unary.neg", "--levels", "cpu", "--baseline", res, "--out", tmp_path))
    assert line == (f"Error: baseline {res}: a run's results, not a baseline of known failures: write one from it "
                    f"with `parity baseline update {res} -o known.toml` (to compare two runs: parity diff)")


def test_baseline_update_keeps_entries_for_levels_and_cases_not_run(tmp_path):
    cases = ids("binary.minimum", 3)
    results = write(tmp_path / "r.json", {cases[0]: "fail", cases[1]: "pass", cases[2]: "pass"})
    out = tmp_path / "known.toml"
    bl.dump(bl.Baseline([bl.Entry(cases[0], "cpu", "still failing, #1"),          # kept: fails
                         bl.Entry(cases[1], "cpu", "fixed, #2"),                   # dropped: ran, passes
                         bl.Entry("binary.minimum/*", "hip-on-nvidia", "GPU NaN, #3"),  # level not run
                         bl.Entry("cast/*", "cpu", "not in this sweep, #4"),       # cases not run
                         bl.Entry(cases[2], None, "any level, #5")]),    # passes on cpu; hip-on-nvidia not run
            out)
    r = invoke("baseline", "update", results, "-o", out)
    assert r.exit_code == 0, r.output
    assert r.output == (f"{out}: 4 entries (1 kept from the old file, 1 dropped as no longer failing, "
                        "3 kept for levels/cases these results did not run, 0 need a reason)\n"
                        f"  kept {cases[2]} @*: passing on cpu, but its level (any) also matches hip-on-nvidia, amd, "
                        "amd-static, cuda, cupy, hip-on-nvidia/w32, which these results did not run\n")
    assert [e.reason for e in bl.load(out).entries] == ["still failing, #1", "GPU NaN, #3",
                                                         "not in this sweep, #4", "any level, #5"]


def test_baseline_update_writes_a_case_id_with_a_delete_character_readably(tmp_path):
    """JSON leaves DEL (0x7f) raw and TOML forbids it: `update` wrote a file `--baseline` could not read."""
    odd = ids("unary.neg", 1)[0] + "\x7f"
    res = write(tmp_path / "r.json", {odd: "fail"})
    assert invoke("baseline", "update", res, "-o", tmp_path / "k.toml").exit_code == 0
    (e,) = bl.load(tmp_path / "k.toml").entries
    assert e.pattern == odd


def test_baseline_update_never_drops_an_entry_for_every_level(tmp_path):
    cases = ids("unary.neg", 2)
    out = tmp_path / "known.toml"
    bl.dump(bl.Baseline([bl.Entry("unary.neg/*", None, "r"), bl.Entry("unary.neg/*", "hip-on-nvidia", "g")]), out)
    results = write(tmp_path / "r.json", dict.fromkeys(cases, "pass"), levels=(CPU, GPU))
    r = invoke("baseline", "update", results, "-o", out)
    assert "0 kept from the old file, 1 dropped as no longer failing, 1 kept for levels/cases" in r.output
    assert bl.load(out).entries == [bl.Entry("unary.neg/*", None, "r")]


def test_baseline_update_keeps_a_level_glob_entry_until_every_level_it_matches_ran(tmp_path):
    """Before: a cpu run dropped `level = "c*"` and `level = "*"` as no longer failing, though they
    also match cuda, cupy, hip-on-nvidia, ... that it never ran. An entry goes only when the results
    ran its cases, none failing, on every level its glob can match (parity's level table and the
    results' own levels); otherwise it stays, and the command says why."""
    cases = ids("unary.exp", 2)
    out = tmp_path / "g.toml"
    bl.dump(bl.Baseline([bl.Entry("unary.exp/f32/*", "c*", "c-glob"), bl.Entry("unary.exp/f32/*", "*", "star"),
                         bl.Entry("unary.exp/f32/*", None, "any"), bl.Entry("unary.exp/f32/*", "c*[py]*", "cpu+cupy"),
                         bl.Entry("unary.exp/f32/*", "c[p]u", "cpu only")]), out)
    cpu = write(tmp_path / "cpu.json", dict.fromkeys(cases, "pass"))
    r = invoke("baseline", "update", cpu, "-o", out)
    assert r.exit_code == 0, r.output
    assert [e.reason for e in bl.load(out).entries] == ["c-glob", "star", "any", "cpu+cupy"]
    assert "1 dropped as no longer failing" in r.output
    assert "kept unary.exp/f32/* @c*: passing on cpu, but its level c* also matches cuda, cupy, which these " \
           "results did not run" in r.output
    both = write(tmp_path / "both.json", dict.fromkeys(cases, "pass"),
                 levels=(CPU, {**CPU, "level": "cupy", "device": "CuPy"}))
    r = invoke("baseline", "update", both, "-o", out)
    assert [e.reason for e in bl.load(out).entries] == ["c-glob", "star", "any"]   # c*[py]* is cpu and cupy: both ran


def test_baseline_update_keeps_the_comments_of_a_hand_written_file(tmp_path):
    """Before: rewriting a hand-written baseline lost every comment. Each comment stays with what it
    annotates (the file's head, an entry's table, the lines just above it); a dropped entry's go with it."""
    cases = ids("unary.exp", 1)
    out = tmp_path / "g.toml"
    out.write_text('# team baseline: do not edit by hand\n\n'
                   '# CUDA-side levels\n[[known]]\npattern = "unary.exp/f32/*"   # every f32 exp case\n'
                   'level = "c*"\nreason = "tracked in #12"\n\n'
                   '# fixed on cpu in #15\n[[known]]\npattern = "unary.exp/f32/*"\nlevel = "cpu"\nreason = "cpu, #15"\n\n'
                   '# end\n')
    r = invoke("baseline", "update", write(tmp_path / "r.json", dict.fromkeys(cases, "pass")), "-o", out)
    assert "comments are not kept" not in r.output
    assert out.read_text() == ('# team baseline: do not edit by hand\n\n'
                               '# CUDA-side levels\n[[known]]\npattern = "unary.exp/f32/*"   # every f32 exp case\n'
                               'level = "c*"\nreason = "tracked in #12"\n\n# end\n')
    assert [e.reason for e in bl.load(out).entries] == ["tracked in #12"]


def test_baseline_update_says_when_comments_cannot_be_kept(tmp_path):
    out = tmp_path / "g.toml"
    out.write_text('# mine\nknown = [{ pattern = "unary.exp/f32/*", level = "cuda", reason = "r" }]\n')
    r = invoke("baseline", "update", write(tmp_path / "r.json", dict.fromkeys(ids("unary.exp", 1), "pass")), "-o", out)
    assert r.exit_code == 0 and "comments are not kept" in r.output
    assert [e.reason for e in bl.load(out).entries] == ["r"]


def test_baseline_update_of_several_runs_uses_the_newest(tmp_path):
    c = ids("unary.neg", 1)[0]
    old = write(tmp_path / "old.json", {c: "fail"}, started="2026-01-01T00:00:00+00:00")
    new = write(tmp_path / "new.json", {c: "pass"}, started="2026-01-02T00:00:00+00:00")
    out = tmp_path / "known.toml"
    r = invoke("baseline", "update", new, old, "-o", out)
    assert r.exit_code == 0
    assert r.stderr == f"2 results files given; using the newest run, {new} (started 2026-01-02T00:00:00+00:00)\n"
    assert r.stdout.startswith(f"{out}: 0 entries")


@pytest.mark.parametrize("text, line", [
    ('[[known]]\npattern = "cast/*"\nlevel = 7\n',
     "entry 1: `level` must be a string (got 7)"),
    ('[[known]]\npattern = "cast/*"\nlevle = "cpu"\n',
     "entry 1: unknown key 'levle'; did you mean 'level'?"),
    ('[[known]]\npattern = ["cast/*"]\n',
     "entry 1: `pattern` must be a non-empty string (got ['cast/*'])"),
    ('[[known]]\npattern = "cast/*"\nreason = 3\n',
     "entry 1: `reason` must be a string (got 3)"),
    ('[[knwon]]\npattern = "cast/*"\n',
     "unknown key 'knwon'; did you mean 'known'?"),
    ('known = ["cast/*"]\n',
     "entry 1 is str, not a table {pattern, level?, reason}"),
    ('[[known]]\npattern = "cast/*"\nlevel = ""\n',          # was: every level
     "entry 1: `level` matches no level: unknown level ''; known: cpu, hip-on-nvidia, amd, amd-static, cuda, "
     "cupy, hip-on-nvidia/w32"),
])
def test_baseline_files_are_validated_key_by_key(tmp_path, text, line):
    known = tmp_path / "known.toml"
    known.write_text(text)
    results = write(tmp_path / "r.json", {ids("cast", 1)[0]: "fail"})
    for args in (("report", results, "--baseline", known), ("baseline", "update", results, "-o", known)):
        assert one_line_error(invoke(*args)) == f"Error: baseline {known}: {line}"


# ------------------------------------------------------------------------------------ merge
def shards(tmp_path, n=3, **meta) -> list[Path]:
    cases = ids("unary.neg", 6)
    return [write(tmp_path / f"s{k}.json", {c: "pass" for c in cases[k - 1::n]}, shard=f"{k}/{n}", **meta)
            for k in range(1, n + 1)]


def test_a_merge_of_a_shard_that_did_not_finish_says_why_it_exits_1(tmp_path):
    """It printed `6 rows ...: 6 pass` and exited 1, with no word of the interrupted shard."""
    s1, s2, s3 = shards(tmp_path, planned_rows=2)
    cut = write(tmp_path / "s2cut.json", {ids("unary.neg", 6)[1]: "pass"}, shard="2/3", planned_rows=2,
                interrupted=True)
    r = invoke("merge", s1, cut, s3, "-o", tmp_path / "m.json")
    assert r.exit_code == 1, r.output
    assert r.output.splitlines()[-1] == ("⚠️ stopped early: interrupted after 5 of 6 case runs (a shard that did "
                                         "not finish: resume it, then merge again)")


def test_merge_refuses_files_of_different_runs(tmp_path):
    a = write(tmp_path / "a.json", {ids("unary.neg", 1)[0]: "pass"})
    c = ids("unary.neg", 2)[1]
    other = {"sweep": write(tmp_path / "b1.json", {c: "pass"}, sweep="pr"),
             "filters": write(tmp_path / "b2.json", {c: "pass"}, filters={"ops": ["unary.*"]}),
             "levels": write(tmp_path / "b3.json", {c: "pass"}, levels=(CPU, GPU)),
             "suite": write(tmp_path / "b4.json", {c: "pass"}, hip_src="/port/kernels")}
    why = {"sweep": "sweep smoke vs pr", "filters": "filters none vs ops=unary.*",
           "levels": "levels cpu vs cpu, hip-on-nvidia", "suite": "hip_src backends/hip vs /port/kernels"}
    for k, b in other.items():
        line = one_line_error(invoke("merge", a, b, "-o", tmp_path / "m.json"))
        assert line == f"Error: cannot merge {b} with {a}: not parts of one run ({why[k]})"
    assert not (tmp_path / "m.json").exists()


def junit_outcome(xml: str):
    import xml.etree.ElementTree as ET
    (suite,) = ET.fromstring(xml).findall("testsuite[@name='parity.outcome']")
    return suite


def test_merge_refuses_a_missing_shard_unless_allow_partial(tmp_path):
    s1, s2, s3 = shards(tmp_path)
    out = tmp_path / "m.json"
    line = one_line_error(invoke("merge", s1, s3, "-o", out))
    assert line == "Error: shard(s) 2/3 missing: merge every shard, or pass --allow-partial to write a merge that says so"
    r = invoke("merge", s1, s3, "-o", out, "--allow-partial")
    assert r.exit_code == 0
    assert r.output.splitlines() == [f"{out}: 4 rows from 2 file(s): cpu 4 pass",
                                     f"⚠️ partial merge: shard(s) 2/3 missing — their cases are not in {out}"]
    assert Results.from_json(out).meta["shards_missing"] == ["2/3"]
    r = invoke("report", out)
    assert r.stderr == "⚠️ partial merge: shard(s) 2/3 missing (their cases are in no report)\n"
    # never a green pass: its missing shard's cases are not verified (it read `✅ ... 26/26 cases pass`)
    assert r.stdout.startswith("## ⚠️ parity: ") and r.exit_code == 0
    outcome = junit_outcome(invoke("report", out, "--format", "junit").stdout)
    assert outcome.get("skipped") == "1" and outcome.find("testcase").get("name") == "partial"
    again = tmp_path / "again.json"                            # merged once more, it stays partial (and says
    assert one_line_error(invoke("merge", out, "-o", again)).startswith("Error: shard(s) 2/3 missing")   # so)
    assert invoke("merge", out, "-o", again, "--allow-partial").exit_code == 0
    assert Results.from_json(again).meta["shards_missing"] == ["2/3"]
    done = tmp_path / "done.json"                              # the partial merge completed by the shard it
    r = invoke("merge", again, s2, "-o", done)                 # lacked (it was `a whole run`, refused)
    assert r.exit_code == 0 and r.output == f"{done}: 6 rows from 2 file(s): cpu 6 pass\n", r.output
    assert "shards_missing" not in Results.from_json(done).meta
    r = invoke("merge", s1, s2, s3, "-o", out)                 # complete: nothing to say
    assert r.exit_code == 0 and r.output == f"{out}: 6 rows from 3 file(s): cpu 6 pass\n"
    assert "shards_missing" not in Results.from_json(out).meta


def test_merged_shards_plan_the_sum_of_their_case_runs(tmp_path):
    """A merge keeps no one shard's plan (the first file's 2 of 6 read as '4 of 2 case runs')."""
    out = tmp_path / "m.json"
    s1, s2, s3 = shards(tmp_path, planned_rows=2)
    for files, planned in (((s1, s2, s3), 6), ((s1, s3), 4)):        # a partial merge: the shards it has
        assert invoke("merge", *files, "-o", out, "--allow-partial").exit_code == 0
        assert Results.from_json(out).meta["planned_rows"] == planned
    part, full = tmp_path / "p.json", tmp_path / "full.json"           # a partial merge completed, a shard
    assert invoke("merge", s1, s2, "-o", part, "--allow-partial").exit_code == 0   # in both: each shard's
    r = invoke("merge", part, s2, s3, "-o", full)                      # plan once (it read `stopped early:
    assert r.exit_code == 0, r.output                                  # 4 of 10 case runs`, exit 1)
    assert Results.from_json(full).meta["planned_rows"] == 6 and "shard(s) 2/3 in more than one file" in r.output
    assert invoke("merge", *shards(tmp_path / "u"), "-o", out).exit_code == 0
    assert "planned_rows" not in Results.from_json(out).meta           # no shard said: no plan claimed


def test_a_file_named_twice_is_read_once_and_a_shard_in_two_files_plans_once(tmp_path):
    """`merge S1 S1 S2 S3` planned 8 case runs for 6 (2 counted twice): `stopped early`, exit 1, under
    a line saying every row passed. A file named again (also through its run folder) is read once; a
    shard run again plans its cases once and its rows merge as one shard's."""
    s1, s2, s3 = shards(tmp_path, planned_rows=2)
    out = tmp_path / "m.json"
    r = invoke("merge", s1, s1, s2, s3, "-o", out)
    assert r.exit_code == 0 and r.output == f"{out}: 6 rows from 3 file(s) (1 named twice, read once): cpu 6 pass\n"
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_bytes(s2.read_bytes())
    again = tmp_path / "s1-again.json"
    again.write_bytes(s1.read_bytes())
    r = invoke("merge", s1, again, run, run / "results.json", s3, "-o", out)
    assert r.exit_code == 0 and r.output.splitlines() == [
        f"{out}: 6 rows from 4 file(s) (1 named twice, read once): cpu 6 pass",
        "note: shard(s) 1/3 in more than one file: their rows are merged as one shard's (a case with two "
        "verdicts keeps the worst)"]
    assert Results.from_json(out).meta["planned_rows"] == 6
    assert invoke("report", out).exit_code == 0


def test_an_output_that_is_an_input_is_refused_and_a_link_is_written_through(tmp_path):
    """`report g.json -o g.json` replaced its input with markdown; `-o LINK` replaced the link with a
    file, its target left as it was."""
    s1, s2, s3 = shards(tmp_path)
    for cmd in (("merge", s1, s2, s3), ("report", s2)):
        line = one_line_error(invoke(*cmd, "-o", s2))
        assert line == f"Error: -o {s2} is the input {s2}: writing it would replace what it is made from; name another file"
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_bytes(s1.read_bytes())
    link = tmp_path / "link.json"
    link.symlink_to(run / "results.json")
    assert "is the input" in one_line_error(invoke("report", run, "-o", link))
    assert Results.from_json(s2).meta["shard"] == "2/3"                   # untouched
    target, md = tmp_path / "target.md", tmp_path / "report.md"
    target.write_text("old")
    md.symlink_to(target)
    assert invoke("report", s1, "-o", md).exit_code == 0
    assert md.is_symlink() and target.read_text().startswith("## ")
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere" / "x.md")
    assert one_line_error(invoke("report", s1, "-o", dangling)) == (
        f"Error: --output {dangling} is a symbolic link to nothing (its target does not exist or is a loop of "
        "links): refused (not replaced)")
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()


def test_merge_refuses_shards_of_different_splits_and_a_whole_run(tmp_path):
    (tmp_path / "a").mkdir()
    s1, _, _ = shards(tmp_path / "a")
    t1, t2 = shards(tmp_path, n=2)
    whole = write(tmp_path / "w.json", {ids("unary.neg", 1)[0]: "pass"})
    assert one_line_error(invoke("merge", s1, t2, "-o", tmp_path / "m.json")) == \
        "Error: cannot merge shards of different splits (/2 and /3)"
    assert one_line_error(invoke("merge", t1, whole, "-o", tmp_path / "m.json")) == \
        f"Error: cannot merge {whole} (a whole run) with shards (1/2)"


def test_merge_conflict_keeps_the_failure_whatever_the_order(tmp_path):
    c = ids("binary.add", 2)
    a = write(tmp_path / "a.json", {c[0]: "fail", c[1]: "pass"})
    b = write(tmp_path / "b.json", {c[0]: "pass", c[1]: "pass"})
    out = tmp_path / "m.json"
    for order in ((a, b), (b, a)):
        r = invoke("merge", *order, "-o", out)
        assert r.exit_code == 1
        first, second = order
        verdicts = {str(first): "fail" if first == a else "pass", str(second): "fail" if second == a else "pass"}
        where = ", ".join(f"{v} in {f}" for f, v in verdicts.items())
        assert r.output.splitlines() == [
            f"{out}: 2 rows from 2 file(s): cpu 1 fail, 1 pass",
            f"⚠️ 1 case(s) with different verdicts in different files; the worst verdict kept "
            f"(e.g. {c[0]} @cpu: {where} -> fail)"]
        res = Results.from_json(out)
        assert dict(zip(res.table["case_id"], res.table["verdict"])) == {c[0]: "fail", c[1]: "pass"}
        assert res.meta["merge_conflicts"] == {"count": 1, "rule": "the worst verdict is kept", "first": [
            {"case_id": c[0], "level": "cpu", "verdicts": verdicts, "kept": "fail"}]}


def test_merge_output_folder_or_read_only_place_exits_2_and_leaves_no_tmp(tmp_path):
    a = write(tmp_path / "a.json", {ids("unary.neg", 1)[0]: "pass"})
    assert one_line_error(invoke("merge", a, "-o", tmp_path)) == \
        f"Error: -o {tmp_path} is a folder; name the merged file, e.g. {tmp_path / 'results.json'}"
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a read-only folder is writable")
        assert one_line_error(invoke("merge", a, "-o", ro / "m.json")) == \
            f"Error: cannot write {ro / 'm.json'}: Permission denied"
        assert one_line_error(invoke("report", a, "-o", ro / "r.md", )) == \
            f"Error: cannot write {ro / 'r.md'}: Permission denied"
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o700)


def test_merge_output_over_a_file_path_through_a_file_leaves_no_tmp(tmp_path):
    a = write(tmp_path / "a.json", {ids("unary.neg", 1)[0]: "pass"})
    line = one_line_error(invoke("merge", a, "-o", a / "m.json"))
    assert line.startswith(f"Error: cannot write {a / 'm.json'}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


# ------------------------------------------------------------------------------ results files
NO_RESULTS = ": no `results` list (a parity.results/1 file has one row object per case and level)"
BAD_FILES = {
    "not-utf8": (b'{"schema": "parity.results/1", "results": [], "x": "\xff"}',
                 "is not a parity results file: byte 0xff at offset 52 is not UTF-8"),
    "no-results": (doc([]) | {"results": None}, NO_RESULTS),
    "results-object": (doc({"a": 1}), NO_RESULTS),
    "row-not-object": (doc([["unary.neg/f32", "cpu", "pass"]]), ": row 1: not an object (list)"),
    "list-id": (doc([{"case_id": ["x"], "level": "cpu", "verdict": "pass"}]), ": row 1: case_id ['x'] is not a case ID"),
    "unknown-verdict": (doc([{"case_id": "unary.neg/f32", "level": "cpu", "verdict": "passed"}]),
                        ": row 1: unknown verdict 'passed'; did you mean 'pass' or 'xpass'?"),
    "no-verdict": (doc([{"case_id": "unary.neg/f32", "level": "cpu"}]), ": row 1: verdict None is not a verdict"),
    "bad-max-ulp": (doc([{"case_id": "unary.neg/f32", "level": "cpu", "verdict": "pass", "max_ulp": "big"}]),
                    ": row 1: max_ulp 'big' is not a number"),
}


def bad_file(tmp_path, name) -> tuple[Path, str]:
    content, why = BAD_FILES[name]
    p = tmp_path / f"{name}.json"
    p.write_bytes(content) if isinstance(content, bytes) else raw(p, content)
    return p, why if why.startswith(":") else " " + why


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_results_from_json_names_the_file_in_one_line(tmp_path, name):
    p, why = bad_file(tmp_path, name)
    with pytest.raises(ValueError) as e:
        Results.from_json(p)
    assert str(e.value) == f"{p}{why}"


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_every_results_command_answers_a_bad_file_in_one_line(tmp_path, name):
    p, why = bad_file(tmp_path, name)
    good = write(tmp_path / "good.json", {ids("unary.neg", 1)[0]: "pass"})
    for args in (("report", p), ("merge", good, p, "-o", tmp_path / "m.json"), ("diff", good, p),
                 ("diff", p, good), ("baseline", "update", p, "-o", tmp_path / "k.toml")):
        assert one_line_error(invoke(*args)) == f"Error: {p}{why}"
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(["good.json", p.name])


def _with_bad_rows(tmp_path, bad: dict[int, dict], verdicts=None) -> tuple[Path, list[str]]:
    """A results file of passing rows where row i (1-based) is updated with bad[i]; its good case IDs."""
    cases = ids("unary.neg", 6)
    p = write(tmp_path / "r.json", verdicts or {c: "pass" for c in cases})
    doc = json.loads(p.read_text())
    for i, fields in bad.items():
        doc["results"][i - 1].update(fields)
    p.write_text(json.dumps(doc))
    return p, [c for i, c in enumerate(cases, 1) if i not in bad]


def test_a_row_of_wrong_types_is_skipped_said_once_per_file_and_never_a_row(tmp_path):
    """`"level": null` made merge write its output and then crash ('float'.split); a list dtype or an
    object device crashed the HTML report. Such rows are skipped, one line per file says how many,
    why and the first, and no command turns them into rows."""
    p, good = _with_bad_rows(tmp_path, {2: {"level": None}, 4: {"dtype": ["f32"]}, 5: {"device": {"a": 1}}})
    line = (f"warning: {p}: skipped 3 of 6 rows that are not result rows (level ×1, dtype ×1, device ×1); first: "
            f"row 2: level None is not a level name")
    for fmt in ("md", "html", "junit", "json"):
        r = invoke("report", p, "--format", fmt)
        assert r.exit_code == 0 and r.stderr == line + "\n", r.output
    r = invoke("report", p, "--format", "json")
    assert [row["case_id"] for row in json.loads(r.stdout)["results"]] == good
    r = invoke("merge", p, "-o", tmp_path / "m.json")
    assert r.exit_code == 0 and line in r.stderr, r.output
    merged = Results.from_json(tmp_path / "m.json")
    assert list(merged.table["case_id"]) == good
    assert merged.meta["unread_rows"] == [{"file": str(p), "count": 3, "failing": 0,
                                           "first": "row 2: level None is not a level name"}]
    assert invoke("diff", p, p).exit_code == 0
    r = invoke("baseline", "update", p, "-o", tmp_path / "k.toml")
    assert r.exit_code == 0 and line in r.stderr


def test_a_skipped_row_that_failed_keeps_the_run_failing(tmp_path):
    """A damaged row whose verdict is a failure is not forgotten: the outcome is `fail` (exit 1) and
    every report says how many unreadable rows had failed."""
    p, _ = _with_bad_rows(tmp_path, {3: {"verdict": "crash", "op": ["unary.neg"]}})
    r = invoke("report", p)
    assert r.exit_code == 1
    assert "1 unreadable row skipped (1 failing)" in r.stdout.splitlines()[0]
    assert f"Unreadable rows — 1 row(s) of `{p}` are not result rows" in r.stdout
    assert invoke("report", p, "--format", "junit").exit_code == 1
    r = invoke("merge", p, "-o", tmp_path / "m.json")
    assert r.exit_code == 1 and r.stdout.splitlines()[1:] == [
        "⚠️ 1 unreadable row(s) skipped, 1 of them with a failing verdict: in no table, counted in the outcome"]
    assert invoke("report", tmp_path / "m.json").exit_code == 1       # the merge keeps the count
    good = write(tmp_path / "good.json", {c: "pass" for c in ids("unary.neg", 6)})
    r = invoke("diff", good, p)
    assert r.exit_code == 1 and "1 unreadable row(s) with a failing verdict" in r.stderr
    # the diff itself says so (a CI posts stdout as its comment): it said `No regressions` with exit 1
    assert r.stdout.startswith("## ❌ parity diff: 0 new failure(s)") and \
        "❌ NEW has 1 unreadable row(s) with a failing verdict: a regression cannot be ruled out." in r.stdout
    assert r.stdout.rstrip().endswith("A regression cannot be ruled out: exit 1.")


def test_diff_against_a_run_that_did_not_finish_says_so(tmp_path):
    """An interrupted NEW was compared as if complete: `No regressions`, no word that it stopped."""
    c = ids("unary.neg", 6)
    old = write(tmp_path / "old.json", dict.fromkeys(c, "pass"))
    new = write(tmp_path / "new.json", dict.fromkeys(c[:2], "pass"), interrupted=True, planned_rows=6)
    r = invoke("diff", old, new)
    assert r.exit_code == 0 and r.stdout.startswith("## ⚠️ parity diff"), r.output
    assert "⚠️ NEW did not finish (interrupted after 2 of 6 case runs): the cases it did not run are not compared." \
        in r.stdout and r.stdout.rstrip().endswith("No regressions among the cases both runs have.")


def test_diff_against_a_stopped_run_does_not_rule_out_a_regression_in_the_cases_it_did_not_reach(tmp_path):
    """A hung-up or interrupted NEW on a GPU level: `No regressions among the cases both runs have`, exit 0,
    with 4 of OLD's 6 passes never run (and the action then passed the job)."""
    c = ids("unary.neg", 6)
    gpu = {"level": "hip-on-nvidia", "available": True}
    old = write(tmp_path / "old.json", dict.fromkeys(c, "pass"), levels=(gpu,))
    new = write(tmp_path / "new.json", dict.fromkeys(c[:2], "pass"), levels=(gpu,), interrupted=True, planned_rows=6)
    r = invoke("diff", old, new)
    assert r.exit_code == 1 and "❌ 4 case(s) OLD verified are not verified in NEW (now absent)" in r.stdout, r.output
    assert "NEW stopped before it (interrupted after 2 of 6 case runs)" in r.stdout


@pytest.mark.parametrize("key,value,note", [
    ("levels", 5, "meta levels is 5, not a list of level objects: ignored"),
    ("levels", [{"level": "cpu"}], "meta levels[0] is {'level': 'cpu'}, not a level object with level, available: "
                                   "ignored"),
    ("golden", "yes", "meta golden is 'yes', not an object with entries, ok, bit_exact: ignored"),
    ("planned_rows", "9", "meta planned_rows is '9', not a whole number: ignored"),
    ("elapsed_s", [1], "meta elapsed_s is [1], not a number: ignored"),
    ("filters", {"ops": 3}, "meta filters.ops is 3, not a list of strings: ignored"),
    ("profile", ["candle"], "meta profile is ['candle'], not an object: ignored"),
    ("environment", "linux", "meta environment is 'linux', not an object: ignored"),
])
def test_a_meta_field_of_the_wrong_type_falls_back_to_its_default_with_a_note(tmp_path, key, value, note):
    p = write(tmp_path / "r.json", {c: "pass" for c in ids("unary.neg", 2)})
    doc = json.loads(p.read_text())
    doc["meta"][key] = value
    p.write_text(json.dumps(doc))
    for fmt in ("md", "html"):
        r = invoke("report", p, "--format", fmt)
        assert r.exit_code in (0, 2) and r.stderr.startswith(f"warning: {p}: {note}\n"), r.output
    assert key not in Results.from_json(p).meta


def test_report_of_a_folder_reads_its_results_json(tmp_path):
    run = tmp_path / "smoke-1"
    run.mkdir()
    write(run / "results.json", {ids("unary.neg", 1)[0]: "fail"})
    r = invoke("report", run, "--format", "junit")
    assert r.exit_code == 1 and 'type="fail"' in r.output
    assert one_line_error(invoke("report", tmp_path)) == \
        (f"Error: cannot read results {tmp_path / 'results.json'}: No such file or directory "
         f"(a folder of runs: name one, e.g. {run}, or several)")


def test_report_of_several_runs_renders_the_newest_and_says_which(tmp_path):
    c = ids("unary.neg", 1)[0]
    runs = []
    for i, (v, day) in enumerate([("pass", "03"), ("fail", "05"), ("pass", "04")]):
        (tmp_path / f"pr-{i}").mkdir()
        runs.append(write(tmp_path / f"pr-{i}" / "results.json", {c: v}, started=f"2026-01-{day}T00:00:00+00:00"))
    r = invoke("report", *runs, "--format", "junit")
    assert r.exit_code == 1                               # pr-1, the newest, fails
    assert r.stderr == f"3 results files given; using the newest run, {runs[1]} (started 2026-01-05T00:00:00+00:00)\n"


def test_report_output_folder_exits_2(tmp_path):
    a = write(tmp_path / "a.json", {ids("unary.neg", 1)[0]: "pass"})
    assert one_line_error(invoke("report", a, "-o", tmp_path)) == f"Error: -o {tmp_path} is a folder; name the file to write"


# ------------------------------------------------------------------------------------ journal
def test_journal_skips_bad_lines_and_rows_of_cases_the_run_does_not_have(tmp_path):
    real = ids("unary.neg", 2)
    good = [{"case_id": c, "op": "unary.neg", "level": "cpu", "verdict": "fail"} for c in real]
    lines = [json.dumps(good[0]).encode(), b"[1, 2]", b'{"case_id": ["x"], "level": "cpu", "verdict": "pass"}',
             b'{"case_id": "forged/x", "op": "forged", "level": "cpu", "verdict": "pass"}',
             b'{"case_id": "unary.neg/x", "level": "cpu", "verdict": "passs"}',
             b'{"case_id": "unary.neg/y", "op": "unary.neg", "verdict": "pass"}', b"\xff\xfe",
             json.dumps(good[1]).encode(),
             b'{"case_id": "trunc']
    (tmp_path / journal.NAME).write_bytes(b"\n".join(lines))
    j = journal.Journal(tmp_path, resume=True, cases=set(real))
    j.close(finished=False)
    assert [(r["case_id"], r["verdict"]) for r in j.rows] == [(real[0], "fail"), (real[1], "fail")]
    assert j.resumed == 2 and j.done == {(real[0], "cpu"), (real[1], "cpu")}
    assert j.skipped == [
        "results.partial.jsonl line 2: not an object (list)",
        "results.partial.jsonl line 3: case_id ['x'] is not a case ID",
        "results.partial.jsonl line 5: unknown verdict 'passs'; did you mean 'pass' or 'xpass'?",
        "results.partial.jsonl line 6: level None is not a level name",
        "results.partial.jsonl line 7: byte 0xff is not UTF-8",
        "results.partial.jsonl line 9: cut short (the run was interrupted mid-write)",
        "1 row(s) of cases or levels outside this run dropped (e.g. forged/x @cpu)"]
    loaded = journal.load(tmp_path)                          # without cases: the forged row is a row...
    assert len(loaded) == 3 and len(loaded.skipped) == 6     # ...but never the junk


def test_a_journal_that_is_a_link_is_refused_not_appended_through(tmp_path):
    """A run folder from elsewhere (an artifact, another tool) with its journal linked to a file of the
    user's: --resume appended the run's rows to that file."""
    from parity.core.files import FileRefused
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / journal.NAME).symlink_to(victim)
    with pytest.raises(FileRefused, match="is a symbolic link: refused"):
        journal.Journal(run, resume=True)
    assert victim.read_text() == "precious\n"
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--ops", "unary.exp", "--dtypes", "f32",
                                  "--out", str(tmp_path / "out")])
    (run,) = (tmp_path / "out").iterdir()                 # a real run folder, its journal then linked
    (run / "results.json").unlink()
    (run / journal.NAME).unlink(missing_ok=True)
    (run / journal.NAME).symlink_to(victim)
    r = CliRunner().invoke(main, ["run", "--resume", str(run)])
    assert r.exit_code == 2 and "is a symbolic link: refused" in r.output and "Traceback" not in r.output, r.output
    assert victim.read_text() == "precious\n"


def test_journal_with_a_broken_results_json_runs_its_cases_again(tmp_path):
    raw(tmp_path / "results.json", doc([{"case_id": "a", "level": "cpu", "verdict": "pas"}]))
    loaded = journal.load(tmp_path)
    assert list(loaded) == []
    assert loaded.skipped == [f"{tmp_path / 'results.json'}: row 1: unknown verdict 'pas'; did you mean 'pass' or 'xpass'? "
                              "— its rows are run again"]


def _wrong(kinds, nullable):
    """Values a column of these kinds must not hold (null where it is not nullable)."""
    out = [{"an": "object"}, [1, 2]] + ([None] if not nullable else [])
    if kinds & {"int", "float"}:
        out += ["twelve", True]
    if kinds & {"str", "Verdict", "dict", "list", "bool"}:
        out += [7]
    return [v for v in out if not (isinstance(v, dict) and "dict" in kinds or isinstance(v, list) and "list" in kinds)]


def test_journal_lines_with_a_wrong_type_in_any_column_are_skipped_not_rows(tmp_path):
    """Before: `"op": null`, op/device as an object, dtype as a list or max_ulp as an object became rows,
    and the resumed run died in its reports (exit 3: TypeError); 100,000 nested `[` raised a
    RecursionError. Every column of Row is checked against its type now: such a line is skipped and
    said, never a row."""
    from parity.core.row import COLUMN_KINDS
    case = ids("unary.neg", 1)[0]
    good = {"case_id": case, "op": "unary.neg", "level": "cpu", "verdict": "fail", "dtype": "f32", "max_ulp": 3.0,
            "worst": {"coords": [0], "inputs": {"x": 1.0}, "ulps": "inf"}}
    lines, bad = [json.dumps(good)], 0
    for name, (kinds, nullable) in COLUMN_KINDS.items():
        if name in ("case_id", "level", "verdict"):
            continue
        for v in _wrong(kinds, nullable):
            if v is None:                      # (results.json may hold null where a column does not apply)
                continue
            lines.append(json.dumps({**good, name: v}))
            bad += 1
    lines += [json.dumps({**good, "worst": {"inputs": [1]}}), json.dumps({**good, "raw_verdict": {"x": 1}}),
              "[" * 100_000]
    (tmp_path / journal.NAME).write_text("\n".join(lines) + "\n")
    loaded = journal.load(tmp_path, cases={case})
    assert [dict(r) for r in loaded] == [{**good, "worst": {**good["worst"], "ulps": float("inf")}}]
    assert len(loaded.skipped) == bad + 3
    assert loaded.skipped[-1] == f"{journal.NAME} line {len(lines)}: not a row (nested too deeply)"
    assert "line 2: op {'an': 'object'} is not an op name" in loaded.skipped[0]


def _cpu_run(tmp_path) -> Path:
    r = invoke("run", "--ops", "unary.neg", "--dtypes", "f32", "--layouts", "transposed,contiguous", "--levels", "cpu",
               "-q", "--out", tmp_path / "runs")
    assert r.exit_code == 0, r.output
    (folder,) = (tmp_path / "runs").iterdir()
    return folder


def test_resume_skips_bad_journal_lines_and_runs_their_cases_again(tmp_path):
    folder = _cpu_run(tmp_path)
    rows = Results.from_json(folder / "results.json").records()
    (folder / "results.json").unlink()
    (folder / journal.NAME).write_text("\n".join([json.dumps({**rows[0], "op": None}),
                                                  json.dumps({**rows[1], "device": {"gpu": 1}}),
                                                  json.dumps({**rows[2], "dtype": ["f32"]}), "[" * 100_000]) + "\n")
    r = CliRunner().invoke(main, ["run", "--resume", str(folder), "-q"])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert r.stderr.count(f"--resume {folder}: skipped") == 4
    assert len(Results.from_json(folder / "results.json").table) == len(rows)


@pytest.mark.parametrize("damage,error", [
    (lambda f: ((f / "results.json").unlink(), (f / "results.json").mkdir()),
     "results.json is a folder, not a regular file: refused"),
    (lambda f: ((f / "results.json").unlink(), os.mkfifo(f / "results.json")),
     "results.json is a FIFO, not a regular file: refused"),
    (lambda f: (f / "run.json").write_text('{"sweep": 5, "ops": [1]}'), "run.json: sweep must be a non-empty string, not 5"),
    (lambda f: (f / "run.json").write_text('{"sweep": "smoke", "ops": [1]}'), "run.json: ops must be a string or null, "
                                                                               "not [1]"),
    (lambda f: (f / "run.json").write_text("[" * 100_000), "run.json: nested too deeply"),
    (lambda f: (f / "run.json").write_text('{"sweep": "smoke", "shard": "x"}'), "run.json: shard:"),
])
def test_resume_refuses_a_run_folder_whose_files_are_not_what_parity_writes(tmp_path, damage, error):
    """Before: results.json as a folder gave IsADirectoryError (and left results.json.tmp), run.json
    with `{"sweep": 5, "ops": [1]}` an AttributeError: exit 3 both. Exit 2 naming the file and field now."""
    folder = _cpu_run(tmp_path)
    damage(folder)
    before = sorted(p.name for p in folder.iterdir())
    line = one_line_error(invoke("run", "--resume", folder, "-q"))
    assert line.startswith(f"Error: --resume {folder}: ") and error in line, line
    assert sorted(p.name for p in folder.iterdir()) == before          # nothing written, no .tmp left


def test_two_resumes_of_one_folder_cannot_run_at_once(tmp_path):
    """Before: both ran every case. The first holds the folder's lock (run.lock) until its reports are
    written; the second is refused."""
    import subprocess
    import sys
    folder = _cpu_run(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from parity.run.journal import lock_folder; lock_folder(Path(sys.argv[1])); "
                               "print('locked', flush=True); time.sleep(60)", str(folder)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        line = one_line_error(invoke("run", "--resume", folder, "-q"))
        assert line == (f"Error: --resume {folder}: run folder {folder} is in use by another parity run "
                        f"(pid {holder.pid}): wait for it to finish, or resume it afterwards")
    finally:
        holder.kill()
        holder.wait()
    assert invoke("run", "--resume", folder, "-q").exit_code == 0      # the lock goes with its process


def _take_no_new_file(folder: Path, how: str, monkeypatch) -> Callable[[], object]:
    """Make `folder` refuse new files (its files already there stay writable); the undo. "chmod 555"
    is what a non-root CI user gets (root writes anyway: skipped), chattr +i/+a what root gets."""
    import errno
    import shutil
    import subprocess

    from parity.core import files
    if how == "probe refused":                # any user: the first new file fails as chmod 555 makes it
        def refused(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        monkeypatch.setattr(files, "_new_file", refused)
        return lambda: None
    if how == "chmod 555":
        folder.chmod(0o555)
        if os.access(folder, os.W_OK):
            folder.chmod(0o755)
            pytest.skip("running as root: a chmod 555 folder is writable")
        return lambda: folder.chmod(0o755)
    flag = how.split()[-1]                    # chattr +i (immutable) or +a (append-only: made, never renamed)
    if not shutil.which("chattr") or subprocess.run(["chattr", flag, str(folder)], capture_output=True).returncode:
        pytest.skip(f"chattr {flag} is not available or not permitted here")
    return lambda: subprocess.run(["chattr", "-" + flag[1:], str(folder)], check=True)


@pytest.mark.parametrize("how", ["probe refused", "chmod 555", "chattr +i", "chattr +a"])
def test_resume_of_a_folder_that_takes_no_new_file_is_exit_2_before_any_case(tmp_path, monkeypatch, how):
    """Before: run.lock, the journal and run.json stay writable in a folder that takes no new file, so
    every remaining case ran and results.json's temporary file then failed: exit 3. A probe file, made
    and renamed as the reports are, refuses such a folder up front."""
    from parity.run import session
    folder = _cpu_run(tmp_path)
    (folder / "results.json").unlink()
    (folder / journal.NAME).write_text("")              # as an interrupted run leaves it
    before = sorted(p.name for p in folder.iterdir())
    monkeypatch.setattr(session, "execute", lambda *a, **k: pytest.fail("a case ran"))
    undo = _take_no_new_file(folder, how, monkeypatch)
    try:
        line = one_line_error(invoke("run", "--resume", folder, "-q"))
    finally:
        undo()
    assert line.startswith(f"Error: --resume {folder}: cannot write a new file there (") and \
        line.endswith("), so its reports could not be written"), line
    after = sorted(p.name for p in folder.iterdir())
    kept = [n for n in after if n.startswith(".parity-probe.")]       # only an append-only folder keeps it
    assert [n for n in after if n not in kept] == before and len(kept) == (how == "chattr +a")


@pytest.mark.parametrize("how", ["probe refused", "chmod 555", "chattr +i"])
def test_a_new_run_whose_folder_takes_no_file_is_exit_2_before_any_case(tmp_path, monkeypatch, how):
    """A new run proves its folder up front too: --out making no folder is refused, and run.json is
    written (a new file, renamed) before the first case."""
    from parity.run import session
    out = tmp_path / "runs"
    out.mkdir()
    monkeypatch.setattr(session, "execute", lambda *a, **k: pytest.fail("a case ran"))
    undo = _take_no_new_file(out, how, monkeypatch)
    try:
        line = one_line_error(invoke("run", "--ops", "unary.neg", "--dtypes", "f32", "--levels", "cpu", "-q",
                                     "--out", out))
    finally:
        undo()
    assert line.startswith((f"Error: cannot write in the run folder {out}/", f"Error: --out {out}: cannot write")), line


def test_results_json_that_cannot_be_replaced_leaves_no_tmp_file(tmp_path):
    (tmp_path / "results.json").mkdir()
    with pytest.raises((OSError, ValueError)):      # files.FileRefused: a folder is not replaced
        Results.from_rows([{"case_id": "a/b", "op": "a", "level": "cpu", "verdict": "pass"}]).to_json(
            tmp_path / "results.json")
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


# --------------------------------------------------------------------------------------- diff
def test_diff_of_runs_of_different_sweeps_warns_instead_of_a_clean_bill(tmp_path):
    common, extra = ids("unary.neg", 3), ids("binary.add", 4)
    old = write(tmp_path / "old.json", dict.fromkeys(common, "pass"))
    new = write(tmp_path / "new.json", dict.fromkeys(common + extra, "pass"), sweep="pr")
    r = invoke("diff", old, new)
    assert r.exit_code == 0 and "✅" not in r.output
    lines = r.output.splitlines()
    assert lines[0] == "## ⚠️ parity diff: 0 new failure(s), 0 fixed, 0 slowdown(s) > 1.1x"
    assert lines[2] == ("⚠️ The runs differ: sweep smoke vs pr; 4 cases only in NEW, 0 only in OLD — "
                        "compared 3 common cases: no regressions among them")
    assert lines[-1] == "No regressions among the cases both runs have."
    new2 = write(tmp_path / "new2.json", {**dict.fromkeys(common, "pass"), common[0]: "fail"}, sweep="pr")
    r = invoke("diff", old, new2)
    assert r.exit_code == 1 and r.output.splitlines()[2] == (
        "⚠️ The runs differ: sweep smoke vs pr; 0 cases only in NEW, 0 only in OLD — "
        "compared 3 common cases: regressions found")


def test_diff_of_runs_without_a_common_case_exits_2(tmp_path):
    old = write(tmp_path / "old.json", dict.fromkeys(ids("unary.neg", 2), "pass"))
    new = write(tmp_path / "new.json", dict.fromkeys(ids("binary.add", 3), "pass"), filters={"ops": ["binary.*"]})
    assert one_line_error(invoke("diff", old, new)) == (
        f"Error: nothing to compare: {old} and {new} share no case "
        "(filters none vs ops=binary.*; 2 cases only in OLD, 3 only in NEW)")


def test_a_resume_after_the_kernel_sources_changed_is_refused(tmp_path):
    """run.json records a digest of each source, header, declaration and reference file under the
    suite folders; a resume that would keep verdicts of other code (a kernel fixed between the
    interrupted run and its resume) is exit 2, naming what changed, before any case."""
    from parity.run.session import Subject, check_sources_unchanged, source_record
    from parity.profiles import default
    suite = tmp_path / "suite"
    (suite / "sub").mkdir(parents=True)
    (suite / "unary.hip").write_text("// v1\n")
    (suite / "sub" / "common.h").write_text("// h\n")
    (suite / "notes.txt").write_text("not a source\n")
    (suite / ".git").mkdir()
    (suite / ".git" / "x.h").write_text("hidden\n")
    os.mkfifo(suite / "pipe.h")                                   # never opened
    subj = Subject(suite, None, None, default(), "default", True)
    before = source_record(subj)
    assert sorted(before) == ["hip:sub/common.h", "hip:unary.hip"]
    check_sources_unchanged(tmp_path, {"sources": before}, source_record(subj))      # unchanged: resumed
    check_sources_unchanged(tmp_path, {}, source_record(subj))                       # an older run.json
    (suite / "unary.hip").write_text("// v2: the fix\n")
    (suite / "sub" / "common.h").unlink()
    (suite / "new.cuh").write_text("\n")
    from parity.run.session import SessionError
    with pytest.raises(SessionError) as e:
        check_sources_unchanged(tmp_path, {"sources": before}, source_record(subj))
    assert str(e.value) == (f"--resume {tmp_path}: the kernel sources changed since that run: hip:unary.hip (changed), "
                            "hip:new.cuh (new), hip:sub/common.h (gone); the verdicts it finished are of the old "
                            "code: start a new run")
    (suite / "unary.hip").write_text('#include "ops.def"\n')      # a header by its include, not its suffix
    (suite / "ops.def").write_text("#define K 1\n")
    (suite / "pipe.h").unlink()                                       # (discovery refuses a FIFO)
    subj = Subject(suite, None, None, default(), "default", True)     # (a subject discovers its suite once)
    before = source_record(subj)
    assert "hip:ops.def" in before and "hip:notes.txt" not in before
    (suite / "ops.def").write_text("#define K 2\n")
    with pytest.raises(SessionError, match=r"the kernel sources changed since that run: hip:ops.def \(changed\)"):
        check_sources_unchanged(tmp_path, {"sources": before}, source_record(subj))
    with pytest.raises(SessionError, match="run.json: sources must be an object of file digests"):
        check_sources_unchanged(tmp_path, {"sources": ["x"]}, {})


def test_the_record_holds_a_declaration_outside_the_suite_and_its_references(tmp_path, monkeypatch):
    """--profile FILE in another folder than --hip-src: a resume after its declaration or references
    changed kept the old verdicts (even of a reference-only run, which runs its references)."""
    import shutil
    from parity.run.session import SessionError, check_sources_unchanged, source_record, subject
    example = Path(__file__).parents[1] / "docs" / "examples" / "declared-port" / "hip"
    src, decl = tmp_path / "src", tmp_path / "decl"
    src.mkdir(), decl.mkdir()
    shutil.copy(example / "vecops.hip", src)
    for name in ("parity-kernels.toml", "refs.py"):
        shutil.copy(example / name, decl)
    toml = decl / "parity-kernels.toml"                # one process holds one `vecops`: renamed
    toml.write_text(toml.read_text().replace('name = "vecops"', 'name = "vecops_outside"'))
    from parity import profiles
    monkeypatch.setenv(profiles.ENV, os.environ.get(profiles.ENV, ""))      # restored after the test
    subj = subject(src, profile=str(toml))
    before = source_record(subj)
    assert {"profile:parity-kernels.toml", "profile:refs.py", "hip:vecops.hip"} <= before.keys()
    (decl / "refs.py").write_text((decl / "refs.py").read_text() + "\n# changed\n")
    for reference_only in (False, True):
        with pytest.raises(SessionError, match=r"the kernel sources changed since that run: profile:refs.py \(changed\)"):
            check_sources_unchanged(tmp_path, {"sources": before}, source_record(subj), reference_only)
    (src / "vecops.hip").write_text("// another kernel file\n")
    check_sources_unchanged(tmp_path, {"sources": {**before, "hip:vecops.hip": "0"}}, before, reference_only=True)
    (decl / "sub").mkdir()                              # a references module in a subfolder, as it may be
    (decl / "refs.py").rename(decl / "sub" / "refs.py")
    toml.write_text(toml.read_text().replace('references = "refs.py"', 'references = "sub/refs.py"'))
    before = source_record(subj)
    assert "profile:sub/refs.py" in before
    (decl / "sub" / "refs.py").write_text((decl / "sub" / "refs.py").read_text() + "\n# changed again\n")
    with pytest.raises(SessionError, match=r"profile:sub/refs.py \(changed\)"):
        check_sources_unchanged(tmp_path, {"sources": before}, source_record(subj), reference_only=True)


@pytest.mark.skipif(not __import__("shutil").which("hipcc"), reason="hipcc not installed")
@pytest.mark.slow
def test_resume_of_a_run_whose_kernels_changed_is_exit_2_and_of_a_cpu_run_is_not(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    src = Path(__file__).parent / "fixtures" / "suites" / "good" / "good.hip"
    (suite / "good.hip").write_text(src.read_text())
    for levels in ("cpu,amd-static", "cpu"):
        out = tmp_path / levels.replace(",", "-")
        r = invoke("run", "--ops", "unary.neg", "--dtypes", "f32", "--layouts", "contiguous", "--levels", levels,
                   "--hip-src", suite, "-q", "--out", out)
        assert r.exit_code in (0, 1), r.output
        (folder,) = out.iterdir()
        (suite / "good.hip").write_text(src.read_text() + f"\n// changed after the {levels} run\n")
        if levels == "cpu":                  # the reference alone: no verdict of the suite's code kept
            assert invoke("run", "--resume", folder, "-q").exit_code == 0
        else:
            line = one_line_error(invoke("run", "--resume", folder, "-q"))
            assert "the kernel sources changed since that run: hip:good.hip (changed)" in line, line


def test_diff_never_calls_a_baselined_failure_fixed_and_says_when_only_the_reference_was_compared(tmp_path):
    """compile-error -> xfail was `16 fixed`, pass -> xfail was `No regressions` with no word of it,
    and a diff whose common rows were all cpu rows said `No regressions.` as if kernels were compared."""
    c = ids("unary.neg", 3)
    old = write(tmp_path / "old.json", {c[0]: "compile-error", c[1]: "pass", c[2]: "fail"}, levels=(GPU,))
    new = write(tmp_path / "new.json", {c[0]: "xfail", c[1]: "xfail", c[2]: "pass"}, levels=(GPU,))
    r = invoke("diff", old, new)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == ("## ⚠️ parity diff: 0 new failure(s), 1 fixed, 2 failing now accepted by "
                                        "the baseline, 0 slowdown(s) > 1.1x")
    assert "### Failing now, accepted by the baseline (xfail) (2)" in r.output
    a = write(tmp_path / "a.json", {c[0]: "pass"})
    r = invoke("diff", a, a)
    assert r.exit_code == 0 and r.output.startswith("## ⚠️ parity diff") and \
        "⚠️ Every compared row is from cpu, the reference: no kernel of the suite was compared." in r.output


def test_every_verdict_has_a_rank_and_is_failing_or_named_not_failing():
    """A verdict outside ORDER ranked before `fail`, so a merge kept a hand-made `refused` over a
    `fail` and, `refused` not failing, turned the run green."""
    from parity.core.row import Verdict
    from parity.run.results import FAILING, ORDER
    assert sorted(ORDER) == sorted(Verdict)
    not_failing = {Verdict.PASS, Verdict.COMPILED, Verdict.UNAVAILABLE, Verdict.XFAIL, Verdict.XPASS}
    assert set(FAILING) == set(Verdict) - not_failing


def test_report_json_is_the_results_file_itself(tmp_path):
    """`--format json` went through pandas, which writes inf as null: a NaN finding lost its 'inf ulp'
    and its rank, and the markdown of the round trip differed from the original's."""
    rows = [{"case_id": "binary.minimum/f16/contiguous/special/s0", "op": "binary.minimum", "family": "binary",
             "kernel": "bminimum_f16", "dtype": "f16", "level": "hip-on-nvidia", "verdict": "fail",
             "max_ulp": float("inf"), "n_bad": 1, "message": "1/1 elements off",
             "worst": {"coords": [0], "inputs": {}, "expected": "nan", "got": "1.0", "ulps": float("inf"), "note": ""}}]
    p = tmp_path / "r.json"
    Results.from_rows(rows, {"levels": [{"level": "hip-on-nvidia", "available": True, "device": "x"}]}).to_json(p)
    r = invoke("report", p, "--format", "json")
    assert r.exit_code == 1 and r.stdout == p.read_text() + "\n"
    (tmp_path / "again.json").write_text(r.stdout)
    assert invoke("report", tmp_path / "again.json").stdout == invoke("report", p).stdout


def test_an_unreadable_rows_text_stays_in_a_code_span(tmp_path):
    """The first skipped row's text is the file's, not parity's: raw, `<details>` in it folded away
    the rest of summary.md on GitHub."""
    p, _ = _with_bad_rows(tmp_path, {2: {"op": "<details><summary>ok"}})
    line = next(ln for ln in invoke("report", p).stdout.splitlines() if "Unreadable rows" in ln)
    assert line.endswith("; first: `row 2: op is '<details><summary>ok', not a name (letters, digits and "
                         "_ . - + / : @ = , ( ) only)`."), line


def test_a_diff_of_compile_checks_is_no_green_check_and_counts_case_runs(tmp_path):
    """amd-static beside the reference executes nothing: a ✅ diff of two such runs read as values
    compared; and its rows are cases x levels, not cases."""
    static = {"level": "amd-static", "available": True, "device": "hipcc"}
    a = write(tmp_path / "a.json", {c: "compiled" for c in ids("unary.neg", 3)}, levels=(CPU, static))
    r = invoke("diff", a, a)
    assert r.exit_code == 0 and r.stdout.startswith("## ⚠️ parity diff: 0 new failure(s)")
    assert "⚠️ No compared row executed a kernel of the suite (amd-static, cpu): what is compared is whether " \
           "kernels compile, not the values they compute." in r.stdout
    assert "6 case runs (case x level) in both runs (0 only in NEW, 0 only in OLD)" in r.stdout


def test_an_output_named_dash_is_refused_not_written(tmp_path, monkeypatch):
    """`report -o -` wrote a file named `-` in the current folder."""
    monkeypatch.chdir(tmp_path)
    results = write(tmp_path / "r.json", {ids("cast", 1)[0]: "pass"})
    assert one_line_error(invoke("report", results, "-o", "-")) == (
        "Error: --output -: give a file name; '-' is not stdout here (without it the report goes to stdout)")
    assert one_line_error(invoke("merge", results, "-o", "-")) == "Error: --output -: give a file name; '-' is not stdout here"
    assert not (tmp_path / "-").exists()
