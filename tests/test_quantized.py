"""The quantized family (#18: GGUF dequantize, quantize_q8_1, dmmv, mmvq): Candle's launches, the
reference's kernel-faithful details, and broken subjects (tests/fakes_quantized.py) each caught with
an exact verdict and worst element. No GPU needed."""
import zlib

import numpy as np
import pytest

from fakes_quantized import (FirstWarpOnlyReduction, KMinHighBitsMisread, NibblesSwapped, Q81SumIgnored,
                             RowStrideOffByOne, ScaleReadAsF32)
from parity.run.cases import Case, expand, load_sweep
from parity.run.engine import run_case
from parity.executors.cpu import CpuExecutor
from parity.ops import CATALOG
from parity.ops.quantized import FORMATS, dequantize_reference
from parity.ops.quantized import matvec, q8_1
from parity.ops.quantized.blocks import random_blocks

QUANT = [op for op in CATALOG.values() if op.family == "quantized"]
DEQUANT = [op for op in QUANT if op.name.startswith("quant.dequantize_")]
# Candle's main added get_rows, mmvq_gguf and indexed_moe (#31): tests/test_candle_new_kernels.py has them
NEW_IN_MAIN = ("quant.get_rows_", "quant.mmvq_gguf_", "quant.indexed_moe_")
MATVEC = [op for op in QUANT if op not in DEQUANT and not op.name.startswith(NEW_IN_MAIN)]

# (subject, case, verdict, n_bad, worst coords, expected, got)
CAUGHT = [
    (NibblesSwapped, "quant.dequantize_q4_0/f32/b13/normal/s0", "fail", 376, [167],
     "-1.990966796875", "1.990966796875"),
    (ScaleReadAsF32, "quant.dequantize_q4_0/f32/b13/normal/s0", "fail", 372, [248],
     "2.578125", "-8.655955637815429e+35"),
    (KMinHighBitsMisread, "quant.dequantize_q4_K/f32/b3/normal/s0", "fail", 288, [497],
     "-0.2339630126953125", "0.1071624755859375"),
    # mmvq's q8_1 s term (q4_0: d4 * (sumi*d8 - 8*s)) dropped; K-quants never read s (next test)
    (Q81SumIgnored, "quant.mmvq_q4_0_b1/f32/c1280/normal/s0", "fail", 7, [0, 3],
     "-6.521728515625", "69.90632629394531"),
    (Q81SumIgnored, "quant.mmvq_q5_1_b3/f32/c768/normal/s0", "fail", 102, [0, 11],
     "46.99394989013672", "-3862.57373046875"),
    (RowStrideOffByOne, "quant.dmmv_q6_K/f32/c1280/normal/s0", "fail", 6, [0, 1],
     "63.95981216430664", "720.2302856445312"),
    (RowStrideOffByOne, "quant.mmvq_q8_0_b2/f32/c768/normal/s0", "fail", 66, [1, 27],
     "-54.96965408325195", "35.28587341308594"),
    (FirstWarpOnlyReduction, "quant.mmvq_q4_K_b1/f32/c1280/normal/s0", "fail", 7, [0, 3],
     "75.67878723144531", "24.955284118652344"),
    (FirstWarpOnlyReduction, "quant.mmvq_q4_0_b6/f32/c1280/normal/s0", "fail", 36, [3, 1],
     "19.210294723510742", "-24.778608322143555"),
    # mmq's q4_K multiplies the sub-block mins by s (mmvq's by d8*sum(q8))
    (Q81SumIgnored, "quant.mmq_q4_K/f32/k1024/normal/s0", "fail", 9092, [24, 18],
     "50.601375579833984", "-7.733729839324951"),
    (RowStrideOffByOne, "quant.mmq_q3_K/f32/k1536/normal/s0", "fail", 640, [3, 22],
     "5.482096195220947", "-60.414466857910156"),
]


