"""Broken subjects for matmul, pooling and convolution, built on the CPU ABI emulation: each
overrides one hook to reproduce a bug a port can ship. tests/test_matmul_conv.py asserts each
is caught."""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import math

import numpy as np

from parity.executors.cpu import CpuExecutor
from parity.host.marshal import GUARD_BYTES, guarded_image
from parity.host.miopen import DATATYPE, Miopen
from parity.core.dtypes import dtype
from parity.core.numerics import round_float, to_f64
from parity.ops.matmul import MatMulNonContiguous, gemm_config


class LdaFromWrongOperand(CpuExecutor):
    """gemm_config that takes lda from the lhs (ldb's value) instead of the rhs."""
    def gemm_config(self, bmnk, lhs, rhs):
        cfg = gemm_config(bmnk, lhs, rhs)
        return dataclasses.replace(cfg, lda=cfg.ldb)


class NoBatchStrideForBroadcast(CpuExecutor):
    """Batch stride 0 (broadcast) replaced by the packed n*k: reads past the broadcast matrix."""
    def gemm_config(self, bmnk, lhs, rhs):
        cfg = gemm_config(bmnk, lhs, rhs)
        return dataclasses.replace(cfg, stride_a=cfg.stride_a or cfg.m * cfg.k)


class NeverRefuses(CpuExecutor):
    """A port that computes something for layouts Candle refuses (copies to contiguous first)."""
    def gemm_config(self, bmnk, lhs, rhs):
        try:
            return gemm_config(bmnk, lhs, rhs)
        except MatMulNonContiguous:
            b, m, n, k = bmnk
            from parity.ops.matmul import GemmConfig
            return GemmConfig("N", "N", n, m, k, n, k, n, n * k, m * k, m * n, b)


class Im2colIgnoresDilation(CpuExecutor):
    """im2col / im2col1d that step by 1 whatever the dilation."""
    def im2col_dilation(self, d):
        return 1


class PoolIgnoresSwappedNames(CpuExecutor):
    """A pool kernel that reads w_k/w_stride as the last dim (dims[3]), as the names suggest."""
    def pool_params(self, w_k, h_k, w_stride, h_stride):
        return h_k, w_k, h_stride, w_stride


class ConvGemmReadsOriginalKernel(CpuExecutor):
    """CUDA Candle's conv host path: after copying a non-contiguous kernel into kernel_c, the
    GEMM still reads the original buffer as a contiguous (c_out, c_in*k) matrix."""
    conv_gemm_kernel = "original"


