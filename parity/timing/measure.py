"""Time one prepared launch with a clock: refresh, warm up, sample, subtract the event overhead,
compare the output after timing with the correctness run's."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from parity.timing.bandwidth import peak_bandwidth
from parity.timing.clocks import Clock, CupyClock, launch_floor, subtract_event_overhead
from parity.timing.statistics import Timing, TimingOptions, is_launch_bound, sample


class PreparedLaunch(Protocol):
    """A launch on the device, ready to be enqueued any number of times. Buffers are images
    (guard + bytes + guard) so a timed kernel writes where the correctness run's kernel wrote."""
    inplace: bool                                    # a null input pointer: the output is an input

    def refresh(self) -> None: ...                   # re-upload inputs and pristine outputs
    def restore(self, clock: Clock) -> None: ...     # outputs back to their pristine bytes (on the stream)
    def enqueue(self) -> None: ...                   # one launch, asynchronous
    def outputs(self) -> dict[str, np.ndarray]: ...  # output images, downloaded
    def image_of(self, name: str, arr: np.ndarray) -> np.ndarray: ...   # a host array in image form
    def release(self) -> None: ...


@runtime_checkable
class Timeable(Protocol):
    """An executor that times its own launches: it owns their device images and its clock."""
    level: str

    def prepared(self, launch) -> PreparedLaunch: ...
    def clock(self, flush_factor: float) -> Clock: ...


def time_prepared(prep: PreparedLaunch, clock: Clock, opts: TimingOptions,
                  reference_outputs: dict[str, np.ndarray] | None = None) -> Timing:
    """Time a prepared launch: refresh inputs, warm up, sample, verify the output."""
    prep.refresh()
    cold = opts.mode == "cold"

    def before():
        prep.restore(clock)             # outputs (and an in-place input) back to their initial bytes
        clock.flush()                   # then evict everything from L2: the kernel starts cold

    def measure(k: int) -> list[float]:
        return clock.measure(prep.enqueue, k, before if cold else None)
    t = sample(measure, opts)
    subtract_event_overhead(t, clock)
    t.launch_floor_ms, how = launch_floor(clock)
    t.launch_bound = is_launch_bound(t.event_ms, t.launch_floor_ms)    # both raw event times
    if opts.verify and reference_outputs is not None and not (prep.inplace and not cold):
        if cold:                        # one more restored launch: the output of exactly one application
            prep.restore(clock)
            prep.enqueue()
        clock.synchronize()
        got = prep.outputs()
        t.verified = all(np.array_equal(_as_bytes(got[n]), _as_bytes(reference_outputs[n]))
                         for n in got if n in reference_outputs)
        if not t.verified:
            t.note = (t.note + "; " if t.note else "") + "output after timing differs from the checked output"
    return t


def _as_bytes(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


def time_launch(executor: Timeable, launch, opts: TimingOptions | None = None,
                reference_outputs: dict[str, np.ndarray] | None = None) -> Timing:
    """Time one launch on an in-process executor. reference_outputs: the ExecResult outputs of the
    correctness run (logical buffers, no guards), compared with the output after timing."""
    if not isinstance(executor, Timeable):
        raise TypeError(f"level {executor.level} cannot be timed")
    opts = opts or TimingOptions()
    clock = executor.clock(opts.flush_factor)
    prep = executor.prepared(launch)
    try:
        refs = None
        if reference_outputs is not None:
            refs = {n: prep.image_of(n, reference_outputs[n]) for n in reference_outputs if n in launch.outputs}
        t = time_prepared(prep, clock, opts, refs)
    finally:
        prep.release()
    if isinstance(clock, CupyClock):                 # the copy-bandwidth peak is measured with CUDA
        try:
            t.peak_gbps = peak_bandwidth(clock)["gbps"]
        except Exception as e:
            t.note = (t.note + "; " if t.note else "") + f"no peak bandwidth: {e}"
    return t
