"""Op chains (issue #19): the format, the bundled chains on the cpu level, the budget, and broken
ports caught by chains and attributed to the exact step."""
from __future__ import annotations

import numpy as np
import pytest

from parity.run.cases import Case, Filters, load_sweep
from parity.chains import ChainError, chains
from parity.chains.format import View, apply_view, parse_chain, parse_operand
from parity.chains.spec import analyse, budgets
from parity.run.engine import prepare_case, run_case, run_cases
from parity.executors.cpu import CpuExecutor
from parity.core.layouts import contiguous
from parity.run.results import Results

from fakes import Bf16Truncation, InPlaceRmsnorm, PlantedUlpBias, TransposeLostBetweenSteps
from runs import meta

BUNDLED = [f"{name}/{dt}/s0" for name, op in chains().items() for dt in op.dtypes]


def test_bundled_chains_are_the_issue_list():
    assert set(chains()) == {"chain.cast-unary-where", "chain.attention", "chain.llama-block", "chain.conv-block"}
    assert all(op.dtypes == ("f32", "f16", "bf16") for op in chains().values())
    assert len(chains()["chain.llama-block"].spec.chain.steps) == 25


@pytest.mark.parametrize("case_id", BUNDLED)
def test_every_bundled_chain_passes_on_cpu(case_id):
    row = run_case(Case.parse(case_id), CpuExecutor())
    assert row["verdict"] == "pass", row["message"]
    steps = row["chain"]["steps"]
    assert all(s["own"] == "pass" and s["solo"] == "pass" for s in steps)
    assert all(s["drift"] <= s["budget"] for s in steps)
    assert row["chain"]["culprit"] is None and not row["chain"]["compounding"]


def test_chain_case_ids_round_trip_and_select():
    c = Case.parse("chain.llama-block/bf16/s0")
    assert (c.op, c.dtype, c.layout, c.values, c.seed) == ("chain.llama-block", "bf16", "chain", "normal", 0)
    assert c.id == "chain.llama-block/bf16/s0"
    with pytest.raises(ValueError, match="chain.<name>/dtype/sN"):
        Case.parse("chain.llama-block/bf16/chain/normal/s0")
    ids = [x.id for x in load_sweep("smoke", Filters(ops=["chain.*"]))]
    assert len(ids) == 12
    assert "chain.llama-block/bf16/s0" in ids
    assert not [x for x in load_sweep("smoke", Filters(ops=["unary.exp"])) if x.op.startswith("chain.")]
    assert {x.id for x in load_sweep("pr", Filters(ops=["chain.attention"]))} == {
        f"chain.attention/{dt}/s{s}" for dt in ("f32", "f16", "bf16") for s in (0, 1)}
    assert c.kernels >= {"cast_f32_bf16", "rmsnorm_bf16", "gemm_bf16", "rope_bf16", "softmax_bf16", "usilu_bf16"}


def test_views_are_candle_layouts():
    base = contiguous((1, 8, 2, 16))
    t = apply_view(base, View("transpose", (1, 2)))
    assert (t.shape, t.strides) == ((1, 2, 8, 16), (256, 16, 32, 1)) and not t.is_contiguous()
    n = apply_view(contiguous((24, 40)), View("narrow", (1, 4, 32)))
    assert (n.shape, n.strides, n.offset) == ((24, 32), (40, 1), 4)
    b = apply_view(contiguous((8, 8)), View("broadcast", (2, 8, 8)))
    assert (b.shape, b.strides) == ((2, 8, 8), (0, 8, 1))
    with pytest.raises(ChainError, match="non-contiguous"):
        apply_view(t, View("reshape", (2, 128)))
    assert parse_operand("k.reshape(1,8,2,16).transpose(1,2)").text() == "k.reshape(1,8,2,16).transpose(1,2)"
    with pytest.raises(ChainError, match="unknown view"):
        parse_operand("k.contiguous()")


