"""Device clocks: CUDA events through CuPy (`CupyClock`) and hipEvents through hip-python
(`HipClock`), one interface: flush, copy, measure, period, synchronize, empty_kernel. Plus what a
clock costs: the event overhead subtracted from samples and the launch floor."""
from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from parity.host.hipcall import check
from parity.timing.statistics import Timing


class Clock(Protocol):
    """What the sampler needs of a device API. Times in ms; enqueue callables launch asynchronously."""
    api: str                                          # "cuda" | "hip"
    name: str                                         # device name (caches are per device)

    def flush(self) -> None: ...                      # evict L2 (enqueued)
    def copy(self, dst: int, src: int, nbytes: int) -> None: ...   # device-to-device (enqueued)
    def measure(self, enqueue: Callable[[], None], k: int,
                before: Callable[[], None] | None = None) -> list[float]: ...
    def period(self, enqueue: Callable[[], None], k: int) -> float: ...
    def synchronize(self) -> None: ...
    def empty_kernel(self) -> tuple[Callable[[], None], str]: ...


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
        self.hip, self.check = hip, check
        props = hip.hipDeviceProp_t()
        check(hip.hipGetDeviceProperties(props, 0))
        self.name = props.name.decode() if isinstance(props.name, bytes) else str(props.name)
        self.l2_bytes = int(props.l2CacheSize) or (8 << 20)
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



_CLOCKS: dict = {}


def cupy_clock(flush_factor: float = 2.0) -> CupyClock:
    """This process's CUDA clock for the current device (one per device: its flush buffer is 2x L2)."""
    import cupy
    key = ("cuda", int(cupy.cuda.Device().id), flush_factor)
    if key not in _CLOCKS:
        _CLOCKS[key] = CupyClock(flush_factor)
    return _CLOCKS[key]


def hip_clock(flush_factor: float = 2.0) -> HipClock:
    """This process's HIP clock (device 0: the amd level runs one device per process)."""
    key = ("hip", 0, flush_factor)
    if key not in _CLOCKS:
        _CLOCKS[key] = HipClock(flush_factor)
    return _CLOCKS[key]
