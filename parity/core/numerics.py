"""Rounding and conversion exactly as Candle's CUDA kernels do them.

Everything is computed in float64 and rounded once to the output dtype, with the
conversion rules measured on CUDA (see docs/candle-kernel-abi.md, section 3).
"""
from __future__ import annotations

import math

import numpy as np

from parity.core.dtypes import DType, dtype

# NaN bit patterns CUDA's arithmetic produces (canonical, positive, all-ones payload).
CANONICAL_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF,
                 "f64": 0x7FFFFFFFFFFFFFFF, "f8_e4m3": 0x7F}


def to_f64(x: np.ndarray) -> np.ndarray:
    """Exact widening of any ABI dtype to float64 (u64-range i64 values lose nothing we use)."""
    return np.asarray(x).astype(np.float64)


def _round_binary(x: np.ndarray, dt: DType) -> np.ndarray:
    """Round float64 to the grid of a binary float format with RNE; no overflow handling."""
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)
        exp = np.maximum(e - 1, dt.emin)          # exponent of the binade (subnormals share emin)
        quantum = np.ldexp(1.0, exp - dt.mant_bits)
        return np.rint(x / quantum) * quantum      # x/quantum is exact: a power-of-two scaling


def round_float(x: np.ndarray, dt: DType, nan: str = "canonical") -> np.ndarray:
    """float64 -> float dtype, one RNE rounding (CUDA cvt.rn; fp8 with satfinite).

    nan="canonical" writes CUDA's canonical NaN; nan="keep" lets NumPy choose the bits.
    """
    x = np.asarray(x, dtype=np.float64)
    if dt.name == "f64":
        out = x.copy()
    elif dt.name == "f32":
        with np.errstate(over="ignore"):
            out = x.astype(np.float32)             # hardware conversion: one RNE rounding
    elif dt.name == "f16":
        with np.errstate(over="ignore", invalid="ignore"):
            out = x.astype(np.float16)             # NumPy rounds double -> half directly, RNE (no double rounding)
    else:
        r = _round_binary(x, dt)
        with np.errstate(all="ignore"):
            if dt.name == "f8_e4m3":               # cvt.rn.satfinite: overflow and inf -> ±448
                r = np.where(np.abs(r) > dt.max_finite, np.copysign(dt.max_finite, x), r)
            else:
                r = np.where(np.abs(r) > dt.max_finite, np.copysign(np.inf, x), r)
        out = r.astype(dt.np)                      # exact: r is on the target grid
    if nan == "canonical":
        nan_mask = np.isnan(x)
        if nan_mask.any():
            bits = out.view(dt.bits_dtype)
            bits[nan_mask] = CANONICAL_NAN[dt.name]
    return out


def _float_to_int(x: np.ndarray, lo: float, hi: float, nan_value: int, np_dtype) -> np.ndarray:
    """Truncate toward zero and saturate to [lo, hi] (cvt.rzi.sat); NaN -> nan_value."""
    with np.errstate(all="ignore"):
        t = np.trunc(x)
        nan_mask = np.isnan(t)
        t = np.where(nan_mask, 0.0, t)
        big = t >= hi
        small = t <= lo
        t = np.clip(t, lo, hi)
        out = t.astype(np.int64 if np_dtype != np.uint64 else np.uint64)
    out = out.astype(np.int64)
    out[big] = int(hi) if hi < 2**63 else 2**63 - 1
    out[small] = int(lo)
    out[nan_mask] = nan_value
    return out


def cast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """cast_S_D as the CUDA kernels compute it (float->u8 wraps, NaN->i64::MIN, ...)."""
    x = np.asarray(x, dtype=src.np)
    return _cast_flat(x.reshape(-1), src, dst).reshape(x.shape)


