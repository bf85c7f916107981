"""Resolve level names to executors and say, for each, whether this machine can run it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .backends.base import Availability, Executor
from .backends.cpu import CpuExecutor

LEVELS = ("cpu", "hip-on-nvidia", "amd", "cuda")
DEFAULT_HIP_SRC = Path(__file__).resolve().parent.parent / "backends" / "hip"


@dataclass
class Level:
    name: str
    availability: Availability
    executor: Executor | None


def make(name: str, hip_src: Path, cuda_src: Path | None, case_timeout: float = 30.0,
         isolate: bool = True) -> Level:
    """Build one level's executor; import or setup failures become `unavailable` with the reason.

    GPU levels run in a worker process (isolate=True) so a faulting or hanging kernel costs one
    case (`crash`, `timeout`), not the run."""
    try:
        if name == "cpu":
            cpu = CpuExecutor()
            return Level(name, cpu.availability(), cpu)
        if name == "hip-on-nvidia":
            from .backends.hip_nvidia import HipOnNvidiaExecutor as cls
            kwargs = {"suite_dir": hip_src}
        elif name == "amd":
            from .backends.amd import AmdExecutor as cls
            kwargs = {"suite_dir": hip_src}
        elif name == "cuda":
            if cuda_src is None:
                return Level(name, Availability(False, "no CUDA suite given (--cuda-src DIR)"), None)
            from .backends.hip_nvidia import CudaExecutor as cls
            kwargs = {"suite_dir": cuda_src}
        else:
            raise ValueError(f"unknown level {name!r}; known: {', '.join(LEVELS)}")
        av = cls(**kwargs).availability()        # cheap, in-process: no kernel is launched here
    except ImportError as e:
        return Level(name, Availability(False, f"{e}"), None)
    if not av.available:
        return Level(name, av, None)
    if isolate:
        from .backends.worker import IsolatedExecutor
        return Level(name, av, IsolatedExecutor(cls, timeout_s=case_timeout, **kwargs))
    return Level(name, av, cls(**kwargs))