def test_chain_errors_name_the_step():
    with pytest.raises(ChainError, match="step 1 .*reads 'nope'"):
        parse_chain({"tensors": {"x": {"shape": [4]}}, "steps": [{"op": "unary.exp", "in": {"x": "nope"}, "out": "y"}]})
    chain = parse_chain({"name": "bad", "dtypes": ["f32"], "tensors": {"x": {"shape": [4, 6]}},
                         "steps": [{"op": "nn.softmax", "in": {"src": "x.transpose(0,1)"}, "out": "y"}]})
    from parity.chains.spec import prepare
    with pytest.raises(ChainError, match=r"step 1 \(nn.softmax\): nn.softmax needs a contiguous src"):
        prepare(chain, Case("chain.bad", "f32", "chain", "normal"))
    bad = lambda steps: prepare(parse_chain({"name": "bad", "dtypes": ["f32"], "steps": steps, "tensors": {
        "a": {"shape": [4, 6]}, "b": {"shape": [6, 5]}}}), Case("chain.bad", "f32", "chain", "normal"))
    with pytest.raises(ChainError, match=r"step 1 \(binary.add\): binary.add takes lhs, rhs; missing \['rhs'\]"):
        bad([{"op": "binary.add", "in": {"lhs": "a"}, "out": "y"}])
    with pytest.raises(ChainError, match=r"step 1 \(matmul.gemm\): Candle refuses this matmul: MatMulNonContiguous"):
        bad([{"op": "matmul.gemm", "in": {"lhs": "a", "rhs": "b.narrow(1,0,4).narrow(0,0,6)"}, "out": "y"},
             {"op": "matmul.gemm", "in": {"lhs": "a.narrow(1,1,4)", "rhs": "y.narrow(0,0,4)"}, "out": "z"}])
    with pytest.raises(ChainError, match="operands of different shapes"):
        bad([{"op": "binary.add", "in": {"lhs": "a", "rhs": "b"}, "out": "y"}])


def test_budget_is_the_sum_of_the_dependencies_allowances():
    b = prepare_case(Case.parse("chain.attention/f16/s0")).built
    # f16: matmul 2*sqrt(32)*2^-23/2^-10 + 0.5, affine 0 + 0.5, add 0 + 0.5, softmax 2 + 0.5, matmul (k=16)
    mm = lambda k: 2 * np.sqrt(k) * 2.0 ** -23 / 2.0 ** -10 + 0.5
    want = [mm(32), mm(32) + 0.5, mm(32) + 1.0, mm(32) + 3.5, mm(32) + 3.5 + mm(16)]
    assert np.allclose(budgets(b), want)


def test_intermediates_are_in_the_result_and_chains_pickle():
    import pickle
    p = prepare_case(Case.parse("chain.llama-block/f16/s0"))
    q = pickle.loads(pickle.dumps(p))
    res = CpuExecutor().run(q.launch)
    assert res.status == "ok"
    assert {"xd", "n1", "q", "qr", "scores", "p", "h", "y"} <= set(res.outputs)
    assert "solo6:qh" in res.outputs
    rep = analyse(q.built, res.outputs)
    assert [s.index for s in rep.steps] == list(range(1, 26))


# ---------------------------------------------------------------- broken ports, exact attribution
def test_transpose_lost_between_steps_is_caught_at_the_scores_matmul():
    row = run_case(Case.parse("chain.llama-block/bf16/s0"), TransposeLostBetweenSteps())
    assert row["verdict"] == "fail"
    assert row["message"].startswith("chain llama-block/bf16 fails at step 11 (matmul.gemm): on the chain's own "
                                     "inputs: 128/128 elements off; worst at (1, 3, 1)")
    assert row["worst"]["coords"] == [1, 3, 1]
    assert (row["worst"]["expected"], row["worst"]["got"]) == ("0.06884765625", "-4.59375")
    assert row["chain"]["culprit"] == 11
    # the same port passes every single-op matmul case, transposed operands included
    single = run_cases(load_sweep("smoke", Filters(ops=["matmul.gemm"], dtypes=["f32", "f16"])),
                       TransposeLostBetweenSteps())
    assert single and all(r["verdict"] == "pass" for r in single)


def test_in_place_step_clobbering_a_later_input_is_named():
    row = run_case(Case.parse("chain.llama-block/bf16/s0"), InPlaceRmsnorm())
    assert row["verdict"] == "input-clobbered"
    assert row["message"] == ("chain llama-block/bf16: step 2 (nn.rmsnorm): rmsnorm_bf16 wrote into xd, which it "
                              "only reads; read later by step 18 (binary.add)")


