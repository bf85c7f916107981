"""BLAS backends of the `blas.gemm` host routine: cuBLAS through CuPy (levels hip-on-nvidia and
cuda: hipBLAS on NVIDIA is cuBLAS) and hipBLAS through ctypes (level amd).

The argument marshalling is pure (`cublas_call`, `hipblas_call`: a GemmConfig + dtype + device
pointers -> the function name and its argument tuple) and unit-tested without a GPU; the device
calls are isolated in `CupyBlas.run` / `HipBlas.run` and import their libraries lazily.

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
from dataclasses import dataclass

import numpy as np

from ..ops.base import Launch
from .base import ExecResult

# cuBLAS / CUDA library enums (cublas_api.h, library_types.h)
CUBLAS_OP = {"N": 0, "T": 1}
CUDA_R = {"f32": 0, "f64": 1, "f16": 2, "bf16": 14}
CUBLAS_COMPUTE_32F = 68
CUBLAS_COMPUTE_32F_FAST_TF32 = 77
CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99
# hipBLAS enums. v1: hipblasDatatype_t / compute as a datatype; v2 (hipBLAS >= 3, or the `_v2`
# symbols of hipBLAS 2.x): hipDataType + hipblasComputeType_t.
HIPBLAS_OP = {"N": 111, "T": 112}
HIPBLAS_R_V1 = {"f16": 150, "f32": 151, "f64": 152, "bf16": 168}
HIP_R_V2 = {"f32": 0, "f64": 1, "f16": 2, "bf16": 14}
HIPBLAS_COMPUTE_32F_V2 = 2
HIPBLAS_GEMM_DEFAULT = 160
HIPBLAS_STATUS = {0: "HIPBLAS_STATUS_SUCCESS", 1: "HIPBLAS_STATUS_NOT_INITIALIZED", 2: "HIPBLAS_STATUS_ALLOC_FAILED",
                  3: "HIPBLAS_STATUS_INVALID_VALUE", 4: "HIPBLAS_STATUS_MAPPING_ERROR",
                  5: "HIPBLAS_STATUS_EXECUTION_FAILED", 6: "HIPBLAS_STATUS_INTERNAL_ERROR",
                  7: "HIPBLAS_STATUS_NOT_SUPPORTED", 8: "HIPBLAS_STATUS_ARCH_MISMATCH",
                  9: "HIPBLAS_STATUS_HANDLE_IS_NULLPTR", 10: "HIPBLAS_STATUS_INVALID_ENUM",
                  11: "HIPBLAS_STATUS_UNKNOWN"}


@dataclass(frozen=True)
class BlasCall:
    fn: str
    args: tuple
    compute: str          # human-readable compute type, for result rows


def scalars(dt: str) -> tuple[np.ndarray, np.ndarray]:
    """alpha = 1, beta = 0 as host arrays: f64 for dgemm, f32 otherwise (COMPUTE_32F)."""
    t = np.float64 if dt == "f64" else np.float32
    return np.array([1.0], dtype=t), np.array([0.0], dtype=t)


def cublas_call(cfg, dt: str, handle: int, a: int, b: int, c: int, alpha: int, beta: int) -> BlasCall:
    """CuPy's cupy_backends.cuda.libs.cublas function and arguments (pointers as ints)."""
    ta, tb = CUBLAS_OP[cfg.transa], CUBLAS_OP[cfg.transb]
    if dt == "f64":
        return BlasCall("dgemmStridedBatched",
                        (handle, ta, tb, cfg.m, cfg.n, cfg.k, alpha, a, cfg.lda, cfg.stride_a, b, cfg.ldb,
                         cfg.stride_b, beta, c, cfg.ldc, cfg.stride_c, cfg.batch), "CUBLAS_COMPUTE_64F")
    r = CUDA_R[dt]
    return BlasCall("gemmStridedBatchedEx",
                    (handle, ta, tb, cfg.m, cfg.n, cfg.k, alpha, a, r, cfg.lda, cfg.stride_a, b, r, cfg.ldb,
                     cfg.stride_b, beta, c, r, cfg.ldc, cfg.stride_c, cfg.batch, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT_TENSOR_OP), "CUBLAS_COMPUTE_32F")


