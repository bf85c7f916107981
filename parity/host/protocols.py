"""What the host routines need of an executor: its own BLAS and the hooks that broken subjects
override. Every executor that runs host launches satisfies `HostExecutor` structurally."""
from __future__ import annotations

from typing import Protocol

from parity.ops.base import ExecResult, Launch
from parity.ops.matmul import GemmConfig


class Blas(Protocol):
    def run(self, launch: Launch, cfg: GemmConfig, dt: str) -> ExecResult: ...


class HostExecutor(Protocol):
    level: str
    conv_gemm_kernel: str                         # "copy" | "original": see parity.host.conv

    def run(self, launch: Launch) -> ExecResult: ...

    def gemm_config(self, bmnk: tuple[int, int, int, int], lhs, rhs) -> GemmConfig: ...

    def blas(self) -> Blas:
        """The executor's own BLAS, created on first use; raises when the level has none."""
