"""Run mutants: compile the changed file, run the cases that reach it, classify.

Verdicts: `killed` (a case did not pass: its id and verdict are kept), `survived` (every case
passed), `equivalent` (the object code is the original's, byte for byte), `compile-error`, and
`timeout` (the mutant's time limit ran out). Only killed and survived count towards the score.

`evaluate` takes any `run_mutant(mutant) -> Outcome`, so classification, score and reports are
tested without a GPU; `GpuRunner` is the one that compiles and launches.
"""
from __future__ import annotations

import hashlib
import queue
import threading
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..cases import Case
from ..engine import run_case
from ..executors.base import Compiling, Executor
from ..executors.worker import IsolatedExecutor
from .operators import Mutant
from .targets import FileTarget, cases_for, sources_needed

VERDICTS = ("killed", "survived", "timeout", "equivalent", "compile-error")
COUNTED = ("killed", "survived")


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: str                 # one of VERDICTS
    case: str = ""               # killed: the first case that did not pass
    case_verdict: str = ""       # ... and its verdict (fail, crash, timeout, ...)
    message: str = ""
    seconds: float = 0.0
    cases_run: int = 0


RunMutant = Callable[[Mutant], Outcome]


def evaluate(mutants: list[Mutant], run_mutant: RunMutant,
             on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every mutant's outcome, in the mutants' order."""
    out = []
    for m in mutants:
        o = run_mutant(m)
        out.append(o)
        if on_done is not None:
            on_done(o)
    return out


def run_cases_until_fail(mutant: Mutant, cases: list[Case], executor: Executor, limit_s: float,
                         t0: float) -> Outcome:
    """Run `cases` on `executor` and stop at the first one that does not pass."""
    for n, case in enumerate(cases, 1):
        if time.perf_counter() - t0 > limit_s:
            return Outcome(mutant, "timeout", message=f"{n - 1} of {len(cases)} cases in {limit_s:.0f} s",
                           seconds=time.perf_counter() - t0, cases_run=n - 1)
        row = run_case(case, executor)
        if row["verdict"] != "pass":
            return Outcome(mutant, "killed", case.id, str(row["verdict"]), str(row.get("message") or "")[:300],
                           time.perf_counter() - t0, n)
    return Outcome(mutant, "survived", seconds=time.perf_counter() - t0, cases_run=len(cases))


class GpuRunner:
    """Mutants on one GPU level, through `jobs` scratch copies of the suite (slots).

    A mutant is written into a free slot and only the sources it changes are compiled there, in
    parallel over the slots. Its object code is compared with the original's, compiled once in
    the suite folder itself (the cubin does not record the folder: a mutant the compiler folds
    away hashes the same from a slot). The run phase writes the mutant into its slot again and
    starts a fresh isolated worker there: a worker's loaded modules cannot be swapped for a new
    suite, and a mutant that faults must not cost the next one its context. That worker costs
    about a second per mutant (process start, CUDA context, suite discovery); an unchanged file
    a case also needs (ucopy for conv.host) compiles once per slot, then comes from the cache."""

    def __init__(self, suite_dir: Path, level_cls: type[Executor], targets: dict[str, FileTarget],
                 cases: list[Case], jobs: int = 1, case_timeout: float = 30.0, mutant_timeout: float = 120.0):
        self.suite_dir = Path(suite_dir).resolve()
        self.level_cls = level_cls
        self.targets = targets
        self.cases = {f: cases_for(t, cases) for f, t in targets.items()}
        self.case_timeout, self.mutant_timeout = case_timeout, mutant_timeout
        self.scratch = Path(tempfile.mkdtemp(prefix="parity-mutate-"))
        self.slots = [self.scratch / f"slot{j}" for j in range(max(1, jobs))]
        for slot in self.slots:
            shutil.copytree(self.suite_dir, slot)
        self._free: queue.Queue[int] = queue.Queue()
        for j in range(len(self.slots)):
            self._free.put(j)
        self._dirty: dict[int, str] = {}                 # slot -> the file holding a mutant there
        self._original: dict[str, str] = {}              # source -> sha256 of its original object code
        self._original_lock = threading.Lock()          # guards _original_locks
        self._original_locks: dict[str, threading.Lock] = {}   # one per source: others compile meanwhile
        self._slot_of: dict[str, int] = {}               # mutant id -> the slot it was compiled in
        self._early: dict[str, Outcome | None] = {}      # mutant id -> outcome decided by compiling

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _write(self, j: int, mutant: Mutant | None) -> Path:
        """Slot j holding the original suite (mutant None) or that one mutant."""
        slot = self.slots[j]
        if j in self._dirty:
            f = self._dirty.pop(j)
            shutil.copyfile(self.suite_dir / f, slot / f)
        if mutant is not None:
            (slot / mutant.file).write_text(mutant.apply((self.suite_dir / mutant.file).read_text()))
            self._dirty[j] = mutant.file
        return slot

    def _sources(self, mutant: Mutant) -> list[str]:
        return sources_needed(self.targets[mutant.file], self.cases[mutant.file])

    def _digest(self, suite: Path, source: str) -> tuple[str | None, str]:
        """(sha256 of the object code, or None and the compiler's first error); ("", "") for a
        level that compiles only inside its worker (no equivalence detection there)."""
        ex = self.level_cls(suite_dir=suite)
        if not isinstance(ex, Compiling):
            return "", ""
        res = ex.precompile([suite / source], jobs=1)[suite / source]
        if not res.ok:
            return None, res.error.first() if res.error else "compile failed"
        return hashlib.sha256(res.read()).hexdigest(), ""

    # --- compilation (parallel, no GPU) ---------------------------------------------------
    def _original_digest(self, source: str) -> str:
        with self._original_lock:
            lock = self._original_locks.setdefault(source, threading.Lock())
        with lock:                            # one compile per source, not one per waiting thread
            if source not in self._original:
                self._original[source] = self._digest(self.suite_dir, source)[0] or ""
            return self._original[source]

    def compile_one(self, mutant: Mutant) -> Outcome | None:
        """Compile a mutant: its early outcome (equivalent, compile-error), or None to run it.
        (Every target reaches a case: the CLI keeps only those.)"""
        t0 = time.perf_counter()
        srcs = self._sources(mutant)
        j = self._free.get()
        try:
            self._slot_of[mutant.id] = j
            suite = self._write(j, mutant)
            same = True
            for s in srcs:
                digest, err = self._digest(suite, s)
                if digest is None:
                    return Outcome(mutant, "compile-error", message=f"{s}: {err}", seconds=time.perf_counter() - t0)
                same = same and bool(digest) and digest == self._original_digest(s)
        finally:
            self._free.put(j)
        if same:
            return Outcome(mutant, "equivalent", message="object code unchanged", seconds=time.perf_counter() - t0)
        return None

    def precompile(self, mutants: list[Mutant], on_done: Callable[[Mutant], None] | None = None) -> None:
        """Compile every mutant, one per slot at a time (the compiles are the cost: parallelism is the lever)."""
        with ThreadPoolExecutor(max_workers=len(self.slots)) as pool:
            for m, early in zip(mutants, pool.map(self.compile_one, mutants)):
                self._early[m.id] = early
                if on_done is not None:
                    on_done(m)

    # --- running (one GPU, one mutant at a time) --------------------------------------------
    def run_mutant(self, mutant: Mutant) -> Outcome:
        if mutant.id not in self._early:
            self._early[mutant.id] = self.compile_one(mutant)
        early = self._early[mutant.id]
        if early is not None:
            return early
        t0 = time.perf_counter()
        ex = IsolatedExecutor(self.level_cls, timeout_s=self.case_timeout,
                              suite_dir=self._write(self._slot_of[mutant.id], mutant))
        try:
            out = run_cases_until_fail(mutant, self.cases[mutant.file], ex, self.mutant_timeout, t0)
        finally:
            ex.close()
        if out.case_verdict == "compile-error":   # a level compiling in its worker says it only there
            return Outcome(mutant, "compile-error", message=out.message, seconds=out.seconds)
        return out
