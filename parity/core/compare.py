"""Judge a kernel's output against the reference, vectorised, and find the worst element."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from parity.core.dtypes import DType
from parity.core.layouts import SENTINEL
from parity.core.numerics import bits_of, to_f64, ulp_order
from parity.core.tolerance import Tolerance

# Worst.kind: what the failing elements say about the cause (findings group by it)
OUTSIDE_VIEW = "outside-view"        # NaN out, no NaN in any input's view: parity's poison got in
TOWARD_EXACT = "toward-exact"        # every failing element nearer the float64 truth than CUDA's
_EXTRA = ("exact", "ulps_from_exact", "cuda_ulps_from_exact", "kind")   # left out of to_dict when unset


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
    exact: str | None = None                # float64 truth at the element (ops with `exact`)
    ulps_from_exact: float | None = None    # |got - exact| in ulps of the output dtype at exact
    cuda_ulps_from_exact: float | None = None   # |expected - exact|, the same way
    kind: str = ""                          # OUTSIDE_VIEW, TOWARD_EXACT or ""

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in _EXTRA:                    # rows of ordinary failures keep their old shape
            if d[k] in (None, ""):
                del d[k]
        return d

    def add_note(self, text: str) -> None:
        self.note = f"{self.note}; {text}" if self.note else text

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
    bad: np.ndarray | None = None           # flat indices of the failing elements


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
    bad = sub[~ok]
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
    return Comparison(False, n, n_bad, max_ulp, worst, bad)


# ------------------------------------------------------------------ what the failure says
def _holds_nan(a: np.ndarray) -> bool:
    a = np.asarray(a)
    if a.dtype.kind in "iub" or a.size == 0:
        return False
    return bool(np.isnan(to_f64(a)).any())


def _is_nan_text(v: str) -> bool:
    return str(v).lower() == "nan"


def mark_outside_view(worst: Worst | None, views: dict[str, np.ndarray], bases: dict[str, np.ndarray]) -> None:
    """Name a NaN the kernel cannot have computed from its inputs: the worst element is NaN where the
    reference is not, no input holds NaN inside its view, and some input's base buffer holds
    parity's NaN poison outside it. Then the kernel read outside its view (a layout bug), not a
    NaN-handling one."""
    if worst is None or not _is_nan_text(worst.got) or _is_nan_text(worst.expected):
        return
    if any(_holds_nan(v) for v in views.values() if v is not None):
        return
    if not any(_holds_nan(b) for b in bases.values() if b is not None):
        return                              # no poison to read: the NaN is the kernel's own
    worst.kind = OUTSIDE_VIEW
    worst.add_note("no input holds NaN in its view: parity's poison from outside the view reached the output")


def ulp_size(x: np.ndarray, dt: DType) -> np.ndarray:
    """The spacing of `dt` at each (float64) value: 2^(exponent - mantissa bits), subnormals included."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(np.where(a > 0, e, dt.emin), dt.emin)
    return np.ldexp(1.0, (e - dt.mant_bits).astype(np.int64))


def mark_toward_exact(worst: Worst | None, bad: np.ndarray | None, expected: np.ndarray, got: np.ndarray,
                      exact: np.ndarray, dt: DType) -> None:
    """Record the float64 truth at the worst element and each side's distance from it (in ulps of
    `dt` at the exact value); kind TOWARD_EXACT when *every* failing element of `got` is strictly
    nearer the truth than the CUDA-semantics reference: a rounding choice, not a bug (still a failure)."""
    if worst is None or bad is None or not dt.is_float or bad.size == 0:
        return
    ex = np.asarray(exact, dtype=np.float64).reshape(-1)
    e64, g64 = to_f64(np.asarray(expected, dtype=dt.np)).reshape(-1), to_f64(np.asarray(got, dtype=dt.np)).reshape(-1)
    with np.errstate(all="ignore"):
        size = ulp_size(ex[bad], dt)
        port, cuda = np.abs(g64[bad] - ex[bad]) / size, np.abs(e64[bad] - ex[bad]) / size
    at = np.flatnonzero(bad == worst.index)
    if at.size:
        k = int(at[0])
        worst.exact = repr(float(ex[worst.index]))
        worst.ulps_from_exact, worst.cuda_ulps_from_exact = float(port[k]), float(cuda[k])
    finite = np.isfinite(port) & np.isfinite(cuda)
    if at.size and finite.all() and bool((port < cuda).all()):
        worst.kind = TOWARD_EXACT
        worst.add_note(f"port {port[k]:.2g} ulp from the exact value, CUDA {cuda[k]:.2g} ulp")
