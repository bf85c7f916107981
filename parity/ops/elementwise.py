"""The spec of the elementwise families (unary, binary, affine, cast, ternary, fill): one case's
operands drawn over a layout class, the launch packed from the op's declared ABI (abi.pack), the
reference from `Op.reference`, the judgement by `compare`, and the CPU level's interpretation of
the launch. It implements the same `Spec` protocol as the structured families' `StructuredSpec`.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from parity.core.compare import compare, mark_outside_view
from parity.core.dtypes import DType
from parity.core.layouts import (LAYOUT_CLASSES, Layout, contiguous, distinct_positions, layout_names, logical,
                                 materialize, operand_layouts, strided)
from parity.core.numerics import scalar_to_dtype, to_f64
from parity.core.row import Verdict
from parity.core.tolerance import EXACT, Tolerance
from parity.core.values import generate
from parity.ops.abi import extract, pack
from parity.ops.base import Launch, Op, Operands, ShapeClass


@dataclass
class Built:
    """A case made concrete: operands in memory, the output layout, the scalar params."""
    case: Any                                # parity.run.cases.Case (the layer above names ops)
    op: Op
    operands: Operands
    params: dict[str, float]
    out_layout: Layout
    inplace: bool

    # Pickled without the op (its reference functions are closures): the case names it. Lets
    # engine.prepared_stream build cases in worker processes.
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "op"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.op = self.case.catalog_op

    @property
    def layouts(self) -> dict[str, Layout]:
        """Input operand layouts (over their base buffers)."""
        return self.operands.layouts

    @property
    def out_dtype(self) -> DType:
        return self.op.out_dtype(self.case.dtype)

    @property
    def out_geometry(self) -> Layout:
        """Where the result lies in the output buffer."""
        return self.out_layout


def operand_dtype(op: Op, key: str, k: int) -> DType:
    parts = op.dtype_parts(key)
    return parts[0] if k == 0 else parts[-1]


def copy2d_geometry(src: Layout) -> tuple[Layout, dict[str, int]]:
    """copy2d's destination and u32 parameters for a 2-D source view with unit inner stride.

    A contiguous source copies into a packed destination; any other source copies into a
    destination with its own row pitch and start offset, so swapped pitches are caught."""
    d1, d2 = src.shape
    if src.is_contiguous():
        dst = strided((d1, d2), (d2, 1), 0)
    else:
        dst = strided((d1, d2), (d2 + 5, 1), 3, slack=2)
    return dst, {"d1": d1, "d2": d2, "src_s": src.strides[0], "dst_s": dst.strides[0]}


def build(case) -> Built:
    op = case.catalog_op
    if case.dtype not in op.dtypes:
        raise KeyError(f"{op.name} has no dtype {case.dtype!r}; it has {', '.join(op.dtypes)}")
    cls = LAYOUT_CLASSES[case.layout]
    rng = np.random.default_rng([zlib.crc32(case.id.encode()), case.seed])
    layouts = operand_layouts(cls, max(1, len(op.inputs)))
    names = op.inputs
    dts, lays, bases, logi = {}, {}, {}, {}
    for k, name in enumerate(names):
        dt = operand_dtype(op, case.dtype, k)
        lay = layouts[k]
        vals = generate(dt, distinct_positions(lay), case.values, rng, op.domain.get(name))
        base = materialize(lay, dt, vals)
        dts[name], lays[name], bases[name], logi[name] = dt, lay, base, logical(base, lay)
    params = dict(case.params)
    out_layout = contiguous(cls.shape)
    if op.root == "copy2d":
        out_layout, geometry = copy2d_geometry(lays["src"])
        params.update(geometry)
    elif op.root == "const_set":
        out_layout = layouts[0]
    return Built(case, op, Operands(names, dts, lays, bases, logi), params, out_layout, cls.inplace)


def expected_output(b: Built, out_before: np.ndarray) -> np.ndarray:
    """The reference result in the form the executor's output will be read back."""
    op, key = b.op, b.case.dtype
    with np.errstate(all="ignore"):
        if op.out_mode == "buffer":
            inputs = {n: b.operands.logical[n] for n in b.operands.names}
            return op.reference(inputs, b.params, key, op, out_base=out_before, out_layout=b.out_layout)
        out = op.reference(dict(b.operands.logical), b.params, key, op)
    shape = b.operands.layouts[op.inputs[0]].shape
    return np.asarray(out, dtype=op.out_dtype(key).np).reshape(shape)


@dataclass(frozen=True, kw_only=True)
class ElementwiseOp(Op):
    """An op of an elementwise family: what its generic spec (ElementwiseSpec) derives cases,
    launches, the reference and the judging from."""
    reference: Callable[..., np.ndarray]     # (logical inputs dict, params, key, op) -> output
    tolerance: Tolerance = EXACT
    params_abi: tuple[str, ...] = ()         # names of scalar params, in ABI order
    domain: dict[str, str] = field(default_factory=dict)   # operand -> value domain
    inplace: bool = False                    # has the null-input in-place path
    out_mode: str = "dense"                  # "dense": out[i]; "buffer": the whole out buffer


def elementwise_op(*, reference64: Callable[[dict, dict], np.ndarray] | None = None, **fields: Any) -> ElementwiseOp:
    """An op of an elementwise family, with the spec its own fields define; `reference64` where its
    reference at key "f64" is not its math in float64 (see ElementwiseSpec.reference64)."""
    spec = ElementwiseSpec(reference64)
    op = ElementwiseOp(spec=spec, **fields)
    spec.op = op                             # the spec reads the op it belongs to
    return op


