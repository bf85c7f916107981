"""where_I_T(numel, num_dims, info, ids, t, f, out): info = dims + cond, t, f strides; never null."""
from __future__ import annotations

import numpy as np

from parity.core.numerics import to_f64
from parity.core.tolerance import COPY
from parity.ops.elementwise import elementwise_op

_VALUES = ("u8", "u32", "i64", "f16", "bf16", "f32", "f64")
KEYS = [f"{c}-{t}" for c in ("u8", "u32", "i64") for t in _VALUES] + \
       [f"{c}-f8_e4m3" for c in ("i16", "i32", "i64", "u32", "u8")]


def reference(inputs, params, key, op):
    return np.where(inputs["cond"] != 0, inputs["t"], inputs["f"])


def reference64(inputs: dict[str, np.ndarray], params: dict) -> np.ndarray:
    """In float64 (op chains' reference): the values widened, the condition read as it is."""
    return np.where(inputs["cond"] != 0, to_f64(inputs["t"]), to_f64(inputs["f"]))


OPS = [elementwise_op(name="where", family="ternary", root="where", dtypes=tuple(KEYS), inputs=("cond", "t", "f"),
          reference=reference, reference64=reference64, tolerance=COPY, fp8_spelling="fp8_e4m3", info_always=True,
          domain={"cond": "mask"},
          semantics="cond != 0 ? t : f, each operand through its own stride array",
          abi=("numel", "num_dims", "info", "cond", "t", "f", "out"))]
