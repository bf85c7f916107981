"""Indexing: is_I_T (index_select), gather_I_T, ia_I_T (index_add), sa_I_T (scatter_add),
s_I_T (scatter). I in u8, u32, i64 x T in std+f16+bf16; fp8 (f8_e4m3) also takes I in i16, i32;
no s_* for fp8.

    is_I_T(size_t numel, size_t num_dims, const size_t* info /*ids dims+strides*/, const I* ids,
           const T* inp, T* out, size_t left, size_t src_dim, size_t ids_dim, size_t right)
    gather_I_T(size_t numel, ids, inp, out, left, src_dim, ids_dim, right)
    ia_I_T(ids, size_t ids_dim, inp, out, left, src_dim, dst_dim, right)
    sa_I_T / s_I_T(ids, inp, out, left, src_dim, dst_dim, right)

Geometry (section 2): for_num_elems(dst_el) for is/gather, for_num_elems(left*right) for
ia/s/sa; left = prod(dims[..dim]), right = prod(dims[dim+1..]). Sources, destinations and
ids are contiguous; start offsets reach the kernel as pointer offsets. An id equal to
max_value<I>() (255 for u8 ids) makes is/gather write 0 and ia/s/sa skip (fp8 ia/sa do not
check it, so their cases keep ids in range). ia/s/sa loop j serially per (left,right) thread:
deterministic, and scatter's last j wins.
"""
from __future__ import annotations

import math
from enum import Enum

import numpy as np

from parity.core.compare import compare
from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.core.numerics import round_float, to_f64
from parity.core.tolerance import COPY, Tolerance
from parity.ops.abi import sentinel_fill
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec, for_num_elems
from parity.ops.structured import StructuredBuilt, make_input


class IndexKernel(str, Enum):
    """Which indexing kernel an op is: its spec's `variant`, whose facts a second implementation of
    the family reads instead of the kernel's name."""
    IS = "is"
    GATHER = "gather"
    IA = "ia"
    SA = "sa"
    S = "s"

    @property
    def scatter(self) -> bool:
        """Writes through the ids (ia, sa, s): one thread per (left, right), j serial; else one thread
        per output element reads through them (is, gather)."""
        return self in (IndexKernel.IA, IndexKernel.SA, IndexKernel.S)

    @property
    def per_slice(self) -> bool:
        """One id per slice along the dim (is, ia: ids_dim of them); else the ids are shaped like
        the tensor indexed through them (gather, sa, s)."""
        return self in (IndexKernel.IS, IndexKernel.IA)

    @property
    def accumulate(self) -> bool:
        """Adds into the destination in T (ia, sa); scatter overwrites."""
        return self in (IndexKernel.IA, IndexKernel.SA)


STD_T = ("u8", "u32", "i64", "f32", "f64", "f16", "bf16")
IDS = ("u8", "u32", "i64")
KEYS = tuple(f"{i}-{t}" for i in IDS for t in STD_T) + tuple(f"{i}-f8_e4m3" for i in IDS + ("i16", "i32"))
KEYS_NO_FP8 = tuple(k for k in KEYS if not k.endswith("f8_e4m3"))

SHAPES = {s.name: s for s in [
    ShapeClass("dim0", "src (4,7,5) along dim 0", {"shape": (4, 7, 5), "dim": 0}),
    ShapeClass("dim1", "src (4,7,5) along dim 1", {"shape": (4, 7, 5), "dim": 1}),
    ShapeClass("dim2", "src (4,7,5) along dim 2", {"shape": (4, 7, 5), "dim": 2}),
    ShapeClass("rank1", "src (37,) along dim 0", {"shape": (37,), "dim": 0}),
    ShapeClass("dups", "dim 1, ids drawn from {0, 2}: heavy duplicates (scatter: last j wins)",
               {"shape": (4, 7, 5), "dim": 1, "ids": "dups"}),
    ShapeClass("sentinel", "dim 1, ~1/3 of ids = max_value<I> (255 for u8): is/gather write 0, ia/s/sa skip",
               {"shape": (4, 7, 5), "dim": 1, "ids": "sentinel"}),
    ShapeClass("offset", "dim 1 with pointer offsets: ids +2, source +3, destination +5",
               {"shape": (4, 7, 5), "dim": 1, "offsets": (2, 3, 5)}),
    # rows of whole 16-byte packs (64 elements: 4 to 32 packs in every dtype), where ports copy a
    # pack at a time (an embedding lookup); aligned, and at offsets that leave no pointer aligned
    ShapeClass("rows", "src (37,64) along dim 0: rows of whole 16-byte packs, aligned", {"shape": (37, 64), "dim": 0}),
    ShapeClass("rows-offset", "src (37,64) along dim 0, offsets ids +2, source +3, destination +5",
               {"shape": (37, 64), "dim": 0, "offsets": (2, 3, 5)}),
]}
N_IDS = 9        # index_select / index_add id count
GATHER_DIM = 6   # gather: ids' size along dim
EXACT_ARITH = Tolerance(ulp=0)


