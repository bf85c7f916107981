"""argmin/argmax exactly as Candle's tree, for rows of any length.

The pr sweep judges rows longer than the block by "any index holding the extreme" (Candle's CPU
backend picks the first); the bundled suite's arg_held (backends/hip/reduce.hip) claims Candle's
exact pick there too: among the elements equal to the row's extreme M, the one whose v = i mod B
comes first with v's bits reversed, then the first of v's, unless a NaN leads some v (i < B). The
CPU test checks that claim against the tree's emulation
(cuda_block_reduce); the GPU test checks the kernels themselves on tie-, NaN- and inf-heavy rows.
"""
from __future__ import annotations

import numpy as np
import pytest

from parity.core.dtypes import dtype
from parity.core.numerics import to_f64
from parity.ops.base import Arg, Launch
from parity.ops.reduce import cuda_block_reduce
from parity.ops.structured import next_pow2

KINDS = ("argmax", "argmin")


def tree_key(i: np.ndarray, block: int) -> np.ndarray:
    """arg_held's order: v = i mod B with its log2(B) bits reversed, then i div B."""
    lg = block.bit_length() - 1
    v = i % block
    rev = np.zeros_like(v)
    for b in range(lg):
        rev |= ((v >> b) & 1) << (lg - 1 - b)
    return rev * (1 << 32) + i // block


def held_pick(kind: str, row: np.ndarray, block: int, dt) -> int | None:
    """The pick as arg_held finds it; None where it hands the row to the exact picks."""
    v = to_f64(row) if dt.is_float else row.astype(np.float64)
    if np.isnan(v[:block]).any():
        return None
    m = np.nanmax(v) if kind == "argmax" else np.nanmin(v)
    at = np.flatnonzero(v == m)
    return int(at[np.argmin(tree_key(at, block))])


def rows_for(dt, n_rows: int, el: int, block: int, rng) -> dict[str, np.ndarray]:
    """Rows whose pick depends on the tie rule, the NaN rule or the extremes of T."""
    def cast(a):
        return np.asarray(a).astype(dt.np)
    out = {"normal": cast(rng.standard_normal((n_rows, el)) * 100 if dt.is_float else rng.integers(0, 200, (n_rows, el))),
           "ties": cast(rng.integers(0, 3, (n_rows, el))),
           "constant": cast(np.full((n_rows, el), 7))}
    if dt.is_float:
        a = rng.standard_normal((n_rows, el))
        a[np.arange(n_rows), rng.integers(0, min(el, block), n_rows)] = np.nan   # a NaN leading some v
        out["nan_head"] = cast(a)
        out["mixed"] = cast(rng.choice([-np.inf, np.inf, np.nan, 0.0, -0.0, 1.0], (n_rows, el),
                                       p=[.15, .05, .02, .35, .3, .13]))
        t = rng.integers(0, 3, (n_rows, el)).astype(np.float64)
        if el > block:
            t[:, block:] = rng.choice([np.nan, 2.0, -np.inf], (n_rows, el - block))  # NaN past the head
        out["tail"] = cast(t)
    else:
        info = np.iinfo(dt.np)
        out["limits"] = cast(rng.choice([info.min, info.max, 0, 1], (n_rows, el)))
    return out


@pytest.mark.parametrize("dt_name", ["f32", "f16", "bf16", "u8", "i64"])
def test_held_order_is_candles_tree(dt_name):
    dt = dtype(dt_name)
    rng = np.random.default_rng(7)
    held = 0
    for el in (3, 100, 128, 1000, 1024, 1900, 4096, 5000):
        block = next_pow2(min(1024, el))
        for name, rows in rows_for(dt, 6, el, block, rng).items():
            for kind in KINDS:
                for row in rows:
                    got = held_pick(kind, row, block, dt)
                    if got is not None:
                        held += 1
                        assert got == cuda_block_reduce(kind, row, block, dt)[1], (kind, el, name, row[:16])
    assert held > 100          # the order is checked, not only the hand-offs


@pytest.mark.gpu
@pytest.mark.parametrize("dt_name", ["f32", "f16", "bf16", "f64", "u8", "u32"])
def test_bundled_arg_kernels_pick_as_candles_tree(level, dt_name):
    dt = dtype(dt_name)
    rng = np.random.default_rng(11)
    bad = []
    for n_rows, el in ((9, 100), (8, 128), (9, 1024), (5, 1900), (9, 2048), (7, 4096), (5, 8192), (3, 16384)):
        block = next_pow2(min(1024, el))
        for name, rows in rows_for(dt, n_rows, el, block, rng).items():
            for kind in KINDS:
                info = np.array([n_rows, el, el, 1], dtype=np.uint64)
                launch = Launch(f"fast_{kind}_{dt_name}",
                                [Arg("size_t", n_rows * el), Arg("size_t", el), Arg("size_t", 2), Arg("info", info),
                                 Arg("ptr", ("src", 0)), Arg("ptr", ("dst", 0))],
                                {"src": rows.reshape(-1).copy(), "dst": np.full(n_rows, 0xA5A5A5A5, dtype=np.uint32)},
                                ("dst",), grid=(n_rows, 1, 1), block=(block, 1, 1),
                                dtypes={"src": dt_name, "dst": "u32"})
                res = level.executor.run(launch)
                want = [cuda_block_reduce(kind, r, block, dt)[1] for r in rows]
                got = res.outputs["dst"].reshape(-1)[:n_rows].tolist() if res.status == "ok" else res.status
                if got != want:
                    bad.append(f"{kind} {n_rows}x{el} {name}: want {want}, got {got}")
    assert not bad, "\n".join(bad[:20])
