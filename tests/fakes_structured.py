"""Broken subjects for the structured families, built on the CPU ABI emulation: each overrides
one hook of `CpuExecutor` to reproduce a bug a port of reduce / candle-nn / indexing / sort
kernels can ship. tests/test_structured.py asserts each is caught with an exact verdict."""
from __future__ import annotations

import numpy as np

from parity.executors.cpu import CpuExecutor
from parity.core.layouts import row_major
from parity.core.numerics import cast, round_float, to_f64
from parity.core.dtypes import dtype
from parity.ops.reduce import cuda_block_reduce
from parity.ops.sort import bitonic_argsort


def tie_key(i: np.ndarray, block: int) -> np.ndarray:
    """(bit-reversed i mod B, i div B), ordered as one integer: Candle's argmin/argmax tie order."""
    lg = block.bit_length() - 1
    t = i % block
    rev = sum(((t >> b) & 1) << (lg - 1 - b) for b in range(lg))
    return rev * (1 << 32) + i // block


def order_free_pick(kind: str, row: np.ndarray, block: int) -> int:
    """The row's extreme, NaN left out, at the smallest tie key (docs/candle-kernel-abi.md, argmin/argmax)."""
    v = row.astype(np.float64)
    ok = ~np.isnan(v)
    m = v[ok].max() if kind == "argmax" else v[ok].min()
    cand = np.nonzero(ok & (v == m))[0]
    return int(cand[np.argmin(tie_key(cand, block))])


class ReduceIgnoresPermutation(CpuExecutor):
    """Walks the permuted dims as if the source were laid out in that order (assumes the
    reduced dims are innermost in memory): right for a contiguous last-dim reduce only."""
    def reduce_walk(self, info, nd):
        dims = info[:nd].astype(np.int64)
        return dims, np.array(row_major(tuple(int(d) for d in dims)), dtype=np.int64)


class TieBlockSizeBug(CpuExecutor):
    """argmin/argmax reduced by a fixed 32-thread block (one NVIDIA warp) instead of the launch's
    block: each thread folds several elements first, so the tie winner of rows <= block changes."""
    def reduce_row(self, kind, vals, block, dt):
        if kind.startswith("arg"):
            return cuda_block_reduce(kind, vals, 32, dt)
        return super().reduce_row(kind, vals, block, dt)


class UnrolledArgIndexBug(CpuExecutor):
    """argmin/argmax whose 8-load groups (contiguous rows of >= 8 blocks' worth) fold element
    idx + j*B under the index idx - j*B: a winner found in such a group at j >= 1 is misreported."""
    def reduce_row(self, kind, vals, block, dt):
        v, i = super().reduce_row(kind, vals, block, dt)
        tid, j = i % block, i // block
        if kind.startswith("arg") and 1 <= j < 8 and tid + 7 * block < vals.size:
            i = tid - j * block
        return v, i


class ArgLateNaNWins(CpuExecutor):
    """argmin/argmax with an order-free fast path (the extreme of the row, then its first index) whose
    extreme lets NaN through (a NaN-propagating max): where no NaN is among a row's first B elements
    (Candle's threads' first ones) a NaN further on wins, which Candle's threads never take."""
    def reduce_row(self, kind, vals, block, dt):
        v, i = super().reduce_row(kind, vals, block, dt)
        nan = np.isnan(to_f64(vals)) if dt.is_float else np.zeros(vals.size, bool)
        if kind.startswith("arg") and not nan[:block].any() and nan.any():
            i = int(np.argmax(nan))
            v = vals[i]
        return v, i


class ArgFreeOverHeadNaN(CpuExecutor):
    """argmin/argmax order-free on every row (the pick rule's extreme at the smallest tie key), its
    premise unchecked: a NaN among a row's first B elements, which Candle's tree keeps where it lands
    (the NaN's own index at row index 0, or a pick that passes over the NaN's thread), is ignored."""
    def reduce_row(self, kind, vals, block, dt):
        if kind.startswith("arg") and dt.is_float and not np.isnan(to_f64(vals)).all():
            i = order_free_pick(kind, to_f64(vals), block)
            return vals[i], i
        return super().reduce_row(kind, vals, block, dt)


class WarpOnlyFastPath(CpuExecutor):
    """A fast path for rows of exactly one element a thread (the row as long as the block): each
    warp's shuffle reduction with the block's step across warps left out, so a 1024-thread block
    returns its first warp's 32 elements' result; rows of any other length fold the whole block."""
    def reduce_row(self, kind, vals, block, dt):
        if vals.size == block > 32:
            return super().reduce_row(kind, vals[:32], 32, dt)
        return super().reduce_row(kind, vals, block, dt)


