"""Run mutants: compile the changed sources, run the cases of the kernels it changed, classify.

Verdicts: `killed` (a case did not pass, and passes on the unmutated suite: its id and verdict are
kept), `survived` (every case passed), `equivalent` (no kernel's machine code changed),
`compile-error`, `timeout` (the mutant's time limit ran out before its cases said either), and
`out-of-reach` (no selected case runs a kernel whose code it changed: --ops narrower than its
file); `argued-equivalent` is decided by `scope` (which also keeps mutants out of the sweep's
reach from being sampled). Only killed and survived count towards the score.

`evaluate` takes any `run_mutant(mutant) -> Outcome`, so classification, score and reports are
tested without a GPU; `GpuRunner` is the one that compiles and launches.
"""
from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from parity.executors.base import Compiling, Executor
from parity.executors.hip_nvidia import HipOnNvidiaExecutor
from parity.executors.worker import IsolatedExecutor
from parity.mutate.objcode import changed_kernels, sections
from parity.mutate.operators import Mutant, source_text
from parity.mutate.targets import FileTarget, case_kernels, cases_for, source_order, sources_needed, spread
from parity.run.cases import Case
from parity.run.engine import Prepared, drive, prepare_case, run_case

VERDICTS = ("killed", "survived", "timeout", "equivalent", "argued-equivalent", "compile-error", "out-of-reach")
COUNTED = ("killed", "survived")
CACHED_BYTES = 16 << 20        # cases with larger outputs are built again for each mutant


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: str                 # one of VERDICTS
    case: str = ""               # killed: the first case that did not pass
    case_verdict: str = ""       # ... and its verdict (fail, crash, timeout, ...)
    message: str = ""
    seconds: float = 0.0
    cases_run: int = 0
    kernels: tuple[str, ...] = ()  # the kernels whose machine code the mutant changed (run ones)
    phases: dict[str, float] = field(default_factory=dict)   # seconds compiling, waiting for a runner,
                                                             # running; sources compiled (GpuRunner)


RunMutant = Callable[[Mutant], Outcome]


def evaluate(mutants: list[Mutant], run_mutant: RunMutant,
             on_done: Callable[[Outcome], None] | None = None, workers: int = 1) -> list[Outcome]:
    """Every mutant's outcome, in the mutants' order; `workers` mutants at a time (threads: a
    runner's work is compiling in subprocesses and waiting on a GPU worker)."""
    if workers <= 1:
        out = []
        for m in mutants:
            out.append(run_mutant(m))
            if on_done is not None:
                on_done(out[-1])
        return out
    pool = ThreadPoolExecutor(max_workers=workers)
    pending = {pool.submit(run_mutant, m): i for i, m in enumerate(mutants)}
    done: dict[int, Outcome] = {}
    try:
        while pending:           # polled: Ctrl-C lands in a sleep, not inside a waiter's lock
            finished = [f for f in pending if f.done()]
            if not finished:
                time.sleep(0.05)
            for f in finished:
                i = pending.pop(f)
                done[i] = f.result()
                if on_done is not None:
                    on_done(done[i])
    except BaseException:                 # Ctrl-C: the mutants not started never start
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [done[i] for i in range(len(mutants))]


def run_cases_until_fail(mutant: Mutant, cases: list[Case], executor: Executor, limit_s: float,
                         t0: float, prepared: Callable[[Case], Prepared | None] = lambda c: None,
                         original_passes: Callable[[Case], bool] = lambda c: True) -> Outcome:
    """Run `cases` on `executor` and stop at the first one that does not pass (and passes on the
    unmutated suite: a case failing there tells nothing about the mutant). Launches are
    pipelined as `parity run` pipelines them (engine.drive): the worker runs the next case
    while this thread judges the last."""
    rows: list[dict] = []
    timed_out = False

    def items():
        nonlocal timed_out
        for n, case in enumerate(cases):
            if time.perf_counter() - t0 > limit_s:
                timed_out = True
                return
            yield n, case, prepared(case)

    def kills(row: dict) -> bool:       # (not-run: held back after an earlier fault, never launched on it)
        return row["verdict"] not in ("pass", "not-run") and original_passes(cases[len(rows) - 1])
    drive(items(), executor, "", None, lambda _, row: rows.append(row), stop=kills)
    seconds = time.perf_counter() - t0
    if rows and kills(rows[-1]):
        row = rows[-1]
        return Outcome(mutant, "killed", cases[len(rows) - 1].id, str(row["verdict"]),
                       str(row.get("message") or "")[:300], seconds, len(rows))
    if timed_out:
        return Outcome(mutant, "timeout", message=f"{len(rows)} of {len(cases)} cases in {limit_s:.0f} s",
                       seconds=seconds, cases_run=len(rows))
    return Outcome(mutant, "survived", seconds=seconds, cases_run=len(cases))


