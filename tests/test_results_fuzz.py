"""Fuzz: a real results.json with field types changed, row by row and in meta, through every command
that reads results files. Whatever the file holds, each command exits 0, 1 or 2 and never prints a
traceback: a row of the wrong types is skipped (and said), a meta field of the wrong type dropped
(and said), a file that is no results file refused in one line."""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runs
from parity.cli.main import main

# the row columns a results.json can hold (Row.to_dict, the engine's extra columns, a baseline's), and inside ones
EXTRA_ROWS = [
    {"verdict": "compile-error", "message": "k.hip:3: error: boom", "source": "k.hip"},
    {"verdict": "signature-mismatch", "expected_params": ["size_t", "ptr", "f32"], "found_params": ["int"]},
    {"verdict": "mapping-gap", "mapping_gap": "__shfl_xor"},
    {"verdict": "crash", "level": "hip-on-nvidia", "message": "an illegal memory access"},
    {"verdict": "xfail", "raw_verdict": "fail", "baseline_reason": "known, #12"},
    {"verdict": "pass", "level": "hip-on-nvidia", "wave": 64, "kernel_ms": 0.1, "timed": True, "time_p10": 0.09,
     "time_p90": 0.11, "samples": 12, "time_noise": 0.01, "time_converged": True, "timing_mode": "cold",
     "launch_bound": False, "launch_floor_ms": 0.004, "timing_verified": True, "time_source": "events-overhead",
     "event_ms": 0.11, "event_overhead_ms": 0.01, "gbps": 120.0, "peak_gbps": 3300.0, "pct_peak": 3.6, "ratio": 1.1,
     "ratio_vs": "cupy", "bytes_moved": 9620},
    {"case_id": "chain.attention/f32/s0", "op": "chain.attention", "family": "chain", "verdict": "fail",
     "chain": {"steps": [{"step": 0, "op": "matmul.gemm", "dtype": "f32", "out": "s", "own": "pass", "solo": "pass",
                          "bias_own": 0.1, "bias_solo": 0.0, "drift": 2.5, "budget": 1.0}],
               "culprit": 0, "compounding": False}},
]
EXTRA_META = {
    "levels": runs.LEVELS + [{"level": "amd", "available": False, "reason": "no ROCm", "device": "", "role": "executes"}],
    "filters": {"ops": ["binary.minimum", "unary.neg"]}, "profile": {"name": "candle", "title": "Candle", "how": "x",
                                                                       "notes": ["n"]},
    "planned_rows": 10, "interrupted": False, "compile_s": 0.1, "amd_targets": ["gfx90a"], "shard": "1/2",
    "port": {"description": "a port", "notes": []}, "timing": {"mode": "cold"}, "kind": "run", "cuda_src": None,
    "baseline": {"path": "k.toml", "entries": 1, "strict": False, "xfail": 1, "xpass": 0, "unused": []},
    "merge_conflicts": {"count": 1, "rule": "the worst verdict is kept", "first": [
        {"case_id": "unary.neg/f16/contiguous/normal/s0", "level": "cpu", "verdicts": {"a.json": "pass"},
         "kept": "pass"}]},
    "shards_missing": ["2/2"], "merged_from": ["a.json"], "shards": ["1/2"],
    "wave_evidence": [{"kernel": "k", "cases": ["c"], "verdicts64": ["fail"], "wave32": "pass", "suspect": True,
                       "static": ["k.hip:3: warpSize"]}],
    "static_notes": {"k": ["k.hip:3: warpSize"]}, "wave32_recheck": {"cases": 1, "failing": 0},
}


@lru_cache(maxsize=None)
def _base_text() -> str:
    """A real run (a broken binary.minimum fails, unary.neg passes) as results.json writes it, with a
    row of every other kind and every meta field parity writes."""
    from parity.run.results import Results
    res = runs.failing_run()
    rows = [dict(r) for r in res.records()]
    rows = rows[::4] + [r for r in rows if r["verdict"] == "fail"][:3]
    for i, extra in enumerate(EXTRA_ROWS):
        rows.append({**rows[i], **extra, "case_id": extra.get("case_id", rows[i]["case_id"] + f"@x={i}")})
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        Results.from_rows(rows, {**res.meta, **EXTRA_META}).to_json(Path(d) / "r.json")
        return (Path(d) / "r.json").read_text()


