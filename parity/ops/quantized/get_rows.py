"""get_rows_<f32|f16|bf16|q4_0|q4_1|q5_0|q5_1|q8_0|q2_K|q3_K|q4_K|q5_K|q6_K>: the embedding lookup of
a (quantized) table by u32 ids (Candle's `quantized.cu`, host `candle-core/src/quantized/cuda.rs`
`get_rows`, reached from `QCudaStorage::embedding`).

    (const void* src0 /*table*/, const uint32_t* src1 /*ids*/, float* dst, const int64_t ne00 /*hidden*/,
     const size_t nb01 /*bytes per table row*/)

dst[i, :] = the table's row ids[i], dequantized to f32. Host: dst = alloc (not zeroed) of
ids_len * hidden f32; nothing is launched when ids is empty; nb01 = hidden * type_size / block_size;
grid (ids_len, y, 1):
- f32, f16, bf16: block 256, y = min(ceil(hidden/256), 65535); thread t of block (i, by) converts
  elements by*256 + t, + y*256, ... of row ids[i] (src0 + id*ne00 elements; nb01 unread);
- q4_0, q4_1, q5_0, q5_1, q8_0: block 256, y = min(ceil(hidden/512), 65535); element pairs
  i00 = 2*(by*256 + t), + y*256, ...: llama.cpp's dequantize_<fmt> of the block i00/32 (two values,
  i00%32/qr and + qk/2 (qr 2) or + 1 (q8_0)), the row at src0 + id*nb01 bytes;
- K-quants: block 64 (q2_K, q3_K, q5_K, q6_K) or 32 (q4_K), y = hidden/256 (refused past 65535):
  CUDA block (i, by) dequantizes super-block by of row ids[i] (blocks_per_row = nb01/type_size).
The table is the QTensor's blocks plus Candle's MATRIX_ROW_PADDING zero bytes.

Reference: the gguf package's dequantizer on the chosen rows (f16/bf16/f32 tables: the value
converted to f32, exact). Every dequantized value is one f32 rounding of exact products (see
`blocks.py`), so the judgement is exact: equal as numbers (+0 equals -0: Candle's get_rows q4_0 is
(q-8)*d, -0 where d < 0, the dequantize kernels' d*q + (-8d) is +0) and NaN where the reference is
NaN. ids at both edges of the table, repeated and out of order; adversarial blocks (extreme f16
scales: ±max, subnormals, ±0, NaN) in the `special` class.
"""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import contiguous
from parity.ops.base import Arg, Launch, Op, ShapeClass, StructuredSpec
from parity.ops.quantized.blocks import FORMATS, QK_K, QuantKernel, adversarial, dequantize_reference, random_blocks
from parity.ops.quantized.q8_1 import MATRIX_ROW_PADDING
from parity.ops.structured import StructuredBuilt, mask_judge, out_buffer, rng_values, same_value

CUDA_GET_ROWS_BLOCK_SIZE = 256
FLOATS = ("f32", "f16", "bf16")
QUANTS = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K")
K_BLOCK = {"q2_K": 64, "q3_K": 64, "q4_K": 32, "q5_K": 64, "q6_K": 64}

# (name, table rows, hidden, ids, doc)
_SHAPES = {n: ShapeClass(n, doc, {"rows": r, "hidden": h, "ids": ids}) for n, r, h, ids, doc in [
    ("h512", 9, 512, (8, 0, 3, 3, 8, 5, 0), "table 9 x 512, ids 8 0 3 3 8 5 0: both edges, repeated, out of order"),
    ("h768", 4, 768, (3, 1, 3, 0, 2), "hidden 768: the second CUDA block row half used (quants), 3 super-blocks"),
    ("h4096", 5, 4096, (4, 0, 2), "hidden 4096: 16 (f32) / 8 (quants) CUDA blocks per row, 16 super-blocks"),
    ("one", 1, 256, (0, 0, 0), "a one-row table, the same id three times"),
]}


