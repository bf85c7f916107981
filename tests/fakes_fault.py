"""A GPU level whose kernels fault on chosen code paths, for the fault-path tests (no GPU): the cpu
level run in an isolated worker, where a launch on a faulting path crashes, kills its process or
hangs, as a null-input dereference does on a real GPU. Every launch is logged to a file, so a test
counts launches across worker restarts."""
from __future__ import annotations

import os
import time

from parity.executors.cpu import CpuExecutor
from parity.ops.base import ExecResult, Launch


def path_of(launch: Launch) -> str:
    """The code path a unary launch takes: null input (in place), empty (numel 0) or other."""
    if any(a.kind == "ptr" and a.value is None for a in launch.args):
        return "inplace"
    return "empty" if launch.args and launch.args[0].kind == "size_t" and launch.args[0].value == 0 else "other"


class PathFaults(CpuExecutor):
    """The cpu level, but a launch on one of `paths` faults the way `mode` says: `crash` (the
    context is lost: the worker answers crash, and every later launch in it fails at once without
    running, as CUDA's sticky error does), `contained` (crash, the executor stays usable: for a
    test without a worker process), `exit` (the worker process dies), `hang`."""
    level = "fake-gpu"

    def __init__(self, log: str, paths: tuple[str, ...] = ("inplace",), mode: str = "crash"):
        super().__init__()
        self.log, self.paths, self.mode = log, paths, mode
        self.lost = False

    def run(self, launch: Launch) -> ExecResult:
        if self.lost:
            return ExecResult("crash", message="context lost by an earlier launch")
        path = path_of(launch)
        with open(self.log, "a") as f:
            f.write(f"{launch.kernel} {path}\n")
        if path in self.paths:
            if self.mode == "exit":
                os._exit(3)
            if self.mode == "hang":
                time.sleep(60)
            self.lost = self.mode != "contained"
            return ExecResult("crash", message=f"{launch.kernel}: illegal address (null input)")
        return super().run(launch)


def launches(log) -> list[tuple[str, str]]:
    """(kernel, path) of every launch the workers made, in order."""
    return [tuple(line.split()) for line in open(log).read().splitlines()] if os.path.exists(log) else []
