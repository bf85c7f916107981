"""Kernel timing you can trust: device events, warm-up, L2 flushed between samples (cold) or
back-to-back launches (hot), samples until the spread is small, median with p10/p90.

    opts = TimingOptions(mode="cold", max_noise=0.02)
    t = time_launch(executor, launch, opts, reference_outputs=result.outputs)
    t.median_ms, t.p10_ms, t.p90_ms, t.n, t.launch_bound, t.verified

Rules (docs/DESIGN.md "Timing", docs/prior-art.md "Timing"):
* device timestamps only: CUDA events through CuPy (hipEvents through hip-python on AMD). Events
  time the stream from one event record to the next, so every sample includes the front end's
  processing of the end event's record (H100: 1.25 us, +22% on a 5.7 us kernel). On NVIDIA that
  cost is measured once per device and process (`event_overhead`: the median of an event pair
  with nothing enqueued between) and subtracted; what is left agrees with Nsight Compute's
  `gpu__time_duration` from 5 us to 5 ms (bench/gpu_validate.py, part b). The raw event median
  stays in the row (`event_ms`). Not CUPTI's kernel records: they start at the first block, after
  the launch that ncu counts (an empty kernel: 0.86 us vs ncu's 2.24 us), and on Hopper their
  instrumentation slows wide grids (+9% on a 65,536-block copy);
* cold mode: before every sample, outside the timed window, the output buffers are restored
  from a pristine device copy (an in-place op starts from its input again, and no output is
  left over for a kernel to "reuse"), then a buffer of 2x the device's L2 is read, so the
  kernel reads its inputs from DRAM and finds no dirty lines to write back (as after Nsight
  Compute's cache flush); hot mode: back-to-back launches, no flush;
* CUDA: each batch of samples is enqueued behind a hold kernel released by the host, so the GPU
  runs flush, event, kernel, event without waiting for the host in between;
* inputs are re-uploaded from the host before timing, and the output after timing is compared
  byte for byte with the output the correctness run produced (`verified`);
* samples are taken in batches (one synchronisation per batch) until the robust relative spread
  IQR/(1.349*median) is below `max_noise` (and at least `min_samples`), or the time cap;
* `launch_bound`: the median is below the measured cost of launching an empty kernel through
  the same dispatch path (max of its device time and the back-to-back launch period).

The sampler (`sample`) takes the measuring function and the clock as arguments, so its stop
logic is tested on synthetic timings without a GPU.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

MODES = ("cold", "hot")


# ------------------------------------------------------------------------------ options/result
@dataclass
class TimingOptions:
    mode: str = "cold"              # cold: L2 flushed + outputs restored before each sample; hot: back to back
    max_noise: float = 0.02         # stop when IQR/(1.349*median) is below this
    min_samples: int = 10
    max_samples: int = 5000
    warmup: int = 3                 # launches before sampling (module load, clocks, TLBs)
    time_cap_s: float = 2.0         # stop sampling after this long even if still noisy
    batch_ms: float = 25.0          # device time enqueued per synchronisation
    flush_factor: float = 2.0       # flush buffer = this x the device's L2
    verify: bool = True             # compare the output after timing with the correctness run's

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown timing mode {self.mode!r}; known: {', '.join(MODES)}")
        if not (0 < self.max_noise < 1):
            raise ValueError("max_noise must be a fraction between 0 and 1 (0.02 = 2%)")


@dataclass
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    n: int
    noise: float                    # IQR/(1.349*median) of the samples
    converged: bool                 # noise <= max_noise before the cap
    mode: str = "cold"
    launch_floor_ms: float | None = None
    launch_bound: bool | None = None
    verified: bool | None = None    # output after timing == correctness run's output (None: not checked)
    note: str = ""
    peak_gbps: float | None = None  # the device's measured copy bandwidth (parity.timing.peak_bandwidth)
    source: str = "events"          # events: raw event times; events-overhead: an empty event pair's time subtracted
    event_ms: float | None = None   # the raw event median (before the overhead was subtracted)
    overhead_ms: float | None = None  # the event overhead subtracted (parity.timing.event_overhead)

    def fields(self) -> dict:
        """The result-row columns of this timing."""
        return {"kernel_ms": self.median_ms, "time_p10": self.p10_ms, "time_p90": self.p90_ms,
                "samples": self.n, "time_noise": self.noise, "time_converged": self.converged,
                "timing_mode": self.mode, "launch_bound": self.launch_bound,
                "launch_floor_ms": self.launch_floor_ms, "timing_verified": self.verified,
                "timing_note": self.note, "time_source": self.source, "event_ms": self.event_ms,
                "event_overhead_ms": self.overhead_ms}


# ----------------------------------------------------------------------------------- statistics
def quantile(xs, q: float) -> float:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q * 100.0))


def noise(xs) -> float:
    """Robust relative spread: interquartile range / (1.349 * median) (the relative standard
    deviation for normal samples; a few outliers do not move it, a bimodal spread does).
    inf for fewer than 2 samples."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size < 2:
        return math.inf
    med = float(np.median(a))
    if med <= 0:
        return math.inf
    q1, q3 = np.percentile(a, [25.0, 75.0])
    return float(q3 - q1) / (1.349 * med)


