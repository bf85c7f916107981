"""MIOpen convolution forward through ctypes (the PR's `miopen.rs` path, `--features miopen`).

Packed NCHW 4-D descriptors for x, w and y; `miopenInitConvolutionDescriptor(mode 0 =
miopenConvolution, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w)`; the output dims from
`miopenGetConvolutionForwardOutputDim` are checked against Candle's shape; workspace size, then
`miopenFindConvolutionForwardAlgorithm` (1 algorithm requested, exhaustiveSearch false, first
result), cached per (device, dtype, problem) with its workspace size; `miopenConvolutionForward`
with alpha 1.0f, beta 0.0f. conv1d is a 2-D convolution with H = 1 (padding/stride/dilation on W).

The `amd` level runs `conv.host` launches (Candle's backend conv1d/conv2d) through here first:
`conv_problem` says whether Candle's ROCm backend would (f32/f16/bf16, contiguous operands; start
offsets go on the pointers) and `run_forward` runs one on the executor's device memory. Both, and
`Miopen` itself, are testable with a fake library and host memory standing in for the device
(tests/fakes_matmul_conv.py). Without libMIOpen.so that route is unavailable (`detect`).
"""
from __future__ import annotations

import contextlib
import ctypes
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from parity.host.hip import detect as amd_detect
from parity.host.marshal import judge_images
from parity.ops.base import ExecResult, Launch


class DeviceMemory(Protocol):
    """Device memory for a library that takes raw pointers: hip.HipMemory, or host memory in tests."""
    buffers: Callable[[Launch], contextlib.AbstractContextManager]   # (hosts, pointers, images), as hip.device_buffers

    def alloc(self, nbytes: int) -> int: ...

    def free(self, ptr: int) -> None: ...

    def synchronize(self) -> None: ...


# miopenStatus_t
STATUS = {
    0: "miopenStatusSuccess", 1: "miopenStatusNotInitialized", 2: "miopenStatusInvalidValue",
    3: "miopenStatusBadParm", 4: "miopenStatusAllocFailed", 5: "miopenStatusInternalError",
    6: "miopenStatusNotImplemented", 7: "miopenStatusUnknownError", 8: "miopenStatusUnsupportedOp",
    9: "miopenStatusGpuOperationsSkipped", 10: "miopenStatusVersionMismatch",
}
HINTS = {
    2: "a descriptor value is out of range (negative pad/stride, zero-sized dim)",
    3: "inconsistent problem: channel counts of x and w differ, or y's shape does not match",
    4: "workspace or tuning-database allocation failed",
    6: "no solver for this dtype / problem on this architecture: fall back to im2col + rocBLAS",
    8: "unsupported operation for this dtype",
}
# miopenDataType_t
DATATYPE = {"f16": 0, "f32": 1, "bf16": 5, "f64": 6}
FORWARD_DTYPES = ("f32", "f16", "bf16")     # what Candle's ROCm backend sends to MIOpen
MIOPEN_CONVOLUTION = 0          # miopenConvolutionMode_t


class MiopenError(RuntimeError):
    def __init__(self, fn: str, code: int):
        self.fn, self.code = fn, int(code)
        name = STATUS.get(self.code, f"miopenStatus {self.code}")
        hint = HINTS.get(self.code)
        super().__init__(f"{fn} failed: {name} ({self.code})" + (f": {hint}" if hint else ""))


def status_message(code: int) -> str:
    return STATUS.get(int(code), f"miopenStatus {int(code)}")


@dataclass(frozen=True)
class ConvProblem:
    """One forward convolution: NCHW x (n,c,h,w), OIHW w (k,c,r,s), 2-D params."""
    dtype: str
    x: tuple[int, int, int, int]
    w: tuple[int, int, int, int]
    pad: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]

    def out_dims(self) -> tuple[int, int, int, int]:
        n, _, h, w = self.x
        k, _, r, s = self.w
        oh = (h + 2 * self.pad[0] - self.dilation[0] * (r - 1) - 1) // self.stride[0] + 1
        ow = (w + 2 * self.pad[1] - self.dilation[1] * (s - 1) - 1) // self.stride[1] + 1
        return (n, k, oh, ow)

    @staticmethod
    def conv1d(dtype: str, x3, w3, padding: int, stride: int, dilation: int) -> "ConvProblem":
        """conv1d as H = 1, everything on W (the PR's mapping)."""
        return ConvProblem(dtype, (x3[0], x3[1], 1, x3[2]), (w3[0], w3[1], 1, w3[2]), (0, padding), (1, stride),
                           (1, dilation))


