"""Commands that take long show progress, and check their preconditions before the long part.

(`parity compile --summary` was silent for 87 s, `parity mutate --list` 8.6 s of per-case
lookups, `parity mutate` 8.5 s before saying it needs a GPU.)"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import parity.suite.amd_static as amd_static
import parity.host.routines as routines
import parity.mutate.targets as targets
from parity.run.cases import Filters, load_sweep
from parity.cli.main import main
from parity.suite.compile_cache import CompileResult
from parity.executors.base import Availability
from parity.executors.hip_nvidia import HipOnNvidiaExecutor

GOOD = Path(__file__).parent / "fixtures" / "suites" / "good"


def _no_gpu(monkeypatch) -> None:
    monkeypatch.setattr(HipOnNvidiaExecutor, "availability", lambda self: Availability(False, "no GPU here"))


def test_mutate_without_gpu_fails_before_sampling_mutants(monkeypatch):
    _no_gpu(monkeypatch)
    monkeypatch.setattr(targets, "targets", lambda *a, **k: pytest.fail("sampled before the GPU check"))
    t0 = time.perf_counter()
    r = CliRunner().invoke(main, ["mutate", "--max", "2"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "needs a GPU level" in r.output and time.perf_counter() - t0 < 5


def test_mutate_bad_resume_or_equivalent_fails_before_sampling(monkeypatch, tmp_path):
    monkeypatch.setattr(HipOnNvidiaExecutor, "availability", lambda self: Availability(True, device="fake"))
    monkeypatch.setattr(targets, "targets", lambda *a, **k: pytest.fail("sampled before checking the options"))
    for args, said in ((["--resume", str(tmp_path)], "no mutants.jsonl"),
                       (["--equivalent", str(tmp_path / "nope.toml")], "no such file")):
        r = CliRunner().invoke(main, ["mutate", "--max", "2", *args])
        assert r.exit_code == 2 and said in r.output and r.output.count("\n") == 1, r.output


def test_mutate_in_a_folder_that_takes_no_new_file_fails_before_any_mutant(monkeypatch, tmp_path):
    """Before: --resume into a folder taking no new file (chmod 555, chattr +i) ran every mutant and
    failed at its reports, and a new run's folder that could not be made was exit 3. Both are one
    line, exit 2, before sampling (--resume) or the first mutant (--out)."""
    import errno
    import shutil
    import subprocess

    import parity.mutate.run
    from parity.core import files
    monkeypatch.setattr(HipOnNvidiaExecutor, "availability", lambda self: Availability(True, device="fake"))
    monkeypatch.setattr(parity.mutate.run, "GpuRunner", lambda *a, **k: pytest.fail("a mutant ran"))
    (tmp_path / "mutants.jsonl").write_text("")

    def refused(path):                       # what chmod 555 does to a non-root user's new file
        raise PermissionError(errno.EACCES, "Permission denied", str(path))
    with monkeypatch.context() as m:
        m.setattr(targets, "targets", lambda *a, **k: pytest.fail("sampled before checking the folder"))
        m.setattr(files, "_new_file", refused)
        r = CliRunner().invoke(main, ["mutate", "--max", "2", "--resume", str(tmp_path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"--resume {tmp_path}: cannot write a new file there (Permission denied)" in r.output
    out = tmp_path / "out"
    out.mkdir()
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(out)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available or not permitted here")
    try:
        r = CliRunner().invoke(main, ["mutate", "--ops", "unary.neg", "--max", "2", "--out", str(out)])
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"Error: --out {out}: cannot write there" in r.output


def test_bench_out_that_takes_no_folder_fails_before_timing(monkeypatch, tmp_path):
    """Before: bench made its report folder after timing every case, so an --out taking none (chmod
    555, chattr +i) threw the timings away. It is made before the first case now."""
    import shutil
    import subprocess

    from parity.run import session
    from parity.run.levels import Level
    monkeypatch.setattr(session, "build_levels", lambda *a, **k: [
        Level("hip-on-nvidia", Availability(True, device="fake"), None)])
    monkeypatch.setattr(session, "start", lambda *a, **k: pytest.fail("timed before making the report folder"))
    out = tmp_path / "out"
    out.mkdir()
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(out)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available or not permitted here")
    try:
        r = CliRunner().invoke(main, ["bench", "--ops", "unary.neg", "--out", str(out)])
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)
    assert r.exit_code == 2 and r.output.startswith(f"Error: --out {out}: cannot write there"), r.output


@pytest.mark.parametrize("sweep", ["no-such-sweep", "{tmp}/bad.toml", "{tmp}"])
def test_mutate_list_with_a_bad_sweep_is_one_line_exit_2(sweep, tmp_path):
    (tmp_path / "bad.toml").write_text('[[group]]\nops = ["nosuch.*"]\n')
    r = CliRunner().invoke(main, ["mutate", "--list", "--sweep", sweep.format(tmp=tmp_path)])
    assert r.exit_code == 2, r.output
    assert r.output.startswith("Error: ") and r.output.count("\n") == 1 and "Traceback" not in r.output


def test_mutate_case_selection_is_worked_out_per_kernel_not_per_case(monkeypatch):
    cases = load_sweep("pr", Filters(None, None, None, None))
    calls = []
    real = routines.expected_kernels
    monkeypatch.setattr(routines, "expected_kernels", lambda: calls.append(1) or real())
    targets._kernels.cache_clear()
    t = targets.FileTarget("unary.h", (("unary_f32.hip", frozenset({"uneg_f32", "uexp_f32"})),
                                       ("conv.hip", frozenset({"im2col_f32"}))))
    chosen = targets.cases_for(t, cases)
    assert len(calls) < 50 < len(cases)              # host routines' names only, not one per case
    assert {c.op for c in chosen} >= {"unary.neg", "unary.exp"}
    assert chosen == [c for c in cases if targets.case_kernels(c) & t.kernels]
    assert any(c.op.startswith("conv") and "host" in c.op for c in chosen)   # conv.host's im2col step


def _fake_compile(source, arch, extra_flags=(), cache_root=None, include_dirs=()):
    """A compile that succeeded: its log has a resource-usage remark (one that has none, and no code
    object, compiled nothing: amd_static.analyze says so)."""
    return CompileResult(True, "k", None, log=f"{source}:1:1: remark: Function Name: uneg_f32 [-Rpass-analysis=kernel-resource-usage]\n"
                                              f"{source}:1:1: remark:     VGPRs: 4 [-Rpass-analysis=kernel-resource-usage]\n")


def test_compile_shows_progress_per_file_and_target(monkeypatch):
    monkeypatch.setattr(amd_static, "hipcc", lambda: ["hipcc"])          # no compiler runs
    monkeypatch.setattr(amd_static, "compile_for_arch", _fake_compile)
    monkeypatch.setattr(amd_static, "accepted_targets", lambda targets, cache_root=None:
                        {a: (True, "") for a in targets})
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(GOOD), "--amd-arch", "gfx90a,gfx1030", "--summary"])
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("compile amd-static: ")]
    assert lines[-1].startswith("compile amd-static: 2/2 file x target, good.hip gfx"), lines


def test_analyze_announces_the_total_before_compiling(monkeypatch):
    monkeypatch.setattr(amd_static, "hipcc", lambda: ["hipcc"])
    monkeypatch.setattr(amd_static, "compile_for_arch", _fake_compile)
    monkeypatch.setattr(amd_static, "accepted_targets", lambda targets, cache_root=None:
                        {a: (True, "") for a in targets})
    seen = []
    amd_static.analyze(GOOD, ("gfx90a", "gfx1030", "gfx940"), on_compiled=lambda *a: seen.append(a))
    assert seen[0] == (0, 3, "") and sorted(d for d, _, _ in seen[1:]) == [1, 2, 3]
