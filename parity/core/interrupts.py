"""How a parity command stops on Ctrl-C (SIGINT), SIGTERM or SIGHUP: once, cleanly, saying what it finished.

The CLI installs `handler` for both signals around every command (parity.cli.main). The first signal
raises KeyboardInterrupt (SIGINT) or `Terminated` (SIGTERM) in the main thread, as Python's own
Ctrl-C does, so temporary folders are removed and a run writes the reports of what finished. Every
later signal is only recorded: a second Ctrl-C or a CI runner's repeated SIGTERM must not cut the
reports short (one line on stderr says what is happening; SIGKILL still stops at once).

`finishing()`: from then on (a run's cases are done or stopped; the reports are being written) a
signal is recorded and never raised; `first()` tells the command it came, so its reports say the run
was interrupted and it exits 130/143.

Without `install` (parity used as a library, the pytest plugin) nothing changes: Python's own Ctrl-C
handling applies.
"""
from __future__ import annotations

import os
import signal
from typing import Callable


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled): handled as an interrupt, exit 143."""


class HungUp(KeyboardInterrupt):
    """SIGHUP (the terminal closed, an ssh session dropped): handled as an interrupt, exit 129."""


EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


class _State:
    first: KeyboardInterrupt | None = None      # the first signal's exception (raised or not)
    finishing = False                           # finishing() was called: never raise again
    owned = False                               # the command is the process (parity's console script)
    told = False                                # the "still writing" line was printed


_S = _State()


def exit_code(exc: BaseException | None) -> int:
    """130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 143 if isinstance(exc, Terminated) else 129 if isinstance(exc, HungUp) else 130


def name(exc: BaseException | None) -> str:
    """What stopped the command, as its message says it."""
    return "SIGTERM" if isinstance(exc, Terminated) else "SIGHUP" if isinstance(exc, HungUp) else "Ctrl-C"


_ON_FIRST: list[Callable[[], None]] = []


def on_first(callback: Callable[[], None]) -> None:
    """Call `callback` when the command's first signal comes (before it is raised): work that runs
    outside the main thread and would hold the command up stops there (the compilers)."""
    if callback not in _ON_FIRST:
        _ON_FIRST.append(callback)


def handler(signum: int, frame) -> None:
    exc = {signal.SIGTERM: Terminated, signal.SIGHUP: HungUp}.get(signum, KeyboardInterrupt)()
    if _S.first is None:
        _S.first = exc
        for callback in _ON_FIRST:
            try:
                callback()
            except Exception:
                pass                # stopping goes on whatever a callback met
        if not _S.finishing:
            raise exc
        return
    if not _S.told:                 # os.write: safe in a handler (print may be mid-write on stdout)
        _S.told = True
        os.write(2, b"\nparity: stopping; writing what finished (SIGKILL stops at once)\n")


def install() -> dict:
    """Handle SIGINT and SIGTERM as above from now on (a fresh state); returns what to `restore`."""
    reset()
    previous = {s: signal.getsignal(s) for s in EXIT_CODES}
    for s in EXIT_CODES:
        signal.signal(s, handler)
    return previous


def restore(previous: dict) -> None:
    for s, h in previous.items():
        signal.signal(s, h if h is not None else signal.SIG_DFL)


def own_process() -> None:
    """The command is the whole process (the `parity` console script, `python -m parity`), not a call
    inside another program (a test's CliRunner): see `done`."""
    _S.owned = True


def done(previous: dict) -> None:
    """The command is over: its handlers go back to `previous`; but when a signal stopped it and the
    process is its own, SIGINT and SIGTERM are ignored instead (the process is exiting, and Python resets
    its own handlers while it exits, so a repeated signal would otherwise kill it mid-exit)."""
    if _S.first is not None and _S.owned:
        ignore()
    else:
        restore(previous)


def ignore() -> None:
    """SIGINT and SIGTERM ignored from now on: the command is over and the process exits (Python resets
    its own handlers while exiting, so a repeated signal would otherwise kill it mid-exit)."""
    for s in EXIT_CODES:
        signal.signal(s, signal.SIG_IGN)


def reset() -> None:
    _S.first = None
    _S.finishing, _S.told = False, False


def first() -> KeyboardInterrupt | None:
    """The interrupt this command received first (raised or only recorded), or None."""
    return _S.first


def finishing() -> None:
    """From now on a signal is recorded (see `first`), never raised: the command is writing what it has."""
    _S.finishing = True
