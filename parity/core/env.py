"""Environment variables parity reads, read one way: a flag's "0", "false", "no", "off" and "" are
off (`PARITY_FORCE_RECOMPILE=0` forced recompiles), a folder's `~` is the home folder (a CI `env:`
block does not expand it, and `~/cache` made a folder named `~`)."""
from __future__ import annotations

import os
from pathlib import Path

OFF = ("", "0", "false", "no", "off")


def flag(name: str) -> bool:
    """Whether the variable is set to something other than an off value (case and spaces ignored)."""
    return os.environ.get(name, "").strip().lower() not in OFF


def folder(name: str) -> Path | None:
    """The folder the variable names (`~` expanded, relative to the current folder made absolute), or
    None when it is unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        return Path(value).expanduser().absolute()
    except OSError:                     # relative, and the current folder is gone: as unset
        return None
