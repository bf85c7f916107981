"""A chain as a case: the `Spec` of `chain.<name>` ops (prepare, describe, verdict), its inputs,
its float64 reference, the budget and the drift attribution (docs/chains.md says how).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from parity.chains.format import Chain, TensorDecl
from parity.chains.steps import StepBuilder, Tensor, unit, view64
from parity.core.dtypes import DType, dtype
from parity.core.numerics import bits_of, round_float, to_f64, ulp_order
from parity.core.row import Verdict
from parity.ops.base import ChainLaunch, ChainStep, Launch, Op, ShapeClass

LAYOUT = "chain"                             # the layout slot of every chain case
BIAS_ULPS = 0.5                              # a step's mean signed error vs its own reference, in ulps,
                                             # beyond which it is biased (see bias())
BIAS_CLIP = 4                                # each element's signed error counts at most this many ulps


# --------------------------------------------------------------------------------- inputs
def input_values(decl: TensorDecl, dt: DType, rng: np.random.Generator) -> np.ndarray:
    """A chain input's values (float64, logical shape) before rounding to its dtype."""
    shape, kind = decl.shape, decl.values
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "weight":                     # Linear (out, in) / conv (out, in, kh, kw) weights:
        return rng.standard_normal(shape) / math.sqrt(math.prod(shape[1:]))   # unit-variance outputs
    if kind == "positive":
        return rng.uniform(0.5, 1.5, shape)
    if kind == "bool":
        return rng.integers(0, 2, shape).astype(np.float64)
    if kind == "causal-mask":                # (t, t): 0 on and below the diagonal, -inf above
        t = shape[-1]
        return np.where(np.arange(t)[None, :] <= np.arange(shape[-2])[:, None], 0.0, -np.inf)
    t, half = shape                          # rope tables (t, d/2), Llama's theta 10000
    ang = np.arange(t)[:, None] * 10000.0 ** (-np.arange(half)[None, :] / half)
    return np.cos(ang) if kind == "rope-cos" else np.sin(ang)


def to_dtype(x: np.ndarray, dt: DType) -> np.ndarray:
    """A float64 tensor stored in `dt`, flat (a contiguous base buffer)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    return round_float(x, dt).astype(dt.np) if dt.is_float else x.astype(dt.np)


# ------------------------------------------------------------------------------- the case
@dataclass
class ChainBuilt:
    """A chain case made concrete: tensors, each step's builder, the float64 reference of every
    tensor and each step's inputs from that reference (for the solo runs)."""
    case: object
    chain: Chain
    key: str
    tensors: dict[str, Tensor]
    builders: list[StepBuilder]
    ref: dict[str, np.ndarray]               # tensor -> float64 logical reference
    solo: list[dict[str, np.ndarray]]        # step -> tensor -> base buffer (reference, rounded)
    out_shape: tuple[int, ...] = ()


def prepare(chain: Chain, case) -> tuple[ChainBuilt, ChainLaunch, np.ndarray]:
    key = case.dtype
    if key not in chain.dtypes:
        raise KeyError(f"{chain.op_name} has no dtype {key!r}; it has {', '.join(chain.dtypes)}")
    rng = np.random.default_rng([zlib.crc32(case.id.encode()), case.seed])
    tensors, host, ref = {}, {}, {}
    for n, decl in chain.tensors.items():
        dt = dtype(decl.dtype.replace("{dt}", key))
        host[n] = to_dtype(input_values(decl, dt, rng), dt)
        tensors[n] = Tensor(dt, decl.shape)
        ref[n] = to_f64(host[n]).reshape(decl.shape)
    builders, steps, solo = [], [], []
    for step in chain.steps:
        sb = StepBuilder(step, step.key(key), tensors)
        ref[step.out] = sb.reference64({n: view64(ref[o.tensor], o) for n, o in step.inputs.items()})
        reads = {n: o.tensor for n, o in step.inputs.items()}
        inputs = {t: to_dtype(ref[t], tensors[t].dtype) for t in set(reads.values())}
        _, launch = sb.build({n: inputs[t] for n, t in reads.items()})
        tensors[step.out] = sb.out_tensor()
        builders.append(sb)
        steps.append(ChainStep(step.label, launch, reads, {sb.out_buffer: step.out}))
        solo.append(inputs)
    out = chain.output
    built = ChainBuilt(case, chain, key, tensors, builders, ref, solo, tensors[out].shape)
    launch = ChainLaunch(f"{chain.op_name}/{key}", [], host, (), (1, 1, 1), (1, 1, 1),
                         dtypes={n: t.dtype.name for n, t in tensors.items()}, steps=steps, solo=solo)
    return built, launch, ref[out]


