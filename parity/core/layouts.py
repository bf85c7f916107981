"""Tensor layouts as Candle sees them: base buffer + shape + strides (elements) + start offset.

A layout class names a family of views real programs produce (transposed, narrowed,
broadcast, ...). Multi-operand ops get a *different* view per operand, so a kernel
that reuses one operand's strides for another reads the wrong elements.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from parity.core.dtypes import DType


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    base_size: int

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_contiguous(self) -> bool:
        """Candle's rule: every dim of size > 1 has the row-major stride; size-1 dims are ignored."""
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size > 1 and stride != expected:
                return False
            expected *= size
        return True

    def flat_indices(self) -> np.ndarray:
        """Base-buffer index of every logical element, in row-major logical order (shape `shape`)."""
        idx = np.full(self.shape, self.offset, dtype=np.int64)
        for d, (size, stride) in enumerate(zip(self.shape, self.strides)):
            view = [1] * self.rank
            view[d] = size
            idx = idx + (np.arange(size, dtype=np.int64) * stride).reshape(view)
        return idx

    def describe(self) -> str:
        return f"shape={list(self.shape)} strides={list(self.strides)} offset={self.offset}"


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return tuple(reversed(strides))


def contiguous(shape: tuple[int, ...], offset: int = 0) -> Layout:
    return Layout(tuple(shape), row_major(shape), offset, offset + prod(shape))


def _extent(shape, strides, offset) -> int:
    if prod(shape) == 0:
        return offset
    return offset + sum((s - 1) * st for s, st in zip(shape, strides)) + 1


def strided(shape, strides, offset=0, slack=0) -> Layout:
    """A view with explicit strides; the base holds everything it touches (plus slack)."""
    shape, strides = tuple(shape), tuple(strides)
    return Layout(shape, strides, offset, _extent(shape, strides, offset) + slack)


def permuted(shape: tuple[int, ...], perm: tuple[int, ...], offset: int = 0) -> Layout:
    """View of shape `shape` over a contiguous base whose dims are `shape` permuted by `perm`."""
    base_shape = tuple(shape[p] for p in perm)
    base_strides = row_major(base_shape)
    strides = [0] * len(shape)
    for base_dim, logical_dim in enumerate(perm):
        strides[logical_dim] = base_strides[base_dim]
    return Layout(tuple(shape), tuple(strides), offset, offset + prod(shape))


def transposed(shape) -> Layout:
    return permuted(shape, tuple(reversed(range(len(shape)))))


def stepped(shape, step: int = 2, offset: int = 3) -> Layout:
    """Every dim stepped by `step` (Python's a[::2, ::2]) with a start offset: gaps everywhere."""
    base_shape = [s * step for s in shape]
    base_strides = row_major(tuple(base_shape))
    return strided(shape, [st * step for st in base_strides], offset)


def narrowed(shape) -> Layout:
    """A block cut out of a larger tensor: rows and columns skipped at both ends."""
    base_shape = [s + 3 for s in shape]
    strides = row_major(tuple(base_shape))
    offset = sum(2 * st for st in strides)
    return strided(shape, strides, offset, slack=strides[0] if strides else 0)


def broadcast(shape, dims: tuple[int, ...], offset: int = 1) -> Layout:
    """Stride 0 on `dims` (Candle's broadcast_as), contiguous elsewhere."""
    kept = tuple(1 if d in dims else s for d, s in enumerate(shape))
    strides = tuple(0 if d in dims else st for d, st in enumerate(row_major(kept)))
    return strided(shape, strides, offset)


def unit_dims(shape) -> Layout:
    """Size-1 dims carry odd strides; Candle still calls it contiguous."""
    strides = list(row_major(shape))
    strides = [999 if s == 1 else st for s, st in zip(shape, strides)]
    return strided(shape, strides, 0)


@dataclass(frozen=True)
class LayoutClass:
    name: str
    shape: tuple[int, ...]
    kinds: tuple[str, ...]   # view kind per operand, cycled: operand k gets kinds[k % len]
    inplace: bool = False
    opt_in: bool = False     # not in "all": huge cases need many GiB
    doc: str = ""
    bench: bool = False      # bench-sized (timing) shape: GPU levels only, never the cpu level


