"""Findings that name what happened (issue #30): a NaN that only parity's poisoned padding can have
put in the output is a read outside the view; a missing step kernel of a chain is named with its
step; a result outside CUDA's budget but nearer the float64 truth than CUDA is its own kind of
failure (still `fail`). Each on a deliberately broken cpu subject, with the exact verdict, finding
title and worst element."""
from __future__ import annotations

import numpy as np

from fakes import DropsStartOffset
from fakes_matmul_conv import ConvGemmReadsOriginalKernel
from parity.render import findings as fnd
from parity.run.cases import Case
from parity.core.compare import Worst, mark_toward_exact
from parity.core.dtypes import dtype
from parity.run.engine import run_case
from parity.executors.cpu import CpuExecutor
from parity.ops.base import ExecResult
from parity.run.results import Results

POISON = ("no input holds NaN in its view: parity's poison from outside the view reached the output")


def findings_of(rows: list[dict]) -> list[fnd.Finding]:
    res = Results.from_rows(rows, {"levels": []})
    return fnd.analyze(res.table, []).findings


# --------------------------------------------------------------------- reads outside its view
def test_conv_reading_a_noncontiguous_weight_as_contiguous_is_a_read_outside_its_view():
    """CUDA Candle's conv GEMM reads the sliced kernel's buffer as if packed: the poisoned gaps
    between the channel slices come in as NaN. The finding says so, not "NaN handling"."""
    row = run_case(Case.parse("conv.conv1d_host/f32/c1-kslice/normal/s0"), ConvGemmReadsOriginalKernel())
    assert row["verdict"] == "fail" and row["n_bad"] == 54
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == ([0, 1, 0], "-24.13575553894043", "nan")
    assert (w["kind"], w["note"]) == ("outside-view", POISON)
    [f] = findings_of([row])
    assert (f.cause, f.title) == ("fail", "reads outside its view: NaN from parity's poisoned padding reached the "
                                          "output: `conv.conv1d_host` f32, 1 case wrong (values: normal; "
                                          "layouts: c1-kslice)")
    assert f.detail == f"at (0, 1, 0) → expected `-24.13575553894043` got `nan`, inf ulp ({POISON})"


def test_elementwise_kernel_that_drops_the_start_offset_reads_outside_its_view():
    row = run_case(Case.parse("unary.neg/f32/narrowed/normal/s0"), DropsStartOffset())
    w = row["worst"]
    assert (row["verdict"], w["coords"], w["expected"], w["got"]) == ("fail", [0, 0], "-1.083400845527649", "nan")
    assert w["kind"] == "outside-view"
    [f] = findings_of([row])
    assert f.title.startswith("reads outside its view: NaN from parity's poisoned padding reached the output: "
                              "`unary.neg` f32, 1 case wrong")


class ExpNanAbove4(CpuExecutor):
    """exp that computes NaN itself (inf - inf) for x > 4: a NaN-handling bug, no read outside."""
    def compute(self, op, key, inputs, params):
        out = super().compute(op, key, inputs, params)
        if op.root == "uexp":
            out = np.where(inputs["x"] > 4, np.float32("nan"), out).astype(out.dtype)
        return out


def test_nan_computed_without_poison_to_read_stays_nan_handling():
    """A contiguous case has no gaps, so no poison: the NaN is the kernel's own arithmetic."""
    row = run_case(Case.parse("unary.exp/f32/contiguous/normal/s0"), ExpNanAbove4())
    w = row["worst"]
    assert row["verdict"] == "fail" and w["got"] == "nan" and "kind" not in w
    [f] = findings_of([row])
    assert f.title.startswith("`unary.exp` f32, NaN handling: 1 case wrong")


def test_nan_in_the_inputs_view_is_not_blamed_on_poison():
    """Special values put NaN inside the view: a NaN out may come from it, so it is NaN handling
    even though the narrowed layout's gaps hold poison."""
    row = run_case(Case.parse("unary.exp/f32/narrowed/special/s0"), ExpNanAbove4())
    w = row["worst"]
    assert (row["verdict"], w["coords"], w["inputs"], w["expected"], w["got"]) == (
        "fail", [0, 2], {"x": "inf"}, "inf", "nan")
    assert "kind" not in w
    [f] = findings_of([row])
    assert f.title == "`unary.exp` f32, NaN handling: 1 case wrong (values: special; layouts: narrowed)"


