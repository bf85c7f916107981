"""Fault containment: run an executor in a child process (multiprocessing, spawn).

A launch that kills the CUDA context (illegal address) is answered `crash` and the child is
replaced; a launch that does not answer within `timeout_s` is answered `timeout`, the child is
killed and replaced. Compiling and loading (`prepare`) get their own, longer limit, so a slow
first compile is not mistaken for a hung kernel.

A replacement costs seconds (a Python process, CuPy's import, a CUDA context), and a port whose
in-place path faults crashes in hundreds of cases: so a warm spare worker (started, context
created) always waits beside the current one and takes over at once after a fault.

    ex = IsolatedExecutor(HipOnNvidiaExecutor, suite_dir="backends/hip", timeout_s=10)
    ex.run(launch)      # ExecResult, whatever the kernel does
    ex.submit(a); ex.submit(b); ex.collect(); ex.collect()   # queued: results of a, then b
    ex.close()

Queued launches (submit/collect) let the caller judge one result while the worker runs the next;
after a crash or timeout the launches queued behind it are sent again to the new worker.
"""
from __future__ import annotations

import multiprocessing as mp
import traceback
from collections import deque

from ..ops.base import Launch
from .base import Availability, ExecResult, Executor


def _serve(conn, cls, kwargs, env=None) -> None:
    if env:                                      # before the executor touches the device:
        import os                                # CUDA_VISIBLE_DEVICES pins this worker to one GPU
        os.environ.update(env)
    last = None                                  # (launch, result) of the last run, for "time"
    try:
        ex = cls(**kwargs)
        ex.warm()                                # a spare is only worth having with its context made
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", None))
    while True:
        try:
            msg, payload = conn.recv()
        except EOFError:
            break
        try:
            if msg == "availability":
                out = ex.availability()
            elif msg == "prepare":
                out = ex.prepare(payload) if hasattr(ex, "prepare") else None
            elif msg == "run":
                out = ex.run(payload)
                last = (payload, out)
            elif msg == "time":                  # (launch or None = the last run's, TimingOptions)
                from ..timing import time_launch
                launch, opts = payload
                ref = None
                if launch is None and last is not None:
                    launch, ref = last[0], (last[1].outputs if last[1].status == "ok" else None)
                out = time_launch(ex, launch, opts, ref) if launch is not None else None
            elif msg == "close":
                ex.close()
                conn.send(("ok", None))
                break
            else:
                out = None
            conn.send(("ok", out))
        except Exception:
            conn.send(("ok", ExecResult("crash", message=traceback.format_exc(limit=5))))


