"""The GPU environment a timing was taken in: device, clocks, driver, toolkit and library versions."""
from __future__ import annotations

import re


def _ver(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}" if v else ""


def gpu_environment() -> dict:
    """GPU name, SM count, clocks, memory, driver and CUDA versions, CuPy and hip-python versions.
    {} without a usable CUDA device (hip-python's version is still reported when installed)."""
    out: dict = {}
    try:
        from importlib.metadata import version

        import hip  # noqa: F401
        out["hip_python"] = version("hip-python")
    except Exception:
        pass
    try:
        import cupy
        out["cupy"] = cupy.__version__
        if not cupy.cuda.is_available():
            return out
        rt = cupy.cuda.runtime
        dev = cupy.cuda.Device()
        p = rt.getDeviceProperties(dev.id)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        out.update({
            "name": name, "index": dev.id, "count": rt.getDeviceCount(),
            "compute_capability": dev.compute_capability, "sm_count": p.get("multiProcessorCount"),
            "sm_clock_mhz": (p.get("clockRate") or 0) / 1000 or None,
            "mem_clock_mhz": (p.get("memoryClockRate") or 0) / 1000 or None,
            "mem_bus_bits": p.get("memoryBusWidth"), "l2_bytes": p.get("l2CacheSize"),
            "memory_bytes": p.get("totalGlobalMem"), "driver_api": _ver(rt.driverGetVersion()),
            "cuda_runtime": _ver(rt.runtimeGetVersion()),
        })
        if out["mem_clock_mhz"] and out["mem_bus_bits"]:
            out["theoretical_gbps"] = 2 * out["mem_clock_mhz"] * 1e6 * out["mem_bus_bits"] / 8 / 1e9
        try:
            out["uuid"] = p.get("uuid").hex() if isinstance(p.get("uuid"), bytes) else None
        except Exception:
            pass
        out.update(_nvidia_smi(dev.id))
        out.update(_toolkit())
    except Exception as e:
        out.setdefault("error", f"{type(e).__name__}: {e}")
    return out


def _nvidia_smi(index: int) -> dict:
    import shutil
    import subprocess
    if not shutil.which("nvidia-smi"):
        return {}
    q = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits", "-i", str(index)],
                           capture_output=True, text=True, timeout=20)
        vals = [v.strip() for v in r.stdout.strip().split(",")]
        keys = ["driver", "clock_sm_now_mhz", "clock_mem_now_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz",
                "power_limit_w", "persistence_mode"]
        return dict(zip(keys, vals)) if len(vals) == len(keys) else {}
    except Exception:
        return {}


def _toolkit() -> dict:
    import shutil
    import subprocess
    out = {}
    if shutil.which("nvcc"):
        try:
            r = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=20)
            m = re.search(r"release ([\d.]+)", r.stdout)
            out["nvcc"] = m.group(1) if m else r.stdout.strip().splitlines()[-1]
        except Exception:
            pass
    try:
        from cupy_backends.cuda.libs import nvrtc
        out["nvrtc"] = "%d.%d" % nvrtc.getVersion()
    except Exception:
        pass
    return out