def test_truncating_bf16_cast_is_attributed_to_the_cast():
    row = run_case(Case.parse("chain.llama-block/bf16/s0"), Bf16Truncation())
    assert row["verdict"] == "fail"
    assert row["message"].startswith("chain llama-block/bf16 fails at step 1 (cast): on the chain's own inputs: "
                                     "122/256 elements off; worst at (0, 1)")
    assert (row["worst"]["expected_bits"], row["worst"]["got_bits"]) == ("0x3d1c", "0x3d1b")
    assert run_case(Case.parse("chain.llama-block/f16/s0"), Bf16Truncation())["verdict"] == "pass"


def test_planted_one_ulp_bias_fails_the_chain_not_the_op():
    row = run_case(Case.parse("chain.attention/bf16/s0"), PlantedUlpBias())
    assert row["verdict"] == "fail"
    assert row["message"].startswith("chain attention/bf16 fails at step 4 (nn.softmax): on the chain's own inputs: "
                                     "biased, mean signed error +1.00 ulp over every element (limit ±0.50)")
    # every element is within softmax's own 2-ulp bf16 tolerance: the single-op cases pass
    single = run_cases(load_sweep("smoke", Filters(ops=["nn.softmax"], dtypes=["bf16"], values=["normal"])),
                       PlantedUlpBias())
    assert single and all(r["verdict"] == "pass" for r in single)


def test_compounding_drift_is_reported_with_growth(monkeypatch):
    """Every step within its own tolerance, the output past a (here deliberately tight) budget: the
    verdict says the drift compounds and lists it step by step."""
    import parity.chains.spec as spec
    monkeypatch.setattr(spec, "budgets", lambda b: [0.1] * len(b.builders))
    row = run_case(Case.parse("chain.attention/bf16/s0"), CpuExecutor())
    assert row["verdict"] == "fail"
    assert row["message"].startswith("chain attention/bf16: drift is compounding: every step passes on its own")
    growth = [s["drift"] for s in row["chain"]["steps"]]
    assert row["message"].endswith("drift per step: " + " -> ".join(f"{d:.3g}" for d in growth))
    assert row["chain"]["compounding"] and row["chain"]["culprit"] is None


def test_reports_show_chain_failures_with_the_drift_plot(tmp_path):
    from parity.render import html, junit, markdown
    rows = [run_case(Case.parse("chain.attention/bf16/s0"), PlantedUlpBias()),
            run_case(Case.parse("chain.attention/f16/s0"), CpuExecutor())]
    res = Results.from_rows(rows, meta())
    page = html.render(res)
    assert "drift from the float64 reference per step" in page and "4 nn.softmax → p" in page
    assert "fails at step 4 (nn.softmax)" in page
    assert "chain.attention/bf16/s0" in markdown.render(res)
    assert "chain.attention/bf16/s0" in junit.render(res)


def test_repro_keeps_every_intermediate(tmp_path):
    from parity.run import repro
    r = repro.run("chain.attention/bf16/s0", "cpu", out=tmp_path / "c.npz")
    assert r.verdict == "pass"
    z = np.load(tmp_path / "c.npz")
    for t in ("q", "k", "v", "mask", "scores", "scaled", "masked", "p", "att"):
        assert f"tensor_{t}" in z.files and f"ref64_{t}" in z.files
    assert z["ref64_p"].shape == (64, 16) and z["ref64_p"].dtype == np.float64


def test_a_chain_is_one_message_to_an_isolated_worker():
    """Through the worker process the GPU levels use: the whole chain (launch and every tensor back)
    in one request, pipelined behind and ahead of single-op cases."""
    from parity.executors.worker import IsolatedExecutor
    ex = IsolatedExecutor(CpuExecutor, timeout_s=60.0)
    try:
        cases = [Case.parse("chain.llama-block/bf16/s0"), Case.parse("unary.exp/f32/contiguous/normal/s0"),
                 Case.parse("chain.attention/f16/s0"), Case.parse("chain.conv-block/f32/s0")]
        rows = run_cases(cases, ex, "worker")
    finally:
        ex.close()
    assert [r["verdict"] for r in rows] == ["pass"] * 4, [r["message"] for r in rows]
    assert rows[0]["chain"]["steps"][-1]["out"] == "y"
