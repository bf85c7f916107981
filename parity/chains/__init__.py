"""Op chains (issue #19): sequences of catalog ops with named intermediate tensors and the views
Candle takes between them, run on a level as one request and judged against a float64
reference, with the first drifting step named. `format` reads the TOML, `steps` packs each step
with its op's own launch, `spec` makes a chain a case (`chain.<name>/<dtype>/s<seed>`)."""
from __future__ import annotations

import fnmatch
from functools import lru_cache
from pathlib import Path

from parity.chains import format as _format
from parity.chains.check import check_chain
from parity.chains.format import Chain, ChainError
from parity.chains.spec import LAYOUT, chain_op
from parity.core import resources
from parity.ops.base import CHAIN_PREFIX, Op

__all__ = ["CHAIN_PREFIX", "LAYOUT", "Chain", "ChainError", "chains", "load_chain", "select", "is_chain"]


def load_chain(path: Path) -> Chain:
    """A chain file, read, checked against the format and built for each of its dtypes without data
    (check.check_chain); ChainError with one line naming the file, the chain, the step and the key."""
    chain = _format.load_chain(path)
    try:
        return check_chain(chain)
    except ChainError as e:
        raise ChainError(f"{path}: chain {chain.name}: {e}") from None


@lru_cache(maxsize=None)
def chains() -> dict[str, Op]:
    """The bundled chains as ops, by op name (`chain.attention`)."""
    out = {}
    for path in sorted(Path(resources.chain_dir()).glob("*.toml")):
        op = chain_op(load_chain(path))
        out[op.name] = op
    return out


def is_chain(name: str) -> bool:
    return name.startswith(CHAIN_PREFIX)


def select(patterns: list[str]) -> list[Op]:
    """Chain ops matching any glob pattern (`chain.*`); patterns that match no chain are ignored
    (the catalog answers for them)."""
    return [op for name, op in chains().items() if any(fnmatch.fnmatchcase(name, p) for p in patterns)]
