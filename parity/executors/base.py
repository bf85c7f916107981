"""The contract every executor keeps, whatever platform it drives, and the capabilities some
declare: callers ask `isinstance(ex, Queued)` and the like instead of probing for members."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Protocol, runtime_checkable

import numpy as np

from parity.ops.base import ChainLaunch, ChainStep, ExecResult, Launch
from parity.ops.matmul import GemmConfig, gemm_config


@dataclass
class Availability:
    available: bool
    reason: str = ""                              # why not, and what would fix it
    device: str = ""                              # GPU name / toolkit, for the results


class Executor:
    """A level that executes launches: `cpu`, `hip-on-nvidia`, `amd`, `cuda`."""
    level: str = "?"
    wave: int | None = None                       # hip-on-nvidia: the wavefront size its HIP mapping runs
    # Which buffer the conv.host GEMM reads for a non-contiguous kernel: "copy" (the ROCm port:
    # the dense copy) or "original" (CUDA Candle, KD cuda-conv-noncontiguous-kernel).
    conv_gemm_kernel: str = "copy"

    def availability(self) -> Availability:
        raise NotImplementedError

    def run(self, launch: Launch) -> ExecResult:
        raise NotImplementedError

    def warm(self) -> None:
        """Pay start-up costs (device context) now: a worker process calls this before it says
        ready, so its warm spare takes over after a fault without them."""

    def close(self) -> None:
        """Release worker processes and devices."""

    def run_chain(self, chain: ChainLaunch) -> ExecResult:
        """A chain's steps in order, each reading the tensors earlier steps produced here, then every
        step alone on the reference's inputs. Outputs: every tensor by name, and step i's solo
        outputs as `solo<i>:<tensor>` (i from 1, as the step labels); a step that fails or writes
        into a tensor it only reads stops the chain with its verdict, named. The whole chain is one
        request (one message to an isolated worker); each step is this executor's own `run` (the
        same launch as a single case); HipOnNvidiaExecutor (hip-on-nvidia, cuda) keeps the tensors
        on the device between kernel steps instead (its resident_chains)."""
        store = {n: np.asarray(b) for n, b in chain.buffers.items()}
        for i, step in enumerate(chain.steps):
            res = self.chain_step(step, store)
            if res.status != "ok":
                later = [s.label for s in chain.steps[i + 1:]
                         if set(s.reads.values()) & set(res.detail.get("clobbered", ()))]
                why = f"; read later by {', '.join(later)}" if later else ""
                return ExecResult(res.status, dict(store), f"{step.label}: {res.message}{why}",
                                  detail={**res.detail, "chain_step": i})
        outputs = dict(store)
        for i, (step, inputs) in enumerate(zip(chain.steps, chain.solo)):
            res = self.chain_step(step, dict(inputs))
            if res.status != "ok":
                return ExecResult(res.status, outputs, f"{step.label} on the reference's inputs: {res.message}",
                                  detail={**res.detail, "chain_step": i})
            outputs.update((f"solo{i + 1}:{t}", res.outputs[b]) for b, t in step.writes.items())
        return ExecResult("ok", outputs)

    def chain_step(self, step: ChainStep, store: dict[str, np.ndarray]) -> ExecResult:
        """Run one step on the tensors in `store` and add what it writes; `input-clobbered` when
        a tensor it reads changed (an in-place step clobbering a tensor a later step reads)."""
        bufs = dict(step.launch.buffers)
        bufs.update((b, store[t]) for b, t in step.reads.items())
        before = {t: store[t].copy() for t in set(step.reads.values())}
        launch = Launch(step.launch.kernel, step.launch.args, bufs, step.launch.outputs, step.launch.grid,
                        step.launch.block, step.launch.shared_mem, step.launch.dtypes, step.launch.library)
        res = self.run(launch)
        if res.status != "ok":
            return res
        changed = [t for t, b in before.items()
                   if not np.array_equal(b.view(np.uint8), np.asarray(store[t]).view(np.uint8))]
        if changed:
            return ExecResult("input-clobbered", res.outputs, f"{launch.kernel} wrote into {', '.join(changed)}, "
                              "which it only reads", detail={"clobbered": changed})
        store.update((t, res.outputs[b]) for b, t in step.writes.items())
        return res

    def gemm_config(self, bmnk: tuple[int, int, int, int], lhs, rhs) -> GemmConfig:
        """The `blas.gemm` host routine's configuration: Candle's; a broken subject overrides it.
        Raises MatMulNonContiguous (HostRefused) for a layout Candle refuses."""
        return gemm_config(bmnk, lhs, rhs)


# ------------------------------------------------------------------------------ capabilities
@runtime_checkable
class Preparing(Protocol):
    """Loads a kernel before its first launch (an isolated worker preloads the kernels its
    predecessor had loaded)."""

    def prepare(self, kernel: str) -> ExecResult | None:
        """None when the kernel is ready, else the launch's verdict (missing, compile-error, ...)."""


@runtime_checkable
class Compiling(Preparing, Protocol):
    """Compiles suite sources ahead of the run, in parallel (levels.Level.precompile)."""

    def precompile(self, sources: Iterable[Path], jobs: int | None = None,
                   on_done: Callable[[Path, object], None] | None = None) -> dict: ...

    def sources_for(self, kernels: Iterable[str]) -> list[Path]: ...


@runtime_checkable
class Static(Protocol):
    """Judges a case without building or launching it (amd-static: compile checks only)."""

    def judge(self, kernels: Iterable[str]) -> ExecResult:
        """The verdict of the suite kernels a case needs: status `compiled`, or why not."""


@runtime_checkable
class Queued(Protocol):
    """Takes launches ahead of their results: collect() answers them in submission order."""

    def submit(self, launch: Launch) -> None: ...

    def collect(self) -> ExecResult: ...


@runtime_checkable
class TimedWhereRun(Protocol):
    """Times a launch in the process that ran it (an isolated worker), not in the caller's."""

    def time(self, launch: Launch, opts, timeout_s: float | None = None): ...


@runtime_checkable
class Pooled(Protocol):
    """Several executors of one level (one per GPU), each driven by its own process."""
    members: list[Executor]


def loaded_for_timing(executor: Preparing, launch: Launch, functions: dict[str, object]) -> object:
    """The loaded kernel function a timed launch enqueues (parity.timing.Timeable.prepared);
    RuntimeError for host routines and for kernels that do not load."""
    if launch.library:
        raise RuntimeError(f"{launch.kernel} is a host routine: its steps are not timed one by one")
    err = executor.prepare(launch.kernel)
    if err is not None:
        raise RuntimeError(f"{err.status}: {err.message}")
    return functions[launch.kernel]
