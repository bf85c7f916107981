"""Candle's kernels parity could not check before issue #31: sum_* (reduce.cu), get_rows_*
(quantized.cu), mmvq_gguf_quantize_q8_1_* and mmvq_gguf_*_plain_cuda<b> (mmvq_gguf.cu),
indexed_moe_forward_* (quantized.cu). Without a GPU: Candle's launches, the cpu level on every case,
the bundled HIP source run on the host with g++ where it keeps no barrier (sum, get_rows) and a
planted bug per family caught with its exact verdict and worst element, the HIP sources compiled
through the HIP-on-NVIDIA mapping. On a GPU (`python3 -m pytest -q -s -m gpu
tests/test_candle_new_kernels.py`, PARITY_CANDLE_KERNELS=<candle-kernels/src> for Candle's own): every
case on hip-on-nvidia in wave 64 and wave 32, and on Candle's CUDA kernels."""
from __future__ import annotations

import collections
import shutil
import zlib
from pathlib import Path

import hip_host
import numpy as np
import pytest
from fakes_candle_new import GET_ROWS_IDS_IGNORED, SUM_STRIDES_IGNORED

from parity.executors.cpu import CpuExecutor
from parity.ops import CATALOG
from parity.ops.base import ExecResult
from parity.run.cases import Case, expand
from parity.run.engine import run_case
from parity.run.session import DEFAULT_HIP_SRC

needs_cxx = pytest.mark.skipif(hip_host.CXX is None, reason="g++ not on PATH")

SUM_OPS = ["reduce.sum_atomic"]


def _cases(patterns):
    import fnmatch
    ops = [op for name, op in CATALOG.items() if any(fnmatch.fnmatchcase(name, p) for p in patterns)]
    return [c for op in ops for c in expand(op, None, None, None, [0])]


def _launch(case_id):
    c = Case.parse(case_id)
    spec = CATALOG[c.op].spec
    return spec.pack(spec.build(c, np.random.default_rng([zlib.crc32(c.id.encode()), 0])))


def _host_verdict(kernels, case_id):
    case = Case.parse(case_id)
    spec = CATALOG[case.op].spec
    built, launch, expected = spec.prepare(case)
    fields, _ = spec.verdict(built, expected, ExecResult("ok", kernels.run(launch)))
    return fields


# ------------------------------------------------------------------------------------ sum_*
def test_cpu_level_passes_the_atomic_sums():
    rows = [run_case(c, CpuExecutor()) for c in _cases(SUM_OPS)]
    assert len(rows) == 5 * 9 * 3 + 2 * 9          # + the positive class, f16 and bf16
    assert all(r["verdict"] == "pass" for r in rows), [r["case_id"] for r in rows if r["verdict"] != "pass"]


def test_sum_launch_is_candles():
    """ReduceSum (candle-core cuda_backend, before FastReduce): sum dims sorted, for_num_elems,
    info = [dims, strides, sum_dims_l, sum_dims_s], zeroed output."""
    launch = _launch("reduce.sum_atomic/f32/multi/normal/s0")
    assert launch.kernel == "sum_f32" and launch.grid == (1, 1, 1) and launch.block == (1024, 1, 1)
    assert [int(a.value) for a in launch.args[:3]] == [120, 3, 2]
    assert list(map(int, launch.args[3].value)) == [4, 6, 5, 30, 5, 1, 4, 5, 30, 1]
    assert not launch.buffers["out"].any()
    big = _launch("reduce.sum_atomic/u32/big/normal/s0")
    assert big.grid == (15, 1, 1)


@pytest.fixture(scope="module")
def sum_on_host(tmp_path_factory):
    return hip_host.build(DEFAULT_HIP_SRC / "reduce_sum.hip", tmp_path_factory.mktemp("sum"))


@needs_cxx
def test_sum_source_run_on_the_host_passes(sum_on_host):
    """backends/hip/reduce_sum.hip's own source, every sum case (atomics in thread order)."""
    bad = [c.id for c in _cases(SUM_OPS) if _host_verdict(sum_on_host, c.id)["verdict"] != "pass"]
    assert not bad


