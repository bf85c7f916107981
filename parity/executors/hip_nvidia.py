"""Levels `hip-on-nvidia` and `cuda`: a kernel suite compiled by the CUDA toolchain, run by CuPy.

`hip-on-nvidia` compiles the `.hip` sources with `-D__HIPCC__ -I backends/hip/include` (the
device-code mapping of HIP names onto CUDA), `cuda` compiles `.cu` sources as they are. The
compiler is nvcc when it is on PATH (`nvcc -cubin -arch=sm_XX ...`), else NVRTC through CuPy;
either way through the compile cache. Each launch gets fresh device buffers with guard bytes
before and after every buffer, so the executor itself can say `oob-write`,
`input-clobbered`, `crash`, `missing` or `compile-error`; the comparator decides pass/fail.

A crash (illegal address) poisons the CUDA context of this process: every later launch answers
`crash` too. Run the executor through `parity.executors.worker.IsolatedExecutor` to have the
process restarted after a crash and to turn hangs into `timeout`.
"""
from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from parity.core import resources
from parity.executors.base import Availability, Executor, loaded_for_timing
from parity.executors.device_images import CupyPrepared
from parity.executors.preflight import compile_failure, not_found, signature_mismatch
from parity.host.blas import CupyBlas
from parity.host.marshal import GUARD, GUARD_BYTES, arg_values, guarded_image, judge_images, scalar_args, setup_error
from parity.host.routines import is_library_kernel, run_library, suite_kernels
from parity.ops.base import CHAIN_PREFIX, ChainLaunch, ChainStep, ExecResult, Launch
from parity.suite.compile_cache import CompileError, CompileResult, cache_key, cached_build, compile_source
from parity.suite.elf import kernels_from_binary
from parity.suite.hip_api import unincluded_rocm_uses
from parity.suite.includes import header_closure
from parity.suite.port import Port, shadowed, subject_suite
from parity.suite.scan import Suite
from parity.timing import CupyClock, cupy_clock

HIP_MAPPING = resources.hip_mapping()
CUDA_RTC_STUBS = resources.cuda_rtc_stubs()

