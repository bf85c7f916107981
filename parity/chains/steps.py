"""One chain step made concrete: the op's own launch and built record from input tensors (base
buffer + view), its float64 reference, and what its own tolerance allows.

Launches come from the op's own packing (elementwise `abi.pack`, the structured families'
`spec.pack`, matmul's `gemm_launch`), so a step passes the same kernel names and arguments Candle
would; a view between steps is the operand's strides and offset over the producer's buffer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parity.core.dtypes import DType, dtype
from parity.core.layouts import Layout, contiguous, logical
from parity.core.numerics import to_f64
from parity.ops import CATALOG
from parity.ops.abi import pack
from parity.ops.base import ExecResult, Op, Operands
from parity.ops.elementwise import Built, expected_output
from parity.ops.conv import conv2d_math, out_len
from parity.ops.matmul import ACC_EPS, MatMulNonContiguous, case_bmnk, gemm_config, gemm_launch
from parity.ops.nn import EPS, rope_reference
from parity.ops.pool import pool_windows
from parity.ops.structured import StructuredBuilt, out_buffer
from parity.chains.format import ChainError, Operand, Step, operand_layout

F64 = dtype("f64")


@dataclass
class Tensor:
    """A tensor as the chain holds it: a contiguous base buffer of its dtype."""
    dtype: DType
    shape: tuple[int, ...]

    @property
    def layout(self) -> Layout:
        return contiguous(self.shape)


@dataclass(frozen=True)
class StepCase:
    """What a built record needs of its case: the op (by name, so it pickles) and the dtype key."""
    op: str
    dtype: str
    layout: str = "chain"
    values: str = "normal"
    seed: int = 0
    params: tuple = ()

    @property
    def catalog_op(self) -> Op:
        return CATALOG[self.op]

    @property
    def id(self) -> str:
        return f"{self.op}/{self.dtype}/chain-step"


def _case(op: Op, key: str) -> StepCase:
    return StepCase(op.name, key)


class StepBuilder:
    """Builds one step's (built, launch) from the base buffers of the tensors it reads."""

    def __init__(self, step: Step, key: str, tensors: dict[str, Tensor]):
        self.step, self.key = step, key
        if step.op not in CATALOG:
            raise ChainError(f"{step.label}: no op {step.op!r} in the catalog")
        self.op = CATALOG[step.op]
        if key not in self.op.dtypes:
            raise ChainError(f"{step.label}: {step.op} has no dtype {key!r}")
        self.layouts = {n: operand_layout(tensors[o.tensor].layout, o) for n, o in step.inputs.items()}
        self.in_dtypes = {n: tensors[o.tensor].dtype for n, o in step.inputs.items()}
        self._check()

    # Pickled without the op (its reference functions are closures): the step names it. Lets
    # engine.prepared_stream build chain cases in worker processes.
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "op"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.op = CATALOG[self.step.op]

    @property
    def out_buffer(self) -> str:
        return "out" if self.op.spec.elementwise else "dst"

    # operands a kernel reads as dense rows (Candle's host makes them contiguous first); rope also
    # reads them from the buffer start (its launch passes no offset)
    DENSE = {"softmax": ("src",), "rmsnorm": ("src", "alpha"), "rope": ("src", "cos", "sin"),
             "rope_i": ("src", "cos", "sin"), "rope_thd": ("src", "cos", "sin")}
    OPTIONAL = {"alpha"}                     # rmsnorm without a gain: a null pointer

    def _check(self) -> None:
        """What Candle's host requires before it launches (the chain must take the copies itself)."""
        op, s, lays = self.op, self.step, self.layouts
        missing = [n for n in op.inputs if n not in lays and n not in self.OPTIONAL]
        unknown = [n for n in lays if n not in op.inputs and not (n in self.OPTIONAL and op.root == "rmsnorm")]
        if missing or unknown:
            raise ChainError(f"{s.label}: {op.name} takes {', '.join(op.inputs)}"
                             f"{' (+ alpha)' if op.root == 'rmsnorm' else ''}; missing {missing}, unknown {unknown}")
        for n in self.DENSE.get(op.root, ()):
            if n in lays and not (lays[n].is_contiguous() and (lays[n].offset == 0 or not op.root.startswith("rope"))):
                raise ChainError(f"{s.label}: {op.name} needs a contiguous {n} (Candle's host checks it): "
                                 f"{s.inputs[n].text()} is {lays[n].describe()}; add a copy.ucopy step")
        if op.spec.elementwise and len({lay.shape for lay in lays.values()}) > 1:
            raise ChainError(f"{s.label}: operands of different shapes {sorted({l.shape for l in lays.values()})}; "
                             "broadcast them")
        if op.name == "matmul.gemm":
            try:
                gemm_config(case_bmnk(lays["lhs"].shape, lays["rhs"].shape), lays["lhs"], lays["rhs"])
            except MatMulNonContiguous as e:
                raise ChainError(f"{s.label}: Candle refuses this matmul: {e}") from None

    def out_tensor(self) -> Tensor:
        op, lay = self.op, self.layouts
        if op.spec.elementwise:
            first = lay[op.inputs[0]] if op.inputs[0] in lay else next(iter(lay.values()))
            return Tensor(op.out_dtype(self.key), tuple(first.shape))
        return Tensor(dtype(self.key), self.geometry()[1])

    def geometry(self) -> tuple[dict, tuple[int, ...]]:
        """(the family's geo record, as its pack and judge read it; the output shape)."""
        op, lays, p = self.op, self.layouts, self.step.params
        if op.name == "matmul.gemm":
            l, r = lays["lhs"].shape, lays["rhs"].shape
            bmnk = case_bmnk(l, r)
            return {"bmnk": bmnk, "cfg": gemm_config(bmnk, lays["lhs"], lays["rhs"])}, tuple(l[:-2]) + (l[-2], r[-1])
        if op.name in ("conv.conv2d", "conv.conv2d_host"):
            g = {"stride": int(p.get("stride", 1)), "padding": int(p.get("padding", 0)),
                 "dilation": int(p.get("dilation", 1)), "out_padding": 0, "src": lays["src"].shape, "k": lays["k"].shape}
            (b_, _, h, w), (co, _, kh, kw) = lays["src"].shape, lays["k"].shape
            return g, (b_, co, out_len(h, kh, g["stride"], g["padding"], g["dilation"]),
                       out_len(w, kw, g["stride"], g["padding"], g["dilation"]))
        shape = lays["src"].shape
        if op.name == "pool.avg":
            k = (int(p["kh"]), int(p["kw"]))
            st = (int(p.get("sh", k[0])), int(p.get("sw", k[1])))
            return {"k": k, "s": st}, shape[:2] + ((shape[2] - k[0]) // st[0] + 1, (shape[3] - k[1]) // st[1] + 1)
        if op.root in ("softmax", "rmsnorm"):
            n = shape[-1]
            return {"rows": math.prod(shape[:-1]), "n_cols": n, "block_size": 32 if n < 1024 else 1024}, shape
        if op.root.startswith("rope"):
            b_, h, t, d = shape if op.root != "rope_thd" else (shape[0], shape[2], shape[1], shape[3])
            return {"b": b_, "h": h, "t": t, "d": d, "el": math.prod(shape),
                    "stride_b": h * t * d if lays["cos"].rank == 3 else 0}, shape
        raise ChainError(f"{self.step.label}: chains do not run {op.name} steps yet")

    def build(self, bases: dict[str, np.ndarray]):
        """(built record, launch) with the operands read from these base buffers (by operand)."""
        op, key, lays = self.op, self.key, self.layouts
        ins = {n: logical(bases[n], lays[n]) for n in lays}
        if op.spec.elementwise:
            names = tuple(n for n in op.inputs if n in lays)
            ops = Operands(names, dict(self.in_dtypes), dict(lays), dict(bases), ins)
            params = dict(self.step.params)
            out = contiguous(lays[names[0]].shape)
            launch = pack(op, key, ops, params, out_layout=out)
            return Built(_case(op, key), op, ops, params, out, False), launch
        geo, shape = self.geometry()
        b = StructuredBuilt(_case(op, key), op, key, dict(self.in_dtypes), dict(lays), dict(bases), ins, geo,
                            out_dtype=dtype(key), out_shape=shape)
        if op.name == "matmul.gemm":
            return b, gemm_launch(key, geo["bmnk"], lays["lhs"], bases["lhs"], lays["rhs"], bases["rhs"], out_buffer(b))
        return b, op.spec.pack(b)

    def judge(self, bases: dict[str, np.ndarray], got: np.ndarray) -> tuple[dict, np.ndarray]:
        """The op's own verdict on `got` (the step's output buffer) for these inputs, and the op's
        own expected output (the judge's reference, in the step's dtype)."""
        b, launch = self.build(bases)
        spec = self.op.spec
        if spec.elementwise:
            expected = expected_output(b, launch.buffers["out"])
        else:
            with np.errstate(all="ignore"):
                expected = spec.expected(b)
        fields, _ = spec.verdict(b, expected, ExecResult("ok", {self.out_buffer: got}))
        return fields, np.asarray(expected)

    # ----------------------------------------------------------------- float64 reference
    def reference64(self, ins: dict[str, np.ndarray]) -> np.ndarray:
        """The step's math in float64 on float64 logical operands (no rounding anywhere)."""
        op, root = self.op, self.op.root
        with np.errstate(all="ignore"):
            if root in ("cast", "ucopy"):
                return to_f64(ins["x"]).copy()
            if op.spec.elementwise:
                key = "u8-f64" if root == "where" else "f64"
                return to_f64(op.reference({n: to_f64(v) if n != "cond" else v for n, v in ins.items()},
                                           dict(self.step.params), key, op))
            if op.name == "matmul.gemm":
                return np.matmul(to_f64(ins["lhs"]), to_f64(ins["rhs"]))
            if op.name in ("conv.conv2d", "conv.conv2d_host"):
                g, _ = self.geometry()
                return conv2d_math(to_f64(ins["src"]), to_f64(ins["k"]), g["stride"], g["padding"], g["dilation"])
            if op.name == "pool.avg":
                g, _ = self.geometry()
                return np.mean(pool_windows(to_f64(ins["src"]), g["k"], g["s"]), axis=-1)
            if root == "softmax":
                x = to_f64(ins["src"])
                e = np.exp(x - np.max(x, axis=-1, keepdims=True))
                return e / np.sum(e, axis=-1, keepdims=True)
            if root == "rmsnorm":
                x = to_f64(ins["src"])
                y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)
                return y * to_f64(ins["alpha"]) if "alpha" in ins else y
            if root.startswith("rope"):
                return rope_reference(root, ins["src"], ins["cos"], ins["sin"], F64)
        raise ChainError(f"{self.step.label}: no float64 reference for {op.name}")

    def tolerance_ulps(self) -> float:
        """The op's own tolerance in ulps of its output dtype (0: exact, or a bound not in ulps)."""
        if self.op.name == "pool.avg":           # judged to 1 ulp (the kernel's accumulation order)
            return 1.0
        tol = self.op.tolerance
        return 0.0 if tol.exact else float(tol.ulp_for(self.out_tensor().dtype.name))

    def allowance(self) -> float:
        """What the op's own tolerance allows at its output, in units of its dtype's unit roundoff
        (2^-mantissa bits) relative to the output's scale: the tolerance in ulps plus the
        rounding of the output itself (matmul: its accumulation bound 2*sqrt(k)*eps_acc)."""
        out = self.out_tensor().dtype
        if not out.is_float:
            return 0.0
        if self.op.name == "matmul.gemm" or self.op.family == "conv":
            k = self.layouts["lhs"].shape[-1] if self.op.name == "matmul.gemm" else \
                math.prod(self.layouts["k"].shape[1:])
            return 2.0 * math.sqrt(k) * ACC_EPS[self.key] / unit(out) + 0.5
        return self.tolerance_ulps() + 0.5


def unit(dt: DType) -> float:
    """Unit roundoff scale of a float dtype: 2^-mantissa bits (one ulp of 1.0)."""
    return 2.0 ** -dt.mant_bits


def view64(ref: np.ndarray, o: Operand) -> np.ndarray:
    """An operand's views applied to a logical float64 tensor with NumPy (the reference does not
    go through layouts: a second, independent reading of the view syntax)."""
    x = ref
    for v in o.views:
        if v.kind == "transpose":
            x = np.swapaxes(x, *v.args)
        elif v.kind == "narrow":
            d, start, n = v.args
            x = np.take(x, np.arange(start, start + n), axis=d)
        elif v.kind == "reshape":
            x = x.reshape(v.args)
        else:
            x = np.broadcast_to(x, v.args)
    return np.ascontiguousarray(x)
