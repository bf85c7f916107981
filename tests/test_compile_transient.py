"""A compile that did not finish says nothing of its source: it is never cached (a Ctrl-C, the OOM
killer, a timeout or a broken TMPDIR once made a file `compile-error` for every later run), a hung
compiler is killed with everything it started, and `parity compile` that compiled nothing is no pass."""
from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.executors.preflight import compile_failure
from parity.suite import compile_cache as cc
from parity.suite.compile_cache import compile_source


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))


def _compiler(tmp_path: Path, body: str, name: str = "cc") -> Path:
    """A fake compiler: `body` is Python run with the output path as `out` (its --version answer: none)."""
    f = tmp_path / name
    f.write_text(f"#!{sys.executable}\nimport os, signal, subprocess, sys, time\nout = sys.argv[-1]\n"
                 f"if out != '--version':\n" + "".join(f"    {line}\n" for line in body.splitlines()))
    f.chmod(0o755)
    return f


def _source(tmp_path: Path) -> Path:
    """A source of its own (the cache key is folder-free: the same text in another test's folder hits)."""
    src = tmp_path / "k.hip"
    src.write_text(f"// {tmp_path.name}\nint k;\n")
    return src


@pytest.mark.parametrize("failure", [
    "os.kill(os.getpid(), signal.SIGKILL)",                                    # the OOM killer
    "print('hipcc: child died with signal 2, without coredump'); sys.exit(2)",  # Ctrl-C under hipcc.pl
    "print('clang: error: unable to make temporary file: No such file or directory'); sys.exit(1)",
    "sys.exit(1)",                                                             # not a word
    "print('nvcc: Terminated'); sys.exit(255)",                                # nvcc under SIGTERM
])
def test_a_compile_that_did_not_finish_is_compiled_again_next_time(tmp_path, failure):
    flag = tmp_path / "failed-once"
    comp = _compiler(tmp_path, f"if not os.path.exists({str(flag)!r}):\n"
                               f"    open({str(flag)!r}, 'w').close()\n    {failure}\n"
                               "open(out, 'w').write('obj')")
    src = _source(tmp_path)
    first = compile_source(src, [str(comp)], [])
    assert not first.ok and "not cached" in first.error.message
    second = compile_source(src, [str(comp)], [])
    assert second.ok and not second.cached and second.read() == b"obj"


def test_a_real_compile_error_is_still_cached(tmp_path):
    comp = _compiler(tmp_path, "print('k.hip:1:1: error: unknown type name'); sys.exit(1)")
    src = _source(tmp_path)
    assert not compile_source(src, [str(comp)], []).ok
    again = compile_source(src, [str(comp)], [])
    assert not again.ok and again.cached and "unknown type name" in again.error.message
    assert not again.timed_out and compile_failure(src, again).status == "compile-error"


def test_an_empty_output_is_no_object(tmp_path):
    comp = _compiler(tmp_path, "open(out, 'w').close()")
    r = compile_source(_source(tmp_path), [str(comp)], [])
    assert not r.ok and "not cached" in r.error.message


def _hanging(tmp_path: Path, pidfile: Path) -> Path:
    """A driver that starts a child holding its output pipe (as hipcc's perl -> clang), then waits."""
    return _compiler(tmp_path, f"c = subprocess.Popen(['sleep', '300'])\n"
                               f"open({str(pidfile)!r}, 'w').write(str(c.pid))\nc.wait()")


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_a_timeout_kills_the_compiler_and_what_it_started(tmp_path, monkeypatch):
    pidfile = tmp_path / "child.pid"
    comp = _hanging(tmp_path, pidfile)
    monkeypatch.setenv("PARITY_COMPILE_TIMEOUT", "2")
    t0 = time.monotonic()
    r = compile_source(_source(tmp_path), [str(comp)], [])
    assert time.monotonic() - t0 < 30                     # was: waited for the child's pipe for ever
    assert not r.ok and "timed out after 2 s" in r.error.message and r.timed_out
    v = compile_failure(_source(tmp_path), r)        # slow is not wrong: not checked here, neither pass nor fail
    assert v.status == "unavailable" and "compiler timed out after 2 s: not checked here" in v.message
    assert "PARITY_COMPILE_TIMEOUT=<seconds> raises the limit" in v.message
    child = int(pidfile.read_text())
    for _ in range(50):
        if _gone(child):
            break
        time.sleep(0.1)
    assert _gone(child)
    assert not compile_source(_source(tmp_path), [str(_compiler(tmp_path, "open(out, 'w').write('o')", "cc2"))],
                              []).cached


