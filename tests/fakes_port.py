"""A NumPy model of the whole WIP port in tests/fixtures/ports/candle-rocm-wip/ (issue #20).

`PortModel` answers every launch the way that port must on a GPU: a kernel the port does not
define is `missing`, a declared parameter list that differs from the ABI is `signature-mismatch`
(never launched), a null input pointer in the unary/affine/ucopy macro is a `crash`, and the
present kernels compute with the port's three math bugs:

* bf16 binary ops: float result truncated to bf16 (`float_to_bf16_trunc`, binary.hip);
* f16 minimum/maximum: `fminf`/`fmaxf` in float, so NaN is dropped (binary.hip);
* cast f32 -> u8: clamped to [0, 255] (saturates where CUDA wraps; cast.hip).

Everything else is the reference, so the GPU must show exactly the model's verdict, bad-element
count and worst element for every case (tests/test_port_fixture.py)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from parity.ops.base import ExecResult
from parity.executors.cpu import CpuExecutor
from parity.core.dtypes import dtype
from parity.core.numerics import round_float, to_f64
from parity.ops.binary import _minmax

PORT = Path(__file__).parent / "fixtures" / "ports" / "candle-rocm-wip"

# the kernels whose shared macro (hip_compat.h PORT_MAP_KERNEL) has no `inp ? inp[i] : out[i]`
INPLACE_FAULT_FAMILIES = ("unary", "affine")          # copy.ucopy is in the unary family


@lru_cache(maxsize=1)
def port_kernels() -> tuple[frozenset, frozenset]:
    """(present, signature-mismatch) kernel names of the port, as coverage reports them."""
    from parity.suite.coverage import coverage
    from parity.suite.scan import discover
    rows = coverage(discover(PORT))
    return (frozenset(r.kernel for r in rows if r.status == "present"),
            frozenset(r.kernel for r in rows if r.status == "signature-mismatch"))


def truncate_to_bf16(r64: np.ndarray) -> np.ndarray:
    """float64 result -> float (RNE, what the f32 arithmetic gives) -> top 16 bits."""
    with np.errstate(over="ignore"):                  # beyond f32's range: inf, as the f32 op gives
        f = np.ascontiguousarray(np.asarray(r64, dtype=np.float64).astype(np.float32))
    return (f.view(np.uint32) >> 16).astype(np.uint16).view(dtype("bf16").np)


_FLOAT = {"badd": np.add, "bsub": np.subtract, "bmul": np.multiply, "bdiv": np.divide}


class PortModel(CpuExecutor):
    """The WIP port, bug for bug (see the module docstring)."""

    def run(self, launch):
        present, mismatched = port_kernels()
        if launch.kernel in mismatched:
            return ExecResult("signature-mismatch", message=f"{launch.kernel}: parameters differ from the ABI")
        if launch.kernel not in present:
            return ExecResult("missing", message=f"no kernel {launch.kernel} in {PORT}")
        op, _ = self._kernels[launch.kernel]
        if op.family in INPLACE_FAULT_FAMILIES and any(a.kind == "ptr" and a.value is None for a in launch.args):
            return ExecResult("crash", message=f"{launch.kernel}: null input dereferenced (no in-place path)")
        return super().run(launch)

    def compute(self, op, key, inputs, params):
        dt = op.dtype_parts(key)[-1]
        if op.root in ("badd", "bsub", "bmul", "bdiv", "bminimum", "bmaximum") and dt.name in ("f16", "bf16"):
            x, y = to_f64(inputs["lhs"]), to_f64(inputs["rhs"])
            with np.errstate(all="ignore"):
                if op.root in _FLOAT:
                    r = _FLOAT[op.root](x, y)
                elif dt.name == "f16":       # fminf/fmaxf: NaN ignored (the f32 rule)
                    r = _minmax(x, y, dtype("f32"), op.root == "bminimum")
                else:                        # bf16 min/max: NaN propagates, result exact (correct)
                    r = _minmax(x, y, dt, op.root == "bminimum")
            if dt.name == "bf16":
                return truncate_to_bf16(r)
            if op.root in _FLOAT:            # f16 add/sub/mul/div are correct
                return super().compute(op, key, inputs, params)
            return round_float(r, dt)
        if op.root == "cast" and key == "f32-u8":
            v = to_f64(inputs["x"])
            return np.where(np.isnan(v), 0, np.clip(np.trunc(np.nan_to_num(v)), 0, 255)).astype(np.uint8)
        return super().compute(op, key, inputs, params)