class SumTreeStopsEarly(CpuExecutor):
    """fast_sum's tree one step short: the block's upper half of threads never folded into thread
    0, so each row's sum leaves out half of its elements."""
    def reduce_row(self, kind, vals, block, dt):
        if kind != "sum" or not vals.size:
            return super().reduce_row(kind, vals, block, dt)
        kept = np.concatenate([vals[j:j + block // 2] for j in range(0, vals.size, block)])
        return cuda_block_reduce(kind, kept, block, dt)


class WritesZeros(CpuExecutor):
    """A kernel whose stores never land where they should (returns early; writes another buffer):
    every output element 0."""
    def run(self, launch):
        res = super().run(launch)
        if res.status == "ok":
            res.outputs = {n: np.zeros_like(b) for n, b in res.outputs.items()}
        return res


class StoresBeforeView(CpuExecutor):
    """Right values, plus stores to the 5 elements before dst's view (an index that goes negative:
    a scatter writing a sentinel id at dst[-k]): in Candle that is another tensor's storage."""
    def run(self, launch):
        res = super().run(launch)
        for n in launch.outputs:
            res.outputs[n][:5] = 7
        return res


class PackRowInElements(CpuExecutor):
    """index_select's 16-byte path (rows of whole packs, source and destination aligned, as the
    bundled suite's) finding a pack's output row as p / right, the row length in elements, where it
    is p / (right / V) in packs: every pack past the first row's copies another id's row."""
    def run(self, launch):
        res = super().run(launch)
        if res.status != "ok" or not launch.kernel.startswith("is_"):
            return res
        a = {x.name: x for x in launch.args}
        itype, t = dtype(launch.dtypes["ids"]), dtype(launch.dtypes["dst"])
        v, size = 16 // t.np.itemsize, lambda n: int(a[n].value)
        (ids_buf, o_ids), (src_buf, o_src), (dst_buf, o_dst) = (a[n].value for n in ("ids", "inp", "out"))
        right, nd, numel = size("right"), size("ids_dim"), size("numel")
        if right % v or (o_src * t.np.itemsize) % 16 or (o_dst * t.np.itemsize) % 16:
            return res
        ids, src, out = launch.buffers[ids_buf][o_ids:], launch.buffers[src_buf][o_src:], res.outputs[dst_buf]
        p = np.arange(numel // v)
        r = p // right                                   # the bug: p // (right // v)
        idv = ids[r % nd]
        start = (r // nd) * size("src_dim") * right + idv.astype(np.int64) * right + p % (right // v) * v
        rows = np.where(self.is_sentinel(idv, itype)[:, None], np.zeros(1, t.np),   # sentinel ids write 0
                        src[np.minimum(start[:, None] + np.arange(v), src.size - 1)])
        out[o_dst: o_dst + numel] = rows.reshape(-1)
        return res


class SentinelIgnored(CpuExecutor):
    """Treats max_value<I> (255 for u8 ids) as an ordinary id."""
    def is_sentinel(self, ids, itype):
        return np.zeros(np.shape(ids), dtype=bool)


class SumAccumulatesInFloat(CpuExecutor):
    """fast_sum with a float accumulator for every T (then converted to T): integer sums must
    wrap in T."""
    def reduce_row(self, kind, vals, block, dt):
        if kind == "sum":
            acc = np.float32(np.sum(vals.astype(np.float32), dtype=np.float32))
            return cast(np.array([acc]), dtype("f32"), dt)[0], 0
        return super().reduce_row(kind, vals, block, dt)


class RopeIgnoresStrideB(CpuExecutor):
    """rope with per-batch (3-D) cos/sin but stride_b ignored: every batch uses batch 0's table."""
    def rope_stride_b(self, stride_b):
        return 0


class SortPaddingLeaks(CpuExecutor):
    """Padding indices (>= ncols) sort first, so they leak into the written prefix."""
    def sort_row(self, vals, ncols, ncols_pad, asc):
        return bitonic_argsort(vals, ncols, ncols_pad, asc, pad_last=False)


class SortRepeatsTiedIndex(CpuExecutor):
    """Among equal values, every position gets the first one's index (a comparison network that
    copies an index where it should swap two): the values the indices pick are all right, the
    indices are no permutation."""
    def sort_row(self, vals, ncols, ncols_pad, asc):
        idx = super().sort_row(vals, ncols, ncols_pad, asc).astype(np.int64)
        v, first = np.asarray(vals)[:ncols], {}
        return np.array([first.setdefault(v[i].item(), i) for i in idx])


class ScatterFirstWriterWins(CpuExecutor):
    """scatter's duplicate ids resolved by the first j (a racy / reversed loop), not the last."""
    def scatter_order(self, n):
        return np.arange(n)[::-1]


class ArgmaxWritesF32(CpuExecutor):
    """argmin/argmax store the index as an f32 into the u32 output."""
    def store_index(self, dst, i, idx):
        dst[i] = np.float32(idx).view(np.uint32)


class OnlineSoftmax(CpuExecutor):
    """f16/bf16 softmax with its max and sum from one online pass (as a flash-style kernel takes
    them): the sum is of exp(x - max) unrounded, where Candle sums each e rounded to T; the write
    rounds e and 1/sum to T as Candle does."""
    def row_op(self, root, x, alpha, beta, dt, eps):
        if root != "softmax" or dt.name not in ("f16", "bf16"):
            return super().row_op(root, x, alpha, beta, dt, eps)
        xf = to_f64(x)
        m = np.max(xf, axis=-1, keepdims=True)
        r = lambda v: to_f64(round_float(v, dt))
        s = np.sum(np.exp(xf - m), axis=-1, keepdims=True)
        return round_float(r(np.exp(r(xf - m))) * r(1.0 / s), dt)


__all__ = ["ReduceIgnoresPermutation", "TieBlockSizeBug", "UnrolledArgIndexBug", "WarpOnlyFastPath",
           "PackRowInElements", "SentinelIgnored", "SumAccumulatesInFloat", "RopeIgnoresStrideB", "SortPaddingLeaks",
           "ScatterFirstWriterWins", "ArgmaxWritesF32", "OnlineSoftmax", "SumTreeStopsEarly", "WritesZeros", "StoresBeforeView",
           "SortRepeatsTiedIndex"]