def base() -> dict:
    return json.loads(_base_text())


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6) | st.sampled_from(["inf", "-inf", "nan", "pass", "fail", "cpu", "f32", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8)
DEEP = json.loads("[" * 200 + "]" * 200)       # a value nested far deeper than any parity writes


def _commands(p: Path, good: Path, tmp: Path) -> list[list[str]]:
    return [["report", p], ["report", p, "--format", "html"], ["report", p, "--format", "junit"],
            ["report", p, "--format", "json"], ["merge", p, good, "-o", tmp / "m.json", "--allow-partial"],
            ["diff", good, p], ["diff", p, good], ["baseline", "update", p, "-o", tmp / "k.toml"]]


def _exits_cleanly(doc: dict, tmp: Path, which: int | None = None) -> None:
    p, good = tmp / "r.json", tmp / "good.json"
    p.write_text(json.dumps(doc))
    good.write_text(_base_text())
    cmds = _commands(p, good, tmp)
    for args in cmds if which is None else [cmds[which % len(cmds)]]:
        r = CliRunner().invoke(main, [str(a) for a in args])
        assert r.exit_code in (0, 1, 2), (args, r.exit_code, r.output[-2000:])
        assert "Traceback" not in r.output and "internal error" not in r.output, (args, r.output[-2000:])


def _set(container: dict, path: tuple[str, ...], value) -> None:
    """container[path[0]][path[1]]... = value, where the inside containers exist."""
    for k in path[:-1]:
        container = container.get(k) if isinstance(container, dict) else None
        if not isinstance(container, dict):
            return
    container[path[-1]] = value


def _row_paths() -> list[tuple[str, ...]]:
    rows = base()["results"]
    top = sorted({k for r in rows for k in r} | {"new_column"})
    inside = sorted({(k, j) for r in rows for k in ("worst", "chain", "params", "layouts") if isinstance(r.get(k), dict)
                     for j in r[k]})
    return [(k,) for k in top] + list(inside) + [("chain", "steps", "drift")]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_command_survives_a_row_field_of_any_type(data, tmp_path):
    doc = base()
    rows = doc["results"]
    path = data.draw(st.sampled_from(_row_paths()), "field")
    value = data.draw(VALUES | st.just(DEEP), "value")
    hit = data.draw(st.sampled_from(["one", "all"]), "rows")
    for r in (rows if hit == "all" else [rows[data.draw(st.integers(0, len(rows) - 1), "row")]]):
        if path[-1] == "drift" and isinstance(r.get("chain"), dict):
            for s in r["chain"].get("steps") or []:
                s["drift"] = value
        else:
            _set(r, path, value)
    _exits_cleanly(doc, tmp_path, data.draw(st.integers(0, 7), "command"))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_command_survives_a_meta_field_of_any_type(data, tmp_path):
    doc = base()
    key = data.draw(st.sampled_from(sorted(doc["meta"]) + ["new_field"]), "field")
    value = data.draw(VALUES | st.just(DEEP), "value")
    if isinstance(doc["meta"].get(key), list) and doc["meta"][key] and data.draw(st.booleans(), "inside"):
        doc["meta"][key][0] = value                 # a bad entry inside a good list (a level, a conflict)
    else:
        doc["meta"][key] = value
    _exits_cleanly(doc, tmp_path, data.draw(st.integers(0, 7), "command"))


# the tester's cases, each through every command
@pytest.mark.parametrize("path,value", [
    (("level",), None), (("op",), None), (("op",), ["unary.neg"]), (("op",), {"a": 1}), (("dtype",), ["f32"]),
    (("dtype",), {"a": 1}), (("device",), ["H100"]), (("device",), {"a": 1}), (("max_ulp",), [1.0]),
    (("max_ulp",), {"a": 1}), (("worst", "coords"), "0,1"), (("chain", "steps"), {"a": 1}),
])
def test_the_reported_row_fields_never_traceback(tmp_path, path, value):
    doc = base()
    for r in doc["results"][:3] + doc["results"][-3:]:
        _set(r, path, value)
    _exits_cleanly(doc, tmp_path)


@pytest.mark.parametrize("key", ["levels", "golden", "planned_rows", "elapsed_s", "filters", "profile", "environment"])
@pytest.mark.parametrize("value", [7, [1], "x", {"a": 1}])
def test_the_reported_meta_fields_never_traceback(tmp_path, key, value):
    doc = base()
    doc["meta"][key] = value
    _exits_cleanly(doc, tmp_path)


def test_json_nested_100000_deep_is_not_a_results_file(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text('{"schema": "parity.results/1", "meta": {}, "results": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    for args in _commands(p, p, tmp_path):
        r = CliRunner().invoke(main, [str(a) for a in args])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert r.output == f"Error: {p} is not a parity results file: JSON nested too deeply\n"