class ElementwiseSpec:
    """The `Spec` of an elementwise op, derived from its `Op` fields (see elementwise_op)."""
    elementwise = True
    library = ""                             # always a suite kernel
    op: ElementwiseOp

    def __init__(self, reference64: Callable[[dict, dict], np.ndarray] | None = None):
        self._reference64 = reference64

    @property
    def shapes(self) -> dict[str, ShapeClass]:
        return {}                            # cases run over the layout classes, not shape classes

    def layouts(self) -> list[str]:
        op = self.op
        names = layout_names(include_opt_in=True)
        if op.root == "copy2d":
            return ["contiguous", "narrowed"]
        if op.root == "fill":
            return [n for n in names if n in ("contiguous", "empty", "rank0", "huge") or n.startswith("len")]
        return [n for n in names if op.inplace or not LAYOUT_CLASSES[n].inplace]

    def tolerance(self, key: str) -> str:
        return self.op.tolerance.describe(self.op.out_dtype(key).name)

    def suite_kernels(self, key: str) -> tuple[str, ...]:
        return ()

    def bytes_moved(self, b: Built) -> None:
        return None                          # elementwise: timing.bytes_moved_built

    def prepare(self, case) -> tuple[Built, Launch, np.ndarray]:
        b = build(case)
        launch = pack(b.op, case.dtype, b.operands, b.params, inplace=b.inplace, out_layout=b.out_layout)
        return b, launch, expected_output(b, launch.buffers["out"])

    def describe(self, b: Built, expected: np.ndarray | None) -> dict:
        return {"numel": int(expected.size), "layouts": {n: b.operands.layouts[n].describe() for n in b.operands.names}}

    def row_fields(self, b: Built, res) -> dict:
        return {}

    def verdict(self, b: Built, expected: np.ndarray, res) -> tuple[dict, np.ndarray | None]:
        """Verdict fields from the executor's ExecResult, and the output it read."""
        op = b.op
        if res.status != "ok":
            return {"verdict": Verdict(res.status), "message": res.message}, res.outputs.get("out")
        got = extract(op, res.outputs["out"], expected.shape)
        inputs = b.operands.logical if op.out_mode == "dense" else None
        c = compare(expected, got, op.out_dtype(b.case.dtype), op.tolerance, inputs, b.operands.dtypes)
        if not c.passed:
            mark_outside_view(c.worst, b.operands.logical, b.operands.bases)
        out = {"verdict": Verdict.PASS if c.passed else Verdict.FAIL, "max_ulp": c.max_ulp, "n_bad": c.n_bad,
               "worst": c.worst.to_dict() if c.worst else None}
        if c.worst:
            out["message"] = f"{c.n_bad}/{c.n} elements off; worst {c.worst.one_line()}"
        return out, got

    def reference64(self, ins: dict[str, np.ndarray], params: dict) -> np.ndarray:
        """The op's math in float64 on float64 logical operands, no rounding anywhere (op chains'
        end-to-end reference): its reference at key "f64", or the family's own (cast, where)."""
        if self._reference64 is not None:
            return self._reference64(ins, params)
        return to_f64(self.op.reference({n: to_f64(v) for n, v in ins.items()}, params, "f64", self.op))

    def emulate(self, executor, launch: Launch, bufs: dict[str, np.ndarray], op: Op, key: str) -> None:
        """The CPU level: walk `info` and the pointers as the kernel does, through the executor's
        hooks (gather, compute, store, pointer_offset) so broken subjects can override one."""
        args = {a.name: a for a in launch.args}
        t = op.dtype_parts(key)[-1]
        numel = int(args["numel"].value) if "numel" in args else 0
        nd = int(args["num_dims"].value) if "num_dims" in args else 0
        info = args["info"].value if "info" in args else None
        out_name, out_off = args["out"].value
        out = bufs[out_name][executor.pointer_offset(out_off):]
        params = {n: a.value for n, a in args.items() if a.kind not in ("ptr", "info", "size_t")}

        if op.root == "const_set":
            value = scalar_to_dtype(params["value"], t)[0]
            if info is None:
                out[:numel] = value
            else:
                idx = executor.gather(np.arange(out.size), 0, info, nd, 0, numel)
                out[idx] = value
        elif op.root == "fill":
            out[:numel] = scalar_to_dtype(params["value"], t)[0]
        elif op.root == "copy2d":
            d1, d2, ss, ds = (int(params[k]) for k in ("d1", "d2", "src_s", "dst_s"))
            name, off = args["src"].value
            src = bufs[name][executor.pointer_offset(off):]
            r, c = np.divmod(np.arange(d1 * d2), d2) if d2 else (np.zeros(0, int), np.zeros(0, int))
            out[r * ds + c] = src[r * ss + c]
        else:
            inputs = {}
            for k, name in enumerate(op.inputs):
                ptr = args[name].value
                if ptr is None:                      # in place: the kernel reads out[i]
                    inputs[name] = out[:numel].copy()
                else:
                    inputs[name] = executor.gather(bufs[ptr[0]], executor.pointer_offset(ptr[1]), info, nd, k, numel)
            values = executor.compute(op, key, inputs, params)
            executor.store(out, np.asarray(values).reshape(-1))