# ------------------------------------------------------------------ MIOpen without a GPU
def direct_conv(x: np.ndarray, w: np.ndarray, pad, stride, dil) -> np.ndarray:
    """NCHW x OIHW convolution in float64 straight from the definition (per-axis parameters),
    independent of parity's im2col-based reference."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh = (h + 2 * pad[0] - dil[0] * (r - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (s - 1) - 1) // stride[1] + 1
    xp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]))
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x
    y = np.zeros((n, k, oh, ow))
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                       j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
            y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return y


_DT_OF = {code: name for name, code in DATATYPE.items()}


def _at(addr: int, dt, shape) -> np.ndarray:
    """The memory at a (host) address as an array of `shape` (writes go through)."""
    nbytes = math.prod(shape) * dt.bits // 8
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))
    return raw.view(dt.np).reshape(shape)


class NumpyMiopen:
    """A libMIOpen that computes: descriptors are recorded and miopenConvolutionForward convolves
    the tensors at the (host) addresses it is given, in float64 rounded once. `fail` maps a
    function name to the miopenStatus it returns."""

    def __init__(self, fail: dict | None = None):
        self.fail, self.calls = dict(fail or {}), []
        self.tensors, self.convs, self._next = {}, {}, 0

    def _call(self, name: str, *args) -> int:
        self.calls.append((name, args))
        return self.fail.get(name, 0)

    def _new(self, ref) -> None:
        self._next += 1
        ref._obj.value = self._next

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def miopenCreate(self, ref):
        self._new(ref)
        return self._call("miopenCreate", ref)

    def miopenCreateTensorDescriptor(self, ref):
        self._new(ref)
        return self._call("miopenCreateTensorDescriptor", ref)

    def miopenSet4dTensorDescriptor(self, d, dt, n, c, h, w):
        self.tensors[d.value] = (_DT_OF[dt], (n, c, h, w))
        return self._call("miopenSet4dTensorDescriptor", d, dt, n, c, h, w)

    def miopenCreateConvolutionDescriptor(self, ref):
        self._new(ref)
        return self._call("miopenCreateConvolutionDescriptor", ref)

    def miopenInitConvolutionDescriptor(self, d, mode, ph, pw, sh, sw, dh, dw):
        self.convs[d.value] = ((ph, pw), (sh, sw), (dh, dw))
        return self._call("miopenInitConvolutionDescriptor", d, mode, ph, pw, sh, sw, dh, dw)

    def miopenGetConvolutionForwardOutputDim(self, cd, xd, wd, *refs):
        (pad, st, dil), (_, x), (_, w) = self.convs[cd.value], self.tensors[xd.value], self.tensors[wd.value]
        dims = (x[0], w[0]) + tuple((x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // st[i] + 1
                                    for i in range(2))
        for ref, v in zip(refs, dims):
            ref._obj.value = v
        return self._call("miopenGetConvolutionForwardOutputDim", cd, xd, wd)

    def miopenConvolutionForwardGetWorkSpaceSize(self, handle, wd, xd, cd, yd, ref):
        ref._obj.value = 256
        return self._call("miopenConvolutionForwardGetWorkSpaceSize", wd, xd, cd, yd)

    def miopenFindConvolutionForwardAlgorithm(self, handle, xd, x, wd, w, cd, yd, y, req, count, perf, ws, ws_size,
                                              exhaustive):
        count._obj.value = 1
        perf[0] = 1                                  # miopenConvolutionFwdAlgoDirect
        return self._call("miopenFindConvolutionForwardAlgorithm", x.value, w.value, y.value, req, ws.value,
                          ws_size.value, exhaustive)

    def miopenConvolutionForward(self, handle, alpha, xd, x, wd, w, cd, algo, beta, yd, y, ws, ws_size):
        st = self._call("miopenConvolutionForward", x.value, w.value, y.value, algo, ws.value, ws_size.value)
        if st:
            return st
        (dt, xs), (_, ws_), (_, ys) = self.tensors[xd.value], self.tensors[wd.value], self.tensors[yd.value]
        t = dtype(dt)
        r = direct_conv(to_f64(_at(x.value, t, xs)), to_f64(_at(w.value, t, ws_)), *self.convs[cd.value])
        _at(y.value, t, ys)[...] = round_float(alpha._obj.value * r, t).astype(t.np)
        return 0

    def miopenDestroyTensorDescriptor(self, d):
        return self._call("miopenDestroyTensorDescriptor", d)

    def miopenDestroyConvolutionDescriptor(self, d):
        return self._call("miopenDestroyConvolutionDescriptor", d)

    def miopenDestroy(self, h):
        return self._call("miopenDestroy", h)


class HostMemory:
    """The amd level's device memory on the host (amd.HipMemory's interface): a launch's buffers
    as guarded images at real addresses, workspaces as NumPy scratch."""

    def __init__(self):
        self.bases: dict[str, int] = {}          # buffer -> address of its first element, last launch
        self.live: dict[int, np.ndarray] = {}
        self.allocs: list[int] = []

    @contextlib.contextmanager
    def buffers(self, launch):
        hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        images = {n: guarded_image(h) for n, h in hosts.items()}
        self.bases = {n: int(img.ctypes.data) + GUARD_BYTES for n, img in images.items()}
        yield hosts, dict(self.bases), images

    def alloc(self, nbytes: int) -> int:
        a = np.zeros(nbytes, np.uint8)
        self.live[int(a.ctypes.data)] = a
        self.allocs.append(nbytes)
        return int(a.ctypes.data)

    def free(self, ptr: int) -> None:
        del self.live[ptr]

    def synchronize(self) -> None:
        pass


class MiopenOnHost(CpuExecutor):
    """The amd level's conv route with the device faked: the real Miopen binding over `lib`
    (None: libMIOpen absent), host memory as the device, and the im2col fallback's launches on
    the CPU emulation."""
    level = "amd"

    def __init__(self, lib=None, device: int = 0):
        super().__init__()
        self.lib, self.device, self.memory = lib, device, HostMemory()
        self._mi = None

    def miopen(self) -> Miopen:
        if self.lib is None:
            raise ImportError("libMIOpen.so not found (no MIOpen on this machine)")
        if self._mi is None:
            self._mi = Miopen(self.lib, device=self.device)
        return self._mi

    def device_memory(self) -> HostMemory:
        return self.memory


__all__ = ["LdaFromWrongOperand", "NoBatchStrideForBroadcast", "NeverRefuses", "Im2colIgnoresDilation",
           "PoolIgnoresSwappedNames", "ConvGemmReadsOriginalKernel", "direct_conv", "NumpyMiopen", "HostMemory",
           "MiopenOnHost"]
