"""What the machine does to a command (a full disk, a hang-up) and outputs sized by their input: one
line and an exit code, never parity's internal error; a JUnit file never as large as a message."""
from __future__ import annotations

import errno
import signal

import pytest
from click.testing import CliRunner

import runs
from parity.cli.main import main
from parity.core import interrupts
from parity.render import diff as diff_md
from parity.render import junit


def test_a_full_disk_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from parity.core import files
    res = runs.failing_run()
    res.to_json(tmp_path / "results.json")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "s.md"))
    monkeypatch.setattr(files, "write_text", full)
    r = CliRunner().invoke(main, ["report", str(tmp_path / "results.json"), "-o", str(tmp_path / "s.md")])
    assert r.exit_code == 2, r.output
    assert "No space left on device" in r.output and "internal error" not in r.output


def test_a_run_that_fills_the_disk_names_its_folder_and_resume(tmp_path, monkeypatch):
    """The run's journal cannot grow: the message names the run folder and the command that finishes
    it (it named --out's folder only)."""
    from parity.run import journal

    def full(self, row):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(journal.Journal, "append", full)
    out = tmp_path / "my out"
    r = CliRunner().invoke(main, ["run", "--ops", "unary.neg", "--dtypes", "f32", "--levels", "cpu", "-q",
                                  "--out", str(out)])
    assert r.exit_code == 2, r.output
    (folder,) = out.iterdir()
    assert r.output.strip().splitlines()[-1] == (f"Error: No space left on device (what finished is kept in {folder}; "
                                                 f"once there is room: parity run --resume '{folder}')")


def test_sighup_stops_a_command_as_an_interrupt_with_exit_129():
    previous = interrupts.install()
    try:
        with pytest.raises(interrupts.HungUp) as e:
            interrupts.handler(signal.SIGHUP, None)
        assert interrupts.exit_code(e.value) == 129 and interrupts.name(e.value) == "SIGHUP"
    finally:
        interrupts.restore(previous)
        interrupts.reset()


def test_a_huge_message_is_cut_in_junit():
    res = runs.failing_run()
    i = res.table.index[res.table["verdict"] == "fail"][0]
    res.table.loc[i, "message"] = "x" * (junit.BODY_LIMIT * 10)
    xml = junit.render(res)
    assert len(xml) < junit.BODY_LIMIT * 3 and "more characters in results.json" in xml


def test_diff_table_cells_keep_their_columns():
    old, new = runs.old_run(), runs.new_run()
    i = new.table.index[new.table["verdict"] == "fail"][0]
    new.table.loc[i, "message"] = "a | b | c `x` <img src=x>"
    text = diff_md.render(diff_md.diff(old, new))
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "img" in ln]
    assert rows and all(ln.replace("\\|", "").count("|") == 6 for ln in rows), rows


def test_report_of_a_run_that_has_not_finished_says_how_to_finish_it(tmp_path):
    from parity.run.journal import NAME
    (tmp_path / NAME).write_text("")
    r = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert r.exit_code == 2 and f"parity run --resume {tmp_path}" in r.output, r.output
