"""Synthetic results of a port in progress (no execution): a handful of planted root causes over
thousands of cases, and a worst case of thousands of distinct causes. For report tests and demos."""
from __future__ import annotations

from parity.core.layouts import LAYOUT_CLASSES, layout_names
from parity.run.results import Results

LEVELS = [{"level": "cpu", "available": True, "reason": "", "device": "NumPy ABI emulation"},
          {"level": "hip-on-nvidia", "available": True, "reason": "", "device": "NVIDIA H100 80GB HBM3"},
          {"level": "amd", "available": False, "reason": "hip-python not installed", "device": ""}]
DTYPES = ["f8_e4m3", "f16", "bf16", "f32", "f64", "u8"]
FLOATS = DTYPES[:-1]
VALUES = ["normal", "special", "large"]
UNARY = ["neg", "exp", "log", "sqrt", "tanh", "gelu", "silu", "abs", "sin", "cos", "recip", "relu"]
BINARY = ["add", "sub", "mul", "div", "minimum", "maximum"]
REDUCE = ["sum", "min", "max", "argmin", "argmax"]
SHAPES = ["row4000", "col33", "last1", "empty"]
SIG_EXPECTED = ["size_t", "size_t", "ptr", "ptr", "ptr", "f32", "f32"]
SIG_FOUND = ["size_t", "size_t", "ptr", "ptr", "ptr", "f32"]
COMPILE_MSG = ("port/binary.hip: port/binary.hip:42:17: error: use of undeclared identifier '__hmax_nan'\n"
               "   42 |     return __hmax_nan(a, b);\n1 error generated.")

# the planted causes, as the findings they must become: (cause, key)
PLANTED = [("compile-error", ("port/binary.hip",)), ("signature-mismatch",), ("crash", ("inplace",)),
           ("missing", ("copy.ucopy",)), ("missing", ("unary.tanh",)),
           ("fail", ("unary.exp", "bf16", "normal")), ("fail", ("reduce.max", "f16", "special"))]


def _row(op, family, kernel, dtype, layout, values, level, verdict="pass", **kw) -> dict:
    r = {"case_id": f"{op}/{dtype}/{layout}/{values}/s0", "op": op, "family": family, "kernel": kernel,
         "dtype": dtype, "layout": layout, "values": values, "seed": 0, "level": level, "verdict": verdict,
         "max_ulp": 0.0 if verdict == "pass" else None, "n_bad": 0, "numel": 2405, "worst": None, "message": "",
         "wall_ms": 0.5}
    r.update(kw)
    return r


def _hip(op, family, kernel, dt, lay, vc) -> dict:
    """The port's verdict for one case, from the planted causes."""
    row = lambda v, **kw: _row(op, family, kernel, dt, lay, vc, "hip-on-nvidia", v, **kw)  # noqa: E731
    if family == "binary":
        return row("compile-error", source="port/binary.hip", message=COMPILE_MSG)
    if op == "affine":
        return row("signature-mismatch", expected_params=SIG_EXPECTED, found_params=SIG_FOUND,
                   message=f"{kernel} declared with (size_t, size_t, ptr, ptr, ptr, f32)")
    if op == "copy.ucopy" and dt != "f32":
        return row("missing", message=f"no kernel {kernel} in port/; closest defined: ucopy_f32")
    if op == "unary.tanh":
        return row("missing", message=f"no kernel {kernel} in port/; closest defined: utan_{dt}")
    if family == "unary" and LAYOUT_CLASSES[lay].inplace:
        return row("crash", message="CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered")
    if op == "unary.exp" and dt == "bf16" and vc == "normal":
        ulp = 1.0 + (len(lay) % 3)
        return row("fail", max_ulp=ulp, n_bad=12, message=f"12/2405 elements off ({ulp:g} ulp)",
                   worst={"index": 7, "coords": [0, 7], "inputs": {"x": "1.0078125"}, "expected": "2.734375",
                          "got": "2.75", "ulps": ulp, "note": "round-to-nearest-even expected"})
    if op == "reduce.max" and dt == "f16" and vc == "special" and lay != "empty":
        return row("fail", max_ulp=float("inf"), n_bad=1, message="1/1 elements off (NaN dropped)",
                   worst={"index": 0, "coords": [0], "inputs": {"x[17]": "nan"}, "expected": "nan",
                          "got": "65504.0", "ulps": float("inf"), "note": ""})
    return row("pass")


def broken_port_rows() -> list[dict]:
    lays = layout_names()
    cases = []
    for u in UNARY:
        cases += [(f"unary.{u}", "unary", f"u{u}_{d}", d, lay, v) for d in FLOATS for lay in lays for v in VALUES]
    for b in BINARY:
        cases += [(f"binary.{b}", "binary", f"b{b}_{d}", d, lay, v) for d in DTYPES for lay in lays
                  if not LAYOUT_CLASSES[lay].inplace for v in VALUES]
    cases += [("affine", "affine", f"affine_{d}", d, lay, v) for d in DTYPES for lay in lays
              if not LAYOUT_CLASSES[lay].inplace for v in VALUES]
    cases += [("copy.ucopy", "copy", f"ucopy_{d}", d, lay, v) for d in DTYPES for lay in lays
              if not LAYOUT_CLASSES[lay].inplace for v in VALUES]
    cases += [(f"reduce.{r}", "reduce", f"fast_{r}_{d}", d, s, v) for r in REDUCE for d in FLOATS
              for s in SHAPES for v in VALUES]
    rows = [_row(*c, "cpu") for c in cases]
    rows += [_hip(*c) for c in cases]
    return rows


def broken_port() -> Results:
    return Results.from_rows(broken_port_rows(), {"sweep": "pr", "hip_src": "~/port", "levels": LEVELS,
                                                  "elapsed_s": 93.1})


def many_causes(n: int = 60_000) -> Results:
    """Worst case for report size: every failing row its own op, kernel, file, identifier and message."""
    verdicts = ["fail", "missing", "compile-error", "crash", "error", "mapping-gap", "signature-mismatch",
                "timeout", "oob-write", "input-clobbered", "pass", "pass"]
    rows = []
    for i in range(n):
        v = verdicts[i % len(verdicts)]
        op = f"fam{i % 40}.op{i}_" + "x" * 40
        kw = {}
        if v == "fail":
            kw = {"max_ulp": float(i), "worst": {"coords": [i, 1], "inputs": {"x": str(i) * 20}, "expected": "1.0",
                                                 "got": "2.0" * 30, "ulps": float(i), "note": ""}}
        elif v == "compile-error":
            kw = {"source": f"port/file{i}.hip"}
        elif v == "signature-mismatch":
            kw = {"expected_params": ["size_t"] * 12, "found_params": ["ptr"] * (i % 13)}
        msg = f"{v}: id_{i}_" + "y" * 200 + f" — port/file{i}.hip:{i}: error: something {i} " + "z" * 300
        rows.append(_row(op, f"fam{i % 40}", f"kernel_{i}_" + "k" * 30, DTYPES[i % 6], f"layout{i % 50}",
                         VALUES[i % 3], "hip-on-nvidia", v, message=msg, **kw))
    return Results.from_rows(rows, {"sweep": "nightly", "levels": LEVELS[1:2]})
