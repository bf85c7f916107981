"""Executors declare what they can do (parity.executors.base protocols; parity.host's for host
routines) and callers ask isinstance; the host routines sit below the executors and the ops
below both (issue #15)."""
from __future__ import annotations

import ast
from pathlib import Path

from parity.executors.amd import AmdExecutor
from parity.executors.base import Compiling, Pooled, Preparing, Queued, TimedWhereRun
from parity.executors.cpu import CpuExecutor
from parity.executors.cupy_ref import CupyRefExecutor
from parity.executors.cuda import CudaExecutor
from parity.executors.hip_nvidia import HipOnNvidiaExecutor, HipOnNvidiaW32Executor
from parity.executors.worker import IsolatedExecutor
from parity.host.conv import MiopenCapable
from parity.executors.pool import GpuPool

PARITY = Path(__file__).resolve().parent.parent / "parity"


def test_each_executor_declares_its_capabilities():
    hip, amd, cpu = HipOnNvidiaExecutor(), AmdExecutor(), CpuExecutor()
    assert isinstance(hip, Compiling) and not isinstance(amd, Compiling) and not isinstance(cpu, Preparing)
    assert isinstance(amd, Preparing) and isinstance(CupyRefExecutor(), Preparing)
    assert isinstance(amd, MiopenCapable) and not isinstance(hip, MiopenCapable)
    iso = IsolatedExecutor(HipOnNvidiaW32Executor)
    assert isinstance(iso, Queued) and isinstance(iso, TimedWhereRun) and not isinstance(hip, Queued)
    assert (iso.level, iso.wave) == ("hip-on-nvidia/w32", 32)
    pool = GpuPool("hip-on-nvidia", [IsolatedExecutor(HipOnNvidiaExecutor)])
    assert isinstance(pool, Pooled) and pool.wave == 64 and not isinstance(iso, Pooled)
    assert cpu.wave is None and CudaExecutor.wave is None


def test_conv_gemm_kernel_defaults_to_the_copy():
    assert CpuExecutor().conv_gemm_kernel == HipOnNvidiaExecutor.conv_gemm_kernel == "copy"
    assert CudaExecutor.conv_gemm_kernel == "original"


def _imports(package: str) -> dict[str, set[str]]:
    """Module file -> the parity modules it imports (absolute names, function-local ones too)."""
    out = {}
    for f in (PARITY / package).rglob("*.py"):
        mod = ".".join(f.relative_to(PARITY.parent).with_suffix("").parts)
        pkg = mod.rsplit(".", 1)[0] if f.name != "__init__.py" else mod
        names = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)] if node.level else []
                full = ".".join(base + ([node.module] if node.module else []))
                names |= {full} | {f"{full}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        out[f.name] = {n for n in names if n.startswith("parity")}
    return out


def test_ops_never_import_executors_or_host():
    for name, mods in _imports("ops").items():
        assert not {m for m in mods if m.startswith(("parity.executors", "parity.host"))}, name


def test_host_uses_only_the_executor_contract():
    for name, mods in _imports("host").items():
        assert not {m for m in mods if m.startswith("parity.executors") and not m.startswith("parity.executors.base")}, \
            name