# ------------------------------------------------------------------- chains: the missing step
class NoHalfRmsnorm(CpuExecutor):
    """A port without rmsnorm_f16 / rmsnorm_bf16: llama-block's step 2 has no kernel."""
    def __init__(self):
        super().__init__()
        for k in ("rmsnorm_f16", "rmsnorm_bf16"):
            self._kernels.pop(k)


def test_chain_missing_step_kernel_is_named_with_its_step():
    rows = [run_case(Case.parse(f"chain.llama-block/{dt}/s0"), NoHalfRmsnorm()) for dt in ("f32", "f16", "bf16")]
    assert [r["verdict"] for r in rows] == ["pass", "missing", "missing"]
    assert rows[1]["message"] == ("chain llama-block/f16: step 2 (nn.rmsnorm): no kernel rmsnorm_f16 "
                                  "in the ABI emulation")
    [f] = findings_of(rows)
    assert (f.cause, f.title) == ("missing", "`chain.llama-block` step 2 (nn.rmsnorm): no kernel rmsnorm_f16, "
                                             "rmsnorm_bf16 (2 cases)")
    assert f.kernels == ("rmsnorm_f16", "rmsnorm_bf16") and f.example == "chain.llama-block/f16/s0"


def test_chain_missing_steps_on_a_gpu_level_keep_their_closest_names():
    """The worker's message (executors/worker.py: `{step.label}: {preflight message}`)."""
    def row(dt, label, kernel, close):
        return {"case_id": f"chain.llama-block/{dt}/s0", "op": "chain.llama-block", "family": "chain",
                "kernel": f"chain_{dt}", "dtype": dt, "layout": "chain", "values": "normal", "seed": 0,
                "level": "hip-on-nvidia", "verdict": "missing",
                "message": f"chain llama-block/{dt}: {label}: no kernel {kernel} in port/; closest defined: {close}"}
    rows = [row("f32", "step 1 (cast)", "cast_f32_f32", "cast_f32_f16"),
            row("f16", "step 2 (nn.rmsnorm)", "rmsnorm_f16", "rmsnorm_f32"),
            row("bf16", "step 2 (nn.rmsnorm)", "rmsnorm_bf16", "rmsnorm_f32")]
    got = [(f.title, f.detail) for f in findings_of(rows)]
    assert got == [("`chain.llama-block` step 2 (nn.rmsnorm): no kernel rmsnorm_f16, rmsnorm_bf16 (2 cases)",
                    "closest defined: rmsnorm_f32"),
                   ("`chain.llama-block` step 1 (cast): no kernel cast_f32_f32 (1 case)",
                    "closest defined: cast_f32_f16")]


# --------------------------------------------------------------- toward the exact value
class _Softmax16(CpuExecutor):
    """softmax_f16 computed by `rows` (float32 math) instead of the emulation of CUDA's kernel."""
    def rows(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self, launch):
        if launch.kernel != "softmax_f16":
            return super().run(launch)
        a = {x.name: x for x in launch.args}
        rows, n = int(launch.grid[0]), int(a["n_cols"].value)
        (src, so), (dst, do) = a["src"].value, a["dst"].value
        bufs = {k: v.copy() for k, v in launch.buffers.items()}
        with np.errstate(all="ignore"):
            bufs[dst][do:do + rows * n] = self.rows(bufs[src][so:so + rows * n].reshape(rows, n)).reshape(-1)
        return ExecResult("ok", outputs={k: bufs[k] for k in launch.outputs})


class SoftmaxRoundsOnce(_Softmax16):
    """exp and the scaling in float, one rounding to half at the end (Candle's CUDA kernel rounds
    x-max, exp, 1/sum and the product to half): nearer exact softmax than CUDA."""
    def rows(self, x):
        e = np.exp(x.astype(np.float32) - x.astype(np.float32).max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float16)


class SoftmaxSumMissesLastColumn(_Softmax16):
    """The sum loop stops one column early (`i < n_cols - 1`): every value too large."""
    def rows(self, x):
        e = np.exp(x.astype(np.float32) - x.astype(np.float32).max(axis=-1, keepdims=True))
        return (e / e[:, :-1].sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float16)


