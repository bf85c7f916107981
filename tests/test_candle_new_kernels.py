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
