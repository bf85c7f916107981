"""Text a port controls (file and shape names, compiler output, a declaration's title, a port's name)
and results files that contradict themselves: no output of parity acts on it (rich markup, escape
sequences, markdown headings and HTML in a PR comment), and no headline reads it as a pass."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

import runs
from parity.cli.main import main
from parity.core.text import md_code, md_text, one_line
from parity.render import markdown
from parity.render.html import _code_spans
from parity.render.outcome import of as outcome_of
from parity.render.table import Col, fit_table
from parity.run.results import Results

HOSTILE = 'u`x` <img src=x>\n\n## \u2705 parity: 16/16 cases pass\n\x1b[2K\x1b]0;t\x07 [bold green]PASS[/] \u202e'


def test_one_line_shows_every_control_character_as_its_escape():
    assert one_line("a\nb\r\t\x1b[2K\x00\x7f\x9b\u2028\u202e\u2066\ud800") == \
        "a\\nb\\r\\t\\x1b[2K\\x00\\x7f\\x9b\\u2028\\u202e\\u2066\\ud800"
    assert one_line("plain (text) `x` ✅") == "plain (text) `x` ✅"


def test_a_code_span_is_never_closed_by_its_own_text():
    assert md_code("a") == "`a`"
    assert md_code("use `foo`") == "`` use `foo` ``"
    s = md_code("use `foo` and ``bar``")
    fence = s[:s.index("u")].strip()
    assert fence == "```" and s.endswith("```")
    assert md_code("`edge`") == "`` `edge` ``"
    assert md_code("a|b", in_table=True) == "`a\\|b`"
    assert "\n" not in md_code("a\nb")
    assert md_code("") == ""


def test_markdown_text_escapes_what_would_render():
    t = md_text("<img src=x> [l](javascript:1) **b** a|b ~~s~~ &lt;")
    assert t == "\\<img src=x\\> \\[l\\](javascript:1) \\*\\*b\\*\\* a\\|b \\~\\~s\\~\\~ \\&lt;"
    assert "\n" not in md_text("a\n## b")


def test_html_reads_the_code_spans_markdown_writes():
    assert _code_spans(f"{md_code('a`b')} does not compile: {md_code('x')}") == \
        [("a`b", True), (" does not compile: ", False), ("x", True)]


def test_table_cells_are_literal_text_never_markup():
    console = Console(width=200, record=True, force_terminal=False)
    rows = [("out[/* flat index */ i] + missing[idx]", "[bold green]PASS[/]", "\x1b[1A\x1b[2Kok")]
    console.print(fit_table(console, (Col("a", name=True), Col("b", name=True), Col("c", name=True)), rows))
    text = console.export_text()
    assert "out[/* flat index */ i] + missing[idx]" in text         # was a MarkupError: exit 3
    assert "[bold green]PASS[/]" in text
    assert "\x1b" not in text and "\\x1b[1A\\x1b[2Kok" in text


def _hostile_compile_error_run() -> Results:
    """A run whose amd-static rows fail to compile a file named with markdown, HTML and escapes."""
    rows = [{"case_id": "unary.exp/f32/contiguous/normal/s0", "op": "unary.exp", "family": "unary",
             "kernel": "uexp_f32", "dtype": "f32", "level": "amd-static", "verdict": "compile-error",
             "source": f"/port/{HOSTILE}.hip", "message": f"hipcc: error: {HOSTILE}"}]
    levels = [{"level": "amd-static", "available": True, "reason": "", "device": "hipcc"}]
    return Results.from_rows(rows, runs.meta(levels=levels, reference_only_requested=False,
                                             port={"description": HOSTILE}))


def test_summary_md_keeps_hostile_text_inside_code_spans_on_one_line():
    md = markdown.render(_hostile_compile_error_run())
    headings = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert not any("16/16 cases pass" in h for h in headings), headings
    assert "\x1b" not in md and "\u202e" not in md
    for line in md.splitlines():                  # every <img is inside a code span on its line
        if "<img" in line:
            assert "`" in line.split("<img")[0], line


def test_a_failing_rows_message_inputs_note_and_divergences_render_inert():
    """A wrong result without a worst element shows its message; a declaration's divergences are
    listed: both were raw markdown in summary.md (an image, a <details> folding the page away)."""
    w = {"coords": [0], "inputs": {"x": "<img src=a>"}, "expected": "1", "got": "2", "ulps": 3.0,
         "note": "<details open>"}
    rows = [{"case_id": f"unary.exp/f32/c{i}/normal/s0", "op": "unary.exp", "family": "unary", "kernel": "uexp_f32",
             "dtype": "f32", "level": "hip-on-nvidia", "verdict": "fail", "worst": worst,
             "message": f"{HOSTILE} ![x](https://e.example/a.png)", "divergences": ["<img src=d> ![d](https://e/d)"]}
            for i, worst in enumerate([None, w])]
    levels = [{"level": "hip-on-nvidia", "available": True, "reason": "", "device": "x"}]
    md = markdown.render(Results.from_rows(rows, runs.meta(levels=levels, reference_only_requested=False)))
    for line in md.splitlines():
        for bad in ("<img", "![", "<details open"):
            if bad in line:
                assert "`" in line.split(bad)[0] or "\\" + bad[0] in line, line


def test_terminal_findings_print_no_escape_sequence():
    from parity.render.terminal import headline, show
    res = _hostile_compile_error_run()
    console = Console(width=100, record=True, force_terminal=False)
    show(res, console)
    headline(outcome_of(res), console)
    text = console.export_text()
    assert "\x1b" not in text and "\u202e" not in text


EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "declared-port" / "hip"


@pytest.mark.parametrize("old,new,needle", [
    ('title = "vecops: a CUDA library and its HIP port (docs/examples/declared-port)"',
     'title = "vecops\\n\\n## \\u2705 all pass"', "title"),
    ("small = { rows = 4, cols = 3 }", '"a/b\\n## x" = { rows = 4, cols = 3 }', "shape class name"),
])
def test_a_declaration_s_text_that_would_break_a_report_is_refused(tmp_path, old, new, needle):
    d = tmp_path / "port"
    shutil.copytree(EXAMPLE, d)
    f = d / "parity-kernels.toml"
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new))
    r = CliRunner().invoke(main, ["list", "--profile", str(f)])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_a_port_name_on_two_lines_is_refused(tmp_path):
    from parity.suite.port import PortError, load_port
    f = tmp_path / "parity-port.toml"
    f.write_text('name = "shim\\n## \\u2705 pass"\nsources = ["*.hip"]\n')
    (tmp_path / "k.hip").write_text("\n")
    with pytest.raises(PortError, match="name: one line"):
        load_port(f)


# ------------------------------------------------------------------ results that contradict themselves
def _doc(tmp_path: Path, rows_level: str, meta_levels: list[dict]) -> Path:
    res = runs.failing_run()
    doc = json.loads((lambda p: (res.to_json(p), p.read_text())[1])(tmp_path / "r0.json"))
    for r in doc["results"]:
        r["level"], r["verdict"] = rows_level, "pass"
        r.pop("worst", None)
    doc["meta"]["levels"] = meta_levels
    p = tmp_path / "results.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("meta_levels", [
    [{"level": "hip-on-nvidia", "available": False, "reason": "no GPU"}],      # said unavailable
    [{"level": "cpu", "available": True}],                                       # not listed
])
def test_pass_rows_on_a_level_that_did_not_run_are_never_a_pass(tmp_path, meta_levels):
    p = _doc(tmp_path, "hip-on-nvidia", meta_levels)
    r = CliRunner().invoke(main, ["report", str(p)])
    assert r.exit_code == 2, r.output                   # none of its rows is a result row
    assert "hip-on-nvidia" in r.output and "✅" not in r.output


def test_rows_on_a_level_parity_does_not_know_verify_nothing(tmp_path):
    p = _doc(tmp_path, "bogus-level", [{"level": "bogus-level", "available": True, "device": "?"}])
    res = Results.from_json(p)
    assert outcome_of(res).status == "reference-only"


@pytest.mark.parametrize("patch", [
    lambda t: t.replace('"n_bad": 0', '"n_bad": ' + "9" * 401, 1),            # no float holds it
    lambda t: t.replace('"op": "unary.neg"', '"op": "unary.neg", "message": "a\\ud800b"', 1),
])
def test_numbers_and_strings_json_allows_and_python_cannot_write_are_no_traceback(tmp_path, patch):
    res = runs.failing_run()
    p = tmp_path / "results.json"
    res.to_json(p)
    text = p.read_text()
    patched = patch(text)
    assert patched != text
    p.write_text(patched)
    for cmd in (["report", str(p), "-o", str(tmp_path / "s.md")], ["report", str(p), "--format", "junit", "-o", str(tmp_path / "j.xml")],
                ["diff", str(p), str(p)]):
        r = CliRunner().invoke(main, cmd)
        assert r.exit_code in (0, 1), (cmd, r.output)
        assert "internal error" not in r.output
