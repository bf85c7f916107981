"""A compile cache folder that cannot be written (PARITY_CACHE_DIR read-only, a file, a full disk)
costs compile time, never the check: hits are still served, misses compile into a private scratch
folder, with one warning line. (`parity compile` once ended in a PermissionError traceback.)"""
from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import parity.suite.compile_cache as cc
from parity.cli.main import main

GOOD = Path(__file__).parent / "fixtures" / "suites" / "good"


def _builder(calls: list):
    def build(out: Path):
        calls.append(out)
        out.write_bytes(b"binary")
        return 0, "log"
    return build


def test_unwritable_cache_compiles_uncached_with_one_warning(tmp_path, monkeypatch, capsys):
    root = tmp_path / "not-a-folder"
    root.write_text("")                                    # mkdir under it: NotADirectoryError
    calls: list = []
    first = cc.cached_build("ab" * 32, _builder(calls), root=root)
    second = cc.cached_build("cd" * 32, _builder(calls), root=root)
    assert first.ok and second.ok and first.read() == b"binary" and len(calls) == 2
    assert not first.binary.is_relative_to(root)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: compile cache {root} cannot be written")


def test_read_only_cache_still_serves_its_hits(tmp_path, monkeypatch, capsys):
    calls: list = []
    key = "ef" * 32
    assert cc.cached_build(key, _builder(calls), root=tmp_path).ok      # filled while writable

    locked = cc._locked

    def read_only(path):                                # the cache's folder only, not the scratch one
        if Path(path).is_relative_to(tmp_path):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return locked(path)
    monkeypatch.setattr(cc, "_locked", read_only)
    hit = cc.cached_build(key, _builder(calls), root=tmp_path)
    assert hit.cached and len(calls) == 1 and capsys.readouterr().err == ""
    miss = cc.cached_build("01" * 32, _builder(calls), root=tmp_path)
    assert miss.ok and len(calls) == 2
    assert "Read-only file system" in capsys.readouterr().err


@pytest.mark.slow                                       # a real hipcc compile: ~6 s on 2 cores
@pytest.mark.skipif(not shutil.which("hipcc"), reason="needs hipcc")
def test_compile_with_an_unwritable_cache_dir_warns_and_has_no_traceback(tmp_path, monkeypatch):
    blocked = tmp_path / "cache"
    blocked.write_text("")
    monkeypatch.setenv("PARITY_CACHE_DIR", str(blocked))
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(GOOD), "--amd-arch", "gfx90a"])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)
    assert r.output.count("warning: compile cache") == 1
    assert "0 compile errors" in r.output


def test_environment_folders_expand_home_and_flags_read_off_values(monkeypatch, tmp_path):
    """PARITY_CACHE_DIR='~/c' (a CI env: block does not expand it) made a folder named `~` where the
    command ran; PARITY_FORCE_RECOMPILE=0 forced recompiles (bool("0"))."""
    from parity.core import env
    from parity.suite.compile_cache import cache_dir
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PARITY_CACHE_DIR", "~/c")
    assert cache_dir() == tmp_path / "c"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARITY_CACHE_DIR", "rel")
    assert cache_dir() == tmp_path / "rel"
    for off in ("", "0", "false", "No", " off "):
        monkeypatch.setenv("PARITY_FORCE_RECOMPILE", off)
        assert not env.flag("PARITY_FORCE_RECOMPILE")
    monkeypatch.setenv("PARITY_FORCE_RECOMPILE", "1")
    assert env.flag("PARITY_FORCE_RECOMPILE")