def _cast_flat(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    if src.is_float:
        v = to_f64(x)
        if dst.is_float:
            return round_float(v, dst)
        if dst.name == "u8":                       # cvt.rzi.u32 (sat, NaN->0), keep the low byte
            return (_float_to_int(v, 0, 2**32 - 1, 0, np.uint32) & 0xFF).astype(np.uint8)
        if dst.name == "u32":                      # measured: f64 NaN -> 0x80000000, f32 NaN -> 0
            nan_value = 0x80000000 if src.name == "f64" else 0
            return _float_to_int(v, 0, 2**32 - 1, nan_value, np.uint32).astype(np.uint32)
        if dst.name == "i64":
            i = np.full(v.shape, np.iinfo(np.int64).min, dtype=np.int64)
            ok = ~np.isnan(v)
            with np.errstate(all="ignore"):
                hi = v >= 2.0**63
                lo = v < -(2.0**63)
                mid = ok & ~hi & ~lo
                i[mid] = np.trunc(v[mid]).astype(np.int64)
            i[hi] = np.iinfo(np.int64).max
            return i
        if dst.name in ("i32", "i16"):
            info = np.iinfo(dst.np)
            return _float_to_int(v, info.min, info.max, 0, np.int64).astype(dst.np)
        raise ValueError(f"no cast {src}->{dst}")
    # integer source
    if dst.is_float:
        if src.bits < 64:                          # exact in float64, so one rounding
            return round_float(x.astype(np.float64), dst)
        return _i64_to_f64_exact(x, dst)
    return x.astype(dst.np)                        # integer -> integer: two's complement wrap


def _i64_to_f64_exact(x: np.ndarray, dst: DType) -> np.ndarray:
    """i64 -> float with one rounding (float64 conversion alone would round twice for f32)."""
    if dst.name == "f64":
        return x.astype(np.float64)
    # x = s + e exactly, s the nearest double; then round s + e once
    s = x.astype(np.float64)
    with np.errstate(all="ignore"):
        s_int = np.where(np.abs(s) >= 2.0**63, np.iinfo(np.int64).max, s).astype(np.int64)
        e = (x - s_int).astype(np.float64)
    return round_float_pair(s, e, dst)


def round_float_pair(s: np.ndarray, e: np.ndarray, dt: DType) -> np.ndarray:
    """Round the exact value s + e (|e| tiny relative to s) to dt once.

    s is rounded to dt; when s sits exactly on a tie of dt's grid, e's sign breaks it.
    """
    r = round_float(s, dt)
    if dt.name == "f64":
        return r
    rf = r.astype(np.float64)
    with np.errstate(all="ignore"):
        spacing = np.abs(np.spacing(r).astype(np.float64)) if dt.name != "f8_e4m3" else None
        if spacing is None:
            return r
        on_tie = (np.abs(s - rf) == spacing / 2) & (e != 0) & np.isfinite(s)
    if on_tie.any():
        # the exact value is off the tie: round s nudged toward e
        nudged = s[on_tie] + np.sign(e[on_tie]) * spacing[on_tie] / 4
        r[on_tie] = round_float(nudged, dt)
    return r


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dt: DType) -> np.ndarray:
    """a*b+c with one rounding to dt (f32/f64 affine compile to fma.rn)."""
    shape = np.shape(a)
    a, b, c = (to_f64(v).reshape(-1) for v in (a, b, c))
    return _fma_flat(a, b, c, dt).reshape(shape)


def _fma_flat(a: np.ndarray, b: np.ndarray, c: np.ndarray, dt: DType) -> np.ndarray:
    with np.errstate(all="ignore"):
        p, pe = two_prod(a, b)
        s, se = two_sum(p, c)
        err = np.where(np.isfinite(s), se + pe, 0.0)   # inf/NaN: the plain result is the answer
        if dt.name == "f64":
            out = np.where(np.isfinite(s), s + err, a * b + c)
            # near the top of the range the splitting overflows: take those few exactly
            hard = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & ~np.isfinite(err + s)
            for i in np.flatnonzero(hard):
                out[i] = _exact_fma(a[i], b[i], c[i])
            return out
        return round_float_pair(s, err, dt)


def _exact_fma(a: float, b: float, c: float) -> float:
    """a*b+c rounded once, in rationals (float(Fraction) rounds correctly; overflow -> inf)."""
    from fractions import Fraction
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    err = np.where(np.isfinite(p), err, 0.0)
    return p, err


def ulp_order(bits: np.ndarray, dt: DType) -> np.ndarray:
    """Map float bit patterns onto integers whose difference counts ULPs (±0 both map to 0)."""
    b = bits.astype(np.int64) if dt.bits < 64 else bits.view(np.int64)
    sign = np.int64(1) << np.int64(dt.bits - 1)
    if dt.bits < 64:
        mag = b & (sign - 1)
        neg = (b & sign) != 0
    else:
        mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
        neg = b < 0
    return np.where(neg, -mag, mag)


def bits_of(x: np.ndarray, dt: DType) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=dt.np).view(dt.bits_dtype)


def from_bits(hexes: list[str], dt: DType) -> np.ndarray:
    return np.array([int(h, 16) for h in hexes], dtype=np.uint64).astype(dt.bits_dtype).view(dt.np)


__all__ = ["round_float", "cast", "fma", "ulp_order", "bits_of", "from_bits", "to_f64", "dtype",
           "CANONICAL_NAN", "round_float_pair"]


def scalar_to_dtype(value: float, dt: DType) -> np.ndarray:
    """A host scalar as Candle passes it: `T::from_f64` (floats round, integers truncate and saturate)."""
    if dt.is_float:
        v = round_float(np.array([value], dtype=np.float64), dt, nan="keep")
        if dt.name == "f8_e4m3" and abs(value) > dt.max_finite and \
                abs(_round_binary(np.array([value]), dt)[0]) > dt.max_finite:
            v[:] = np.nan                          # the float8 crate's from_f64 has no saturation
        return v
    info = np.iinfo(dt.np)
    v = 0 if np.isnan(value) else int(np.clip(np.trunc(value), info.min, info.max))
    return np.array([v], dtype=dt.np)
