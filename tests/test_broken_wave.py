"""Eight reduce kernels in Candle's ABI (tests/fixtures/broken_wave/), each with one classic
warp-size bug: every one passes on 32-lane warps and fails (or crashes, as ROCm's mask check
traps) on 64-lane wavefronts, with exactly the worst element its NumPy model (tests/fakes_wave.py)
predicts. CPU: the models' verdicts, and the fixtures compile (nvcc at both wave sizes, hipcc for
gfx90a). GPU: `pytest -m gpu tests/test_broken_wave.py` runs them at --wave 32 and --wave 64."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fakes_wave import WaveBug
from parity.executors.hip_nvidia import HipOnNvidiaExecutor, hip_level_name
from parity.run.cases import Case
from parity.run.engine import run_case

BROKEN = Path(__file__).parent / "fixtures" / "broken_wave"

# fixture -> (case, verdict at wave 64)
FIXTURES = {
    "ballot_in_u32": ("reduce.max/f32/row1900/normal/s0", "fail"),
    "lane_mod_32": ("reduce.sum/u32/row1900/normal/s0", "fail"),
    "warp_div_32": ("reduce.min/f32/row1900/normal/s0", "fail"),
    "shfl_offset_16": ("reduce.max/f32/row1900/normal/s0", "fail"),
    "shfl_no_width": ("reduce.sum/u32/row1900/normal/s0", "fail"),
    "popc_ballot": ("reduce.sum/u32/row1900/normal/s0", "fail"),
    "lds_tile_32_lanes": ("reduce.min/f32/row1900/normal/s0", "fail"),
    "mask32_sync": ("reduce.sum/u32/row1900/normal/s0", "crash"),
}
# Names the fixture needs from the 32-lane mapping at wave 32 (see tests/test_wave64.py).
NEEDS32 = {"ballot_in_u32": ["__ballot"], "popc_ballot": ["__ballot"]}


def skip_unless_mapped(name: str, wave: int) -> None:
    from test_wave64 import mapping_lacks
    lacks = mapping_lacks(NEEDS32.get(name, [])) if wave == 32 else []
    if lacks:
        pytest.skip(f"wave 32: the 32-lane mapping (hip_runtime.h) lacks {', '.join(lacks)}")


def test_every_fixture_is_listed():
    assert sorted(p.name for p in BROKEN.iterdir() if p.is_dir()) == sorted(FIXTURES)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_model_passes_at_32_and_breaks_at_64(name):
    case_id, verdict = FIXTURES[name]
    assert run_case(Case.parse(case_id), WaveBug(name, 32))["verdict"] == "pass"
    row = run_case(Case.parse(case_id), WaveBug(name, 64))
    assert row["verdict"] == verdict, row["message"]
    if verdict == "fail":
        assert row["n_bad"] > 0 and row["worst"] is not None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_compiles_nvcc(name, wave, tmp_path):
    skip_unless_mapped(name, wave)
    ex = HipOnNvidiaExecutor(BROKEN / name, wave=wave, compiler="nvcc", arch="90", cache_root=tmp_path)
    res = ex.toolchain.compile(BROKEN / name / "kernel.hip")
    assert res.ok, res.error.message if res.error else ""


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not on PATH")
@pytest.mark.parametrize("name", sorted(n for n in FIXTURES if n != "mask32_sync"))   # _sync: ROCm >= 6.2
def test_fixture_compiles_hipcc_gfx90a(name, tmp_path):
    p = subprocess.run(["hipcc", "--offload-arch=gfx90a", "-c", str(BROKEN / name / "kernel.hip"),
                        "-o", str(tmp_path / "k.o")], capture_output=True, text=True,
                       env={**os.environ, "HIP_PLATFORM": "amd"}, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_broken_wave_kernel_on_gpu(name, wave):
    from parity.run.levels import make
    skip_unless_mapped(name, wave)
    case_id, verdict = FIXTURES[name]
    level = make(hip_level_name(wave), BROKEN / name, None, case_timeout=60)
    assert level.availability.available, level.availability.reason
    try:
        row = run_case(Case.parse(case_id), level.executor)
    finally:
        level.executor.close()
    assert row.get("wave") == wave
    if wave == 32:
        assert row["verdict"] == "pass", row["message"]
        return
    assert row["verdict"] == verdict, row["message"]
    want = run_case(Case.parse(case_id), WaveBug(name, 64))
    if verdict == "fail":                      # the GPU shows exactly the bug the model predicts
        assert (row["n_bad"], row["worst"]) == (want["n_bad"], want["worst"])
    else:
        assert "wave64 mode" in row["message"]     # the trap hint names the wave-wide operation


def test_wave64_failures_link_to_amd_static_lines():
    """A kernel failing at wave 64 and passing at wave 32 is listed with the lines amd-static
    flagged in its source (rows as a --wave 32,64 run writes them)."""
    from parity.render.waves import evidence, markdown
    rows = []
    for name, (case_id, verdict) in FIXTURES.items():
        kernel = {"sum": "fast_sum_u32", "max": "fast_max_f32", "min": "fast_min_f32"}[case_id.split("/")[0].split(".")[1]]
        rows += [{"case_id": case_id, "kernel": kernel, "level": "hip-on-nvidia", "verdict": verdict},
                 {"case_id": case_id, "kernel": kernel, "level": "hip-on-nvidia/w32", "verdict": "pass"}]
        ev = evidence(rows[-2:], BROKEN / name)
        assert len(ev) == 1 and ev[0]["wave32"] == "pass" and ev[0]["verdicts64"] == [verdict]
        if name in ("lane_mod_32", "warp_div_32", "shfl_offset_16", "ballot_in_u32", "popc_ballot"):
            assert any("kernel.hip" in n for n in ev[0]["static"]), (name, ev[0]["static"])
        assert "wave64 evidence" in markdown(ev)
    assert evidence([{"case_id": "c", "kernel": "k", "level": "hip-on-nvidia", "verdict": "pass"}], BROKEN) == []


def test_wave64_evidence_says_fails_at_32_too_and_lists_only_suspects():
    """A missing kernel is another finding's business; a kernel failing at both wave sizes is
    listed as `fails too` in one line, never as a wave-size suspect; one that passes its rechecked
    cases at 32 is the suspect (a recheck runs only a handful of a kernel's failures)."""
    from parity.render.waves import evidence, markdown, recheck_ids
    rows = [{"case_id": "a", "kernel": "uexp_f32", "level": "hip-on-nvidia", "verdict": "missing"},
            {"case_id": "b", "kernel": "uneg_f32", "level": "hip-on-nvidia", "verdict": "crash"},
            {"case_id": "b", "kernel": "uneg_f32", "level": "hip-on-nvidia/w32", "verdict": "crash"}]
    rows += [{"case_id": f"s{i}", "kernel": "softmax_f16", "level": "hip-on-nvidia", "verdict": "fail"}
             for i in range(6)]
    assert recheck_ids(rows) == ["s0", "s1", "s2", "s3"]          # b already ran at 32; a is missing
    rows += [{"case_id": c, "kernel": "softmax_f16", "level": "hip-on-nvidia/w32", "verdict": "pass"}
             for c in ("s0", "s1", "s2", "s3")]
    ev = {e["kernel"]: e for e in evidence(rows, BROKEN / "lane_mod_32")}
    assert set(ev) == {"uneg_f32", "softmax_f16"}
    assert (ev["uneg_f32"]["wave32"], ev["uneg_f32"]["suspect"]) == ("fails too", False)
    assert (ev["softmax_f16"]["wave32"], ev["softmax_f16"]["suspect"]) == ("pass", True)
    md = markdown(list(ev.values()))
    assert "| `softmax_f16` | fail (6 cases) | **passes at 32**: wave-size suspect |" in md
    assert "Fail at wave 32 too (not a wave-size bug): `uneg_f32`." in md
