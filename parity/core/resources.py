"""The one place that says where the bundled files are: HIP suite, HIP-on-NVIDIA mapping, NVRTC
stubs, sweeps, golden data, report templates.

Everything is found through `importlib.resources` inside the `parity` package, so a wheel, a
`pip install .`, an editable install and a plain checkout answer alike. In the repository the
files live at the top (`backends/hip/`, `backends/cuda_rtc/`, `cases/`, where people edit them);
`parity/_bundled/{hip,cuda_rtc,cases}` are symlinks to them, which setuptools follows when it
copies package data into the wheel and sdist.
"""
from __future__ import annotations

import atexit
import contextlib
from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=None)
def _path(*parts: str) -> Path:
    """A bundled file or folder as a real file-system path (compilers need one)."""
    ref = resources.files("parity").joinpath(*parts)
    if isinstance(ref, Path):
        return ref.resolve()      # in a checkout: backends/hip, the path people edit and see in messages
    # Zipped install (rare): extract for the life of the process. Folders need Python 3.12.
    stack = contextlib.ExitStack()
    atexit.register(stack.close)
    return Path(stack.enter_context(resources.as_file(ref)))


def hip_suite() -> Path:
    """The bundled HIP kernel suite (repository: `backends/hip/`), the default subject."""
    return _path("_bundled", "hip")


def hip_mapping() -> Path:
    """The HIP-on-NVIDIA device-code mapping headers (`backends/hip/include/`, holds `hip/*.h`)."""
    return hip_suite() / "include"


def cuda_rtc_stubs() -> Path:
    """Minimal libc/libm headers for NVRTC (`backends/cuda_rtc/`), which has no system headers."""
    return _path("_bundled", "cuda_rtc")


def sweep_dir() -> Path:
    """The bundled sweep definitions (`cases/*.toml`)."""
    return _path("_bundled", "cases")


def chain_dir() -> Path:
    """The bundled op chains (`cases/chains/*.toml`)."""
    return _path("_bundled", "cases", "chains")


def data_dir() -> Path:
    """Measured reference data (`parity/data/`)."""
    return _path("data")


def templates_dir() -> Path:
    """Report templates (`parity/render/templates/`)."""
    return _path("render", "templates")


def check() -> list[str]:
    """Problems with the bundled files (empty when all are there): what `parity doctor` and the
    packaging test look at, so a broken wheel says so instead of 'no sweep smoke'."""
    want = {"HIP suite": hip_suite() / "common.h", "HIP mapping": hip_mapping() / "hip" / "hip_runtime.h",
            "sweeps": sweep_dir() / "smoke.toml", "templates": templates_dir()}
    return [f"bundled {what} missing: {p}" for what, p in want.items() if not p.exists()]
