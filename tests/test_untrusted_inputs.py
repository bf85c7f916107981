"""Issue #29: untrusted ports and damaged files. parity writes nowhere it was not asked to, never
hangs on a FIFO, and answers bad input with one line (exit 2), never a traceback."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli import main

KERNEL = 'extern "C" __global__ void uneg_f32(const size_t n, const float *x, float *y) {}\n'


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _one_line_error(r, needle: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    assert needle in lines[0], lines[0]


# ------------------------------------------------------------------- 1. suite discovery
def _planted_suite(tmp_path: Path, escape: Path) -> Path:
    """A suite whose source includes an absolute path and a ../ path that do not exist, under
    `escape` (a folder outside the suite, the cache and the temp folder)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    deep = "../" * 12
    (suite / "k.hip").write_text(textwrap.dedent(f'''\
        #include "{escape}/abs/x.h"
        #include <{deep}{str(escape).lstrip("/")}/rel/y.h>
        #include "../../../../planted/z.h"
        ''') + KERNEL)
    return suite


def _discover_in_subprocess(suite: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    code = ("import sys; from parity.suite import discover; s = discover(sys.argv[1]); "
            "print(sorted(s.kernels)); print(s.notes)")
    return subprocess.run([sys.executable, "-c", code, str(suite)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_discovery_writes_no_stub_outside_its_temp_folder(tmp_path):
    escape = tmp_path / "outside"
    escape.mkdir()
    suite = _planted_suite(tmp_path, escape)
    work = tmp_path / "cwd"
    work.mkdir()
    env = {**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache")}
    before = {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c",
                        "import sys; from parity.suite import discover; s = discover(sys.argv[1]); "
                        "print(sorted(s.kernels)); print(s.notes)", str(suite)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=work)
    assert p.returncode == 0, p.stderr
    after = {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "cache")}
    assert after == before                       # nothing under outside/, cwd/ or the suite
    assert not (tmp_path / "planted").exists()
    assert "uneg_f32" in p.stdout                # the literal declaration is still found
    assert "is not stubbed" in p.stdout


def test_parity_compile_does_not_pass_against_planted_stub_headers(tmp_path):
    """Before the fix, discovery left empty headers at the absolute path and `parity compile` said ok."""
    escape = tmp_path / "outside"
    escape.mkdir()
    suite = _planted_suite(tmp_path, escape)
    invoke("coverage", "--hip-src", str(suite))
    assert list(escape.iterdir()) == []


def test_a_fifo_header_is_refused_not_read(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    os.mkfifo(suite / "pipe.h")
    os.mkfifo(suite / "pipe.hip")
    (suite / "k.hip").write_text('#include "pipe.h"\n' + KERNEL)
    env = {**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache")}
    p = _discover_in_subprocess(suite, env, timeout=60)   # a read of the FIFO would block: TimeoutExpired
    assert p.returncode == 0, p.stderr
    assert "uneg_f32" in p.stdout
    assert "pipe.h is a FIFO, not a regular file: refused (not opened)" in p.stdout
    assert "pipe.hip is a FIFO, not a regular file: refused (not opened)" in p.stdout


def test_an_absolute_device_include_is_refused(tmp_path):
    from parity.compile_cache import include_walk
    src = tmp_path / "k.hip"
    src.write_text('#include "/dev/zero"\n' + KERNEL)
    headers, refused = include_walk(src)
    assert headers == [] and refused == [f"{src}: #include '/dev/zero': /dev/zero is a character device, "
                                         "not a regular file: refused (not opened)"]


def test_compile_source_refuses_a_source_reaching_a_fifo(tmp_path):
    from parity.compile_cache import compile_source
    os.mkfifo(tmp_path / "pipe.h")
    src = tmp_path / "k.hip"
    src.write_text('#include "pipe.h"\n' + KERNEL)
    r = compile_source(src, [sys.executable], [], cache_root=tmp_path / "cache")
    assert not r.ok and "pipe.h is a FIFO" in r.error.message


def test_stub_path_never_leaves_the_stub_folder(tmp_path):
    from parity.suite import stub_path
    assert stub_path(tmp_path, "/etc/x.h") is None
    assert stub_path(tmp_path, "../../../../../x.h") is None
    assert stub_path(tmp_path, "../../x.h") == tmp_path / "i" / "i" / "x.h"
    assert stub_path(tmp_path, "a/b.h").is_relative_to(tmp_path)
