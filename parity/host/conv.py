"""The `conv.host` routine: Candle's backend conv1d/conv2d host sequence, on every level.

The steps are `HostConv`'s launches (parity/ops/conv_host.py), each run through the executor's own
`run`, so every level executes them with its own means and judges each one (guards, inputs):

  1. im2col1d_T / im2col_T            suite kernel (NumPy emulation on `cpu`)
  2. ucopy_T kernel -> kernel_c       suite kernel, only for a non-contiguous kernel
  3. one GEMM (1, b*m, c_out, k)      `blas.gemm`: cuBLAS (hip-on-nvidia, cuda), hipBLAS (amd)
  4. ucopy_T result -> N,C,L / NCHW   suite kernel; a plain copy when that view is contiguous

Intermediates come back to the host between steps; the arithmetic is unchanged by that.
Which buffer step 3 reads for a non-contiguous kernel is the executor's `conv_gemm_kernel`:
"copy" (the ROCm port: kernel_c, at offset 0) or "original" (CUDA Candle: the original buffer
read as a contiguous matrix from its start offset, KD cuda-conv-noncontiguous-kernel).

Executors that are `MiopenCapable` (`amd`) first try MIOpen, as Candle's ROCm backend built with
`--features miopen` does: f32/f16/bf16 with contiguous operands; f64, non-contiguous operands and
any MIOpen error fall back to the sequence above (the row's `conv_route` says which and why).
Without libMIOpen an eligible case is `unavailable`: that route was not tested.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from parity.host.miopen import DeviceMemory, Miopen, MiopenError, conv_problem, run_forward
from parity.host.protocols import HostExecutor
from parity.ops.base import ExecResult, Launch
from parity.ops.conv_host import HostConv


@runtime_checkable
class MiopenCapable(HostExecutor, Protocol):
    """An executor that runs `conv.host` through MIOpen first, as Candle's ROCm backend does."""

    def miopen(self) -> Miopen:
        """Its MIOpen handle; ImportError without libMIOpen."""

    def device_memory(self) -> DeviceMemory: ...


class _StepFailed(Exception):
    def __init__(self, result: ExecResult):
        super().__init__(result.message)
        self.result = result


def _step(ex: HostExecutor, launch: Launch, what: str, times: list) -> dict[str, np.ndarray]:
    r = ex.run(launch)
    if r.status != "ok":
        raise _StepFailed(ExecResult(r.status, message=f"{what} ({launch.kernel}): {r.message}"))
    times.append(r.time_ms)
    return r.outputs


def run_im2col_gemm(ex: HostExecutor, launch: Launch, hc: HostConv) -> ExecResult:
    """Steps 1-4 on `ex`; the result (or the first failing step's verdict, named)."""
    times: list = []
    try:
        col = _step(ex, hc.im2col(launch.buffers["src"]), "im2col", times)["dst"]
        rhs, rhs_offset = launch.buffers["k"], hc.kernel.offset
        if not hc.kernel.is_contiguous():
            kernel_c = _step(ex, hc.kernel_copy(launch.buffers["k"]), "kernel copy", times)["out"]
            if ex.conv_gemm_kernel == "copy":
                rhs, rhs_offset = kernel_c, 0
        res = _step(ex, hc.gemm(col, rhs, rhs_offset), "GEMM", times)["dst"]
        back = hc.copy_back(res)
        dst = res.copy() if back is None else _step(ex, back, "copy to N,C,...", times)["out"]
    except _StepFailed as e:
        return e.result
    ms = sum(times) if times and None not in times else None
    return ExecResult("ok", {"dst": dst}, time_ms=ms, detail={"conv_route": "im2col+gemm"})


def _miopen_route(ex: MiopenCapable, launch: Launch, hc: HostConv) -> ExecResult:
    problem = conv_problem(hc)
    if isinstance(problem, str):
        why = f"MIOpen skipped: {problem}"
    else:
        try:
            mi = ex.miopen()
        except ImportError as e:
            return ExecResult("unavailable", message=f"MIOpen route not testable here: {e}")
        except MiopenError as e:
            why = f"MIOpen failed: {e}"
        else:
            try:
                return run_forward(mi, ex.device_memory(), launch, problem)
            except MiopenError as e:                 # Candle falls back on any MIOpen error
                why = f"MIOpen failed: {e}"
            except Exception as e:
                return ExecResult("crash", message=f"MIOpen convolution: {type(e).__name__}: {e}")
    res = run_im2col_gemm(ex, launch, hc)
    res.detail["conv_route"] = f"im2col+gemm ({why})"
    return res


def run_conv_host(ex: HostExecutor, launch: Launch) -> ExecResult:
    hc = HostConv.from_launch(launch)
    if isinstance(ex, MiopenCapable):
        return _miopen_route(ex, launch, hc)
    return run_im2col_gemm(ex, launch, hc)
