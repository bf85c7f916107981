"""Files parity is told to read or write: only regular files (and folders where a folder is meant).

A FIFO blocks a reader forever, a device never ends (`/dev/zero`) or is not ours to replace
(`/dev/null`: a rename over it, as root in CI, turns it into a regular file), a socket cannot be
read. Every path a user names goes through here, once:

* `refusal(path, ...)`: why the path must not be read or written (None when it may);
* `read_bytes` / `read_text`: a regular file's contents, checked before it is opened and again on
  the open descriptor (O_NONBLOCK: opening a FIFO never waits), up to a size cap;
* `write_text`: a new file written beside the target and renamed over it, refusing to replace
  anything but a regular file;
* `probe_folder`: that a folder takes such a file, checked before the work whose reports go there.

A refusal is a `FileRefused` (a ValueError): one line naming the path and what it is.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

MiB = 1 << 20
TEXT_LIMIT = 64 * MiB            # a TOML or JSON the user wrote (sweep, baseline, port, profile, chain)
RESULTS_LIMIT = 4096 * MiB       # a results.json (a nightly sweep: ~100 MB)


class FileRefused(ValueError):
    """A path that is not a regular file (or folder) where one is needed, said in one line."""


def kind_of_mode(mode: int) -> str:
    return ("a regular file" if stat.S_ISREG(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a special file")


def kind(path: str | os.PathLike) -> str:
    """What is at `path` (symbolic links followed): "a regular file", "a folder", "a FIFO", "a socket",
    "a character device", "a block device", "a dangling symbolic link", or "nothing"."""
    try:
        return kind_of_mode(os.stat(path).st_mode)
    except (OSError, ValueError):
        try:
            return "a dangling symbolic link" if os.path.islink(path) else "nothing"
        except (OSError, ValueError):
            return "nothing"


def special_file(path: str | os.PathLike) -> str | None:
    """Why `path` must never be opened (a FIFO, a device, a socket), as one line; None for a regular
    file, a folder or nothing there."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return f"{path} is {kind_of_mode(mode)}, not a regular file: refused (not opened)"


def refusal(path: str | os.PathLike, what: str = "", *, folder: bool = False, file: bool = True,
            write: bool = False) -> str | None:
    """Why `path` cannot be read (write=True: replaced) as the command means it, or None when it can:
    a regular file (file=True) or a folder (folder=True); nothing there is left to the reader (or
    writer) to say. `what` names the option or the kind of file in the message ("--baseline")."""
    k = kind(path)
    if k in ("nothing",) or (k == "a regular file" and file) or (k == "a folder" and folder):
        return None
    if k == "a dangling symbolic link":
        return None if write else f"{_named(what, path)} is a dangling symbolic link (its target does not exist)"
    want = "a regular file" if write else " or ".join(w for w, on in (("a regular file", file), ("a folder", folder))
                                                      if on)
    done = "not replaced" if write else "not opened"
    return f"{_named(what, path)} is {k}, not {want}: refused ({done})"


def _named(what: str, path) -> str:
    return f"{what} {path}" if what else str(path)


def check(path: str | os.PathLike, what: str = "", **kw) -> None:
    """FileRefused when `refusal` has a reason."""
    why = refusal(path, what, **kw)
    if why:
        raise FileRefused(why)


def read_bytes(path: str | os.PathLike, what: str = "", limit: int = TEXT_LIMIT) -> bytes:
    """A regular file's bytes, at most `limit` of them: FileRefused for anything else (a FIFO is
    never waited on, a device never read) or a file over the cap; OSError as open/read raise it."""
    check(path, what)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):          # swapped in between the check and the open
            raise FileRefused(f"{_named(what, path)} is {kind_of_mode(st.st_mode)}, not a regular file: "
                              "refused (not read)")
        if st.st_size > limit:
            raise FileRefused(f"{_named(what, path)} is {st.st_size:,} bytes, over parity's limit of "
                              f"{limit:,} for it: refused (not read)")
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(MiB, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise FileRefused(f"{_named(what, path)} grew over parity's limit of {limit:,} bytes: refused")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, what: str = "", limit: int = TEXT_LIMIT) -> str:
    """`read_bytes` decoded as UTF-8 (UnicodeDecodeError as bytes.decode raises it)."""
    return read_bytes(path, what, limit).decode("utf-8")


def write_text(path: str | os.PathLike, text: str, what: str = "") -> None:
    """Write `text` to a new file beside `path` and rename it over `path`: FileRefused when `path` is
    something other than a regular file (a device, a FIFO, a socket, a folder), never replaced;
    OSError as the write raises it, with no temporary file left behind."""
    path = Path(path)
    check(path, what, write=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        check(path, what, write=True)               # (made special while we wrote)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def open_append(path: str | os.PathLike, what: str = "", truncate: bool = False):
    """`path` opened to append text (truncate: emptied first), made if absent: FileRefused where it is
    anything but a regular file, a symbolic link included (appending through a link in a run folder
    someone else made would write wherever it points)."""
    path = Path(path)
    if os.path.islink(path):
        raise FileRefused(f"{_named(what, path)} is a symbolic link: refused (not written through)")
    check(path, what, write=True)
    flags = (os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND) | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:                # (a link put there since the check)
            raise FileRefused(f"{_named(what, path)} is a symbolic link: refused (not written through)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):    # (a FIFO put there since the check: O_NONBLOCK kept it from blocking)
        os.close(fd)
        raise FileRefused(f"{_named(what, path)} is not a regular file: refused (not written)")
    return os.fdopen(fd, "a" if not truncate else "w", encoding="utf-8")


def probe_folder(folder: str | os.PathLike) -> None:
    """OSError unless `folder` takes a new file the way `write_text` makes one: a file of our own
    created, then renamed. Its permissions, an immutable (chattr +i) or append-only (+a: create but
    never rename) flag or a read-only mount then stop a command up front, not after its work. The
    probe is removed; only an append-only folder keeps it (its name says what it was)."""
    fd, tmp = _new_file(Path(folder) / "parity-probe")
    os.close(fd)
    done = tmp.removesuffix(".tmp")               # (a random name: nobody's file)
    try:
        os.rename(tmp, done)
    except BaseException:
        _remove(tmp)
        raise
    os.unlink(done)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _new_file(path: Path) -> tuple[int, str]:
    """A file of our own beside `path` (O_EXCL: never a node someone put there), mode 0666 less the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot make a temporary file beside {path}")
