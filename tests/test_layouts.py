"""Layouts read back the logical tensor exactly, poison never leaks, info is Candle's."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

from parity.run.cases import Case
from parity.ops.elementwise import build
from parity.core.dtypes import dtype
from parity.core.layouts import (LAYOUT_CLASSES, Layout, candle_info, layout_names, logical, materialize,
                            operand_layouts, strided)


@st.composite
def layouts(draw):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    strides = tuple(draw(st.lists(st.integers(0, 40), min_size=rank, max_size=rank)))
    offset = draw(st.integers(0, 7))
    return strided(shape, strides, offset, slack=draw(st.integers(0, 3)))


def _candle_is_contiguous(shape, strides):
    acc = 1
    for s, st_ in zip(reversed(shape), reversed(strides)):
        if s > 1 and st_ != acc:
            return False
        acc *= s
    return True


@given(layouts(), st.sampled_from(["f32", "bf16", "u8", "i64", "f8_e4m3"]))
@settings(max_examples=200, deadline=None)
def test_logical_view_matches_as_strided(lay: Layout, dt_name: str):
    dt = dtype(dt_name)
    n = int(np.unique(lay.flat_indices()).size)
    vals = np.arange(1, n + 1).astype(np.float64).astype(dt.np) if dt.is_float else \
        (np.arange(1, n + 1) % 100 + 1).astype(dt.np)
    base = materialize(lay, dt, vals)
    item = base.itemsize
    ref = as_strided(base[lay.offset:] if lay.base_size > lay.offset else base, shape=lay.shape,
                     strides=tuple(s * item for s in lay.strides)) if lay.numel else np.zeros(lay.shape, dt.np)
    got = logical(base, lay)
    assert got.shape == lay.shape
    assert np.array_equal(got.view(dt.bits_dtype), np.asarray(ref).view(dt.bits_dtype))


@given(layouts())
@settings(max_examples=200, deadline=None)
def test_poison_never_leaks_into_the_logical_view(lay: Layout):
    dt = dtype("f32")
    n = int(np.unique(lay.flat_indices()).size)
    base = materialize(lay, dt, np.ones(n, np.float32))
    assert not np.isnan(logical(base, lay)).any()
    reached = np.zeros(lay.base_size, bool)
    reached[lay.flat_indices().reshape(-1)] = True
    assert np.isnan(base[~reached]).all()                 # every gap is poisoned


@given(layouts(), layouts())
@settings(max_examples=200, deadline=None)
def test_info_is_what_candle_builds(a: Layout, b: Layout):
    b = strided(a.shape, b.strides[: a.rank] + (1,) * (a.rank - b.rank), b.offset)
    info = candle_info(a.shape, [a, b])
    both = _candle_is_contiguous(a.shape, a.strides) and _candle_is_contiguous(a.shape, b.strides)
    assert a.is_contiguous() == _candle_is_contiguous(a.shape, a.strides)
    if both:
        assert info is None
    else:
        assert info.dtype == np.uint64
        assert info.tolist() == list(a.shape) + list(a.strides) + list(b.strides)
    w = candle_info(a.shape, [a, b, a], always=True)         # where: never null, three stride arrays
    assert w.tolist() == list(a.shape) + list(a.strides) + list(b.strides) + list(a.strides)


def test_every_class_builds_distinct_views_per_operand():
    for name in layout_names():
        cls = LAYOUT_CLASSES[name]
        lays = operand_layouts(cls, 3)
        assert all(l.shape == cls.shape for l in lays)
    tr = operand_layouts(LAYOUT_CLASSES["transposed"], 3)
    assert len({l.strides for l in tr}) == 3


def test_integer_poison_is_0xa5():
    b = build(Case.parse("binary.add/u32/stepped/normal/s0"))
    base, lay = b.operands.bases["lhs"], b.operands.layouts["lhs"]
    reached = np.zeros(lay.base_size, bool)
    reached[lay.flat_indices().reshape(-1)] = True
    assert (base[~reached] == 0xA5A5A5A5).all()


def test_cases_are_deterministic():
    a = build(Case.parse("unary.exp/f32/transposed/special/s0")).operands.bases["x"]
    b = build(Case.parse("unary.exp/f32/transposed/special/s0")).operands.bases["x"]
    c = build(Case.parse("unary.exp/f32/transposed/special/s1")).operands.bases["x"]
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32)) and not np.array_equal(a, c)


def test_special_values_include_subnormals_and_infinities():
    x = build(Case.parse("unary.neg/f32/contiguous/special/s0")).operands.logical["x"].astype(np.float64)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
    assert ((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)).any()
    assert (np.signbit(x) & (x == 0)).any()
