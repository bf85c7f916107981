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


def make(name: str, hip_src: Path, cuda_src: Path | None) -> Level:
    """Build one level's executor; import or setup failures become `unavailable` with the reason."""
    try:
        if name == "cpu":
            ex: Executor = CpuExecutor()
        elif name == "hip-on-nvidia":
            from .backends.hip_nvidia import HipOnNvidiaExecutor
            ex = HipOnNvidiaExecutor(hip_src)
        elif name == "amd":
            from .backends.amd import AmdExecutor
            ex = AmdExecutor(hip_src)
        elif name == "cuda":
            if cuda_src is None:
                return Level(name, Availability(False, "no CUDA suite given (--cuda-src DIR)"), None)
            from .backends.hip_nvidia import CudaExecutor
            ex = CudaExecutor(cuda_src)
        else:
            raise ValueError(f"unknown level {name!r}; known: {', '.join(LEVELS)}")
    except ImportError as e:
        return Level(name, Availability(False, f"{e}"), None)
    av = ex.availability()
    return Level(name, av, ex if av.available else None)