def summarize(xs, mode: str = "cold", max_noise: float = 0.02, capped: bool = False) -> Timing:
    a = np.asarray(xs, dtype=np.float64)
    nz = noise(a)
    return Timing(float(np.median(a)), quantile(a, 0.1), quantile(a, 0.9), int(a.size), nz,
                  nz <= max_noise and not capped, mode)


def sample(measure: Callable[[int], list[float]], opts: TimingOptions,
           clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Warm up, then measure in batches until the spread is below opts.max_noise (with at least
    opts.min_samples), opts.max_samples are taken, or opts.time_cap_s has passed.

    measure(k) runs k samples and returns their times in ms; clock() is seconds (injectable)."""
    est = None
    if opts.warmup > 0:
        warm = [t for t in measure(opts.warmup) if t > 0]
        est = float(np.median(warm)) if warm else None
    samples: list[float] = []
    t0 = clock()
    converged = False
    while True:
        if not samples:
            k = opts.min_samples
        else:
            est = float(np.median(samples))
            k = int(opts.batch_ms / max(est, 1e-4))
        k = max(1, min(k, 256, opts.max_samples - len(samples)))
        samples += list(measure(k))
        if len(samples) >= opts.min_samples and noise(samples) <= opts.max_noise:
            converged = True
            break
        if len(samples) >= opts.max_samples or clock() - t0 >= opts.time_cap_s:
            break
    t = summarize(samples, opts.mode, opts.max_noise)
    t.converged = converged
    if not converged:
        t.note = f"spread {t.noise:.1%} above {opts.max_noise:.1%} after {t.n} samples (cap)"
    return t


def is_launch_bound(median_ms: float, floor_ms: float | None) -> bool | None:
    """A kernel whose median is below the cost of launching an empty kernel is launch-bound."""
    if floor_ms is None or not math.isfinite(floor_ms):
        return None
    return bool(median_ms < floor_ms)


# -------------------------------------------------------------------------------- bytes moved
def distinct_elements(shape, strides) -> int:
    """Elements a view reaches at least once: broadcast (stride-0) dims count once."""
    n = 1
    for s, st in zip(shape, strides):
        if s == 0:
            return 0
        if st != 0:
            n *= int(s)
    return n


def bytes_moved(inputs: list[tuple[tuple, tuple, int]], out_numel: int, out_itemsize: int,
                inplace: bool = False) -> int:
    """Logical bytes a kernel must move: each distinct input element read once (a strided read
    counts its element's bytes, not the sectors it touches) plus each output element written
    once. inputs: (shape, strides, itemsize) per operand; in place, the output is read too."""
    total = out_numel * out_itemsize
    if inplace:
        total += out_numel * out_itemsize
    for shape, strides, item in inputs:
        total += distinct_elements(shape, strides) * item
    return int(total)


def bytes_moved_built(b) -> int:
    """bytes_moved for a built elementwise case (parity.cases.Built)."""
    op = b.op
    out_dt = op.out_dtype(b.case.dtype)
    if op.out_mode == "buffer":
        out_numel = b.out_layout.numel
    else:
        first = b.operands.layouts[op.inputs[0]] if op.inputs else b.out_layout
        out_numel = first.numel
    ins = [] if b.inplace else [(b.operands.layouts[n].shape, b.operands.layouts[n].strides,
                                 b.operands.dtypes[n].bits // 8) for n in b.operands.names]
    return bytes_moved(ins, out_numel, out_dt.bits // 8, inplace=b.inplace)


def gbps(nbytes: int | None, ms: float | None) -> float | None:
    if not nbytes or not ms or ms <= 0:
        return None
    return nbytes / (ms * 1e-3) / 1e9


# ------------------------------------------------------------------------------ device clocks
# Two helper kernels of the CUDA clock (NVRTC through CuPy):
# * parity_l2_read reads the flush buffer (zeros, so it never writes): L2 ends up full of clean lines.
#   A memset flush leaves L2 full of dirty lines that the timed kernel then writes back (H100, uneg_f32 on
#   2^23 elements: 63 us event-timed after a memset vs 56 us in Nsight Compute, which invalidates L2).
# * parity_hold spins until the host sets a flag (or a time limit passes): a batch of samples is
#   enqueued behind it, so the GPU runs event, kernel, event back to back instead of waiting for the
#   host between them (nvbench's blocking kernel).
_CLOCK_SRC = r"""
extern "C" __global__ void parity_l2_read(const uint4* p, unsigned long long n, unsigned int* sink) {
  unsigned int acc = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc != 0u) *sink = acc;
}
extern "C" __global__ void parity_hold(volatile int* flag, unsigned long long limit_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (*flag == 0 && t - t0 < limit_ns);
}
"""
HOLD_BATCH = 32          # samples enqueued behind one hold (well inside the launch queue)
HOLD_LIMIT_NS = 500_000_000


class CupyClock:
    """CUDA events on CuPy's current stream; the L2 flush reads a buffer of 2x the L2 (a memset when
    NVRTC is missing); samples are enqueued behind a hold kernel (not without NVRTC)."""
    api = "cuda"

    def __init__(self, flush_factor: float = 2.0, read_flush: bool = True, hold: bool = True):
        """read_flush/hold False: the memset flush, unheld samples."""
        import cupy
        self.cp = cupy
        self.dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(self.dev.id)
        self.name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.l2_bytes = int(props.get("l2CacheSize", 0)) or (50 << 20)
        self.sms = int(props.get("multiProcessorCount", 0)) or 100
        self._flush_buf = None
        self._flush_n = 0
        self.flush_factor = flush_factor
        try:
            mod = cupy.RawModule(code=_CLOCK_SRC)
            self._reader, self._holder = mod.get_function("parity_l2_read"), mod.get_function("parity_hold")
            import ctypes
            rt = cupy.cuda.runtime             # mapped pinned memory: under UVA its host pointer is
            self._flag_ptr = rt.hostAlloc(4, rt.hostAllocMapped | rt.hostAllocPortable)   # the device's too
            self._flag = np.ctypeslib.as_array((ctypes.c_int32 * 1).from_address(self._flag_ptr))
            self.method = "read kernel over 2x L2, samples queued behind a hold kernel"
        except Exception as e:                 # no NVRTC: memset flush, no hold
            self._reader = self._holder = None
            self.method = f"memset of 2x L2, no hold kernel ({type(e).__name__})"
        if not read_flush:
            self._reader = None
        if not hold:
            self._holder = None
        if not (read_flush and hold):
            self.method = f"{'read kernel' if self._reader else 'memset'} flush, {'hold' if self._holder else 'no hold'}"

    def stream_ptr(self) -> int:
        return int(self.cp.cuda.get_current_stream().ptr)

    def flush(self) -> None:
        if self._flush_buf is None:
            self._flush_buf = self.cp.zeros(int(self.l2_bytes * self.flush_factor) // 16 * 16, dtype=self.cp.uint8)
            self._sink = self.cp.zeros(1, dtype=self.cp.uint32)
        if self._reader is not None:
            self._reader((4 * self.sms,), (512,), (self._flush_buf, np.uint64(self._flush_buf.nbytes // 16), self._sink))
            return
        self._flush_n = (self._flush_n + 1) & 0xFF
        self.cp.cuda.runtime.memsetAsync(self._flush_buf.data.ptr, self._flush_n, self._flush_buf.nbytes,
                                         self.stream_ptr())

    def _hold(self) -> Callable[[], None] | None:
        """Stall the stream until the returned release() is called (None: no hold kernel)."""
        if self._holder is None:
            return None
        self._flag[0] = 0
        self._holder((1,), (1,), (np.uint64(self._flag_ptr), np.uint64(HOLD_LIMIT_NS)))

        def release() -> None:
            self._flag[0] = 1
        return release

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self.cp.cuda.runtime.memcpyAsync(dst, src, nbytes, 3, self.stream_ptr())   # 3 = D2D

    def measure(self, enqueue: Callable[[], None], k: int, before: Callable[[], None] | None = None) -> list[float]:
        """k samples (ms): [before()] start-event enqueue() end-event, one synchronisation at the end."""
        Event = self.cp.cuda.Event
        pairs = [(Event(), Event()) for _ in range(k)]
        for b in range(0, k, HOLD_BATCH):
            release = self._hold()
            try:
                for s, e in pairs[b:b + HOLD_BATCH]:
                    if before is not None:
                        before()
                    s.record()
                    enqueue()
                    e.record()
            finally:
                if release is not None:
                    release()
        pairs[-1][1].synchronize()
        return [float(self.cp.cuda.get_elapsed_time(s, e)) for s, e in pairs]

    def period(self, enqueue: Callable[[], None], k: int) -> float:
        """Device time of k back-to-back enqueues / k (ms)."""
        s, e = self.cp.cuda.Event(), self.cp.cuda.Event()
        s.record()
        for _ in range(k):
            enqueue()
        e.record()
        e.synchronize()
        return float(self.cp.cuda.get_elapsed_time(s, e)) / k

    def synchronize(self) -> None:
        self.dev.synchronize()

    def empty_kernel(self) -> tuple[Callable[[], None], str]:
        try:
            k = self.cp.RawKernel('extern "C" __global__ void parity_empty() {}', "parity_empty")
            k((1,), (1,), ())
            return (lambda: k((1,), (1,), ())), "empty kernel (CuPy RawKernel)"
        except Exception:                     # no NVRTC: a 4-byte memset is the cheapest launch left
            buf = self.cp.empty(4, dtype=self.cp.uint8)
            return (lambda: self.cp.cuda.runtime.memsetAsync(buf.data.ptr, 0, 4, self.stream_ptr())), "4-byte memset"


class HipClock:
    """hipEvents through hip-python (AMD); same interface as CupyClock."""
    api = "hip"

    def __init__(self, flush_factor: float = 2.0):
        from hip import hip
        from .executors.amd import _check
        self.hip, self.check = hip, _check
        props = hip.hipDeviceProp_t()
        _check(hip.hipGetDeviceProperties(props, 0))
        self.name = props.name.decode() if isinstance(props.name, bytes) else str(props.name)
        self.l2_bytes = int(getattr(props, "l2CacheSize", 0)) or (8 << 20)
        self.flush_factor = flush_factor
        self._flush = None
        self._flush_n = 0

    def flush(self) -> None:
        n = int(self.l2_bytes * self.flush_factor)
        if self._flush is None:
            self._flush = self.check(self.hip.hipMalloc(n))
        self._flush_n = (self._flush_n + 1) & 0xFF
        self.check(self.hip.hipMemsetAsync(self._flush, self._flush_n, n, None))

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self.check(self.hip.hipMemcpyAsync(dst, src, nbytes, self.hip.hipMemcpyKind.hipMemcpyDeviceToDevice, None))

    def _event(self):
        return self.check(self.hip.hipEventCreate())

    def _elapsed(self, s, e) -> float:
        return float(self.check(self.hip.hipEventElapsedTime(s, e)))

    def measure(self, enqueue, k, before=None) -> list[float]:
        pairs = [(self._event(), self._event()) for _ in range(k)]
        try:
            for s, e in pairs:
                if before is not None:
                    before()
                self.check(self.hip.hipEventRecord(s, None))
                enqueue()
                self.check(self.hip.hipEventRecord(e, None))
            self.check(self.hip.hipEventSynchronize(pairs[-1][1]))
            return [self._elapsed(s, e) for s, e in pairs]
        finally:
            for s, e in pairs:
                self.hip.hipEventDestroy(s)
                self.hip.hipEventDestroy(e)

    def period(self, enqueue, k) -> float:
        s, e = self._event(), self._event()
        self.check(self.hip.hipEventRecord(s, None))
        for _ in range(k):
            enqueue()
        self.check(self.hip.hipEventRecord(e, None))
        self.check(self.hip.hipEventSynchronize(e))
        return self._elapsed(s, e) / k

    def synchronize(self) -> None:
        self.check(self.hip.hipDeviceSynchronize())

    def empty_kernel(self):
        n = 4
        buf = self.check(self.hip.hipMalloc(n))
        return (lambda: self.check(self.hip.hipMemsetAsync(buf, 0, n, None))), "4-byte memset"


_OVERHEADS: dict[str, tuple[float, str]] = {}


def event_overhead(clock) -> tuple[float, str]:
    """(ms, how): what an event pair adds to a kernel's time: the median of 200 event pairs with
    nothing enqueued between them, queued as samples are (H100: 1.25 us, H200: 2.98 us). CUDA
    clocks only: 0 on AMD, where no Nsight Compute-like reference was there to validate it.
    Cached per process and device."""
    key = f"{clock.api}:{clock.name}"
    if key not in _OVERHEADS:
        if clock.api != "cuda":
            _OVERHEADS[key] = (0.0, f"not calibrated on {clock.api}: raw event times")
        else:
            clock.measure(_nothing, 10)
            ms = float(np.median(clock.measure(_nothing, 200)))
            _OVERHEADS[key] = (max(0.0, ms), f"empty event pair: {ms * 1e3:.2f} us (median of 200)")
    return _OVERHEADS[key]


def _nothing() -> None:
    """What an empty event pair encloses."""


def subtract_event_overhead(t: Timing, clock) -> Timing:
    """Take the clock's event overhead off t's median and p10/p90 (in place; the raw median stays
    in t.event_ms)."""
    t.event_ms = t.median_ms
    overhead = event_overhead(clock)[0]
    if overhead:
        t.overhead_ms, t.source = overhead, "events-overhead"
        t.median_ms, t.p10_ms, t.p90_ms = t.median_ms - overhead, t.p10_ms - overhead, t.p90_ms - overhead
    return t


_FLOORS: dict[str, tuple[float, str]] = {}


def launch_floor(clock) -> tuple[float, str]:
    """(ms, method): the cost of launching an empty kernel through this dispatch path: the larger
    of its event-timed device time and the period of 200 back-to-back launches. Cached per process."""
    key = f"{clock.api}:{clock.name}"
    if key not in _FLOORS:
        enqueue, method = clock.empty_kernel()
        for _ in range(10):                    # module load, first-launch costs
            enqueue()
        clock.synchronize()
        dev = float(np.median(clock.measure(enqueue, 50)))
        per = float(np.median([clock.period(enqueue, 200) for _ in range(3)]))
        _FLOORS[key] = (max(dev, per), f"{method}: device {dev * 1e3:.2f} us, back-to-back period {per * 1e3:.2f} us")
    return _FLOORS[key]


# --------------------------------------------------------------------------- prepared launches
class DeviceImages:
    """A Launch's buffers on the device (guard layout of the executors), with pristine copies of
    the outputs so every timed sample starts from the same state."""

    def __init__(self, launch):
        import cupy
        from .executors.hip_nvidia import guarded_image
        self.cp, self.launch = cupy, launch
        self.hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        self.images = {n: guarded_image(h) for n, h in self.hosts.items()}
        self.dev = {n: cupy.asarray(img) for n, img in self.images.items()}
        self.pristine = {n: self.dev[n].copy() for n in launch.outputs if n in self.dev}
        self.inplace = any(a.kind == "ptr" and a.value is None for a in launch.args)

    def refresh(self) -> None:
        """Re-upload every buffer from the host (inputs and the pristine outputs)."""
        for n, img in self.images.items():
            self.dev[n].set(img)
        for n in self.pristine:
            self.pristine[n].set(self.images[n])
        self.cp.cuda.Device().synchronize()

    def restore(self, clock) -> None:
        for n, p in self.pristine.items():
            clock.copy(int(self.dev[n].data.ptr), int(p.data.ptr), p.nbytes)

    def outputs(self) -> dict[str, np.ndarray]:
        """Output images (guards included), downloaded."""
        return {n: self.cp.asnumpy(self.dev[n]) for n in self.launch.outputs}

    def release(self) -> None:
        self.dev.clear()
        self.pristine.clear()


class CupyPrepared(DeviceImages):
    """A suite kernel's Launch on CuPy device buffers, ready to be enqueued any number of times."""

    def __init__(self, func, launch):
        super().__init__(launch)
        from .executors.hip_nvidia import GUARD_BYTES, arg_values
        self.func = func
        self._infos = []

        def info_address(a):
            d = self.cp.asarray(a)
            self._infos.append(d)
            return int(d.data.ptr)
        self.args = tuple(arg_values(launch, lambda n: int(self.dev[n].data.ptr) + GUARD_BYTES, info_address))
        self.grid = tuple(int(g) for g in launch.grid)
        self.block = tuple(int(b) for b in launch.block)
        self.shared = int(launch.shared_mem)
        self.cp.cuda.Device().synchronize()

    def enqueue(self) -> None:
        self.func(self.grid, self.block, self.args, shared_mem=self.shared)

    def release(self) -> None:
        super().release()
        self._infos.clear()


