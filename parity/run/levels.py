"""Resolve level names to executors and say, for each, whether this machine can run it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from parity.executors.base import Availability, Compiling, Executor
from parity.executors.cpu import CpuExecutor
from parity.executors.pool import GpuPool
from parity.suite.port import Port
from parity.suite.scan import Suite

LEVELS = ("cpu", "hip-on-nvidia", "amd", "amd-static", "cuda")
# Levels that run only when named (not in `auto`): `cupy`, the CuPy reference / timing baseline;
# `hip-on-nvidia/w32`, hip-on-nvidia on 32-lane warps (`hip-on-nvidia` itself is wave 64, see
# parse_waves / expand_waves: `parity run --wave 32,64`).
EXTRA_LEVELS = ("cupy", "hip-on-nvidia/w32")
ALL_LEVELS = LEVELS + EXTRA_LEVELS

# What a level's rows say about the subject (the suite under test): `executes` its kernels,
# `compiles` them only, or runs the `reference` (the cpu level's NumPy emulation, CuPy): a run whose
# only rows are the reference's verified none of the subject's code (parity.render.outcome).
EXECUTES, COMPILES, REFERENCE = "executes", "compiles", "reference"
ROLES = {"cpu": REFERENCE, "cupy": REFERENCE, "amd-static": COMPILES, "hip-on-nvidia": EXECUTES,
         "hip-on-nvidia/w32": EXECUTES, "amd": EXECUTES, "cuda": EXECUTES}
# What each role proves, as every report says it.
PROVES = {
    REFERENCE: "the case machinery: layouts, `info` arrays and argument packing, computed with the reference's "
               "math (no kernel of the suite ran)",
    COMPILES: "that the suite's kernels exist with the ABI's parameter lists and compile for the AMD targets "
              "(none was executed)",
    EXECUTES: "the suite's kernels, executed and compared element by element with the reference",
}
# What it takes on a machine to check the subject's code at all (said when a run checks none of it).
WHAT_EXECUTES_IT = "an NVIDIA GPU with CuPy runs it (hip-on-nvidia), a ROCm GPU with hip-python (amd)"
_COMPILES_IT = "hipcc compiles it for AMD targets without a GPU (amd-static{})"
WHAT_RUNS_IT = f"{WHAT_EXECUTES_IT}, and " + _COMPILES_IT.format(": apt-get install hipcc libamdhip64-dev")
# the same in a report, which may be read on another machine than the one that ran (and one with hipcc
# that ran --levels cpu needs no install)
WHAT_WOULD_RUN_IT = (f"{WHAT_EXECUTES_IT}, and " + _COMPILES_IT.format("")
                     + "; `parity doctor` says which of them a machine has")


def role(name: str) -> str:
    """The role of a level name (a hip-on-nvidia wave variant is hip-on-nvidia's); a name parity does
    not know (a results file from elsewhere) executes nothing it can vouch for: the reference's."""
    return ROLES.get(name) or ROLES.get(name.split("/")[0], REFERENCE)


@dataclass
class Level:
    name: str
    availability: Availability
    executor: Executor | None
    probe: Executor | None = None     # in-process instance that answered availability (and compiles)

    def meta(self) -> dict:
        """The level as results.json's meta lists it."""
        return {"level": self.name, "available": self.availability.available, "reason": self.availability.reason,
                "device": self.availability.device, "role": role(self.name)}

    def prestart(self) -> None:
        """Start the level's worker process (not for --gpus pools: their workers start in their
        own drive processes) so it warms up while the run compiles and prepares."""
        from parity.executors.worker import IsolatedExecutor
        if isinstance(self.executor, IsolatedExecutor):
            self.executor.prestart()

    def precompile(self, kernels, progress=None) -> None:
        """Compile, in parallel and before the launch worker starts, the suite files these kernels
        need (and only those). progress: a rich Progress (or parity.render.terminal's plain one)
        that gets a task "compile LEVEL": files done/total and the slowest file so far."""
        if not isinstance(self.probe, Compiling):
            return
        sources = self.probe.sources_for(kernels)
        if not sources:
            return
        import time
        task = progress.add_task(f"compile {self.name}", total=len(sources), status="") if progress else None
        t0, slowest = time.perf_counter(), ("", 0.0)

        def done(src, res) -> None:
            nonlocal slowest
            took = 0.0 if res.cached else res.seconds or time.perf_counter() - t0
            if took >= slowest[1]:
                slowest = (Path(src).name, took)
            if progress is not None:
                failed = "" if res.ok else f" [red]{Path(src).name} failed[/]"
                progress.update(task, advance=1, status=f"slowest {slowest[0]} {slowest[1]:.1f} s{failed}"
                                if slowest[1] else failed)
        self.probe.precompile(sources, on_done=done)


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries."""
    import os
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip()]
    try:
        import cupy
        return [str(i) for i in range(cupy.cuda.runtime.getDeviceCount())]
    except Exception:
        return []


def resolve_gpus(spec: str | int | None) -> list[str]:
    """--gpus all|N -> the CUDA_VISIBLE_DEVICES entry of each worker ([] = one unpinned worker)."""
    if spec in (None, "", "1", 1):
        return []
    ids = visible_gpus()
    if str(spec) == "all":
        return ids if len(ids) > 1 else []
    try:
        n = int(spec)
    except ValueError:
        raise ValueError(f"--gpus {spec!r}: expected 'all' or a number of GPUs (e.g. 2)") from None
    if n < 1:
        raise ValueError(f"--gpus {spec!r}: expected 'all' or a number of GPUs, at least 1")
    if n > len(ids):
        raise ValueError(f"--gpus {n}: only {len(ids)} GPU(s) visible")
    return ids[:n] if n > 1 else []


def parse_waves(spec: str | int | None) -> list[int]:
    """--wave 64|32|32,64 -> [64], [32], [32, 64] (each 32 or 64, no repeats)."""
    if spec in (None, ""):
        return [64]
    out: list[int] = []
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        if part not in ("32", "64"):
            raise ValueError(f"--wave takes 32, 64 or 32,64, not {spec!r}")
        if int(part) not in out:
            out.append(int(part))
    if not out:
        raise ValueError(f"--wave takes 32, 64 or 32,64, not {spec!r}")
    return out


def expand_waves(names: list[str], waves: list[int]) -> list[str]:
    """Level names with `hip-on-nvidia` replaced by one level per wavefront size."""
    from parity.executors.hip_nvidia import hip_level_name
    out: list[str] = []
    for n in names:
        for m in ([hip_level_name(w) for w in waves] if n == "hip-on-nvidia" else [n]):
            if m not in out:
                out.append(m)
    return out


def level_wave(name: str) -> int | None:
    """The wavefront size of a hip-on-nvidia level name, else None."""
    if name == "hip-on-nvidia":
        return 64
    if name.startswith("hip-on-nvidia/w"):
        return int(name.rsplit("w", 1)[1])
    return None


def make(name: str, hip_src: Path, cuda_src: Path | None, case_timeout: float = 30.0,
         isolate: bool = True, gpus: str | int | None = None, port: Port | None = None,
         profile: str | None = None, suite: Suite | Callable[[], Suite] | None = None) -> Level:
    """Build one level's executor; import or setup failures become `unavailable` with the reason.
    port: the HIP suite is a port described by its build line (parity.suite.port: a shim port's .cu files,
    include order, force-included headers, defines), for hip-on-nvidia, amd-static and amd alike.
    profile: the ABI profile of the run (parity.profiles; None: Candle's): the kernels the cpu level
    interprets and the parameter lists amd-static checks declarations against.
    suite: the run's one discovery of hip_src (or of the port), or a function that makes it on first
    use (parity.run.session.Subject.suite): the HIP levels narrow a copy instead of discovering again.

    GPU levels run in a worker process (isolate=True) so a faulting or hanging kernel costs one
    case (`crash`, `timeout`), not the run."""
    ported = {"port": port} if port is not None else {}
    if suite is not None:
        ported["discovered"] = suite
    try:
        if name == "cpu":
            cpu = CpuExecutor(profile)
            return Level(name, cpu.availability(), cpu)
        if name == "hip-on-nvidia":
            from parity.executors.hip_nvidia import HipOnNvidiaExecutor as cls
            kwargs = {"suite_dir": hip_src, **ported}
        elif name == "hip-on-nvidia/w32":
            from parity.executors.hip_nvidia import HipOnNvidiaW32Executor as cls
            kwargs = {"suite_dir": hip_src, **ported}
        elif name == "amd":
            from parity.executors.amd import AmdExecutor as cls
            kwargs = {"suite_dir": hip_src, **ported}
        elif name == "amd-static":               # compiles only: no worker process to isolate
            from parity.executors.amd_compile import AmdStaticExecutor
            ex = AmdStaticExecutor(hip_src, port=port, profile=profile, discovered=suite)
            av = ex.availability()
            return Level(name, av, ex if av.available else None, ex if av.available else None)
        elif name == "cupy":
            from parity.executors.cupy_ref import CupyRefExecutor as cls
            kwargs = {}                          # (the CuPy reference reads no suite)
        elif name == "cuda":
            if cuda_src is None:
                return Level(name, Availability(False, "no CUDA suite given (--cuda-src DIR)"), None)
            from parity.executors.cuda import CudaExecutor as cls
            kwargs = {"suite_dir": cuda_src}
        else:
            raise ValueError(f"unknown level {name!r}; known: {', '.join(ALL_LEVELS)}")
        probe = cls(**kwargs)
        av = probe.availability()                # cheap, in-process: no kernel is launched here
    except ImportError as e:
        return Level(name, Availability(False, f"{e}"), None)
    if not av.available:
        return Level(name, av, None)
    if callable(kwargs.get("discovered")):      # the worker process gets the suite itself, not the maker
        kwargs["discovered"] = kwargs["discovered"]()
    if isolate:
        from parity.executors.worker import IsolatedExecutor
        ids = resolve_gpus(gpus)
        if ids:                                  # --gpus: one worker per GPU, pinned before CUDA starts
            pool = [IsolatedExecutor(cls, timeout_s=case_timeout, env={"CUDA_VISIBLE_DEVICES": g}, **kwargs)
                    for g in ids]
            av = Availability(av.available, av.reason, f"{av.device} x{len(ids)} GPUs ({','.join(ids)})")
            return Level(name, av, GpuPool(name, pool), probe)
        return Level(name, av, IsolatedExecutor(cls, timeout_s=case_timeout, **kwargs), probe)
    return Level(name, av, cls(**kwargs))
