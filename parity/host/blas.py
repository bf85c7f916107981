"""BLAS backends of the `blas.gemm` host routine: cuBLAS through CuPy (levels hip-on-nvidia and
cuda: hipBLAS on NVIDIA is cuBLAS) and hipBLAS through ctypes (level amd).

The argument marshalling is pure (parity.host.marshal: `cublas_call`, `hipblas_call`) and
unit-tested without a GPU; the device calls are isolated in `CupyBlas.run` / `HipBlas.run` and
import their libraries lazily. The cpu level's `EmulatedBlas` runs the same launch in NumPy.

Calls (Candle HEAD `matmul`, PR `rocm_backend/gemm.rs`; reduced-precision knobs off):
  f32/f16/bf16: cublasGemmStridedBatchedEx(..., CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP),
                f32 alpha = 1, beta = 0
  f64:          cublasDgemmStridedBatched
  AMD f16/bf16: hipblasGemmStridedBatchedEx, compute 32F, f32 alpha/beta, HIPBLAS_GEMM_DEFAULT
  AMD f32/f64:  hipblasSgemmStridedBatched / hipblasDgemmStridedBatched
"""
from __future__ import annotations

import ctypes
import time
from typing import Callable

import numpy as np

from parity.core.dtypes import dtype
from parity.host.hip import check, device_buffers
from parity.host.marshal import (GUARD_BYTES, HIPBLAS_ARGTYPES, BlasCall, cublas_call, gemm_pointers, guarded_image,
                                 hipblas_api, hipblas_call, hipblas_status, judge_images, scalars)
from parity.ops.base import ExecResult, Launch
from parity.ops.matmul import GemmConfig, gemm_buffers


# ------------------------------------------------------------------------------ devices
class CupyBlas:
    """cuBLAS through CuPy on the current device, with guarded buffers like the kernel executor."""

    def __init__(self):
        import cupy
        from cupy_backends.cuda.libs import cublas
        self.cupy, self.cublas = cupy, cublas
        self.handle = cupy.cuda.device.get_cublas_handle()

    def run(self, launch: Launch, cfg, dt: str) -> ExecResult:
        cupy = self.cupy
        hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        dev = {n: cupy.asarray(guarded_image(h)) for n, h in hosts.items()}
        item = hosts["dst"].dtype.itemsize
        a, b, c = gemm_pointers(launch, {n: int(d.data.ptr) + GUARD_BYTES for n, d in dev.items()}, item)
        alpha, beta = scalars(dt)
        call = cublas_call(cfg, dt, self.handle, a, b, c, alpha.ctypes.data, beta.ctypes.data)
        self.cublas.setPointerMode(self.handle, self.cublas.CUBLAS_POINTER_MODE_HOST)
        t0, t1 = cupy.cuda.Event(), cupy.cuda.Event()
        try:
            t0.record()
            getattr(self.cublas, call.fn)(*call.args)
            t1.record()
            t1.synchronize()
        except Exception as e:
            return ExecResult("crash", message=f"{call.fn}: {type(e).__name__}: {e}")
        images = {n: cupy.asnumpy(d) for n, d in dev.items()}
        return judge_images(launch, hosts, images, cupy.cuda.get_elapsed_time(t0, t1))

    def bench(self, dt: str, m: int, n: int, k: int, iters: int = 20, warmup: int = 3) -> dict:
        """Square-ish GEMM throughput: median over `iters` timed calls (CUDA events)."""
        cupy = self.cupy
        rng = cupy.random.default_rng(0)

        def rand(shape):
            x = rng.standard_normal(shape, dtype=np.float64 if dt == "f64" else np.float32)
            if dt == "f16":
                return x.astype(np.float16)
            if dt == "bf16":                       # CuPy has no bfloat16: the bits as uint16
                return (x.view(cupy.uint32) >> 16).astype(cupy.uint16)
            return x
        A, B = rand((k, m)), rand((n, k))
        C = cupy.empty((n, m), dtype=A.dtype)
        cfg = GemmConfig("N", "N", m, n, k, m, k, m, m * k, k * n, m * n, 1)
        alpha, beta = scalars(dt)
        call = cublas_call(cfg, dt, self.handle, A.data.ptr, B.data.ptr, C.data.ptr, alpha.ctypes.data,
                           beta.ctypes.data)
        fn = getattr(self.cublas, call.fn)
        for _ in range(warmup):
            fn(*call.args)
        cupy.cuda.Device().synchronize()
        times = []
        for _ in range(iters):
            t0, t1 = cupy.cuda.Event(), cupy.cuda.Event()
            t0.record()
            fn(*call.args)
            t1.record()
            t1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(t0, t1))
        ms = float(np.median(times))
        return {"dtype": dt, "m": m, "n": n, "k": k, "ms": ms, "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12,
                "compute_type": call.compute, "call": call.fn}


class HipBlas:
    """hipBLAS through ctypes on the current HIP device (level amd). Unverified on hardware."""

    def __init__(self, lib=None, hip=None):
        self.lib = lib if lib is not None else _load_hipblas()
        self.api = hipblas_api(self.lib)
        h = ctypes.c_void_p()
        st = self.lib.hipblasCreate(ctypes.byref(h))
        if st != 0:
            raise RuntimeError(f"hipblasCreate: {hipblas_status(st)}")
        self.handle = h.value or 0

    def call(self, call: BlasCall) -> None:
        fn = getattr(self.lib, call.fn)
        fn.restype = ctypes.c_int
        fn.argtypes = HIPBLAS_ARGTYPES[call.fn]
        st = fn(*call.args)
        if st != 0:
            raise RuntimeError(f"{call.fn}: {hipblas_status(st)}")

    def run(self, launch: Launch, cfg, dt: str) -> ExecResult:
        from hip import hip
        try:
            with device_buffers(launch) as (hosts, ptrs, images):
                item = hosts["dst"].dtype.itemsize
                a, b, c = gemm_pointers(launch, ptrs, item)
                alpha, beta = scalars(dt)
                t0 = time.perf_counter()
                self.call(hipblas_call(cfg, dt, self.handle, a, b, c, alpha.ctypes.data, beta.ctypes.data,
                                       self.api))
                check(hip.hipDeviceSynchronize())
                ms = (time.perf_counter() - t0) * 1e3
        except Exception as e:
            return ExecResult("crash", message=f"hipBLAS gemm: {e}")
        return judge_images(launch, hosts, images, ms)


def _load_hipblas():
    last = None
    for name in ("libhipblas.so.3", "libhipblas.so.2", "libhipblas.so", "/opt/rocm/lib/libhipblas.so"):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            last = e
    raise ImportError(f"libhipblas not found ({last})")


class EmulatedBlas:
    """The cpu level's BLAS: the column-major GEMM in NumPy on the raw buffers, through the
    executor's hooks (`pointer_offset`, `blas_gemm`) that broken subjects override."""

    def __init__(self, pointer_offset: Callable[[int], int], gemm: Callable[..., None]):
        self.pointer_offset, self.gemm = pointer_offset, gemm

    def run(self, launch: Launch, cfg: GemmConfig, dt: str) -> ExecResult:
        bufs = {n: b.copy() for n, b in launch.buffers.items()}
        a, b, c = gemm_buffers(launch, bufs, self.pointer_offset)
        try:
            self.gemm(cfg, a, b, c, dtype(dt))
        except IndexError as e:
            return ExecResult("crash", message=f"emulated {launch.kernel} accessed memory out of bounds: {e}")
        return ExecResult("ok", outputs={n: bufs[n] for n in launch.outputs})