# -------------------------------------------------------------------------- compilation
class CudaToolchain:
    """nvcc or NVRTC, with the flags of one level; compile() goes through the cache."""

    def __init__(self, arch: str | None = None, compiler: str = "auto", hip: bool = True,
                 include_dirs: list[Path] = (), defines: dict[str, str] | None = None,
                 extra_flags: list[str] = (), cache_root: Path | None = None, lane_compile: bool = False):
        self.arch = str(arch).replace("sm_", "") if arch else None
        # one of many compiles at once (parity mutate's lanes): no --split-compile, which would only
        # oversubscribe the cores, and a lower CPU priority, so the GPU runners' case loops come first
        self.lane_compile = lane_compile
        self.hip = hip
        self.include_dirs = [Path(d) for d in include_dirs]
        self.defines = dict(defines or {})
        self.extra_flags = list(extra_flags)
        self.cache_root = cache_root
        if compiler == "auto":
            compiler = "nvcc" if shutil.which("nvcc") else "nvrtc"
        self.compiler = compiler

    def target(self) -> str:
        if self.arch is None:
            self.arch = _device_arch() or "90"
        return f"sm_{self.arch}"

    def flags(self, source: Path) -> list[str]:
        f = ["-O3", "-std=c++17", "--expt-relaxed-constexpr"]
        if self.hip:
            f.append("-D__HIPCC__")
        f += [f"-D{k}={v}" for k, v in self.defines.items()]
        f += [f"-I{d}" for d in self.include_dirs] + [f"-I{source.parent}"]
        return f + self.extra_flags

    def compile(self, source: Path) -> CompileResult:
        source = Path(source)
        if self.compiler == "nvcc":
            # --split-compile: nvcc optimizes one file on every core. The bundled unary family (then one
            # file) took 127 s alone and 33 s split (H100 host, 16 cores), cubins the same size to 0.01%.
            split = [] if self.lane_compile else ["--split-compile=0"]
            flags = ["-cubin", f"-arch={self.target()}", *split, *self.flags(source), "-x", "cu"]
            return compile_source(source, ["nvcc"], flags, target=self.target(), include_dirs=self.include_dirs,
                                  cache_root=self.cache_root, nice=10 if self.lane_compile else 0)
        return self._nvrtc(source)

    def _nvrtc(self, source: Path) -> CompileResult:
        try:
            from cupy_backends.cuda.libs import nvrtc
            version = "nvrtc %d.%d" % nvrtc.getVersion()
        except Exception as e:  # library absent
            return CompileResult(False, "", error=CompileError(
                f"NVRTC unavailable ({e}); {nvrtc_hint()}"))
        incs = list(self.include_dirs) + ([CUDA_RTC_STUBS] if CUDA_RTC_STUBS.is_dir() else [])
        incs += [Path(p) for p in _cuda_include_dirs()]
        flags = self.flags(source)
        forced = [Path(flags[i + 1]) for i, f in enumerate(flags[:-1]) if f == "-include"]
        flags = [f for i, f in enumerate(flags) if f != "-include" and (i == 0 or flags[i - 1] != "-include")]
        opts = [f"--gpu-architecture={self.target()}", "-default-device",
                *[f for f in flags if f not in ("-O3",)], *[f"-I{d}" for d in incs],
                *[f"--pre-include={f}" for f in forced]]          # a shim port's force-included headers
        closure = header_closure(source, self.include_dirs)
        for f in forced:
            closure += [f.resolve(), *header_closure(f, self.include_dirs)]
        key = cache_key(source, closure, opts, version, self.target())

        def build(out: Path) -> tuple[int, str]:
            prog = nvrtc.createProgram(source.read_text(), source.name, [], [])
            try:
                try:
                    nvrtc.compileProgram(prog, opts)
                except nvrtc.NVRTCError:
                    return 1, _nvrtc_log(nvrtc, prog, source)
                out.write_bytes(nvrtc.getCUBIN(prog))
                return 0, _nvrtc_log(nvrtc, prog, source)
            finally:
                nvrtc.destroyProgram(prog)
        return cached_build(key, build, ["nvrtc", *opts, str(source)], self.cache_root, source=source)


def _nvrtc_log(nvrtc, prog, source: Path) -> str:
    try:
        log = nvrtc.getProgramLog(prog)
    except Exception:
        return ""
    return log.replace(f"{source.name}(", f"{source}(")


def _cuda_include_dirs() -> list[str]:
    out = []
    for base in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if base and Path(base, "include", "cuda_fp16.h").is_file():
            out.append(str(Path(base, "include")))
            break
    return out


CUPY_PIP = "pip install cupy-cuda13x (cupy-cuda12x for a CUDA 12 driver)"


def _cupy_dist() -> str:
    """`cupy-cuda13x 14.2.0`: the installed CuPy wheel (its name says the CUDA it was built for)."""
    import importlib.metadata as md
    names = sorted({d.metadata["Name"] for d in md.distributions()
                    if (d.metadata["Name"] or "").lower().startswith("cupy")})
    return ", ".join(f"{n} {md.version(n)}" for n in names) or "CuPy"


def nvrtc_hint() -> str:
    """What gives CuPy an NVRTC: the CUDA major its wheel was built for (cupy-cuda13x: 13, whose
    libnvrtc.so.13 it loads; a cu12 wheel was suggested whatever the CuPy)."""
    import re
    major = re.search(r"cupy-cuda(\d+)x", _cupy_dist())
    cuda = f"CUDA {major.group(1)}" if major else "the CUDA that CuPy was built for"
    return f"install NVRTC for {cuda} (its toolkit's nvcc, or NVIDIA's NVRTC wheel for {cuda})"


def _cuda_error(lib, rc: int) -> str:
    import ctypes
    name = ctypes.c_char_p()
    lib.cuGetErrorName(rc, ctypes.byref(name))
    return name.value.decode() if name.value else f"CUresult {rc}"