class Miopen:
    """A MIOpen handle plus the algorithm/workspace cache. `lib`: a ctypes CDLL or a fake."""

    def __init__(self, lib=None, device: int = 0):
        self.lib = lib if lib is not None else load_library()
        self.device = device
        self.cache: dict[tuple, tuple[int, int]] = {}    # (device, dtype, problem) -> (algo, ws bytes)
        h = ctypes.c_void_p()
        self._check("miopenCreate", self.lib.miopenCreate(ctypes.byref(h)))
        self.handle = h

    def _check(self, fn: str, code) -> None:
        if int(code) != 0:
            raise MiopenError(fn, code)

    def tensor(self, dtype: str, dims) -> ctypes.c_void_p:
        d = ctypes.c_void_p()
        self._check("miopenCreateTensorDescriptor", self.lib.miopenCreateTensorDescriptor(ctypes.byref(d)))
        n, c, h, w = (int(x) for x in dims)
        self._check("miopenSet4dTensorDescriptor",
                    self.lib.miopenSet4dTensorDescriptor(d, DATATYPE[dtype], n, c, h, w))
        return d

    def conv_desc(self, p: ConvProblem) -> ctypes.c_void_p:
        d = ctypes.c_void_p()
        self._check("miopenCreateConvolutionDescriptor", self.lib.miopenCreateConvolutionDescriptor(ctypes.byref(d)))
        self._check("miopenInitConvolutionDescriptor",
                    self.lib.miopenInitConvolutionDescriptor(d, MIOPEN_CONVOLUTION, p.pad[0], p.pad[1], p.stride[0],
                                                             p.stride[1], p.dilation[0], p.dilation[1]))
        return d

    def forward(self, p: ConvProblem, x_ptr: int, w_ptr: int, y_ptr: int, alloc=None, free=None) -> dict:
        """y = conv(x, w). alloc(nbytes) -> device pointer for the workspace (None: no workspace)."""
        if p.dtype not in FORWARD_DTYPES:
            raise MiopenError("miopenConvolutionForward", 8)
        xd, wd, cd = self.tensor(p.dtype, p.x), self.tensor(p.dtype, p.w), self.conv_desc(p)
        yd = None
        ws_ptr = None
        try:
            dims = [ctypes.c_int() for _ in range(4)]
            self._check("miopenGetConvolutionForwardOutputDim",
                        self.lib.miopenGetConvolutionForwardOutputDim(cd, xd, wd, *[ctypes.byref(v) for v in dims]))
            got = tuple(v.value for v in dims)
            if got != p.out_dims():
                raise MiopenError("miopenGetConvolutionForwardOutputDim", 3)
            yd = self.tensor(p.dtype, got)
            key = (self.device, p.dtype, p)
            cached = key in self.cache
            if not cached:
                ws = ctypes.c_size_t()
                self._check("miopenConvolutionForwardGetWorkSpaceSize",
                            self.lib.miopenConvolutionForwardGetWorkSpaceSize(self.handle, wd, xd, cd, yd,
                                                                             ctypes.byref(ws)))
                ws_ptr = alloc(ws.value) if (alloc and ws.value) else None
                perf = (ctypes.c_int * 8)()          # miopenConvAlgoPerf_t, first field = fwd_algo
                count = ctypes.c_int()
                self._check("miopenFindConvolutionForwardAlgorithm",
                            self.lib.miopenFindConvolutionForwardAlgorithm(
                                self.handle, xd, ctypes.c_void_p(x_ptr), wd, ctypes.c_void_p(w_ptr), cd, yd,
                                ctypes.c_void_p(y_ptr), 1, ctypes.byref(count), perf, ctypes.c_void_p(ws_ptr or 0),
                                ctypes.c_size_t(ws.value), False))
                self.cache[key] = (int(perf[0]), int(ws.value))
            algo, ws_size = self.cache[key]
            if ws_ptr is None and alloc and ws_size:
                ws_ptr = alloc(ws_size)
            alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
            self._check("miopenConvolutionForward",
                        self.lib.miopenConvolutionForward(self.handle, ctypes.byref(alpha), xd, ctypes.c_void_p(x_ptr),
                                                          wd, ctypes.c_void_p(w_ptr), cd, algo, ctypes.byref(beta),
                                                          yd, ctypes.c_void_p(y_ptr), ctypes.c_void_p(ws_ptr or 0),
                                                          ctypes.c_size_t(ws_size)))
            return {"algo": algo, "workspace": ws_size, "cached": cached, "out_dims": got}
        finally:
            if ws_ptr is not None and free:
                free(ws_ptr)
            for d in (xd, wd) + ((yd,) if yd is not None else ()):
                self.lib.miopenDestroyTensorDescriptor(d)
            self.lib.miopenDestroyConvolutionDescriptor(cd)

    def close(self) -> None:
        if self.handle is not None:
            self.lib.miopenDestroy(self.handle)
            self.handle = None


