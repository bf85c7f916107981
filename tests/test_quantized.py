"""The quantized family (GGUF dequantize, #18): Candle's launches, the reference's kernel-faithful
details, and broken subjects (tests/fakes_quantized.py) each caught with an exact verdict and worst
element. No GPU needed."""
import zlib

import numpy as np
import pytest

from fakes_quantized import KMinHighBitsMisread, NibblesSwapped, ScaleReadAsF32
from parity.cases import Case, expand, load_sweep
from parity.engine import run_case
from parity.executors.cpu import CpuExecutor
from parity.ops import CATALOG
from parity.ops.quantized import FORMATS, dequantize_reference

QUANT = [op for op in CATALOG.values() if op.family == "quantized"]

# (subject, case, verdict, n_bad, worst coords, expected, got)
CAUGHT = [
    (NibblesSwapped, "quant.dequantize_q4_0/f32/b13/normal/s0", "fail", 376, [167],
     "-1.990966796875", "1.990966796875"),
    (ScaleReadAsF32, "quant.dequantize_q4_0/f32/b13/normal/s0", "fail", 372, [248],
     "2.578125", "-8.655955637815429e+35"),
    (KMinHighBitsMisread, "quant.dequantize_q4_K/f32/b3/normal/s0", "fail", 288, [497],
     "-0.2339630126953125", "0.1071624755859375"),
]


@pytest.mark.parametrize("subject,case_id,verdict,n_bad,coords,expected,got", CAUGHT,
                         ids=[f"{c[0].__name__}:{c[1]}" for c in CAUGHT])
def test_broken_quantized_subject_is_caught(subject, case_id, verdict, n_bad, coords, expected, got):
    row = run_case(Case.parse(case_id), subject())
    assert (row["verdict"], row["n_bad"]) == (verdict, n_bad)
    w = row["worst"]
    assert (w["coords"], w["expected"], w["got"]) == (coords, expected, got)
    qk = FORMATS[case_id.split("/")[0].removeprefix("quant.dequantize_")].qk
    assert (w["inputs"]["block"], w["inputs"]["element"]) == (str(coords[0] // qk), str(coords[0] % qk))


@pytest.mark.parametrize("case_id", sorted({c[1] for c in CAUGHT}))
def test_correct_subject_passes_the_same_cases(case_id):
    assert run_case(Case.parse(case_id), CpuExecutor())["verdict"] == "pass"


def test_cpu_level_passes_the_family():
    """The emulation (the kernels' own indexing over blockIdx/threadIdx) agrees bit for bit with
    gguf's dequantizers on every case: random and adversarial blocks, partial tiles."""
    rows = [run_case(c, CpuExecutor()) for op in QUANT for c in expand(op, None, None, None, [0])]
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


def test_the_quant_sweep_and_the_bundled_sweeps_hold_the_family():
    """quant is the family alone; pr and nightly (the bundled suite has the kernels) every quant case
    of theirs, smoke every format on its smaller block counts."""
    quant = load_sweep("quant")
    assert {Case.parse(c.id).op for c in quant} == {op.name for op in QUANT} and len(quant) == 196
    assert {c.id for c in load_sweep("pr") if c.op.startswith("quant.")} == {c.id for c in quant}
    nightly = [c for c in load_sweep("nightly") if c.op.startswith("quant.")]
    assert len(nightly) == 3 * 196
    smoke = [c for c in load_sweep("smoke") if c.op.startswith("quant.")]
    assert {c.op for c in smoke} == {op.name for op in QUANT}
    assert len(smoke) == 196 - 2 * 2 * 11 and not [c for c in smoke if c.layout in ("b1000", "b250")]


def test_coverage_knows_candles_dequantize_declarations(tmp_path):
    """Declared as quantized.cu's DEQUANTIZE / DEQUANTIZE_K macros expand them: present, not extra;
    a k-less q4_0 is a signature mismatch."""
    from parity.coverage import coverage
    from parity.suite import discover
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