# ------------------------------------------------------------------------------ judging
def drift(got: np.ndarray, ref: np.ndarray, dt: DType) -> tuple[float, int]:
    """(max error vs the float64 reference in units of dt's roundoff at the tensor's scale, the
    flat index where it is): |got - ref| / (2^-p (|ref| + rms(ref))). Equal infinities: 0."""
    g, r = to_f64(got).reshape(-1), to_f64(ref).reshape(-1)
    if not dt.is_float or g.size == 0:
        bad = g != r
        return (math.inf, int(np.argmax(bad))) if bad.any() else (0.0, 0)
    fin = np.isfinite(r)
    rms = float(np.sqrt(np.mean(r[fin] ** 2))) if fin.any() else 0.0
    with np.errstate(all="ignore"):
        err = np.where(g == r, 0.0, np.abs(g - r)) / (unit(dt) * (np.abs(r) + max(rms, 1e-30)))
    err = np.where(np.isnan(err), np.inf, err)
    i = int(np.argmax(err))
    return float(err[i]), i


def bias(got: np.ndarray, expected: np.ndarray, dt: DType, tol_ulps: float = 0.0) -> tuple[float, float]:
    """(mean signed error of `got` against the op's own expected output, in ulps of dt, each element's
    error clipped to ±BIAS_CLIP ulps; the limit). An unbiased kernel errs both ways. The clip keeps
    results near zero after cancellation (a GEMM's, where one absolute error is thousands of ulps)
    from deciding the mean; the limit is BIAS_ULPS, or an eighth of the op's tolerance when that is
    larger (an approximate rsqrtf may push a whole row one way), plus two standard errors."""
    if not dt.is_float or got.size == 0:
        return 0.0, math.inf
    g = np.asarray(got, dtype=dt.np).reshape(-1)
    e = np.asarray(expected, dtype=dt.np).reshape(-1)
    fin = np.isfinite(to_f64(g)) & np.isfinite(to_f64(e))
    n = int(fin.sum())
    if n == 0:
        return 0.0, math.inf
    d = np.clip(ulp_order(bits_of(g[fin], dt), dt) - ulp_order(bits_of(e[fin], dt), dt),
                -BIAS_CLIP, BIAS_CLIP).astype(np.float64)
    return float(np.mean(d)), max(BIAS_ULPS, tol_ulps / 8) + 2.0 * float(np.std(d)) / math.sqrt(n)


@dataclass
class StepReport:
    """One step judged three ways: on the chain's own intermediates (`own`), alone on the
    reference's inputs (`solo`), and its output's drift from the float64 reference."""
    index: int
    label: str
    op: str
    key: str
    out: str
    own: dict
    solo: dict
    bias_own: float
    bias_solo: float
    bias_limit: float
    bias_limit_solo: float
    drift: float
    budget: float

    def failure(self) -> str:
        """Why this step is out of its own budget ("" if it is not)."""
        for how, fields, b, limit in (("on the chain's own inputs", self.own, self.bias_own, self.bias_limit),
                                      ("on the reference's inputs", self.solo, self.bias_solo, self.bias_limit_solo)):
            if fields.get("verdict") != Verdict.PASS:
                return f"{how}: {fields.get('message') or fields.get('verdict')}"
            if abs(b) > limit:
                return (f"{how}: biased, mean signed error {b:+.2f} ulp over every element "
                        f"(limit ±{limit:.2f}); every element is within the op's own tolerance")
        return ""

    def to_dict(self) -> dict:
        return {"step": self.index, "op": self.op, "dtype": self.key, "out": self.out,
                "own": str(self.own.get("verdict")), "solo": str(self.solo.get("verdict")),
                "bias_own": round(self.bias_own, 4), "bias_solo": round(self.bias_solo, 4),
                "drift": _num(self.drift), "budget": _num(self.budget)}


def _num(x: float) -> float | None:
    return round(x, 4) if math.isfinite(x) else None


@dataclass
class ChainReport:
    steps: list[StepReport] = field(default_factory=list)
    culprit: StepReport | None = None
    why: str = ""

    @property
    def final(self) -> StepReport:
        return self.steps[-1]

    @property
    def compounding(self) -> bool:
        return self.culprit is None and not self.final.drift <= self.final.budget


def budgets(b: ChainBuilt) -> list[float]:
    """Each step output's end-to-end budget: the allowances (steps.StepBuilder.allowance) of the
    step and every step it depends on, converted to the output dtype's roundoff and summed."""
    producer = {s.out: i for i, s in enumerate(b.chain.steps)}
    deps: list[set[int]] = []
    for i, s in enumerate(b.chain.steps):
        d = {i}
        for o in s.inputs.values():
            if o.tensor in producer:
                d |= deps[producer[o.tensor]]
        deps.append(d)
    allow = [sb.allowance() * unit(sb.out_tensor().dtype) if sb.out_tensor().dtype.is_float else 0.0
             for sb in b.builders]
    out = []
    for i, sb in enumerate(b.builders):
        dt = sb.out_tensor().dtype
        out.append(sum(allow[j] for j in deps[i]) / unit(dt) if dt.is_float else 0.0)
    return out


