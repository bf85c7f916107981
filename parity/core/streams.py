"""The command's own stdout and stderr, made safe for how CI and shells hand them over.

* A locale that cannot encode parity's marks (✅, ⚠️, —: `LC_ALL=en_US.ISO-8859-1`, `PYTHONIOENCODING=ascii`)
  raised UnicodeEncodeError after the reports were written, and a passing run exited 3: characters
  the stream cannot encode are replaced instead.
* `parity run ... | head -3` closed stdout under a run: the next print raised BrokenPipeError, the run
  stopped with exit 1 and no report. Once the reader is gone, what parity prints goes nowhere (the
  descriptor too, for the processes it starts) and the run finishes, its reports written and its
  exit code its outcome's.
"""
from __future__ import annotations

import errno
import os
import sys
from typing import TextIO


class PipeSafe:
    """A text stream whose reader may go away: after the first broken pipe, writes are dropped.
    Every other attribute is the wrapped stream's (rich and click see the stream they had; not an
    io.TextIOBase, whose encoding would be None, as parity.core.ci_log.GuardedStream says)."""

    def __init__(self, inner: TextIO):
        self._inner = inner
        self._gone = False

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def _closed_pipe(self, e: OSError) -> bool:
        if not isinstance(e, BrokenPipeError) and e.errno != errno.EPIPE:
            return False
        self._gone = True
        try:                                   # the descriptor too: a child process or a native library
            devnull = os.open(os.devnull, os.O_WRONLY)     # writing there gets no SIGPIPE or EPIPE either
            os.dup2(devnull, self._inner.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        return True

    def write(self, s) -> int:
        if self._gone:
            return len(s)
        try:
            return self._inner.write(s)
        except OSError as e:
            if not self._closed_pipe(e):
                raise
            return len(s)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._gone:
            return
        try:
            self._inner.flush()
        except OSError as e:
            if not self._closed_pipe(e):
                raise


def harden() -> None:
    """stdout and stderr: unencodable characters replaced, a closed reader tolerated (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or isinstance(stream, PipeSafe):
            continue
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError, OSError):
            pass                               # (not a TextIOWrapper: a test's capture, left as it is)
        setattr(sys, name, PipeSafe(stream))
