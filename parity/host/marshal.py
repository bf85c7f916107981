"""Pure helpers of the host routines and the kernel executors: the guard bytes around every
device buffer and the checks after a launch, the kernel arguments of a Launch, and the marshalling of BLAS arguments (a GemmConfig +
dtype + device pointers -> the function name and its argument tuple). No device, no executor: a
leaf, unit-tested without a GPU."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable

import numpy as np

from parity.core.dtypes import dtype as dtype_of
from parity.core.numerics import scalar_to_dtype
from parity.ops.base import Arg, ExecResult, Launch

GUARD_BYTES = 256
# Guard pattern: not a constant byte, so a kernel storing one repeated value cannot match it.
GUARD = ((np.arange(GUARD_BYTES, dtype=np.uint32) * 37 + 0x5A) & 0xFF).astype(np.uint8)


def guarded_image(host: np.ndarray) -> np.ndarray:
    """guard + the buffer's bytes + guard, as one uint8 array."""
    raw = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
    return np.concatenate([GUARD, raw, GUARD])


def check_image(image: np.ndarray, nbytes: int) -> tuple[bool, bool, np.ndarray]:
    """(guard before intact, guard after intact, the buffer's bytes)."""
    before = bool(np.array_equal(image[:GUARD_BYTES], GUARD))
    after = bool(np.array_equal(image[GUARD_BYTES + nbytes:], GUARD))
    return before, after, image[GUARD_BYTES:GUARD_BYTES + nbytes]


def judge_images(launch: Launch, hosts: dict[str, np.ndarray], images: dict[str, np.ndarray],
                 time_ms: float | None = None) -> ExecResult:
    """A launch's verdict from its buffers as downloaded, guards included (`guarded_image`):
    oob-write, input-clobbered or ok with the outputs. Every executor and host routine judges so."""
    outputs, oob, clobbered = {}, [], []
    for n, h in hosts.items():
        before, after, data = check_image(images[n], h.nbytes)
        if not before:
            oob.append(f"{n}: bytes before the buffer overwritten")
        if not after:
            oob.append(f"{n}: bytes after the buffer ({h.nbytes} B) overwritten")
        got = data.view(h.dtype).reshape(h.shape) if h.nbytes else np.empty(h.shape, h.dtype)
        if n in launch.outputs:
            outputs[n] = got
        elif not np.array_equal(data, h.reshape(-1).view(np.uint8)):
            diff = np.flatnonzero(data != h.reshape(-1).view(np.uint8))
            clobbered.append(f"{n}: {diff.size} byte(s) changed, first at byte {int(diff[0])}")
    if oob:
        return ExecResult("oob-write", outputs, "; ".join(oob), time_ms)
    if clobbered:
        return ExecResult("input-clobbered", outputs, "; ".join(clobbered), time_ms)
    return ExecResult("ok", outputs, "", time_ms)


# -------------------------------------------------------------------- argument packing (pure): the kernel arguments of a Launch as numpy scalars
# By-value integer kinds -> the numpy type whose bytes the kernel receives (suite.py's vocabulary:
# size_t/usize/unsigned long = 8 bytes unsigned, i64 = int64_t/long long, ...). An out-of-range value
# raises (OverflowError/ValueError): a launch parity built wrong, never a wrapped argument.
INT_KINDS = {"size_t": np.uint64, "u64": np.uint64, "i64": np.int64, "u32": np.uint32, "i32": np.int32,
             "u16": np.uint16, "i16": np.int16, "u8": np.uint8, "i8": np.int8}


def scalar_arg(arg: Arg) -> np.generic:
    """A by-value argument as the numpy scalar whose bytes the kernel receives."""
    k = arg.kind
    if k in INT_KINDS:
        t = INT_KINDS[k]
        v = int(arg.value)
        info = np.iinfo(t)
        if not info.min <= v <= info.max:
            raise ValueError(f"argument {arg.name or '?'} = {v} does not fit its kind {k} "
                             f"([{info.min}, {info.max}])")
        return t(v)
    if k == "f32":
        return np.float32(arg.value)
    if k == "f64":
        return np.float64(arg.value)
    if k == "bool":
        return np.bool_(bool(arg.value))
    if k == "scalar":
        dt = dtype_of(arg.dtype)
        v = scalar_to_dtype(arg.value, dt)
        if dt.name == "f16":
            return np.float16(v[0])
        if dt.name == "bf16":
            return v.view(np.uint16)[0]          # raw bits: ABI-identical by value
        if dt.name == "f8_e4m3":
            return v.view(np.uint8)[0]
        return v[0]
    raise ValueError(f"not a by-value argument kind: {k}")


def scalar_args(launch: Launch) -> list[np.generic]:
    """Every by-value argument of `launch` marshalled on the host alone (no device address needed):
    raises what arg_values would raise for them, before any buffer is allocated."""
    return [scalar_arg(a) for a in launch.args if a.kind not in ("ptr", "info")]


def setup_error(e: Exception, launch: Launch, what: str = "setting up buffers") -> ExecResult:
    """The result of a launch parity could not set up (an argument it cannot marshal, an upload
    that failed): parity's own error, verdict `error`, never the kernel's `crash` (not launched)."""
    return ExecResult("error", message=f"parity internal error {what} for {launch.kernel} (not launched): "
                                       f"{type(e).__name__}: {e}")


def arg_values(launch: Launch, buffer_address: Callable[[str], int],
               info_address: Callable[[np.ndarray], int]) -> list[np.generic]:
    """The kernel arguments of `launch`, in ABI order, as numpy scalars.

    buffer_address(name) is the device address of a buffer's first element; info_address(a)
    uploads an info array and returns its address. Pointers carry `offset * itemsize`; null
    pointers and null info are 0.
    """
    vals: list[np.generic] = []
    for a in launch.args:
        if a.kind == "ptr":
            if a.value is None:
                vals.append(np.uint64(0))
            else:
                name, off = a.value
                item = launch.buffers[name].dtype.itemsize
                vals.append(np.uint64(buffer_address(name) + int(off) * item))
        elif a.kind == "info":
            vals.append(np.uint64(0) if a.value is None
                        else np.uint64(info_address(np.asarray(a.value, dtype=np.uint64))))
        else:
            vals.append(scalar_arg(a))
    return vals


# ------------------------------------------------------------------------------ BLAS arguments
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
