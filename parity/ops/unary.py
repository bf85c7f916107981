"""Unary family: u{op}_T(numel, num_dims, info, inp, out), and uelu/upowf with a T param
before the pointers. Floats only (f16, bf16, f32, f64, fp8 spelled `fp8_e4m3`)."""
from __future__ import annotations

import math

import numpy as np

from parity.core.dtypes import FLOATS, DType, dtype
from parity.core.numerics import round_float, to_f64
from parity.core.tolerance import COPY, EXACT, Tolerance
from parity.ops.base import Op
from parity.ops.elementwise import elementwise_op

ABI = ("numel", "num_dims", "info", "x", "out")
ABI_PARAM = ("numel", "num_dims", "info", "param:T", "x", "out")

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(x), dtype=np.float64)


def normcdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.asarray(_erfc(-x / math.sqrt(2.0)), dtype=np.float64)


def round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def relu(x: np.ndarray, dt: DType) -> np.ndarray:
    # f32/f64 use fmaxf(x, 0): NaN -> 0 (fp8 computes in f32 too); f16/bf16 max.NaN propagates
    r = np.maximum(x, 0.0)
    return r if dt.name in ("f16", "bf16") else np.where(np.isnan(x), 0.0, r)


def sign(x: np.ndarray) -> np.ndarray:
    return (x > 0).astype(np.float64) - (x < 0).astype(np.float64)   # NaN and ±0 -> 0


def _elementwise(f64_fn, needs_dtype: bool = False):
    def reference(inputs, params, key, op):
        dt = op.dtype_parts(key)[-1]
        x = to_f64(inputs["x"])
        with np.errstate(all="ignore"):
            y = f64_fn(x, dt, **params) if needs_dtype else f64_fn(x, **params)
        return round_float(y, dt)
    return reference


_TRANSC = Tolerance(ulp={"f32": 2, "f64": 2, "*": 1})
_SIGMOIDAL = Tolerance(ulp={"f32": 4, "f64": 2, "*": 2}, atol={"f32": 1e-7, "f64": 1e-15, "*": 0.0})
_GELU = Tolerance(ulp={"f32": 4, "f64": 2, "f16": 2, "bf16": 2, "*": 1},
                  atol={"f32": 1e-6, "f64": 1e-14, "f16": 2e-3, "bf16": 1.6e-2, "f8_e4m3": 0.0})

# name: (reference in float64, tolerance, input domain, semantics, divergences from Candle CPU)
_UNARY = {
    "neg": (lambda x: -x, Tolerance(exact=True, signed_zero=True), None, "-x", ()),
    "recip": (lambda x: 1.0 / x, Tolerance(ulp=0), "nonzero", "1/x (rcp.rn, correctly rounded)", ()),
    "exp": (np.exp, _TRANSC, None, "expf (not correctly rounded on CUDA)", ()),
    "log": (np.log, _TRANSC, "positive", "logf", ()),
    "sin": (np.sin, Tolerance(ulp={"f32": 2, "f64": 2, "*": 1}, atol={"f32": 1e-7, "*": 0.0}), None, "sinf", ()),
    "cos": (np.cos, Tolerance(ulp={"f32": 2, "f64": 2, "*": 1}, atol={"f32": 1e-7, "*": 0.0}), None, "cosf", ()),
    "tanh": (np.tanh, _TRANSC, None, "tanhf", ()),
    "erf": (erf, _TRANSC, None, "erff", ()),
    "ceil": (np.ceil, EXACT, None, "ceilf", ()),
    "floor": (np.floor, EXACT, None, "floorf", ()),
    "round": (round_half_away, EXACT, None, "roundf: half away from zero (-2.5 -> -3)", ()),
    "normcdf": (normcdf, _SIGMOIDAL, None, "normcdff", ()),
    "abs": (np.abs, EXACT, None, "fabs", ()),
    "sqr": (lambda x: x * x, Tolerance(ulp=0), None, "x*x", ()),
    "sqrt": (np.sqrt, Tolerance(ulp=0), "positive", "sqrtf (correctly rounded)", ()),
    "gelu": (gelu, _GELU, None, "0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))); f16/bf16 in the storage dtype",
             ("f16/bf16: CUDA evaluates the formula in the storage dtype, Candle CPU as a half-op chain",)),
    "gelu_erf": (lambda x: x * normcdf(x), _GELU, None, "x*normcdf(x)",
                 ("CUDA x*normcdf(x); Candle CPU 0.5x(1+erf(x/sqrt 2))",)),
    "relu": (relu, EXACT, None, "fmaxf(x,0): NaN->0 for f32/f64/fp8; f16/bf16 propagate NaN",
             ("f16/bf16: CUDA relu(NaN)=NaN, Candle CPU relu(NaN)=0",)),
    "silu": (lambda x: x / (1.0 + np.exp(-x)), _SIGMOIDAL, None, "x/(1+exp(-x)) (ex2.approx-based expf)", ()),
    "sign": (sign, EXACT, None, "(x>0)-(x<0): sign(NaN)=sign(±0)=0", ()),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), _SIGMOIDAL, None, "1/(1+exp(-x))", ()),
}


