"""Run cases on executors: build -> reference -> pack -> execute -> compare -> result row."""
from __future__ import annotations

import os
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, runtime_checkable

import numpy as np

from parity.core.layouts import LAYOUT_CLASSES, code_path
from parity.core.row import Row, Verdict
from parity.executors.base import Executor, Pooled, Queued, Static, TimedWhereRun
from parity.ops.base import ChainLaunch, ExecResult, Launch
from parity.profiles import is_builtin_op, typed_signature
from parity.profiles.kernels import ReferenceRaised
from parity.run.cases import Case
from parity.timing import bytes_moved_built, gbps, time_launch


def bench_refusal(case: Case, executor: Executor) -> dict | None:
    """Bench-sized layouts are for timing on a GPU, and huge ones need more memory than most
    machines have (`memory_refusal`): the cpu level answers `unavailable` before building anything."""
    cls = LAYOUT_CLASSES.get(case.layout)
    if executor.level != "cpu" or cls is None:
        return None
    if cls.bench:
        why = (f"bench-sized layout {case.layout} ({'x'.join(map(str, cls.shape))}) is timed on GPU "
               "levels only; the cpu level does not run it")
    else:
        why = memory_refusal(case, executor.level)
    if why is None:
        return None
    return Row(case.id, case.op, dtype=case.dtype, layout=case.layout, values=case.values, seed=case.seed,
               params=dict(case.params), level=executor.level, verdict=Verdict.UNAVAILABLE,
               message=why).to_dict()


def memory_refusal(case: Case, level: str) -> str | None:
    """Why the cpu level cannot build an opt-in (huge) case in this machine's memory, as one line
    with the numbers, or None. Checked before any input is built: a 2^31-element case was killed
    by the kernel at 23.5 GB. The estimate is a floor: every operand and the output as a base
    buffer of the widest dtype plus its float64 reference copy."""
    from math import prod

    cls = LAYOUT_CLASSES.get(case.layout)
    if level != "cpu" or cls is None or not cls.opt_in or cls.bench:
        return None
    op = case.catalog_op
    itemsize = max(d.bits // 8 for d in op.dtype_parts(case.dtype))
    operands = len(op.inputs) + 1
    need = operands * prod(cls.shape) * (itemsize + 8)
    have = available_memory()
    if have is None or need <= have:
        return None
    return (f"layout {case.layout} ({prod(cls.shape)} elements x {operands} operands) needs about "
            f"{need / 2**30:.1f} GiB on the cpu level; {have / 2**30:.1f} GiB available (MemAvailable): "
            "not run (run it on a GPU level, or on a machine with more memory)")


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (/proc/meminfo MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


@dataclass
class Prepared:
    """A case built, packed and its reference computed by its op's spec: run it on any number of
    levels. launch and expected are None when Candle's host refuses the case before launching."""
    case: Case
    built: Any                                   # the spec's record (elementwise.Built, StructuredBuilt)
    launch: Launch | None
    expected: np.ndarray | None
    bytes_moved: int | None                      # timing's bytes model (elementwise launches only)
    seconds: float


def with_pointees(case: Case, launch: Launch | ChainLaunch | None) -> None:
    """Tells the launch its kernel's pointer pointees when it launches the op's own kernel (an executor
    refuses a suite kernel whose pointers point to elements of another width: preflight)."""
    op = case.catalog_op
    if isinstance(launch, Launch) and not launch.library and launch.kernel == op.kernel_name(case.dtype):
        launch.typed = typed_signature(op, case.dtype)


def prepare_case(case: Case) -> Prepared:
    t0 = time.perf_counter()
    spec = case.catalog_op.spec
    b, launch, expected = spec.prepare(case)
    with_pointees(case, launch)
    moved = bytes_moved_built(b) if spec.elementwise else spec.bytes_moved(b) if launch is not None else None
    return Prepared(case, b, launch, expected, moved, time.perf_counter() - t0)


def run_case(case: Case, executor: Executor, device: str = "", timing=None,
             prepared: Prepared | None = None) -> dict:
    """One result row (a plain dict; the results module turns rows into a table).

    timing: parity.timing.TimingOptions to time the case after it passed (None: no timing).
    prepared: reuse a prepare_case() result."""
    refused = bench_refusal(case, executor)
    if refused is not None:
        return refused
    t0, p, row = _begin(case, executor, device, prepared)
    if p.launch is None:
        return _not_launched(row, p, t0)
    return _finish(row, p, executor.run(p.launch), executor, timing, t0)


def _begin(case: Case, executor: Executor, device: str, prepared: Prepared | None) -> tuple[float, Prepared, Row]:
    """(start time, the prepared case, its row before the launch)."""
    t0 = time.perf_counter()
    p = prepared or prepare_case(case)
    op, key = case.catalog_op, case.dtype
    if prepared is not None:
        t0 -= p.seconds                          # wall time includes building, as for a fresh case
    before = op.spec.describe(p.built, p.expected)
    row = Row(case.id, op.name, family=op.family, kernel=op.kernel_name(key), dtype=key, layout=case.layout,
              values=case.values, seed=case.seed, params=dict(case.params), level=executor.level,
              device=device, n_bad=0, numel=before["numel"], tolerance=op.spec.tolerance(key),
              semantics=op.semantics, divergences=list(op.divergences), layouts=before["layouts"],
              launch=p.launch.describe() if p.launch is not None else "", wave=_wave(executor))
    return t0, p, row


def static_row(case: Case, executor: Static, device: str = "") -> dict:
    """The row of a level that judges without building or launching (amd-static: compile checks)."""
    t0 = time.perf_counter()
    op = case.catalog_op
    res = executor.judge(case.kernels)
    row = Row(case.id, op.name, family=op.family, kernel=op.kernel_name(case.dtype), dtype=case.dtype,
              layout=case.layout, values=case.values, seed=case.seed, params=dict(case.params),
              level=executor.level, device=device, verdict=Verdict(res.status), message=res.message,
              tolerance=op.spec.tolerance(case.dtype), semantics=op.semantics, extra=dict(res.detail))
    row.wall_ms = (time.perf_counter() - t0) * 1e3
    return row.to_dict()


def _not_launched(row: Row, p: Prepared, t0: float) -> dict:
    """The row of a case Candle's host refuses before any launch: the refusal is what it expects. A
    case no launch can express (a declared kernel's parameter too narrow for its size) is unavailable."""
    if getattr(p.built, "unlaunchable", ""):
        row.verdict = Verdict.UNAVAILABLE
        row.message = f"not launched: {p.built.unlaunchable}"
    else:                                        # (right of the host; the suite's kernel never ran)
        row.verdict = Verdict.PASS
        row.message = f"expected error, not launched: {p.built.refuse}"
        row.extra["not_launched"] = True
    row.wall_ms = (time.perf_counter() - t0) * 1e3
    return row.to_dict()


def _finish(row: Row, p: Prepared, res, executor: Executor, timing, t0: float) -> dict:
    """Judge a case's ExecResult into its row (and time it when it passed)."""
    spec = p.case.catalog_op.spec
    row.kernel_ms = res.time_ms
    row.extra.update(res.detail)                 # source file, parameter lists, host-routine facts
    row.extra.update(spec.row_fields(p.built, res))
    row.judged(spec.verdict(p.built, p.expected, res)[0])
    row.bytes_moved = p.bytes_moved
    if p.bytes_moved is not None and timing is not None and row.verdict == Verdict.PASS:
        time_row(row, executor, p.launch, timing, res.outputs)   # without a bytes model: not timed
    row.wall_ms = (time.perf_counter() - t0) * 1e3
    return row.to_dict()


def time_row(row: Row, executor: Executor, launch, timing, outputs) -> None:
    """Add the timing columns to a passing row (kernel_ms = median, p10/p90, GB/s, % of peak)."""
    if executor.level == "cpu":                      # the NumPy emulation has no kernel time
        return
    try:
        if isinstance(executor, TimedWhereRun):      # an isolated worker: timed where it ran
            t = executor.time(launch, timing)
        else:
            t = time_launch(executor, launch, timing, outputs)
    except Exception as e:                           # a level that cannot be timed keeps its verdict
        row.timing_note = f"not timed: {e}"
        return
    if t is None:
        row.timing_note = "not timed"
        return
    row.timing(t.fields())
    row.gbps = gbps(row.bytes_moved, t.median_ms)
    peak = t.peak_gbps
    row.peak_gbps = peak
    row.pct_peak = 100.0 * row.gbps / peak if row.gbps and peak else None


def run_cases_multi(cases: Iterable[Case], executors: list[tuple[Executor, str]], timing=None,
                    on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Every case on several levels, built and referenced once (bench: 2^26-element cases)."""
    rows = []
    for case in cases:
        try:
            p = prepare_case(case)
        except Exception as e:
            p, err = None, e
        for ex, device in executors:
            try:
                if p is None:
                    raise err
                row = run_case(case, ex, device, timing, prepared=p)
            except Exception as e:
                row = _error_row(case, ex, e)
            rows.append(row)
            if on_row:
                on_row(row)
    return rows


def _error_row(case: Case, executor: Executor, e: Exception) -> dict:
    """The row of a case that raised before it was judged: a declared kernel's own reference raising is the
    declaration's (reference-error, where it raised), anything else parity's (error). The row keeps its
    op's family and kernel, so the score table has no family of its own for it."""
    try:
        op = case.catalog_op
        family, kernel = op.family, op.kernel_name(case.dtype)
    except Exception:                            # the op itself is what failed
        op = family = kernel = None
    # NumPy's own (the case's host arrays), never a device's out-of-memory (CuPy's is a MemoryError too)
    too_big = (isinstance(e, MemoryError) and type(e).__module__.startswith("numpy")
               or isinstance(e, ValueError) and "array is too big" in str(e))
    if isinstance(e, ReferenceRaised):
        verdict, message = Verdict.REFERENCE_ERROR, str(e)
    elif too_big and getattr(op, "profile", ""):  # a declared shape class this machine cannot build
        verdict = Verdict.REFERENCE_ERROR
        message = (f"the declaration's shape class {case.layout!r} does not fit in memory here "
                   f"({type(e).__name__}: {e}): declare smaller sizes")
    else:
        verdict, message = Verdict.ERROR, f"parity internal error: {type(e).__name__}: {e}"
    return Row(case.id, case.op, family=family, kernel=kernel, dtype=case.dtype, layout=case.layout,
               values=case.values, seed=case.seed, level=executor.level, verdict=verdict, message=message).to_dict()


def _wave(executor) -> int | None:
    """The wavefront size (32|64) of a hip-on-nvidia level, else None."""
    w = executor.wave
    return int(w) if w else None


def add_ratios(rows: list[dict]) -> list[dict]:
    """HIP time / reference time per case on the same GPU: against `cuda` when it was timed,
    else against the CuPy reference (`cupy`). Sets `ratio` and `ratio_vs` on the HIP rows."""
    by_case: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_case.setdefault(r.get("case_id"), {})[r.get("level")] = r
    for levels in by_case.values():
        ref = next((levels[n] for n in ("cuda", "cupy") if n in levels and _timed(levels[n])), None)
        if ref is None:
            continue
        for name in ("hip-on-nvidia", "hip-on-nvidia/w32", "amd"):
            r = levels.get(name)
            if r is not None and _timed(r):
                r["ratio"] = float(r["kernel_ms"]) / float(ref["kernel_ms"])
                r["ratio_vs"] = ref["level"]
    return rows


def _timed(r: dict) -> bool:
    v = r.get("kernel_ms")
    return r.get("samples") is not None and isinstance(v, (int, float)) and v == v and v > 0


# ---------------------------------------------------------------- preparation ahead of the GPU
# Building a case and its CPU reference is a third of a small case's time on a GPU level (bench/harness.py,
# H200: 0.39 of 1.33 ms) and all of it on one core; worker processes do it ahead of the executor.
POOL_MIN_CASES = 200          # below this, starting the pool costs more than it saves
_CHUNK = 32


def prepare_jobs() -> int:
    """Worker processes for preparation: PARITY_PREPARE_JOBS, else cores - 2 (one for this
    process, one for the GPU worker), at most 8; 1 = prepare in this process."""
    env = os.environ.get("PARITY_PREPARE_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    return max(1, min(8, (os.cpu_count() or 1) - 2))


def _poolable(case: Case) -> bool:
    cls = LAYOUT_CLASSES.get(case.layout)
    if not is_builtin_op(case.op):               # a declared profile's op: its references live in the port's
        return False                             # files, loaded in this process (not in a forked preparer)
    return cls is None or not cls.opt_in         # huge/bench layouts: never pickled (shape classes are small)


def _prepare_chunk(cases: list[Case]) -> list:
    out = []
    for c in cases:
        try:
            out.append(prepare_case(c))
        except Exception as e:                   # re-raised by run_case's caller as an error row
            out.append(e)
    return out


def _preparer(conn) -> None:
    """A preparing worker: chunks of cases in, their _prepare_chunk results out, until None or the
    parent is gone. Ctrl-C reaches the terminal's whole process group and the parent alone decides what
    it means (ignored here: no traceback per worker); SIGTERM ends it at once, silently (the parent
    sees its pipe close, never half a message it waits on forever)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        while True:
            cases = conn.recv()
            if cases is None:
                break
            out = _prepare_chunk(cases)
            try:
                conn.send(out)
            except (OSError, EOFError):
                raise
            except Exception as e:             # a result that does not pickle: each case says so
                conn.send([RuntimeError(f"preparing worker: {type(e).__name__}: {e}")] * len(cases))
    except (OSError, EOFError):                # the parent is gone (interrupted, killed): nothing to report
        pass


class _Preparers:
    """`jobs` preparing workers, each with a pipe of its own; chunk k goes to worker k % jobs, so each
    worker's answers come back in the order they are asked for. A worker that dies (SIGTERM, memory)
    closes its pipe: `result` raises EOFError/OSError then, never waits forever (concurrent.futures'
    pool does, on a result half written by a worker killed mid-send)."""

    def __init__(self, ctx, jobs: int):
        from parity.executors.worker import start_process
        self.workers = []
        try:
            for _ in range(jobs):
                parent, child = ctx.Pipe()
                p = start_process(ctx, _preparer, (child,))
                child.close()
                self.workers.append((p, parent))
        except BaseException:
            self.close()
            raise

    def ask(self, k: int, cases: list[Case]) -> None:
        self.workers[k % len(self.workers)][1].send(cases)

    def result(self, k: int) -> list:
        return self.workers[k % len(self.workers)][1].recv()

    def close(self) -> None:
        """Tell each worker to stop, wait a moment for it, then end it (it may be mid-chunk)."""
        workers, self.workers = self.workers, []
        for _, conn in workers:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
            conn.close()
        for p, _ in workers:
            p.join(2)
            if p.is_alive():
                p.terminate()
                p.join(1)


def prepared_stream(cases: list[Case], jobs: int | None = None) -> Iterator:
    """For each case in order: its Prepared (built by worker processes, a bounded window ahead),
    the exception its preparation raised, or None (opt-in layouts and short runs: run_case prepares
    those itself; and every case after a worker died: this process prepares the rest, and a SIGTERM to
    the whole process group that killed it reaches this process as its own interrupt). Closing the
    generator (Ctrl-C, SIGTERM, the end of the run) stops the workers."""
    jobs = prepare_jobs() if jobs is None else jobs
    todo = [i for i, c in enumerate(cases) if _poolable(c)]
    if jobs <= 1 or len(todo) < POOL_MIN_CASES:
        yield from (None for _ in cases)
        return
    from parity.executors.worker import context
    chunks = [todo[k:k + _CHUNK] for k in range(0, len(todo), _CHUNK)]
    pool = _Preparers(context("forkserver"), jobs)     # (fork is unsafe next to threads and CUDA)
    asked = done = i = 0
    try:
        ready: dict[int, object] = {}
        while i < len(cases):
            while asked < len(chunks) and asked - done < 4 * jobs:
                pool.ask(asked, [cases[k] for k in chunks[asked]])
                asked += 1
            if i not in ready and done < len(chunks) and chunks[done][0] == i:
                ready.update(zip(chunks[done], pool.result(done)))
                done += 1
            yield ready.pop(i, None)
            i += 1
    except (EOFError, OSError):                  # a worker died: this process prepares the rest itself
        pool.close()
        yield from (None for _ in cases[i:])
    finally:
        pool.close()


def _run_one(case: Case, executor: Executor, device: str, timing, prepared) -> dict:
    try:
        if isinstance(prepared, Exception):
            raise prepared
        extra = {k: v for k, v in (("timing", timing), ("prepared", prepared)) if v is not None}
        return run_case(case, executor, device, **extra)
    except Exception as e:  # a tool bug on one case must not hide the others' results
        return _error_row(case, executor, e)


# ------------------------------------------------------ a faulting path is launched once
# A crash or timeout costs a worker restart, ~0.26 s on an H100 (half of it the GPU's own recovery):
# a port whose 48 unary kernels crash on in-place cases spent 60 s of an 86 s pr sweep faulting
# again where it had faulted already. Fail and oob-write cost no restart: those cases still run.
FAULTS = (Verdict.CRASH, Verdict.TIMEOUT)


def fault_path(kernel: str, layout: str) -> tuple[str, str]:
    """The code path a crash or timeout is charged to: the kernel and its layout class's path
    (layouts.code_path: both in-place classes are the null-input path, every other layout class a
    path of its own). A fault of the same kernel on another path does not stop that path's cases."""
    return kernel, code_path(layout)


def not_run_message(first: str) -> str:
    return f"same fault path as {first}"


class FaultPaths:
    """One executor's first crash or timeout per fault_path, and its launches in flight (so that
    an isolated worker holds back the queued launches on a path that just faulted: HoldsAfterFault)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], str] = {}          # path -> case id of its first fault
        self._flying: dict[int, tuple[tuple[str, str], str]] = {}   # id(launch) -> (path, case id)

    def faulted(self, case: Case) -> str | None:
        """The case id of the first fault on this case's path, or None."""
        return self.first.get(fault_path(case.catalog_op.kernel_name(case.dtype), case.layout))

    def note(self, row: dict) -> None:
        if row.get("verdict") in FAULTS and row.get("kernel"):
            self.first.setdefault(fault_path(row["kernel"], row.get("layout") or ""), row["case_id"])

    def launched(self, launch: Launch, case: Case) -> None:
        path = fault_path(case.catalog_op.kernel_name(case.dtype), case.layout)
        self._flying[id(launch)] = (path, case.id)

    def landed(self, launch: Launch) -> None:
        self._flying.pop(id(launch), None)

    def after_fault(self, faulted: Launch, queued: Launch) -> str | None:
        """Why `queued` is not sent again after `faulted` crashed or timed out: the same path."""
        f, q = self._flying.get(id(faulted)), self._flying.get(id(queued))
        return not_run_message(f[1]) if f is not None and q is not None and f[0] == q[0] else None


@runtime_checkable
class HoldsAfterFault(Protocol):
    """A Queued executor that, after a fault, asks `after_fault(faulted, queued)` about each launch
    queued behind it and answers `not-run` with the reason instead of sending it to the new worker
    (executors.worker.IsolatedExecutor). Without it the case behind a fault is launched again."""
    after_fault: Callable[[Launch, Launch], str | None] | None


@contextmanager
def _holding(executor: Executor, faults: FaultPaths | None):
    """While drive runs, the executor asks `faults` before re-sending launches after a fault."""
    if faults is None or not isinstance(executor, HoldsAfterFault):
        yield
        return
    before = executor.after_fault
    executor.after_fault = faults.after_fault
    try:
        yield
    finally:
        executor.after_fault = before


def _not_run(case: Case, executor: Executor, device: str, prepared, first: str) -> dict:
    """The row of a case on a path that already faulted: `not-run`, naming the first fault. A case
    Candle's host refuses launches nothing, so it keeps its own row."""
    refused = bench_refusal(case, executor)
    if refused is not None:
        return refused
    try:
        if isinstance(prepared, Exception):
            raise prepared
        t0, p, row = _begin(case, executor, device, prepared)
    except Exception as e:
        return _error_row(case, executor, e)
    if p.launch is None:
        return _not_launched(row, p, t0)
    return _held(row, ExecResult(Verdict.NOT_RUN.value, message=not_run_message(first)), t0)


def _held(row: Row, res: ExecResult, t0: float) -> dict:
    """A not-run row: the executor or the engine held the launch back (its message names the fault)."""
    row.verdict, row.message = Verdict.NOT_RUN, res.message
    row.wall_ms = (time.perf_counter() - t0) * 1e3
    return row.to_dict()


# ------------------------------------------------------------------ pipelined launches
# A GPU worker answers a small case in ~0.3 ms and this process needs about as long to send it, compare
# the answer and write the row (bench/harness.py, H100); with the next launch queued in the worker
# while this process judges the last one, the two overlap.
PIPELINE_DEPTH = 2
PIPELINE_MAX_BYTES = 1 << 16    # larger launches go one at a time: a full pipe both ways would deadlock


class _Stop(Exception):
    """Raised by drive's emit wrapper when `stop` says the rest need not run."""


def drive(items: Iterable[tuple[int, Case, object]], executor: Executor, device: str, timing,
          emit: Callable[[int, dict], None], stop: Callable[[dict], bool] | None = None,
          every_fault: bool = False) -> None:
    """Run (index, case, prepared) items on one executor; emit(index, row) in item order. Without
    timing, an executor that can queue launches (submit/collect: executors.worker) gets up to
    PIPELINE_DEPTH small launches ahead. `stop(row)` true: no further item is taken, and the
    launches already queued are collected (the executor stays usable) but not emitted.
    After a crash or timeout, the later cases on the same fault_path are `not-run` (FaultPaths)
    unless `every_fault`: then every case is launched."""
    queue = timing is None and isinstance(executor, Queued)
    window: deque = deque()
    faults = None if every_fault else FaultPaths()

    def deliver(i: int, row: dict) -> None:
        if faults is not None:
            faults.note(row)
        emit(i, row)
        if stop is not None and stop(row):
            raise _Stop

    def retire() -> None:
        i, case, t0, p, row = window.popleft()
        try:
            res = executor.collect()
        except Exception as e:
            deliver(i, _error_row(case, executor, e))
            return
        finally:
            if faults is not None:
                faults.landed(p.launch)
        try:
            row = _held(row, res, t0) if res.status == Verdict.NOT_RUN else _finish(row, p, res, executor, None, t0)
        except Exception as e:
            row = _error_row(case, executor, e)
        deliver(i, row)

    try:
        with _holding(executor, faults):
            _drive_items(items, executor, device, timing, deliver, queue, window, retire, faults)
    except _Stop:
        while window:                            # answers already asked for: read, not judged
            window.popleft()
            try:
                executor.collect()
            except Exception:                    # a dead worker restarts on its next launch
                pass


def _drive_items(items, executor, device, timing, emit, queue, window, retire, faults) -> None:
    """drive's loop (`emit` may raise _Stop)."""
    for i, case, prepared in items:
        first = faults.faulted(case) if faults is not None else None
        if first is not None:
            while window:
                retire()
            emit(i, _not_run(case, executor, device, prepared, first))
            continue
        if not queue or bench_refusal(case, executor) is not None:
            while window:
                retire()
            emit(i, _run_one(case, executor, device, timing, prepared))
            continue
        try:
            if isinstance(prepared, Exception):
                raise prepared
            t0, p, row = _begin(case, executor, device, prepared)
        except Exception as e:
            while window:
                retire()
            emit(i, _error_row(case, executor, e))
            continue
        if p.launch is None:
            while window:
                retire()
            emit(i, _not_launched(row, p, t0))
            continue
        if isinstance(p.launch, ChainLaunch) or sum(a.nbytes for a in p.launch.buffers.values()) > PIPELINE_MAX_BYTES:
            # (a chain's message and answer carry every step's buffers and tensors: 50-160 kB)
            while window:
                retire()
        if faults is not None:
            faults.launched(p.launch, case)
        executor.submit(p.launch)
        window.append((i, case, t0, p, row))
        if len(window) >= PIPELINE_DEPTH:
            retire()
    while window:
        retire()


def run_cases(cases: Iterable[Case], executor: Executor, device: str = "",
              on_row: Callable[[dict], None] | None = None, timing=None, prepare: int | None = None,
              every_fault: bool = False) -> list[dict]:
    """Rows in case order, cases prepared ahead by prepared_stream (`prepare` worker processes;
    None: prepare_jobs()). An executor with `members` (executors.pool.GpuPool: one per GPU) gets one drive
    process per member; on_row is called in this thread. A case on a path that already crashed or
    timed out is `not-run` (see drive) unless `every_fault`."""
    cases = list(cases)
    if isinstance(executor, Static):
        return _run_static(cases, executor, device, on_row)
    if isinstance(executor, Pooled) and len(executor.members) > 1:
        return _run_parallel(cases, executor.members, device, on_row, timing, every_fault)
    stream = prepared_stream(cases, prepare)
    items = ((i, c, p) for i, (c, p) in enumerate(zip(cases, stream)))
    rows = []

    def emit(_: int, row: dict) -> None:
        rows.append(row)
        if on_row:
            on_row(row)
    try:
        drive(items, executor, device, timing, emit, every_fault=every_fault)
    finally:                                     # the preparing pool stops here, not when collected
        stream.close()
    return rows


def _run_static(cases: list[Case], executor: Static, device: str, on_row) -> list[dict]:
    rows = []
    for case in cases:
        try:
            row = static_row(case, executor, device)
        except Exception as e:                  # a tool bug on one case must not hide the others' results
            row = _error_row(case, executor, e)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


# ----------------------------------------------------------------------- one process per GPU
# A small case costs this process ~0.5 ms (send, compare, row) and the GPU microseconds, so threads
# over one worker per GPU scaled the nightly elementwise sweep by 1.07x on two H200s: the host was
# the bottleneck. Each GPU gets a drive process that prepares, launches (through its own isolated
# worker) and compares every Gth case; this process only receives rows.
ROW_BATCH_S = 0.1               # a drive process sends its rows at least this often


def _drive_process(conn, member: Executor, cases: list[Case], device: str, timing, prepare: int,
                   every_fault: bool = False) -> None:
    from parity.core import ci_log
    ci_log.guard_fds()                           # a kernel's printf here reaches the CI log too
    batch: list[dict] = []
    sent = time.perf_counter()

    def emit(row: dict) -> None:
        nonlocal sent
        batch.append(row)
        if time.perf_counter() - sent >= ROW_BATCH_S:
            conn.send(("rows", batch[:]))
            batch.clear()
            sent = time.perf_counter()
    try:
        run_cases(cases, member, device, emit, timing, prepare, every_fault)   # faults remembered per GPU
        conn.send(("rows", batch))
        conn.send(("done", None))
    except KeyboardInterrupt:                   # the parent decides what an interrupt means
        pass
    except Exception:                           # a tool bug: the parent turns the rest into error rows
        import traceback
        conn.send(("rows", batch))
        conn.send(("failed", traceback.format_exc(limit=4)))
    finally:
        member.close()
        conn.close()


def _run_parallel(cases: list[Case], members: list, device: str, on_row, timing,
                  every_fault: bool = False) -> list[dict]:
    import multiprocessing as mp
    from multiprocessing.connection import wait
    g = len(members)
    ctx = mp.get_context("spawn")              # this process may hold CUDA and threads: no fork; not daemonic:
                                               # a drive process starts its own workers
    prepare = max(1, prepare_jobs() // g)
    shares = [cases[k::g] for k in range(g)]   # interleaved: every op's cases spread over the GPUs
    out: list[dict | None] = [None] * len(cases)
    got = [0] * g
    procs, conns = [], {}
    try:
        for k, m in enumerate(members):
            parent, child = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_drive_process, args=(child, m, shares[k], device, timing, prepare, every_fault))
            p.start()
            child.close()
            procs.append(p)
            conns[parent] = k
        while conns:
            for c in wait(list(conns)):
                k = conns[c]
                try:
                    tag, rows = c.recv()
                except EOFError:
                    procs[k].join(5)
                    tag, rows = "failed", f"it died (exit code {procs[k].exitcode})"
                if tag == "failed":              # the rest of its cases are error rows, not lost
                    why = RuntimeError(f"the drive process of GPU worker {k + 1}/{g}: {rows}")
                    rows, tag = [_error_row(case, members[k], why) for case in shares[k][got[k]:]], "done"
                for row in rows or ():
                    out[k + g * got[k]] = row
                    got[k] += 1
                    if on_row:
                        on_row(row)
                if tag == "done":
                    del conns[c]
    finally:
        for p in procs:
            p.join(0.5 if not conns else 0)
            if p.is_alive():
                p.terminate()
    return [r for r in out if r is not None]
