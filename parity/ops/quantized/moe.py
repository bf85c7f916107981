"""indexed_moe_forward_<q2k|q3k|q4k|q5k|q6k|q8_0>_q8_1: the mixture-of-experts mat-vec of Candle's
`quantized.cu`, host `candle-core/src/quantized/cuda.rs` `indexed_moe_forward_fused_q8_1_input`.

    (const void* all_weights /*[experts, n, k] blocks*/, const void* all_inputs /*q8_1 rows*/,
     const unsigned int* indices /*[batch, topk]*/, float* all_outputs /*[batch, topk, n]*/,
     const int n, const int k, const int batch, const int topk, const int k_padded, const int input_dim1)

Host: the f32 input [batch, input_dim1, k] (input_dim1 = 1 or topk) quantized with quantize_q8_1
(kx = k, kx_padded = pad(k, 512), batch*input_dim1 rows) into a zeroed buffer; out = alloc_zeros
(batch*topk*n); grid (n, batch, topk), block (32, 4, 1). Task t = b*topk + j multiplies expert
e = indices[t] by input row (b if input_dim1 == 1 else t) and writes row blockIdx.x of output t:
mmvq at batch 1 (4 warps, the shared-memory hand-off, warp reduction), vec_dots of quantized.cu.
The expert stride is the kernel's (size_t)(n*k)/QK_K * sizeof(block): right for the K-quants, but
for q8_0 (32-element blocks) an eighth of a matrix, so expert e > 0 reads from inside the matrices
of experts < e. The catalog follows the kernel (the ABI sheet lists it as a Candle bug); weights
are allocated for every expert, so the reads stay inside the tensor.

Reference: matvec.py's mmvq reference per task on the expert's weights (at the kernel's stride)
and the task's q8_1 row; judged as matvec.py judges mmvq (f32 output). Ids: the first and last
expert, an expert repeated within a token, ids out of order; a per-task input (input_dim1 = topk)
and a shared one (input_dim1 = 1).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.quantized import matvec, q8_1
from parity.ops.quantized.blocks import FORMATS, QK_K, QuantKernel, adversarial, random_blocks
from parity.ops.quantized.gguf_fast import judge_rounded, mmvq_sums
from parity.ops.quantized.matvec import _nan_in_row0
from parity.ops.quantized.q8_1 import MATRIX_ROW_PADDING, QK8_1
from parity.ops.structured import StructuredBuilt

FMTS = {"q2_K": "q2k", "q3_K": "q3k", "q4_K": "q4k", "q5_K": "q5k", "q6_K": "q6k", "q8_0": "q8_0"}

# (name, experts, n, k, ids [batch][topk], input_dim1 is topk, doc)
_SHAPES = {s[0]: ShapeClass(s[0], s[-1], {"experts": s[1], "n": s[2], "k": s[3], "ids": s[4], "per_task": s[5]})
           for s in [
    ("e4k512", 4, 33, 512, ((3, 0), (0, 3), (2, 2)), False,
     "4 experts, n 33, k 512, batch 3 x topk 2, one input per token; ids at both edges, 2 twice in a token"),
    ("e8k1280", 8, 7, 1280, ((7, 1, 7, 0), (5, 4, 3, 2)), True,
     "8 experts, n 7, k 1280 (q8_1 padding), batch 2 x topk 4, one input per task; ids repeated, descending"),
    ("e2k256", 2, 64, 256, ((1, 1),), True, "2 experts, k 256 (one super-block), the last expert twice"),
]}


def expert_stride_bytes(fmt: str, n: int, k: int) -> int:
    """The kernel's weight_expert_stride_bytes: (n*k)/QK_K blocks (module doc)."""
    return n * k // QK_K * FORMATS[fmt].size


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    fmt_name = op.spec.variant.format
    fmt = FORMATS[fmt_name]
    g = dict(op.spec.shapes[case.layout].geo)
    E, n, k, ids = g["experts"], g["n"], g["k"], np.array(g["ids"], dtype=np.uint32)
    batch, topk = ids.shape
    special = case.values == "special"
    blocks = random_blocks(fmt, E * n * k // fmt.qk, rng)
    if special:
        blocks = _nan_in_row0(fmt, adversarial(fmt, blocks), k // fmt.qk)
    pad = np.zeros(MATRIX_ROW_PADDING // fmt.qk * fmt.size, np.uint8)
    w = np.concatenate([blocks.reshape(-1), pad])
    dim1 = topk if g["per_task"] else 1
    x = q8_1.activations(rng, (batch * dim1, k), special)
    vy = q8_1.quantize_q8_1(x, q8_1.padded(k)).reshape(-1)
    g.update(format=fmt_name, batch=batch, topk=topk, input_dim1=dim1)
    return StructuredBuilt(case, op, case.dtype, {"w": dtype("u8"), "vy": dtype("u8"), "ids": dtype("u32")},
                           {"w": contiguous((w.size,)), "vy": contiguous((vy.size,)), "ids": contiguous((ids.size,))},
                           {"w": w, "vy": vy, "ids": ids.reshape(-1)}, {"w": w, "vy": vy, "ids": ids.reshape(-1)}, g,
                           out_name="out", out_dtype=dtype("f32"), out_shape=(batch, topk, n),
                           out_init=np.zeros(batch * topk * n, np.float32))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    ints = [("n", g["n"]), ("k", g["k"]), ("batch", g["batch"]), ("topk", g["topk"]),
            ("k_padded", q8_1.padded(g["k"])), ("input_dim1", g["input_dim1"])]
    args = [Arg("ptr", ("w", 0), name="all_weights"), Arg("ptr", ("vy", 0), name="all_inputs"),
            Arg("ptr", ("ids", 0), name="indices"), Arg("ptr", ("out", 0), name="all_outputs")]
    args += [Arg("i32", v, name=nm) for nm, v in ints]
    return Launch(b.op.kernel, args, {"w": b.bases["w"], "vy": b.bases["vy"], "ids": b.bases["ids"],
                                      "out": b.out_init.copy()}, ("out",),
                  grid=(g["n"], g["batch"], g["topk"]), block=(32, 4, 1),
                  dtypes={"w": "u8", "vy": "u8", "ids": "u32", "out": "f32"})


def _tasks(g: dict, ids: np.ndarray):
    """(task, expert, input row) of every (b, j)."""
    for t, e in enumerate(ids.tolist()):
        yield t, int(e), (t // g["topk"] if g["input_dim1"] == 1 else t)


def reference(b: StructuredBuilt) -> tuple[np.ndarray, np.ndarray]:
    g = b.geo
    fmt = FORMATS[g["format"]]
    n, k = g["n"], g["k"]
    row_bytes = q8_1.padded(k) // QK8_1 * q8_1.Q8_1_SIZE
    val, tol = np.zeros((g["batch"] * g["topk"], n)), np.zeros((g["batch"] * g["topk"], n))
    for t, e, r in _tasks(g, b.inputs["ids"]):
        at = e * expert_stride_bytes(g["format"], n, k)
        one = SimpleNamespace(geo={"kind": "mmvq", "format": g["format"], "ncols": k, "nrows": n, "batch": 1},
                              inputs={"vx": b.inputs["w"][at: at + n * k // fmt.qk * fmt.size],
                                      "vy": b.inputs["vy"][r * row_bytes:(r + 1) * row_bytes]})
        v, tl = matvec.reference(one)
        val[t], tol[t] = v[0], tl[0]
    return val.reshape(b.out_shape), tol.reshape(b.out_shape)


def _judge(expected, got, b: StructuredBuilt):
    e, tol = reference(b)
    ids = b.inputs["ids"].reshape(b.geo["batch"], b.geo["topk"])

    def inputs(i, coords):
        return {"token": str(coords[0]), "slot": str(coords[1]), "expert": str(int(ids[coords[0], coords[1]])),
                "row": str(coords[2]), "tolerance": f"{float(tol.reshape(-1)[i]):.3g}"}
    return judge_rounded(e, tol, got, dtype("f32"), inputs)


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    a = {x.name: x for x in launch.args}
    fmt_name = op.spec.variant.format
    fmt = FORMATS[fmt_name]
    n, k, topk, kp, dim1 = (int(a[x].value) for x in ("n", "k", "topk", "k_padded", "input_dim1"))
    batch = int(launch.grid[1])
    w = bufs[a["all_weights"].value[0]][ex.pointer_offset(a["all_weights"].value[1]):]
    vy = bufs[a["all_inputs"].value[0]][ex.pointer_offset(a["all_inputs"].value[1]):]
    ids = bufs[a["indices"].value[0]][ex.pointer_offset(a["indices"].value[1]):][: batch * topk]
    out = bufs[a["all_outputs"].value[0]][ex.pointer_offset(a["all_outputs"].value[1]):]
    bpr, row_bytes = k // fmt.qk, kp // QK8_1 * q8_1.Q8_1_SIZE
    g = {"topk": topk, "input_dim1": dim1}
    for t, e, r in _tasks(g, ids):
        at = e * expert_stride_bytes(fmt_name, n, k)
        allb = w[at: at + (n * bpr + MATRIX_ROW_PADDING // fmt.qk) * fmt.size]
        allb = allb[: allb.size // fmt.size * fmt.size].reshape(-1, fmt.size)
        idx = (np.arange(n)[:, None] * ex.quant_row_stride(bpr) + np.arange(bpr)[None, :]).reshape(-1)
        s = mmvq_sums(ex, fmt_name, allb[idx], vy[r * row_bytes:(r + 1) * row_bytes], 1, n, k, kp // QK8_1,
                      int(launch.block[1]))
        out[t * n:(t + 1) * n] = s[0]


def _op(fmt: str) -> Op:
    kernel = f"indexed_moe_forward_{FMTS[fmt]}_q8_1"
    return Op(name=f"quant.indexed_moe_{fmt}", family="quantized", root=kernel, kernel=kernel, dtypes=("f32",),
              inputs=("w",), value_classes=("normal", "special"), out_rule="f32",
              abi=("all_weights", "all_inputs", "indices", "all_outputs", "n:i32", "k:i32", "batch:i32",
                   "topk:i32", "k_padded:i32", "input_dim1:i32"),
              semantics=(f"out[b, j] = {fmt} expert indices[b, j] (n x k) x q8_1 input row (b or b*topk+j); "
                         "grid (n, batch, topk), block (32, 4); experts (n*k)/256 blocks apart"),
              divergences=(("q8_0: experts strided by (n*k)/256 blocks (the kernel's QK_K), not n*k/32: "
                            "expert e > 0 reads inside earlier experts' weights (Candle bug, followed)",)
                           if fmt == "q8_0" else ()),
              spec=StructuredSpec(shapes=_SHAPES, build=_build, pack=_pack,
                                  expected=lambda b: reference(b)[0], judge=_judge, emulate=_emulate,
                                  variant=QuantKernel("indexed_moe", fmt),
                                  tolerance=lambda key: "per output (k/32 + 16) * 2^-23 * sum of |parts| "
                                                        "(matvec.py); NaN to NaN, inf exact"))


OPS = [_op(f) for f in FMTS]
