"""The op catalog: every op of Candle's kernel ABI that parity knows, one module per family."""
from __future__ import annotations

import fnmatch

from parity.core.suggest import unknown
from parity.ops import (affine, binary, cast, conv, conv_host, fill, indexing, matmul, nn, pool, quantized, reduce,
                        reduce_sum, sort, ternary, unary)
from parity.ops.base import Op

# in this order: the order of `parity list`, of a sweep's cases and of every report
FAMILIES = (unary, binary, affine, cast, ternary, fill, reduce, reduce_sum, nn, indexing, sort, matmul, pool, conv,
            conv_host, quantized)
CATALOG: dict[str, Op] = {op.name: op for mod in FAMILIES for op in mod.OPS}


def select(patterns: list[str] | None = None) -> list[Op]:
    """Ops matching any glob pattern (`unary.*`, `cast`); KeyError when a pattern matches none."""
    if not patterns:
        return list(CATALOG.values())
    chosen: dict[str, Op] = {}
    for pat in patterns:
        hits = [op for name, op in CATALOG.items() if fnmatch.fnmatchcase(name, pat)
                or fnmatch.fnmatchcase(op.family, pat)]
        if not hits:
            names = [*CATALOG, *dict.fromkeys(op.family for op in CATALOG.values())]
            raise KeyError(unknown("op", pat, names, "see `parity list`"))
        chosen.update((op.name, op) for op in hits)
    return list(chosen.values())


def expected_kernels() -> dict[str, tuple[Op, str]]:
    """Every kernel name the catalog expects a suite to define -> (op, dtype key)."""
    return {op.kernel_name(key): (op, key) for op in CATALOG.values() for key in op.dtypes}