def _op(name, fn, tol, domain, sem, div) -> Op:
    needs_dtype = name == "relu"
    return elementwise_op(name=f"unary.{name}", family="unary", root=f"u{name}", dtypes=FLOATS, inputs=("x",),
              reference=_elementwise(fn, needs_dtype), tolerance=tol,
              domain={"x": domain} if domain else {}, fp8_spelling="fp8_e4m3", inplace=True,
              semantics=sem, divergences=div, abi=ABI)


def compute_dtype(dt: DType) -> DType:
    """The type the kernel's arithmetic runs in: T itself, except fp8 (float)."""
    return dtype("f32") if dt.name == "f8_e4m3" else dt


def _elu(x, dt, param):
    # alpha*(exp(x)-1) with every step rounded to the compute type, as measured (cancellation
    # near 0 is part of the CUDA result: elu_bf16(-0.001) = 0)
    c = compute_dtype(dt)
    r = lambda v: to_f64(round_float(v, c))
    alpha = r(np.array(param))
    return np.where(x > 0, x, r(alpha * r(r(np.exp(x)) - 1.0)))


def _c_pow(x: float, y: float) -> float:
    odd = float(y).is_integer() and int(y) % 2 == 1
    if x == 0 and y < 0:                         # C: pow(±0, y<0) = ±inf (odd y keeps the sign)
        return math.copysign(math.inf, x) if odd else math.inf
    try:
        return math.pow(x, y)                    # C99 pow rules: pow(-0, 0.5) = +0, pow(-inf, 0.5) = inf
    except ValueError:
        return math.nan
    except OverflowError:
        return math.copysign(math.inf, x) if odd else math.inf


_pow = np.frompyfunc(_c_pow, 2, 1)


def _powf(x, exponent):
    return np.asarray(_pow(x, exponent), dtype=np.float64)


OPS = [_op(n, *spec) for n, spec in _UNARY.items()] + [
    elementwise_op(name="unary.elu", family="unary", root="uelu", dtypes=FLOATS, inputs=("x",),
       reference=_elementwise(_elu, needs_dtype=True),
       # exp(x)-1 cancels near 0: one ulp of expf near 1 is alpha*2^-24 absolute in the result
       tolerance=Tolerance(ulp={"f32": 2, "f64": 2, "*": 1}, atol={"f32": 1.2e-7, "f64": 2.3e-16, "*": 0.0}),
       params_abi=("param",), param_sets=({"param": 0.5}, {"param": 1.0}), fp8_spelling="fp8_e4m3",
       inplace=True, semantics="x>0 ? x : alpha*(exp(x)-1), each step rounded to T (fp8: float)", abi=ABI_PARAM),
    elementwise_op(name="unary.powf", family="unary", root="upowf", dtypes=FLOATS, inputs=("x",),
       reference=_elementwise(lambda x, param: _powf(x, param)),
       tolerance=Tolerance(ulp={"f32": 2, "f64": 2, "*": 1}), params_abi=("param",),
       param_sets=({"param": 2.0}, {"param": 0.5}, {"param": -1.5}), domain={"x": "positive"},
       fp8_spelling="fp8_e4m3", inplace=True, semantics="powf(x, p) (via float for f16/bf16/fp8)",
       abi=ABI_PARAM),
    elementwise_op(name="copy.ucopy", family="unary", root="ucopy",
       dtypes=("u8", "u32", "i64", "f16", "bf16", "f32", "f64", "f8_e4m3"), inputs=("x",),
       reference=lambda inputs, params, key, op: np.array(inputs["x"], copy=True),
       tolerance=COPY, inplace=True, semantics="strided copy into a dense output",
       value_classes=("normal", "special"), abi=ABI),
]