class GpuRunner:
    """Mutants on one GPU level, each in a lane of its own: a scratch copy of the suite (a slot)
    where the mutant is written, compiled and run. `jobs` lanes work at once, so compiles of some
    mutants overlap the GPU runs of others; at most `runners` lanes launch on the GPU at a time.

    A mutant compiles one source at a time, the sources most likely to use the changed code first,
    and runs the cases of the kernels whose machine code differs from the original's (`objcode`):
    it stops at the first case that does not pass, so a header mutant that the first source kills
    never compiles the others. No kernel changed: `equivalent`. The original object code is
    compiled once in the suite folder itself (the cubin does not record the folder). Each slot
    keeps one isolated GPU worker across its mutants, renewed (kernels forgotten, context kept) for
    each one; a mutant that faults costs that worker, and the next mutant starts a fresh one.
    Cases are built and referenced once and reused by every mutant that runs them."""

    def __init__(self, suite_dir: Path, level_cls: type[Executor], targets: dict[str, FileTarget],
                 cases: list[Case], jobs: int = 1, case_timeout: float = 30.0, mutant_timeout: float = 120.0,
                 runners: int = 4):
        self.suite_dir = Path(suite_dir).resolve()
        self.level_cls = level_cls
        # every lane compiles at once (CudaToolchain.lane_compile); the workers must compile with the
        # same flags, or they miss the cache and compile again
        self.level_kw = {"lane_compile": True} if issubclass(level_cls, HipOnNvidiaExecutor) else {}
        self.targets = targets
        self.cases = {f: spread(cases_for(t, cases)) for f, t in targets.items()}
        self.case_timeout, self.mutant_timeout = case_timeout, mutant_timeout
        self.scratch = Path(tempfile.mkdtemp(prefix="parity-mutate-"))
        self.slots = [self.scratch / f"slot{j}" for j in range(max(1, jobs))]
        for slot in self.slots:
            shutil.copytree(self.suite_dir, slot)
        self._free: queue.Queue[int] = queue.Queue()
        for j in range(len(self.slots)):
            self._free.put(j)
        self._workers: dict[int, IsolatedExecutor] = {}  # slot -> its GPU worker
        self._gpu = threading.Semaphore(max(1, runners))
        self._dirty: dict[int, str] = {}                 # slot -> the file holding a mutant there
        self._original: dict[str, dict[str, str]] = {}   # source -> its original object code's sections
        self._original_lock = threading.Lock()          # guards _original_locks
        self._original_locks: dict[str, threading.Lock] = {}   # one per source: others compile meanwhile
        self._prepared: dict[str, Prepared] = {}         # case id -> built and referenced once
        self._source_lists: dict[str, list[str]] = {}    # mutant id -> the sources it compiles
        self.seconds = {"compile": 0.0, "wait": 0.0, "run": 0.0}   # summed over the lanes (for the report):
        self.cases_run = 0                               # compiling, waiting for a runner, running cases
        self._original_ex: IsolatedExecutor | None = None  # the unmutated suite, for killing cases
        self._baseline_lock = threading.Lock()
        self.original_rows: dict[str, dict] = {}         # case id -> its row on the unmutated suite
        self._tally = threading.Lock()
        self._phases = threading.local()                 # .spent: the running mutant's phases, per lane
        # The unmutated suite, every source any case needs (a host routine's or a chain's steps come
        # from files no mutant touches), compiled in the background: a slot's worker finds them in the
        # cache (compile_cache keys a folder by content) instead of compiling while holding a runner.
        self._warm = threading.Thread(target=self._precompile_original, args=(cases,), daemon=True)
        self._warm.start()

    def _precompile_original(self, cases: list[Case]) -> None:
        try:
            ex = self.level_cls(suite_dir=self.suite_dir, **self.level_kw)
            if isinstance(ex, Compiling):
                kernels = sorted(set().union(*(case_kernels(c) for c in cases)))
                ex.precompile(ex.sources_for(kernels), jobs=os.cpu_count() or 1)
        except Exception:      # only a head start: a source that fails here fails where a case needs it
            pass

    def close(self) -> None:
        for ex in [*self._workers.values(), self._original_ex]:
            if ex is not None:
                ex.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _write(self, j: int, mutant: Mutant | None) -> Path:
        """Slot j holding the original suite (mutant None) or that one mutant."""
        slot = self.slots[j]
        if j in self._dirty:
            f = self._dirty.pop(j)
            shutil.copyfile(self.suite_dir / f, slot / f)
        if mutant is not None:
            (slot / mutant.file).write_text(mutant.apply(source_text(self.suite_dir / mutant.file)),
                                             errors="surrogateescape")   # (bytes as they were)
            self._dirty[j] = mutant.file
        return slot

    def _digest(self, suite: Path, source: str) -> tuple[dict[str, str] | None, str]:
        """(the object code's section hashes, or None and the compiler's first error); ({}, "")
        for a level that compiles only inside its worker (no equivalence detection there)."""
        ex = self.level_cls(suite_dir=suite, **self.level_kw)
        if not isinstance(ex, Compiling):
            return {}, ""
        t0 = time.perf_counter()
        res = ex.precompile([suite / source], jobs=1)[suite / source]
        self._count("compile", t0)
        if not res.ok:
            return None, res.error.first() if res.error else "compile failed"
        return sections(res.read()), ""

    def _original_digest(self, source: str) -> dict[str, str]:
        with self._original_lock:
            lock = self._original_locks.setdefault(source, threading.Lock())
        with lock:                            # one compile per source, not one per waiting thread
            if source not in self._original:
                self._original[source] = self._digest(self.suite_dir, source)[0] or {}
            return self._original[source]

    def original_passes(self, case: Case) -> bool:
        """Whether `case` passes on the unmutated suite (asked once per case that killed a mutant)."""
        with self._baseline_lock:
            if case.id not in self.original_rows:
                if self._original_ex is None:
                    self._original_ex = IsolatedExecutor(self.level_cls, timeout_s=self.case_timeout, spare=False,
                                                         suite_dir=self.suite_dir, **self.level_kw)
                self.original_rows[case.id] = run_case(case, self._original_ex, prepared=self._prepare(case))
            return self.original_rows[case.id]["verdict"] == "pass"

    def original_failures(self) -> dict[str, str]:
        """case id -> verdict of the cases that fail on the unmutated suite (none count as kills)."""
        return {k: str(r["verdict"]) for k, r in self.original_rows.items() if r["verdict"] != "pass"}

    def _count(self, what: str, t0: float) -> None:
        spent = time.perf_counter() - t0
        with self._tally:
            self.seconds[what] += spent
        mine = getattr(self._phases, "spent", None)      # the calling lane's mutant
        if mine is not None:
            mine[what] = mine.get(what, 0.0) + spent

    def _prepare(self, case: Case) -> Prepared | None:
        p = self._prepared.get(case.id)
        if p is None:
            p = prepare_case(case)
            if p.expected is None or p.expected.nbytes <= CACHED_BYTES:
                self._prepared[case.id] = p   # (a race prepares a case twice: harmless)
        return p

    def _sources(self, mutant: Mutant) -> list[str]:
        """The sources the mutant compiles (targets.source_order), worked out once: from the suite
        folder, as every slot is a copy of it."""
        got = self._source_lists.get(mutant.id)
        if got is None:
            target = self.targets[mutant.file]
            needed = sources_needed(target, self.cases[mutant.file])
            text = mutant.apply(source_text(self.suite_dir / mutant.file))
            got = self._source_lists[mutant.id] = source_order(target, needed, text, mutant.offset, self.suite_dir)
        return got

    def cost(self, mutant: Mutant) -> float:
        """A mutant's work at most, in rough seconds of one lane: its sources to compile (about 6 s
        each) and its cases (about 100 a second). Lanes take the costliest first, so the header
        mutants that compile many sources do not start last and hold up the end of the run."""
        return 6.0 * len(self._sources(mutant)) + len(self.cases[mutant.file]) / 100

    def run_mutant(self, mutant: Mutant) -> Outcome:
        """The mutant's outcome, with where its time went (`phases`)."""
        self._phases.spent = spent = {}
        try:
            out = self._run_mutant(mutant, spent)
        finally:
            self._phases.spent = None
        return replace(out, phases={k: round(v, 3) for k, v in spent.items()})

    def _run_mutant(self, mutant: Mutant, spent: dict[str, float]) -> Outcome:
        t0 = time.perf_counter()
        j = self._free.get()
        try:
            slot = self._write(j, mutant)
            changed, ran, touched = False, 0, set()
            for source in self._sources(mutant):
                digest, err = self._digest(slot, source)
                if digest != {}:              # ({}: a level that compiles only in its worker)
                    spent["sources"] = spent.get("sources", 0) + 1   # the mutant's compiles, not the original's
                if digest is None:
                    return Outcome(mutant, "compile-error", message=f"{source}: {err}",
                                   seconds=time.perf_counter() - t0)
                kernels = dict(self.targets[mutant.file].sources)[source]
                original = self._original_digest(source)
                which = changed_kernels(original, digest, kernels) if digest and original else None
                if which is not None:         # (None: code any kernel may use changed: all run)
                    if not which:
                        continue              # this source's machine code is the original's
                    kernels = which           # only the cases of the kernels whose code changed
                changed = True
                touched |= kernels
                out = self._run(j, slot, mutant, [c for c in self.cases[mutant.file] if case_kernels(c) & kernels])
                ran += out.cases_run
                if out.verdict != "survived":
                    return replace(out, seconds=time.perf_counter() - t0, cases_run=ran, kernels=tuple(sorted(touched)))
            if not changed:
                n = len(self._sources(mutant))
                return Outcome(mutant, "equivalent", seconds=time.perf_counter() - t0,
                               message=f"object code unchanged in the {n} source(s) the selected cases use")
            if not ran:                       # changed code, and none of the selected cases runs it
                return Outcome(mutant, "out-of-reach", message="no selected case runs the kernels it changed: "
                               + ", ".join(sorted(touched)), seconds=time.perf_counter() - t0,
                               kernels=tuple(sorted(touched)))
            return Outcome(mutant, "survived", seconds=time.perf_counter() - t0, cases_run=ran,
                           kernels=tuple(sorted(touched)))
        finally:
            self._free.put(j)

    def _run(self, j: int, slot: Path, mutant: Mutant, cases: list[Case]) -> Outcome:
        """The mutant's cases on slot j's GPU worker (renewed: it may hold the last mutant's code);
        --mutant-timeout counts from the first launch."""
        t_wait = time.perf_counter()
        with self._gpu:
            self._count("wait", t_wait)
            ex = self._workers.get(j)
            if ex is None:
                ex = self._workers[j] = IsolatedExecutor(self.level_cls, timeout_s=self.case_timeout,
                                                         spare=False, suite_dir=slot, **self.level_kw)
            else:
                ex.renew()
            t0 = time.perf_counter()
            out = run_cases_until_fail(mutant, cases, ex, self.mutant_timeout, t0, self._prepare, self.original_passes)
            self._count("run", t0)
            with self._tally:
                self.cases_run += out.cases_run
        if out.case_verdict == "compile-error":   # a level compiling in its worker says it only there
            return Outcome(mutant, "compile-error", message=out.message, seconds=out.seconds)
        return out
