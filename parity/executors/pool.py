"""`--gpus`: one executor per GPU behind the one executor a level has."""
from __future__ import annotations

from parity.executors.base import Availability, Executor


class GpuPool(Executor):
    """One isolated worker per GPU (not started: each moves to its own drive process, see
    parity.run.engine.run_cases, which deals every Gth case to each of the G members)."""

    def __init__(self, level: str, members: list[Executor]):
        self.level, self.members = level, members
        self.wave = members[0].wave if members else None

    def availability(self) -> Availability:
        return self.members[0].availability()

    def run(self, launch):
        return self.members[0].run(launch)

    def close(self) -> None:
        for m in self.members:
            m.close()
