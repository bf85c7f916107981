"""The HTML scoreboard: content on the server side, then the page's JavaScript in headless Chromium."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from parity.render import html
from parity.run.results import Results

import runs

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "reports" / "screenshots"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.fixture(scope="module")
def failing():
    return runs.failing_run()


@pytest.fixture(scope="module")
def page(failing):
    return html.render(failing)


def test_one_grid_cell_per_op_and_dtype(failing, page):
    for op, dt in set(zip(failing.table["op"], failing.table["dtype"])):
        row, col = html.grid_key(op, dt)
        assert f'data-cell="{row}|{col}"' in page, (op, dt)
    cell = re.search(r'<td class="cell" data-cell="binary.minimum\|f16" data-verdict="(\w+)" data-n="(\d+)" '
                     r'data-bad="(\d+)"', page)
    assert cell.groups() == ("fail", "12", "5")
    assert 'data-cell="unary.neg|f32" data-verdict="pass"' in page


def test_compound_dtypes_split_into_row_and_column():
    assert html.grid_key("cast", "f32-u8") == ("cast [f32→]", "u8")
    assert html.grid_key("unary.exp", "bf16") == ("unary.exp", "bf16")


def test_failure_table_shows_worst_element(failing, page):
    row = failing.table[failing.table["case_id"] == "binary.minimum/f16/contiguous/special/s0"].iloc[0]
    w = row["worst"]
    block = page[page.index('data-case="binary.minimum/f16/contiguous/special/s0"'):]
    block = block[:block.index("</tr>")]
    assert "(0, 21)" in block and str(w["index"]) in block
    assert f"lhs={w['inputs']['lhs']}" in block and f"rhs={w['inputs']['rhs']}" in block
    assert f'<td class="mono expected">{w["expected"]}' in block and f'<td class="mono got">{w["got"]}' in block
    assert w["expected_bits"] in block and w["got_bits"] in block
    assert '<td class="mono ulps">inf' in block
    assert "parity repro binary.minimum/f16/contiguous/special/s0 --level cpu" in block


def test_score_and_findings_open_the_page(failing, page):
    assert page.index('id="score"') < page.index('id="findings-list"') < page.index('id="levels"') \
        < page.index('<details id="per-case">') < page.index('id="grid"') < page.index('id="failures"')
    assert page.count('<li class="finding"') == 2               # f16 and f32 minimum on special values
    assert '<span class="part">14/24 cases</span> <span class="muted">(reference: no kernel ran)</span>' in page


def test_levels_golden_environment_and_unavailable_never_pass(failing, page):
    assert 'data-level="hip-on-nvidia" data-status="unavailable"' in page
    assert "neither passed nor failed" in page
    assert 'data-level="cpu" data-status="ran"' in page and 'data-verdict="fail"' in page
    assert "356/356 launches within budget, 321 bit-exact" in page
    assert failing.meta["environment"]["numpy"] in page
    assert "https://" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "<script src" not in page and "<link" not in page


def test_timing_section_with_svg_ratio_plot():
    res = runs.old_run()
    t = res.table.copy()
    hip = t.assign(level="hip-on-nvidia")
    cuda = t.assign(level="cuda", kernel_ms=0.5)
    page = html.render(Results.from_rows(hip.to_dict("records") + cuda.to_dict("records"), res.meta))
    assert "<svg" in page and "hip-on-nvidia / cuda kernel time per op" in page
    assert re.search(r"<td class=\"mono\">binary.minimum</td><td>\d+</td><td>2.000x</td>", page)
    assert "Kernel timing" in page
    assert "Kernel timing" not in html.render(runs.failing_run())       # no kernel_ms: no section


def test_payload_cannot_close_the_script_tag():
    res = runs.failing_run()
    res.table.loc[res.table.index[0], "message"] = "</script><b>x"
    res.table.loc[res.table.index[0], "verdict"] = "crash"
    page = html.render(res)
    data = page[page.index('id="parity-data">'):]
    assert "</script><b>" not in data[:data.index("</script>")]


@pytest.fixture(scope="module")
def written(failing, tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    return html.write(failing, folder)


def _chromium(url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp}",
           "--window-size=1400,1000", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install -y chromium)")
class TestInBrowser:
    def test_screenshot(self, written, tmp_path):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / "scoreboard.png"
        shot.unlink(missing_ok=True)
        r = _chromium(written.as_uri() + "#filter=minimum", tmp_path, f"--screenshot={shot}")
        assert shot.exists() and shot.stat().st_size > 10_000, r.stderr[-2000:]
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    def test_script_runs_and_grid_is_complete(self, written, tmp_path):
        dom = _chromium(written.as_uri(), tmp_path, "--dump-dom").stdout
        assert 'data-ready="1"' in dom
        assert '<details id="per-case">' in dom                  # per-case view collapsed: root causes first
        rows = re.findall(r'<tr class="grid-row" data-op="([^"]+)"( hidden="")?>', dom)
        assert {r for r, _ in rows} == {"binary.minimum", "unary.neg"} and not any(h for _, h in rows)
        assert "op rows, 10 failure rows shown" in dom

    def test_hash_filter_hides_other_ops(self, written, tmp_path):
        dom = _chromium(written.as_uri() + "#filter=minimum", tmp_path, "--dump-dom").stdout
        assert 'data-filter="minimum"' in dom
        assert '<details id="per-case" open="">' in dom          # a link into the per-case view opens it
        assert '<tr class="grid-row" data-op="binary.minimum">' in dom
        assert '<tr class="grid-row" data-op="unary.neg" hidden="">' in dom
        dom = _chromium(written.as_uri() + "#filter=unary.neg", tmp_path, "--dump-dom").stdout
        assert '<tr class="grid-row" data-op="binary.minimum" hidden="">' in dom
        assert "1 op rows, 0 failure rows shown" in dom

    def test_verdict_checkbox_and_drill_down(self, written, tmp_path):
        url = written.as_uri() + "#verdict=fail&cell=" + "binary.minimum%7Cf16"
        dom = _chromium(url, tmp_path, "--dump-dom").stdout
        assert '<td class="cell off" data-cell="unary.neg|f16"' in dom      # pass unchecked: faded
        assert '<td class="cell sel" data-cell="binary.minimum|f16"' in dom
        drill = dom[dom.index('id="drill"'):]
        assert "hidden" not in drill[:drill.index(">")]
        assert 'data-layout="contiguous" data-values="special"' in drill
        assert re.search(r'data-layout="contiguous" data-values="special" style="background:[^"]+" title="fail"', drill)
        assert re.search(r'data-layout="contiguous" data-values="normal" style="background:[^"]+" title="pass"', drill)
        assert "parity repro binary.minimum/f16/contiguous/special/s0 --level cpu" in drill


def test_the_header_counts_verdicts_level_by_level():
    """The reference's passes ran no kernel: never one green 'pass N' beside amd-static's compiles."""
    from parity.render import html
    from parity.run.results import Results
    rows = [{"case_id": "unary.neg/f32/contiguous/normal/s0", "op": "unary.neg", "kernel": "uneg_f32",
             "level": lv, "verdict": v} for lv, v in (("cpu", "pass"), ("amd-static", "compiled"))]
    page = html.render(Results.from_rows(rows, {"levels": []}))
    counts = page.split('id="counts">', 1)[1].split("</div>", 1)[0]
    assert counts.count('class="level-counts"') == 2
    assert counts.index("<b>cpu</b>: ") < counts.index("pass <b>1</b>") < counts.index("<b>amd-static</b>: ") \
        < counts.index("compiled <b>1</b>")
