"""Matmul: Candle's `matmul` host path, one strided-batched GEMM through BLAS (cuBLAS on NVIDIA,
hipBLAS/rocBLAS on AMD). Not a suite kernel: launches are `library="blas.gemm"` host routines
(parity/host/routines.py), so coverage does not expect a `gemm_T` kernel.

`gemm_config` is HEAD `candle-core/src/cuda_backend/mod.rs` gemm_config (the PR's rocBLAS copy is
identical): row-major C(b,m,n) = A(b,m,k) @ B(b,k,n) computed as column-major Cᵀ = Bᵀ·Aᵀ, so the
BLAS `a` is **rhs** and `b` is **lhs**, with m<->n swapped, ldc = n, stride_c = m*n.

Executors do not receive a config: they receive the operands' layouts and derive it themselves
(a port's copy of gemm_config is part of the subject), so a broken config (lda from the wrong
operand) and a missing refusal (MatMulNonContiguous) are both caught. Cases whose layout Candle
refuses are expected to be refused by the executor (ExecResult "refused": pass; a result: fail).
Tensor::matmul returns zeros without calling BLAS when k == 0 or the output is empty.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import Layout, row_major, strided
from parity.core.numerics import round_float, to_f64
from parity.ops.base import Arg, ChainSupport, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.structured import HostRefused, StructuredBuilt, make_input, mask_judge, out_buffer

DTYPES = ("f32", "f64", "f16", "bf16")
# Compute type Candle asks for by default (reduced-precision knobs off), per storage dtype.
COMPUTE = {"f32": "CUBLAS_COMPUTE_32F", "f16": "CUBLAS_COMPUTE_32F", "bf16": "CUBLAS_COMPUTE_32F",
           "f64": "CUBLAS_COMPUTE_64F (dgemmStridedBatched)"}
ACC_EPS = {"f32": 2.0 ** -23, "f16": 2.0 ** -23, "bf16": 2.0 ** -23, "f64": 2.0 ** -52}


class MatMulNonContiguous(HostRefused):
    """Candle's CudaError::MatMulNonContiguous: a layout gemm_config cannot express."""


@dataclass(frozen=True)
class GemmConfig:
    """cuBLAS/rocBLAS strided-batched arguments, column-major (a = rhs, b = lhs)."""
    transa: str          # "N" | "T"
    transb: str
    m: int               # = Candle's n
    n: int               # = Candle's m
    k: int
    lda: int
    ldb: int
    ldc: int
    stride_a: int        # rhs batch stride
    stride_b: int        # lhs batch stride
    stride_c: int
    batch: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _shape_strides(l) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(l, Layout):
        return tuple(l.shape), tuple(l.strides)
    shape, strides = l[0], l[1]
    return tuple(int(x) for x in shape), tuple(int(x) for x in strides)


def _batch_stride(shape, strides, default: int, what: str, err) -> int:
    bs = strides[:-2]
    if len(bs) == 2:
        s1, s = bs
        if s1 == s * shape[1]:
            return s
        if shape[0] == 1:
            return s
        if shape[1] == 1:
            return s1
        raise err(f"{what}: batch strides {list(bs)} for batch dims {list(shape[:2])}")
    if len(bs) == 1:
        return bs[0]
    if len(bs) == 0:
        return default
    raise err(f"{what}: {len(bs)} batch dimensions (at most 2)")


def gemm_config(bmnk: tuple[int, int, int, int], lhs, rhs) -> GemmConfig:
    """Candle's gemm_config. lhs/rhs: Layout or (shape, strides). Raises MatMulNonContiguous."""
    b, m, n, k = (int(x) for x in bmnk)
    lshape, lst = _shape_strides(lhs)
    rshape, rst = _shape_strides(rhs)

    def err(why: str) -> MatMulNonContiguous:
        return MatMulNonContiguous(f"MatMulNonContiguous ({why}): lhs shape {list(lshape)} strides {list(lst)}, "
                                   f"rhs shape {list(rshape)} strides {list(rst)}, mnk ({m}, {n}, {k})")
    rhs_m1, rhs_m2 = rst[-1], rst[-2]
    lhs_m1, lhs_m2 = lst[-1], lst[-2]
    if (rhs_m1 == 1 or n == 1) and (rhs_m2 == n or k == 1):
        lda, transa = n, "N"
    elif (rhs_m1 == k or n == 1) and (rhs_m2 == 1 or k == 1):
        lda, transa = k, "T"
    else:
        raise err("rhs")
    if (lhs_m1 == 1 or k == 1) and (lhs_m2 == k or m == 1):
        ldb, transb = k, "N"
    elif (lhs_m1 == m or k == 1) and (lhs_m2 == 1 or m == 1):
        ldb, transb = m, "T"
    else:
        raise err("lhs")
    stride_b = _batch_stride(lshape, lst, m * k, "lhs", err)
    stride_a = _batch_stride(rshape, rst, n * k, "rhs", err)
    return GemmConfig(transa, transb, n, m, k, lda, ldb, n, stride_a, stride_b, m * n, b)