@needs_cxx
def test_sum_source_with_strides_ignored_fails_on_the_host(tmp_path):
    file, old, new = SUM_STRIDES_IGNORED
    text = (DEFAULT_HIP_SRC / file).read_text()
    assert old in text
    kernels = hip_host.build(DEFAULT_HIP_SRC / file, tmp_path, text.replace(old, new))
    f = _host_verdict(kernels, "reduce.sum_atomic/f32/transposed/normal/s0")
    w = f["worst"]
    assert (f["verdict"], f["n_bad"], w["coords"], w["expected"], w["got"]) == EXPECT_SUM_BUG
    assert _host_verdict(kernels, "reduce.sum_atomic/f32/row100/normal/s0")["verdict"] == "pass"


# every one of the 33 rows summed from the wrong (contiguous-order) elements
EXPECT_SUM_BUG = ("fail", 33, [11, 0], "-22.915359497070312", "42.50479507446289")


# -------------------------------------------------------------------------------- get_rows_*
GET_ROWS_OPS = ["quant.get_rows_*"]


def test_cpu_level_passes_get_rows():
    rows = [run_case(c, CpuExecutor()) for c in _cases(GET_ROWS_OPS)]
    assert len(rows) == 13 * 4 * 2
    assert all(r["verdict"] == "pass" for r in rows), [r["case_id"] for r in rows if r["verdict"] != "pass"]


@pytest.mark.parametrize("case_id,kernel,grid,block,nb01", [
    ("quant.get_rows_f32/f32/h4096/normal/s0", "get_rows_f32", (3, 16, 1), (256, 1, 1), 4 * 4096),
    ("quant.get_rows_bf16/f32/h768/normal/s0", "get_rows_bf16", (5, 3, 1), (256, 1, 1), 2 * 768),
    ("quant.get_rows_q5_0/f32/h768/normal/s0", "get_rows_q5_0", (5, 2, 1), (256, 1, 1), 24 * 22),
    ("quant.get_rows_q4_K/f32/h4096/normal/s0", "get_rows_q4_K", (3, 16, 1), (32, 1, 1), 16 * 144),
    ("quant.get_rows_q6_K/f32/h512/normal/s0", "get_rows_q6_K", (7, 2, 1), (64, 1, 1), 2 * 210),
])
def test_get_rows_launch_is_candles(case_id, kernel, grid, block, nb01):
    launch = _launch(case_id)
    assert (launch.kernel, launch.grid, launch.block) == (kernel, grid, block)
    assert [a.name for a in launch.args] == ["src0", "src1", "dst", "ne00", "nb01"]
    assert int(launch.args[4].value) == nb01


def test_get_rows_ids_hit_both_edges_repeat_and_go_backwards():
    launch = _launch("quant.get_rows_q8_0/f32/h512/special/s0")
    ids = launch.buffers["src1"].tolist()
    assert ids == [8, 0, 3, 3, 8, 5, 0] and launch.buffers["src1"].dtype == np.uint32


@pytest.fixture(scope="module")
def get_rows_on_host(tmp_path_factory):
    return hip_host.build(DEFAULT_HIP_SRC / "quantized_get_rows.hip", tmp_path_factory.mktemp("get_rows"))


@needs_cxx
def test_get_rows_source_run_on_the_host_passes(get_rows_on_host):
    """backends/hip/quantized_get_rows.hip's own source on every case: exact, adversarial scales too."""
    bad = [c.id for c in _cases(GET_ROWS_OPS) if _host_verdict(get_rows_on_host, c.id)["verdict"] != "pass"]
    assert not bad


@needs_cxx
def test_get_rows_source_with_the_ids_ignored_fails_on_the_host(tmp_path):
    file, old, new = GET_ROWS_IDS_IGNORED
    text = (DEFAULT_HIP_SRC / file).read_text()
    assert text.count(old) == 1
    kernels = hip_host.build(DEFAULT_HIP_SRC / file, tmp_path, text.replace(old, new))
    f = _host_verdict(kernels, "quant.get_rows_q4_K/f32/h512/normal/s0")
    w = f["worst"]
    assert (f["verdict"], f["n_bad"], w["coords"], w["expected"], w["got"]) == EXPECT_GET_ROWS_BUG


