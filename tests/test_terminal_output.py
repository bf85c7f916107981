"""Output that suits an 80-column terminal and a CI log: no kernel name split over two lines,
and plain progress lines when stdout is not a terminal."""
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.progress import Progress

from parity.cli.main import main
from parity.ops import expected_kernels, select
from parity.render.terminal import LogProgress, progress
from parity.render.table import Col, fit_table

MISNAMED = Path(__file__).parent / "fixtures" / "broken_hip" / "misnamed"


def invoke(*args: str, columns: int = 80):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env={"COLUMNS": str(columns)})


def first_cells(output: str) -> list[str]:
    """The first cell of every table body line (continuation lines give '')."""
    return [ln.split("│")[1].strip() for ln in output.splitlines() if ln.startswith("│")]


def test_coverage_at_80_columns_keeps_every_kernel_name_on_one_line():
    r = invoke("coverage", "--hip-src", str(MISNAMED))
    assert r.exit_code == 1                                    # the fixture misses almost everything
    header, *table = r.output.splitlines()
    assert max(map(len, table)) <= 80
    rows = json.loads(invoke("coverage", "--hip-src", str(MISNAMED), "--json").output)["hip"]["rows"]
    names = {row["kernel"] for row in rows}
    cells = [c for c in first_cells(r.output) if c]
    assert set(cells) == names                                 # every name whole, none in pieces
    assert re.search(r"│ utan_f32 +│ extra +│ utanh_f32 +│ kernel\.hip:3 +│", r.output)
    abi = [k for k, (op, _) in expected_kernels().items() if not op.spec.library]     # every ABI kernel is missing
    assert header == f"hip suite {MISNAMED}: {len(abi)} missing, 1 extra"  # one line, greppable


def test_list_at_80_and_60_columns_never_splits_a_kernel_or_op_name():
    ops = select(["unary.*", "upsample.*", "conv.*", "sort.*"])
    for columns in (80, 60):
        r = invoke("list", "--ops", "unary.*,upsample.*,conv.*,sort.*", columns=columns)
        assert r.exit_code == 0
        lines = r.output.splitlines()
        assert max(map(len, lines)) <= columns
        tokens = {t.strip(",") for ln in lines for t in ln.replace("│", " ").split()}
        for o in ops:
            assert o.name in tokens
            for k in [o.kernel_name(d) for d in o.dtypes][:6]:
                assert k in tokens, (columns, k)


def test_fit_table_drops_minor_columns_before_folding_names():
    console = Console(width=80, record=True, force_terminal=False)
    cols = [Col("kernel", name=True), Col("arch", name=True), Col("status", name=True), Col("wave", drop=4),
            Col("VGPRs"), Col("SGPRs", drop=6), Col("spills"), Col("LDS", drop=5), Col("scratch", drop=7),
            Col("occupancy", drop=3), Col("notes")]
    rows = [("upsample_bilinear2d_bf16", "gfx1030", "compile-error", "32", "128", "104", "0", "65536", "0", "4",
             "__shfl_xor with width 64 assumes wave64 (common.h:12); warpSize compared to a literal")]
    with console.capture() as cap:
        console.print(fit_table(console, cols, rows))
    out = cap.get()
    assert max(map(len, out.splitlines())) <= 80
    assert "upsample_bilinear2d_bf16" in out and "compile-error" in out and "gfx1030" in out
    assert "scratch" not in out and "SGPRs" not in out          # least important first
    assert "VGPRs" in out and "notes" in out


def test_progress_is_a_live_bar_on_a_terminal_and_lines_in_a_log():
    assert isinstance(progress(Console(force_terminal=True)), Progress)
    assert isinstance(progress(Console(file=open("/dev/null", "w"), force_terminal=False)), LogProgress)


def test_log_progress_prints_every_tenth_and_every_5_s_and_the_end():
    now = [0.0]
    console = Console(width=200, record=True, force_terminal=False)
    with console.capture() as cap:
        with LogProgress(console, every_s=5.0, clock=lambda: now[0]) as prog:
            task = prog.add_task("hip-on-nvidia", total=24087, status="", unit="cases")
            prog.update(task, advance=100)                         # under 10%, under 5 s: quiet
            now[0] = 6.0
            prog.update(task, advance=100, status="[red]3 not passing[/]")   # 5 s passed
            prog.update(task, advance=2500)                        # crossed 10%
            now[0] = 12.0
            prog.update(task, advance=24087 - 2700)                # done
            other = prog.add_task("compile cpu", total=10, status="")
            prog.update(other, advance=3, status="slowest unary.hip 1.5 s")
    assert cap.get().splitlines() == [
        "hip-on-nvidia: 200/24087 cases, 3 not passing, 6.0 s",      # 5 s passed
        "hip-on-nvidia: 2700/24087 cases, 3 not passing, 6.0 s",     # 10% crossed
        "hip-on-nvidia: 24087/24087 cases, 3 not passing, 12 s",     # done
        "compile cpu: 3/10, slowest unary.hip 1.5 s, 0.0 s",         # 30% crossed
    ]


def test_run_without_a_terminal_prints_progress_lines(tmp_path):
    r = invoke("run", "--levels", "cpu", "--ops", "unary.neg,unary.exp", "--out", str(tmp_path))
    assert r.exit_code == 0, r.output
    progress_lines = [ln for ln in r.output.splitlines() if re.fullmatch(r"cpu: \d+/\d+ cases, [\d.]+ s", ln)]
    assert progress_lines, r.output
    n = progress_lines[-1].split()[1]
    done, total = n.split("/")
    assert done == total
    r = invoke("run", "--levels", "cpu", "--ops", "unary.neg", "--out", str(tmp_path), "-q")
    assert not [ln for ln in r.output.splitlines() if ln.startswith("cpu: ")]      # -q: no progress


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed")
def test_verdict_counts_are_given_level_by_level(tmp_path):
    """A reference level's passes ran no kernel and amd-static's `compiled` ran none either: the
    counts line, the terminal's and summary.md's never add them up as one run's verdicts."""
    out = tmp_path / "run"
    r = invoke("run", "--levels", "cpu,amd-static", "--ops", "unary.exp", "--sweep", "smoke", "--out", str(out))
    n = int(re.search(r"^(\d+) cases x 2 level\(s\)", r.output, re.M).group(1))
    assert f": cpu {n} pass; amd-static {n} compiled\n" in r.output
    assert f"cpu: pass {n} · amd-static: compiled {n}\n" in r.output
    summary = next(out.glob("*/summary.md")).read_text()
    assert f"Verdicts: cpu: pass **{n}**; amd-static: compiled **{n}**\n" in summary


def test_findings_keep_the_end_of_a_long_path_at_80_columns():
    """A CI checkout's path cut at the right edge left three compile findings the same text."""
    from parity.render.terminal import short_paths
    deep = "/home/runner/work/candle-rocm-port/candle-rocm-port/candle-kernels/src"
    assert short_paths(f"{deep}/unary_f32.hip does not compile: 4 kernels, {deep}/x.h") == \
        "…/src/unary_f32.hip does not compile: 4 kernels, …/src/x.h"
    assert [short_paths(p) for p in ("/a.hip", "/src/a.hip", "rel/dir/a.hip", "1/2/3")] == \
        ["/a.hip", "/src/a.hip", "rel/dir/a.hip", "1/2/3"]
