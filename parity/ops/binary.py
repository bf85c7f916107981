"""Binary family b{add,sub,mul,div,minimum,maximum}_T and comparisons {eq,..,ge}_T (u8 out):
(numel, num_dims, dims_and_strides, lhs, rhs, out); info = dims, lhs strides, rhs strides."""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import DType
from parity.core.numerics import round_float, to_f64
from parity.core.tolerance import EXACT, Tolerance
from parity.ops.elementwise import elementwise_op

DTYPES = ("u8", "u32", "i64", "f16", "bf16", "f32", "f64", "f8_e4m3")
ABI = ("numel", "num_dims", "info", "lhs", "rhs", "out")


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: truncate toward zero. x/0 (undefined in C) as nvcc's code computes it on NVIDIA:
    all ones (u8 through div.s32, u32 div.u32), and for i64 0xffffffff when the dividend fits in 32
    unsigned bits (nvcc's 32-bit fast path, div.u32) else -1 (its 64-bit division routine)."""
    zero = b == 0
    d = np.where(zero, 1, b).astype(b.dtype)
    q = a // d
    q = q + ((a % d != 0) & ((a < 0) != (d < 0))).astype(q.dtype)
    if a.dtype == np.int64:
        by_zero = np.where(a.astype(np.uint64) >> np.uint64(32) == 0, np.int64(0xFFFFFFFF), np.int64(-1))
    else:
        by_zero = np.full(a.shape, np.iinfo(a.dtype).max, dtype=a.dtype)      # unsigned: all ones
    return np.where(zero, by_zero, q).astype(a.dtype)


def _minmax(a: np.ndarray, b: np.ndarray, dt: DType, want_min: bool) -> np.ndarray:
    """fminf/fmaxf ignore NaN (f32, f64, fp8 via float); __hmin_nan/__hmax_nan propagate it (f16, bf16).
    Both order -0 below +0."""
    if want_min:
        pick_a = (a < b) | ((a == b) & np.signbit(a) & ~np.signbit(b))
    else:
        pick_a = (a > b) | ((a == b) & ~np.signbit(a) & np.signbit(b))
    r = np.where(pick_a, a, b)
    if dt.name in ("f16", "bf16"):
        return np.where(np.isnan(a) | np.isnan(b), np.nan, r)
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, r))


_FLOAT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
_INT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _int_div}


def _binary_ref(name: str):
    def reference(inputs, params, key, op):
        dt = op.dtype_parts(key)[-1]
        a, b = inputs["lhs"], inputs["rhs"]
        with np.errstate(all="ignore"):
            if not dt.is_float:
                if name in ("minimum", "maximum"):
                    return (np.minimum if name == "minimum" else np.maximum)(a, b).astype(dt.np)
                return _INT[name](a.astype(dt.np), b.astype(dt.np)).astype(dt.np)   # wraps mod 2^n
            x, y = to_f64(a), to_f64(b)
            if name in ("minimum", "maximum"):
                r = _minmax(x, y, dt, name == "minimum")
            else:
                r = _FLOAT[name](x, y)
            return round_float(r, dt)
    return reference


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def _cmp_ref(name: str):
    def reference(inputs, params, key, op):
        dt = op.dtype_parts(key)[-1]
        a, b = inputs["lhs"], inputs["rhs"]
        if dt.is_float:
            a, b = to_f64(a), to_f64(b)
        return _CMP[name](a, b).astype(np.uint8)
    return reference


_SEM = {
    "add": "lhs+rhs (integers wrap)", "sub": "lhs-rhs (integers wrap)", "mul": "lhs*rhs (integers wrap)",
    "div": "lhs/rhs (integers truncate; x/0, special class only: all ones, i64 0xffffffff for a dividend "
           "in [0, 2^32) as nvcc's 32-bit path gives it)",
    "minimum": "f32/f64/fp8 fminf (NaN ignored); f16/bf16 __hmin_nan (NaN propagates)",
    "maximum": "f32/f64/fp8 fmaxf (NaN ignored); f16/bf16 __hmax_nan (NaN propagates)",
}
_DIV_CPU = {
    "minimum": ("Candle CPU `if a>b {b} else {a}` returns NaN only when it is the lhs",),
    "maximum": ("Candle CPU `if a<b {b} else {a}` returns NaN only when it is the lhs",),
}

OPS = [
    elementwise_op(name=f"binary.{n}", family="binary", root=f"b{n}", dtypes=DTYPES, inputs=("lhs", "rhs"),
       reference=_binary_ref(n), tolerance=Tolerance(ulp=0, signed_zero=n in ("minimum", "maximum")),
       domain={"rhs": "divisor"} if n == "div" else {}, semantics=_SEM[n], divergences=_DIV_CPU.get(n, ()),
       abi=ABI)
    for n in _SEM
] + [
    elementwise_op(name=f"cmp.{n}", family="binary", root=n, dtypes=DTYPES, inputs=("lhs", "rhs"),
       reference=_cmp_ref(n), tolerance=EXACT, out_rule="u8", domain={"lhs": "few", "rhs": "few"},
       semantics=f"lhs {n} rhs as u8 0/1; NaN compares false (ne -> 1)", abi=ABI)
    for n in _CMP
]
