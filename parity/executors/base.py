"""The contract every executor keeps, whatever platform it drives."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ops.base import Launch

@dataclass
class ExecResult:
    status: str                                   # "ok", or a verdict the executor decides itself: missing,
                                                  # compile-error, mapping-gap, signature-mismatch, crash,
                                                  # timeout, oob-write, input-clobbered, unavailable, refused
    outputs: dict[str, np.ndarray] = field(default_factory=dict)   # output base buffers after the launch
    message: str = ""                             # compiler message, fault text, suggestion, ...
    time_ms: float | None = None
    detail: dict = field(default_factory=dict)    # host-routine facts for the result row (conv route, ...)


@dataclass
class Availability:
    available: bool
    reason: str = ""                              # why not, and what would fix it
    device: str = ""                              # GPU name / toolkit, for the results


class Executor:
    """A level that executes launches: `cpu`, `hip-on-nvidia`, `amd`, `cuda`."""
    level: str = "?"

    def availability(self) -> Availability:
        raise NotImplementedError

    def run(self, launch: Launch) -> ExecResult:
        raise NotImplementedError

    def warm(self) -> None:
        """Pay start-up costs (device context) now: a worker process calls this before it says
        ready, so its warm spare takes over after a fault without them."""

    def close(self) -> None:
        """Release worker processes and devices."""
