"""engine.prepared_stream: cases built by worker processes give the same rows as built in-process."""
import pickle

from parity.executors.cpu import CpuExecutor
from parity.run.cases import Filters, load_sweep
from parity.ops.elementwise import build
from parity.run.engine import POOL_MIN_CASES, prepare_case, prepared_stream, run_cases


def _cases():
    elementwise = load_sweep("pr", Filters(ops=["unary.exp", "binary.minimum", "cast"]))
    structured = load_sweep("pr", Filters(ops=["reduce.sum"]))
    return elementwise[:POOL_MIN_CASES + 100] + structured[:20] + elementwise[-50:]


def test_built_pickles_without_its_op():
    c = load_sweep("pr", Filters(ops=["unary.exp"]))[0]
    b = pickle.loads(pickle.dumps(build(c)))
    assert b.op is c.catalog_op


def test_structured_built_pickles_without_its_op():
    c = load_sweep("pr", Filters(ops=["reduce.sum"]))[0]
    p = pickle.loads(pickle.dumps(prepare_case(c)))
    assert p.built.op is c.catalog_op
    assert p.expected.tobytes() == prepare_case(c).expected.tobytes()


def test_pool_rows_equal_in_process_rows(monkeypatch):
    cases = _cases()
    streamed = list(prepared_stream(cases, jobs=2))
    assert len(streamed) == len(cases)
    assert all(p is not None for p in streamed)                       # every family goes through the pool
    for c, p in zip(cases, streamed):
        assert p.case == c
        assert p.expected.tobytes() == prepare_case(c).expected.tobytes()              # bit for bit
    keys = ("case_id", "verdict", "max_ulp", "n_bad", "message")
    monkeypatch.setenv("PARITY_PREPARE_JOBS", "2")
    pooled = [{k: r.get(k) for k in keys} for r in run_cases(cases, CpuExecutor())]
    monkeypatch.setenv("PARITY_PREPARE_JOBS", "1")
    serial = [{k: r.get(k) for k in keys} for r in run_cases(cases, CpuExecutor())]
    assert pooled == serial
    assert {r["verdict"] for r in pooled} == {"pass"}
