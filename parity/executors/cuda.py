"""Level `cuda`: a CUDA suite (Candle's own `candle-kernels/src`) compiled as it is and run like
hip-on-nvidia, without the HIP mapping: the CUDA original the port is compared with."""
from __future__ import annotations

import os
from pathlib import Path

from parity.executors.hip_nvidia import HipOnNvidiaExecutor


class CudaExecutor(HipOnNvidiaExecutor):
    """Level `cuda`: a `.cu` suite (Candle's own kernels) compiled as it is, no HIP mapping."""
    level = "cuda"
    wave = None                                  # CUDA sources: NVIDIA warps, no HIP mapping
    suffixes = (".cu",)
    # CUDA Candle's conv1d/conv2d GEMM reads the original kernel buffer even after copying a
    # non-contiguous kernel (KD cuda-conv-noncontiguous-kernel; parity/host/conv.py).
    conv_gemm_kernel = "original"

    def __init__(self, suite_dir: str | os.PathLike, **kw):
        super().__init__(suite_dir, **kw)

    def default_includes(self) -> list[Path]:
        return []
