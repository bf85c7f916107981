"""Candle's argmin/argmax picks (parity's cuda_block_reduce, the CPU reference) in an order-free form:
where none of a row's first B elements is NaN, the pick is the row's extreme, NaN left out, at the
smallest key (bit-reversed i mod B, i div B). A port may fold the elements in any order under that
rule (docs/candle-kernel-abi.md); a NaN among the first B elements is where it must not."""
import numpy as np
from hypothesis import given, settings, strategies as st

from parity.core.dtypes import dtype
from parity.ops.reduce import cuda_block_reduce

from fakes_structured import order_free_pick

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan]


rows = st.integers(1, 3000).flatmap(lambda n: st.lists(st.sampled_from(SPECIAL), min_size=n, max_size=n))


@settings(max_examples=150, deadline=None)
@given(rows, st.sampled_from(["argmax", "argmin"]), st.sampled_from(["f32", "f16", "f64"]),
       st.booleans())
def test_candle_pick_is_the_extreme_at_the_smallest_tie_key_where_no_nan_leads(vals, kind, dt, nan_past_block):
    row = np.array(vals, dtype=np.float64)
    block = min(1024, 1 << (row.size - 1).bit_length())
    row[:block][np.isnan(row[:block])] = 1.0          # no NaN among the first B elements
    if nan_past_block and row.size > block:
        row[block + (row.size - block) // 2] = np.nan  # further on, never taken
    if np.isnan(row).all():
        return
    row = row.astype(dtype(dt).np)
    assert cuda_block_reduce(kind, row, block, dtype(dt))[1] == order_free_pick(kind, row, block)


def test_a_nan_among_the_first_elements_breaks_the_order_free_rule():
    """A NaN at row index t < B drops t+B, t+2B, ... from Candle's pick: the rule's premise matters."""
    block = 4
    row = np.array([0.0, np.nan, 0.0, 0.0, 0.0, 9.0, 0.0, 0.0], dtype=np.float32)  # 9 at 5 = 1 + B
    assert cuda_block_reduce("argmax", row, block, dtype("f32"))[1] == 0
    assert order_free_pick("argmax", row, block) == 5
