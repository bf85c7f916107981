"""A level this machine cannot run says, in full, what is missing: no CuPy (with the pip line),
CuPy but no NVIDIA driver, a driver but no GPU, hip-python missing, no ROCm runtime, no AMD GPU.

(A machine with CuPy installed and no NVIDIA driver once was told `pip install cupy-cuda13x`.)"""
from __future__ import annotations

import ctypes
import sys
import types

import pytest

import parity.executors.amd as amd
import parity.executors.hip_nvidia as hn
from parity.executors.cupy_ref import CupyRefExecutor


def _fake_cupy(available: bool = False) -> types.ModuleType:
    m = types.ModuleType("cupy")
    m.cuda = types.SimpleNamespace(is_available=lambda: available)
    return m


def _no_libcuda(name, *a, **k):
    raise OSError(f"{name}: cannot open shared object file")


def test_no_cupy_says_not_installed_with_the_pip_line_and_what_else_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)           # import cupy -> ModuleNotFoundError
    monkeypatch.setattr(ctypes, "CDLL", _no_libcuda)
    av = hn.cuda_device()[0]
    assert not av.available and av.reason.startswith("CuPy not installed: pip install cupy-cuda13x")
    assert av.reason.endswith("; no NVIDIA driver (libcuda.so.1 not found): install the NVIDIA driver, "
                              "on a machine with an NVIDIA GPU")


def test_cupy_without_nvidia_driver_names_libcuda_not_the_pip_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(hn, "_cupy_dist", lambda: "cupy-cuda13x 14.2.0")
    monkeypatch.setattr(ctypes, "CDLL", _no_libcuda)
    why = hn.cuda_device()[0].reason
    assert why.startswith("cupy-cuda13x 14.2.0 installed, but no NVIDIA driver (libcuda.so.1 not found)"), why
    assert "pip install" not in why
    assert CupyRefExecutor().availability().reason == why     # the CuPy reference level says the same


class _Driver:
    """libcuda whose cuInit fails with CUDA_ERROR_NO_DEVICE (a driver, no GPU)."""
    def cuInit(self, flags): return 100

    def cuGetErrorName(self, rc, out):
        out._obj.value = b"CUDA_ERROR_NO_DEVICE"
        return 0


def test_driver_without_gpu_says_cuinit_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(ctypes, "CDLL", lambda name, *a, **k: _Driver())
    why = hn.cuda_device()[0].reason
    assert "NVIDIA driver loaded but no usable GPU: cuInit failed with CUDA_ERROR_NO_DEVICE" in why, why


def test_amd_names_hip_python_rocm_runtime_and_gpu_when_all_missing(monkeypatch):
    monkeypatch.setattr(amd, "detect", lambda: (False, "hip-python not installed (No module named 'hip'): "
                                                      "pip install hip-python", ""))
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    monkeypatch.setattr(amd.os.path, "exists", lambda p: False)
    why = amd.AmdExecutor().availability().reason
    assert why.startswith("hip-python not installed") and "pip install hip-python" in why
    assert "no ROCm runtime (libamdhip64 not found)" in why
    assert "no AMD GPU (/dev/kfd missing" in why


def test_amd_with_rocm_runtime_says_which_hip_python_to_pick(monkeypatch):
    monkeypatch.setattr(amd, "detect", lambda: (False, "hip-python not installed: pip install hip-python", ""))
    monkeypatch.setattr("ctypes.util.find_library", lambda name: "libamdhip64.so.5")
    monkeypatch.setattr(amd.os.path, "exists", lambda p: True)
    why = amd.AmdExecutor().availability().reason
    assert "ROCm runtime present (libamdhip64.so.5)" in why and "/dev/kfd" not in why
