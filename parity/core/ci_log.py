"""Under GitHub Actions, no line parity prints is a workflow command unless parity meant it to be.

The runner reads each line of a step's stdout and stderr (lines end at \\n, \\r or \\r\\n) as a command
when, after leading whitespace, it starts with `::` (`::error`, `::add-mask::`, `::stop-commands::`,
which would switch parity's own annotations off), or when it holds `##[` anywhere (the runner's older
form, `##[error]...`). A port controls much of what parity prints: compiler messages that quote its
source lines, kernel and file names, terminal wrapping that puts a name's tail at a line's start. So
one guard on the two streams covers them all: it puts U+2060 (WORD JOINER: zero-width, and no
whitespace to the runner's TrimStart) before a line's leading `::` and inside each `##[`, and the log
reads as before. parity's own annotations are written past the guard (`command`). In the processes
that run a port's kernels, descriptors 1 and 2 themselves go through it (`guard_fds`): a kernel's
device printf writes there, past sys.stdout.
"""
from __future__ import annotations

import atexit
import codecs
import os
import re
import sys
import threading
from typing import TextIO

from parity.core import env

MARK = "\u2060"
_LINES = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")     # split after each line end, as .NET's ReadLine ends lines
_OLD_FORM = re.compile(r"##(?=\[)")


class GuardedStream:
    """A text stream that neutralises workflow commands in what is written through it; every other
    attribute is the wrapped stream's (isatty, encoding, buffer, fileno: rich and click see the
    stream they had). Not an io.TextIOBase: its encoding would be None, and click would then write
    to the wrapped stream's buffer past the guard."""

    def __init__(self, inner: TextIO):
        self._inner = inner
        self._held = ""          # a line's start not yet known to be a command or not ("  :")
        self._tail = ""          # the current line's last two characters written (a `##[` across writes)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def write(self, s) -> int:
        if not isinstance(s, str):             # as a text stream would refuse it (click probes with b"")
            return self._inner.write(s)
        out = []
        for seg in _LINES.split(self._held + s):
            if not seg:
                continue
            self._held = ""
            ends = seg.endswith(("\n", "\r"))
            if not self._tail and not ends and seg.lstrip() in ("", ":"):
                self._held = seg               # may still become "  ::"
                break
            out.append(self._neutral(seg))
            self._tail = "" if ends else (self._tail + seg)[-2:]
        if out:
            self._inner.write("".join(out))
        return len(s)

    def _neutral(self, seg: str) -> str:
        """seg, the next piece of the current line (self._tail: what the line has so far), made inert."""
        if not self._tail and seg.lstrip().startswith("::"):
            seg = MARK + seg
        return _OLD_FORM.sub("##" + MARK, self._tail + seg)[len(self._tail):]

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._held:                         # "  :" that more text could make a command: marked
            held, self._held = MARK + self._held, ""
            self._inner.write(held)
            self._tail = held[-2:]
        self._inner.flush()

    def command(self, line: str) -> None:
        """Writes one workflow command parity means, on a line of its own."""
        self.flush()
        self._inner.write(("\n" if self._tail else "") + line + "\n")
        self._tail = ""
        self._inner.flush()


def guard() -> None:
    """Wraps stdout and stderr when running under GitHub Actions (once)."""
    if not env.flag("GITHUB_ACTIONS"):
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, GuardedStream):
            setattr(sys, name, GuardedStream(stream))


_PUMPS: list[tuple[int, int, threading.Thread]] = []     # (descriptor, its saved target, the pump)


def guard_fds() -> None:
    """In a process that runs a port's kernels (a kernel's device printf, a native library: written to
    file descriptors 1 and 2, past sys.stdout), under GitHub Actions: each descriptor through a pipe
    that a thread reads and writes on through the guard. Not for parity's main process, whose own
    annotations pass the guard through sys.stdout."""
    if not env.flag("GITHUB_ACTIONS") or _PUMPS:
        return
    for fd in (1, 2):
        try:
            saved = os.dup(fd)
            r, w = os.pipe()
            os.dup2(w, fd)
            os.close(w)
        except OSError:                       # no such descriptor: nothing to guard
            continue
        out = GuardedStream(open(saved, "w", encoding="utf-8", errors="replace", closefd=False))
        pump = threading.Thread(target=_pump, args=(r, out), name=f"ci-log-{fd}", daemon=True)
        pump.start()
        _PUMPS.append((fd, saved, pump))
    atexit.register(_unpump)


def _pump(r: int, out: GuardedStream) -> None:
    decode = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        chunk = os.read(r, 1 << 16)
        text = decode.decode(chunk, final=not chunk)
        if text:
            out.write(text)
        out.flush()
        if not chunk:
            os.close(r)
            return


def _unpump() -> None:
    """At exit: what is buffered written, the descriptors pointed back (the pipes then end), the pumps
    drained."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError, AttributeError):
            pass
    try:                                       # C's stdio too (a device printf's text waits there, a pipe's
        import ctypes                          # stdout being fully buffered), or it is written at exit, past
        ctypes.CDLL(None).fflush(None)         # the pumps
    except (OSError, AttributeError):
        pass
    for fd, saved, pump in _PUMPS:
        os.dup2(saved, fd)
        pump.join(timeout=2.0)


def command(line: str) -> None:
    """Prints a workflow command parity means (an annotation) to stdout, past the guard."""
    if isinstance(sys.stdout, GuardedStream):
        sys.stdout.command(line)
    else:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
