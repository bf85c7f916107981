"""Host routines: launches with `Launch.library` set are not suite kernels but Candle host code
that an executor runs with its own means — `blas.gemm` (gemm_config + one strided-batched GEMM)
and `conv.host` (conv1d/conv2d: im2col + GEMM + copy through the executor's own launches, MIOpen
first on `amd`; parity/host/conv.py).

Every executor calls `run_library(self, launch)` from `run`. What a routine needs of the
executor is `HostExecutor` (parity/host/protocols.py): its BLAS (cuBLAS on NVIDIA levels, hipBLAS
on `amd`, NumPy on `cpu`) and the hooks broken subjects override: `gemm_config(bmnk, lhs, rhs)`
and `conv_gemm_kernel` ("copy" | "original").
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from parity.host.conv import run_conv_host
from parity.host.protocols import HostExecutor
from parity.ops import CATALOG, expected_kernels
from parity.ops.base import ExecResult, Launch
from parity.ops.matmul import launch_layouts
from parity.ops.structured import HostRefused


@lru_cache(maxsize=1)
def library_kernels() -> frozenset:
    """Launch names served by host routines (an isolated worker's `prepare` must not look them
    up in the suite)."""
    return frozenset(op.kernel_name(k) for op in CATALOG.values()
                     if op.spec.library for k in op.dtypes)


def is_library_kernel(name: str) -> bool:
    return name in library_kernels()


def suite_kernels(names: Iterable[str]) -> list[str]:
    """The suite kernels these launch names need: a host routine's own launches (conv.host:
    im2col_T, ucopy_T) in place of its name, other names as they are."""
    known = expected_kernels()
    out = []
    for name in names:
        op, key = known.get(name, (None, None))
        out += list(op.spec.suite_kernels(key)) if op is not None and op.spec.library else [name]
    return list(dict.fromkeys(out))


def run_gemm(ex: HostExecutor, launch: Launch) -> ExecResult:
    bmnk, lhs, rhs = launch_layouts(launch)
    try:
        cfg = ex.gemm_config(bmnk, lhs, rhs)
    except HostRefused as e:
        return ExecResult("refused", message=str(e))
    try:
        blas = ex.blas()
    except Exception as e:
        return ExecResult("unavailable", message=f"no BLAS for level {ex.level}: {type(e).__name__}: {e}")
    return blas.run(launch, cfg, launch.dtypes["dst"])


def run_library(ex: HostExecutor, launch: Launch) -> ExecResult:
    if launch.library == "blas.gemm":
        return run_gemm(ex, launch)
    if launch.library == "conv.host":
        return run_conv_host(ex, launch)
    return ExecResult("missing", message=f"no host routine {launch.library!r}")
