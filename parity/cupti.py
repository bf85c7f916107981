"""Kernel start/end timestamps from CUPTI's activity API, through ctypes.

CUDA events time the stream between two event records, which adds the front end's launch
processing to every sample (about 1 us on an H100: +35% on a 3.5 us kernel). CUPTI's kernel
activity records carry the kernel's own start and end timestamps, the ones Nsight Systems shows
and Nsight Compute's `gpu__time_duration` agrees with, so they are parity's first choice for
kernel time on NVIDIA; events stay the fallback and are recorded beside them.

    rec = KernelRecorder.load()          # None when libcupti is absent or refuses (reason: why_not())
    rec.start(); ...launch kernels...; kernels = rec.stop()     # [KernelRecord], in start order

No CUPTI Python package is needed: the library ships with the CUDA toolkit
(`extras/CUPTI/lib64`) and in the `nvidia-cuda-cupti` wheel. Only the first fields of the kernel
record are read (kind, start, end, stream, grid, block, correlation id, name), whose offsets have
not changed from CUpti_ActivityKernel4 to CUpti_ActivityKernel13.
"""
from __future__ import annotations

import ctypes
import glob
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

KIND_KERNEL = 3
KIND_CONCURRENT_KERNEL = 10
_SUCCESS = 0
_FLUSH_FORCED = 1
_BUFFER_BYTES = 4 << 20
# packed CUpti_ActivityKernelN: kind u32 @0, start u64 @16, end u64 @24, deviceId u32 @40,
# streamId u32 @48, gridX..blockZ i32 @52..72, correlationId u32 @92, name char* @104
_HEAD = struct.Struct("<I12xQQ8xI4xI6i16xI8xQ")


@dataclass(frozen=True)
class KernelRecord:
    name: str
    start_ns: int
    end_ns: int
    device: int
    stream: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    correlation: int

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) * 1e-6


def parse_record(addr: int) -> KernelRecord | None:
    """The kernel record at `addr` (None for other kinds)."""
    kind, start, end, dev, stream, gx, gy, gz, bx, by, bz, corr, name_ptr = _HEAD.unpack(ctypes.string_at(addr, _HEAD.size))
    if kind not in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
        return None
    name = ctypes.string_at(name_ptr).decode(errors="replace") if name_ptr else ""
    return KernelRecord(name, start, end, dev, stream, (gx, gy, gz), (bx, by, bz), corr)


def library_candidates() -> list[str]:
    """Where libcupti may live: $PARITY_CUPTI, the nvidia-cuda-cupti wheel, the CUDA toolkit."""
    out = [os.environ["PARITY_CUPTI"]] if os.environ.get("PARITY_CUPTI") else []
    try:
        import nvidia  # namespace package of NVIDIA's wheels
        for root in getattr(nvidia, "__path__", []):
            out += sorted(glob.glob(os.path.join(root, "*", "lib", "libcupti.so*")), reverse=True)
            out += sorted(glob.glob(os.path.join(root, "cuda_cupti", "lib", "libcupti.so*")), reverse=True)
    except ImportError:
        pass
    for home in filter(None, [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]):
        out += sorted(glob.glob(os.path.join(home, "extras", "CUPTI", "lib64", "libcupti.so*")), reverse=True)
    out += sorted(glob.glob("/usr/local/cuda-*/extras/CUPTI/lib64/libcupti.so*"), reverse=True)
    return out + ["libcupti.so"]


_REQ = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_size_t),
                        ctypes.POINTER(ctypes.c_size_t))
_DONE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t,
                         ctypes.c_size_t)


class KernelRecorder:
    """Collects kernel activity records between start() and stop(). One per process (CUPTI's
    buffer callbacks are process-wide); use KernelRecorder.load()."""

    _instance: "KernelRecorder | None" = None
    _why_not = ""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib, self.path = lib, path
        self._buffers: dict[int, ctypes.Array] = {}
        self._records: list[KernelRecord] = []
        self._lock = threading.Lock()
        self.window = threading.Lock()    # one recording window at a time in this process
        self._req, self._done = _REQ(self._on_request), _DONE(self._on_complete)   # kept alive: CUPTI calls them
        self._check(lib.cuptiActivityRegisterCallbacks(self._req, self._done), "cuptiActivityRegisterCallbacks")

    @classmethod
    def load(cls) -> "KernelRecorder | None":
        """The process's recorder, or None (why_not() says why) when no libcupti loads or it refuses."""
        if cls._instance is not None or cls._why_not:
            return cls._instance
        if os.environ.get("PARITY_NO_CUPTI"):
            cls._why_not = "PARITY_NO_CUPTI is set"
            return None
        errors = []
        for path in library_candidates():
            if os.sep in path and not Path(path).exists():
                continue
            try:
                lib = ctypes.CDLL(path)
                cls._instance = cls(lib, path)
                return cls._instance
            except (OSError, RuntimeError, AttributeError) as e:
                errors.append(f"{path}: {e}")
        cls._why_not = "no usable libcupti (" + ("; ".join(errors[-2:]) or "not found") + ")"
        return None

    @classmethod
    def why_not(cls) -> str:
        return cls._why_not

    def _check(self, rc: int, what: str) -> None:
        if rc != _SUCCESS:
            msg = ctypes.c_char_p()
            try:
                self.lib.cuptiGetResultString(rc, ctypes.byref(msg))
                text = (msg.value or b"").decode()
            except Exception:
                text = ""
            raise RuntimeError(f"{what} failed: CUPTI error {rc} {text}".strip())

    def _on_request(self, buf_pp, size_p, max_records_p) -> None:
        buf = (ctypes.c_uint8 * (_BUFFER_BYTES + 8))()
        addr = (ctypes.addressof(buf) + 7) & ~7                  # CUPTI wants 8-byte alignment
        with self._lock:
            self._buffers[addr] = buf
        buf_pp[0] = ctypes.cast(addr, ctypes.POINTER(ctypes.c_uint8))
        size_p[0] = _BUFFER_BYTES
        max_records_p[0] = 0

    def _on_complete(self, _ctx, _stream, buf_p, _size, valid) -> None:
        addr = ctypes.cast(buf_p, ctypes.c_void_p).value
        rec = ctypes.POINTER(ctypes.c_uint8)()
        found = []
        while self.lib.cuptiActivityGetNextRecord(buf_p, ctypes.c_size_t(valid), ctypes.byref(rec)) == _SUCCESS:
            r = parse_record(ctypes.cast(rec, ctypes.c_void_p).value)
            if r is not None:
                found.append(r)
        with self._lock:
            self._records += found
            self._buffers.pop(addr, None)

    def start(self) -> None:
        self.lib.cuptiActivityFlushAll(_FLUSH_FORCED)            # drop whatever an earlier window left
        with self._lock:
            self._records.clear()
        self._check(self.lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL), "cuptiActivityEnable")

    def stop(self) -> list[KernelRecord]:
        """Disable recording, flush, and return the kernels recorded since start(), by start time.
        The caller synchronises the device first."""
        self.lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
        self._check(self.lib.cuptiActivityFlushAll(_FLUSH_FORCED), "cuptiActivityFlushAll")
        with self._lock:
            out, self._records = sorted(self._records, key=lambda r: r.start_ns), []
        return out