@pytest.mark.parametrize("subject,case_id,verdict,n_bad,coords,expected,got", CAUGHT,
                         ids=[f"{c[0].__name__}:{c[1]}" for c in CAUGHT])
def test_broken_quantized_subject_is_caught(subject, case_id, verdict, n_bad, coords, expected, got):
    row = run_case(Case.parse(case_id), subject())
    assert (row["verdict"], row["n_bad"]) == (verdict, n_bad)
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == (coords, expected, got)
    if case_id.startswith("quant.dequantize_"):
        qk = FORMATS[case_id.split("/")[0].removeprefix("quant.dequantize_")].qk
        assert (w["inputs"]["block"], w["inputs"]["element"]) == (str(coords[0] // qk), str(coords[0] % qk))
    else:
        assert (w["inputs"]["batch"], w["inputs"]["row"]) == (str(coords[0]), str(coords[1]))


@pytest.mark.parametrize("subject,case_id", [
    (Q81SumIgnored, "quant.mmvq_q4_K_b1/f32/c1280/normal/s0"),       # K-quant mins use d8*sum(q8), not s
    (FirstWarpOnlyReduction, "quant.dmmv_q4_0/f32/c1280/normal/s0"),  # dmmv: one warp per row already
    (Q81SumIgnored, "quant.mmq_q5_0/f32/k1024/normal/s0"),          # mmq folds q5_0's -16 into the quants
    (FirstWarpOnlyReduction, "quant.mmq_q4_0/f32/k1024/normal/s0"),  # mmq: one thread per output
])
def test_a_bug_the_kernel_cannot_have_passes(subject, case_id):
    assert run_case(Case.parse(case_id), subject())["verdict"] == "pass"


@pytest.mark.parametrize("case_id", sorted({c[1] for c in CAUGHT}))
def test_correct_subject_passes_the_same_cases(case_id):
    assert run_case(Case.parse(case_id), CpuExecutor())["verdict"] == "pass"


def test_cpu_level_passes_the_family():
    """The emulation (the kernels' own indexing over blockIdx/threadIdx) agrees bit for bit with
    gguf's dequantizers on every case: random and adversarial blocks, partial tiles."""
    rows = [run_case(c, CpuExecutor()) for op in DEQUANT for c in expand(op, None, None, None, [0])]
    assert len(rows) == 2 * 2 * (5 * 5 + 6 * 4)
    assert all(r["verdict"] == "pass" for r in rows), [r["case_id"] for r in rows if r["verdict"] != "pass"]


def _launch(case_id):
    c = Case.parse(case_id)
    spec = CATALOG[c.op].spec
    return spec.pack(spec.build(c, np.random.default_rng([zlib.crc32(c.id.encode()), 0])))


@pytest.mark.parametrize("case_id,kernel,grid,block,k,nbytes", [
    ("quant.dequantize_q4_0/f32/b13/normal/s0", "dequantize_block_q4_0_f32", 2, 32, 13, 13 * 18),
    ("quant.dequantize_q8_0/f16/b100/normal/s0", "dequantize_block_q8_0_f16", 13, 32, 100, 100 * 34),
    ("quant.dequantize_q5_0/f32/b13/normal/s0", "dequantize_block_q5_0_f32", 1, 256, 416, 13 * 22),
    ("quant.dequantize_q5_1/f16/b100/normal/s0", "dequantize_block_q5_1_f16", 7, 256, 3200, 100 * 24),
    ("quant.dequantize_q4_K/f32/b3/normal/s0", "dequantize_block_q4_K_f32", 3, 32, None, 3 * 144),
    ("quant.dequantize_q6_K/f16/b3/normal/s0", "dequantize_block_q6_K_f16", 3, 64, None, 3 * 210),
    ("quant.dequantize_q8_K/f32/b16/normal/s0", "dequantize_block_q8_K_f32", 16, 32, None, 16 * 292),
])
def test_launch_is_candles(case_id, kernel, grid, block, k, nbytes):
    """candle-core/src/quantized/cuda.rs dequantize_f32/_f16: grid ceil(n/256) with 32 threads and
    k = n/32 (q4_0, q4_1, q8_0); ceil(n/512) x 256 with k = n (q5_0, q5_1); one block of 32 or 64
    threads per super-block and no k (K-quants)."""
    la = _launch(case_id)
    assert (la.kernel, la.grid, la.block) == (kernel, (grid, 1, 1), (block, 1, 1))
    assert [a.name for a in la.args] == (["vx", "y", "k"] if k is not None else ["vx", "y"])
    if k is not None:
        assert la.args[2].kind == "i32" and la.args[2].value == k
    assert la.buffers["vx"].size == nbytes and la.outputs == ("y",)


def test_adversarial_blocks_cover_the_scale_pool():
    c = Case.parse("quant.dequantize_q4_1/f16/b13/special/s0")
    b = CATALOG[c.op].spec.build(c, np.random.default_rng(0))
    blocks = b.bases["vx"].reshape(13, 20)
    d = set(blocks[:, 0:2].copy().view(np.uint16).reshape(-1).tolist())
    assert {0x7BFF, 0xFBFF, 0x0001, 0x03FF, 0x0000, 0x8000, 0x7E00} <= d


def test_q4_0_zeros_are_positive_like_the_kernel():
    """gguf computes d*(q-8) (-0 for a negative d); the kernel d*q + (-8d), always +0."""
    blk = np.zeros(18, np.uint8)
    blk[0:2] = np.array([-1.5], np.float16).view(np.uint8)
    blk[2:] = 0x88                                   # every quant 8: every element zero
    out = dequantize_reference("q4_0", blk)
    assert np.all(out == 0) and not np.signbit(out).any()


def test_q8_k_reference_is_ours():
    """gguf has no q8_K dequantizer: d (f32 at byte 0) times the 256 int8 quants; bsums unread."""
    blk = np.zeros(FORMATS["q8_K"].size, np.uint8)
    blk[0:4] = np.array([0.5], np.float32).view(np.uint8)
    blk[4:260] = np.arange(-128, 128, dtype=np.int8).view(np.uint8)
    blk[260:] = 0xFF
    assert np.array_equal(dequantize_reference("q8_K", blk), np.arange(-128, 128, dtype=np.float32) * 0.5)


def test_the_quant_sweep_holds_the_family_pr_and_nightly_all_of_it_and_smoke_a_sample():
    """quant holds every case of the family; pr and nightly every one too (the bundled kernels
    passed them all on an H100), smoke a sample of every kernel but mmvq at batch 2..8."""
    quant = load_sweep("quant")
    assert {Case.parse(c.id).op for c in quant} == {op.name for op in QUANT} and len(quant) == 196 + 606 + 104 + 1974
    # + get_rows (104), mmvq_gguf quantize + plain (18 + 1920) and indexed_moe (36): #31

    def kinds(cases):                      # (nightly runs three seeds of each)
        return {(c.op, c.dtype, c.layout, c.values) for c in cases if c.op.startswith("quant.")}
    for name in ("pr", "nightly"):
        assert kinds(load_sweep(name)) == kinds(quant), name
    smoke = [c for c in load_sweep("smoke") if c.op.startswith("quant.")]
    assert {c.op for c in smoke} == {op.name for op in QUANT
                                     if not (op.name.startswith("quant.mmvq") and not op.name.endswith("_b1"))
                                     and not op.name.startswith(("quant.mmvq_gguf_quantize", "quant.indexed_moe"))}
    assert len(smoke) < 300            # 238 with #31 (get_rows, mmvq_gguf b1)


def test_coverage_knows_candles_dequantize_declarations(tmp_path):
    """Declared as quantized.cu's DEQUANTIZE / DEQUANTIZE_K macros expand them: present, not extra;
    a k-less q4_0 is a signature mismatch."""
    from parity.suite.coverage import coverage
    from parity.suite.scan import discover
    (tmp_path / "q.cu").write_text(
        '#include <cuda_fp16.h>\n'
        'extern "C" __global__ void dequantize_block_q4_0_f32(const void * __restrict__ vx, float * __restrict__ y,'
        ' const int k) {}\n'
        'extern "C" __global__ void dequantize_block_q4_K_f16(const void * __restrict__ vx, half * __restrict__ y) {}\n'
        'extern "C" __global__ void dequantize_block_q8_0_f16(const void * __restrict__ vx, half * __restrict__ y) {}\n')
    rows = {r.kernel: r.status for r in coverage(discover(tmp_path, use_cpp=False))}
    assert rows["dequantize_block_q4_0_f32"] == "present" and rows["dequantize_block_q4_K_f16"] == "present"
    assert rows["dequantize_block_q8_0_f16"] == "signature-mismatch"
    assert "extra" not in {s for k, s in rows.items() if k.startswith("dequantize_block")}


# ------------------------------------------------------------------------------ q8_1, dmmv, mmvq
def test_cpu_level_passes_q8_1_dmmv_mmvq_mmq():
    """quantize_q8_1, 10 dmmv, 80 mmvq and 10 mmq kernels, 3 shapes each x {normal, special}."""
    rows = [run_case(c, CpuExecutor()) for op in MATVEC for c in expand(op, None, None, None, [0])]
    assert len(MATVEC) == 1 + 10 + 80 + 10 and len(rows) == 2 * 3 * 101
    assert all(r["verdict"] == "pass" for r in rows), [r["case_id"] for r in rows if r["verdict"] != "pass"]


@pytest.mark.parametrize("case_id,kernel,grid,block,ints", [
    ("quant.quantize_q8_1/f32/k1000x3/normal/s0", "quantize_q8_1", (4, 3, 1), (256, 1, 1), [1000, 1024]),
    ("quant.dmmv_q4_0/f32/c768/normal/s0", "dequantize_mul_mat_vec_q4_0_cuda", (33, 1, 1), (32, 1, 1), [768, 33]),
    ("quant.dmmv_q5_K/f32/c768/normal/s0", "dequantize_mul_mat_vec_q5_k", (33, 1, 1), (32, 1, 1), [768]),
    ("quant.mmvq_q4_K_b1/f32/c1280/normal/s0", "mul_mat_vec_q4_K_q8_1_cuda1", (7, 1, 1), (32, 4, 1),
     [1280, 7, 1536, 7]),
    ("quant.mmvq_q6_K_b4/f32/c768/normal/s0", "mul_mat_vec_q6_K_q8_1_cuda4", (17, 1, 1), (32, 4, 1),
     [768, 34, 1024, 34]),
    ("quant.mmvq_q8_0_b5/f32/c256/normal/s0", "mul_mat_vec_q8_0_q8_1_cuda5", (1, 1, 1), (32, 2, 1),
     [256, 2, 512, 2]),
    ("quant.mmq_q4_0/f32/k1024/normal/s0", "mul_mat_q4_0", (2, 2, 1), (32, 4, 1), [1024, 130, 70, 1024, 130]),
    ("quant.mmq_q8_0/f32/k1024/normal/s0", "mul_mat_q8_0", (3, 1, 1), (32, 4, 1), [1024, 130, 70, 1024, 130]),
    ("quant.mmq_q6_K/f32/k1536/normal/s0", "mul_mat_q6_K", (1, 1, 1), (32, 4, 1), [1536, 33, 20, 1536, 33]),
])
def test_matvec_launch_is_candles(case_id, kernel, grid, block, ints):
    """cuda.rs: quantize_q8_1 grid (ceil(kx_padded/256), ky) x 256 with kx_padded = pad(kx, 512);
    dmmv grid nrows x 32 (q5_k has no nrows parameter); mmvq (ncols_x, nrows_x, nrows_y = padded
    ncols, nrows_dst) on grid nrows (b = 1) or ceil(nrows/2), block (32, 4) for b <= 4, (32, 2) above;
    mmq (ncols_x, nrows_x, ncols_y, nrows_y = padded k, nrows_dst) on (ceil(n/mmq_y), ceil(m/mmq_x))
    x (32, 4) with Candle's per-format tile (q4_0 64 x 128, q8_0 128 x 64, q6_K 64 x 64)."""
    la = _launch(case_id)
    assert (la.kernel, la.grid, la.block) == (kernel, grid, block)
    assert [a.value for a in la.args if a.kind == "i32"] == ints


def test_weights_are_stored_as_candle_pads_them():
    """load_quantized: the blocks, then MATRIX_ROW_PADDING elements' worth of zero bytes; the q8_1
    activations hold pad(ncols, 512)/32 blocks per batch row."""
    la = _launch("quant.mmvq_q4_0_b3/f32/c1280/normal/s0")
    nbytes = 6 * 1280 // 32 * 18
    assert la.buffers["vx"].size == nbytes + 512 // 32 * 18 and not la.buffers["vx"][nbytes:].any()
    assert la.buffers["vy"].size == 3 * 1536 // 32 * 36


def test_q8_1_reference_is_the_kernels_arithmetic():
    """amax/127 as d, roundf (ties away from zero), zero blocks all 0, s the f32 sum rounded to half
    (inf past 65504), padding blocks zero."""
    x = np.zeros((1, 96), np.float32)
    x[0, :4] = [127, 2.5, -2.5, 0.5]                  # d = 1: 2.5 -> 3, -2.5 -> -3, 0.5 -> 1
    x[0, 64:96] = 4096                                 # sum 131072: half inf
    d, s, qs = q8_1.fields(q8_1.quantize_q8_1(x, 512), 1)
    assert d[0, 0] == 1 and list(qs[0, 0, :4]) == [127, 3, -3, 1] and s[0, 0] == np.float16(127 + 0.5)
    assert d[0, 1] == 0 and not qs[0, 1].any() and s[0, 1] == 0
    assert np.isinf(s[0, 2]) and (qs[0, 2] == 127).all()
    assert d.shape == (1, 16) and not d[0, 3:].any() and not qs[0, 3:].any()


def test_mmvq_reference_is_the_integer_dot_product():
    """q4_0: d4 * (sum(q4 * q8) * d8 - 8 * s) and q4_1: sum(q4 * q8) * d4*d8 + m4 * s, written out
    from the bytes: on the q8_1 quants and s, not on the float activations."""
    for fmt, case_id in (("q4_0", "quant.mmvq_q4_0_b1/f32/c256/normal/s0"),
                         ("q4_1", "quant.mmvq_q4_1_b1/f32/c256/normal/s0")):
        c = Case.parse(case_id)
        b = CATALOG[c.op].spec.build(c, np.random.default_rng(1))
        size = FORMATS[fmt].size
        blk = b.inputs["vx"][: 8 * size].reshape(8, size).astype(np.int64)
        d8, s8, q8 = (a[0, :8].astype(np.float64) for a in q8_1.fields(b.inputs["vy"], 1))
        total = 0.0
        for k in range(8):
            half = lambda at: float(b.inputs["vx"][k * size + at:k * size + at + 2].copy().view(np.float16)[0])
            qs = blk[k, size - 16:]
            q4 = np.concatenate([qs & 0xF, qs >> 4])
            sumi = float((q4 * q8[k]).sum())
            total += (half(0) * (sumi * d8[k] - 8 * s8[k]) if fmt == "q4_0"
                      else sumi * half(0) * d8[k] + half(2) * s8[k])
        value, tol = matvec.reference(b)
        assert abs(value[0, 0] - total) <= 1e-9 * max(1.0, abs(total)) and 0 < tol[0, 0] < 1e-3 * abs(total)


def test_coverage_knows_candles_matvec_declarations(tmp_path):
    """quantize_q8_1, a dmmv (legacy and the nrows-less q5_k), an mmvq, an mmq: present as quantized.cu
    declares them; an mmvq without nrows_dst is a signature mismatch."""
    from parity.suite.coverage import coverage
    from parity.suite.scan import discover
    (tmp_path / "q.cu").write_text(
        'extern "C" __global__ void quantize_q8_1(const float * __restrict__ x, void * __restrict__ vy, '
        'const int kx, const int kx_padded) {}\n'
        'extern "C" __global__ void dequantize_mul_mat_vec_q4_0_cuda(const void * vx, const float * y, float * dst, '
        'const int ncols, const int nrows) {}\n'
        'extern "C" __global__ void dequantize_mul_mat_vec_q5_k(const void * __restrict__ vx, '
        'const float * __restrict__ yy, float * __restrict__ dst, const int ncols) {}\n'
        'extern "C" __global__ void mul_mat_vec_q4_K_q8_1_cuda3(const void * vx, const void * vy, float * dst, '
        'const int ncols_x, const int nrows_x, const int nrows_y, const int nrows_dst) {}\n'
        'extern "C" __global__ void mul_mat_vec_q2_K_q8_1_cuda8(const void * vx, const void * vy, float * dst, '
        'const int ncols_x, const int nrows_x, const int nrows_y) {}\n'
        'extern "C" __global__ void\n    mul_mat_q4_0(\n    const void * __restrict__ vx, '
        'const void * __restrict__ vy, float * __restrict__ dst,\n    const int ncols_x, const int nrows_x, '
        'const int ncols_y, const int nrows_y, const int nrows_dst) {}\n')
    rows = {r.kernel: r.status for r in coverage(discover(tmp_path, use_cpp=False))}
    for k in ("quantize_q8_1", "dequantize_mul_mat_vec_q4_0_cuda", "dequantize_mul_mat_vec_q5_k",
              "mul_mat_vec_q4_K_q8_1_cuda3", "mul_mat_q4_0"):
        assert rows[k] == "present", k
    assert rows["mul_mat_vec_q2_K_q8_1_cuda8"] == "signature-mismatch"
    assert "extra" not in rows.values()


@pytest.mark.parametrize("case_id,n_bad", [("quant.mmvq_q4_0_b1/f32/c1280/normal/s0", 7),
                                           ("quant.mmvq_q4_K_b4/f32/c768/normal/s0", 135),
                                           ("quant.mmq_q6_K/f32/k1024/normal/s0", 8970)])
def test_the_tolerance_rejects_a_float_activation_product(case_id, n_bad):
    """The bound is tight enough that a port computing on the float activations (not their q8_1
    quantization, as Candle's kernels do) fails: the exact product w @ x misses it almost everywhere."""
    c = Case.parse(case_id)
    spec = CATALOG[c.op].spec
    rng = np.random.default_rng([zlib.crc32(c.id.encode()), 0])
    b = spec.build(c, rng)
    g = b.geo
    fmt = FORMATS[g["format"]]
    rng = np.random.default_rng([zlib.crc32(c.id.encode()), 0])       # replay build's draws: blocks, then x
    random_blocks(fmt, g["nrows"] * g["ncols"] // fmt.qk, rng)
    x = q8_1.activations(rng, (g["batch"], g["ncols"]), False).astype(np.float64)
    vy = q8_1.quantize_q8_1(x.astype(np.float32), q8_1.padded(g["ncols"])).reshape(-1)
    assert np.array_equal(vy, b.inputs["vy"])
    w = dequantize_reference(fmt.name, b.inputs["vx"][: g["nrows"] * g["ncols"] // fmt.qk * fmt.size])
    got = (x @ w.reshape(g["nrows"], g["ncols"]).astype(np.float64).T).astype(np.float32)
    cmp = spec.judge(spec.expected(b), got, b)
    assert not cmp.passed and cmp.n_bad == n_bad
    assert spec.judge(spec.expected(b), matvec.reference(b)[0].astype(np.float32), b).passed