def nvidia_driver_problem() -> str:
    """'' when the NVIDIA driver library loads and sees a GPU, else what is missing: no driver
    (libcuda not found), a driver but no GPU (cuInit's error), a driver older than CuPy's CUDA."""
    import ctypes
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver (libcuda.so.1 not found): install the NVIDIA driver, on a machine with an NVIDIA GPU"
    rc = lib.cuInit(0)
    if rc != 0:
        gpu = "no /dev/nvidia0" if not os.path.exists("/dev/nvidia0") else "/dev/nvidia0 present"
        return f"NVIDIA driver loaded but no usable GPU: cuInit failed with {_cuda_error(lib, rc)} ({gpu})"
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    return "" if count.value else "NVIDIA driver loaded but it sees no GPU (0 devices)"


def cuda_device() -> tuple[Availability | None, str, str]:
    """(None, GPU name, compute capability) for the current CUDA device through CuPy, or
    (an `unavailable` Availability saying, in full, what is missing: CuPy, the driver, the GPU)."""
    try:
        import cupy
    except ModuleNotFoundError as e:
        if e.name == "cupy":                   # and what else is missing, so one fix is not followed by another
            also = nvidia_driver_problem()
            return Availability(False, f"CuPy not installed: {CUPY_PIP}" + (f"; {also}" if also else "")), "", ""
        return Availability(False, f"{_cupy_dist()} installed but not importable: {e}"), "", ""
    except Exception as e:
        return Availability(False, f"{_cupy_dist()} installed but not importable ({type(e).__name__}: {e}); "
                                   f"reinstall it: {CUPY_PIP}"), "", ""
    try:
        if not cupy.cuda.is_available():
            why = nvidia_driver_problem()
            if not why:
                try:
                    cupy.cuda.runtime.getDeviceCount()
                    why = "CuPy sees no CUDA device"
                except Exception as e:           # e.g. a driver older than CuPy's CUDA runtime
                    drv = cupy.cuda.runtime.driverGetVersion()
                    rt = cupy.cuda.runtime.runtimeGetVersion()
                    why = (f"CuPy cannot use the GPU ({e}): the driver supports CUDA {drv // 1000}.{drv % 1000 // 10}, "
                           f"CuPy was built for CUDA {rt // 1000}.{rt % 1000 // 10}; update the driver or "
                           "install the CuPy of the driver's CUDA (cupy-cuda12x)")
            return Availability(False, f"{_cupy_dist()} installed, but {why}"), "", ""
        dev = cupy.cuda.Device()
        name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
        return None, name.decode() if isinstance(name, bytes) else str(name), str(dev.compute_capability)
    except Exception as e:
        return Availability(False, f"CUDA device unusable ({type(e).__name__}: {e})"), "", ""


def _device_arch() -> str | None:
    try:
        import cupy
        if cupy.cuda.is_available():
            return str(cupy.cuda.Device().compute_capability)
    except Exception:
        pass
    return None


# ------------------------------------------------------------------------- shim ports
CUDA_HEADER_MACROS = {"cuda_fp16.h": "PARITY_CUDA_FP16_H", "cuda_bf16.h": "PARITY_CUDA_BF16_H",
                      "cuda_runtime.h": "PARITY_CUDA_RUNTIME_H"}


@functools.lru_cache(maxsize=None)
def cuda_toolkit_include() -> Path | None:
    """The CUDA toolkit folder holding cuda_fp16.h: nvcc's own (`nvcc --dryrun` INCLUDES), else
    CUDA_PATH / CUDA_HOME / /usr/local/cuda."""
    nvcc = shutil.which("nvcc")
    cands: list[Path] = []
    if nvcc:
        import re
        import subprocess
        try:
            p = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                               capture_output=True, text=True, timeout=60)
            for m in re.finditer(r'INCLUDES="([^"]*)"', p.stdout + p.stderr):
                cands += [Path(s[2:].strip('" ')) for s in m.group(1).split() if s.strip('"').startswith("-I")]
        except (OSError, subprocess.TimeoutExpired):
            pass
        cands.append((Path(nvcc).resolve().parent / ".." / "include").resolve())     # <toolkit>/bin/nvcc
    cands += [Path(d) for d in _cuda_include_dirs()]
    return next((c.resolve() for c in cands if (c / "cuda_fp16.h").is_file()), None)


