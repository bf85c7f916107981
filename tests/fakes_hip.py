"""A fake hip-python (`hip.hip`, `hip.hiprtc`) for testing the amd level without an AMD GPU:
device memory is NumPy, kernels are Python callables, events read a fake device clock that
advances by each kernel's declared time. Install with `install(monkeypatch)`."""
from __future__ import annotations

import enum
import sys
import types

import numpy as np


class hipError_t(enum.Enum):
    hipSuccess = 0
    hipErrorInvalidValue = 1


class hiprtcResult(enum.Enum):
    HIPRTC_SUCCESS = 0


class hipMemcpyKind(enum.Enum):
    hipMemcpyHostToDevice = 1
    hipMemcpyDeviceToHost = 2
    hipMemcpyDeviceToDevice = 3


OK = hipError_t.hipSuccess


class FakeKernel:
    """body(device, args): args are the launch's ctypes values in ABI order; `ms`: its device time."""

    def __init__(self, body, ms: float):
        self.body, self.ms = body, ms
        self.launches = 0


class FakeDevice:
    """Memory, clock and counters of the fake GPU."""
    BASE = 1 << 32

    def __init__(self, name: str = "Fake MI300X", arch: str = "gfx942", l2_bytes: int = 4 << 20):
        self.name, self.arch, self.l2_bytes = name, arch, l2_bytes
        self.allocs: dict[int, np.ndarray] = {}
        self.next = self.BASE
        self.now_ms = 0.0
        self.memsets = self.d2d_copies = 0

    def buffer(self, ptr: int, nbytes: int) -> np.ndarray:
        """The bytes at device address ptr (inside one allocation)."""
        for base, a in self.allocs.items():
            if base <= ptr and ptr + nbytes <= base + a.size:
                return a[ptr - base:ptr - base + nbytes]
        raise ValueError(f"fake hip: invalid device address {ptr:#x} (+{nbytes})")

    def view(self, ptr: int, dtype, n: int) -> np.ndarray:
        return self.buffer(ptr, n * np.dtype(dtype).itemsize).view(dtype)

    # ------------------------------------------------------------------ the hip.hip API
    def module(self) -> types.ModuleType:
        dev = self
        m = types.ModuleType("hip.hip")
        m.hipError_t, m.hipMemcpyKind = hipError_t, hipMemcpyKind

        class hipDeviceProp_t:
            name, gcnArchName, l2CacheSize = b"", b"", 0
        m.hipDeviceProp_t = hipDeviceProp_t

        def props(p, index):
            p.name, p.gcnArchName, p.l2CacheSize = dev.name.encode(), dev.arch.encode(), dev.l2_bytes
            return (OK,)

        def malloc(n):
            ptr = dev.next
            dev.allocs[ptr] = np.full(int(n), 0xCD, np.uint8)
            dev.next += (int(n) + 4095) // 4096 * 4096 + 4096
            return OK, ptr

        def memcpy(dst, src, n, kind, stream=None):
            n = int(n)
            if kind is hipMemcpyKind.hipMemcpyHostToDevice:
                dev.buffer(int(dst), n)[:] = np.ascontiguousarray(src).reshape(-1).view(np.uint8)[:n]
            elif kind is hipMemcpyKind.hipMemcpyDeviceToHost:
                dst.reshape(-1).view(np.uint8)[:n] = dev.buffer(int(src), n)
            else:
                dev.d2d_copies += 1
                dev.buffer(int(dst), n)[:] = dev.buffer(int(src), n)
            return (OK,)

        def memset(ptr, value, n, stream=None):
            dev.memsets += 1
            dev.buffer(int(ptr), int(n))[:] = value & 0xFF
            dev.now_ms += 0.001
            return (OK,)

        class Event:
            t = None

        def record(e, stream=None):
            e.t = dev.now_ms
            return (OK,)

        def launch(f, gx, gy, gz, bx, by, bz, sharedMemBytes=0, stream=None, kernelParams=None, extra=()):
            f.body(dev, [a.value for a in extra])
            f.launches += 1
            dev.now_ms += f.ms
            return (OK,)
        m.hipGetDeviceProperties = props
        m.hipGetDeviceCount = lambda: (OK, 1)
        m.hipGetDevice = lambda: (OK, 0)
        m.hipMalloc = malloc
        m.hipFree = lambda ptr: (OK,) if dev.allocs.pop(int(ptr), None) is not None else (hipError_t.hipErrorInvalidValue,)
        m.hipMemcpy = memcpy
        m.hipMemcpyAsync = memcpy
        m.hipMemsetAsync = memset
        m.hipEventCreate = lambda: (OK, Event())
        m.hipEventRecord = record
        m.hipEventSynchronize = lambda e: (OK,)
        m.hipEventElapsedTime = lambda s, e: (OK, e.t - s.t)
        m.hipEventDestroy = lambda e: (OK,)
        m.hipDeviceSynchronize = lambda: (OK,)
        m.hipModuleLaunchKernel = launch
        return m


def install(monkeypatch, device: FakeDevice | None = None) -> FakeDevice:
    """Make `from hip import hip, hiprtc` import the fake for the rest of the test."""
    dev = device or FakeDevice()
    pkg, rtc = types.ModuleType("hip"), types.ModuleType("hip.hiprtc")
    rtc.hiprtcResult = hiprtcResult
    pkg.hip, pkg.hiprtc = dev.module(), rtc
    for name, mod in (("hip", pkg), ("hip.hip", pkg.hip), ("hip.hiprtc", rtc)):
        monkeypatch.setitem(sys.modules, name, mod)
    return dev


def unary_f32(fn):
    """A contiguous unary f32 kernel in Candle's ABI (numel, num_dims, info, inp, out); inp null:
    in place on out."""
    def body(dev: FakeDevice, args: list) -> None:
        numel, _, _, inp, out = (int(a) for a in args)
        o = dev.view(out, np.float32, numel)
        o[:] = fn(dev.view(inp, np.float32, numel) if inp else o.copy())
    return body


