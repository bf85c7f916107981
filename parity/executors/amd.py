"""Level `amd`: a HIP suite compiled by hiprtc and launched on an AMD GPU through hip-python.

Detected at run time; without `hip-python`, `libhiprtc` or an AMD device the level is
`unavailable` with the reason, never passed. Arguments are packed by the same pure function as
on NVIDIA (`parity.host.marshal.arg_values`) and laid out by `kernel_arg_buffer` (natural alignment,
what `hipModuleLaunchKernel`'s `HIP_LAUNCH_PARAM_BUFFER_POINTER` expects), which needs no GPU.
Guards, input checks and verdicts are the NVIDIA executor's (`parity.host.marshal.judge_images`).
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Callable

import numpy as np

from parity.core import resources
from parity.executors.base import Availability, Executor, loaded_for_timing
from parity.executors.preflight import compile_failure, not_found, signature_mismatch
from parity.host.blas import HipBlas
from parity.host.hip import HipMemory, detect, device_buffers
from parity.host.hipcall import check
from parity.host.marshal import GUARD_BYTES, arg_values, guarded_image, judge_images, scalar_args, setup_error
from parity.host.miopen import Miopen
from parity.host.routines import is_library_kernel, run_library, suite_kernels
from parity.ops.base import CHAIN_PREFIX, ChainLaunch, ExecResult, Launch
from parity.suite.compile_cache import CompileResult, cache_key, cached_build
from parity.suite.elf import kernels_from_binary
from parity.suite.includes import header_closure
from parity.suite.port import Port, subject_suite
from parity.suite.scan import Suite
from parity.timing import HipClock, hip_clock

HIPRTC_FLAGS = ["-O3", "-std=c++17"]

_CTYPES = {np.dtype(np.uint64): ctypes.c_uint64, np.dtype(np.int64): ctypes.c_int64,
           np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.int32): ctypes.c_int32,
           np.dtype(np.uint16): ctypes.c_uint16, np.dtype(np.int16): ctypes.c_int16,
           np.dtype(np.uint8): ctypes.c_uint8, np.dtype(np.int8): ctypes.c_int8,
           np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
           np.dtype(np.bool_): ctypes.c_bool}


def ctypes_args(values: list[np.generic]) -> list:
    """numpy scalars -> ctypes scalars of the same size (f16 as its uint16 bits)."""
    out = []
    for v in values:
        v = np.asarray(v)
        if v.dtype == np.float16:
            v = v.view(np.uint16)
        out.append(_CTYPES[v.dtype](v.item()))
    return out


def kernel_arg_buffer(values: list[np.generic]) -> bytes:
    """The kernel-argument block: each value at its natural alignment, in order."""
    buf = bytearray()
    for v in values:
        b = np.asarray(v).tobytes()
        align = max(1, len(b))
        buf += b"\0" * (-len(buf) % align)
        buf += b
    buf += b"\0" * (-len(buf) % 8)
    return bytes(buf)


class HipPrepared:
    """A suite kernel's Launch on hipMalloc'd guarded images, with pristine output copies, ready to
    be enqueued any number of times (parity.timing's PreparedLaunch on AMD)."""

    def __init__(self, func, launch: Launch):
        from hip import hip
        self.hip, self.func, self.launch = hip, func, launch
        self.images = {n: guarded_image(np.ascontiguousarray(b)) for n, b in launch.buffers.items()}
        self.dev = {n: int(check(hip.hipMalloc(img.nbytes))) for n, img in self.images.items()}
        self.pristine = {n: int(check(hip.hipMalloc(self.images[n].nbytes))) for n in launch.outputs if n in self.dev}
        self.inplace = any(a.kind == "ptr" and a.value is None for a in launch.args)
        self._infos: list[int] = []

        def info_address(a: np.ndarray) -> int:
            d = int(check(hip.hipMalloc(max(8, a.nbytes))))
            check(hip.hipMemcpy(d, a, a.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
            self._infos.append(d)
            return d
        self.extra = tuple(ctypes_args(arg_values(launch, lambda n: self.dev[n] + GUARD_BYTES, info_address)))
        self.refresh()

    def refresh(self) -> None:
        """Re-upload every buffer from the host (inputs and the pristine outputs)."""
        h2d = self.hip.hipMemcpyKind.hipMemcpyHostToDevice
        for n, img in self.images.items():
            check(self.hip.hipMemcpy(self.dev[n], img, img.nbytes, h2d))
        for n, d in self.pristine.items():
            check(self.hip.hipMemcpy(d, self.images[n], self.images[n].nbytes, h2d))

    def restore(self, clock) -> None:
        for n, d in self.pristine.items():
            clock.copy(self.dev[n], d, self.images[n].nbytes)

    def enqueue(self) -> None:
        check(self.hip.hipModuleLaunchKernel(self.func, *self.launch.grid, *self.launch.block,
                                              sharedMemBytes=int(self.launch.shared_mem), stream=None,
                                              kernelParams=None, extra=self.extra))

    def outputs(self) -> dict[str, np.ndarray]:
        """Output images (guards included), downloaded."""
        out = {}
        for n in self.launch.outputs:
            back = np.empty(self.images[n].nbytes, np.uint8)
            check(self.hip.hipMemcpy(back, self.dev[n], back.nbytes, self.hip.hipMemcpyKind.hipMemcpyDeviceToHost))
            out[n] = back
        return out

    @staticmethod
    def image_of(name: str, arr: np.ndarray) -> np.ndarray:
        return guarded_image(np.ascontiguousarray(arr))

    def release(self) -> None:
        for d in [*self.dev.values(), *self.pristine.values(), *self._infos]:
            self.hip.hipFree(d)
        self.dev.clear()
        self.pristine.clear()
        self._infos.clear()


def rocm_problems(known: str = "") -> list[str]:
    """What else the `amd` level lacks here, beyond `known` (detect()'s first reason): the ROCm
    runtime library, the amdgpu kernel driver (/dev/kfd) that an AMD GPU needs."""
    import ctypes.util
    out = []
    lib = ctypes.util.find_library("amdhip64")
    if not lib and "amdhip64" not in known:
        out.append("no ROCm runtime (libamdhip64 not found): apt-get install libamdhip64-dev "
                   "(or amdgpu-install --usecase=rocm)")
    elif lib and "hip-python" in known:
        out.append(f"ROCm runtime present ({lib}): pick the hip-python release of that ROCm version")
    if not os.path.exists("/dev/kfd"):
        out.append("no AMD GPU (/dev/kfd missing: no amdgpu kernel driver): run on a machine with an AMD GPU")
    return out


class AmdExecutor(Executor):
    level = "amd"

    def __init__(self, suite_dir: str | os.PathLike | None = None, *, arch: str | None = None,
                 cache_root: str | os.PathLike | None = None, extra_flags: list[str] = (),
                 port: Port | None = None, discovered: Suite | Callable[[], Suite] | None = None):
        self.suite_dir = Path(suite_dir) if suite_dir else resources.hip_suite()
        self._discovered = discovered            # the run's one discovery of suite_dir (port.subject_suite)
        self.port = port                 # a shim port: its build line (hiprtc compiles HIP: no -x hip)
        if port is not None:
            f = port.hipcc_flags()
            extra_flags = [*(f[2:] if f[:2] == ["-x", "hip"] else f), *extra_flags]
        self.arch = arch
        self.cache_root = Path(cache_root) if cache_root else None
        self.extra_flags = list(extra_flags)
        self._suite: Suite | None = None
        self._compiled: dict[Path, CompileResult] = {}
        self._symbols: dict[Path, list[str]] = {}
        self._modules: dict[Path, object] = {}
        self._functions: dict[str, object] = {}
        self._unusable: dict[str, ExecResult] = {}
        self._avail: tuple[bool, str, str] | None = None
        self._miopen: Miopen | None = None
        self._blas: HipBlas | None = None

    @property
    def suite(self) -> Suite:
        if self._suite is None:
            self._suite = subject_suite(self.suite_dir, self.port, discovered=self._discovered)
        return self._suite

    def availability(self) -> Availability:
        if self._avail is None:
            ok, why, arch = detect()
            self._avail = ok, why if ok else "; ".join([why, *rocm_problems(why)]), arch
        ok, why, arch = self._avail
        self.arch = self.arch or (arch.split(":")[0] if arch else None)
        return Availability(ok, why, device=f"AMD {arch}" if ok else "")

    def miopen(self) -> Miopen:
        """This executor's MIOpen handle and algorithm cache: `conv.host` launches try MIOpen first
        (parity/host/conv.py). ImportError without libMIOpen."""
        if self._miopen is None:
            from hip import hip
            self._miopen = Miopen(device=int(check(hip.hipGetDevice())))
        return self._miopen

    def device_memory(self) -> HipMemory:
        return HipMemory()

    def blas(self) -> HipBlas:
        """This executor's hipBLAS handle (`blas.gemm` launches), created on first use."""
        if self._blas is None:
            self._blas = HipBlas()
        return self._blas

    def close(self) -> None:
        if self._miopen is not None:
            self._miopen.close()
            self._miopen = None

    def options(self, source: Path) -> list[str]:
        return [f"--offload-arch={self.arch}", *HIPRTC_FLAGS, f"-I{source.parent}", *self.extra_flags]

    def compile(self, source: Path) -> CompileResult:
        if source in self._compiled:
            return self._compiled[source]
        from hip import hiprtc
        opts = self.options(source)
        version = "hiprtc %s" % (check(hiprtc.hiprtcVersion()),)
        incs = list(self.port.include_dirs) if self.port is not None else []
        closure = header_closure(source, incs) + [h for f in (self.port.force_includes if self.port else ())
                                                  for h in (Path(f).resolve(), *header_closure(f, incs))]
        key = cache_key(source, closure, opts, version, self.arch or "")

        def build(out: Path) -> tuple[int, str]:
            prog = check(hiprtc.hiprtcCreateProgram(source.read_bytes(), source.name.encode(), 0, [], []))
            bopts = [o.encode() for o in opts]
            err, = hiprtc.hiprtcCompileProgram(prog, len(bopts), bopts)
            size = check(hiprtc.hiprtcGetProgramLogSize(prog))
            log = bytearray(size)
            if size:
                check(hiprtc.hiprtcGetProgramLog(prog, log))
            text = log.decode(errors="replace").rstrip("\0")
            if err != hiprtc.hiprtcResult.HIPRTC_SUCCESS:
                return 1, text or str(err)
            n = check(hiprtc.hiprtcGetCodeSize(prog))
            code = bytearray(n)
            check(hiprtc.hiprtcGetCode(prog, code))
            out.write_bytes(bytes(code))
            return 0, text
        res = cached_build(key, build, ["hiprtc", *opts, str(source)], self.cache_root, source=source)
        self._compiled[source] = res
        if res.ok:
            try:
                self._symbols[source] = kernels_from_binary(res.binary, self.arch)
            except Exception:
                self._symbols[source] = []
        return res

    def prepare(self, kernel: str) -> ExecResult | None:
        if kernel in self._functions or kernel.startswith(CHAIN_PREFIX):   # a chain's steps load their own
            return None
        if is_library_kernel(kernel):             # load what the host routine may launch; a missing
            for sub in suite_kernels([kernel]):   # kernel is reported by the step that needs it
                self.prepare(sub)                 # (MIOpen may serve the case without it)
            try:                                  # hipBLAS's first handle, under the compile limit too;
                self.blas()                       # without hipBLAS the step that needs it says so when it
            except Exception:                     # runs (MIOpen may serve a conv case)
                pass
            return None
        if kernel in self._unusable:             # decided once per run, as on NVIDIA
            return self._unusable[kernel]
        ok, why, _ = self._avail or detect()
        if not ok:
            return ExecResult("unavailable", message=why)
        self.availability()
        # the same lookup as on NVIDIA: discovery first, then the symbol tables
        src = None
        defs = {Path(d.file): d for d in self.suite.definitions(kernel)}   # in the order they are tried
        cands = list(defs)
        failed = []
        for s in cands + [s for s in self.suite.sources if s not in cands]:
            res = self.compile(s)
            if not res.ok:
                if s in cands:                       # a definition that does not compile is the verdict
                    self._unusable[kernel] = compile_failure(s, res, port=self.port)
                    return self._unusable[kernel]
                failed.append((s, res))
                continue
            if kernel in self._symbols.get(s, []) or (s in cands and not self._symbols.get(s)):
                src = s
                if s in defs:
                    self.suite.choose(kernel, defs[s])
                break
        if src is None:
            self._unusable[kernel] = not_found(kernel, self.suite, str(self.suite_dir), failed)
            return self._unusable[kernel]
        from hip import hip
        if src not in self._modules:
            self._modules[src] = check(hip.hipModuleLoadData(self._compiled[src].read()))
        self._functions[kernel] = check(hip.hipModuleGetFunction(self._modules[src], kernel.encode()))
        return None

    def prepared(self, launch: Launch) -> HipPrepared:
        """The launch on device images for timing (parity.timing.Timeable)."""
        return HipPrepared(loaded_for_timing(self, launch, self._functions), launch)

    def clock(self, flush_factor: float = 2.0) -> HipClock:
        return hip_clock(flush_factor)

    def run(self, launch: Launch) -> ExecResult:
        if isinstance(launch, ChainLaunch):
            return self.run_chain(launch)
        if launch.library:                         # host routine: parity/host/routines.py
            return run_library(self, launch)
        err = self.prepare(launch.kernel) or signature_mismatch(self.suite, launch)
        if err is not None:
            return err
        from hip import hip
        try:
            scalar_args(launch)
        except Exception as e:                   # parity's launch, not the kernel: nothing ran
            return setup_error(e, launch)
        infos = []

        def info_address(a: np.ndarray) -> int:
            d = check(hip.hipMalloc(max(8, a.nbytes)))
            check(hip.hipMemcpy(d, a, a.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
            infos.append(d)
            return int(d)
        try:
            with device_buffers(launch) as (hosts, ptrs, images):
                vals = arg_values(launch, ptrs.__getitem__, info_address)
                check(hip.hipModuleLaunchKernel(self._functions[launch.kernel], *launch.grid, *launch.block,
                                                 sharedMemBytes=int(launch.shared_mem), stream=None,
                                                 kernelParams=None, extra=tuple(ctypes_args(vals))))
                check(hip.hipDeviceSynchronize())
        except Exception as e:
            self._functions.clear()
            return ExecResult("crash", message=f"{launch.describe()}: {e}")
        finally:
            for d in infos:
                hip.hipFree(d)
        return judge_images(launch, hosts, images)
