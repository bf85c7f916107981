"""Candle's kernel ABI as a profile: the catalog of parity/ops exactly as it is (no result changes).

Its op names carry no prefix (`unary.exp`), its sweeps are the files of `cases/`, its reference the
CUDA kernels' semantics (docs/candle-kernel-abi.md)."""
from __future__ import annotations

from parity.ops import CATALOG
from parity.profiles.base import Profile

PROFILE = Profile(
    name="candle",
    title="Hugging Face Candle's kernel ABI (candle-kernels: numel, num_dims, info, ...; docs/candle-kernel-abi.md)",
    ops=CATALOG,
)
