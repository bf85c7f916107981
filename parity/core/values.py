"""Value classes: what numbers fill a case's inputs. Deterministic from a seed."""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import DType
from parity.core.numerics import round_float

VALUE_CLASSES = {
    "normal": "random finite values in the op's input domain",
    "special": "NaN, ±Inf, ±0, subnormals, max finite, halves (rounding ties) among normal values; "
               "integers: 0, 1, extremes, 2^31, 2^32 - 1, ... (integer divisors include 0)",
    "out-of-range": "values outside the destination's range (casts): 300 for u8, 65520 for f16, 464 for fp8, ...",
    "ties": "five distinct values only, so ties are everywhere (reductions, argmin/argmax, sort)",
    "positive": "finite values of one sign, 0.05 to 6 (sums: no cancellation, so a sum that drops elements or "
                "writes 0 is off by a large part of its result, where zero-mean values hide it in the rounding bound)",
    "peaked": "one value almost everywhere and a sparse peak (softmax: x - max rounds alike along a row)",
    "wide": "integers beyond 2^24 with low bits set (float32 cannot hold them: a kernel passing them through "
            "float rounds them), floats of magnitude 2^24..2^40 with fractions; 8/16-bit integers: their full range",
}

_FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5]
_OUT_OF_RANGE = [300.0, 500.0, 256.0, 255.5, -1.0, -0.7, 1e10, -1e10, 9.3e18, -9.3e18, 65520.0,
                 -65520.0, 464.0, -464.0, 449.0, 4.3e9, 2.0**31, 2.0**32, -(2.0**31) - 1, 1e30, -1e30,
                 3.5e38, 1e300, np.inf, -np.inf, np.nan]


def _float_specials(dt: DType) -> list[float]:
    tiny = 2.0 ** (dt.emin - dt.mant_bits)          # smallest subnormal
    min_normal = 2.0 ** dt.emin
    return _FLOAT_SPECIALS + [tiny, -tiny, min_normal - tiny, min_normal, -min_normal,
                              dt.max_finite, -dt.max_finite]


def _int_specials(dt: DType) -> list[int]:
    info = np.iinfo(dt.np)
    cands = [0, 1, 2, info.max, info.max - 1, info.min, info.min + 1, 255, 256, 2**31 - 1, 2**31,
             2**32 - 1, -1, -2, 7]
    return [c for c in cands if info.min <= c <= info.max]


def generate(dt: DType, n: int, value_class: str, rng: np.random.Generator,
             domain: str | None = None) -> np.ndarray:
    """n values of dtype dt for a value class, drawn from rng."""
    if value_class not in VALUE_CLASSES:
        raise KeyError(f"unknown value class {value_class!r}; known: {', '.join(VALUE_CLASSES)}")
    if value_class == "wide":
        return _wide(dt, n, rng, domain)
    if value_class == "positive":
        return _normal(dt, n, rng, "positive") if dt.is_float else rng.integers(1, 8, n).astype(dt.np)
    base = _normal(dt, n, rng, domain)
    if value_class == "normal" or n == 0:
        return base
    if dt.is_float:
        pool = _float_specials(dt) if value_class == "special" else _OUT_OF_RANGE
        pool_arr = round_float(np.array(pool, dtype=np.float64), dt, nan="keep")
    else:
        pool_arr = np.array(_int_specials(dt), dtype=dt.np)
    # specials at random positions, at least one of each when n allows, about half the tensor
    k = min(n, max(pool_arr.size, n // 2))
    where = rng.permutation(n)[:k]
    base[where] = pool_arr[np.arange(k) % pool_arr.size]
    if not dt.is_float:
        _restrict(base, dt, domain, special=True)
    return base


def _wide(dt: DType, n: int, rng: np.random.Generator, domain: str | None) -> np.ndarray:
    """The `wide` class: magnitudes float32 cannot hold exactly (see VALUE_CLASSES)."""
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    if dt.is_float:
        top = min(2.0 ** 40, dt.max_finite / 4)
        mag = np.exp(rng.uniform(np.log(min(2.0 ** 24, top / 2)), np.log(top), n)) + rng.random(n)
        return round_float(sign * mag if domain != "positive" else mag, dt)
    if dt.bits < 32:
        return _normal(dt, n, rng, domain)
    info = np.iinfo(dt.np)
    hi = min(int(info.max), 2 ** 62)
    v = rng.integers(2 ** 24, hi, n, dtype=np.int64, endpoint=True) | 1       # odd: float32 rounds it
    if dt.kind == "int" and domain != "positive":
        v = np.where(sign < 0, -v, v)
    v = v.astype(dt.np)
    _restrict(v, dt, domain)
    return v


def _restrict(v: np.ndarray, dt: DType, domain: str | None, special: bool = False) -> None:
    if domain in ("nonzero", "divisor"):
        if not (special and domain == "divisor"):   # integer x/0: in the special class only, where the
            v[v == 0] = 1                           # reference gives what CUDA's code computes (binary.py)
        if domain == "divisor" and dt.kind == "int":
            v[v == -1] = 3                          # avoid MIN / -1 (undefined behaviour)


def _normal(dt: DType, n: int, rng: np.random.Generator, domain: str | None) -> np.ndarray:
    if domain == "few":                             # comparisons: equal pairs common, so eq/ne/le/ge
        pool = [-3.0, -1.5, -1.0, 0.0, 1.0, 1.5, 3.0] if dt.is_float else [0, 1, 2, 3, 7]   # see both answers
        return round_float(rng.choice(np.array(pool), n), dt) if dt.is_float else \
            rng.choice(np.array(pool), n).astype(dt.np)
    if dt.is_float:
        if domain == "positive":
            v = rng.uniform(0.05, 6.0, n)
        elif domain == "unit":
            v = rng.uniform(-0.99, 0.99, n)
        else:
            v = rng.uniform(-5.0, 5.0, n)
        if domain == "nonzero":
            v = np.where(np.abs(v) < 0.05, 0.5, v)
        return round_float(v, dt)
    if domain == "mask":                            # where conditions: zeros and assorted non-zeros
        return rng.choice(np.array([0, 0, 1, 2, 7], dtype=np.int64), n).astype(dt.np)
    info = np.iinfo(dt.np)
    lo, hi = int(info.min), int(info.max)
    if domain == "small":                           # products that stay exact and readable
        lo, hi = max(lo, -100), min(hi, 100)
    v = rng.integers(lo, hi, n, dtype=np.uint64 if dt.np == np.uint64 else np.int64, endpoint=True)
    v = v.astype(dt.np)
    _restrict(v, dt, domain)
    return v
