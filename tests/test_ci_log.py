"""Under GitHub Actions no text a port controls becomes a workflow command in parity's output, and
parity's own annotations still do (parity.core.ci_log)."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from parity.core.ci_log import MARK, GuardedStream

ROOT = Path(__file__).resolve().parents[1]


def commands(text: str) -> list[str]:
    """The lines GitHub's runner would take as commands: lines end at \\n, \\r or \\r\\n; a command
    starts with `::` after leading whitespace, or holds `##[` anywhere (its older form)."""
    return [ln for ln in re.split(r"\r\n|\r|\n", text) if ln.lstrip().startswith("::") or "##[" in ln]


def through_guard(*writes: str) -> str:
    inner = io.StringIO()
    g = GuardedStream(inner)
    for w in writes:
        g.write(w)
    g.flush()
    return inner.getvalue()


@pytest.mark.parametrize("writes", [
    ("::error::x\n",), ("  ::error title=t::x\n",), ("\t::add-mask::secret",),
    (" :", ":error::x\n"), (":", ":stop-commands::tok\n"),
    ("a\r::error::x\n",), ("a\r\n::error::x\r\n",), ("ab", "\n", "::warning::y"),
    ("ok ##[error]x\n",), ("#", "#[error]x\n"), ("##", "[error]x\n"), ("x#", "#", "[add-mask]y\n"),
])
def test_guard_leaves_no_command_and_the_text_as_it_was(writes):
    out = through_guard(*writes)
    assert commands("".join(writes)), "the case must hold a command unguarded"
    assert commands(out) == []
    assert out.replace(MARK, "") == "".join(writes)


@pytest.mark.parametrize("start", ["  ", " :", ":"])
def test_a_line_start_flushed_before_its_end_is_no_command_either(start):
    inner = io.StringIO()
    g = GuardedStream(inner)
    g.write(start)
    g.flush()                                        # a prompt, a progress line: written as it stands
    g.write(":error::x\n")
    assert commands(inner.getvalue()) == []


@pytest.mark.parametrize("text", ["plain line\n", "a: b :: c\n", "x ## [y]\n", "progress 3/10\r", "# heading\n"])
def test_guard_leaves_ordinary_text_alone(text):
    assert through_guard(text) == text


def test_parity_commands_pass_the_guard_on_their_own_line():
    inner = io.StringIO()
    g = GuardedStream(inner)
    g.write("partial line")
    g.command("::error title=parity::mine")
    g.write("::error::theirs\n")
    assert commands(inner.getvalue()) == ["::error title=parity::mine"]


def test_click_and_rich_write_through_the_guard(monkeypatch):
    import click
    from rich.console import Console
    inner = io.StringIO()
    monkeypatch.setattr(sys, "stdout", GuardedStream(inner))
    click.echo("::error::from click")
    Console(width=60).print("::error::from rich", markup=False)
    assert commands(inner.getvalue()) == []
    assert "from click" in inner.getvalue() and "from rich" in inner.getvalue()


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GITHUB_ACTIONS="true", HIP_PLATFORM="amd", COLUMNS="100", **extra)
    return env


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc (ROCm) not installed")
def test_compiler_messages_quoting_a_source_line_make_no_command(tmp_path):
    port = tmp_path / "port"
    shutil.copytree(ROOT / "backends" / "hip", port, ignore=lambda d, names: [
        n for n in names if n.endswith(".hip") and n != "ucopy.hip"])
    with (port / "ucopy.hip").open("a") as f:
        f.write("\n::error title=Injected::from a source line\n##[warning]the older form\n")
    r = subprocess.run([sys.executable, "-m", "parity", "compile", "--hip-src", str(port), "--amd-arch", "gfx90a"],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 1, r.stderr[-2000:]
    assert "Injected" in r.stdout                   # the compiler's message is shown
    assert commands(r.stdout) == [] and commands(r.stderr) == []


def test_run_annotations_still_reach_the_runner(tmp_path):
    r = subprocess.run([sys.executable, "-m", "parity", "run", "--levels", "cpu", "--ops", "unary.exp",
                        "--dtypes", "f32", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, env=_env(), timeout=600)
    found = commands(r.stdout)
    assert found and all(re.match(r"::(warning|error|notice) title=parity", ln) for ln in found), r.stdout[-3000:]


def test_a_kernel_process_s_own_descriptors_are_guarded_too():
    """A port's kernel prints through device printf, straight to descriptor 1 of the worker that runs
    it (past sys.stdout); so do native libraries and child processes there."""
    code = ("import os, sys\n"
            "from parity.core import ci_log\n"
            "ci_log.guard_fds()\n"
            "os.write(1, b'::error::from printf\\n')\n"
            "os.system('echo \"##[warning]from a child\" 1>&2')\n"
            "print('::notice::from python', flush=True)\n"
            "os.write(1, b'tail without newline ::')\n"
            "import ctypes; ctypes.CDLL(None).printf(b'\\n::error::from C stdio, flushed at exit\\n')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    assert commands(r.stdout) == [] and commands(r.stderr) == []
    assert r.stdout.replace(MARK, "") == ("::error::from printf\n::notice::from python\ntail without newline ::"
                                          "\n::error::from C stdio, flushed at exit\n")
    assert r.stderr.replace(MARK, "") == "##[warning]from a child\n"
