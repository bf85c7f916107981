"""Fault containment: run an executor in a child process (multiprocessing, spawn).

A launch that kills the CUDA context (illegal address) is answered `crash` and the child is
replaced; a launch that does not answer within `timeout_s` is answered `timeout`, the child is
killed and replaced. Compiling and loading (`prepare`) get their own, longer limit, so a slow
first compile is not mistaken for a hung kernel.

A replacement costs seconds (a Python process, CuPy's import, a CUDA context, the modules), and a
port whose in-place path faults crashes in hundreds of cases. So workers are forked from a
forkserver that has imported NumPy, CuPy and parity already (no CUDA call before the fork), and
warm spares (context created, the current worker's kernels loaded) wait beside the current one
and take over at once after a fault. When faults come faster than a spare warms up, more spares
are kept (up to MAX_SPARES). Measured on an H100: the fault itself costs 0.11 s (the GPU's own
recovery, which stalls every context on it; simultaneous faults serialize), taking over 0.009 s.

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

from parity.executors.base import Availability, Executor, Preparing
from parity.ops.base import ChainLaunch, ExecResult, Launch

# Imported once by the forkserver, so a forked worker starts with them (none of them touches CUDA
# at import). parity.run.engine's preparation pool forks from the same server.
FORKSERVER_PRELOAD = ["parity.run.engine", "parity.ops", "parity.executors.worker", "parity.executors.hip_nvidia",
                      "numpy", "ml_dtypes", "cupy"]
MAX_SPARES = 6                  # each spare holds a CUDA context (~0.5 GB of device memory)


def context(start_method: str = "forkserver"):
    """A multiprocessing context; forkserver with parity's preload where the platform has it."""
    if start_method == "forkserver" and "forkserver" not in mp.get_all_start_methods():
        start_method = "spawn"
    ctx = mp.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
    return ctx


def start_process(ctx, target, args: tuple):
    """ctx.Process(target, args, daemon=True), started; on a forkserver context the server is started
    first, quietly (quiet_forkserver). Not at `context()`: a context is also made while a spawned
    process is still bootstrapping, where no process may be started yet."""
    if ctx.get_start_method() == "forkserver":
        quiet_forkserver()
    p = ctx.Process(target=target, args=args, daemon=True)
    p.start()
    return p


def quiet_forkserver() -> None:
    """Start the forkserver (and multiprocessing's resource tracker) with SIGINT ignored in them. Ctrl-C
    reaches the terminal's whole process group, and one that came while they start (their imports take a
    second or two) would print a KeyboardInterrupt traceback from each; the parent alone decides what an
    interrupt means. They are started through `/bin/sh -c 'trap "" INT; exec ...'`: an ignored signal
    stays ignored across exec (and Python then leaves it so), and the workers forked from the server
    start with its handlers. This process's own disposition and mask are never touched, so a Ctrl-C
    that comes meanwhile reaches parity's handler, whichever thread the kernel hands it to. (Ignoring
    it here for the start, as before, dropped one handed to a thread that did not block it, OpenBLAS's,
    and the run went on to exit 0.)"""
    import os
    from multiprocessing import forkserver, util
    if not os.access("/bin/sh", os.X_OK):   # (an image without a shell: a Ctrl-C in the server's first
        forkserver.ensure_running()         # second may print its traceback; parity's handling is the same)
        return
    spawn = util.spawnv_passfds

    def spawn_ignoring_sigint(path, args, passfds):
        return spawn(b"/bin/sh", [b"/bin/sh", b"-c", b'trap "" INT; exec "$0" "$@"', *args], passfds)
    util.spawnv_passfds = spawn_ignoring_sigint
    try:
        forkserver.ensure_running()
    finally:
        util.spawnv_passfds = spawn


def _serve(conn, cls, kwargs, env=None, preload=()) -> None:
    import signal  # Ctrl-C reaches the terminal's whole process group:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops this worker (no traceback per worker)
    from parity.core import ci_log
    ci_log.guard_fds()                           # a kernel's printf here reaches the CI log too
    try:
        _answer(conn, cls, kwargs, env, preload)
    except (BrokenPipeError, ConnectionResetError):   # the parent is gone (interrupted, os._exit):
        pass                                          # nobody to answer, nothing to report


