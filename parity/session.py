"""Run-wide options that reach the engine without threading them through every call:
timing (`--time`), GPU workers (`--gpus`) and sharding (`--shard K/N`).

`parity run` (cli.py) parses them and runs inside `using(...)`.
"""
from __future__ import annotations

import contextlib
import zlib
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Session:
    timing: object | None = None          # parity.timing.TimingOptions, or None: no timing
    gpus: str | None = None               # None / "1": one worker; "all" or N: one worker per GPU
    shard: tuple[int, int] | None = None  # (K, N), 1-based: only the cases of shard K of N


_current = Session()


def current() -> Session:
    return _current


@contextlib.contextmanager
def using(**kw):
    global _current
    old = _current
    _current = replace(old, **kw)
    try:
        yield _current
    finally:
        _current = old


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'2/4' -> (2, 4); ValueError for anything else."""
    if not text:
        return None
    try:
        k, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 1/4") from None
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: need 1 <= K <= N")
    return k, n


def shard_index(case_id: str, n: int) -> int:
    """0-based shard of a case ID: CRC-32 of the ID mod n (stable across runs and machines)."""
    return zlib.crc32(case_id.encode()) % n


def apply_shard(cases: list, shard: tuple[int, int] | None = None) -> list:
    shard = shard if shard is not None else _current.shard
    if shard is None:
        return cases
    k, n = shard
    return [c for c in cases if shard_index(c.id, n) == k - 1]
