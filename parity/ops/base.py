"""What every op declares, and the launch description every executor consumes."""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from parity.core.compare import mark_outside_view, mark_toward_exact
from parity.core.dtypes import DType, dtype
from parity.core.layouts import Layout
from parity.core.row import Verdict
from parity.core.tolerance import Tolerance

BLOCK = 1024  # cudarc LaunchConfig::for_num_elems: block 1024, grid ceil(n/1024)


@dataclass(frozen=True)
class Arg:
    """One kernel parameter, in ABI order.

    kind: "size_t" | "u32" | "i32" | "f32" | "f64" | "bool" | "scalar" (a T by value, `dtype`)
          | "ptr" (value = (buffer name, element offset) or None for null) | "info" (uint64 array or None)
    """
    kind: str
    value: Any
    dtype: str | None = None
    name: str = ""

    def ctype(self) -> str:
        """C type of the parameter, for signature checks against a suite."""
        if self.kind in ("ptr", "info"):
            return "ptr"
        if self.kind == "scalar":
            return self.dtype or "?"
        return self.kind


@dataclass
class Launch:
    kernel: str
    args: list[Arg]
    buffers: dict[str, np.ndarray]          # host base buffers, by name
    outputs: tuple[str, ...]                # buffers the kernel writes
    grid: tuple[int, int, int]
    block: tuple[int, int, int] = (BLOCK, 1, 1)
    shared_mem: int = 0
    dtypes: dict[str, str] = field(default_factory=dict)   # buffer name -> dtype name
    library: str = ""                       # host routine run by the executor, not a suite kernel
                                            # ("blas.gemm", "conv.host": parity/host/routines.py)
    typed: list[str] | None = None          # the parameters with each pointer's pointee, as the op's
                                            # profile knows them (`const size_t*`, `f16*`); None: unknown

    def describe(self) -> str:
        parts = []
        for a in self.args:
            if a.kind == "ptr":
                parts.append("null" if a.value is None else f"{a.value[0]}+{a.value[1]}")
            elif a.kind == "info":
                parts.append("null" if a.value is None else f"info{list(map(int, a.value))}")
            else:
                parts.append(f"{a.value}")
        return f"{self.kernel}<<<{self.grid}, {self.block}>>>({', '.join(parts)})"


@dataclass
class ExecResult:
    status: str                                   # "ok", or a verdict the executor decides itself: missing,
                                                  # compile-error, mapping-gap, signature-mismatch, crash,
                                                  # timeout, oob-write, input-clobbered, unavailable, refused
    outputs: dict[str, np.ndarray] = field(default_factory=dict)   # output base buffers after the launch
    message: str = ""                             # compiler message, fault text, suggestion, ...
    time_ms: float | None = None
    detail: dict = field(default_factory=dict)    # host-routine facts for the result row (conv route, ...)