def _answer(conn, cls, kwargs, env, preload) -> None:
    if env:                                      # before the executor touches the device:
        import os  # CUDA_VISIBLE_DEVICES pins this worker to one GPU
        os.environ.update(env)
    last = None                                  # (launch, result) of the last run, for "time"
    try:
        ex = cls(**kwargs)
        ex.warm()                                # a spare is only worth having with its context made
        loaded = [k for k in preload if ex.prepare(k) is None] if isinstance(ex, Preparing) else []
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", loaded))
    while True:
        try:
            msg, payload = conn.recv()
        except EOFError:
            break
        try:
            if msg == "availability":
                out = ex.availability()
            elif msg == "prepare":
                out = ex.prepare(payload) if isinstance(ex, Preparing) else None
            elif msg == "run":
                out = ex.run(payload)
                last = (payload, out)
            elif msg == "time":                  # (launch or None = the last run's, TimingOptions)
                from parity.timing import time_launch
                launch, opts = payload
                ref = None
                if launch is None and last is not None:
                    launch, ref = last[0], (last[1].outputs if last[1].status == "ok" else None)
                out = time_launch(ex, launch, opts, ref) if launch is not None else None
            elif msg == "renew":                 # the suite's files changed (parity mutate): a new
                ex.close()                       # executor over them, this process's context kept
                ex = cls(**kwargs)
                out = None
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
    def __init__(self, cls: type[Executor], timeout_s: float = 30.0, prepare_timeout_s: float = 1800.0,
                 start_method: str = "forkserver", env: dict[str, str] | None = None, spare: bool = True,
                 **kwargs):
        self.cls, self.kwargs = cls, kwargs
        self.spare = spare                         # keep warm spare workers (see the module docstring)
        self._spares: deque[tuple] = deque()       # (process, pipe) of each spare, oldest first
        self._want_spares = 1                      # grows when a fault finds no spare warm yet
        self._dying: list = []                     # killed workers not reaped yet
        self.env = dict(env or {})                 # set in the worker first (CUDA_VISIBLE_DEVICES)
        self._last_launch = None
        self.level, self.wave = cls.level, cls.wave
        self.timeout_s, self.prepare_timeout_s = timeout_s, prepare_timeout_s
        self._ctx = context(start_method)
        self._proc = None
        self._conn = None
        self.restarts = 0
        self._ready: set[str] = set()              # kernels prepared in the current worker
        self._seq = self._next = 0                 # submissions numbered; the next one to collect
        self._inflight: deque[tuple[int, Launch]] = deque()   # sent "run"s, oldest first
        self._done: dict[int, ExecResult] = {}     # answers not collected yet
        # (faulted, queued launch) -> why the queued one is not sent again after a crash or timeout,
        # answered `not-run` instead: the caller's (engine.FaultPaths: same kernel and code path)
        self.after_fault = None

    # --- process management ----------------------------------------------------------------
    def _spawn(self) -> tuple:
        """A new worker process and its pipe, not waited for; it loads the kernels the current
        worker has loaded before it says ready."""
        parent, child = self._ctx.Pipe()
        proc = start_process(self._ctx, _serve, (child, self.cls, self.kwargs, self.env, sorted(self._ready)))
        child.close()
        return proc, parent

    def _start(self) -> str:
        """Make a worker current: the oldest warm spare when there is one, else a fresh process;
        then top up the spares, which warm up while this one works."""
        if self._spares:
            proc, conn = self._spares.popleft()
            if not conn.poll(0) and self._want_spares < MAX_SPARES:
                self._want_spares += 1             # faults outpace one spare's warm-up
        else:
            proc, conn = self._spawn()
        self._proc, self._conn = proc, conn
        self._ready = set()
        why, loaded = self._await_ready(conn)
        if why:
            self._kill()
            return why
        self._ready = set(loaded)
        while self.spare and len(self._spares) < self._want_spares:
            self._spares.append(self._spawn())
        return ""

    def _await_ready(self, conn) -> tuple[str, list[str]]:
        """("", kernels it loaded) once the worker is ready, or (why not, [])."""
        if not conn.poll(self.prepare_timeout_s):
            return "worker did not start", []
        try:
            tag, payload = conn.recv()
        except EOFError:
            return "worker died while starting", []
        return ("", payload) if tag == "ready" else (f"executor failed to start:\n{payload}", [])

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

    def renew(self) -> None:
        """Forget every loaded kernel: the suite's sources changed on disk. The worker keeps its
        process and CUDA context and rediscovers the suite (no worker: the next one starts fresh).
        Spares are dropped: they loaded the old code."""
        while self._spares:
            self._stop(*self._spares.popleft())
        if self._alive():
            tag, _ = self._call("renew", None, self.prepare_timeout_s)
            if tag != "ok":
                self._restart()
        self._ready = set()

    def prestart(self) -> None:
        """Start the first worker now, without waiting for it: its process, imports and CUDA
        context then overlap whatever the caller does next (compiling, preparing cases)."""
        if self._proc is None and not self._spares:
            self._spares.append(self._spawn())

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
        when ready, else the launch's result (missing, compile-error, crash, timeout). A chain's
        step kernels are compiled here, under the compile limit, not inside its run."""
        if isinstance(launch, ChainLaunch):
            for step in launch.steps:
                err = self._prepare(step.launch)
                if err is not None:
                    return ExecResult(err.status, message=f"{step.label}: {err.message}")
            return None
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
        # Behind queued launches only a kernel this worker has loaded goes straight in. Anything
        # else (compiling, a restart) waits until nothing is queued: a worker replaced meanwhile
        # would answer the queued launches' slots with its own answers. So the worker is looked
        # at once here; if it dies after the look, _answer reports the death and re-sends.
        if not (self._inflight and launch.kernel in self._ready and self._alive()):
            faulted = None
            while self._inflight:
                faulted = self._answer() or faulted
            if faulted is not None and self._held(faulted, _seq, launch):
                return
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

    def _answer(self) -> Launch | None:
        """Wait for the oldest launch in flight; after a crash, hang or death of the worker, the
        launches queued behind it go to a fresh worker (unless held: _held), and it is returned."""
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
            return None
        self._restart()
        again = list(self._inflight)
        self._inflight.clear()
        for s, queued in again:
            if not self._held(launch, s, queued):
                self.submit(queued, s)
        return launch

    def _held(self, faulted: Launch, seq: int, queued: Launch) -> bool:
        """Answer `queued` not-run, unsent, when after_fault gives a reason after `faulted`."""
        why = self.after_fault(faulted, queued) if self.after_fault is not None else None
        if why:
            self._done[seq] = ExecResult("not-run", message=why)
        return bool(why)

    def time(self, launch, opts, timeout_s: float | None = None):
        """Time `launch` in the worker (parity.timing.time_launch). The launch that was just run
        is not sent again: the worker reuses it and compares the output after timing with the
        output of that run. Returns a Timing, or raises RuntimeError (the worker is restarted)."""
        same = launch is self._last_launch and self._alive()
        limit = timeout_s or max(60.0, 4 * self.timeout_s + opts.time_cap_s)
        tag, value = self._call("time", (None if same else launch, opts), limit)
        if same and tag == "ok" and value is None:   # the worker died after the look: its
            tag, value = self._call("time", (launch, opts), limit)   # successor never ran it
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
        while self._spares:
            self._stop(*self._spares.popleft())
        self._reap(wait=5.0)

    def __getstate__(self) -> dict:
        """The executor's settings, for another process (the drive processes of
        parity.run.engine.run_cases): the copy starts a worker of its own."""
        return {**self.__dict__, "_ctx": self._ctx.get_start_method(), "_proc": None, "_conn": None,
                "_ready": set(), "_inflight": deque(), "_done": {}, "_last_launch": None, "_spares": deque(), "_dying": []}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update({**state, "_ctx": context(state["_ctx"])})

    def __del__(self):
        try:
            self._kill()
            for spare in self._spares:
                self._stop(*spare)
        except Exception:
            pass
