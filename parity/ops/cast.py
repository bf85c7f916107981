"""cast_S_D(numel, num_dims, info, inp, out) over the source x destination pairs Candle instantiates."""
from __future__ import annotations

import numpy as np

from parity.core.numerics import cast, to_f64
from parity.core.tolerance import EXACT
from parity.ops.elementwise import elementwise_op

_STD = ("u8", "u32", "i64", "f32", "f64")
PAIRS = [(s, d) for s in _STD for d in _STD] + \
    [(s, d) for s in ("f16",) for d in ("u8", "u32", "f32", "f64", "f16", "bf16", "f8_e4m3")] + \
    [(s, "f16") for s in ("u8", "u32", "f32", "f64")] + \
    [(s, d) for s in ("bf16",) for d in ("u8", "u32", "f32", "f64", "bf16", "f8_e4m3")] + \
    [(s, "bf16") for s in ("u8", "u32", "f32", "f64")] + [("f16", "bf16"), ("bf16", "f16")] + \
    [("f8_e4m3", d) for d in ("f32", "f64", "f16", "bf16", "u8", "i32", "f8_e4m3")] + \
    [(s, "f8_e4m3") for s in ("f32", "f64", "u8", "i32")]
PAIRS = sorted(set(PAIRS))


def reference(inputs, params, key, op):
    src, dst = op.dtype_parts(key)
    return cast(inputs["x"], src, dst)


def reference64(inputs: dict[str, np.ndarray], params: dict) -> np.ndarray:
    """In float64 (op chains' reference) a cast is the value itself: no rounding."""
    return to_f64(inputs["x"])


OPS = [elementwise_op(name="cast", family="cast", root="cast", dtypes=tuple(f"{s}-{d}" for s, d in PAIRS),
          inputs=("x",), reference=reference, reference64=reference64, tolerance=EXACT,
          value_classes=("normal", "special", "out-of-range"),
          semantics="float->u8: truncate, saturate to u32, keep the low byte (300->44); float->u32 "
          "saturates, NaN->0; float->i64 NaN->MIN; ->f16/bf16 one RNE rounding; ->fp8 RNE satfinite",
          divergences=("float->u8: CUDA wraps (300->44), Candle CPU saturates (300->255)",
                       "float->i64: CUDA NaN->i64::MIN, Candle CPU NaN->0",
                       "bf16 NaN: CUDA 0x7fff, Candle CPU 0x7fc0 (NaN-ness is compared)"),
          abi=("numel", "num_dims", "info", "x", "out"))]
