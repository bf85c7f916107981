"""Resumable runs: every finished case is appended to `results.partial.jsonl` in the run folder.

An interrupted run (Ctrl-C, a killed CI job, a machine that went away) keeps what it finished;
`parity run ... --resume FOLDER` reloads those rows (and `results.json`, when the run got that
far), skips the (case ID, level) pairs already there and appends the rest to the same folder.
Rows are flushed to disk at least every 0.2 s (and on close, Ctrl-C included); a process killed
outright loses at most that much. A line that is not a row of this run (cut short mid-write,
not UTF-8, not a row, a case the run does not have) is skipped and reported, never a row.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from parity.core import files
from parity.run.results import JOURNAL, Results, _from_json, row_json
from parity.run.schema import row_problem

NAME = JOURNAL
LOCK = "run.lock"           # held (fcntl.flock) by the one parity run writing the folder


class FolderBusy(OSError):
    """Another parity run holds the run folder's lock: one line saying so."""


class Loaded(list):
    """The rows `load` found (a list of row dicts) and `skipped`: one line per thing it did not
    take — a bad journal line, an unreadable results.json, rows of cases outside the run."""

    def __init__(self, rows=(), skipped: list[str] | None = None):
        super().__init__(rows)
        self.skipped: list[str] = skipped or []


def load(folder: str | Path, cases: set[str] | None = None, levels: set[str] | None = None) -> Loaded:
    """Rows already finished in `folder`: results.json (if any), then the journal; last one wins.

    Nothing read becomes a row unless it is one (`results.row_problem`): bad lines are skipped and
    reported in `.skipped`. With `cases` (the run's case IDs) / `levels` (its level names), rows of
    other cases or levels are dropped and counted too: a resumed run reports only what it ran.
    """
    folder = Path(folder)
    rows: dict[tuple[str, str], dict] = {}
    skipped: list[str] = []
    for name in ("results.json", NAME):          # never opened when not a file (a FIFO blocks the reader)
        why = files.refusal(folder / name, write=True)   # (files the run writes: never a folder or a FIFO)
        if why:
            raise ValueError(why)
    if (folder / "results.json").exists():
        try:
            res = Results.from_json(folder / "results.json")
            for r in res.records():
                rows[(r["case_id"], r["level"])] = dict(r)
            skipped += [f"{n} — those rows are run again" for n in res.notes]
        except ValueError as e:
            skipped.append(f"{e} — its rows are run again")
    path = folder / NAME
    if files.kind(path) != "nothing":
        try:
            data = files.read_bytes(path, "journal", files.RESULTS_LIMIT)
        except (OSError, ValueError) as e:
            data = b""
            skipped.append(f"cannot read {path}: {getattr(e, 'strerror', None) or e}")
        lines = data.split(b"\n")
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            r, why = _parse(raw)
            if why:
                cut = n == len(lines) and not data.endswith(b"\n")
                skipped.append(f"{path.name} line {n}: " + ("cut short (the run was interrupted mid-write)"
                                                           if cut and why.startswith("not JSON") else why))
                continue
            rows[(r["case_id"], r["level"])] = r
    out, stray = [], []
    for r in rows.values():
        ours = (cases is None or r["case_id"] in cases) and (levels is None or r["level"] in levels)
        (out if ours else stray).append(r)
    if stray:
        skipped.append(f"{len(stray)} row(s) of cases or levels outside this run dropped "
                       f"(e.g. {stray[0]['case_id']} @{stray[0]['level']})")
    return Loaded(out, skipped)


def _parse(raw: bytes) -> tuple[dict | None, str | None]:
    """One journal line as a row, or why it is not one."""
    try:
        r = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return None, f"byte 0x{raw[e.start]:02x} is not UTF-8"
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e.msg})"
    except RecursionError:
        return None, "not a row (nested too deeply)"
    why = row_problem(r)
    return (None, why) if why else (_from_json(r), None)


class Journal:
    """Append-only row log of one run folder; `rows` holds the resumed rows plus the new ones,
    `skipped` the one-line reasons for what resuming did not take (print them)."""

    def __init__(self, folder: str | Path, resume: bool = False, cases: set[str] | None = None,
                 levels: set[str] | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / NAME
        self._lock = lock_folder(self.folder)
        try:
            loaded = load(self.folder, cases, levels) if resume else Loaded()
        except BaseException:
            os.close(self._lock)
            raise
        self.rows: list[dict] = list(loaded)
        self.skipped: list[str] = loaded.skipped
        self.resumed = len(self.rows)
        self.done = {(r["case_id"], r.get("level")) for r in self.rows}
        try:
            self._f = files.open_append(self.path, "journal")   # (never through a link, never a FIFO's open)
        except BaseException:
            os.close(self._lock)
            raise
        self._flushed = time.monotonic()

    def todo(self, cases: list, level: str) -> list:
        """The cases of `level` not finished yet."""
        return [c for c in cases if (c.id, level) not in self.done]

    def append(self, row: dict) -> None:
        self._f.write(row_json(row) + "\n")
        if time.monotonic() - self._flushed > 0.2:   # at most 0.2 s of rows lost if the process is killed
            self._f.flush()
            self._flushed = time.monotonic()
        self.rows.append(row)
        self.done.add((row["case_id"], row.get("level")))

    def close(self, finished: bool) -> None:
        """Close (the folder's lock released); a finished run's journal is removed (results.json holds
        every row then)."""
        self._f.close()
        if finished:
            self.path.unlink(missing_ok=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def lock_folder(folder: Path) -> int:
    """Take the run folder's exclusive lock (its run.lock, fcntl.flock) and return its descriptor; FolderBusy
    when another parity run holds it (two `--resume` of one folder would both run everything, and
    write the same files). Released by closing the descriptor, or when the process ends."""
    path = Path(folder) / LOCK
    why = files.refusal(path, write=True)
    if why:
        raise FolderBusy(why)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
        os.close(fd)
        raise FolderBusy(f"run folder {folder} is in use by another parity run"
                         + (f" (pid {holder})" if holder.isdigit() else "")
                         + ": wait for it to finish, or resume it afterwards") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd
