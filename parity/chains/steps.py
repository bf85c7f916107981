"""One chain step made concrete: the op's own launch and built record from input tensors (base
buffer + view), its float64 reference, and what its own tolerance allows.

Launches come from the op's own packing (elementwise `abi.pack`, the structured families'
`spec.pack`), so a step passes the same kernel names and arguments Candle would; a view between
steps is the operand's strides and offset over the producer's buffer. What else a structured op
needs to be a step (the host's checks on the operands' layouts, the geometry, the float64
reference, what its tolerance allows) its spec's `ChainSupport` says (parity/ops/base.py): nothing
here asks which op a step runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parity.chains.format import ChainError, Operand, Step, operand_layout
from parity.core.dtypes import DType, dtype
from parity.core.layouts import Layout, contiguous, logical
from parity.ops import CATALOG
from parity.ops.abi import pack
from parity.ops.base import ChainSupport, ExecResult, Op, Operands
from parity.ops.elementwise import Built, expected_output
from parity.ops.structured import HostRefused, StructuredBuilt


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
        self.layouts = {}
        for n, o in step.inputs.items():
            try:
                self.layouts[n] = operand_layout(tensors[o.tensor].layout, o)
            except ChainError as e:
                raise ChainError(f"{step.label}: in.{n} = {o.text()!r}: {e}") from None
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

    @property
    def support(self) -> ChainSupport | None:
        """A structured op's chain support (None: elementwise, or an op chains do not run yet)."""
        return None if self.op.spec.elementwise else self.op.spec.chain

    def _check(self) -> None:
        """What Candle's host requires before it launches (the chain must take the copies itself)."""
        op, s, lays, sup = self.op, self.step, self.layouts, self.support
        optional = sup.optional if sup else ()
        missing = [n for n in op.inputs if n not in lays and n not in optional]
        unknown = [n for n in lays if n not in op.inputs and n not in optional]
        if missing or unknown:
            extra = "".join(f" (+ {n})" for n in optional)
            raise ChainError(f"{s.label}: {op.name} takes {', '.join(op.inputs)}{extra}; "
                             f"missing {missing}, unknown {unknown}")
        for n in (sup.dense if sup else ()):
            if n in lays and not (lays[n].is_contiguous() and (lays[n].offset == 0 or not sup.dense_from_start)):
                raise ChainError(f"{s.label}: {op.name} needs a contiguous {n} (Candle's host checks it): "
                                 f"{s.inputs[n].text()} is {lays[n].describe()}; add a copy.ucopy step")
        if op.spec.elementwise and len({lay.shape for lay in lays.values()}) > 1:
            raise ChainError(f"{s.label}: operands of different shapes {sorted({l.shape for l in lays.values()})}; "
                             "broadcast them")
        if sup is not None:                  # a layout the host refuses (MatMulNonContiguous)
            try:
                sup.geometry(lays, s.params)
            except HostRefused as e:
                raise ChainError(f"{s.label}: Candle refuses this {op.family}: {e}") from None

    def out_tensor(self) -> Tensor:
        op, lay = self.op, self.layouts
        if op.spec.elementwise:
            first = lay[op.inputs[0]] if op.inputs[0] in lay else next(iter(lay.values()))
            return Tensor(op.out_dtype(self.key), tuple(first.shape))
        return Tensor(dtype(self.key), self.geometry()[1])

    def geometry(self) -> tuple[dict, tuple[int, ...]]:
        """(the family's geo record, as its pack and judge read it; the output shape)."""
        if self.support is None:
            raise ChainError(f"{self.step.label}: chains do not run {self.op.name} steps yet")
        return self.support.geometry(self.layouts, self.step.params)

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
        op, sup = self.op, self.support
        with np.errstate(all="ignore"):
            if op.spec.elementwise:
                return op.spec.reference64(ins, dict(self.step.params))
            if sup is not None:
                return sup.reference64(ins, self.geometry()[0])
        raise ChainError(f"{self.step.label}: no float64 reference for {op.name}")

    def tolerance_ulps(self) -> float:
        """The op's own tolerance in ulps of its output dtype (0: exact, or a bound not in ulps)."""
        tol = self.op.tolerance if self.op.spec.elementwise else self.support.tolerance
        return 0.0 if tol is None or tol.exact else float(tol.ulp_for(self.out_tensor().dtype.name))

    def allowance(self) -> float:
        """What the op's own tolerance allows at its output, in units of its dtype's unit roundoff
        (2^-mantissa bits) relative to the output's scale: the tolerance in ulps plus the
        rounding of the output itself (matmul, conv: their accumulation bound 2*sqrt(k)*eps_acc)."""
        out = self.out_tensor().dtype
        if not out.is_float:
            return 0.0
        sup = self.support
        if sup is not None and sup.acc_bound is not None:
            return sup.acc_bound(self.key, self.layouts) / unit(out) + 0.5
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
