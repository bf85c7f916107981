"""Files parity reads that a user hands it: never open one that is not a regular file.

A FIFO blocks the reader forever, a device (`/dev/zero`, `/dev/urandom`) never ends, a socket cannot
be read: `special_file` says so in one line before anything opens it (sweep, chain, port, baseline
and result files, suite sources and headers, a resumed run's folder)."""
from __future__ import annotations

import os
import stat
from pathlib import Path


def special_file(path: str | os.PathLike) -> str | None:
    """Why `path` must never be opened for reading (a FIFO blocks forever, a device may never end, a
    socket cannot be read), as one line; None for a regular file, a folder or nothing there."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a special file")
    return f"{Path(path)} is {kind}, not a regular file: refused (not opened)"


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why `path`, when it exists, cannot be read or replaced as a file (a folder, or special_file's
    reasons); None for a regular file or nothing there."""
    why = special_file(path)
    if why:
        return why
    return f"{Path(path)} is a folder, not a file" if os.path.isdir(path) else None