# every row but id 0 is a wrong row (the row id 0 outputs happen to be right: ids 8 0 3 3 8 5 0 -> rows 0..6)
EXPECT_GET_ROWS_BUG = ("fail", 2560, [1, 335], "5.5137176513671875", "-10.596138000488281")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("file", ["reduce_sum.hip", "quantized_get_rows.hip"])
def test_new_sources_compile_for_hip_on_nvidia(file, wave, tmp_path):
    """Each new source through the HIP-on-NVIDIA mapping with nvcc (sm_90), in both wavefront modes."""
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor(DEFAULT_HIP_SRC, wave=wave, compiler="nvcc", arch="90", cache_root=tmp_path)
    res = ex.toolchain.compile(DEFAULT_HIP_SRC / file)
    assert res.ok, res.error.message if res.error else ""


# ------------------------------------------------- mmvq_gguf_quantize_q8_1_*, mmvq_gguf_*_plain_cuda<b>
GGUF_OPS = ["quant.mmvq_gguf_*"]
MOE_OPS = ["quant.indexed_moe_*"]


def test_cpu_level_passes_mmvq_gguf_and_moe():
    cases = _cases(GGUF_OPS + MOE_OPS)
    assert len(cases) == 3 * 3 * 2 + 240 * 4 * 2 + 6 * 3 * 2
    rows = [run_case(c, CpuExecutor()) for c in cases]
    assert all(r["verdict"] == "pass" for r in rows), [r["case_id"] for r in rows if r["verdict"] != "pass"][:20]


@pytest.mark.parametrize("case_id,kernel,grid,block,ints", [
    ("quant.mmvq_gguf_q4_K_bf16_b1/bf16/c768/normal/s0", "mmvq_gguf_q4_k_bf16_plain_cuda1", (33, 1, 1), (32, 4, 1),
     [768, 33, 32, 33]),
    ("quant.mmvq_gguf_q8_0_f16_b3/f16/c256x3/normal/s0", "mmvq_gguf_q8_0_f16_plain_cuda3", (2, 1, 1), (32, 4, 1),
     [256, 3, 16, 3]),
    ("quant.mmvq_gguf_q6_K_f32_b8/f32/c1280/normal/s0", "mmvq_gguf_q6_k_f32_plain_cuda8", (3, 1, 1), (32, 2, 1),
     [1280, 6, 48, 6]),
    ("quant.indexed_moe_q8_0/f32/e8k1280/normal/s0", "indexed_moe_forward_q8_0_q8_1", (7, 2, 4), (32, 4, 1),
     [7, 1280, 2, 4, 1536, 4]),
    ("quant.indexed_moe_q4_K/f32/e4k512/normal/s0", "indexed_moe_forward_q4k_q8_1", (33, 3, 2), (32, 4, 1),
     [33, 512, 3, 2, 512, 1]),
])
def test_mmvq_gguf_and_moe_launches_are_candles(case_id, kernel, grid, block, ints):
    launch = _launch(case_id)
    assert (launch.kernel, launch.grid, launch.block) == (kernel, grid, block)
    assert [int(a.value) for a in launch.args if a.kind == "i32"] == ints


def test_quantize_q8_1_variants_take_their_dtype():
    launch = _launch("quant.mmvq_gguf_quantize_q8_1_bf16/bf16/k1000x3/special/s0")
    assert launch.kernel == "mmvq_gguf_quantize_q8_1_bf16" and launch.grid == (4, 3, 1)
    assert str(launch.buffers["x"].dtype) == "bfloat16"


def test_moe_q8_0_experts_are_strided_as_the_kernel_strides_them():
    """(n*k)/QK_K blocks: for q8_0 an eighth of a matrix (Candle's stride, followed)."""
    from parity.ops.quantized.moe import expert_stride_bytes
    assert expert_stride_bytes("q8_0", 7, 1280) == 7 * 1280 // 256 * 34
    assert expert_stride_bytes("q4_K", 7, 1280) == 7 * 1280 // 256 * 144