def port_build(port: Port, include_dirs: list[Path], defines: dict[str, str],
               extra_flags: list[str]) -> tuple[list[Path], dict[str, str], list[str], str]:
    """A port's build line through the HIP→CUDA mapping: (include dirs, defines, flags, problem).

    The mapping comes first on the include path (a shim's own hip/*.h never replaces it), then the
    port's folders in its order. The shim's shadow cuda_fp16.h/cuda_bf16.h would catch the mapping's
    own includes of those names, so the mapping gets the toolkit's files by absolute path
    (backends/hip/include/hip/parity_cuda.h). -DPARITY_SHIM_PORT hides the CUDA-only intrinsics a shim
    defines for AMD (parity_shim_port.h), so its fallbacks are the ones that run. <hip/hip_runtime.h>
    is force-included first, as hipcc's clang does. problem: why the two cannot coexist ('' if they can)."""
    problem = ""
    toolkit = cuda_toolkit_include()
    for hdr in shadowed(port):
        if toolkit is None:
            problem = (f"the port's {hdr} shadows <{hdr.name}>, which parity's HIP→CUDA mapping needs from the "
                       "CUDA toolkit, and no toolkit include folder with cuda_fp16.h was found (nvcc --dryrun, "
                       "CUDA_PATH, CUDA_HOME, /usr/local/cuda): set CUDA_PATH to run this port on hip-on-nvidia")
            break
    macros = {}
    if toolkit is not None:
        macros = {m: f'"{toolkit / name}"' for name, m in CUDA_HEADER_MACROS.items() if (toolkit / name).is_file()}
    defines = {**defines, "PARITY_SHIM_PORT": "1", **macros, **port.define_map(nvidia=True)}
    flags = list(extra_flags)
    runtime = HIP_MAPPING / "hip" / "hip_runtime.h"
    for f in ([runtime] if runtime.is_file() else []) + list(port.force_includes):
        flags += ["-include", str(f)]
    return [*include_dirs, *port.include_dirs], defines, flags + list(port.nvidia_flags), problem


# ---------------------------------------------------------------------------- executor
WAVE_SIZES = (64, 32)
WAVE64_CRASH_HINT = ("; wave64 mode: a kernel that traps here most likely reached a wave-wide operation "
                     "(shuffle, ballot, any/all, activemask, __syncwarp) with only one of the two NVIDIA warps "
                     "of a 64-lane wavefront (divergent wave-wide operation; the emulation gives up after 1 s)")


def hip_level_name(wave: int) -> str:
    """Level name of hip-on-nvidia at a wavefront size: `hip-on-nvidia` is wave 64 (CDNA, the
    default), `hip-on-nvidia/w32` wave 32 (RDNA wave32, NVIDIA's own warps)."""
    if int(wave) not in WAVE_SIZES:
        raise ValueError(f"wavefront size must be 32 or 64, not {wave}")
    return "hip-on-nvidia" if int(wave) == 64 else f"hip-on-nvidia/w{int(wave)}"