# ------------------------------------------------------------- column-major GEMM (pure NumPy)
def _op_index(trans: str, rows: int, cols: int, ld: int) -> np.ndarray:
    """Flat index of element (r, c) of op(X) (rows x cols), X column-major with leading dim ld."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    return r + c * ld if trans == "N" else c + r * ld


def gemm_strided_batched(cfg: GemmConfig, a: np.ndarray, b: np.ndarray, c: np.ndarray, out_dt,
                         acc: str = "f64") -> None:
    """What cublas{S,D}gemmStridedBatched / GemmStridedBatchedEx compute (alpha 1, beta 0), in
    float64, rounded once to the output dtype: C_i = op(A_i) op(B_i), column-major. a/b/c are
    the flat buffers starting at the pointers BLAS receives. acc="f16": a broken subject that
    accumulates in half precision (the reduced-precision knob)."""
    ia = _op_index(cfg.transa, cfg.m, cfg.k, cfg.lda)
    ib = _op_index(cfg.transb, cfg.k, cfg.n, cfg.ldb)
    r = np.arange(cfg.m, dtype=np.int64)[:, None]
    col = np.arange(cfg.n, dtype=np.int64)[None, :]
    ic = r + col * cfg.ldc
    for i in range(cfg.batch):
        A = to_f64(a[i * cfg.stride_a + ia])
        B = to_f64(b[i * cfg.stride_b + ib])
        if acc == "f16":
            C = np.zeros((cfg.m, cfg.n), dtype=np.float16)
            for j in range(cfg.k):
                C = (C + (A[:, j:j + 1] * B[j:j + 1, :]).astype(np.float16)).astype(np.float16)
            C = C.astype(np.float64)
        else:
            C = A @ B
        c[i * cfg.stride_c + ic] = round_float(C, out_dt).astype(out_dt.np)


# ---------------------------------------------------------------------------- shape classes
def _v(shape, strides, offset=0) -> dict:
    return {"shape": tuple(shape), "strides": tuple(strides), "offset": offset}


def _c(shape, offset=0) -> dict:
    return _v(shape, row_major(tuple(shape)), offset)


def _sc(name, doc, lhs, rhs, refuse=False) -> ShapeClass:
    return ShapeClass(name, doc, {"lhs": lhs, "rhs": rhs, "refuse": refuse})


M, K, N = 7, 9, 5
SHAPES = {s.name: s for s in [
    _sc("mm-contig", "(2,7,9)@(2,9,5) contiguous: transa N lda n, transb N ldb k", _c((2, M, K)), _c((2, K, N))),
    _sc("mm-rhs-t", "rhs a t() view (2,9,5) strides [45,1,9]: transa T, lda k",
        _c((2, M, K)), _v((2, K, N), (45, 1, K))),
    _sc("mm-lhs-t", "lhs a t() view (2,7,9) strides [63,1,7]: transb T, ldb m",
        _v((2, M, K), (63, 1, M)), _c((2, K, N))),
    _sc("mm-both-t", "both operands transposed views", _v((2, M, K), (63, 1, M)), _v((2, K, N), (45, 1, K))),
    _sc("mm-lhs612", "sheet section 6: lhs (2,2,3) strides [6,1,2] (transpose of a (2,3,2)): transb T, ldb 2",
        _v((2, 2, 3), (6, 1, 2)), _c((2, 3, 4))),
    _sc("mm-rhs612", "sheet section 6: rhs (2,2,3) strides [6,1,2]: transa T, lda 2",
        _c((2, 4, 2)), _v((2, 2, 3), (6, 1, 2))),
    _sc("mm-bcast-rhs", "rhs broadcast over the batch (strides [0,5,1]): stride_a 0",
        _c((3, M, K)), _v((3, K, N), (0, N, 1))),
    _sc("mm-bcast-lhs", "lhs broadcast over the batch (strides [0,9,1]): stride_b 0",
        _v((3, M, K), (0, K, 1)), _c((3, K, N))),
    _sc("mm-rank2-rhs", "rank-2 rhs (9,5) broadcast_left to (3,9,5) as the host does: stride_a 0",
        _c((3, M, K)), _v((3, K, N), (0, N, 1), 2)),
    _sc("mm-batch2", "two batch dims (2,3,...) contiguous: [s1,s] with s1 == s*dims[1] -> s, batch 6",
        _c((2, 3, M, K)), _c((2, 3, K, N))),
    _sc("mm-batch2-unit0", "two batch dims (1,3): dims[0] == 1 -> s (s1 is arbitrary)",
        _v((1, 3, M, K), (999, 63, K, 1)), _c((1, 3, K, N))),
    _sc("mm-batch2-unit1", "two batch dims (3,1): dims[1] == 1 -> s1",
        _v((3, 1, M, K), (63, 5, K, 1)), _v((3, 1, K, N), (45, 7, N, 1))),
    _sc("mm-rank2", "(7,9)@(9,5), no batch dim: stride_b m*k, stride_a n*k", _c((M, K)), _c((K, N))),
    _sc("mm-offset", "narrowed views: lhs (2,7,9) of a (2,10,9) at row 2 (offset 18, batch stride 90), "
        "rhs narrowed on the batch (offset 45)", _v((2, M, K), (90, K, 1), 18), _c((2, K, N), 45)),
    _sc("mm-squeeze", "candle squeeze_mm: lhs (1,16) = a(1,8,16).i((..,7,..)) strides [128,1] offset 112 "
        "(m == 1 relaxes ldb), rhs = w(32,16).t()", _v((1, 16), (128, 1), 112), _v((16, 32), (1, 16))),
    _sc("mm-unit-n", "n == 1 with an odd minor stride (rhs strides [9,1,7]): relaxed check",
        _c((2, M, K)), _v((2, K, 1), (K, 1, 7))),
    _sc("mm-unit-k", "k == 1 (outer product), lhs strides [7,1,3]: relaxed check",
        _v((2, M, 1), (M, 1, 3)), _c((2, 1, N))),
    _sc("mm-empty-k", "k == 0: Tensor::matmul returns zeros without calling BLAS", _c((2, M, 0)), _c((2, 0, N))),
    _sc("mm-empty-m", "m == 0: empty result, nothing launched", _c((2, 0, K)), _c((2, K, N))),
    _sc("mm-refuse-gap", "refused: lhs narrowed on its last dim (strides [84,12,1], k=9)",
        _v((2, M, K), (84, 12, 1), 2), _c((2, K, N)), True),
    _sc("mm-refuse-step", "refused: rhs stepped (strides [90,10,2])", _c((2, M, K)), _v((2, K, N), (90, 10, 2)), True),
    _sc("mm-refuse-col", "refused: rhs a narrowed column (9,1) strides [5,1] (n == 1 but rhs_m2 != 1)",
        _c((M, K)), _v((K, 1), (N, 1)), True),
    _sc("mm-refuse-batch2", "refused: two batch dims (2,3) with strides [200,63]",
        _v((2, 3, M, K), (200, 63, K, 1)), _c((2, 3, K, N)), True),
    _sc("mm-refuse-rank5", "refused: three batch dims (rank 5), even contiguous",
        _c((2, 1, 2, M, K)), _c((2, 1, 2, K, N)), True),
]}


def _layout(g: dict) -> Layout:
    return strided(g["shape"], g["strides"], g.get("offset", 0))


def case_bmnk(lshape, rshape) -> tuple[int, int, int, int]:
    m, k = lshape[-2], lshape[-1]
    n = rshape[-1]
    return math.prod(lshape[:-2]), m, n, k


# ------------------------------------------------------------------------------- spec parts
def _build(case, rng) -> StructuredBuilt:
    dt = dtype(case.dtype)
    g = SHAPES[case.layout].geo
    ll, rl = _layout(g["lhs"]), _layout(g["rhs"])
    lb, lv = make_input(dt, ll, "normal", rng)
    rb, rv = make_input(dt, rl, "normal", rng)
    bmnk = case_bmnk(ll.shape, rl.shape)
    b_, m, n, k = bmnk
    out_shape = tuple(ll.shape[:-2]) + (m, n)
    geo = {"bmnk": bmnk}
    b = StructuredBuilt(case, case.catalog_op, case.dtype, {"lhs": dt, "rhs": dt}, {"lhs": ll, "rhs": rl},
                        {"lhs": lb, "rhs": rb}, {"lhs": lv, "rhs": rv}, geo, out_dtype=dt, out_shape=out_shape)
    if k == 0 or math.prod(out_shape) == 0:
        b.refuse = ("Tensor::matmul returns zeros for k == 0 or an empty output without calling BLAS"
                    if k == 0 else "empty output: nothing to compute")
        return b
    try:
        geo["cfg"] = gemm_config(bmnk, ll, rl)
    except MatMulNonContiguous as e:
        b.refuse, b.refuse_check = str(e), True
    if g["refuse"] and not b.refuse:               # the table and gemm_config must agree
        raise AssertionError(f"{case.layout}: declared refused but gemm_config accepts it")
    return b


def gemm_launch(key: str, bmnk: tuple[int, int, int, int], lhs: Layout, lhs_base: np.ndarray, rhs: Layout,
                rhs_base: np.ndarray, dst: np.ndarray) -> Launch:
    """One `blas.gemm` host launch (Candle's `matmul`): the executor derives gemm_config from the
    layouts and runs one strided-batched GEMM into `dst`. Also a step of the conv host path."""
    bb, m, n, k = (int(x) for x in bmnk)
    lay = lambda l: np.array(list(l.shape) + list(l.strides), dtype=np.uint64)
    args = [Arg("size_t", bb, name="b"), Arg("size_t", m, name="m"), Arg("size_t", n, name="n"),
            Arg("size_t", k, name="k"), Arg("info", lay(lhs), name="lhs_layout"),
            Arg("info", lay(rhs), name="rhs_layout"),
            Arg("ptr", ("lhs", lhs.offset), name="lhs"), Arg("ptr", ("rhs", rhs.offset), name="rhs"),
            Arg("ptr", ("dst", 0), name="dst")]
    return Launch(OPS[0].kernel_name(key), args, {"lhs": lhs_base, "rhs": rhs_base, "dst": dst}, ("dst",),
                  grid=(1, 1, 1), block=(1, 1, 1), library="blas.gemm", dtypes={"lhs": key, "rhs": key, "dst": key})


def _pack(b: StructuredBuilt) -> Launch:
    return gemm_launch(b.key, b.geo["bmnk"], b.layouts["lhs"], b.bases["lhs"], b.layouts["rhs"], b.bases["rhs"],
                       out_buffer(b))


def gemm_buffers(launch: Launch, bufs: dict, pointer_offset=lambda o: o):
    """(a, b, c) flat arrays from the BLAS pointers: a = rhs, b = lhs, c = dst."""
    args = {x.name: x for x in launch.args}

    def view(n):
        name, off = args[n].value
        return bufs[name][pointer_offset(int(off)):]
    return view("rhs"), view("lhs"), view("dst")


def launch_layouts(launch: Launch):
    """(bmnk, lhs (shape, strides), rhs (shape, strides)) from a gemm launch's host arguments."""
    a = {x.name: x for x in launch.args}
    bmnk = tuple(int(a[n].value) for n in ("b", "m", "n", "k"))

    def lay(v):
        v = [int(x) for x in v]
        r = len(v) // 2
        return tuple(v[:r]), tuple(v[r:])
    return bmnk, lay(a["lhs_layout"].value), lay(a["rhs_layout"].value)


def _expected(b: StructuredBuilt) -> np.ndarray:
    dt = b.out_dtype
    if b.refuse:
        return np.zeros(b.out_shape, dtype=dt.np)
    l64, r64 = to_f64(b.inputs["lhs"]), to_f64(b.inputs["rhs"])
    return round_float(np.matmul(l64, r64), dt).astype(dt.np).reshape(b.out_shape)


def error_bound(lhs: np.ndarray, rhs: np.ndarray, dt_name: str, out_dt) -> tuple[np.ndarray, np.ndarray]:
    """(exact float64 product, allowed |error|): accumulation 2*sqrt(k)*eps_acc*(|A|@|B|) plus one
    ulp of the output dtype at the exact value (f16/bf16 outputs are rounded once)."""
    l64, r64 = to_f64(lhs), to_f64(rhs)
    exact = np.matmul(l64, r64)
    k = max(1, lhs.shape[-1])
    absprod = np.matmul(np.abs(l64), np.abs(r64))
    ulp = np.spacing(np.abs(round_float(exact, out_dt)).astype(out_dt.np)).astype(np.float64) \
        if out_dt.name in ("f32", "f64", "f16") else _bf16_ulp(exact)
    return exact, 2.0 * math.sqrt(k) * ACC_EPS[dt_name] * absprod + ulp


def _bf16_ulp(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    return np.where(a > 0, 2.0 ** (np.maximum(e, -126) - 7), 2.0 ** -133)


def _judge(expected, got, b: StructuredBuilt):
    dt = b.out_dtype
    exact, bound = error_bound(b.inputs["lhs"], b.inputs["rhs"], b.key, dt)
    g64 = to_f64(got)
    err = np.abs(g64 - exact)
    ok = np.isfinite(g64) & (err <= bound)
    k = b.geo["bmnk"][3]

    def shown(i, coords):
        return {"k": str(k), "|err|": f"{float(err.reshape(-1)[i]):.3g}",
                "bound": f"{float(bound.reshape(-1)[i]):.3g}"}
    badness = np.where(ok, 0.0, err / np.maximum(bound, 1e-300))
    return mask_judge(expected, got, dt, ok, shown, badness=badness)


def _tolerance(key: str) -> str:
    acc = "2^-52" if key == "f64" else "2^-23"
    return f"|err| <= 2*sqrt(k)*{acc}*(|A|@|B|) + 1 ulp({key}) vs the float64 product ({COMPUTE[key]})"


def _row_fields(b: StructuredBuilt, res) -> dict:
    bb, m, n, k = b.geo["bmnk"]
    flops = 2.0 * bb * m * n * k
    out = {"compute_type": COMPUTE[b.key], "flops": flops}
    if "cfg" in b.geo:
        out["gemm_config"] = b.geo["cfg"].as_dict()
    t = res.time_ms
    if t:
        out["tflops"] = flops / (t * 1e-3) / 1e12
    return out


def _chain_geometry(lays: dict, params: dict) -> tuple[dict, tuple[int, ...]]:
    """A chain step's geometry: gemm_config of the operands' views (MatMulNonContiguous where
    Candle refuses them) and the (..., m, n) output."""
    l, r = lays["lhs"].shape, lays["rhs"].shape
    bmnk = case_bmnk(l, r)
    return {"bmnk": bmnk, "cfg": gemm_config(bmnk, lays["lhs"], lays["rhs"])}, tuple(l[:-2]) + (l[-2], r[-1])


CHAIN = ChainSupport(_chain_geometry, lambda ins, geo: np.matmul(to_f64(ins["lhs"]), to_f64(ins["rhs"])),
                     acc_bound=lambda key, lays: 2.0 * math.sqrt(lays["lhs"].shape[-1]) * ACC_EPS[key])


OPS = [
    Op(name="matmul.gemm", family="matmul", root="gemm", dtypes=DTYPES, inputs=("lhs", "rhs"),
       value_classes=("normal",),
       abi=("b:size_t", "m:size_t", "n:size_t", "k:size_t", "lhs_layout", "rhs_layout", "lhs", "rhs", "dst"),
       semantics="Candle matmul: gemm_config (column-major Cᵀ=Bᵀ·Aᵀ, a = rhs, b = lhs) then one strided-batched "
                 "GEMM, alpha 1 beta 0; f32/f16/bf16 GemmStridedBatchedEx with COMPUTE_32F and f32 alpha/beta "
                 "(DEFAULT_TENSOR_OP), f64 dgemmStridedBatched; MatMulNonContiguous for other layouts",
       divergences=("Candle CPU backend uses the gemm crate (different summation order)",),
       spec=StructuredSpec(shapes=SHAPES, build=_build, pack=_pack, expected=_expected, judge=_judge,
                           tolerance=_tolerance, library="blas.gemm", row_fields=_row_fields, chain=CHAIN)),
]
