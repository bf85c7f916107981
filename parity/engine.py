"""Run cases on executors: build -> reference -> pack -> execute -> compare -> result row."""
from __future__ import annotations

import time
from typing import Callable, Iterable

import numpy as np

from .backends.base import Executor
from .cases import Built, Case, build
from .compare import compare
from .ops.abi import extract, pack


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


def run_structured(case: Case, executor: Executor, device: str = "") -> dict:
    """A case of a structured op (`Op.custom`): the op's own build/pack/expected/judge."""
    import zlib
    from .ops.structured import extract as s_extract
    t0 = time.perf_counter()
    op = case.op_spec
    spec = op.custom
    if case.dtype not in op.dtypes:
        raise KeyError(f"{op.name} has no dtype {case.dtype!r}; it has {', '.join(op.dtypes)}")
    if case.layout not in spec.shapes:
        raise KeyError(f"{op.name} has no shape class {case.layout!r}; it has {', '.join(spec.shapes)}")
    rng = np.random.default_rng([zlib.crc32(case.id.encode()), case.seed])
    b = spec.build(case, rng)
    row = {
        "case_id": case.id, "op": op.name, "family": op.family, "kernel": op.kernel_name(case.dtype),
        "dtype": case.dtype, "layout": case.layout, "values": case.values, "seed": case.seed,
        "params": dict(case.params), "level": executor.level, "device": device,
        "numel": int(np.prod(b.out_shape, dtype=np.int64)), "verdict": "", "max_ulp": None, "n_bad": 0,
        "worst": None, "message": "", "tolerance": spec.tolerance(case.dtype),
        "semantics": op.semantics, "divergences": list(op.divergences),
        "layouts": {n: lay.describe() for n, lay in b.layouts.items()}, "launch": "", "kernel_ms": None,
    }
    if b.refuse:                      # expected error: the host refuses before any launch
        row["verdict"] = "pass"
        row["message"] = f"expected error, not launched: {b.refuse}"
        row["wall_ms"] = (time.perf_counter() - t0) * 1e3
        return row
    launch = spec.pack(b)
    row["launch"] = launch.describe()
    with np.errstate(all="ignore"):
        expected = spec.expected(b)
    res = executor.run(launch)
    row["kernel_ms"] = res.time_ms
    if res.status != "ok":
        row["verdict"], row["message"] = res.status, res.message
    else:
        got = s_extract(b, res.outputs)
        with np.errstate(all="ignore"):
            c = spec.judge(expected, got, b)
        row["verdict"] = "pass" if c.passed else "fail"
        row["max_ulp"], row["n_bad"] = c.max_ulp, c.n_bad
        row["worst"] = c.worst.to_dict() if c.worst else None
        if c.worst:
            row["message"] = f"{c.n_bad}/{c.n} elements off; worst {c.worst.one_line()}"
        if b.notes:
            row["message"] = "; ".join([row["message"]] + b.notes if row["message"] else b.notes)
    row["wall_ms"] = (time.perf_counter() - t0) * 1e3
    return row


def run_case(case: Case, executor: Executor, device: str = "") -> dict:
    """One result row (a plain dict; the results module turns rows into a table)."""
    if case.op_spec.custom is not None:
        return run_structured(case, executor, device)
    t0 = time.perf_counter()
    b = build(case)
    op, key = b.op, case.dtype
    launch = pack(op, key, b.operands, b.params, inplace=b.inplace, out_layout=b.out_layout)
    expected = expected_output(b, launch.buffers["out"])
    row = {
        "case_id": case.id, "op": op.name, "family": op.family, "kernel": launch.kernel,
        "dtype": key, "layout": case.layout, "values": case.values, "seed": case.seed,
        "params": dict(case.params), "level": executor.level, "device": device,
        "numel": int(expected.size), "verdict": "", "max_ulp": None, "n_bad": 0, "worst": None,
        "message": "", "tolerance": op.tolerance.describe(op.out_dtype(key).name),
        "semantics": op.semantics, "divergences": list(op.divergences),
        "layouts": {n: b.operands.layouts[n].describe() for n in b.operands.names},
        "launch": launch.describe(), "kernel_ms": None,
    }
    res = executor.run(launch)
    row["kernel_ms"] = res.time_ms
    if res.status != "ok":
        row["verdict"], row["message"] = res.status, res.message
    else:
        shape = expected.shape
        got = extract(op, res.outputs["out"], shape)
        inputs = b.operands.logical if op.out_mode == "dense" else None
        c = compare(expected, got, op.out_dtype(key), op.tolerance, inputs, b.operands.dtypes)
        row["verdict"] = "pass" if c.passed else "fail"
        row["max_ulp"], row["n_bad"] = c.max_ulp, c.n_bad
        row["worst"] = c.worst.to_dict() if c.worst else None
        if c.worst:
            row["message"] = f"{c.n_bad}/{c.n} elements off; worst {c.worst.one_line()}"
    row["wall_ms"] = (time.perf_counter() - t0) * 1e3
    return row


def run_cases(cases: Iterable[Case], executor: Executor, device: str = "",
              on_row: Callable[[dict], None] | None = None) -> list[dict]:
    rows = []
    for case in cases:
        try:
            row = run_case(case, executor, device)
        except Exception as e:  # a tool bug on one case must not hide the others' results
            row = {"case_id": case.id, "op": case.op, "dtype": case.dtype, "layout": case.layout,
                   "values": case.values, "seed": case.seed, "level": executor.level,
                   "verdict": "error", "message": f"parity internal error: {type(e).__name__}: {e}"}
        rows.append(row)
        if on_row:
            on_row(row)
    return rows
