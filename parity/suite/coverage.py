"""Which kernels of the catalog a suite defines, which it misses, and which it adds.

Signatures are compared by ABI class (an 8-byte integer, a 4-byte integer, a pointer, ...):
`unsigned long long` where the catalog says `size_t` is the same argument and is reported as
a note, not a mismatch; a missing parameter, or a `float` where an `f16` goes, is a mismatch.
Where the profile knows what a pointer points to (Candle's record of upstream, a declared kernel's
element types), a pointee of another width is a mismatch too (`const uint32_t *info` where the host
passes size_t: every index reads other bytes); the same width spelled otherwise is a note, and a
`void*`, a struct or const-ness is no difference.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from parity.ops import expected_kernels
from parity.profiles.candle import PROFILE as CANDLE
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
    """How an argument of normalised type t is passed: ("int", 8), ("f32", 4), ("ptr", 8) for any
    pointer (`ptr`, `const size_t*`), else t itself."""
    return ("ptr", 8) if t.endswith("*") else _ABI.get(t, t)


def pointee(t: str) -> str:
    """What a typed pointer points to, without const: `const size_t*` -> `size_t`, `f32**` -> `f32*`."""
    t = t[:-1]
    return t[len("const "):] if t.startswith("const ") else t


def compare_pointees(expected: list[str], got: list[str]) -> tuple[list[str], list[str]]:
    """(mismatches, notes) of the pointer parameters by what they point to: another element width is a
    mismatch; the same width spelled otherwise a note; `ptr` (unknown), void, a struct and const-ness
    are no difference."""
    bad, soft = [], []
    for i, (e, g) in enumerate(zip(expected, got)):
        if not (e.endswith("*") and g.endswith("*")):
            continue
        if e.count("*") != g.count("*"):         # `const float* const*` for a float*: pointers, not elements
            bad.append(f"#{i}: expected {e}, suite has {g} ({g.count('*')} levels of pointer, not {e.count('*')})")
            continue
        pe, pg = pointee(e), pointee(g)
        ce, cg = _ABI.get(pe), _ABI.get(pg)
        if pe == pg or ce is None or cg is None:
            continue
        if ce[1] != cg[1]:
            bad.append(f"#{i}: expected {e}, suite has {g} ({ce[1]}-byte elements, not {cg[1]})")
        else:
            soft.append(f"#{i}: {pg}* for {pe}* (same element width)")
    return bad, soft


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


def compare_signature(expected: list[str], got: list[str] | None, expected_types: list[str] | None = None,
                      got_types: list[str] | None = None) -> tuple[bool, str]:
    """(ABI-compatible, note). Unknown parameter lists (binary-only kernels) are compatible. With both
    typed lists (pointers with their pointees), pointees are compared as well (compare_pointees)."""
    if got is None:
        return True, "parameters unknown (kernel seen only in the binary)"
    if len(expected) != len(got):
        return False, f"expected {len(expected)} parameters ({', '.join(expected)}), suite has {len(got)} ({', '.join(got)})"
    bad = [f"#{i}: expected {e}, suite has {g}" for i, (e, g) in enumerate(zip(expected, got))
           if abi_class(e) != abi_class(g)]
    if bad:
        return False, "; ".join(bad)
    soft = [f"#{i}: {g} for {e} (ABI-identical)" for i, (e, g) in enumerate(zip(expected, got))
            if e != g and not (abi_class(e) == abi_class(g) == ("ptr", 8))]
    if expected_types and got_types and len(expected_types) == len(got_types) == len(expected) and \
            all(abi_class(t) == abi_class(e) for t, e in zip(expected_types, expected)):
        bad, more = compare_pointees(expected_types, got_types)
        if bad:
            return False, "; ".join(bad)
        soft += more
    return True, "; ".join(soft)


def coverage(suite: Suite, expected: dict | None = None, typed: dict[str, list[str]] | None = None) -> list[CoverageRow]:
    """One row per expected kernel (present / missing / signature-mismatch) and per extra one.
    typed: kernel -> its parameter types with pointees (Profile.typed_signatures; without `expected`:
    Candle's), so a pointer to elements of another width is a mismatch too."""
    if expected is None:
        expected, typed = expected_kernels(), CANDLE.typed_signatures() if typed is None else typed
    typed = typed or {}
    expected = {k: v for k, v in expected.items()      # host routines (BLAS, im2col+GEMM) are no kernels
                if not v[0].spec.library}
    present = suite.kernels
    rows: list[CoverageRow] = []
    for name in sorted(expected):
        op, key = expected[name]
        if name in present:
            k = present[name]
            ok, note = compare_signature(op.signature(key), k.params, typed.get(name), k.types)
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
    extras = [n for n in suite.kernels if n not in expected and n != name]
    got = closest(name, extras) or closest(name, [n for n in suite.kernels if n != name])
    return got[0] if got else ""


def summary(rows: list[CoverageRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def upstream_snapshot(suite: Suite, source: str) -> dict:
    """What an upstream CUDA suite defines, kernel by kernel (file relative to its folder, line,
    parameter list with each pointer's pointee and its const: `const size_t*`): the record `drift`
    compares a later upstream against."""
    root = suite.root.resolve()

    def rel(f) -> str:
        f = f.resolve()
        return str(f.relative_to(root)) if f.is_relative_to(root) else str(f)
    return {"source": source, "kernels": {n: {"file": rel(k.file), "line": k.line, "params": k.types or k.params}
                                          for n, k in sorted(suite.kernels.items()) if k.file is not None}}


def snapshot_text(snap: dict) -> str:
    """The snapshot as JSON with one kernel a line (a reviewable diff when upstream moves)."""
    lines = [f"  {json.dumps(n)}: {json.dumps(k, separators=(', ', ': '))}" for n, k in snap["kernels"].items()]
    return ('{"source": ' + json.dumps(snap["source"]) + ', "kernels": {\n' + ",\n".join(lines) + "\n}}\n")


def record_files(lock: dict) -> list[str]:
    """The source files a record's kernels were defined in (relative to the suite's folder)."""
    return sorted({k["file"] for k in lock.get("kernels", {}).values() if isinstance(k, dict) and k.get("file")})


def foreign_tree(folder, lock: dict) -> str:
    """Why `folder` is not the tree `lock` was taken from (fewer than half of the record's files are in
    it: another project, or a folder above or below candle-kernels/src), "" when it is."""
    files = record_files(lock)
    there = [f for f in files if (Path(folder) / f).is_file()]
    if not files or 2 * len(there) >= len(files):
        return ""
    shown = ", ".join(files[:4]) + (", …" if len(files) > 4 else "")
    return (f"{folder} is not the tree the record was taken from ({lock.get('source', 'the record')}): "
            + (f"none of its {len(files)} files" if not there else f"only {len(there)} of its {len(files)} files")
            + f" ({shown}) {'is' if not there else 'are'} there; give --cuda-src that tree (Candle's: candle-kernels/src)")


def same_params(was: list[str] | None, now: list[str]) -> bool:
    """A recorded parameter list against today's: equal, where a record written before pointees were
    kept (`ptr`) takes any pointer."""
    return was is not None and len(was) == len(now) and \
        all(w == n or (w == "ptr" and n.endswith("*")) for w, n in zip(was, now))


def drift(suite: Suite, expected: dict | None = None, lock: dict | None = None) -> list[CoverageRow]:
    """Keeping up with Candle (#31): what changed upstream since the catalog last caught up, one row
    per kernel with its file and line —
    `new upstream` (defined, but no catalog op expects it: the closest catalog kernel and family),
    `gone upstream` (in the snapshot `lock`, defined no more: where it was),
    `parameters changed` (its parameter list is not the snapshot's — a pointee or its const counts —,
    or not the catalog's ABI)."""
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
        k = defined[name]
        if k.params is None:
            continue
        notes = []
        now = k.types or k.params
        was = known.get(name, {}).get("params")
        if name in known and not same_params(was, now):
            notes.append(f"was ({', '.join(was or [])}), now ({', '.join(now)})")
        if name in abi:
            op, key = abi[name]
            ok, note = compare_signature(op.signature(key), k.params)
            if not ok:
                notes.append(f"catalog's {op.name}: {note}")
        if notes:
            rows.append(CoverageRow(name, abi[name][0].name if name in abi else "", "", "parameters changed",
                                    "; ".join(notes), k.where()))
    return rows
