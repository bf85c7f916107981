"""Deliberately broken subjects built on the CPU ABI emulation: each reproduces one bug that
ships in real ports. Tests assert parity reports each with the exact verdict and worst element."""
from __future__ import annotations

import numpy as np

from parity.executors.cpu import CpuExecutor
from parity.core.numerics import cast, to_f64


class IgnoresStrides(CpuExecutor):
    """Reads every operand as if contiguous (treats info as null)."""
    def gather(self, base, offset, info, nd, k, numel):
        return base[offset: offset + numel]


class DropsStartOffset(CpuExecutor):
    """Forgets that the host advanced the pointer by the start offset."""
    def pointer_offset(self, offset):
        return 0


class OneStrideArray(CpuExecutor):
    """Reuses the first operand's strides for every operand (the ternary macro bug)."""
    def operand_strides(self, info, nd, k):
        return info[nd: 2 * nd]


class SwappedStrides(CpuExecutor):
    """Binary kernel reading lhs with the rhs stride array and rhs with the lhs one."""
    def operand_strides(self, info, nd, k):
        return super().operand_strides(info, nd, 1 - k)


class ConstSetIgnoresView(CpuExecutor):
    """const_set writing out[i] instead of out[strided_i]."""
    def run(self, launch):
        launch.args = [type(a)(a.kind, None, a.dtype, a.name) if a.kind == "info" else a for a in launch.args]
        return super().run(launch)


class Bf16Truncation(CpuExecutor):
    """f32 -> bf16 by dropping the low 16 bits instead of rounding to nearest even."""
    def compute(self, op, key, inputs, params):
        if op.root == "cast" and key == "f32-bf16":
            x = np.ascontiguousarray(inputs["x"], dtype=np.float32)
            bits = (x.view(np.uint32) >> 16).astype(np.uint16)
            bits[np.isnan(x)] = 0x7FFF
            return bits.view(op.out_dtype(key).np)
        return super().compute(op, key, inputs, params)


class SaturatingU8Cast(CpuExecutor):
    """float->u8 saturates like Rust `as` (Candle CPU) instead of wrapping like CUDA."""
    def compute(self, op, key, inputs, params):
        src, dst = op.dtype_parts(key)[0], op.dtype_parts(key)[-1]
        if op.root == "cast" and src.is_float and dst.name == "u8":
            v = to_f64(inputs["x"])
            return np.where(np.isnan(v), 0, np.clip(np.trunc(np.nan_to_num(v)), 0, 255)).astype(np.uint8)
        return super().compute(op, key, inputs, params)


class NanDroppingMinimum(CpuExecutor):
    """minimum through `a < b ? a : b`: NaN handling lost (for f16/bf16 it must propagate)."""
    def compute(self, op, key, inputs, params):
        if op.root == "bminimum":
            a, b = inputs["lhs"], inputs["rhs"]
            return np.where(to_f64(a) < to_f64(b), a, b)
        return super().compute(op, key, inputs, params)


class GeAsGt(CpuExecutor):
    """cmp `ge` written with `>` (a copy-paste of gt): wrong only where lhs == rhs, which random
    values of the normal class never draw."""
    def compute(self, op, key, inputs, params):
        if op.name == "cmp.ge":
            return (to_f64(inputs["lhs"]) > to_f64(inputs["rhs"])).astype(np.uint8)
        return super().compute(op, key, inputs, params)


class UnwrittenTail(CpuExecutor):
    """Never writes the last element (an off-by-one bound)."""
    def store(self, out, values):
        out[: max(values.size - 1, 0)] = values[:-1]


class LostBlocksPast128(CpuExecutor):
    """A grid-stride loop whose step counts only the first 128 blocks of the grid (e.g. the sparse
    working blocks' count dropped): elements past 128 * 1024 are never written."""
    def store(self, out, values):
        n = min(values.size, 128 * 1024)
        out[:n] = values[:n]


