"""Shared machinery of the structured (non-elementwise) families: reduce, nn, indexing, sort.

Each structured op's `Op.spec` is a `StructuredSpec` (ops/base.py) whose build -> pack -> expected
-> judge chain and `emulate` come from its family module. Everything here is family-neutral: the
built-case record, value drawing, launch helpers and a mask-based comparator that names the worst
element like `compare`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parity.core.compare import Comparison, Worst, _fmt, _sentinel_bits
from parity.core.dtypes import DType
from parity.core.layouts import Layout, contiguous, distinct_positions, logical, materialize, poison_fill
from parity.core.numerics import bits_of, round_float, to_f64, ulp_order
from parity.core.values import generate
from parity.ops.abi import sentinel_fill
from parity.ops.base import Op


class HostRefused(Exception):
    """Raised by an executor's host code (an op's `emulate`, a library routine) when Candle's host
    refuses the launch (e.g. MatMulNonContiguous): the executor answers ExecResult("refused")."""


@dataclass
class StructuredBuilt:
    """A structured case made concrete."""
    case: object
    op: Op
    key: str
    dtypes: dict[str, DType]                 # operand / buffer name -> dtype
    layouts: dict[str, Layout]               # input operand layouts (over `bases`)
    bases: dict[str, np.ndarray]             # input base buffers (poisoned gaps)
    inputs: dict[str, np.ndarray]            # logical inputs (what the reference sees)
    geo: dict                                # family geometry and host-computed parameters
    out_name: str = "dst"
    out_dtype: DType | None = None
    out_shape: tuple[int, ...] = ()
    out_offset: int = 0                      # pointer offset of the output inside its buffer
    out_init: np.ndarray | None = None       # output buffer before the launch (None: 0xA5 sentinel)
    refuse: str = ""                         # the host errors out: expected error, nothing launched
    unlaunchable: str = ""                   # no launch can express the case (with `refuse`): unavailable,
                                             # never a pass of an expected error
    refuse_check: bool = False               # with `refuse`: launch anyway; the executor must refuse
                                             # too (ExecResult "refused": pass; computing: fail)
    notes: list[str] = field(default_factory=list)

    # Pickled without the op (its reference functions are closures): the case names it. Lets
    # engine.prepared_stream build cases in worker processes.
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "op"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.op = self.case.catalog_op

    def result(self, outputs: dict[str, np.ndarray]) -> np.ndarray:
        """The logical result inside the output buffers an executor returned."""
        n = int(np.prod(self.out_shape, dtype=np.int64))
        return outputs[self.out_name][self.out_offset: self.out_offset + n].reshape(self.out_shape)

    def outside_view(self, outputs: dict[str, np.ndarray]) -> str:
        """'' when the output buffer around the result (what lies before a `dst + offset` view: in
        Candle, another tensor's storage) is as the launch found it, else what changed there."""
        buf, before = outputs.get(self.out_name), out_buffer(self)
        n = int(np.prod(self.out_shape, dtype=np.int64))
        if buf is None or buf.shape != before.shape or self.out_dtype is None or buf.size == n:
            return ""
        changed = bits_of(buf, self.out_dtype) != bits_of(before, self.out_dtype)
        changed[self.out_offset: self.out_offset + n] = False
        if not changed.any():
            return ""
        i = int(np.argmax(changed))
        was, now = _fmt(before[i], self.out_dtype), _fmt(buf[i], self.out_dtype)
        return (f"wrote outside its output view: {int(changed.sum())} element(s) of the buffer around it changed "
                f"(buffer index {i}, the view starts at {self.out_offset}: {was} -> {now})")

    @property
    def out_geometry(self) -> Layout:
        """Where the result lies in the output buffer."""
        return contiguous(tuple(self.out_shape), offset=self.out_offset)


def rng_values(dt: DType, n: int, value_class: str, rng: np.random.Generator,
               domain: str | None = None) -> np.ndarray:
    """Values for structured cases. `ties` draws from five values so ties are everywhere;
    `peaked` is one value with a sparse peak (softmax's rounding of x - max);
    `special` sprinkles NaN/±Inf/±0/subnormals over ~6% of normal values (sums and maxima stay
    meaningful, unlike the half-special tensors of elementwise cases)."""
    if value_class == "peaked":
        # one value almost everywhere, a peak every 4099th element (at most one in a row of the
        # sweeps' shapes): x - max rounds in T the same way all along such a row, so a softmax that sums
        # exp(x - max) unrounded (an online max and sum) lands 3-4 ulps from Candle's sum of e
        # rounded to T; values found by search for f16 and bf16. (For f32 the float sum of so many
        # equal terms is what shows: Candle's own softmax_f32 is 17 ulps off at (3, 3000).)
        peak, rest = (1.95, -2.5) if dt.name == "bf16" else (1.15, -4.1)
        v = np.full(n, rest)
        v[::4099] = peak
        return round_float(v, dt)                # a float class (Op.value_dtypes: f16, bf16)
    if value_class == "positive":
        return generate(dt, n, value_class, rng, domain)
    if value_class == "ties":
        pool = np.array([-2, -1, 0, 1, 2], dtype=np.float64)
        if not dt.is_float:
            pool = np.array([0, 1, 2, 3, 7], dtype=np.float64)
        v = rng.choice(pool, n)
        return round_float(v, dt) if dt.is_float else v.astype(dt.np)
    base = generate(dt, n, "normal", rng, domain)
    if value_class == "special" and n:
        if dt.is_float:
            sp = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0 ** (dt.emin - dt.mant_bits), 2.5]
            pool = round_float(np.array(sp, dtype=np.float64), dt, nan="keep")
        else:
            info = np.iinfo(dt.np)
            pool = np.array([info.max, info.min, 0, 1], dtype=dt.np)
        k = max(1, n // 16)
        where = rng.permutation(n)[:k]
        base[where] = pool[np.arange(k) % pool.size]
    return base


def make_input(dt: DType, layout: Layout, value_class: str, rng, domain=None) -> tuple[np.ndarray, np.ndarray]:
    """(base buffer, logical view) for one input operand."""
    vals = rng_values(dt, distinct_positions(layout), value_class, rng, domain)
    base = materialize(layout, dt, vals)
    return base, logical(base, layout)


def out_buffer(b: StructuredBuilt) -> np.ndarray:
    """The output base buffer before the launch: the given init or the 0xA5 sentinel."""
    n = int(np.prod(b.out_shape, dtype=np.int64)) + b.out_offset
    if b.out_init is not None:
        return b.out_init.copy()
    return sentinel_fill(b.out_dtype, n)


def next_pow2(n: int) -> int:
    """Rust usize::next_power_of_two (0 -> 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


# ------------------------------------------------------------------------------ judging
def mask_judge(expected: np.ndarray, got: np.ndarray, dt: DType, ok: np.ndarray,
               inputs: dict[str, str] | None = None, note: str = "",
               badness: np.ndarray | None = None, got_text=None) -> Comparison:
    """A Comparison from an elementwise verdict mask `ok` (same shape as expected)."""
    expected = np.asarray(expected)
    got = np.asarray(got)
    ok = np.asarray(ok, dtype=bool).reshape(-1)
    n = expected.size
    max_ulp = None
    eb = bits_of(np.asarray(expected, dtype=dt.np), dt).reshape(-1)
    gb = bits_of(np.asarray(got, dtype=dt.np), dt).reshape(-1)
    if dt.is_float and n:
        e64 = expected.astype(np.float64).reshape(-1)
        g64 = got.astype(np.float64).reshape(-1)
        ulps = np.abs(ulp_order(eb, dt) - ulp_order(gb, dt)).astype(np.float64)
        ulps[np.isnan(e64) & np.isnan(g64)] = 0.0
        ulps[np.isnan(e64) != np.isnan(g64)] = np.inf
        max_ulp = float(ulps.max())
    elif dt.is_float:
        max_ulp = 0.0
    n_bad = int((~ok).sum())
    if n_bad == 0:
        return Comparison(True, n, 0, max_ulp, None)
    if badness is None:
        if dt.is_float:
            badness = np.where(ok, 0.0, np.maximum(ulps, 1.0))
        else:
            d = np.abs(expected.reshape(-1).astype(np.float64) - got.reshape(-1).astype(np.float64))
            badness = np.where(ok, 0.0, np.maximum(d, 1.0))
    badness = np.where(ok, -1.0, np.asarray(badness, dtype=np.float64).reshape(-1))
    i = int(np.argmax(badness))
    coords = [int(c) for c in np.unravel_index(i, expected.shape)] if expected.ndim else []
    wnote = note
    if int(gb[i]) == _sentinel_bits(dt) and eb[i] != gb[i]:
        wnote = (note + "; " if note else "") + "unwritten: still the 0xA5 sentinel"
    g_txt = got_text(i) if got_text else _fmt(got.reshape(-1)[i], dt)
    shown = inputs(i, coords) if callable(inputs) else (inputs or {})
    worst = Worst(index=i, coords=coords, expected=_fmt(expected.reshape(-1)[i], dt), got=g_txt,
                  expected_bits=hex(int(eb[i])), got_bits=hex(int(gb[i])),
                  ulps=(float(ulps[i]) if dt.is_float else None), inputs=shown, note=wnote)
    return Comparison(False, n, n_bad, max_ulp, worst, np.flatnonzero(~ok))


def same_value(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal as numbers (±0 equal), NaN equal to NaN."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype.kind == "f" or str(a.dtype) in ("bfloat16",):
        a64, b64 = to_f64(a), to_f64(b)
        return (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
    return a == b


__all__ = ["HostRefused", "StructuredBuilt", "rng_values", "make_input", "out_buffer", "next_pow2",
           "mask_judge", "same_value", "contiguous", "poison_fill", "round_float"]
