"""affine_T(numel, num_dims, info, inp, out, T mul, T add): x*mul+add, scalars after the pointers."""
from __future__ import annotations

import numpy as np

from parity.core.numerics import fma, scalar_to_dtype
from parity.core.tolerance import Tolerance
from parity.ops.elementwise import elementwise_op


def reference(inputs, params, key, op):
    dt = op.dtype_parts(key)[-1]
    mul = scalar_to_dtype(params["mul"], dt)[0]
    add = scalar_to_dtype(params["add"], dt)[0]
    x = inputs["x"]
    with np.errstate(all="ignore"):
        if not dt.is_float:                                   # integers wrap
            return (x.astype(dt.np) * dt.np.type(mul) + dt.np.type(add)).astype(dt.np)
        # one rounding for every float dtype: fma.rn (f32/f64), and measured on an H200 for
        # f16/bf16/fp8 too (the ABI sheet's "mul then add, each rounded" disagrees with the data)
        return fma(x, np.full(x.shape, float(mul)), np.full(x.shape, float(add)), dt)


OPS = [elementwise_op(name="affine", family="affine", root="affine",
          dtypes=("u8", "u32", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "f8_e4m3"),
          inputs=("x",), reference=reference, tolerance=Tolerance(ulp=0),
          params_abi=("mul", "add"),
          param_sets=({"mul": 2.0, "add": 3.0}, {"mul": 0.5, "add": -0.25}, {"mul": 3.0, "add": 0.1}),
          inplace=True, semantics="x*mul+add with one rounding (fma) for every float dtype; integers wrap; "
          "mul/add converted with T::from_f64 (fp8 out of range -> NaN)",
          divergences=("f32/f64: CUDA fuses x*mul+add into one fma, Candle CPU rounds twice (1 ulp apart)",),
          abi=("numel", "num_dims", "info", "x", "out", "mul:T", "add:T"))]