def for_num_elems(n: int) -> tuple[int, int, int]:
    """cudarc LaunchConfig::for_num_elems, Candle's grid for elementwise kernels: block 1024, grid
    ceil(n/1024); an empty tensor still gets one block here, so the kernel's bounds are tested."""
    return (max(1, -(-n // BLOCK)), 1, 1)


@dataclass
class Operands:
    """A case's materialised inputs: base buffers, layouts and the logical views."""
    names: tuple[str, ...]
    dtypes: dict[str, DType]
    layouts: dict[str, Layout]
    bases: dict[str, np.ndarray]
    logical: dict[str, np.ndarray]


@dataclass(frozen=True)
class ShapeClass:
    """A structured op's geometry class: what a case's layout name means for that family
    (e.g. `row4000`: a (2, 4000) source reduced over its last dim). Names share the layout
    slot of a case ID (`op/dtype/layout/values/sN`)."""
    name: str
    doc: str
    geo: dict = field(default_factory=dict)     # family-specific geometry (shape, dims, ...)


@runtime_checkable
class Spec(Protocol):
    """How an op's cases are built, launched, judged and emulated: one protocol for every family
    (ops/elementwise.ElementwiseSpec, StructuredSpec). `built` is the family's record of a case made
    concrete (elementwise.Built, structured.StructuredBuilt); `res` an executor's ExecResult."""

    @property
    def elementwise(self) -> bool:
        """Launches packed from the op's declared ABI (timing's bytes model knows them)."""

    @property
    def shapes(self) -> dict[str, ShapeClass]:
        """The family's geometry classes (empty: cases run over the layout classes)."""

    @property
    def library(self) -> str:
        """Non-empty when launches are host routines (BLAS, im2col+GEMM), not suite kernels."""

    def layouts(self) -> list[str]:
        """Layout-slot names of this op's cases."""

    def tolerance(self, key: str) -> str:
        """How results are judged, for reports."""

    def suite_kernels(self, key: str) -> tuple[str, ...]:
        """Suite kernels a host routine launches (loaded before it runs)."""

    def prepare(self, case) -> tuple[Any, Launch | None, np.ndarray | None]:
        """(built, launch, expected); launch and expected None when Candle's host refuses the case
        before any launch (the refusal is the expected behaviour)."""

    def describe(self, built, expected: np.ndarray | None) -> dict:
        """Row fields known before the launch: numel, layouts."""

    def row_fields(self, built, res) -> dict:
        """Extra row fields from the executor's result (host-routine facts)."""

    def verdict(self, built, expected: np.ndarray | None, res) -> tuple[dict, np.ndarray | None]:
        """Verdict fields (verdict, message, max_ulp, n_bad, worst) and the output read back."""

    def bytes_moved(self, built) -> int | None:
        """Timing's bytes model of a non-elementwise case (None: the case is not timed)."""

    def emulate(self, executor, launch: Launch, bufs: dict[str, np.ndarray], op: "Op", key: str) -> Any:
        """The CPU level: interpret the launch like the kernel, writing into `bufs`; calls the
        executor's hooks so broken subjects can override one behaviour. May return the
        ExecResult of a host routine that ran its own launches."""


@dataclass(frozen=True)
class ChainSupport:
    """What op chains (parity/chains, docs/chains.md) need of a structured op to run it as a step
    whose operands are views of earlier steps' outputs; a `StructuredSpec` without one is an op
    chains do not run yet. The step's launch is the spec's own `pack` of the built record made
    from `geometry`, judged by the spec's own `expected` and `judge`.

    geometry(layouts, params) -> (geo, out_shape)   the family's geo record as its pack and judge
                          read it, from the operands' layouts and the step's scalar params, and the
                          output shape; raises HostRefused where Candle's host refuses the layouts
    reference64(ins, geo) -> np.ndarray   the op's math in float64 on float64 logical operands,
                          no rounding anywhere (the chain's end-to-end reference)
    acc_bound(key, layouts) -> float      for an op judged by an accumulation bound rather than
                          in ulps (matmul, conv: 2*sqrt(k)*eps_acc): that bound relative to the
                          output's scale, what the step may add to the chain's drift
    """
    geometry: Callable[[dict[str, Layout], dict[str, float]], tuple[dict, tuple[int, ...]]]
    reference64: Callable[[dict[str, np.ndarray], dict], np.ndarray]
    dense: tuple[str, ...] = ()              # operands the kernel reads as dense rows: Candle's host
                                             # requires them contiguous (the chain takes the copy)
    dense_from_start: bool = False           # ... at offset 0 too (the launch passes no offset: rope)
    optional: tuple[str, ...] = ()           # operands besides Op.inputs a step may give or leave
                                             # out (rmsnorm's alpha: a null pointer)
    tolerance: Tolerance | None = None       # its judge's budget in ulps, for the chain's (pool.avg:
                                             # 1 ulp); None: judged by acc_bound, or exactly
    acc_bound: Callable[[str, dict[str, Layout]], float] | None = None


def _host_routine(executor, launch: Launch, *_) -> None:
    raise TypeError(f"{launch.kernel} is a host routine: the executor runs it (parity/host/routines.py)")


@dataclass(frozen=True)
class StructuredSpec:
    """The `Spec` of launches that are not elementwise: custom grid/block/shared memory, custom
    `info`, u32 or several outputs, inputs of other shapes than the output. A family supplies:

    build(case, rng) -> StructuredBuilt   operands in memory + geometry (or `refuse`: the host
                                          errors out before launching, e.g. EmptyTensor)
    pack(built) -> Launch                 exactly what Candle's host code launches
    expected(built) -> np.ndarray         the reference result (logical shape)
    judge(expected, got, built) -> Comparison
    variant                               which kernel of its family the op is, as the family module
                                          declares it (reduce.Reduction, nn.NnKernel, ...): the facts
                                          a second implementation of the family (the cupy level) reads
    emulate, tolerance, row_fields, suite_kernels: as in `Spec`
    chain: ChainSupport                   optional: what op chains need to run the op as a step
    """
    shapes: dict[str, ShapeClass]
    build: Callable[..., Any]
    pack: Callable[..., Launch]
    expected: Callable[..., np.ndarray]
    judge: Callable[..., Any]
    emulate: Callable[..., Any] = _host_routine  # a `library` op's launches are run by the executor's
                                               # host sequence (parity/host), never emulated here
    tolerance: Callable[[str], str] = lambda key: "exact"
    library: str = ""                        # launches are host routines (BLAS, im2col+GEMM): no suite
                                             # kernel of that name, so coverage skips the op
    variant: Any = None                      # the family's declared kernel variant (None: the family
                                             # has one kernel, or the launch tells them apart)
    row_fields: Callable[..., dict] = lambda built, res: {}
    suite_kernels: Callable[[str], tuple[str, ...]] = lambda key: ()   # suite kernels a host routine
                                             # launches (loaded before it runs, under the compile limit)
    exact: Callable[..., np.ndarray] | None = None   # float64 truth without CUDA's intermediate
                                             # roundings (softmax, norms): names a port nearer it than CUDA
    bytes_moved: Callable[..., int | None] = lambda built: None   # timing's bytes model of a case
                                             # (None: not timed; the elementwise spec has its own)
    chain: ChainSupport | None = None        # None: op chains do not run this op yet
    elementwise = False

    def layouts(self) -> list[str]:
        return list(self.shapes)

    def prepare(self, case) -> tuple[Any, Launch | None, np.ndarray | None]:
        op = case.catalog_op
        if case.dtype not in op.dtypes:
            raise KeyError(f"{op.name} has no dtype {case.dtype!r}; it has {', '.join(op.dtypes)}")
        if case.layout not in self.shapes:
            raise KeyError(f"{op.name} has no shape class {case.layout!r}; it has {', '.join(self.shapes)}")
        rng = np.random.default_rng([zlib.crc32(case.id.encode()), case.seed])
        b = self.build(case, rng)
        if b.refuse and not b.refuse_check:  # expected error: refused before any launch
            return b, None, None
        launch = self.pack(b)
        with np.errstate(all="ignore"):
            expected = self.expected(b)
        return b, launch, expected

    def describe(self, b, expected: np.ndarray | None) -> dict:
        return {"numel": int(np.prod(b.out_shape, dtype=np.int64)),
                "layouts": {n: lay.describe() for n, lay in b.layouts.items()}}

    def verdict(self, b, expected: np.ndarray | None, res) -> tuple[dict, np.ndarray | None]:
        if b.refuse:                      # refuse_check: the executor's host code must refuse as well
            refused = res.status == "refused"
            verdict = Verdict.PASS if refused else Verdict.FAIL if res.status == "ok" else Verdict(res.status)
            return {"verdict": verdict,
                    "message": (f"refused as expected: {res.message}" if refused else
                                f"expected a refusal ({b.refuse}) but the executor computed a result"
                                if res.status == "ok" else res.message)}, None
        if res.status == "refused":       # the executor refused a layout Candle's host accepts
            return {"verdict": Verdict.FAIL, "message": f"refused a layout Candle accepts: {res.message}"}, None
        if res.status != "ok":
            return {"verdict": Verdict(res.status), "message": res.message}, None
        got = b.result(res.outputs)
        with np.errstate(all="ignore"):
            c = self.judge(expected, got, b)
        if not c.passed:
            self._explain(c, b, expected, got)
        out = {"verdict": Verdict.PASS if c.passed else Verdict.FAIL, "max_ulp": c.max_ulp, "n_bad": c.n_bad,
               "worst": c.worst.to_dict() if c.worst else None,
               "message": f"{c.n_bad}/{c.n} elements off; worst {c.worst.one_line()}" if c.worst else ""}
        stray = b.outside_view(res.outputs) if hasattr(b, "outside_view") else ""
        if stray:                         # right values, and a store into the storage before the view
            out["verdict"] = Verdict.FAIL if not c.passed else Verdict.OOB_WRITE
            out["message"] = "; ".join(m for m in (out["message"], stray) if m)
        if b.notes:
            out["message"] = "; ".join([out["message"]] + b.notes if out["message"] else b.notes)
        return out, got

    def _explain(self, c, b, expected: np.ndarray, got: np.ndarray) -> None:
        """What the failure says about its cause, on the worst element (compare.mark_*)."""
        mark_outside_view(c.worst, b.inputs, b.bases)
        if self.exact is not None and b.out_dtype is not None:
            with np.errstate(all="ignore"):
                mark_toward_exact(c.worst, c.bad, expected, got, self.exact(b), b.out_dtype)


@dataclass(frozen=True)
class Known:
    """An expected failure stated next to its op, as PyTorch OpInfo's DecorateInfo does: on `level`,
    the op's cases whose ID after the op name matches `cases` (a glob over dtype/layout/values/seed)
    fail, for `reason`. The baseline machinery applies it as a baseline entry wherever a run has
    such rows (xfail; xpass when one passes; with --strict an xpass fails the run)."""
    level: str
    cases: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Op:
    """One op of the catalog: the ABI it is launched with and the semantics it must have. What
    every family's op has; how it is built, judged and emulated is its `spec`'s. Elementwise
    families make `ElementwiseOp`s (ops/elementwise.py): the fields their one generic spec reads."""
    name: str                                # "unary.exp"
    family: str                              # module that packs its launches
    root: str                                # kernel-name root: "uexp", "cast", "where"
    dtypes: tuple[str, ...]                  # dtype keys: "f32", or "f32-u8" for cast/where
    inputs: tuple[str, ...]                  # operand names in ABI order
    spec: Spec = field(compare=False, repr=False)   # ElementwiseSpec (ops/elementwise.elementwise_op)
                                             # or the family's StructuredSpec
    param_sets: tuple[dict[str, float], ...] = ({},)   # each set is a case parameter (`@alpha=0`)
    fp8_spelling: str = "f8_e4m3"
    info_always: bool = False                # kernel dereferences info unconditionally
    value_classes: tuple[str, ...] = ("normal", "special")
    value_dtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (class, dtypes): a value class
                                             # that applies to these dtype parts only
    abi: tuple[str, ...] = ()                # parameter list: "numel", "num_dims", "info", operand
                                             # names, "out", or "name:type" scalars (T = the dtype)
    out_rule: str = "last"                   # output dtype: "last" dtype part, or a dtype name
    semantics: str = ""                      # one line: what the CUDA kernel computes
    divergences: tuple[str, ...] = ()        # where Candle's CPU backend differs, by design
    kernel: str = ""                         # the kernel's name when it has no dtype suffix
                                             # (quantize_q8_1, mul_mat_vec_q4_0_q8_1_cuda1)
    known: tuple[Known, ...] = ()            # expected failures of the kernels parity checks (Known)

    def dtype_parts(self, key: str) -> list[DType]:
        return [dtype(p) for p in key.split("-")]

    def values_for(self, key: str) -> tuple[str, ...]:
        """The value classes of the dtype key's cases."""
        only = dict(self.value_dtypes)
        return tuple(v for v in self.value_classes
                     if v not in only or any(p in only[v] for p in key.split("-")))

    def kernel_name(self, key: str) -> str:
        if self.kernel:
            return self.kernel
        return "_".join([self.root] + [d.spelling(self.fp8_spelling) for d in self.dtype_parts(key)])

    def out_dtype(self, key: str) -> DType:
        return self.dtype_parts(key)[-1] if self.out_rule == "last" else dtype(self.out_rule)

    def signature(self, key: str) -> list[str]:
        """C parameter types in ABI order ("size_t", "ptr", "f32", ...), for suite checks."""
        t = self.dtype_parts(key)[-1].name
        sig = []
        for p in self.abi:
            if p in ("numel", "num_dims"):
                sig.append("size_t")
            elif ":" in p:
                typ = p.split(":")[1]
                sig.append(t if typ == "T" else typ)
            else:
                sig.append("ptr")
        return sig


# ------------------------------------------------------------------------------- op chains
CHAIN_PREFIX = "chain."                      # op names of chains (parity/chains), never a suite kernel


@dataclass
class ChainStep:
    """One step of a chain: the launch of a catalog op, packed exactly as for a single case, whose
    buffers are bound to the chain's named tensors when the chain runs (views are the launch's
    strides and offsets over the producer's output buffer)."""
    label: str                               # "step 7 (nn.rope)"
    launch: Launch
    reads: dict[str, str]                    # launch buffer -> tensor it reads
    writes: dict[str, str]                   # launch output buffer -> tensor it produces


@dataclass
class ChainLaunch(Launch):
    """A whole chain as one request to an executor (`Executor.run_chain`): `buffers` holds the
    chain's input tensors; each step reads the tensors earlier steps produced on that executor.
    `solo[i]` holds step i's input tensors from the float64 reference (rounded to their dtypes):
    the executor also runs every step alone on them, for drift attribution."""
    steps: list[ChainStep] = field(default_factory=list)
    solo: list[dict[str, np.ndarray]] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.kernel}: " + "; ".join(f"{s.label} {s.launch.kernel}" for s in self.steps)
