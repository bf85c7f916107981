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
    from parity.cli.main import main
    from parity.core import interrupts
    interrupts.own_process()
    main(prog_name="parity")


if __name__ == "__main__":
    entry()