class NoInPlacePath(CpuExecutor):
    """A unary macro without the `inp ? inp[i] : out[i]` path: a null input reads zeros."""
    def run(self, launch):
        for a in launch.args:
            if a.kind == "ptr" and a.value is None:
                launch.args = [type(a)(a.kind, ("zeros", 0), a.dtype, a.name) if x is a else x for x in launch.args]
                launch.buffers["zeros"] = np.zeros_like(launch.buffers["out"])
        return super().run(launch)


class I64DivByZeroAllOnes(CpuExecutor):
    """i64 x/0 always -1 (a 64-bit-only division), where nvcc's 32-bit path gives 0xffffffff for a
    dividend in [0, 2^32)."""
    def compute(self, op, key, inputs, params):
        out = super().compute(op, key, inputs, params)
        if op.root == "bdiv" and key == "i64":
            out = np.where(inputs["rhs"] == 0, np.int64(-1), out)
        return out


class InPlaceReadsStrided(CpuExecutor):
    """A null input read as `(inp ? inp : out)[strided_i]`: the strided path applies the (input's)
    view strides to out instead of reading out[i]."""
    def run(self, launch):
        for a in launch.args:
            if a.kind == "ptr" and a.value is None:
                launch.args = [type(a)(a.kind, ("out_before", 0), a.dtype, a.name) if x is a else x
                               for x in launch.args]
                launch.buffers["out_before"] = launch.buffers["out"].copy()
        return super().run(launch)


__all__ = ["I64DivByZeroAllOnes", "LostBlocksPast128", "InPlaceReadsStrided", "SwappedStrides", "ConstSetIgnoresView", "Bf16Truncation", "IgnoresStrides", "DropsStartOffset", "OneStrideArray", "SaturatingU8Cast", "NanDroppingMinimum",
           "UnwrittenTail", "NoInPlacePath", "cast"]


# ------------------------------------------------------------------ broken subjects for op chains
class TransposeLostBetweenSteps(CpuExecutor):
    """A port whose matmul reads a transposed operand as contiguous, but only when the operand is a
    view of a tensor an earlier step produced on the device (its host path re-derives the layout
    from the producer's metadata and drops the view); weights and other chain inputs are fine, so
    every single-op matmul case passes."""
    def run_chain(self, chain):
        self._chain_inputs = set(chain.buffers)
        return super().run_chain(chain)

    def chain_step(self, step, store):
        from parity.core.layouts import row_major
        produced = set(step.reads.values()) - self._chain_inputs
        if step.launch.library == "blas.gemm" and produced:
            args = []
            for a in step.launch.args:
                if a.kind == "info" and step.reads.get(a.name.replace("_layout", "")) in produced:
                    r = len(a.value) // 2
                    shape = tuple(int(x) for x in a.value[:r])
                    a = type(a)(a.kind, np.array(shape + row_major(shape), dtype=np.uint64), a.dtype, a.name)
                args.append(a)
            step = type(step)(step.label, type(step.launch)(**{**step.launch.__dict__, "args": args}),
                              step.reads, step.writes)
        return super().chain_step(step, store)


class InPlaceRmsnorm(CpuExecutor):
    """rmsnorm computed in place: the result also lands in the source buffer, which a later
    residual add still reads."""
    def run(self, launch):
        res = super().run(launch)
        if launch.kernel.startswith("rmsnorm_") and res.status == "ok":
            n = launch.args[3].value * launch.grid[0]
            launch.buffers["src"][:n] = res.outputs["dst"][:n]
        return res


class PlantedUlpBias(CpuExecutor):
    """One kernel's every output element one ulp above the right answer (the next value toward
    +inf): within the op's own tolerance element by element, biased over the tensor."""
    kernel = "softmax_bf16"

    def run(self, launch):
        res = super().run(launch)
        if launch.kernel == self.kernel and res.status == "ok":
            for n in launch.outputs:
                out = res.outputs[n]
                u = out.view(np.uint16).astype(np.int32)
                up = np.where(u == 0x8000, 1, np.where(u & 0x8000, u - 1, u + 1))   # -0 -> +min subnormal
                res.outputs[n] = up.astype(np.uint16).view(out.dtype)
        return res
