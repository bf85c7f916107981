"""Which kernels of the catalog a suite defines, which it misses, and which it adds.

Signatures are compared by ABI class (an 8-byte integer, a 4-byte integer, a pointer, ...):
`unsigned long long` where the catalog says `size_t` is the same argument and is reported as
a note, not a mismatch; a missing parameter, or a `float` where an `f16` goes, is a mismatch.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from parity.ops import expected_kernels
from parity.suite.scan import Suite

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
        expected = expected_kernels()
    extras = [n for n in suite.kernels if n not in expected]
    got = closest(name, extras) or closest(name, suite.kernels)
    return got[0] if got else ""


def summary(rows: list[CoverageRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    return out


UPSTREAM_LOCK = "candle-upstream.json"     # in parity/data: Candle's kernels when the catalog last caught up


def upstream_snapshot(suite: Suite, source: str) -> dict:
    """What an upstream CUDA suite defines, kernel by kernel (file relative to its folder, line,
    normalised parameter list): the record `drift` compares a later upstream against."""
    root = suite.root.resolve()

    def rel(f) -> str:
        f = f.resolve()
        return str(f.relative_to(root)) if f.is_relative_to(root) else str(f)
    return {"source": source, "kernels": {n: {"file": rel(k.file), "line": k.line, "params": k.params}
                                          for n, k in sorted(suite.kernels.items()) if k.file is not None}}


def snapshot_text(snap: dict) -> str:
    """The snapshot as JSON with one kernel a line (a reviewable diff when upstream moves)."""
    lines = [f"  {json.dumps(n)}: {json.dumps(k, separators=(', ', ': '))}" for n, k in snap["kernels"].items()]
    return ('{"source": ' + json.dumps(snap["source"]) + ', "kernels": {\n' + ",\n".join(lines) + "\n}}\n")


def drift(suite: Suite, expected: dict | None = None, lock: dict | None = None) -> list[CoverageRow]:
    """Keeping up with Candle (#31): what changed upstream since the catalog last caught up, one row
    per kernel with its file and line —
    `new upstream` (defined, but no catalog op expects it: the closest catalog kernel and family),
    `gone upstream` (in the snapshot `lock`, defined no more: where it was),
    `parameters changed` (its parameter list is not the snapshot's, or not the catalog's ABI)."""
    if expected is None:
        expected = expected_kernels()
    abi = {k: v for k, v in expected.items() if not v[0].spec.library}
    defined = suite.kernels
    rows = []
    for name in sorted(set(defined) - set(abi)):
        near = closest(name, sorted(abi), cutoff=0.6)
        note = f"closest: {near[0]} ({abi[near[0]][0].family})" if near else ""
        rows.append(CoverageRow(name, "", "", "new upstream", note, defined[name].where()))
    known = (lock or {}).get("kernels", {})
    for name in sorted(set(known) - set(defined)):
        was = known[name]
        op = abi[name][0].name if name in abi else ""
        rows.append(CoverageRow(name, op, "", "gone upstream", f"was ({', '.join(was.get('params') or [])})",
                                f"{was['file']}:{was['line']} (snapshot)"))
    for name in sorted(set(defined) & (set(known) | set(abi))):
        params = defined[name].params
        if params is None:
            continue
        notes = []
        was = known.get(name, {}).get("params")
        if name in known and was != params:
            notes.append(f"was ({', '.join(was or [])}), now ({', '.join(params)})")
        if name in abi:
            op, key = abi[name]
            ok, note = compare_signature(op.signature(key), params)
            if not ok:
                notes.append(f"catalog's {op.name}: {note}")
        if notes:
            rows.append(CoverageRow(name, abi[name][0].name if name in abi else "", "", "parameters changed",
                                    "; ".join(notes), defined[name].where()))
    return rows