def view(kind: str, shape: tuple[int, ...]) -> Layout:
    """Build one view kind for a logical shape."""
    if kind == "contig":
        return contiguous(shape)
    if kind == "offset":
        return contiguous(shape, offset=5)
    if kind == "transposed":
        return transposed(shape)
    if kind == "swap":  # t() of the last two dims (batched transpose)
        r = len(shape)
        return permuted(shape, tuple(range(r - 2)) + (r - 1, r - 2))
    if kind == "swap-bcast":  # one matrix's t(), broadcast over the leading (batch) dims
        r = len(shape)
        m = permuted((1,) * (r - 2) + tuple(shape[-2:]), tuple(range(r - 2)) + (r - 1, r - 2))
        return strided(shape, (0,) * (r - 2) + m.strides[-2:], offset=1)
    if kind == "perm":
        perms = {3: (2, 0, 1), 4: (2, 0, 3, 1)}
        return permuted(shape, perms.get(len(shape), tuple(reversed(range(len(shape))))))
    if kind == "narrowed":
        return narrowed(shape)
    if kind == "stepped":
        return stepped(shape)
    if kind == "bcast-lead":
        return broadcast(shape, (0,))
    if kind == "bcast-inner":
        return broadcast(shape, (len(shape) - 1,))
    if kind == "scalar":
        return broadcast(shape, tuple(range(len(shape))))
    if kind == "unit":
        return unit_dims(shape)
    raise KeyError(kind)


def _sized(n: int) -> LayoutClass:
    return LayoutClass(f"len{n}", (n,), ("contig", "stepped", "offset"),
                       doc=f"{n} elements: block/wavefront tails (1-D; operands contiguous and stepped)")


LAYOUT_CLASSES: dict[str, LayoutClass] = {c.name: c for c in [
    LayoutClass("contiguous", (37, 65), ("contig",), doc="dense row-major; null info fast path"),
    LayoutClass("transposed", (33, 47), ("transposed", "contig", "stepped"), doc="t() views"),
    LayoutClass("permuted3d", (5, 6, 7), ("perm", "contig", "transposed"), doc="3-D permutation"),
    LayoutClass("permuted4d", (3, 4, 5, 6), ("perm", "transposed", "contig"), doc="4-D permutation"),
    LayoutClass("transposed-tiles", (3, 70, 45), ("swap", "swap-bcast"),
                doc="every operand a batched t(), the second one broadcast over the batch (each operand "
                    "its own batch offsets): tiled transpose path, partial tiles"),
    LayoutClass("reversed-tiles", (40, 3, 66), ("transposed",),
                doc="every operand fully reversed: unit stride on dim 0, tiles over (0, 2)"),
    LayoutClass("narrowed", (6, 64), ("narrowed", "offset", "transposed"), doc="narrow() with a start offset"),
    LayoutClass("stepped", (10, 33), ("stepped", "contig", "narrowed"), doc="stepped slice: gaps between elements"),
    LayoutClass("broadcast-leading", (16, 40), ("bcast-lead", "contig", "bcast-inner"), doc="stride 0 on dim 0"),
    LayoutClass("broadcast-inner", (40, 16), ("bcast-inner", "transposed", "bcast-lead"), doc="stride 0 on the last dim"),
    LayoutClass("scalar", (7, 9), ("scalar", "contig", "transposed"), doc="one element expanded to a tensor"),
    LayoutClass("rank0", (), ("contig",), doc="0-d tensor"),
    LayoutClass("empty", (3, 0, 2), ("contig",), doc="zero-size tensor: nothing may be written"),
    LayoutClass("unit-dims", (1, 13, 1, 17), ("unit", "contig", "stepped"), doc="size-1 dims with odd strides"),
    *[_sized(n) for n in (31, 32, 33, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025)],
    # 160 blocks of 1024: past the suite's 128 dense blocks, so the sparse working blocks (every
    # 32nd) and the virtual-thread step (common.h vthreads) are exercised. Operands 0 and 1 start at
    # an unaligned offset: the element-by-element loop (not 16-byte packs or 4-element strided
    # groups, which would need > 500k elements) has more elements than the 129 working blocks'
    # threads; where's third operand is aligned, so every pointer must pass the alignment test.
    LayoutClass("len163835", (163835,), ("offset", "offset", "contig"),
                doc="163835 elements = 160 blocks, unaligned starts: grid-stride over grids past 128 blocks (1-D)"),
    LayoutClass("inplace", (45, 33), ("contig",), inplace=True, doc="null input pointer: op runs on out"),
    LayoutClass("inplace-strided", (33, 47), ("transposed",), inplace=True,
                doc="null input pointer with a t() view's info: the strided path reads out[i], not inp"),
    LayoutClass("huge", (2**31 + 1029,), ("contig",), opt_in=True, doc="> 2^31 elements: 32-bit index overflow"),
    # bench-sized shapes (2^26 elements) for `parity bench` / `parity run --time`: opt-in, GPU levels only
    LayoutClass("bench-contiguous", (8192, 8192), ("contig",), opt_in=True, bench=True,
                doc="2^26 elements, dense: bandwidth timing"),
    LayoutClass("bench-transposed", (8192, 8192), ("transposed",), opt_in=True, bench=True,
                doc="2^26 elements, every operand a t() view: strided-read timing"),
]}


