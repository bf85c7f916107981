"""The bundled HIP suite (backends/hip) against the catalog: every expected kernel present with the
ABI's parameter list, and every source compiled for four AMD targets with zero spills (amd-static)."""
import pytest

from parity.suite.amd_static import analyze, hipcc
from parity.suite.coverage import coverage, summary
from parity.run.session import DEFAULT_HIP_SRC
from parity.ops import CATALOG
from parity.suite.scan import discover

AMD_TARGETS = ("gfx90a", "gfx908", "gfx1030", "gfx940")


def test_coverage_is_complete():
    rows = coverage(discover(DEFAULT_HIP_SRC))
    s = summary(rows)
    bad = [(r.kernel, r.status, r.suggestion) for r in rows if r.status in ("missing", "signature-mismatch")]
    assert not bad, bad[:20]
    # every quantized kernel of the catalog, mmq included (quantized.hip, quantized_mmv.hip, quantized_mmq.hip)
    quant = {op.kernel_name(k) for op in CATALOG.values() if op.family == "quantized" for k in op.dtypes}
    assert {r.kernel for r in rows if r.status == "present"} >= quant and len(quant) == 22 + 1 + 10 + 80 + 10 + 13 + 243 + 6
    assert s["present"] >= 337 + 198 + 22 + 1 + 10 + 80 + 10 + 267   # elementwise, structured, GGUF, #31 at least


@pytest.mark.slow
@pytest.mark.skipif(not hipcc(), reason="hipcc not installed (apt-get install hipcc libamdhip64-dev)")
def test_amd_static_every_kernel_compiles_for_four_targets_without_spills():
    rows = analyze(DEFAULT_HIP_SRC, AMD_TARGETS)
    errors = [(r.kernel, r.arch, r.message[:300]) for r in rows if r.status != "ok"]
    assert not errors, errors[:5]
    assert {r.arch for r in rows} == set(AMD_TARGETS)
    spills = [(r.kernel, r.arch) for r in rows if (r.vgpr_spill or 0) + (r.sgpr_spill or 0)]
    assert not spills, spills[:10]
    assert all(r.scratch_bytes == 0 for r in rows if r.scratch_bytes is not None)
    waves = {r.arch: r.wavefront for r in rows}
    assert waves == {"gfx90a": 64, "gfx908": 64, "gfx940": 64, "gfx1030": 32}
    assert len({r.kernel for r in rows}) >= 337 + 198