def test_softmax_rounding_once_is_a_divergence_toward_the_exact_value():
    """Outside CUDA's 2-ulp budget, so it fails (parity is CUDA's numbers), but every failing
    element is nearer the float64 softmax than CUDA's: its own finding, a rounding choice."""
    case = "nn.softmax/f16/c100/normal/s0"
    row = run_case(Case.parse(case), SoftmaxRoundsOnce())
    w = row["worst"]
    assert row["verdict"] == "fail" and row["n_bad"] == 236
    assert (w["coords"], w["expected"], w["got"], w["ulps"]) == ([4, 85], "0.0004436969757080078",
                                                                  "0.0004425048828125", 5.0)
    assert w["kind"] == "toward-exact" and w["exact"] == "0.00044252387338619833"
    assert round(w["ulps_from_exact"], 3) == 0.08 and round(w["cuda_ulps_from_exact"], 3) == 4.92
    assert w["note"] == "port 0.08 ulp from the exact value, CUDA 4.9 ulp"
    [f] = findings_of([row])
    assert (f.cause, f.title) == ("fail", "diverges from CUDA toward the exact value: `nn.softmax` f16, port 0.08 "
                                          "ulp from exact, CUDA 4.9 ulp (1 case; values: normal; layouts: c100)")
    assert f.detail == ("at (4, 85): src=-0.1697998046875 → expected `0.0004436969757080078` got "
                        "`0.0004425048828125`, exact `0.00044252387338619833`, 5 ulp "
                        "(port 0.08 ulp from the exact value, CUDA 4.9 ulp)")
    assert run_case(Case.parse(case), CpuExecutor())["verdict"] == "pass"


def test_genuinely_wrong_softmax_keeps_the_ordinary_fail_finding():
    row = run_case(Case.parse("nn.softmax/f16/c100/normal/s0"), SoftmaxSumMissesLastColumn())
    w = row["worst"]
    assert row["verdict"] == "fail" and row["n_bad"] == 1292
    assert (w["coords"], w["expected"], w["got"], w["ulps"]) == ([32, 37], "0.0002193450927734375",
                                                                  "0.0002371072769165039", 149.0)
    assert "kind" not in w and w["exact"] == "0.00021972329945780345" and w["note"] == ""
    [f] = findings_of([row])
    assert (f.cause, f.title) == ("fail", "`nn.softmax` f16, values: 1 case wrong (values: normal; layouts: c100)")


def test_both_softmax_ports_in_one_run_are_two_findings():
    rows = [run_case(Case.parse("nn.softmax/f16/offset/normal/s0"), sub())
            for sub in (SoftmaxRoundsOnce, SoftmaxSumMissesLastColumn)]
    assert [r["verdict"] for r in rows] == ["fail", "fail"]
    titles = sorted(f.title.split(":")[0] for f in findings_of(rows))
    assert titles == ["`nn.softmax` f16, values", "diverges from CUDA toward the exact value"]


def test_one_failing_element_farther_from_exact_than_cuda_is_no_divergence_toward_it():
    """Every failing element must be nearer the truth, not just the worst one."""
    f16 = dtype("f16")
    exact = np.array([1.0, 2.0])
    expected = np.array([1.0 + 5 * 2.0 ** -10, 2.0], dtype=np.float16)      # CUDA 5 ulp off at 0
    got = np.array([1.0, 2.0 + 8 * 2.0 ** -9], dtype=np.float16)          # port exact at 0, 8 ulp off at 1
    w = Worst(index=1, coords=[1], expected="2.0", got="2.015625", expected_bits="", got_bits="", ulps=8.0)
    mark_toward_exact(w, np.array([0, 1]), expected, got, exact, f16)
    assert (w.kind, w.ulps_from_exact, w.cuda_ulps_from_exact, w.exact) == ("", 8.0, 0.0, "2.0")
    w0 = Worst(index=0, coords=[0], expected="", got="", expected_bits="", got_bits="", ulps=5.0)
    mark_toward_exact(w0, np.array([0]), expected, got, exact, f16)
    assert (w0.kind, w0.ulps_from_exact, w0.cuda_ulps_from_exact) == ("toward-exact", 0.0, 5.0)
