"""Candle's kernels parity could not check before issue #31: sum_* (reduce.cu), get_rows_*
(quantized.cu), mmvq_gguf_quantize_q8_1_* and mmvq_gguf_*_plain_cuda<b> (mmvq_gguf.cu),
indexed_moe_forward_* (quantized.cu). Without a GPU: Candle's launches, the cpu level on every case,
the bundled HIP source run on the host with g++ where it keeps no barrier (sum, get_rows) and a
planted bug per family caught with its exact verdict and worst element, the HIP sources compiled
through the HIP-on-NVIDIA mapping. On a GPU (`python3 -m pytest -q -s -m gpu
tests/test_candle_new_kernels.py`, PARITY_CANDLE_KERNELS=<candle-kernels/src> for Candle's own): every
case on hip-on-nvidia in wave 64 and wave 32, and on Candle's CUDA kernels."""
from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

import hip_host
from fakes_candle_new import GET_ROWS_IDS_IGNORED, SUM_STRIDES_IGNORED
from parity.cases import Case, expand
from parity.engine import run_case
from parity.executors.cpu import CpuExecutor
from parity.levels import DEFAULT_HIP_SRC
from parity.ops import CATALOG
from parity.ops.base import ExecResult

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
    assert len(rows) == 5 * 9 * 3
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