def layout_names(include_opt_in: bool = False) -> list[str]:
    return [n for n, c in LAYOUT_CLASSES.items() if include_opt_in or not c.opt_in]


def code_path(layout: str) -> str:
    """The code path a kernel takes for a layout class, as faults are charged to it: both in-place
    classes (contiguous and strided info) share the null-input path "inplace"; every other class
    (empty, transposed, a structured family's shape class) is a path of its own."""
    c = LAYOUT_CLASSES.get(layout)
    return "inplace" if c is not None and c.inplace else layout


def operand_layouts(cls: LayoutClass, n: int, shape: tuple[int, ...] | None = None) -> list[Layout]:
    shape = tuple(shape) if shape is not None else cls.shape
    return [view(cls.kinds[k % len(cls.kinds)], shape) for k in range(n)]


SENTINEL = 0xA5  # byte pattern pre-filled into outputs: unwritten elements stay visibly wrong


def poison_fill(dt: DType, size: int) -> np.ndarray:
    """A base buffer of poison: NaN for floats, 0xA5 bytes otherwise."""
    if dt.is_float:
        return np.full(size, np.nan, dtype=np.float64).astype(dt.np)
    return np.full(size * (dt.bits // 8), 0xA5, dtype=np.uint8).view(dt.np)


def materialize(layout: Layout, dt: DType, values: np.ndarray) -> np.ndarray:
    """Base buffer with `values` at every element the layout reaches and poison in the gaps.

    `values` holds one value per *distinct* reached position (broadcast dims reuse them).
    """
    base = poison_fill(dt, layout.base_size)
    if layout.rank and layout.numel and _non_overlapping(layout) and min(layout.strides) >= 0:
        order = _walk_order(layout)                  # positions in increasing order, no index array
        walk = Layout(tuple(layout.shape[d] for d in order), tuple(layout.strides[d] for d in order),
                      layout.offset, layout.base_size)
        _view(base, walk)[...] = values[: layout.numel].reshape(walk.shape)
        return base
    positions = sorted_positions(layout)
    base[positions] = values[: positions.size]
    return base


def _walk_order(layout: Layout) -> list[int]:
    return sorted(range(layout.rank), key=lambda d: -layout.strides[d] if layout.shape[d] > 1 else 1)


def _view(base: np.ndarray, layout: Layout) -> np.ndarray:
    """The layout as a NumPy view of `base` (non-negative strides, in bounds)."""
    item = base.dtype.itemsize
    return np.lib.stride_tricks.as_strided(base[layout.offset:], shape=layout.shape,
                                           strides=tuple(st * item for st in layout.strides), writeable=True)


def distinct_positions(layout: Layout) -> int:
    if _non_overlapping(layout):
        return layout.numel
    return int(np.unique(layout.flat_indices()).size)


def _non_overlapping(layout: Layout) -> bool:
    """True when no two logical elements share a base position (checked from the strides, no sort):
    sorted by stride, every stride is at least the extent of the dims inside it."""
    dims = sorted((st, s) for s, st in zip(layout.shape, layout.strides) if s > 1)
    extent = 1
    for st, s in dims:
        if st < extent:
            return False
        extent += (s - 1) * st
    return True


def sorted_positions(layout: Layout) -> np.ndarray:
    """np.unique(layout.flat_indices()), without the sort when the view cannot alias: walking the
    dims from the largest stride to the smallest visits the positions in increasing order."""
    if layout.numel and _non_overlapping(layout):
        order = _walk_order(layout)
        walk = Layout(tuple(layout.shape[d] for d in order), tuple(layout.strides[d] for d in order),
                      layout.offset, layout.base_size)
        return walk.flat_indices().reshape(-1)
    return np.unique(layout.flat_indices())


def logical(base: np.ndarray, layout: Layout) -> np.ndarray:
    """The logical tensor a layout reads from a base buffer (a copy, row-major)."""
    if layout.rank and layout.numel and min(layout.strides) >= 0 and layout.base_size <= base.size:
        return np.array(_view(base, layout), copy=True)
    return base[layout.flat_indices()]


def candle_info(shape: tuple[int, ...], layouts: list[Layout], always: bool = False) -> np.ndarray | None:
    """`info` as Candle uploads it: null when every operand is contiguous (unless `always`),
    else [dims, strides of operand 0, strides of operand 1, ...] as size_t."""
    if not always and all(l.is_contiguous() for l in layouts):
        return None
    parts = [list(shape)] + [list(l.strides) for l in layouts]
    return np.array([v for p in parts for v in p], dtype=np.uint64)