def test_the_first_signal_stops_every_running_compiler(tmp_path):
    pidfile = tmp_path / "child.pid"
    comp = _hanging(tmp_path, pidfile)
    done = []
    t = threading.Thread(target=lambda: done.append(compile_source(_source(tmp_path), [str(comp)], [])))
    t.start()
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.1)
    cc.kill_compilers()                                   # what interrupts.handler calls on the first signal
    t.join(30)
    assert not t.is_alive() and not done[0].ok


def test_the_driver_s_environment_is_part_of_the_key(tmp_path, monkeypatch):
    comp = _compiler(tmp_path, "open(out, 'w').write(os.environ.get('HIPCC_COMPILE_FLAGS_APPEND', ''))")
    src = _source(tmp_path)
    monkeypatch.delenv("HIPCC_COMPILE_FLAGS_APPEND", raising=False)
    a = compile_source(src, [str(comp)], [])
    monkeypatch.setenv("HIPCC_COMPILE_FLAGS_APPEND", "-include broken.h")
    b = compile_source(src, [str(comp)], [])
    assert a.key != b.key and not b.cached and b.read() == b"-include broken.h"


def test_a_damaged_entry_is_a_miss(tmp_path):
    comp = _compiler(tmp_path, "open(out, 'w').write('o')")
    src = _source(tmp_path)
    first = compile_source(src, [str(comp)], [])
    meta = cc.cache_dir() / first.key[:2] / first.key / "meta.json"
    meta.write_text("[1, 2]")
    again = compile_source(src, [str(comp)], [])
    assert again.ok and not again.cached


def test_no_home_puts_the_cache_under_the_temporary_folder(monkeypatch):
    monkeypatch.delenv("PARITY_CACHE_DIR")
    monkeypatch.setenv("HOME", "/")
    assert not str(cc.cache_dir()).startswith("/.cache")
    monkeypatch.setenv("HOME", "/nonexistent-parity-home")     # Debian's home of nobody: made by no one
    assert cc.cache_dir() == Path(tempfile.gettempdir()) / f"parity-cache-{os.getuid()}"
    assert not Path("/nonexistent-parity-home").exists()


def test_our_temporary_cache_folder_made_under_a_loose_umask_is_emptied_and_made_private(tmp_path, monkeypatch,
                                                                                      capsys):
    """An older parity made it with the umask (775 under 002): it was passed over on every run, forever."""
    monkeypatch.delenv("PARITY_CACHE_DIR")
    monkeypatch.setenv("HOME", "/")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ours = tmp_path / f"parity-cache-{os.getuid()}"
    (ours / "ab").mkdir(parents=True)
    (ours / "ab" / "planted").write_text("x")
    ours.chmod(0o775)
    assert cc.cache_dir() == ours and stat.S_IMODE(ours.stat().st_mode) == 0o700
    assert not (ours / "ab").exists() and capsys.readouterr().err == ""


@pytest.mark.parametrize("planted", ["link", "open", "file"])
def test_a_planted_temporary_cache_folder_is_passed_over(tmp_path, monkeypatch, capsys, planted):
    """With no home the cache's name under the shared temporary folder can be guessed: one made before
    us (a link to a folder of the planter's choice, a folder all may write, a file) was used, its entries
    served as hits and written through."""
    monkeypatch.delenv("PARITY_CACHE_DIR")
    monkeypatch.setenv("HOME", "/")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cc, "_WARNED", set())
    guessed = tmp_path / f"parity-cache-{os.getuid()}"
    if planted == "link":
        (tmp_path / "theirs").mkdir()
        guessed.symlink_to(tmp_path / "theirs")
    elif planted == "open":                    # ours but opened to all, and kept open (repair fails)
        guessed.mkdir()
        guessed.chmod(0o777)
        monkeypatch.setattr(cc.shutil, "rmtree", lambda *a, **k: None)
    else:
        guessed.write_text("")
    got = cc.cache_dir()
    assert got != guessed and got == cc._scratch_root()
    assert f"warning: compile cache {guessed} is " in capsys.readouterr().err


