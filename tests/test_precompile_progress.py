"""Compiling is shown like running: a progress task per level with files done/total and the
slowest file, and only the files the selected kernels need are compiled (issue #21)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.console import Console

from parity.executors.base import Availability
from parity.executors.hip_nvidia import HipOnNvidiaExecutor
from parity.run.levels import Level
from parity.render.terminal import progress

GOOD = Path(__file__).parent / "fixtures" / "suites" / "good"


class Recorder:
    """A Progress stand-in that records tasks and updates."""

    def __init__(self):
        self.tasks, self.updates = {}, []

    def add_task(self, description, total, **fields):
        self.tasks[len(self.tasks)] = (description, total)
        return len(self.tasks) - 1

    def update(self, task, advance=0, **fields):
        self.updates.append((task, advance, fields.get("status", "")))


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_precompile_shows_files_done_and_the_slowest(tmp_path: Path):
    suite = tmp_path / "suite"
    shutil.copytree(GOOD, suite)
    (suite / "other.hip").write_text('#include <hip/hip_runtime.h>\nextern "C" __global__ void uexp_f32(size_t n) {}\n')
    probe = HipOnNvidiaExecutor(suite, arch="90", compiler="nvcc", cache_root=tmp_path / "cache")
    rec = Recorder()
    Level("hip-on-nvidia", Availability(True), None, probe).precompile({"uneg_f32"}, rec)
    assert rec.tasks == {0: ("compile hip-on-nvidia", 1)}            # only good.hip defines uneg_f32
    assert [(t, a) for t, a, _ in rec.updates] == [(0, 1)]
    assert rec.updates[0][2].startswith("slowest good.hip ")
    assert set(probe._compiled) == {suite / "good.hip"}


def test_no_probe_or_no_files_shows_nothing():
    rec = Recorder()
    Level("cpu", Availability(True), None, None).precompile({"uneg_f32"}, rec)
    assert rec.tasks == {} and rec.updates == []


def test_the_real_progress_accepts_the_compile_task():
    with progress(Console(file=open("/dev/null", "w"))) as prog:
        t = prog.add_task("compile hip-on-nvidia", total=2, status="")
        prog.update(t, advance=1, status="slowest unary.hip 33.4 s")
