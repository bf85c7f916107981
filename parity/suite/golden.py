"""Check the CPU reference against measured outputs of Candle's CUDA kernels (bit patterns)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parity.core import resources
from parity.core.numerics import bits_of, from_bits, ulp_order
from parity.ops import expected_kernels
from parity.ops.elementwise import operand_dtype


@dataclass
class GoldenResult:
    entry: str
    kernel: str
    n: int
    bit_exact: int           # elements whose bits match (NaN: any NaN matches a NaN)
    within_budget: int       # elements within the op's tolerance
    worst_ulp: float
    exact_required: bool     # non-transcendental: every element must match bit for bit

    @property
    def ok(self) -> bool:
        return self.bit_exact == self.n if self.exact_required else self.within_budget == self.n


# Measured on an H200 from Candle 2a13b0f's kernels (format: docs/golden-data.md).
DEFAULT = resources.data_dir() / "cuda-golden-elementwise.json"


def summary(path: Path = DEFAULT) -> dict:
    """Counts for reports: launches within budget, bit-exact launches, element totals."""
    rs = check(path)
    return {"entries": len(rs), "ok": sum(r.ok for r in rs), "bit_exact": sum(r.bit_exact == r.n for r in rs),
            "elements": sum(r.n for r in rs), "elements_bit_exact": sum(r.bit_exact for r in rs),
            "failing": [r.entry for r in rs if not r.ok]}


def check(path: Path = DEFAULT) -> list[GoldenResult]:
    data = json.loads(Path(path).read_text())["kernels"]
    kernels = expected_kernels()
    results = []
    for entry, e in sorted(data.items()):
        op, key = kernels[e["kernel"]]
        out_dt = op.out_dtype(key)
        params = {}
        if "@" in entry:
            vals = [float(v) for v in entry.split("@")[1].split(",")]
            params = dict(zip(op.params_abi, vals))
        if "param" in e:
            params = {"param": float(e["param"])}
        inputs = {name: from_bits(e[name], operand_dtype(op, key, k)) for k, name in enumerate(op.inputs)}
        with np.errstate(all="ignore"):
            expected = op.reference(inputs, params, key, op)
        got = from_bits(e["out"], out_dt)
        eb, gb = bits_of(expected, out_dt), bits_of(got, out_dt)
        same = eb == gb
        if out_dt.is_float:
            en, gn = np.isnan(expected.astype(np.float64)), np.isnan(got.astype(np.float64))
            same |= en & gn
            ulps = np.abs(ulp_order(eb, out_dt) - ulp_order(gb, out_dt)).astype(np.float64)
            ulps[en & gn] = 0
            ulps[en != gn] = np.inf
            tol = op.tolerance
            with np.errstate(invalid="ignore"):
                diff = np.abs(expected.astype(np.float64) - got.astype(np.float64))
            within = same.copy()
            if not tol.exact:      # (~ on a Python bool is -1 or -2, not its negation)
                within |= ((ulps <= tol.ulp_for(out_dt.name)) |
                           (np.nan_to_num(diff, nan=np.inf) <= tol.atol_for(out_dt.name)))
            if tol.signed_zero:
                within &= ~((expected.astype(np.float64) == 0) & (np.signbit(expected) != np.signbit(got)))
            worst = float(ulps.max()) if ulps.size else 0.0
        else:
            within = same
            worst = float((~same).sum())
        exact_required = op.tolerance.exact or op.tolerance.ulp_for(out_dt.name) == 0
        results.append(GoldenResult(entry, e["kernel"], int(got.size), int(same.sum()), int(within.sum()),
                                    worst, exact_required))
    return results