class HipOnNvidiaExecutor(Executor):
    """Runs launches against a HIP suite compiled for the NVIDIA GPU of this process.

    wave=64 (default, AMD CDNA) compiles with -DPARITY_WAVE64: the mapping header then runs each
    64-lane wavefront as two NVIDIA warps (backends/hip/include/hip/parity_wave64.h); wave=32 uses
    NVIDIA's 32-lane warps as they are. The flag is part of the compile-cache key."""
    level = "hip-on-nvidia"
    wave: int | None = 64
    suffixes = (".hip",)

    def __init__(self, suite_dir: str | os.PathLike | None = None, *, arch: str | None = None,
                 compiler: str = "auto", include_dirs: list[str | os.PathLike] | None = None,
                 defines: dict[str, str] | None = None, extra_flags: list[str] = (),
                 cache_root: str | os.PathLike | None = None, timing: bool = False,
                 wave: int | None = None, lane_compile: bool = False, port: Port | None = None,
                 discovered: Suite | Callable[[], Suite] | None = None):
        self.suite_dir = Path(suite_dir) if suite_dir else resources.hip_suite()
        self._discovered = discovered            # the run's one discovery of suite_dir (port.subject_suite)
        if include_dirs is None:
            include_dirs = self.default_includes()
        if wave is not None and self.wave is not None:
            self.wave = int(wave)
            self.level = hip_level_name(self.wave)
        if self.wave == 64:
            defines = {"PARITY_WAVE64": "1", **(defines or {})}
        self.port, self.port_problem = port, ""
        if port is not None and self.level != "cuda":      # a port's build line, through the mapping
            include_dirs, defines, extra_flags, self.port_problem = port_build(port, list(include_dirs),
                                                                               dict(defines or {}), list(extra_flags))
        self.toolchain = CudaToolchain(arch, compiler, self.level != "cuda", [Path(d) for d in include_dirs],
                                       defines, extra_flags, Path(cache_root) if cache_root else None,
                                       lane_compile)
        self.timing = timing
        self._suite: Suite | None = None
        self._compiled: dict[Path, CompileResult] = {}
        self._symbols: dict[Path, list[str]] = {}
        self._modules: dict[Path, object] = {}
        self._functions: dict[str, object] = {}
        self._unusable: dict[str, ExecResult] = {}   # missing / compile-error / mapping-gap verdicts
        self._dead = ""                          # set after a context-killing fault
        self._blas: CupyBlas | None = None

    def default_includes(self) -> list[Path]:
        return [HIP_MAPPING] if HIP_MAPPING.is_dir() else []

    # --- suite and compilation (no GPU needed) ---------------------------------------------
    @property
    def suite(self) -> Suite:
        if self._suite is None:                           # a port: its own sources, .cu included
            self._suite = subject_suite(self.suite_dir, self.port if self.level != "cuda" else None,
                                        tuple(self.suffixes), discovered=self._discovered)
        return self._suite

    def compile(self, source: Path) -> CompileResult:
        return self.precompile([source], jobs=1)[Path(source)]

    def compile_all(self) -> dict[Path, CompileResult]:
        return self.precompile(self.suite.sources)

    def precompile(self, sources, jobs: int | None = None,
                   on_done: Callable[[Path, CompileResult], None] | None = None) -> dict[Path, CompileResult]:
        """Compile sources in parallel (one compiler process per core) into the on-disk cache,
        so a cold run does not compile file after file inside the launch worker. on_done(source,
        result) is called in this thread as each file finishes (progress)."""
        from concurrent.futures import ThreadPoolExecutor, as_completed
        todo = [Path(s) for s in dict.fromkeys(sources) if Path(s) not in self._compiled]
        with ThreadPoolExecutor(max_workers=jobs or max(1, os.cpu_count() or 1)) as pool:
            futures = {pool.submit(self.toolchain.compile, src): src for src in todo}
            for fut in as_completed(futures):
                src = futures[fut]
                res = self._as_rocm_would(src, fut.result())
                self._compiled[src] = res            # register symbols in this thread
                if res.ok:
                    try:
                        self._symbols[src] = kernels_from_binary(res.binary)
                    except Exception:
                        self._symbols[src] = []
                    self.suite.add_symbols(self._symbols[src], src)
                if on_done is not None:
                    on_done(src, res)
        return {Path(s): self._compiled[Path(s)] for s in sources}

    def _as_rocm_would(self, src: Path, res: CompileResult) -> CompileResult:
        """A HIP source that compiled through the mapping but uses a ROCm name whose header it never
        includes fails, as hipcc fails it: the mapping brings CUDA's fp16/bf16 types with
        <hip/hip_runtime.h> (its shuffle macros need them first), ROCm's runtime header does not."""
        if not (res.ok and self.toolchain.hip):
            return res
        uses = unincluded_rocm_uses(src, self.toolchain.include_dirs)
        if not uses:
            return res
        lines = [f"{f}:{line}:1: error: use of undeclared identifier '{name}' (as hipcc reports it: "
                 "parity's mapping declares it with <hip/hip_runtime.h>, ROCm's headers do not)" for f, line, name in uses]
        err = CompileError("\n".join(lines), [(str(f), line) for f, line, _ in uses], res.command, None)
        return CompileResult(False, res.key, log=res.log, cached=res.cached, error=err, seconds=res.seconds,
                             command=res.command)

    def sources_for(self, kernels) -> list[Path]:
        """The suite files that define these kernel names, or that a host routine among them
        launches (unknown names are skipped)."""
        files = [self.suite.kernels[k].file for k in suite_kernels(kernels) if k in self.suite.kernels]
        return [Path(f) for f in dict.fromkeys(files) if f]

    def locate(self, kernel: str) -> tuple[Path | None, ExecResult | None]:
        """(source defining `kernel`, None) or (None, the missing / compile-error verdict)."""
        for decl in self.suite.definitions(kernel):    # a kernel two files define: the next file's only where
            src = Path(decl.file)                      # this one's module leaves it out (#if), never past
            res = self.compile(src)                    # a compile error
            if not res.ok:
                return None, compile_failure(src, res, self.toolchain.hip,
                                             port=self.port if self.level != "cuda" else None)
            if kernel in self._symbols.get(src, [kernel]):
                self.suite.choose(kernel, decl)
                return src, None
        failed = []
        scanned = {Path(k.file) for k in self.suite.kernels.values() if k.file is not None and k.origin == "source"}
        for src in self.suite.sources:                 # files the scan could not read: symbols decide
            if src in scanned and src not in self._compiled:
                continue                               # (compiling Candle's quantized.cu costs minutes)
            res = self.compile(src)
            if not res.ok:
                failed.append((src, res))
            elif kernel in self._symbols.get(src, []):
                return src, None
        return None, not_found(kernel, self.suite, str(self.suite_dir), failed, self.toolchain.hip)

    # --- device ------------------------------------------------------------------------------
    def availability(self) -> Availability:
        if self.port_problem:                    # decided without a GPU: the port cannot build here
            return Availability(False, self.port_problem)
        unusable, name, cc = cuda_device()
        if unusable is not None:
            return unusable
        if self.toolchain.compiler == "nvrtc":
            try:
                from cupy_backends.cuda.libs import nvrtc
                nvrtc.getVersion()
            except Exception as e:
                return Availability(False, f"no nvcc on PATH and NVRTC unusable ({e}): {nvrtc_hint()}")
        return Availability(True, device=f"{name} (sm_{cc}), {self.toolchain.compiler}")

    def warm(self) -> None:
        try:
            import cupy
            if cupy.cuda.is_available():
                cupy.asnumpy(cupy.asarray(np.zeros(16, np.uint8)))   # context, memory pool, copies
                cupy.cuda.Device().synchronize()
        except Exception:                        # no device: availability() and run() say why
            pass

    def _function(self, kernel: str):
        if kernel in self._functions:
            return self._functions[kernel], None
        if kernel in self._unusable:
            return None, self._unusable[kernel]
        src, err = self.locate(kernel)
        if err:                                  # the suite does not change during a run: decided once
            self._unusable[kernel] = err         # (a port's 17,000 missing cases: 8 ms of lookup each)
            return None, err
        import cupy
        if src not in self._modules:
            mod = cupy.cuda.function.Module()
            mod.load_file(str(self._compiled[src].binary))
            self._modules[src] = mod
        self._functions[kernel] = self._modules[src].get_function(kernel)
        return self._functions[kernel], None

    def prepare(self, kernel: str) -> ExecResult | None:
        """Compile and load what `kernel` needs; None when it is ready, else the verdict."""
        if self._dead:
            return ExecResult("crash", message=self._dead)
        if kernel.startswith(CHAIN_PREFIX):       # a chain: each step prepares its own kernel
            return None
        if is_library_kernel(kernel):             # a host routine (BLAS, conv): load the suite kernels it
            for sub in suite_kernels([kernel]):   # launches now, under the compile limit; a step that
                err = self.prepare(sub)           # needs a missing one reports it when it runs
                if err is not None and err.status == "crash":
                    return err
            try:                                  # and cuBLAS: its first handle loads the library (seconds;
                self.blas()                       # over a chain's 30-s launch limit on a fresh, busy H200);
            except Exception:                     # one that cannot be made is the run's to report, as before
                pass
            return None
        try:
            _, err = self._function(kernel)
        except Exception as e:
            return self._fault(e, f"loading {kernel}")
        return err

    def prepared(self, launch: Launch):
        """The launch on device images for timing (parity.timing.Timeable)."""
        return CupyPrepared(loaded_for_timing(self, launch, self._functions), launch)

    def clock(self, flush_factor: float = 2.0) -> CupyClock:
        return cupy_clock(flush_factor)

    def _fault(self, e: Exception, what: str) -> ExecResult:
        text = f"{what}: {type(e).__name__}: {e}"
        if self.wave == 64 and any(k in text.lower() for k in ("launch fail", "illegal instruction", "trap")):
            # __trap() of parity_wave64.h: CUDA says "unspecified launch failure" or "illegal instruction"
            text += WAVE64_CRASH_HINT
        self._dead = f"CUDA context lost by an earlier crash ({text})"
        return ExecResult("crash", message=text)

    def run(self, launch: Launch) -> ExecResult:
        if isinstance(launch, ChainLaunch):
            return self.run_chain(launch)
        if launch.library:                         # host routine: parity/host/routines.py
            return run_library(self, launch)
        err = self.prepare(launch.kernel) or signature_mismatch(self.suite, launch)
        if err is not None:
            return err
        import cupy
        func = self._functions[launch.kernel]
        hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        try:                                       # nothing launched yet: a failure here is parity's
            scalar_args(launch)                    # (an argument it cannot marshal, an upload), `error`,
            dev = {n: cupy.asarray(guarded_image(h)) for n, h in hosts.items()}   # never the kernel's crash
            infos = []

            def info_address(a: np.ndarray) -> int:
                d = cupy.asarray(a)
                infos.append(d)
                return int(d.data.ptr)
            args = arg_values(launch, lambda n: int(dev[n].data.ptr) + GUARD_BYTES, info_address)
            cupy.cuda.Device().synchronize()
        except Exception as e:
            return setup_error(e, launch)
        t0 = t1 = None
        try:
            if self.timing:
                t0, t1 = cupy.cuda.Event(), cupy.cuda.Event()
                t0.record()
            func(tuple(int(g) for g in launch.grid), tuple(int(b) for b in launch.block), tuple(args),
                 shared_mem=int(launch.shared_mem))
            if t1 is not None:
                t1.record()
            cupy.cuda.Device().synchronize()
            images = {n: cupy.asnumpy(d) for n, d in dev.items()}
        except Exception as e:
            return self._fault(e, f"{launch.describe()}")
        time_ms = cupy.cuda.get_elapsed_time(t0, t1) if t1 is not None else None
        return judge_images(launch, hosts, images, time_ms)

    # --- op chains ---------------------------------------------------------------------------
    # A chain's tensors stay on the device between kernel steps (issue #19: no host round trip);
    # tests/test_chains_gpu.py checks, for every pr chain, that they equal the host round trip's
    # bit for bit. Host-routine steps (blas.gemm, conv.host) take their operands through host
    # memory either way. False: every step's tensors go through host memory (the cpu level's way).
    resident_chains: bool = True

    def run_chain(self, chain: ChainLaunch) -> ExecResult:
        res = super().run_chain(chain)
        res.outputs = {n: _host(a) for n, a in res.outputs.items()}
        return res

    def chain_step(self, step: ChainStep, store: dict) -> ExecResult:
        if not self.resident_chains or step.launch.library:
            for t in set(step.reads.values()):
                store[t] = _host(store[t])
            return super().chain_step(step, store)
        launch = step.launch
        err = self.prepare(launch.kernel) or signature_mismatch(self.suite, launch)
        if err is not None:
            return err
        import cupy
        try:
            scalar_args(launch)
        except Exception as e:                   # parity's launch, not the kernel: nothing ran
            return setup_error(e, launch)
        try:
            guard = cupy.asarray(GUARD)
            before, dev, infos = {}, {}, []
            for b, h in launch.buffers.items():
                src = store[step.reads[b]] if b in step.reads else h
                before[b] = src.raw if isinstance(src, DeviceTensor) else \
                    cupy.asarray(np.ascontiguousarray(src).reshape(-1).view(np.uint8))
                dev[b] = cupy.concatenate([guard, before[b], guard])

            def info_address(a: np.ndarray) -> int:
                infos.append(cupy.asarray(a))
                return int(infos[-1].data.ptr)
            args = arg_values(launch, lambda n: int(dev[n].data.ptr) + GUARD_BYTES, info_address)
            self._functions[launch.kernel](tuple(int(g) for g in launch.grid), tuple(int(b) for b in launch.block),
                                           tuple(args), shared_mem=int(launch.shared_mem))
            cupy.cuda.Device().synchronize()
            n = {b: before[b].size for b in dev}
            oob = [b for b, d in dev.items() if not (bool(cupy.array_equal(d[:GUARD_BYTES], guard)) and
                                                    bool(cupy.array_equal(d[GUARD_BYTES + n[b]:], guard)))]
            clobbered = [step.reads.get(b, b) for b, d in dev.items() if b not in launch.outputs and
                         not bool(cupy.array_equal(d[GUARD_BYTES:GUARD_BYTES + n[b]], before[b]))]
        except Exception as e:
            return self._fault(e, launch.describe())
        if oob:
            return ExecResult("oob-write", {}, f"{launch.kernel}: bytes around {', '.join(oob)} overwritten")
        if clobbered:
            return ExecResult("input-clobbered", {}, f"{launch.kernel} wrote into {', '.join(clobbered)}, which it "
                              "only reads", detail={"clobbered": clobbered})
        for b, t in step.writes.items():
            h = launch.buffers[b]
            store[t] = DeviceTensor(dev[b][GUARD_BYTES:GUARD_BYTES + n[b]], h.dtype, h.shape)
        return ExecResult("ok", {b: store[t] for b, t in step.writes.items()})

    def blas(self) -> CupyBlas:
        """This executor's cuBLAS handle (`blas.gemm` launches), created on first use."""
        if self._blas is None:
            self._blas = CupyBlas()
        return self._blas

    def close(self) -> None:
        self._functions.clear()
        self._modules.clear()


class DeviceTensor:
    """A chain tensor kept on the device: its bytes (CuPy uint8, which also holds bf16/fp8) and
    the host dtype and shape to read them back as."""

    def __init__(self, raw, dtype: np.dtype, shape: tuple[int, ...]):
        self.raw, self.dtype, self.shape = raw, dtype, shape


def _host(a):
    """A chain tensor in host memory (a DeviceTensor is downloaded once)."""
    if isinstance(a, DeviceTensor):
        import cupy
        return cupy.asnumpy(a.raw).view(a.dtype).reshape(a.shape)
    return a


class HipOnNvidiaW32Executor(HipOnNvidiaExecutor):
    """Level `hip-on-nvidia/w32`: the HIP suite on NVIDIA's 32-lane warps (RDNA wave32)."""
    level = hip_level_name(32)
    wave = 32