def test_the_temporary_cache_folder_is_made_private(tmp_path, monkeypatch):
    monkeypatch.delenv("PARITY_CACHE_DIR")
    monkeypatch.setenv("HOME", "/")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    got = cc.cache_dir()
    assert got == tmp_path / f"parity-cache-{os.getuid()}" and stat.S_IMODE(got.stat().st_mode) == 0o700
    assert cc.cache_dir() == got                   # ours now: used again


def test_parity_compile_that_compiled_nothing_exits_2(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    hipcc = bin_ / "hipcc"                    # answers --version, then dies on every compile
    hipcc.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'HIP version: fake'; exit 0; }\nkill -SEGV $$\n")
    hipcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "k.hip").write_text('extern "C" __global__ void uneg_f32(const size_t n, const float *x, float *y) {}\n')
    from parity.cli.main import main
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(suite), "--summary"])
    assert r.exit_code == 2, r.output
    assert "nothing was compiled" in r.output


def test_resume_sees_a_port_s_headers_outside_its_folder_change(tmp_path):
    """--port-include / --port-force-include name files outside --hip-src: run.json records them too,
    so that --resume refuses to keep verdicts of code that changed there."""
    import dataclasses
    from parity.run.session import Subject, source_record
    from parity.suite.port import load_port
    suite, ext = tmp_path / "suite", tmp_path / "ext"
    suite.mkdir()
    ext.mkdir()
    (suite / "k.hip").write_text('#include "port_extra.h"\n')
    (ext / "port_extra.h").write_text("#define PORT_EXTRA 1\n")
    (ext / "forced.h").write_text("// forced\n")
    (suite / "parity-port.toml").write_text('sources = ["*.hip"]\n')
    port = dataclasses.replace(load_port(suite / "parity-port.toml"), include_dirs=(ext,),
                               force_includes=(ext / "forced.h",))
    subj = Subject(suite, None, port, None, "", True)
    before = source_record(subj)
    (ext / "port_extra.h").write_text("#error broken\n")
    middle = source_record(subj)
    (ext / "forced.h").write_text("#error broken\n")
    assert before != middle != source_record(subj)


def test_a_cached_object_that_changed_is_compiled_again(tmp_path):
    comp = _compiler(tmp_path, "open(out, 'w').write('object')")
    src = _source(tmp_path)
    first = compile_source(src, [str(comp)], [])
    assert compile_source(src, [str(comp)], []).cached
    (cc.cache_dir() / first.key[:2] / first.key / "out.bin").write_bytes(b"obj")      # truncated
    again = compile_source(src, [str(comp)], [])
    assert again.ok and not again.cached and again.read() == b"object"


def test_a_compile_timeout_that_is_no_number_is_said_once(monkeypatch, capsys):
    from parity.suite import compile_cache
    monkeypatch.setattr(compile_cache, "_TIMEOUT_NOTED", set())
    monkeypatch.setenv("PARITY_COMPILE_TIMEOUT", "abc")
    assert compile_cache.compile_timeout() == compile_cache.compile_timeout() == compile_cache.DEFAULT_TIMEOUT
    assert capsys.readouterr().err == ("note: PARITY_COMPILE_TIMEOUT='abc' is not a positive number of seconds: "
                                       "using 1800\n")
    monkeypatch.setenv("PARITY_COMPILE_TIMEOUT", "90")
    assert compile_cache.compile_timeout() == 90.0 and capsys.readouterr().err == ""


def test_a_compile_that_fails_after_parity_got_a_signal_is_not_cached(tmp_path, monkeypatch):
    """The signal that stops parity stops its compilers too, which then fail in their own words
    (nvcc: rc 255): whatever they say, that failure is not the source's and is not kept."""
    from parity.core import interrupts
    comp = _compiler(tmp_path, "print('k.hip:1:1: error: something'); sys.exit(1)")
    monkeypatch.setattr(interrupts._S, "first", KeyboardInterrupt())
    r = compile_source(_source(tmp_path), [str(comp)], [])
    assert not r.ok and "not cached" in r.error.message
    monkeypatch.setattr(interrupts._S, "first", None)
    again = compile_source(_source(tmp_path), [str(comp)], [])
    assert not again.ok and not again.cached