def _ids(rng, n, hi, itype, mode, allow_sentinel):
    if mode == "dups":
        v = rng.choice(np.array([0, min(2, hi - 1)]), n)
    else:
        v = rng.integers(0, hi, n)
    v = v.astype(itype.np)
    if mode == "sentinel" and allow_sentinel:
        v[rng.permutation(n)[: max(1, n // 3)]] = np.iinfo(itype.np).max
    return v


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    root = op.root
    itype, t = (dtype(p) for p in case.dtype.split("-"))
    g = SHAPES[case.layout].geo
    shape, dim = g["shape"], g["dim"]
    left, S, right = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
    o_ids, o_src, o_dst = g.get("offsets", (0, 0, 0))
    mode = g.get("ids", "random")
    notes = []
    allow_sentinel = not (t.name == "f8_e4m3" and root in ("ia", "sa"))
    if mode == "sentinel" and not allow_sentinel:
        notes.append("fp8 ia/sa do not check the sentinel (sheet section 1): ids kept in range")
    D = S + 2                                            # destination dim of ia/sa/s
    if root == "is":
        src_shape, ids_shape, out_shape, hi = shape, (N_IDS,), shape[:dim] + (N_IDS,) + shape[dim + 1:], S
    elif root == "gather":
        out_shape = shape[:dim] + (GATHER_DIM,) + shape[dim + 1:]
        src_shape, ids_shape, hi = shape, out_shape, S
    elif root == "ia":
        src_shape = shape[:dim] + (N_IDS,) + shape[dim + 1:]
        ids_shape, out_shape, hi = (N_IDS,), shape[:dim] + (D,) + shape[dim + 1:], D
    else:
        src_shape, ids_shape, out_shape, hi = shape, shape, shape[:dim] + (D,) + shape[dim + 1:], D
    src_l = contiguous(src_shape, offset=o_src)
    src_b, src_v = make_input(t, src_l, case.values, rng)
    ids_l = contiguous(ids_shape, offset=o_ids)
    ids_v = _ids(rng, math.prod(ids_shape), hi, itype, mode, allow_sentinel)
    ids_b = np.concatenate([np.full(o_ids, 0xA5, itype.np), ids_v])
    n_out = math.prod(out_shape)
    if root in ("ia", "sa", "s"):                        # the destination holds `self`
        self_l = contiguous(out_shape)
        _, self_v = make_input(t, self_l, "normal", rng)
        out_init = np.concatenate([sentinel_fill(t, o_dst), self_v.reshape(-1)])
    else:
        self_v = None
        out_init = sentinel_fill(t, n_out + o_dst)
    geo = {"root": root, "dim": dim, "left": left, "right": right, "src_dim": src_shape[dim] if src_shape else 1,
           "ids_dim": {"is": N_IDS, "gather": GATHER_DIM, "ia": N_IDS}.get(root, S), "dst_dim": D,
           "out_shape": out_shape, "self": self_v}
    return StructuredBuilt(case, op, case.dtype, {"ids": itype, "src": t}, {"ids": ids_l, "src": src_l},
                           {"ids": ids_b, "src": src_b}, {"ids": ids_v.reshape(ids_shape), "src": src_v}, geo,
                           out_dtype=t, out_shape=out_shape, out_offset=o_dst, out_init=out_init, notes=notes)


def _pack(b: StructuredBuilt) -> Launch:
    g, root = b.geo, b.geo["root"]
    s = lambda n, v: Arg("size_t", v, name=n)
    ids = Arg("ptr", ("ids", b.layouts["ids"].offset), name="ids")
    inp = Arg("ptr", ("src", b.layouts["src"].offset), name="inp")
    out = Arg("ptr", ("dst", b.out_offset), name="out")
    n_out = math.prod(b.out_shape)
    if root == "is":
        ids_l = b.layouts["ids"]
        info = np.array(list(ids_l.shape) + list(ids_l.strides), dtype=np.uint64)
        args = [s("numel", n_out), s("num_dims", ids_l.rank), Arg("info", info, name="info"), ids, inp, out,
                s("left", g["left"]), s("src_dim", g["src_dim"]), s("ids_dim", g["ids_dim"]), s("right", g["right"])]
        grid = for_num_elems(n_out)
    elif root == "gather":
        args = [s("numel", n_out), ids, inp, out, s("left", g["left"]), s("src_dim", g["src_dim"]),
                s("ids_dim", g["ids_dim"]), s("right", g["right"])]
        grid = for_num_elems(n_out)
    elif root == "ia":
        args = [ids, s("ids_dim", g["ids_dim"]), inp, out, s("left", g["left"]), s("src_dim", g["src_dim"]),
                s("dst_dim", g["dst_dim"]), s("right", g["right"])]
        grid = for_num_elems(g["left"] * g["right"])
    else:
        args = [ids, inp, out, s("left", g["left"]), s("src_dim", g["src_dim"]), s("dst_dim", g["dst_dim"]),
                s("right", g["right"])]
        grid = for_num_elems(g["left"] * g["right"])
    return Launch(b.op.kernel_name(b.key), args, {"ids": b.bases["ids"], "src": b.bases["src"],
                                                   "dst": b.out_init.copy()}, ("dst",), grid=grid,
                  dtypes={"ids": b.dtypes["ids"].name, "src": b.dtypes["src"].name, "dst": b.out_dtype.name})


def add_in_t(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    """out += inp in T: floats round once (fp8 via float, satfinite), integers wrap."""
    if t.is_float:
        with np.errstate(all="ignore"):
            return round_float(to_f64(a) + to_f64(b), t)
    with np.errstate(all="ignore"):
        return (a.astype(t.np) + b.astype(t.np)).astype(t.np)


def _expected(b: StructuredBuilt) -> np.ndarray:
    g, root, t = b.geo, b.geo["root"], b.out_dtype
    itype = b.dtypes["ids"]
    dim = g["dim"]
    L, R = g["left"], g["right"]
    src = b.inputs["src"].reshape(L, -1, R)
    ids = b.inputs["ids"]
    sent = ids == np.iinfo(itype.np).max
    safe = np.where(sent, 0, ids).astype(np.int64)
    zero = np.zeros((), dtype=t.np)
    if root == "is":
        out = src[:, safe, :]
        out[:, sent, :] = zero
    elif root == "gather":
        ids3, s3 = safe.reshape(L, -1, R), sent.reshape(L, -1, R)
        out = np.take_along_axis(src, ids3, axis=1)
        out[s3] = zero
    else:
        out = g["self"].reshape(L, -1, R).copy()
        ids3 = safe.reshape(L, -1, R) if root != "ia" else None
        for j in range(src.shape[1]):
            if root == "ia":
                if sent[j]:
                    continue
                out[:, safe[j], :] = add_in_t(out[:, safe[j], :], src[:, j, :], t)
            else:
                ll, rr = np.nonzero(~sent.reshape(L, -1, R)[:, j, :])
                tgt = ids3[ll, j, rr]
                if root == "sa":
                    out[ll, tgt, rr] = add_in_t(out[ll, tgt, rr], src[ll, j, rr], t)
                else:
                    out[ll, tgt, rr] = src[ll, j, rr]
    _ = dim
    return out.reshape(b.out_shape)


def _judge(expected, got, b: StructuredBuilt):
    tol = COPY if b.geo["root"] in ("is", "gather", "s") else EXACT_ARITH
    ins = {"ids": b.inputs["ids"]} if b.inputs["ids"].shape == expected.shape else None
    return compare(expected, got, b.out_dtype, tol, ins, dict(b.dtypes))


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """The kernels' loops over flat buffers (dst_i / (left,right) threads, j serial)."""
    a = {x.name: x for x in launch.args}
    itype, t = (dtype(p) for p in key.split("-"))
    ptr = lambda n: bufs[a[n].value[0]][ex.pointer_offset(a[n].value[1]):]
    ids, inp, out = ptr("ids"), ptr("inp"), ptr("out")
    v = lambda n: int(a[n].value)
    left, right = v("left"), v("right")
    root = op.root
    if root in ("is", "gather"):
        numel = v("numel")
        i = np.arange(numel, dtype=np.int64)
        ids_dim, src_dim = v("ids_dim"), v("src_dim")
        if root == "is":
            left_i, id_i, right_i = i // (ids_dim * right), i // right % ids_dim, i % right
            idv = ids[id_i]
        else:
            idv = ids[:numel]
            left_i, right_i = i // (right * ids_dim), i % right
        sent = ex.is_sentinel(idv, itype)
        safe = np.where(sent, 0, idv).astype(np.int64)
        src_i = (left_i * src_dim + safe) * right + right_i
        if root == "is":
            nd = v("num_dims")
            info = np.asarray(a["info"].value).astype(np.int64)
            dims, strides = info[:nd], info[nd:2 * nd]
            if not ex._contiguous(info.astype(np.uint64), nd, 0):   # re-strided with the ids' layout
                off, rem = np.zeros_like(src_i), src_i.copy()
                for d in reversed(range(nd)):
                    off += (rem % dims[d]) * strides[d]
                    rem //= dims[d]
                src_i = off
        vals = inp[src_i[~sent]]
        res = np.zeros(numel, dtype=t.np)
        res[~sent] = vals
        out[:numel] = res
        return
    dst_dim = v("dst_dim")
    n_j = v("ids_dim") if root == "ia" else v("src_dim")
    i = np.arange(left * right, dtype=np.int64)
    pre, post = i // right, i % right
    for j in ex.scatter_order(n_j):
        src_i = (pre * n_j + j) * right + post
        idv = np.full(i.size, ids[j]) if root == "ia" else ids[src_i]
        live = ~ex.is_sentinel(idv, itype)
        dst_i = (pre[live] * dst_dim + idv[live].astype(np.int64)) * right + post[live]
        if root == "s":
            out[dst_i] = inp[src_i[live]]
        else:
            out[dst_i] = add_in_t(out[dst_i], inp[src_i[live]], t)


def _tol(root):
    return (lambda key: "bit-exact copies (0 for the sentinel)") if root in ("is", "gather", "s") else \
        (lambda key: "exact: serial j loop, one rounding per add in T (integers wrap)")


_SEM = {
    "is": "out[l,i,r] = inp[l,ids[i],r]; sentinel id -> 0; info = the ids' dims/strides (re-strides the source "
          "index when the ids are non-contiguous)",
    "gather": "out[l,g,r] = inp[l,ids[l,g,r],r]; sentinel id -> 0",
    "ia": "out[l,ids[j],r] += inp[l,j,r] for j serial per (l,r) thread; sentinel skipped (not for fp8)",
    "sa": "out[l,ids[l,j,r],r] += inp[l,j,r], j serial per (l,r) thread; sentinel skipped (not for fp8)",
    "s": "out[l,ids[l,j,r],r] = inp[l,j,r], j serial: the last j wins; sentinel skipped",
}
_NAMES = {"is": "index_select", "gather": "gather", "ia": "index_add", "sa": "scatter_add", "s": "scatter"}
_ABI = {
    "is": ("numel", "num_dims", "info", "ids", "inp", "out", "left:size_t", "src_dim:size_t", "ids_dim:size_t",
           "right:size_t"),
    "gather": ("numel", "ids", "inp", "out", "left:size_t", "src_dim:size_t", "ids_dim:size_t", "right:size_t"),
    "ia": ("ids", "ids_dim:size_t", "inp", "out", "left:size_t", "src_dim:size_t", "dst_dim:size_t", "right:size_t"),
    "sa": ("ids", "inp", "out", "left:size_t", "src_dim:size_t", "dst_dim:size_t", "right:size_t"),
    "s": ("ids", "inp", "out", "left:size_t", "src_dim:size_t", "dst_dim:size_t", "right:size_t"),
}

OPS = [
    Op(name=f"index.{_NAMES[r]}", family="indexing", root=r, dtypes=KEYS_NO_FP8 if r == "s" else KEYS,
       inputs=("ids", "src"), value_classes=("normal", "special"),
       abi=_ABI[r], semantics=_SEM[r],
       divergences=(("Candle's CUDA host passes self's original layout to index_add, so a non-zero start "
                     "offset is applied twice (PR README divergence 1); parity launches the ABI correctly",)
                    if r == "ia" else ()),
       spec=StructuredSpec(shapes=SHAPES, build=_build, pack=_pack, expected=_expected, judge=_judge,
                             emulate=_emulate, tolerance=_tol(r), variant=IndexKernel(r)))
    for r in ("is", "gather", "ia", "sa", "s")
]
