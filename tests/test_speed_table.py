"""bench/speed_table.py: the launch ceiling of a speed row and how each suite's nn rows stand against
the 80% bar (issue #34) — the claims the README's speed section makes come from these lines."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("speed_table", Path(__file__).parents[1] / "bench" / "speed_table.py")
st = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(st)

# copy 20 us each; floors 5 (ceiling 100%), 40 (ceiling 50%: launch-bound) and 22 (ceiling 90.9%)
ROWS = [
    {"family": "nn", "case": "fast", "copy_us": 20.0, "floor_us": 5.0, "after_us": 24.0, "after_pct_copy": 83.3,
     "before_us": 40.0, "before_pct_copy": 50.0},
    {"family": "nn", "case": "launch", "copy_us": 20.0, "floor_us": 40.0, "after_us": 50.0, "after_pct_copy": 40.0,
     "before_us": 80.0, "before_pct_copy": 25.0},
    {"family": "nn", "case": "slow", "copy_us": 20.0, "floor_us": 22.0, "after_us": 40.0, "after_pct_copy": 50.0,
     "before_us": 41.0, "before_pct_copy": 48.8, "check": {"after": "pass"}},
    {"family": "quantized", "case": "not nn", "copy_us": 4.0, "floor_us": 3.5, "after_us": 4.5,
     "after_pct_copy": 88.9, "cuda_us": 4.4, "after_vs_cuda": 1.023, "notes": ["after: a note"]},
]
META = {"device": "GPU X", "wave": 32, "suites": {"before": "old", "after": "new"}, "variants": {},
        "cuda_src": "candle", "cuda": True}


def test_ceiling_is_copy_over_the_slower_of_copy_and_floor():
    assert [st.ceiling_pct(r) for r in ROWS] == [100.0, 50.0, 90.9, 100.0]
    assert st.ceiling_pct({"copy_us": 20.0}) is None          # no floor measured: no ceiling claimed


def test_a_launch_copy_slower_than_the_floor_lowers_the_ceiling_unless_a_kernel_beat_it():
    row = {"copy_us": 20.0, "floor_us": 5.0, "launch_copy_us": 40.0, "after_us": 50.0, "before_us": 45.0}
    assert st.ceiling_pct(row) == 50.0                         # the copy on the launch's own grid: 40 us
    assert st.ceiling_pct({**row, "cuda_us": 25.0}) == 80.0    # a kernel did it in 25 us: the launch allows that
    assert st.ceiling_pct({**row, "launch_copy_us": 10.0}) == 100.0
    assert st.standing({**row, "after_pct_copy": 40.0}, "after") == "launch-bound"
    assert st.standing({**row, "cuda_us": 24.0, "after_pct_copy": 40.0}, "after") == "below"


def test_each_row_stands_at_the_bar_launch_bound_or_below():
    assert [st.standing(r, "after") for r in ROWS] == ["bar", "launch-bound", "below", "bar"]
    assert [st.standing(r, "before") for r in ROWS[:3]] == ["below", "launch-bound", "below"]
    assert st.standing(ROWS[0], "variant") is None             # a suite the row was not timed on


def test_the_bar_summary_counts_nn_rows_only_and_names_the_ones_below():
    lines = st.bar_summary(ROWS, ["before", "after"])
    assert lines == [
        "- before: 0 of 3 nn rows at >= 80% of copy; 1 launch-bound (ceiling under 80%; the slowest at 50% "
        "of its ceiling); 2 below the bar: fast 50.0%, slow 48.8%",
        "- after: 1 of 3 nn rows at >= 80% of copy; 1 launch-bound (ceiling under 80%; the slowest at 80% "
        "of its ceiling); 1 below the bar: slow 50.0%",
    ]


def test_markdown_has_the_ceiling_column_the_summary_and_the_notes(tmp_path):
    st.write(tmp_path, ROWS, META)
    md = (tmp_path / "suite_speed.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| family"))
    assert header.split(" | ")[3:7] == ["copy us", "floor us", "launch copy us", "ceiling %"]
    assert "| nn | launch |  | 20.0 | 40.0 |  | 50.0 |" in md
    assert "Against the bar (nn rows):\n- before: 0 of 3" in md
    assert "- not nn: after: a note" in md
    assert "check" in header                                     # a row was judged


def test_a_saved_run_renders_again_without_a_gpu(tmp_path):
    """A run saved before the json kept `cuda` and `variants` (stop 30's) still renders."""
    saved = tmp_path / "suite_speed.json"
    saved.write_text(json.dumps({"device": "GPU X", "wave": 32, "suites": {"after": "new"},
                                 "cuda_src": "candle", "rows": ROWS}))
    rows, meta = st.load(saved)
    assert meta["cuda"] is True and meta["variants"] == {}
    st.write(tmp_path / "again", rows, meta)
    assert "cuda = candle" in (tmp_path / "again" / "suite_speed.md").read_text()


@pytest.mark.parametrize("pct, expect", [(80.0, "bar"), (79.9, "below")])
def test_the_bar_is_inclusive(pct, expect):
    assert st.standing({"copy_us": 20.0, "floor_us": 5.0, "after_pct_copy": pct}, "after") == expect


def test_suite_speed_rows_filter_refuses_a_glob_that_matches_no_row_before_any_gpu_work():
    bench = Path(__file__).parents[1] / "bench" / "suite_speed.py"
    r = subprocess.run([sys.executable, str(bench), "out", "--rows", "softmax f99*"], capture_output=True, text=True)
    assert r.returncode == 2 and "--rows 'softmax f99*' matches no row" in r.stderr


def test_suite_speed_rows_filter_keeps_the_matching_rows(monkeypatch):
    _spec = importlib.util.spec_from_file_location("suite_speed", Path(__file__).parents[1] / "bench" / "suite_speed.py")
    ss = importlib.util.module_from_spec(_spec)
    monkeypatch.setitem(sys.modules, "suite_speed", ss)      # its dataclasses look themselves up there
    _spec.loader.exec_module(ss)
    # (ss.rows() would add the table's shape classes to the catalog's ops: not in this process)
    rows = [ss.Row("nn", label, "nn.softmax", "f16", "x") for label in
            ("softmax f16 4096x4096", "softmax bf16 4096x4096", "rmsnorm f16 8192x2048", "softmax f16 1024x16384")]
    assert [r.label for r in ss.matching(rows, "softmax f16*")] == ["softmax f16 4096x4096", "softmax f16 1024x16384"]
    assert [r.label for r in ss.matching(rows, "rmsnorm*, softmax bf16*")] == ["softmax bf16 4096x4096",
                                                                              "rmsnorm f16 8192x2048"]
