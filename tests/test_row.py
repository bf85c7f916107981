"""The result schema (parity/core/row.py) and the one spec protocol every op implements."""
import json

from parity.ops import CATALOG
from parity.ops.base import Spec
from parity.run.results import COLUMNS, Results
from parity.core.row import Row, Verdict


def test_every_op_has_a_spec():
    assert all(isinstance(op.spec, Spec) for op in CATALOG.values())
    kinds = {op.spec.elementwise for op in CATALOG.values()}
    assert kinds == {True, False}


def test_verdicts_serialise_as_their_names():
    assert Verdict.COMPILE_ERROR == "compile-error"
    assert json.dumps({"verdict": Verdict.PASS}) == '{"verdict": "pass"}'
    assert f"{Verdict.OOB_WRITE}" == "oob-write" and str(Verdict.FAIL) == "fail"


def test_row_dict_has_the_columns_then_what_applies():
    r = Row("unary.exp/f32/contiguous/normal/s0", "unary.exp", level="cpu", verdict=Verdict.PASS)
    assert list(r.to_dict()) == COLUMNS
    r.wave, r.bytes_moved, r.extra = 64, 8, {"source": "a.hip"}
    r.timing_note = "not timed"
    assert list(r.to_dict())[len(COLUMNS):] == ["wave", "source", "bytes_moved", "timing_note"]
    r.timing({"kernel_ms": 1.0, "samples": 10})
    d = r.to_dict()
    assert d["kernel_ms"] == 1.0 and d["samples"] == 10 and "pct_peak" in d


def test_rows_round_trip_through_results_json(tmp_path):
    rows = [Row("a/f32/contiguous/normal/s0", "a", level="cpu", verdict=Verdict.FAIL, n_bad=3).to_dict()]
    Results.from_rows(rows).to_json(tmp_path / "r.json")
    back = Results.from_json(tmp_path / "r.json").records()[0]
    assert back["verdict"] == "fail" and back["n_bad"] == 3
