"""Judge a kernel's output against the reference, vectorised, and find the worst element."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .dtypes import DType
from .layouts import SENTINEL
from .numerics import bits_of, ulp_order
from .tolerance import Tolerance


@dataclass
class Worst:
    index: int                              # flat index in row-major logical order
    coords: list[int]
    expected: str
    got: str
    expected_bits: str
    got_bits: str
    ulps: float | None                      # None for integers
    inputs: dict[str, str] = field(default_factory=dict)   # operand values at the same coordinates
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def one_line(self) -> str:
        ins = ", ".join(f"{k}={v}" for k, v in self.inputs.items())
        u = "" if self.ulps is None else (" (inf ulp)" if not np.isfinite(self.ulps) else f" ({self.ulps:g} ulp)")
        note = f" [{self.note}]" if self.note else ""
        return f"at {tuple(self.coords)}: {ins + ': ' if ins else ''}expected {self.expected} got {self.got}{u}{note}"


@dataclass
class Comparison:
    passed: bool
    n: int
    n_bad: int
    max_ulp: float | None
    worst: Worst | None


def _fmt(v, dt: DType) -> str:
    if dt.is_float:
        f = float(v)
        return repr(f) if np.isfinite(f) or np.isnan(f) else ("inf" if f > 0 else "-inf")
    return str(int(v))


def _sentinel_bits(dt: DType) -> int:
    return int.from_bytes(bytes([SENTINEL]) * (dt.bits // 8), "little")


def compare(expected: np.ndarray, got: np.ndarray, dt: DType, tol: Tolerance,
            inputs: dict[str, np.ndarray] | None = None,
            input_dtypes: dict[str, DType] | None = None) -> Comparison:
    """Compare element by element; `inputs` are the logical operands (same shape) for the report."""
    expected = np.asarray(expected, dtype=dt.np)
    got = np.asarray(got, dtype=dt.np)
    if expected.shape != got.shape:
        raise ValueError(f"shape mismatch: expected {expected.shape}, got {got.shape}")
    n = expected.size
    if n == 0:
        return Comparison(True, 0, 0, 0.0 if dt.is_float else None, None)
    eb, gb = bits_of(expected, dt).reshape(-1), bits_of(got, dt).reshape(-1)
    same_bits = eb == gb
    # identical bit patterns are always within tolerance (0 ulp): judge only the differing
    # elements (same verdict, max_ulp and worst element; large cases compare in a fraction)
    sub = np.flatnonzero(~same_bits)
    if sub.size == 0:
        return Comparison(True, n, 0, 0.0 if dt.is_float else None, None)
    exp_flat, got_flat = expected.reshape(-1)[sub], got.reshape(-1)[sub]
    eb, gb, same_bits = eb[sub], gb[sub], same_bits[sub]
    if dt.is_float:
        e64, g64 = exp_flat.astype(np.float64), got_flat.astype(np.float64)
        en, gn = np.isnan(e64), np.isnan(g64)
        ulps = np.abs(ulp_order(eb, dt) - ulp_order(gb, dt)).astype(np.float64)
        ulps[en & gn] = 0.0
        ulps[en != gn] = np.inf                                   # NaN positions must match
        e_inf, g_inf = np.isinf(e64), np.isinf(g64)
        ulps[(e_inf | g_inf) & (e64 != g64) & ~(en | gn)] = np.inf  # ±Inf exactly
        with np.errstate(invalid="ignore"):
            absdiff = np.where(en | gn, np.inf, np.abs(e64 - g64))
        if tol.exact:
            ok = same_bits | (en & gn & (not tol.nan_payload))
        else:
            ok = (ulps <= tol.ulp_for(dt.name)) | (absdiff <= tol.atol_for(dt.name))
            ok &= ~((e_inf | g_inf) & (e64 != g64) & ~(en & gn))
        if tol.signed_zero:
            ok &= ~((e64 == 0) & (g64 == 0) & (np.signbit(e64) != np.signbit(g64)))
        badness = np.where(ok, 0.0, np.maximum(ulps, 1.0))
        max_ulp = max(0.0, float(ulps.max()))
    else:
        ok = same_bits
        diff = np.abs(exp_flat.astype(np.float64) - got_flat.astype(np.float64))
        badness = np.where(ok, 0.0, np.maximum(diff, 1.0))
        max_ulp = None
    n_bad = int((~ok).sum())
    if n_bad == 0:
        return Comparison(True, n, 0, max_ulp, None)
    j = int(np.argmax(badness))
    i = int(sub[j])
    coords = [int(c) for c in np.unravel_index(i, expected.shape)] if expected.ndim else []
    shown = {}
    for name, arr in (inputs or {}).items():
        arr = np.asarray(arr)
        if arr.shape == expected.shape:
            idt = (input_dtypes or {}).get(name, dt)
            shown[name] = _fmt(arr.reshape(-1)[i], idt)
    note = "unwritten: still the 0xA5 sentinel" if int(gb[j]) == _sentinel_bits(dt) and not same_bits[j] else ""
    worst = Worst(index=i, coords=coords, expected=_fmt(expected.reshape(-1)[i], dt),
                  got=_fmt(got.reshape(-1)[i], dt), expected_bits=hex(int(eb[j])), got_bits=hex(int(gb[j])),
                  ulps=float(ulps[j]) if dt.is_float else None, inputs=shown, note=note)
    return Comparison(False, n, n_bad, max_ulp, worst)
