"""`python -m parity` = the `parity` command; pyproject's console script calls `entry` too."""
import os
import signal


def _starting(signum: int, frame) -> None:
    os._exit(143 if signum == signal.SIGTERM else 130)     # nothing is made yet: nothing to clean up


def entry() -> None:
    """The `parity` command. A Ctrl-C or SIGTERM while it starts (its imports take a moment) exits
    130/143 at once, without a traceback; the command's own handling (parity.cli.main.ParityGroup,
    parity.core.interrupts) takes over before it makes anything."""
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _starting)
    from parity.core import ci_log, streams
    streams.harden()                            # before anything is printed: any locale, any reader
    ci_log.guard()
    from parity.cli.main import main
    from parity.core import interrupts
    interrupts.own_process()
    try:
        main(prog_name="parity")
    except SystemExit as e:
        if interrupts.first() is None:
            raise
        _exit_interrupted(e.code)


def _exit_interrupted(code) -> None:
    """Exit 130/143 after an interrupt the command handled. Not through Python's own exit: CPython 3.11
    marks a KeyboardInterrupt raised inside exec'd source (the methods a dataclass builds while a module
    imports) as unhandled even when parity handles it, and then ends the process by re-raising SIGINT
    (-2) after parity said `interrupted`. The atexit handlers (multiprocessing's: workers, forkserver,
    resource tracker) still run."""
    import atexit
    import sys
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 1)


if __name__ == "__main__":
    entry()
