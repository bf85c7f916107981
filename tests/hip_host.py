"""Run a bundled HIP kernel's own source on the CPU: g++ compiles it against the host stand-in of
tests/fixtures/hip_host (HIP's device API as plain C++), and `HostKernels.run` executes a catalog
Launch one thread at a time, block after block. Only for kernels with no barrier or shuffle (atomics are plain read-modify-writes here, each thread running alone)
(a barrier aborts): each thread's result then does not depend on the others' timing."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np

from parity.ops.base import Launch

SHIM = Path(__file__).resolve().parent / "fixtures" / "hip_host"
CXX = shutil.which("g++")

_DRIVER = """#include "{source}"
extern "C" void pk_host_thread(const unsigned* v) {{
  gridDim = dim3{{v[0], v[1], v[2]}}, blockDim = dim3{{v[3], v[4], v[5]}};
  blockIdx = dim3{{v[6], v[7], v[8]}}, threadIdx = dim3{{v[9], v[10], v[11]}};
}}
"""


class HostKernels:
    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib

    def run(self, launch: Launch) -> dict[str, np.ndarray]:
        """The launch's output buffers after every thread of its grid ran (inputs copied first)."""
        bufs = {k: np.array(v, copy=True) for k, v in launch.buffers.items()}
        args, types, keep = [], [], []
        for a in launch.args:
            if a.kind == "ptr":
                name, off = a.value
                args.append(ctypes.c_void_p(bufs[name].ctypes.data + off * bufs[name].itemsize))
                types.append(ctypes.c_void_p)
            elif a.kind == "i32":
                args.append(ctypes.c_int(int(a.value)))
                types.append(ctypes.c_int)
            elif a.kind in ("size_t", "u64", "i64"):
                args.append(ctypes.c_uint64(int(a.value) & (2**64 - 1)))
                types.append(ctypes.c_uint64)
            elif a.kind == "info":
                arr = np.ascontiguousarray(a.value, dtype=np.uint64)
                keep.append(arr)
                args.append(ctypes.c_void_p(arr.ctypes.data))
                types.append(ctypes.c_void_p)
            else:
                raise NotImplementedError(f"argument kind {a.kind}")
        fn = getattr(self.lib, launch.kernel)
        fn.argtypes, fn.restype = types, None
        where = (ctypes.c_uint * 12)()
        where[0:6] = [*launch.grid, *launch.block]
        for b in np.ndindex(*reversed(launch.grid)):
            for t in np.ndindex(*reversed(launch.block)):
                where[6:12] = [*reversed(b), *reversed(t)]
                self.lib.pk_host_thread(where)
                fn(*args)
        return {k: bufs[k] for k in launch.outputs}


def build(source: Path, out_dir: Path, source_text: str | None = None) -> HostKernels:
    """Compile `source` (or `source_text` in its place, e.g. a planted bug) into a shared library."""
    src = Path(source)
    if source_text is not None:
        src = out_dir / src.name
        src.write_text(source_text)
    drv = out_dir / "driver.cpp"
    drv.write_text(_DRIVER.format(source=src))
    lib = out_dir / "kernels.so"
    p = subprocess.run([CXX, "-std=c++17", "-O2", "-shared", "-fPIC", f"-I{SHIM}", f"-I{Path(source).parent}",
                        str(drv), "-o", str(lib)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return HostKernels(ctypes.CDLL(str(lib)))
