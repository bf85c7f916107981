"""`parity doctor` lists the levels `parity run` can use here, each available or why not, asked
of the same `availability` that `parity run` asks (nothing starts: no worker, no kernel)."""
from __future__ import annotations

from click.testing import CliRunner

from parity.run import doctor as doc
from parity.cli.main import main
from parity.run.levels import ALL_LEVELS, make
from parity.run.session import DEFAULT_HIP_SRC


def test_doctor_levels_section_lists_every_run_level_with_run_s_availability():
    rows = doc.run_levels()
    assert [r.level for r in rows] == list(ALL_LEVELS)
    for r in rows:
        av = make(r.level, DEFAULT_HIP_SRC, None, isolate=False).availability
        assert r.available == av.available
        assert (av.device if av.available else av.reason) in r.details
        assert r.details                           # a reason or a device, never blank


def test_doctor_prints_the_levels_heading_and_amd_static_says_what_it_checks(monkeypatch):
    monkeypatch.setattr(doc, "doctor", lambda: [doc.Check("cpu", True, "NumPy reference", "")])
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 0, r.output
    section = r.output.split(doc.LEVELS_HEADING, 1)[1]
    for name in ALL_LEVELS:
        assert f" {name} " in section, name
    static = next(ln for ln in section.splitlines() if " amd-static " in ln)
    assert ("compile checks of the suite for AMD targets" in static) == static.startswith("ok")
