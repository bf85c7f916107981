"""Candle's kernel ABI as a profile: the catalog of parity/ops exactly as it is (no result changes).

Its op names carry no prefix (`unary.exp`), its sweeps are the files of `cases/`, its reference the
CUDA kernels' semantics (docs/candle-kernel-abi.md)."""
from __future__ import annotations

import json
from functools import lru_cache

from parity.core.resources import data_dir
from parity.ops import CATALOG
from parity.profiles.base import Profile

UPSTREAM_RECORD = "candle-upstream.json"   # in parity/data: Candle's kernels when the catalog last caught up


@lru_cache(maxsize=1)
def _recorded() -> dict[str, list[str]]:
    """Kernel -> its parameter types with pointees, as Candle declared them when the catalog caught up
    (`coverage --drift --update-snapshot`); the catalog's ops say only `ptr`."""
    try:
        kernels = json.loads((data_dir() / UPSTREAM_RECORD).read_text())["kernels"]
    except (OSError, ValueError, KeyError):
        return {}
    return {name: list(k["params"]) for name, k in kernels.items() if isinstance(k.get("params"), list)}


def recorded_signature(kernel: str) -> list[str] | None:
    """One kernel's parameter types with pointees from Candle's upstream record (None: not recorded)."""
    return _recorded().get(kernel)


PROFILE = Profile(
    name="candle",
    title="Hugging Face Candle's kernel ABI (candle-kernels: numel, num_dims, info, ...; docs/candle-kernel-abi.md)",
    ops=CATALOG,
    typed=lambda: dict(_recorded()),
)
