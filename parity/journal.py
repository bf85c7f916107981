"""Resumable runs: every finished case is appended to `results.partial.jsonl` in the run folder.

An interrupted run (Ctrl-C, a killed CI job, a machine that went away) keeps what it finished;
`parity run ... --resume FOLDER` reloads those rows (and `results.json`, when the run got that
far), skips the (case ID, level) pairs already there and appends the rest to the same folder.
Rows are flushed to disk at least every 0.2 s (and on close, Ctrl-C included); a process killed
outright loses at most that much. A truncated last line (died mid-write) is ignored.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from .results import Results, _from_json, row_json

NAME = "results.partial.jsonl"


def load(folder: str | Path) -> list[dict]:
    """Rows already finished in `folder`: results.json (if any), then the journal; last one wins."""
    folder = Path(folder)
    rows: dict[tuple[str, str], dict] = {}
    if (folder / "results.json").exists():
        for r in Results.from_json(folder / "results.json").table.to_dict(orient="records"):
            rows[(r["case_id"], r["level"])] = r
    path = folder / NAME
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue                       # a line cut short by the interruption
            if isinstance(r, dict) and "case_id" in r:
                rows[(r["case_id"], r.get("level"))] = _from_json(r)
    return list(rows.values())


class Journal:
    """Append-only row log of one run folder; `rows` holds the resumed rows plus the new ones."""

    def __init__(self, folder: str | Path, resume: bool = False):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / NAME
        self.rows: list[dict] = load(self.folder) if resume else []
        self.resumed = len(self.rows)
        self.done = {(r["case_id"], r.get("level")) for r in self.rows}
        self._f = open(self.path, "a", encoding="utf-8")
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
        """Close; a finished run's journal is removed (results.json holds every row then)."""
        self._f.close()
        if finished:
            self.path.unlink(missing_ok=True)


def resume_command(ctx, folder: str | Path) -> str:
    """The `parity run` command line that resumes this run: the same options plus --resume."""
    import shlex
    words = ["parity", ctx.info_name or "run"]
    for p in ctx.command.params:
        if p.name in ("resume",) or not getattr(p, "opts", None):
            continue
        v = ctx.params.get(p.name)
        if v is None or v == p.default or (p.is_flag and not v):
            continue
        words += [p.opts[-1]] if p.is_flag else [p.opts[-1] if p.opts[-1].startswith("--") else p.opts[0], str(v)]
    return shlex.join(words + ["--resume", str(folder)])