class IsolatedExecutor(Executor):
    def __init__(self, cls: type, timeout_s: float = 30.0, prepare_timeout_s: float = 1800.0,
                 start_method: str = "spawn", env: dict[str, str] | None = None, spare: bool = True,
                 **kwargs):
        self.cls, self.kwargs = cls, kwargs
        self.spare = spare                         # keep a warm spare worker (see the module docstring)
        self._spare: tuple | None = None           # (process, pipe) of the spare, once started
        self._dying: list = []                     # killed workers not reaped yet
        self.env = dict(env or {})                 # set in the worker first (CUDA_VISIBLE_DEVICES)
        self._last_launch = None
        self.level = getattr(cls, "level", "?")
        self.timeout_s, self.prepare_timeout_s = timeout_s, prepare_timeout_s
        self._ctx = mp.get_context(start_method)
        self._proc = None
        self._conn = None
        self.restarts = 0
        self._ready: set[str] = set()              # kernels prepared in the current worker
        self._seq = self._next = 0                 # submissions numbered; the next one to collect
        self._inflight: deque[tuple[int, Launch]] = deque()   # sent "run"s, oldest first
        self._done: dict[int, ExecResult] = {}     # answers not collected yet

    # --- process management ----------------------------------------------------------------
    def _spawn(self) -> tuple:
        """A new worker process and its pipe, not waited for."""
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(child, self.cls, self.kwargs, self.env), daemon=True)
        proc.start()
        child.close()
        return proc, parent

    def _start(self) -> str:
        """Make a worker current: the warm spare when there is one, else a fresh process; then
        start the next spare, which warms up while this one works."""
        proc, conn = self._spare or self._spawn()
        self._spare = None
        self._proc, self._conn = proc, conn
        self._ready.clear()
        why = self._await_ready(conn)
        if why:
            self._kill()
            return why
        if self.spare:
            self._spare = self._spawn()
        return ""

    def _await_ready(self, conn) -> str:
        if not conn.poll(self.prepare_timeout_s):
            return "worker did not start"
        try:
            tag, payload = conn.recv()
        except EOFError:
            return "worker died while starting"
        return "" if tag == "ready" else f"executor failed to start:\n{payload}"

    def _stop(self, proc, conn) -> None:
        """Kill a worker without waiting for it: the driver's teardown of a faulted context can
        take a while, and the process is reaped later (_reap)."""
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            self._dying.append(proc)
        if conn is not None:
            conn.close()
        self._reap()

    def _reap(self, wait: float = 0.0) -> None:
        for proc in self._dying:
            proc.join(wait)
        self._dying = [p for p in self._dying if p.exitcode is None]

    def _kill(self) -> None:
        self._stop(self._proc, self._conn)
        self._proc = self._conn = None

    def _restart(self) -> None:
        self._kill()
        self.restarts += 1

    def _call(self, msg: str, payload, timeout: float):
        """("ok", value) | ("timeout", None) | ("died", exitcode) | ("error", text)."""
        if self._proc is None or not self._proc.is_alive():
            self._kill()
            why = self._start()
            if why:
                return "error", why
        try:
            self._conn.send((msg, payload))
            if not self._conn.poll(timeout):
                return "timeout", None
            tag, value = self._conn.recv()
            return tag, value
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            code = self._proc.exitcode if self._proc else None
            return "died", code

    # --- Executor ------------------------------------------------------------------------
    def availability(self) -> Availability:
        tag, value = self._call("availability", None, self.prepare_timeout_s)
        if tag == "ok":
            return value
        self._restart()
        return Availability(False, f"executor worker: {tag} {value or ''}".strip())

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def _prepare(self, launch: Launch) -> ExecResult | None:
        """Compile and load the launch's kernel in the worker unless it is there already: None
        when ready, else the launch's result (missing, compile-error, crash, timeout)."""
        if launch.kernel in self._ready and self._alive():
            return None
        tag, value = self._call("prepare", launch.kernel, self.prepare_timeout_s)
        if tag == "ok" and value is None:
            self._ready.add(launch.kernel)
            return None
        if tag == "ok":
            if value.status == "crash":
                self._restart()
            return value
        self._restart()
        return ExecResult("timeout" if tag == "timeout" else "crash",
                          message=f"preparing {launch.kernel}: {tag} {value or ''}".strip())

    def run(self, launch: Launch) -> ExecResult:
        if self._inflight or self._done:
            raise RuntimeError("run() while submitted launches are not collected")
        self.submit(launch)
        return self.collect()

    def submit(self, launch: Launch, _seq: int | None = None) -> None:
        """Queue a launch in the worker; collect() answers the launches in submission order."""
        if _seq is None:
            _seq, self._seq = self._seq, self._seq + 1
        if self._inflight and not (launch.kernel in self._ready and self._alive()):
            while self._inflight:                    # compile (or restart) only with nothing queued
                self._answer()
        early = self._prepare(launch)
        if early is not None:
            self._done[_seq] = early
            return
        try:
            self._conn.send(("run", launch))
        except (OSError, BrokenPipeError):
            pass                                     # the worker died: _answer() reports it
        self._inflight.append((_seq, launch))

    def collect(self) -> ExecResult:
        """The result of the oldest submitted launch not collected yet."""
        while self._next not in self._done:
            if not self._inflight:
                raise RuntimeError("collect() without a submitted launch")
            self._answer()
        self._next += 1
        return self._done.pop(self._next - 1)

    def _answer(self) -> None:
        """Wait for the oldest launch in flight; after a crash, hang or death of the worker, the
        launches queued behind it go to a fresh worker."""
        seq, launch = self._inflight.popleft()
        try:
            if self._conn.poll(self.timeout_s):
                tag, value = self._conn.recv()
            else:
                tag, value = "timeout", None
        except (EOFError, OSError):
            if self._proc is not None:
                self._proc.join(1)                   # reap it: its exit code tells what happened
            tag, value = "died", (self._proc.exitcode if self._proc else None)
        self._last_launch = launch if tag == "ok" else None
        if tag == "ok":
            self._done[seq] = value
        elif tag == "timeout":
            self._done[seq] = ExecResult("timeout", message=f"no answer after {self.timeout_s:g} s: {launch.describe()}")
        else:
            self._done[seq] = ExecResult("crash", message=f"worker process died (exit code {value}) during {launch.describe()}")
        if tag == "ok" and value.status != "crash":
            return
        self._restart()
        again = list(self._inflight)
        self._inflight.clear()
        for s, queued in again:
            self.submit(queued, s)

    def time(self, launch, opts, timeout_s: float | None = None):
        """Time `launch` in the worker (parity.timing.time_launch). The launch that was just run
        is not sent again: the worker reuses it and compares the output after timing with the
        output of that run. Returns a Timing, or raises RuntimeError (the worker is restarted)."""
        same = launch is self._last_launch and self._proc is not None and self._proc.is_alive()
        limit = timeout_s or max(60.0, 4 * self.timeout_s + opts.time_cap_s)
        tag, value = self._call("time", (None if same else launch, opts), limit)
        if tag != "ok":
            self._restart()
            raise RuntimeError(f"timing {launch.kernel}: worker {tag} {value or ''}".strip())
        if isinstance(value, ExecResult):        # the timing code raised in the worker
            raise RuntimeError(value.message)
        return value

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(("close", None))
                self._conn.poll(10)
            except (OSError, BrokenPipeError):
                pass
        self._kill()
        if self._spare is not None:
            self._stop(*self._spare)
            self._spare = None
        self._reap(wait=5.0)

    def __getstate__(self) -> dict:
        """The executor's settings, for another process (the drive processes of
        parity.engine.run_cases): the copy starts a worker of its own."""
        return {**self.__dict__, "_ctx": self._ctx.get_start_method(), "_proc": None, "_conn": None,
                "_ready": set(), "_inflight": deque(), "_done": {}, "_last_launch": None, "_spare": None, "_dying": []}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update({**state, "_ctx": mp.get_context(state["_ctx"])})

    def __del__(self):
        try:
            self._kill()
            if self._spare is not None:
                self._stop(*self._spare)
        except Exception:
            pass