def hipblas_call(cfg, dt: str, handle: int, a: int, b: int, c: int, alpha: int, beta: int,
                 api: str = "v2") -> BlasCall:
    """hipBLAS C function and arguments. api: "v1" (hipblasDatatype_t), "v2" (hipDataType +
    hipblasComputeType_t), "v2-suffixed" (hipBLAS 2.x `_v2` symbols)."""
    ta, tb = HIPBLAS_OP[cfg.transa], HIPBLAS_OP[cfg.transb]
    if dt in ("f32", "f64"):
        fn = "hipblasSgemmStridedBatched" if dt == "f32" else "hipblasDgemmStridedBatched"
        return BlasCall(fn, (handle, ta, tb, cfg.m, cfg.n, cfg.k, alpha, a, cfg.lda, cfg.stride_a, b, cfg.ldb,
                             cfg.stride_b, beta, c, cfg.ldc, cfg.stride_c, cfg.batch),
                        "f32 (sgemm)" if dt == "f32" else "f64 (dgemm)")
    if api == "v1":
        r, comp = HIPBLAS_R_V1[dt], HIPBLAS_R_V1["f32"]
    else:
        r, comp = HIP_R_V2[dt], HIPBLAS_COMPUTE_32F_V2
    fn = "hipblasGemmStridedBatchedEx" + ("_v2" if api == "v2-suffixed" else "")
    return BlasCall(fn, (handle, ta, tb, cfg.m, cfg.n, cfg.k, alpha, a, r, cfg.lda, cfg.stride_a, b, r, cfg.ldb,
                         cfg.stride_b, beta, c, r, cfg.ldc, cfg.stride_c, cfg.batch, comp, HIPBLAS_GEMM_DEFAULT),
                    "HIPBLAS_COMPUTE_32F")


# ctypes argument types of the hipBLAS calls (pointer, enum = c_int, int, int64 strides)
_P, _I, _L = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
HIPBLAS_ARGTYPES = {
    "hipblasSgemmStridedBatched": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _L, _P, _I, _L, _P, _P, _I, _L, _I],
    "hipblasDgemmStridedBatched": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _L, _P, _I, _L, _P, _P, _I, _L, _I],
    "hipblasGemmStridedBatchedEx": [_P, _I, _I, _I, _I, _I, _P, _P, _I, _I, _L, _P, _I, _I, _L, _P, _P, _I, _I, _L,
                                    _I, _I, _I],
}
HIPBLAS_ARGTYPES["hipblasGemmStridedBatchedEx_v2"] = HIPBLAS_ARGTYPES["hipblasGemmStridedBatchedEx"]


def hipblas_status(code: int) -> str:
    return HIPBLAS_STATUS.get(int(code), f"hipblasStatus {int(code)}")


def hipblas_api(lib) -> str:
    """Which enum set a loaded libhipblas takes for GemmStridedBatchedEx."""
    if hasattr(lib, "hipblasGemmStridedBatchedEx_v2"):
        try:
            getattr(lib, "hipblasGemmStridedBatchedEx_v2")
            return "v2-suffixed"
        except AttributeError:
            pass
    name = getattr(lib, "_name", "") or ""
    return "v2" if ".so.3" in name or ".so.4" in name else "v1"


def gemm_pointers(launch: Launch, base: dict[str, int], itemsize: int) -> tuple[int, int, int]:
    """(a, b, c) device pointers: a = rhs, b = lhs (Cᵀ = Bᵀ·Aᵀ), each advanced by its start offset."""
    args = {x.name: x for x in launch.args}
    ptr = lambda n: base[args[n].value[0]] + int(args[n].value[1]) * itemsize
    return ptr("rhs"), ptr("lhs"), ptr("dst")


# ------------------------------------------------------------------------------ devices
class CupyBlas:
    """cuBLAS through CuPy on the current device, with guarded buffers like the kernel executor."""

    def __init__(self):
        import cupy
        from cupy_backends.cuda.libs import cublas
        self.cupy, self.cublas = cupy, cublas
        self.handle = cupy.cuda.device.get_cublas_handle()

    def run(self, launch: Launch, cfg, dt: str) -> ExecResult:
        from .hip_nvidia import GUARD_BYTES, HipOnNvidiaExecutor, guarded_image
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
        return HipOnNvidiaExecutor.judge(launch, hosts, images, cupy.cuda.get_elapsed_time(t0, t1))

    def bench(self, dt: str, m: int, n: int, k: int, iters: int = 20, warmup: int = 3) -> dict:
        """Square-ish GEMM throughput: median over `iters` timed calls (CUDA events)."""
        from ..ops.matmul import GemmConfig
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
        from .amd import _check, device_buffers
        from .hip_nvidia import HipOnNvidiaExecutor
        try:
            with device_buffers(launch) as (hosts, ptrs, images):
                item = hosts["dst"].dtype.itemsize
                a, b, c = gemm_pointers(launch, ptrs, item)
                alpha, beta = scalars(dt)
                t0 = time.perf_counter()
                self.call(hipblas_call(cfg, dt, self.handle, a, b, c, alpha.ctypes.data, beta.ctypes.data,
                                       self.api))
                _check(hip.hipDeviceSynchronize())
                ms = (time.perf_counter() - t0) * 1e3
        except Exception as e:
            return ExecResult("crash", message=f"hipBLAS gemm: {e}")
        return HipOnNvidiaExecutor.judge(launch, hosts, images, ms)


def _load_hipblas():
    last = None
    for name in ("libhipblas.so.3", "libhipblas.so.2", "libhipblas.so", "/opt/rocm/lib/libhipblas.so"):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            last = e
    raise ImportError(f"libhipblas not found ({last})")
