"""`--shard K/N`: which cases of a sweep one CI job runs (join the shards with `parity merge`).

A case's shard is a hash of its ID, so every job computes the same split on its own."""
from __future__ import annotations

import zlib
from typing import Protocol, TypeVar


class _HasId(Protocol):
    id: str


C = TypeVar("C", bound=_HasId)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'2/4' -> (2, 4); None for no text; ValueError for anything else."""
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


def apply_shard(cases: list[C], shard: tuple[int, int] | None) -> list[C]:
    """The cases of shard (K, N), in their order; all of them for None."""
    if shard is None:
        return cases
    k, n = shard
    return [c for c in cases if shard_index(c.id, n) == k - 1]
