"""The `amd-static` level of a run: the suite compiled for AMD targets with hipcc, no GPU needed.

On a machine without a GPU (most ports' CI) this is the level that checks the port's own code:
each case gets the verdict of the kernels it needs, decided without building or launching it:
`compile-error` (the file does not compile for a target, with hipcc's first error), `missing`
(no file defines the kernel), `signature-mismatch` (declared with another parameter list than the
ABI's) or `compiled` (compiles for every target; not executed, so never a `pass`).
The compiles are parity.suite.amd_static's (`parity compile`): same flags, same cache entries.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

from parity import profiles
from parity.executors.base import Availability, Executor
from parity.executors.preflight import compile_failure, declared_mismatch, not_found
from parity.host.routines import suite_kernels
from parity.ops.base import ExecResult
from parity.suite.amd_static import (accepted_targets, compile_for_arch, hipcc, kernel_notes, parse_resource_usage,
                                     toolchain, wavefront_size)
from parity.suite.compile_cache import CompileResult
from parity.suite.elf import kernels_from_binary
from parity.suite.port import Port, subject_suite
from parity.suite.scan import Suite

# One CDNA target (wave64, the data-centre parts) and one RDNA target (wave32): the two wave sizes
# a port meets. `parity compile` checks more targets; a run keeps its compile time to two.
RUN_TARGETS = ("gfx90a", "gfx1030")
INSTALL = "apt-get install hipcc libamdhip64-dev (Debian 12)"
# worst first: the verdict of a case that needs several kernels is its worst kernel's
_RANK = ("compile-error", "signature-mismatch", "missing", "unavailable", "compiled")


class AmdStaticExecutor(Executor):
    level = "amd-static"

    def __init__(self, suite_dir: Path, targets: Iterable[str] = RUN_TARGETS, port: Port | None = None,
                 profile: str | None = None, discovered: Suite | Callable[[], Suite] | None = None) -> None:
        self.suite_dir, self.targets = Path(suite_dir), tuple(targets)
        self._discovered = discovered            # the run's one discovery of suite_dir (port.subject_suite)
        self.port = port                                 # a shim port: its build line on every compile
        self._suite: Suite | None = None
        self._compiled: dict[tuple[Path, str], CompileResult] = {}
        self._symbols: dict[Path, dict[str, set[str]]] = {}   # source -> target -> kernels
        self._verdicts: dict[str, ExecResult] = {}
        self._expected = profiles.get(profile).expected_kernels()    # declared parameter lists to check

    def availability(self) -> Availability:
        if not hipcc():
            return Availability(False, f"hipcc not found: {INSTALL}, for the AMD compile checks")
        accepted = accepted_targets(self.targets)
        ok = tuple(a for a in self.targets if accepted[a][0])
        if not ok:
            why = "; ".join(f"{a}: {accepted[a][1]}" for a in self.targets)
            return Availability(False, f"hipcc accepts none of {', '.join(self.targets)} ({why})")
        self.targets = ok
        shown = ", ".join(f"{a} (wave{wavefront_size(a)})" for a in ok)
        version = toolchain().split("\n")[0].replace("HIP version:", "").strip()
        return Availability(True, device=f"hipcc {version}: {shown}; compiled, not run")

    def run(self, launch) -> ExecResult:                # Static: the engine asks judge() instead
        return self.judge([launch.kernel])

    # --- suite and compiles ----------------------------------------------------------------
    @property
    def suite(self) -> Suite:
        if self._suite is None:
            self._suite = subject_suite(self.suite_dir, self.port, any_if_none=True, discovered=self._discovered)
        return self._suite

    def sources_for(self, kernels: Iterable[str]) -> list[Path]:
        files = [self.suite.kernels[k].file for k in suite_kernels(kernels) if k in self.suite.kernels]
        return [Path(f) for f in dict.fromkeys(files) if f and Path(f) in self.suite.sources]

    def prepare(self, kernel: str) -> ExecResult | None:
        res = self.judge([kernel])
        return None if res.status == "compiled" else res

    def precompile(self, sources: Iterable[Path], jobs: int | None = None,
                   on_done: Callable[[Path, object], None] | None = None) -> dict:
        """Every (source, target) compiled in parallel; on_done(source, result) once a source's
        targets are all done (its first failing target's result, else the last)."""
        todo = [(Path(s), a) for s in dict.fromkeys(sources) for a in self.targets
                if (Path(s), a) not in self._compiled]
        left = {s: sum(1 for t in todo if t[0] == s) for s, _ in todo}
        with ThreadPoolExecutor(max_workers=jobs or max(1, os.cpu_count() or 1)) as pool:
            flags = self.port.hipcc_flags() if self.port is not None else []
            incs = list(self.port.include_dirs) if self.port is not None else []
            for (src, arch), res in zip(todo, pool.map(lambda t: compile_for_arch(*t, flags, include_dirs=incs), todo)):
                self._compiled[(src, arch)] = res
                left[src] -= 1
                if left[src] == 0 and on_done is not None:
                    results = [self._compiled[(src, a)] for a in self.targets]
                    on_done(src, next((r for r in results if not r.ok), results[-1]))
        return {Path(s): self._compiled[(Path(s), self.targets[0])] for s in sources}

    def _compile(self, src: Path) -> list[tuple[str, CompileResult]]:
        self.precompile([src], jobs=len(self.targets))
        return [(a, self._compiled[(src, a)]) for a in self.targets]

    def _symbols_by_arch(self, src: Path) -> dict[str, set[str]]:
        """The kernels each target's code object defines."""
        if src not in self._symbols:
            by_arch = {}
            for arch, res in self._compile(src):
                try:
                    by_arch[arch] = set(kernels_from_binary(res.binary, arch)) | set(parse_resource_usage(res.log))
                except Exception:
                    by_arch[arch] = set(parse_resource_usage(res.log))
            self._symbols[src] = by_arch
        return self._symbols[src]

    def _symbols_of(self, src: Path) -> set[str]:
        """The kernels every target's code object defines (a kernel behind `#if` for one target
        counts only where it is)."""
        sets = list(self._symbols_by_arch(src).values())
        return set.intersection(*sets) if sets else set()

    # --- verdicts ----------------------------------------------------------------------------
    def judge(self, kernels: Iterable[str]) -> ExecResult:
        """The worst verdict of the suite kernels these launch names need (a host routine: its own
        launches; a library call with none, rocBLAS: `unavailable`, nothing here compiles it)."""
        names = suite_kernels(kernels)
        if not names:
            return ExecResult("unavailable", message="a host library routine (rocBLAS/MIOpen): "
                                                     "no suite kernel to compile")
        results = [self.kernel_verdict(k) for k in names]
        return min(results, key=lambda r: _RANK.index(r.status) if r.status in _RANK else -1)

    def kernel_verdict(self, kernel: str) -> ExecResult:
        if kernel not in self._verdicts:
            self._verdicts[kernel] = self._verdict(kernel)
        return self._verdicts[kernel]

    def _verdict(self, kernel: str) -> ExecResult:
        defs = self.suite.definitions(kernel)
        if not defs:
            self.precompile(self.suite.sources)          # in parallel; cached for the next missing kernel
            failed = [(s, r) for s in self.suite.sources for a, r in self._compile(s) if not r.ok]
            return not_found(kernel, self.suite, str(self.suite_dir), list(dict(failed).items()))
        for d in defs:                                   # a kernel two files define: the next file's only where
            v = self._definition_verdict(kernel, d)      # this one's module leaves it out (#if)
            if v.status != "missing":
                return v
        return v

    def _definition_verdict(self, kernel: str, decl) -> ExecResult:
        src = Path(decl.file)
        for arch, res in self._compile(src):
            if not res.ok:
                v = compile_failure(src, res, port=self.port)
                return ExecResult(v.status, message=f"hipcc --offload-arch={arch}: {v.message}", detail=v.detail)
        op_key = self._expected.get(kernel)
        if op_key is not None:                           # (pointees too: `const uint32_t *info` for size_t)
            op, key = op_key
            wrong = declared_mismatch(decl, op.signature(key), profiles.typed_signature(op, key))
            if wrong is not None:
                return wrong
        if kernel not in self._symbols_of(src):
            lacking = [a for a, names in self._symbols_by_arch(src).items() if kernel not in names]
            some = len(lacking) < len(self.targets)
            return not_found(kernel, self.suite, str(self.suite_dir), [],
                             absent_for=f" for {', '.join(lacking)} (not for the other targets)" if some else "")
        return ExecResult("compiled", message=f"compiles for {', '.join(self.targets)}; not executed",
                          detail={"source": str(src)})

    def notes(self, kernels: Iterable[str]) -> dict[str, list[str]]:
        """The wavefront-size notes of the given kernels' sources (file:line: note)."""
        wanted = set(suite_kernels(kernels))
        return {k: v for k, v in kernel_notes(self.suite).items() if k in wanted}
