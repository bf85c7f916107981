"""A scripted executor for the worker-process tests: the kernel name says what a launch does."""
from __future__ import annotations

import os
import time

import numpy as np

from parity.executors.base import Availability, Executor
from parity.ops.base import Arg, ExecResult, Launch


class Scripted(Executor):
    """ok*: out = 2 * x; die*: the process exits; hang*: sleeps; lost*: answers `crash` (context
    gone); missing*: prepare answers `missing`. Every answer names the worker's pid."""
    level = "fake"

    def availability(self) -> Availability:
        return Availability(True, device="scripted")

    def prepare(self, kernel: str) -> ExecResult | None:
        return ExecResult("missing", message=f"no {kernel}") if kernel.startswith("missing") else None

    def run(self, launch: Launch) -> ExecResult:
        k = launch.kernel
        if k.startswith("die"):
            os._exit(3)
        if k.startswith("hang"):
            time.sleep(60)
        if k.startswith("lost"):
            return ExecResult("crash", message="context lost")
        return ExecResult("ok", {"out": 2 * launch.buffers["x"]}, message=str(os.getpid()))


def launch(kernel: str, value: float) -> Launch:
    x = np.full(4, value, np.float32)
    return Launch(kernel, [Arg("ptr", ("x", 0))], {"x": x}, (), (1, 1, 1))


class SlowStart(Scripted):
    """Scripted, with a start-up (process, imports, context) that takes START_S seconds."""
    START_S = 1.5

    def warm(self) -> None:
        time.sleep(self.START_S)


class FromFile(Scripted):
    """Scripted, whose ok* launches answer the number in `path` as it was when the executor was
    made: a suite whose code is read once, as an executor loads its modules."""

    def __init__(self, path: str):
        self.value = float(open(path).read())

    def run(self, launch: Launch) -> ExecResult:
        res = super().run(launch)
        return ExecResult("ok", {"out": np.full(4, self.value, np.float32)}, message=res.message) \
            if res.status == "ok" else res


class FailsNeg(Executor):
    """The cpu level, but `uneg_*` kernels answer all zeros: a killed-mutant stand-in whose later
    answers must still be its own (pipelined launches drained after the kill)."""
    level = "cpu"

    def __init__(self):
        from parity.executors.cpu import CpuExecutor
        self.cpu = CpuExecutor()

    def availability(self) -> Availability:
        return Availability(True, device="cpu")

    def run(self, launch: Launch) -> ExecResult:
        res = self.cpu.run(launch)
        if launch.kernel.startswith("uneg_") and res.status == "ok":
            res.outputs = {n: np.zeros_like(a) for n, a in res.outputs.items()}
        return res


class SuiteCpu(Executor):
    """The cpu level built as a suite level is (suite_dir=...): parity mutate's GpuRunner on a
    machine without a GPU. Mutants change no CPU result, so every one survives."""
    level = "cpu"

    def __init__(self, suite_dir=None):
        from parity.executors.cpu import CpuExecutor
        self.cpu = CpuExecutor()

    def availability(self) -> Availability:
        return Availability(True, device="cpu")

    def run(self, launch: Launch) -> ExecResult:
        return self.cpu.run(launch)
