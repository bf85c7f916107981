"""Ctrl-C and SIGTERM stop a run once and cleanly: exit 130/143, the reports of what finished written
and saying the run was interrupted, no traceback from parity or any of its worker processes, whatever
the moment and however many signals come (a CI runner repeats SIGTERM; a terminal's Ctrl-C reaches the
whole process group)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import parity.run.engine
from parity.cli.main import main
from parity.core import interrupts
from parity.render import junit

ARGS = ["run", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--levels", "cpu", "-q"]


def _meta(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())["meta"]


def test_a_signal_while_the_reports_are_written_makes_them_say_interrupted(tmp_path, monkeypatch):
    """Before: every case had run, a SIGTERM came while the reports were written, the run exited 130
    and its reports said it completed and passed. They are written again, saying interrupted."""
    real = junit.render

    def signalled(res):
        interrupts.handler(signal.SIGTERM, None)        # as the signal would, at this instruction
        return real(res)
    monkeypatch.setattr(junit, "render", signalled)
    r = CliRunner().invoke(main, [*ARGS, "--out", str(tmp_path)])
    assert r.exit_code == 143, r.output
    (folder,) = tmp_path.iterdir()
    meta = _meta(folder)
    assert meta["interrupted"] is True
    head = (folder / "summary.md").read_text().splitlines()[0]
    assert "stopped early: interrupted while the reports were written (all " in head, head
    assert "stopped" in (folder / "junit.xml").read_text()
    assert "resume with:" in r.output


def test_a_second_signal_does_not_cut_the_reports_short(tmp_path, monkeypatch):
    """Before: a second SIGTERM/SIGINT 0.3 s after the first ended the run with click's "Aborted!",
    exit 1, and no summary.md or junit.xml. Later signals are recorded, never raised."""
    real_case, real_junit = parity.run.engine.run_case, junit.render
    calls = []

    def interrupted(case, executor, device=""):
        calls.append(case.id)
        if len(calls) == 5:
            interrupts.handler(signal.SIGINT, None)     # the first: raises KeyboardInterrupt
        return real_case(case, executor, device)

    def again(res):
        interrupts.handler(signal.SIGTERM, None)        # the second, mid-reports: only recorded
        return real_junit(res)
    monkeypatch.setattr(parity.run.engine, "run_case", interrupted)
    monkeypatch.setattr(junit, "render", again)
    r = CliRunner().invoke(main, [*ARGS, "--out", str(tmp_path)])
    assert r.exit_code == 130, r.output                 # the first signal's code
    assert "Aborted" not in r.output
    (folder,) = tmp_path.iterdir()
    assert (folder / "summary.md").is_file() and (folder / "junit.xml").is_file()
    assert _meta(folder)["interrupted"] is True and "4 finished case(s) kept" in r.output


def _run_until_running(tmp_path: Path, **env) -> tuple[subprocess.Popen, Path]:
    """`parity run --sweep pr --levels cpu` with 4 preparing workers, once its first rows are journalled."""
    env = {**os.environ, "PARITY_PREPARE_JOBS": "4", "PARITY_CACHE_DIR": str(tmp_path / "cache"), **env}
    p = subprocess.Popen([sys.executable, "-m", "parity", "run", "--sweep", "pr", "--levels", "cpu", "-q",
                          "--out", str(tmp_path / "out")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        journals = list((tmp_path / "out").glob("*/results.partial.jsonl"))
        if journals and journals[0].stat().st_size > 0:
            return p, journals[0].parent
        time.sleep(0.05)
    p.kill()
    raise AssertionError("the run never started")


@pytest.mark.parametrize("first,second,code", [(signal.SIGINT, signal.SIGTERM, 130), (signal.SIGTERM, signal.SIGTERM, 143)])
def test_signals_to_the_process_group_print_no_worker_traceback(tmp_path, first, second, code):
    """Before: SIGINT to the process group printed `Process ForkServerProcess-1: Traceback ...
    KeyboardInterrupt` from each preparing worker, and SIGTERM a SemLock FileNotFoundError traceback
    (or hung the run: a worker killed mid-send leaves concurrent.futures' pool waiting forever)."""
    p, folder = _run_until_running(tmp_path)
    os.killpg(p.pid, first)
    time.sleep(0.3)
    try:
        os.killpg(p.pid, second)
    except ProcessLookupError:                          # (it had finished already)
        pass
    out, _ = p.communicate(timeout=60)
    assert p.returncode == code, out
    assert "Traceback" not in out and "Error" not in out and "Aborted" not in out, out
    assert (folder / "summary.md").is_file() and (folder / "junit.xml").is_file()
    assert _meta(folder)["interrupted"] is True


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.6, 1.0, 1.4, 1.8, 2.2])
def test_ctrl_c_at_any_moment_of_the_start_prints_no_traceback(tmp_path, delay):
    """While parity imports, makes the run folder, starts the forkserver (whose own imports take a
    second or two) and its workers: exit 130, nothing else said but the interrupt."""
    env = {**os.environ, "PARITY_PREPARE_JOBS": "4", "PARITY_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.Popen([sys.executable, "-m", "parity", "run", "--sweep", "pr", "--levels", "cpu", "-q",
                          "--out", str(tmp_path / "out")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    time.sleep(delay)
    os.killpg(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    assert "Traceback" not in out and "Error" not in out, out


def test_a_preparing_worker_that_dies_is_an_answer_not_a_hang():
    """A worker killed mid-chunk (SIGTERM, the OOM killer) closes its pipe: the parent's wait for its
    answer ends at once (concurrent.futures' pool waited forever on a half-written result)."""
    from parity.executors.worker import context
    from parity.run.cases import load_sweep
    pool = parity.run.engine._Preparers(context("forkserver"), 2)
    try:
        cases = load_sweep("smoke")[:64]
        pool.ask(0, cases[:32])
        assert len(pool.result(0)) == 32
        pool.ask(2, cases[32:])
        proc, _ = pool.workers[0]
        proc.kill()
        proc.join(10)
        t0 = time.monotonic()
        with pytest.raises((EOFError, OSError)):
            pool.result(2)
        assert time.monotonic() - t0 < 5
    finally:
        pool.close()


def test_the_forkserver_starts_deaf_to_ctrl_c_while_parity_keeps_hearing_it(monkeypatch):
    """The server's interpreter starts with SIGINT ignored (no KeyboardInterrupt traceback from its
    imports), while this process's disposition and mask stay as they are: a Ctrl-C that comes meanwhile,
    whichever thread the kernel hands it to, reaches parity (ignored here for the start, one handed to
    an OpenBLAS thread was dropped and the run went on to exit 0)."""
    from multiprocessing import forkserver, util

    from parity.executors.worker import quiet_forkserver
    seen = {}

    def start():                      # forkserver.ensure_running in short: an interpreter through util
        seen["handler"], seen["blocked"] = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])
        r, w = os.pipe()
        code = f"import os, signal; os.write({w}, repr(signal.getsignal(signal.SIGINT)).encode())"
        pid = util.spawnv_passfds(os.fsencode(sys.executable), [sys.executable, "-c", code], [w])
        os.close(w)
        seen["server"] = os.read(r, 200).decode()
        os.close(r)
        os.waitpid(pid, 0)
    monkeypatch.setattr(forkserver, "ensure_running", start)
    before, spawn = signal.getsignal(signal.SIGINT), util.spawnv_passfds
    quiet_forkserver()
    assert seen["server"] == "<Handlers.SIG_IGN: 1>"
    assert seen["handler"] is before and signal.SIGINT not in seen["blocked"]
    assert util.spawnv_passfds is spawn and signal.getsignal(signal.SIGINT) is before