def _table(kind: str, rows: int, hidden: int, special: bool, rng) -> np.ndarray:
    """The table as Candle stores it: f32/f16/bf16 elements, or quant blocks + the row padding."""
    if kind in FLOATS:
        return rng_values(dtype(kind), rows * hidden, "special" if special else "normal", rng)
    fmt = FORMATS[kind]
    blocks = random_blocks(fmt, rows * hidden // fmt.qk, rng)
    if special:
        blocks = adversarial(fmt, blocks)
    pad = np.zeros(MATRIX_ROW_PADDING // fmt.qk * fmt.size, np.uint8)
    return np.concatenate([blocks.reshape(-1), pad])


def launch_geometry(kind: str, n_ids: int, hidden: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    if kind in K_BLOCK:
        return (n_ids, hidden // QK_K, 1), (K_BLOCK[kind], 1, 1)
    per = CUDA_GET_ROWS_BLOCK_SIZE * (1 if kind in FLOATS else 2)
    return (n_ids, min(-(-hidden // per), 65535), 1), (CUDA_GET_ROWS_BLOCK_SIZE, 1, 1)


def row_bytes(kind: str, hidden: int) -> int:
    if kind in FLOATS:
        return hidden * np.dtype(dtype(kind).np).itemsize
    fmt = FORMATS[kind]
    return hidden // fmt.qk * fmt.size


def _build(case, rng) -> StructuredBuilt:
    op = case.catalog_op
    kind = op.spec.variant.format
    g = dict(op.spec.shapes[case.layout].geo)
    table = _table(kind, g["rows"], g["hidden"], case.values == "special", rng)
    ids = np.array(g["ids"], dtype=np.uint32)
    g.update(kind=kind)
    tdt = dtype(kind) if kind in FLOATS else dtype("u8")
    return StructuredBuilt(case, op, case.dtype, {"src0": tdt, "src1": dtype("u32")},
                           {"src0": contiguous((table.size,)), "src1": contiguous((ids.size,))},
                           {"src0": table, "src1": ids}, {"src0": table, "src1": ids}, g,
                           out_name="dst", out_dtype=dtype("f32"), out_shape=(ids.size, g["hidden"]))


def _pack(b: StructuredBuilt) -> Launch:
    g = b.geo
    grid, block = launch_geometry(g["kind"], len(g["ids"]), g["hidden"])
    args = [Arg("ptr", ("src0", 0), name="src0"), Arg("ptr", ("src1", 0), name="src1"),
            Arg("ptr", ("dst", 0), name="dst"), Arg("i64", g["hidden"], name="ne00"),
            Arg("size_t", row_bytes(g["kind"], g["hidden"]), name="nb01")]
    return Launch(b.op.kernel, args, {"src0": b.bases["src0"], "src1": b.bases["src1"], "dst": out_buffer(b)},
                  ("dst",), grid=grid, block=block,
                  dtypes={"src0": b.dtypes["src0"].name, "src1": "u32", "dst": "f32"})


def dequantized_rows(kind: str, table: np.ndarray, ids: np.ndarray, hidden: int, nb01: int) -> np.ndarray:
    """(len(ids), hidden) f32: row id of the table, dequantized (gguf) or converted."""
    if kind in FLOATS:
        return np.stack([table[int(i) * hidden:(int(i) + 1) * hidden] for i in ids]).astype(np.float32) \
            if len(ids) else np.zeros((0, hidden), np.float32)
    raw = np.stack([table[int(i) * nb01:(int(i) + 1) * nb01] for i in ids])
    return dequantize_reference(kind, raw.reshape(-1)).reshape(len(ids), hidden)


def _expected(b: StructuredBuilt) -> np.ndarray:
    g = b.geo
    return dequantized_rows(g["kind"], b.inputs["src0"], b.inputs["src1"], g["hidden"],
                            row_bytes(g["kind"], g["hidden"]))


def _judge(expected, got, b: StructuredBuilt):
    ids = b.inputs["src1"]

    def inputs(i, coords):
        return {"id": str(int(ids[coords[0]])), "element": str(coords[1])}
    return mask_judge(expected, got, dtype("f32"), same_value(got, expected), inputs=inputs)


def _emulate(ex, launch: Launch, bufs, op: Op, key: str) -> None:
    """Row ids[blockIdx.x] at src0 + id*nb01 bytes (f32/f16/bf16: id*ne00 elements); the elements the
    grid covers (K-quants: gridDim.y super-blocks; the others loop to ne00)."""
    kind = op.spec.variant.format
    a = {x.name: x for x in launch.args}
    hidden, nb01 = int(a["ne00"].value), int(a["nb01"].value)
    tn, to = a["src0"].value
    table = bufs[tn][ex.pointer_offset(to):]
    ids = bufs[a["src1"].value[0]][ex.pointer_offset(a["src1"].value[1]):][: launch.grid[0]]
    dn, do = a["dst"].value
    dst = bufs[dn][ex.pointer_offset(do):]
    rows = dequantized_rows(kind, table, ids, hidden, nb01)
    covered = min(hidden, launch.grid[1] * QK_K) if kind in K_BLOCK else hidden
    for r in range(len(ids)):
        dst[r * hidden: r * hidden + covered] = rows[r, :covered]


def _op(kind: str) -> Op:
    kernel = f"get_rows_{kind}"
    if kind in FLOATS:
        sem = f"dst[i] = (float) table[ids[i]] ({kind} rows); grid (n_ids, min(ceil(hidden/256), 65535)), block 256"
    elif kind in K_BLOCK:
        sem = (f"dst[i] = dequantize({kind} row ids[i]); grid (n_ids, hidden/256), block {K_BLOCK[kind]}: "
               "one super-block per CUDA block")
    else:
        sem = (f"dst[i] = dequantize({kind} row ids[i]); grid (n_ids, min(ceil(hidden/512), 65535)), block 256: "
               "two elements per thread")
    return Op(name=f"quant.get_rows_{kind}", family="quantized", root=kernel, kernel=kernel, dtypes=("f32",),
              inputs=("src0", "src1"), value_classes=("normal", "special"),
              out_rule="f32", abi=("src0", "src1", "dst", "ne00:i64", "nb01:size_t"), semantics=sem,
              spec=StructuredSpec(shapes=_SHAPES, build=_build, pack=_pack, expected=_expected, judge=_judge,
                                  emulate=_emulate, variant=QuantKernel("get_rows", kind),
                                  tolerance=lambda key: "exact values (gguf's dequantizer; +0 == -0, NaN to NaN)"))


OPS = [_op(k) for k in FLOATS + QUANTS]