# planted bugs (tests/fakes_quantized.py subjects, the same hooks): (subject, case, n_bad, coords, expected, got)
GGUF_CAUGHT = {
    # bf16 output, 4 warps: only warp 0's partials kept
    "FirstWarpOnlyReduction:gguf": ("FirstWarpOnlyReduction", "quant.mmvq_gguf_q4_K_bf16_b1/bf16/c1280/normal/s0",
                                    ("fail", 7, [0, 2], "-193.0", "-3.609375")),
    # every expert's rows 1.. start a block early (rows 0 right: 48 of 56 outputs wrong)
    "RowStrideOffByOne:moe": ("RowStrideOffByOne", "quant.indexed_moe_q6_K/f32/e8k1280/normal/s0",
                              ("fail", 48, [1, 0, 4], "948.7326049804688", "-1046.253173828125")),
}


@pytest.mark.parametrize("name", ["FirstWarpOnlyReduction:gguf", "RowStrideOffByOne:moe"])
def test_broken_gguf_and_moe_subjects_are_caught(name):
    import fakes_quantized
    subject, case_id, expect = GGUF_CAUGHT[name]
    row = run_case(Case.parse(case_id), getattr(fakes_quantized, subject)())
    w = row["worst"]
    assert (row["verdict"], row["n_bad"], w["coords"], w["expected"], w["got"]) == expect


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("file", ["quantized_gguf.hip", "quantized_moe.hip"])
def test_gguf_and_moe_sources_compile_for_hip_on_nvidia(file, wave, tmp_path):
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor(DEFAULT_HIP_SRC, wave=wave, compiler="nvcc", arch="90", cache_root=tmp_path)
    res = ex.toolchain.compile(DEFAULT_HIP_SRC / file)
    assert res.ok, res.error.message if res.error else ""


# ---------------------------------------------------------------------------------- on a GPU
NEW = SUM_OPS + GET_ROWS_OPS + GGUF_OPS + MOE_OPS


def _gpu_rows(level):
    from parity.run.engine import run_cases
    cases = _cases(NEW)
    rows = run_cases(cases, level.executor, level.availability.device)
    assert len(rows) == len(cases)
    print(f"#31's kernels on {level.name}: {len(rows)} cases: "
          f"{dict(collections.Counter(r['verdict'] for r in rows))}")
    return [f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:200]}" for r in rows if r["verdict"] != "pass"]


@pytest.mark.gpu
def test_new_kernels_pass_on_candles_cuda_kernels(candle_level):
    bad = _gpu_rows(candle_level)
    assert not bad, f"{len(bad)} not passing:\n" + "\n".join(bad[:40])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["hip-on-nvidia", "hip-on-nvidia/w32"])
def test_new_kernels_pass_on_the_bundled_suite(name):
    from parity.run.levels import make
    lv = make(name, DEFAULT_HIP_SRC, None)
    if not lv.availability.available:
        pytest.skip(f"{name} unavailable: {lv.availability.reason}")
    try:
        bad = _gpu_rows(lv)
    finally:
        lv.executor.close()
    assert not bad, f"{name}: {len(bad)} not passing:\n" + "\n".join(bad[:40])


# ------------------------------------------------------------------------------- drift check
def test_drift_is_empty_for_candles_current_kernels():
    """Candle main (PARITY_CANDLE_KERNELS, or the ignored export .candle/candle-kernels/src): every
    kernel it defines is in the catalog, and the bundled record of it is current (no kernel gone, no
    parameter list changed). The drift check's own lines: tests/test_upstream_drift.py."""
    import os
    src = os.environ.get("PARITY_CANDLE_KERNELS") or str(Path(__file__).resolve().parents[1] / ".candle/candle-kernels/src")
    if not Path(src).is_dir():
        pytest.skip("no candle-kernels/src here")
    import json

    from parity.core.resources import data_dir
    from parity.profiles.candle import UPSTREAM_RECORD
    from parity.suite.coverage import drift
    from parity.suite.scan import discover
    assert drift(discover(src), lock=json.loads((data_dir() / UPSTREAM_RECORD).read_text())) == []
