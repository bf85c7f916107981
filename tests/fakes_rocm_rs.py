"""A NumPy model of tests/fixtures/ports/rocm-rs-broken (our kernels in rocm-rs's conventions, one
planted bug each): the cpu level with the four bugs, through the hooks of parity.profiles.kernels.emulate.
On a GPU, hip-on-nvidia running the fixture must give every case the model's verdict and worst element
(tests/test_rocm_rs_profile.py)."""
from __future__ import annotations

import numpy as np

from parity.executors.cpu import CpuExecutor

FIXTURE = "tests/fixtures/ports/rocm-rs-broken"
# (op, dtype) -> the fixture kernel and its bug ("" = correct)
KERNELS = {
    ("rocm-rs.elementwise.add", "f32"): ("elementwise_add_float", ""),
    ("rocm-rs.reduce.sum", "f32"): ("reduce_sum_float", ""),
    ("rocm-rs.broadcast.add", "f32"): ("elementwise_add_broadcast_float", "stride array reused"),
    ("rocm-rs.elementwise.add", "u8"): ("elementwise_add_uchar", "32-bit index overflow"),
    ("rocm-rs.scalar.add", "f32"): ("scalar_add_float", "off-by-one tail"),
    ("rocm-rs.reduce.max", "f32"): ("reduce_max_float", "NaN lost in max"),
}
OPS = sorted({op for op, _ in KERNELS})
DTYPES = sorted({d for _, d in KERNELS})


class RocmRsBroken(CpuExecutor):
    """The fixture's kernels as NumPy: rocm-rs's semantics but for each planted bug."""
    INT_MAX = 2 ** 31 - 1             # `(int)n`: a length past this is negative, so no thread writes

    def __init__(self) -> None:
        super().__init__("rocm-rs")

    def role_strides(self, op, key, operand, strides_of):
        if (op.name, key) == ("rocm-rs.broadcast.add", "f32") and operand == "b":
            return strides_of["a"]                       # BUG: b indexed with a's strides
        return super().role_strides(op, key, operand, strides_of)

    def role_compute(self, op, key, inputs, sizes, scalars):
        if (op.name, key) == ("rocm-rs.reduce.max", "f32") and np.isnan(inputs["result"].reshape(-1)[0]):
            x = inputs["input"]                           # BUG: the NaN accumulator is replaced
            return {"result": np.asarray([np.nan if np.isnan(x).all() else np.nanmax(x)])}
        return super().role_compute(op, key, inputs, sizes, scalars)

    def role_store(self, op, key, name, buf, positions, values):
        if (op.name, key) == ("rocm-rs.scalar.add", "f32"):
            positions, values = positions[:-1], values[:-1]          # BUG: idx < n - 1
        if (op.name, key) == ("rocm-rs.elementwise.add", "u8") and positions.size > self.INT_MAX:
            return                                                   # BUG: (int)n < 0: nothing written
        super().role_store(op, key, name, buf, positions, values)
