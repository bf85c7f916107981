"""Host routines: launches with `Launch.library` set are not suite kernels but Candle host code
that an executor runs with its own means — `blas.gemm` (gemm_config + one strided-batched GEMM)
and `conv.host` (conv1d/conv2d: im2col + GEMM + copy through the executor's own launches, MIOpen
first on `amd`; parity/executors/conv_host.py).

GPU executors call `run_library(self, launch)` from `run`; the CPU level goes through the ops'
`emulate`, which uses the same helpers. Executor hooks (broken subjects override them):
`gemm_config(bmnk, lhs, rhs)`, `conv_gemm_kernel` ("copy" | "original") and, on the CPU level,
`blas_gemm(cfg, a, b, c, out_dtype)`.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..ops.base import Launch
from ..ops.structured import HostRefused
from .base import ExecResult


@lru_cache(maxsize=1)
def library_kernels() -> frozenset:
    """Launch names served by host routines (an isolated worker's `prepare` must not look them
    up in the suite)."""
    from ..ops import CATALOG
    return frozenset(op.kernel_name(k) for op in CATALOG.values()
                     if op.spec.library for k in op.dtypes)


def is_library_kernel(name: str) -> bool:
    return name in library_kernels()


def suite_kernels(names) -> list[str]:
    """The suite kernels these launch names need: a host routine's own launches (conv.host:
    im2col_T, ucopy_T) in place of its name, other names as they are."""
    from ..ops import expected_kernels
    known = expected_kernels()
    out = []
    for name in names:
        op, key = known.get(name, (None, None))
        out += list(op.spec.suite_kernels(key)) if op is not None and op.spec.library else [name]
    return list(dict.fromkeys(out))


def gemm_buffers(launch: Launch, bufs: dict, pointer_offset=lambda o: o):
    """(a, b, c) flat arrays from the BLAS pointers: a = rhs, b = lhs, c = dst."""
    args = {x.name: x for x in launch.args}

    def view(n):
        name, off = args[n].value
        return bufs[name][pointer_offset(int(off)):]
    return view("rhs"), view("lhs"), view("dst")


def blas_for(ex):
    """The executor's BLAS (created once per executor): cuBLAS via CuPy on NVIDIA levels,
    hipBLAS on `amd`."""
    blas = getattr(ex, "_parity_blas", None)
    if blas is None:
        if ex.level == "amd":
            from .blas import HipBlas
            blas = HipBlas()
        else:
            from .blas import CupyBlas
            blas = CupyBlas()
        ex._parity_blas = blas
    return blas


def run_gemm(ex, launch: Launch) -> ExecResult:
    from ..ops.matmul import gemm_config, launch_layouts
    bmnk, lhs, rhs = launch_layouts(launch)
    try:
        cfg = getattr(ex, "gemm_config", gemm_config)(bmnk, lhs, rhs)
    except HostRefused as e:
        return ExecResult("refused", message=str(e))
    try:
        blas = blas_for(ex)
    except Exception as e:
        return ExecResult("unavailable", message=f"no BLAS for level {ex.level}: {type(e).__name__}: {e}")
    return blas.run(launch, cfg, launch.dtypes["dst"])


def run_library(ex, launch: Launch) -> ExecResult:
    if launch.library == "blas.gemm":
        return run_gemm(ex, launch)
    if launch.library == "conv.host":
        from .conv_host import run_conv_host
        return run_conv_host(ex, launch)
    return ExecResult("missing", message=f"no host routine {launch.library!r}")


__all__ = ["library_kernels", "is_library_kernel", "suite_kernels", "gemm_buffers", "run_gemm", "run_library", "np"]