def conv_problem(hc) -> ConvProblem | str:
    """The MIOpen problem of a Candle conv call (`parity.ops.conv_host.HostConv`), or why Candle's
    ROCm backend sends it to im2col + rocBLAS instead."""
    if hc.key not in FORWARD_DTYPES:
        return f"{hc.key} is not one of {'/'.join(FORWARD_DTYPES)}"
    if not hc.src.is_contiguous():
        return "non-contiguous input"
    if not hc.kernel.is_contiguous():
        return "non-contiguous kernel"
    s, p, d = hc.stride, hc.padding, hc.dilation
    if hc.src.rank == 3:
        return ConvProblem.conv1d(hc.key, hc.src.shape, hc.kernel.shape, padding=p, stride=s, dilation=d)
    return ConvProblem(hc.key, tuple(hc.src.shape), tuple(hc.kernel.shape), (p, p), (s, s), (d, d))


def run_forward(mi: Miopen, mem: DeviceMemory, launch: Launch, problem: ConvProblem) -> ExecResult:
    """One forward convolution of a `conv.host` launch on device memory `mem` (hip.HipMemory, or
    a host stand-in in tests): buffers uploaded between guards, x/w/y at their pointers plus start
    offsets, guards and inputs checked after. MiopenError propagates (the caller falls back)."""
    args = {a.name: a for a in launch.args}
    with mem.buffers(launch) as (hosts, ptrs, images):
        item = hosts["dst"].dtype.itemsize
        ptr = lambda n: ptrs[args[n].value[0]] + int(args[n].value[1]) * item
        t0 = time.perf_counter()
        info = mi.forward(problem, ptr("src"), ptr("kernel"), ptr("dst"), alloc=mem.alloc, free=mem.free)
        mem.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
    res = judge_images(launch, hosts, images, ms)
    res.detail = {"conv_route": "miopen", "miopen_algo": info["algo"], "miopen_workspace": info["workspace"],
                  "miopen_cached": info["cached"]}
    return res


def load_library():
    last = None
    for name in ("libMIOpen.so.1", "libMIOpen.so", "/opt/rocm/lib/libMIOpen.so"):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            last = e
    raise ImportError(f"libMIOpen.so not found ({last})")


def detect() -> tuple[bool, str]:
    """(available, reason): MIOpen needs libMIOpen.so and an AMD GPU."""
    try:
        load_library()
    except ImportError as e:
        return False, f"{e}: install MIOpen (apt-get install miopen-hip)"
    ok, why, _ = amd_detect()
    return (ok, "" if ok else f"MIOpen present but {why}")
