"""Writers without inputs or with raw 2-D geometry: const_set_T (writes out[strided_i]),
copy2d_T (u32 geometry, one thread per element) and fill_T (unused by Candle's backend)."""
from __future__ import annotations

import numpy as np

from parity.core.layouts import Layout
from parity.core.numerics import scalar_to_dtype
from parity.core.tolerance import COPY
from parity.ops.elementwise import elementwise_op

DTYPES = ("u8", "u32", "i64", "f16", "bf16", "f32", "f64", "f8_e4m3")


def const_set_reference(inputs, params, key, op, out_base: np.ndarray, out_layout: Layout):
    dt = op.dtype_parts(key)[-1]
    out = out_base.copy()
    out[out_layout.flat_indices().reshape(-1)] = scalar_to_dtype(params["value"], dt)[0]
    return out


def fill_reference(inputs, params, key, op, out_base: np.ndarray, out_layout: Layout):
    dt = op.dtype_parts(key)[-1]
    out = out_base.copy()
    out[: out_layout.numel] = scalar_to_dtype(params["value"], dt)[0]
    return out


def copy2d_reference(inputs, params, key, op, out_base: np.ndarray, out_layout: Layout):
    out = out_base.copy()
    out[out_layout.flat_indices()] = inputs["src"]
    return out


OPS = [
    elementwise_op(name="fill.const_set", family="fill", root="const_set", dtypes=DTYPES, inputs=(),
       reference=const_set_reference, tolerance=COPY, params_abi=("value",),
       param_sets=({"value": 3.0}, {"value": -0.5}), out_mode="buffer", value_classes=("normal",),
       semantics="out[strided_i] = value: only the view's elements change",
       abi=("numel", "num_dims", "info", "value:T", "out")),
    elementwise_op(name="fill.copy2d", family="fill", root="copy2d", dtypes=DTYPES, inputs=("src",),
       reference=copy2d_reference, tolerance=COPY, out_mode="buffer",
       semantics="dst[r*dst_s+c] = src[r*src_s+c], one thread per element (not grid-stride)",
       abi=("src", "out", "d1:u32", "d2:u32", "src_s:u32", "dst_s:u32")),
    elementwise_op(name="fill.fill", family="fill", root="fill", dtypes=DTYPES, inputs=(),
       reference=fill_reference, tolerance=COPY, params_abi=("value",),
       param_sets=({"value": 3.0}, {"value": -0.5}), out_mode="buffer", value_classes=("normal",),
       semantics="buf[0..numel) = value", abi=("out", "value:T", "numel")),
]