def analyse(b: ChainBuilt, outputs: dict[str, np.ndarray]) -> ChainReport:
    rep = ChainReport()
    for i, (step, sb, budget) in enumerate(zip(b.chain.steps, b.builders, budgets(b))):
        dt = sb.out_tensor().dtype
        got = outputs[step.out]
        own, own_exp = sb.judge({n: outputs[o.tensor] for n, o in step.inputs.items()}, got)
        solo_got = outputs[f"solo{step.index}:{step.out}"]
        solo, solo_exp = sb.judge({n: b.solo[i][o.tensor] for n, o in step.inputs.items()}, solo_got)
        n = math.prod(sb.out_tensor().shape)
        tol = sb.tolerance_ulps()
        bo, limit = bias(got[:n], own_exp, dt, tol)
        bs, limit_s = bias(solo_got[:n], solo_exp, dt, tol)
        d, _ = drift(got[:n], b.ref[step.out], dt)
        rep.steps.append(StepReport(step.index, step.label, step.op, sb.key, step.out, own, solo, bo, bs,
                                    limit, limit_s, d, budget))
    for s in rep.steps:
        why = s.failure()
        if why:
            rep.culprit, rep.why = s, why
            break
    return rep


def verdict(b: ChainBuilt, res) -> tuple[dict, ChainReport | None]:
    name = f"chain {b.chain.name}/{b.key}"
    if res.status != "ok":                       # the executor named the step (run_chain)
        return {"verdict": Verdict(res.status), "message": f"{name}: {res.message}"}, None
    rep = analyse(b, res.outputs)
    fin = rep.final
    if rep.culprit is not None:
        c = rep.culprit
        within = "within" if fin.drift <= fin.budget else "out of"
        fields = {"verdict": Verdict.FAIL,
                  "message": f"{name} fails at {c.label}: {rep.why}; the output ends {fin.drift:.3g} roundoffs "
                             f"from the float64 reference, {within} the chain's budget {fin.budget:.3g}",
                  "worst": (c.own if c.own.get("verdict") != Verdict.PASS else c.solo).get("worst"),
                  "max_ulp": c.own.get("max_ulp")}
        return fields, rep
    growth = " -> ".join(f"{s.drift:.3g}" for s in rep.steps)
    if rep.compounding:
        return {"verdict": Verdict.FAIL,
                "message": f"{name}: drift is compounding: every step passes on its own, but the output is "
                           f"{fin.drift:.3g} roundoffs from the float64 reference (budget {fin.budget:.3g}); "
                           f"drift per step: {growth}"}, rep
    return {"verdict": Verdict.PASS,
            "message": f"{name}: output {fin.drift:.3g} roundoffs from the float64 reference "
                       f"(budget {fin.budget:.3g}); every step within its own tolerance and unbiased"}, rep


class ChainSpec:
    """The `Spec` of a chain op (ops/base.py): one case per dtype and seed, one ChainLaunch."""
    elementwise = False
    library = ""

    def __init__(self, chain: Chain):
        self.chain = chain

    @property
    def shapes(self) -> dict[str, ShapeClass]:
        return {LAYOUT: ShapeClass(LAYOUT, f"{len(self.chain.steps)} steps: {self.chain.doc}")}

    def layouts(self) -> list[str]:
        return [LAYOUT]

    def tolerance(self, key: str) -> str:
        return ("every step within its own tolerance and unbiased on the chain's and the reference's inputs; "
                "output within the summed step allowances of the float64 reference (docs/chains.md)")

    def suite_kernels(self, key: str) -> tuple[str, ...]:
        return ()

    def bytes_moved(self, built) -> None:
        return None                          # a chain is not timed as one launch

    def prepare(self, case) -> tuple[ChainBuilt, Launch, np.ndarray]:
        return prepare(self.chain, case)

    def describe(self, b: ChainBuilt, expected) -> dict:
        return {"numel": int(math.prod(b.out_shape)),
                "layouts": {f"{s.index}:{s.op}": ", ".join(f"{k}={o.text()}" for k, o in s.inputs.items())
                            for s in b.chain.steps}}

    def row_fields(self, b: ChainBuilt, res) -> dict:
        if res.status != "ok":
            return {"chain": {"failed_step": res.detail.get("chain_step")}}
        rep = analyse(b, res.outputs)
        return {"chain": {"steps": [s.to_dict() for s in rep.steps],
                          "culprit": rep.culprit.index if rep.culprit else None,
                          "compounding": rep.compounding}}

    def verdict(self, b: ChainBuilt, expected, res) -> tuple[dict, np.ndarray | None]:
        fields, _ = verdict(b, res)
        got = res.outputs.get(b.chain.output) if res.outputs else None
        return fields, got

    def emulate(self, executor, launch, bufs, op, key):
        raise TypeError("a chain is run by the executor (Executor.run_chain), step by step")


def chain_op(chain: Chain) -> Op:
    return Op(name=chain.op_name, family="chain", root="chain", dtypes=chain.dtypes, inputs=(),
              spec=ChainSpec(chain), value_classes=("normal",),
              semantics=f"{len(chain.steps)}-step chain: {chain.doc}")