def test_an_interrupt_raised_inside_exec_d_source_still_exits_130(tmp_path):
    """CPython 3.11 marks a KeyboardInterrupt raised inside exec'd source (a dataclass's methods,
    built while a module imports) as unhandled even when the command handles it, and its exit from
    `python -m` then re-raises SIGINT: the process ended -2 right after `interrupted (Ctrl-C)` (CI, 1 run
    in 4 at a Ctrl-C 0.6-1.0 s into a run)."""
    (tmp_path / "fake_parity.py").write_text(
        "import os, signal, sys\n"
        "import parity.cli.main as cli\n"
        "from parity import __main__ as entry_point\n"
        "from parity.core import interrupts\n"
        "def command(prog_name):\n"
        "    previous = interrupts.install()\n"
        "    try:\n"
        "        exec('import os, signal, time\\nos.kill(os.getpid(), signal.SIGINT)\\ntime.sleep(5)')\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', flush=True)\n"
        "        sys.exit(130)\n"
        "    finally:\n"
        "        interrupts.done(previous)\n"
        "cli.main = command\n"
        "entry_point.entry()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "fake_parity"], capture_output=True, text=True, timeout=60, env=env)
    assert (r.returncode, r.stdout.strip()) == (130, "interrupted"), r.stderr


def test_without_a_shell_the_forkserver_still_starts(monkeypatch):
    """An image without /bin/sh (a distroless CI container): the server starts as multiprocessing
    starts it, not through the shell that would not be there."""
    from multiprocessing import forkserver, util

    import parity.executors.worker as worker
    calls = []
    monkeypatch.setattr(forkserver, "ensure_running", lambda: calls.append(util.spawnv_passfds))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if p == "/bin/sh" else real_access(p, m))
    spawn = util.spawnv_passfds
    worker.quiet_forkserver()
    assert calls == [spawn]
