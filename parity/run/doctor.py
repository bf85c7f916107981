"""`parity doctor`: what this machine can run, and the command that installs what is missing."""
from __future__ import annotations

import ctypes.util
import shutil
import subprocess
from typing import NamedTuple


class Check(NamedTuple):
    level: str          # what the check is about ("gpu", "cupy", "nvcc", ...)
    available: bool
    details: str
    fix: str            # command that installs / enables it ("" when available)


def _run(argv: list[str], env: dict | None = None) -> str:
    import os
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60,
                           env={**os.environ, **(env or {})})
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)


def _gpu() -> Check:
    smi = shutil.which("nvidia-smi")
    if smi:
        out = _run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if out and "failed" not in out.lower() and "error" not in out.lower():
            return Check("nvidia-gpu", True, out.splitlines()[0], "")
        return Check("nvidia-gpu", False, f"nvidia-smi: {out.splitlines()[0] if out else 'no output'}",
                     "install the NVIDIA driver matching the GPU (apt-get install nvidia-driver)")
    return Check("nvidia-gpu", False, "nvidia-smi not found: no NVIDIA driver or no GPU",
                 "run on a machine with an NVIDIA GPU (apt-get install nvidia-driver)")


def _cupy() -> list[Check]:
    from parity.executors.hip_nvidia import CUPY_PIP, cuda_device, nvrtc_hint
    try:
        import cupy
    except Exception:                          # not installed, or installed and broken: cuda_device says which
        return [Check("cupy", False, cuda_device()[0].reason, CUPY_PIP)]
    rows = []
    try:
        n = cupy.cuda.runtime.getDeviceCount() if cupy.cuda.is_available() else 0
    except Exception:
        n = 0
    rows.append(Check("cupy", n > 0, f"cupy {cupy.__version__}, {n} CUDA device(s)" if n else cuda_device()[0].reason,
                      "" if n else "needs an NVIDIA GPU and driver (see nvidia-gpu)"))
    try:
        from cupy_backends.cuda.libs import nvrtc
        rows.append(Check("nvrtc", True, "NVRTC %d.%d" % nvrtc.getVersion(), ""))
    except Exception as e:
        rows.append(Check("nvrtc", False, f"NVRTC not loadable: {str(e).splitlines()[0]}",
                          nvrtc_hint()))
    return rows


def _nvcc() -> Check:
    exe = shutil.which("nvcc")
    if not exe:
        return Check("nvcc", False, "nvcc not on PATH (NVRTC is used instead when present)",
                     "apt-get install nvidia-cuda-toolkit  (or pip install nvidia-cuda-nvcc-cu12)")
    ver = [ln for ln in _run([exe, "--version"]).splitlines() if "release" in ln]
    return Check("nvcc", True, f"{exe}: {ver[0].strip() if ver else '?'}", "")


def _hipcc() -> list[Check]:
    exe = shutil.which("hipcc")
    if not exe:
        return [Check("hipcc", False, "hipcc not found: amd-static unavailable",
                      "apt-get install hipcc libamdhip64-dev")]
    from parity.suite.amd_static import DEFAULT_TARGETS, accepted_targets, toolchain
    ver = [ln for ln in toolchain().splitlines() if "HIP version" in ln or "clang version" in ln]
    rows = [Check("hipcc", True, f"{exe}: {'; '.join(ver)}", "")]
    for arch, (ok, why) in accepted_targets(DEFAULT_TARGETS).items():
        rows.append(Check(f"amd-static:{arch}", ok, "accepted" if ok else why,
                          "" if ok else "a newer ROCm (hipcc from repo.radeon.com) supports this target"))
    return rows


def _hip_python() -> list[Check]:
    from parity.host.hip import detect
    ok, why, arch = detect()
    try:
        import hip  # noqa: F401
        has = True
    except Exception:
        has = False
    rows = [Check("hip-python", has, "importable" if has else "not installed",
                  "" if has else "pip install hip-python")]
    fix = "" if ok else ("pip install hip-python" if not has else
                         "run on a ROCm machine with an AMD GPU (amdgpu-install --usecase=rocm)")
    rows.append(Check("amd-gpu", ok, f"AMD {arch}" if ok else why, fix))
    return rows


def _libs() -> list[Check]:
    rows = []
    for level, names, fix in (
            ("hiprtc", ["hiprtc", "amdhip64"], "apt-get install libamdhip64-dev  (hiprtc ships with it)"),
            ("rocblas", ["rocblas"], "apt-get install librocblas-dev"),
            ("hipblas", ["hipblas"], "apt-get install libhipblas-dev"),
            ("miopen", ["MIOpen"], "apt-get install miopen-hip  (AMD ROCm apt repository)")):
        found = next((ctypes.util.find_library(n) for n in names if ctypes.util.find_library(n)), None)
        rows.append(Check(level, bool(found), found or "library not found", "" if found else fix))
    return rows


def _bundled() -> Check:
    """The files the wheel must carry (a broken install otherwise says only `no sweep 'smoke'`)."""
    from parity.core import resources
    problems = resources.check()
    if problems:
        return Check("bundled", False, "; ".join(problems), "reinstall parity from a wheel or a clone")
    return Check("bundled", True, f"HIP suite {resources.hip_suite()}, sweeps {resources.sweep_dir()}", "")


def doctor() -> list[Check]:
    """Every check, in the order of the levels: cpu always, then NVIDIA, then AMD."""
    rows = [Check("cpu", True, "NumPy reference", ""), _bundled()]
    rows.append(_gpu())
    rows += _cupy()
    rows.append(_nvcc())
    rows += _hipcc()
    rows += _hip_python()
    rows += _libs()
    return rows


def run_levels() -> list[Check]:
    """Each level `parity run` knows, available here or why not — answered by the same
    `availability` that `parity run` asks (parity.run.levels.make, isolate=False: nothing starts)."""
    from parity.run.levels import ALL_LEVELS, LEVELS, make
    from parity.run.session import DEFAULT_HIP_SRC
    rows = []
    for name in ALL_LEVELS:
        av = make(name, DEFAULT_HIP_SRC, None, isolate=False).availability
        what = av.device if av.available else av.reason
        if name == "amd-static" and av.available:
            what = f"compile checks of the suite for AMD targets: {what}"
        if name not in LEVELS:
            what += f" (runs only when named: --levels {name})"
        rows.append(Check(name, av.available, what, ""))
    return rows


LEVELS_HEADING = "levels `parity run` uses here:"


def render(rows: list[Check]) -> str:
    w = max(len(r.level) for r in rows)
    out = []
    for r in rows:
        mark = "ok " if r.available else "-- "
        out.append(f"{mark}{r.level:<{w}}  {r.details}")
        if r.fix:
            out.append(f"{'':>{w + 5}}fix: {r.fix}")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(doctor()))
