"""Which kernels of the catalog a suite defines, which it misses, and which it adds.

Signatures are compared by ABI class (an 8-byte integer, a 4-byte integer, a pointer, ...):
`unsigned long long` where the catalog says `size_t` is the same argument and is reported as
a note, not a mismatch; a missing parameter, or a `float` where an `f16` goes, is a mismatch.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from .suite import Suite

# normalised type -> (kind, bytes): what decides how an argument is passed
_ABI = {
    "size_t": ("int", 8), "u64": ("int", 8), "i64": ("int", 8),
    "u32": ("int", 4), "i32": ("int", 4), "u16": ("int", 2), "i16": ("int", 2),
    "u8": ("int", 1), "i8": ("int", 1), "bool": ("int", 1),
    "f32": ("f32", 4), "f64": ("f64", 8), "f16": ("f16", 2), "bf16": ("bf16", 2),
    "f8_e4m3": ("f8_e4m3", 1), "f8_e4m3fnuz": ("f8_e4m3fnuz", 1), "ptr": ("ptr", 8),
}


def abi_class(t: str) -> tuple[str, int] | str:
    return _ABI.get(t, t)


@dataclass
class CoverageRow:
    kernel: str
    op: str                 # catalog op name ("" for extra symbols)
    dtype: str              # dtype key ("" for extra symbols)
    status: str             # "present" | "missing" | "extra" | "signature-mismatch"
    suggestion: str = ""    # closest present name (missing), closest expected name (extra), or a note
    where: str = ""         # file:line in the suite

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def closest(name: str, candidates, n: int = 1, cutoff: float = 0.75) -> list[str]:
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=cutoff)


def compare_signature(expected: list[str], got: list[str] | None) -> tuple[bool, str]:
    """(ABI-compatible, note). Unknown parameter lists (binary-only kernels) are compatible."""
    if got is None:
        return True, "parameters unknown (kernel seen only in the binary)"
    if len(expected) != len(got):
        return False, f"expected {len(expected)} parameters ({', '.join(expected)}), suite has {len(got)} ({', '.join(got)})"
    bad = [f"#{i}: expected {e}, suite has {g}" for i, (e, g) in enumerate(zip(expected, got))
           if abi_class(e) != abi_class(g)]
    if bad:
        return False, "; ".join(bad)
    soft = [f"#{i}: {g} for {e} (ABI-identical)" for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    return True, "; ".join(soft)


def coverage(suite: Suite, expected: dict | None = None) -> list[CoverageRow]:
    """One row per expected kernel (present / missing / signature-mismatch) and per extra one."""
    if expected is None:
        from .ops import expected_kernels
        expected = expected_kernels()
    expected = {k: v for k, v in expected.items()      # host routines (BLAS, im2col+GEMM) are no kernels
                if not v[0].spec.library}
    present = suite.kernels
    rows: list[CoverageRow] = []
    for name in sorted(expected):
        op, key = expected[name]
        if name in present:
            k = present[name]
            ok, note = compare_signature(op.signature(key), k.params)
            rows.append(CoverageRow(name, op.name, key, "present" if ok else "signature-mismatch", note,
                                    k.where()))
        else:
            extras = [n for n in present if n not in expected]
            sugg = closest(name, extras) or closest(name, present)
            rows.append(CoverageRow(name, op.name, key, "missing", sugg[0] if sugg else ""))
    for name in sorted(set(present) - set(expected)):
        sugg = closest(name, [n for n in expected if n not in present]) or closest(name, expected)
        rows.append(CoverageRow(name, "", "", "extra", sugg[0] if sugg else "", present[name].where()))
    return rows


def suggestion_for(name: str, suite: Suite, expected: dict | None = None) -> str:
    """The closest defined kernel name for a launch the suite cannot serve ("" if none)."""
    if expected is None:
        from .ops import expected_kernels
        expected = expected_kernels()
    extras = [n for n in suite.kernels if n not in expected]
    got = closest(name, extras) or closest(name, suite.kernels)
    return got[0] if got else ""


def summary(rows: list[CoverageRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def drift(suite: Suite, expected: dict | None = None) -> list[CoverageRow]:
    """Keeping up with Candle (#31): each kernel a CUDA suite defines that no catalog op expects, with
    its file and the closest catalog kernel and family: the to-do list of a catalog behind upstream."""
    if expected is None:
        from .ops import expected_kernels
        expected = expected_kernels()
    abi = {k: v for k, v in expected.items() if not v[0].spec.library}
    rows = []
    for name in sorted(set(suite.kernels) - set(abi)):
        near = closest(name, sorted(abi), cutoff=0.6)
        note = f"{near[0]} ({abi[near[0]][0].family})" if near else ""
        rows.append(CoverageRow(name, "", "", "new upstream", note, suite.kernels[name].where()))
    return rows
