"""The catalog against a newer Candle (issue #31): every kernel Candle's candle-kernels/src defines
that no catalog op expects, with its file and the closest catalog kernel, as a to-do list.

    python3 -m parity.ops.drift <candle-kernels/src>    # exit 1 and one line per new kernel; 0 when none
"""
from __future__ import annotations

import difflib
import sys
from pathlib import Path


def drift(cuda_src) -> list[tuple[str, str, str]]:
    """(kernel, file, closest catalog kernel) for each kernel of `cuda_src` the catalog lacks."""
    from ..suite import discover
    from . import CATALOG, expected_kernels
    expected = {k for k, (op, _) in expected_kernels().items() if not op.spec.library}
    suite = discover(cuda_src)
    out = []
    for name in sorted(set(suite.kernels) - expected):
        k = suite.kernels[name]
        near = difflib.get_close_matches(name, sorted(expected), n=1, cutoff=0.6)
        fam = ""
        if near:
            fam = f"{near[0]} ({CATALOG[expected_kernels()[near[0]][0].name].family})"
        out.append((name, Path(k.file).name if k.file else "?", fam))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m parity.ops.drift <candle-kernels/src>", file=sys.stderr)
        return 2
    rows = drift(argv[0])
    for name, file, near in rows:
        print(f"{name}\t{file}\tclosest: {near or '-'}")
    print(f"{len(rows)} kernel(s) of {argv[0]} not in the catalog", file=sys.stderr)
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