def prepared_for(executor, launch):
    """A prepared launch for `executor` (hip-on-nvidia, cuda, cupy, amd) or raise TypeError."""
    if hasattr(executor, "prepared"):                 # executors that know how (cupy reference, amd)
        return executor.prepared(launch)
    if hasattr(executor, "_functions") and hasattr(executor, "prepare"):
        err = executor.prepare(launch.kernel)
        if err is not None:
            raise RuntimeError(f"{err.status}: {err.message}")
        return CupyPrepared(executor._functions[launch.kernel], launch)
    raise TypeError(f"level {getattr(executor, 'level', '?')} cannot be timed")


_CLOCKS: dict = {}


def clock_for(executor, flush_factor: float = 2.0):
    """The process's clock for this executor's API (one per device: its flush buffer is 2x L2)."""
    api = "hip" if getattr(executor, "level", "") == "amd" else "cuda"
    key = (api, _current_device(api), flush_factor)
    if key not in _CLOCKS:
        _CLOCKS[key] = (HipClock if api == "hip" else CupyClock)(flush_factor)
    return _CLOCKS[key]


def _current_device(api: str) -> int:
    if api == "cuda":
        import cupy
        return int(cupy.cuda.Device().id)
    return 0


def time_prepared(prep, clock, opts: TimingOptions,
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


def time_launch(executor, launch, opts: TimingOptions | None = None,
                reference_outputs: dict[str, np.ndarray] | None = None) -> Timing:
    """Time one launch on an in-process executor. reference_outputs: the ExecResult outputs of the
    correctness run (logical buffers, no guards), compared with the output after timing."""
    opts = opts or TimingOptions()
    clock = clock_for(executor, opts.flush_factor)
    prep = prepared_for(executor, launch)
    try:
        refs = None
        if reference_outputs is not None:
            refs = {n: _guarded(prep, n, reference_outputs[n]) for n in reference_outputs if n in launch.outputs}
        t = time_prepared(prep, clock, opts, refs)
    finally:
        prep.release()
    if isinstance(clock, CupyClock):
        try:
            t.peak_gbps = peak_bandwidth(clock)["gbps"]
        except Exception as e:
            t.note = (t.note + "; " if t.note else "") + f"no peak bandwidth: {e}"
    return t


def _guarded(prep, name, arr):
    """A reference output in the prepared launch's image form (guard + bytes + guard)."""
    from .executors.hip_nvidia import guarded_image
    if hasattr(prep, "image_of"):
        return prep.image_of(name, arr)
    return guarded_image(np.ascontiguousarray(arr))


# ----------------------------------------------------------------------------- peak bandwidth
def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "device"


def peak_path(device_name: str) -> Path:
    from .compile_cache import cache_dir
    return cache_dir() / "bandwidth" / f"{_slug(device_name)}.json"


def measure_copy_gbps(clock, nbytes: int, opts: TimingOptions | None = None) -> dict:
    """Device-to-device copy of `nbytes` (reads nbytes, writes nbytes): GB/s of read+write bytes."""
    opts = opts or TimingOptions(mode="cold", max_noise=0.01, min_samples=10, time_cap_s=3.0)
    import cupy
    src = cupy.empty(nbytes, dtype=cupy.uint8)
    dst = cupy.empty(nbytes, dtype=cupy.uint8)
    src.fill(1)
    dst.fill(0)
    try:
        enqueue = lambda: clock.copy(int(dst.data.ptr), int(src.data.ptr), nbytes)
        t = sample(lambda k: clock.measure(enqueue, k, clock.flush if opts.mode == "cold" else None), opts)
    finally:
        del src, dst
        cupy.get_default_memory_pool().free_all_blocks()
    return {"gbps": 2 * nbytes / (t.median_ms * 1e-3) / 1e9, "ms": t.median_ms, "p10_ms": t.p10_ms,
            "p90_ms": t.p90_ms, "samples": t.n, "bytes_copied": nbytes, "bytes_moved": 2 * nbytes}


def peak_bandwidth(clock=None, refresh: bool = False, nbytes: int = 1 << 30) -> dict:
    """The device's practical peak (GB/s): a 1 GiB device-to-device copy, measured once per device
    and cached under the parity cache dir with provenance (device, date, method, versions)."""
    clock = clock or CupyClock()
    path = peak_path(clock.name)
    if path.exists() and not refresh:
        try:
            doc = json.loads(path.read_text())
            if doc.get("gbps"):
                doc["cached"] = True
                return doc
        except (OSError, json.JSONDecodeError):
            pass
    m = measure_copy_gbps(clock, nbytes)
    env = gpu_environment()
    doc = {"device": clock.name, "gbps": m["gbps"], "method": f"cudaMemcpyAsync device-to-device of {nbytes} B, "
           f"(read + write bytes) / median of {m['samples']} event-timed samples, L2 flushed",
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "measurement": m,
           "driver": env.get("driver"), "cuda_runtime": env.get("cuda_runtime"), "uuid": env.get("uuid")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(path)
    except OSError:
        pass
    doc["cached"] = False
    return doc


# -------------------------------------------------------------------------------- environment
def _ver(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}" if v else ""


def gpu_environment() -> dict:
    """GPU name, SM count, clocks, memory, driver and CUDA versions, CuPy and hip-python versions.
    {} without a usable CUDA device (hip-python's version is still reported when installed)."""
    out: dict = {}
    try:
        import hip  # noqa: F401
        from importlib.metadata import version
        out["hip_python"] = version("hip-python")
    except Exception:
        pass
    try:
        import cupy
        out["cupy"] = cupy.__version__
        if not cupy.cuda.is_available():
            return out
        rt = cupy.cuda.runtime
        dev = cupy.cuda.Device()
        p = rt.getDeviceProperties(dev.id)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        out.update({
            "name": name, "index": dev.id, "count": rt.getDeviceCount(),
            "compute_capability": dev.compute_capability, "sm_count": p.get("multiProcessorCount"),
            "sm_clock_mhz": (p.get("clockRate") or 0) / 1000 or None,
            "mem_clock_mhz": (p.get("memoryClockRate") or 0) / 1000 or None,
            "mem_bus_bits": p.get("memoryBusWidth"), "l2_bytes": p.get("l2CacheSize"),
            "memory_bytes": p.get("totalGlobalMem"), "driver_api": _ver(rt.driverGetVersion()),
            "cuda_runtime": _ver(rt.runtimeGetVersion()),
        })
        if out["mem_clock_mhz"] and out["mem_bus_bits"]:
            out["theoretical_gbps"] = 2 * out["mem_clock_mhz"] * 1e6 * out["mem_bus_bits"] / 8 / 1e9
        try:
            out["uuid"] = p.get("uuid").hex() if isinstance(p.get("uuid"), bytes) else None
        except Exception:
            pass
        out.update(_nvidia_smi(dev.id))
        out.update(_toolkit())
    except Exception as e:
        out.setdefault("error", f"{type(e).__name__}: {e}")
    return out


def _nvidia_smi(index: int) -> dict:
    import shutil
    import subprocess
    if not shutil.which("nvidia-smi"):
        return {}
    q = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits", "-i", str(index)],
                           capture_output=True, text=True, timeout=20)
        vals = [v.strip() for v in r.stdout.strip().split(",")]
        keys = ["driver", "clock_sm_now_mhz", "clock_mem_now_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz",
                "power_limit_w", "persistence_mode"]
        return dict(zip(keys, vals)) if len(vals) == len(keys) else {}
    except Exception:
        return {}


def _toolkit() -> dict:
    import shutil
    import subprocess
    out = {}
    if shutil.which("nvcc"):
        try:
            r = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=20)
            m = re.search(r"release ([\d.]+)", r.stdout)
            out["nvcc"] = m.group(1) if m else r.stdout.strip().splitlines()[-1]
        except Exception:
            pass
    try:
        from cupy_backends.cuda.libs import nvrtc
        out["nvrtc"] = "%d.%d" % nvrtc.getVersion()
    except Exception:
        pass
    return out

