"""Wave64 mode of hip-on-nvidia (issue #16): the emulation header, the executor/CLI plumbing and
the unit kernels of tests/fixtures/wave64.

Expected values come from ROCm's documented semantics, written here in NumPy, never from the
emulation: the index formulas of amd_warp_functions.h (lane = index mod 64 as ds_bpermute
addresses lanes; an inactive source lane reads 0), __ballot = 64-bit mask of the active lanes
whose predicate holds, __any/__all over the active lanes, __ballot_sync(m, p) = __ballot(p) & m
(amd_warp_sync_functions.h, ROCm >= 6.2). Wave 32 uses the same formulas with 32 lanes (what
ROCm does on RDNA wave32 and what CUDA documents for its warps).

CPU tests compile (nvcc, hipcc for gfx90a); `pytest -m gpu tests/test_wave64.py` runs the kernels.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from parity.executors.hip_nvidia import (HIP_MAPPING, HipOnNvidiaExecutor, HipOnNvidiaW32Executor,
                                        WAVE64_CRASH_HINT, hip_level_name)
from parity.run.levels import expand_waves, level_wave, parse_waves
from parity.ops.base import Arg, Launch

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "wave64"
BUNDLED = REPO / "backends" / "hip"
HIP_RUNTIME = HIP_MAPPING / "hip" / "hip_runtime.h"

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_hipcc = pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not on PATH")

# Names each unit file needs from the 32-lane mapping (wave 32 mode); wave 64 has them all
# (parity_wave64.h). The 32-lane mapping of main defines only the shuffles so far: files whose
# names it lacks are skipped at wave 32, saying which, until that mapping grows them.
NEEDS32 = {"shuffles.hip": [], "votes.hip": ["__lane_id", "__ballot", "__any", "__all", "__mbcnt_lo"],
           "sync.hip": ["__activemask", "__ballot_sync", "__any_sync", "__all_sync", "__shfl_xor_sync", "__syncwarp"]}


def mapping_lacks(names: list[str]) -> list[str]:
    text = HIP_RUNTIME.read_text()
    # only the 32-lane part: the wave64 block at the end names everything
    text = text.split("wave64 emulation (issue #16): BEGIN")[0]
    return [n for n in names if n not in text]


def skip_unless_mapped(fixture: str, wave: int) -> None:
    if wave == 32:
        lacks = mapping_lacks(NEEDS32[fixture])
        if lacks:
            pytest.skip(f"wave 32: the 32-lane mapping (hip_runtime.h) lacks {', '.join(lacks)}")


def executor(wave: int, suite: Path = FIX, tmp: Path | None = None) -> HipOnNvidiaExecutor:
    return HipOnNvidiaExecutor(suite, wave=wave, compiler="nvcc", arch="90",
                               cache_root=tmp if tmp is not None else None)


# ====================================================================== plumbing (CPU)
def test_wave_flags_and_level_names(tmp_path):
    w64, w32 = executor(64, tmp=tmp_path), executor(32, tmp=tmp_path)
    src = FIX / "shuffles.hip"
    assert "-DPARITY_WAVE64=1" in w64.toolchain.flags(src)
    assert not any("PARITY_WAVE64" in f for f in w32.toolchain.flags(src))
    assert (w64.level, w64.wave) == ("hip-on-nvidia", 64)
    assert (w32.level, w32.wave) == ("hip-on-nvidia/w32", 32)
    assert HipOnNvidiaExecutor(FIX).wave == 64                      # CDNA is the default
    assert (HipOnNvidiaW32Executor.level, HipOnNvidiaW32Executor.wave) == ("hip-on-nvidia/w32", 32)
    assert hip_level_name(64) == "hip-on-nvidia" and hip_level_name(32) == "hip-on-nvidia/w32"
    with pytest.raises(ValueError):
        hip_level_name(16)


def test_parse_and_expand_waves():
    assert parse_waves(None) == [64] and parse_waves("64") == [64] and parse_waves("32") == [32]
    assert parse_waves("32,64") == [32, 64] and parse_waves("64, 32, 64") == [64, 32]
    for bad in ("16", "32,48", ","):
        with pytest.raises(ValueError):
            parse_waves(bad)
    assert expand_waves(["cpu", "hip-on-nvidia", "cuda"], [32, 64]) == ["cpu", "hip-on-nvidia/w32", "hip-on-nvidia", "cuda"]
    assert expand_waves(["hip-on-nvidia"], [64]) == ["hip-on-nvidia"]
    assert level_wave("hip-on-nvidia") == 64 and level_wave("hip-on-nvidia/w32") == 32 and level_wave("cuda") is None


def test_crash_message_names_divergent_wave_ops():
    ex = HipOnNvidiaExecutor(FIX, wave=64)
    r = ex._fault(RuntimeError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"), "launch k")
    assert r.status == "crash" and "divergent wave-wide operation" in r.message
    r = HipOnNvidiaExecutor(FIX, wave=64)._fault(RuntimeError("an illegal memory access was encountered"), "k")
    assert "divergent" not in r.message                           # not a trap: no hint
    r = HipOnNvidiaExecutor(FIX, wave=32)._fault(RuntimeError("unspecified launch failure"), "k")
    assert WAVE64_CRASH_HINT not in r.message


def test_rows_say_which_wave():
    from parity.run.engine import _wave
    assert _wave(HipOnNvidiaExecutor(FIX, wave=64)) == 64
    assert _wave(HipOnNvidiaExecutor(FIX, wave=32)) == 32
    from parity.executors.worker import IsolatedExecutor
    iso = IsolatedExecutor(HipOnNvidiaW32Executor, suite_dir=FIX)
    assert (iso.level, iso.wave) == ("hip-on-nvidia/w32", 32)
    from parity.executors.cpu import CpuExecutor
    assert _wave(CpuExecutor()) is None


def test_cli_wave_option(tmp_path):
    from click.testing import CliRunner
    from parity.cli.main import main
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    r = CliRunner().invoke(main, ["run", "--levels", "cpu,hip-on-nvidia", "--wave", "32,64", "--ops", "unary.neg",
                                  "--dtypes", "f32", "--layouts", "contiguous", "-q", "--out", str(tmp_path / "a")])
    gpu = make("hip-on-nvidia", DEFAULT_HIP_SRC, None, isolate=False).availability
    if not gpu.available:               # a named level that cannot run is a setup error, both wave sizes named
        assert r.exit_code == 2 and r.output.startswith("Error: level hip-on-nvidia/w32 (named in --levels) is "
                                                        "unavailable: ")
    else:
        assert r.exit_code in (0, 1), r.output
        import json
        res = json.loads(next((tmp_path / "a").glob("*/results.json")).read_text())
        names = [lv["level"] for lv in res["meta"]["levels"]]
        assert names == ["cpu", "hip-on-nvidia/w32", "hip-on-nvidia"]
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--wave", "48", "-q", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--wave" in r.output


# ====================================================================== compile (CPU)
@needs_nvcc
@pytest.mark.parametrize("wave", [64, 32])
@pytest.mark.parametrize("fixture", sorted(NEEDS32))
def test_unit_kernels_compile_nvcc(fixture, wave, tmp_path):
    skip_unless_mapped(fixture, wave)
    res = executor(wave, tmp=tmp_path).toolchain.compile(FIX / fixture)
    assert res.ok, res.error.message if res.error else ""


@needs_hipcc
@pytest.mark.parametrize("fixture", ["shuffles.hip", "votes.hip"])   # sync.hip needs ROCm >= 6.2
def test_unit_kernels_compile_hipcc_gfx90a(fixture, tmp_path):
    p = subprocess.run(["hipcc", "--offload-arch=gfx90a", "-c", str(FIX / fixture), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, env={**__import__("os").environ, "HIP_PLATFORM": "amd"},
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("source", sorted(p.name for p in BUNDLED.glob("*.hip")))
def test_bundled_suite_compiles_wave64(source):
    """Through the compile cache, as a run compiles: a file compiled before (same source, headers and
    flags) is not compiled again."""
    res = executor(64, suite=BUNDLED).toolchain.compile(BUNDLED / source)
    assert res.ok, res.error.message if res.error else ""


def test_bundled_suite_wave_ops_are_width_bound():
    """The bundled suite's wave intrinsics are structured.h's seg_allreduce and seg_down: __shfl_xor
    and __shfl_down with the width kSeg = 32, which cuts a 64-lane wavefront into the same 32-lane
    segments a 32-lane one is; no ballot, vote, lane id, warpSize or shuffle without a width anywhere,
    so wave 32 and wave 64 compute the same (the pr sweep at --wave 64 runs it as AMD's wavefronts do)."""
    import re
    wave_op = re.compile(r"__shfl\w*\s*\((?:[^()]|\([^()]*\))*\)|__ballot|__any\(|__all\(|__activemask|__lane_id"
                         r"|warpSize|__syncwarp")
    found = []
    for p in sorted(BUNDLED.glob("*.hip")) + sorted(BUNDLED.glob("*.h")):
        code = "\n".join(ln.split("//")[0] for ln in p.read_text().splitlines())
        found += [(p.name, m.group(0)) for m in wave_op.finditer(code)]
    assert found == [("structured.h", "__shfl_xor(v[i], m & (int)(kSeg - 1), (int)kSeg)"), ("structured.h", "__shfl_down(v, s, (int)kSeg)")]
    assert "constexpr unsigned kSeg = 32;" in (BUNDLED / "structured.h").read_text()


# ====================================================================== ROCm's semantics in NumPy
def src_lane(op: int, self: np.ndarray, arg: int, width: int, wave: int) -> np.ndarray:
    """The source lane of __shfl (0), __shfl_up (1), __shfl_down (2), __shfl_xor (3) for each
    lane `self`: ROCm's amd_warp_functions.h formulas; ds_bpermute takes the index mod 64."""
    seg = self & ~(width - 1)
    if op == 0:
        idx = (arg & (width - 1)) + seg
    elif op == 1:
        idx = self - arg
        idx = np.where(idx < seg, self, idx)
    elif op == 2:
        idx = self + arg
        idx = np.where((self & (width - 1)) + arg >= width, self, idx)
    else:
        idx = self ^ arg
        idx = np.where(idx >= ((self + width) & ~(width - 1)), self, idx)
    return idx & (wave - 1)


def expected_shuffle(vals: np.ndarray, op: int, arg: int, width: int, wave: int, block: int):
    """(expected, defined): per element the value of its source lane; a source lane beyond the
    block is inactive: 0 on AMD wave64 (ds_bpermute), undefined for CUDA's 32-lane warps."""
    g = np.arange(vals.size)
    t = g % block
    base = g - t
    lane = t % wave
    src = t - lane + src_lane(op, lane, arg, width or wave, wave)
    active = src < block
    out = np.where(active, vals[np.minimum(base + src, vals.size - 1)], 0).astype(vals.dtype)
    return out, (active | (wave == 64))


def expected_votes(pred: np.ndarray, wave: int, block: int, active: np.ndarray | None = None):
    """ballot, any, all, activemask per element (uint64), ROCm's definitions."""
    n = pred.size
    active = np.ones(n, bool) if active is None else active
    t = np.arange(n) % block
    ballot, act = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    for g0 in range(0, n, block):                       # per block
        for w0 in range(0, block, wave):               # per wavefront
            idx = np.arange(g0 + w0, min(g0 + w0 + wave, g0 + block))
            bits = np.uint64(1) << (t[idx] % wave).astype(np.uint64)
            b = np.bitwise_or.reduce(np.where(active[idx] & (pred[idx] != 0), bits, np.uint64(0)))
            a = np.bitwise_or.reduce(np.where(active[idx], bits, np.uint64(0)))
            ballot[idx], act[idx] = b, a
    return ballot, (ballot != 0).astype(np.uint64), (ballot == act).astype(np.uint64), act


def popcount(x: np.ndarray) -> np.ndarray:
    return np.array([bin(int(v)).count("1") for v in x], dtype=np.uint64)


def ffs(x: np.ndarray) -> np.ndarray:
    """1 + index of the lowest set bit, 0 for 0 (__ffsll)."""
    return np.array([(int(v) & -int(v)).bit_length() for v in x], dtype=np.uint64)


def test_documented_examples():
    """The model reproduces what the docs say: a ballot of the odd lanes is 0xAAAAAAAAAAAAAAAA on
    a 64-lane wavefront and 0xAAAAAAAA on 32 lanes; xor 32 crosses the halves only at wave 64."""
    pred = (np.arange(128) & 1).astype(np.int32)
    assert int(expected_votes(pred, 64, 128)[0][0]) == 0xAAAAAAAAAAAAAAAA
    assert int(expected_votes(pred, 32, 128)[0][0]) == 0xAAAAAAAA
    lanes = np.arange(64)
    assert src_lane(3, lanes, 32, 64, 64)[0] == 32 and src_lane(3, lanes[:32], 32, 32, 32)[0] == 0
    assert src_lane(2, lanes, 1, 64, 64)[63] == 63 and src_lane(2, lanes, 1, 64, 64)[31] == 32
    assert src_lane(1, lanes, 5, 16, 64)[20] == 20 and src_lane(1, lanes, 5, 16, 64)[21] == 16
    assert src_lane(0, lanes, 3, 16, 64)[40] == 35                # lane 3 of the segment 32..47
    assert ffs(np.array([0, 1, 0x8000000000000000], np.uint64)).tolist() == [0, 1, 64]
    assert popcount(np.array([0xAAAAAAAAAAAAAAAA], np.uint64)).tolist() == [32]


# ====================================================================== GPU
TYPES = {  # kernel suffix -> (dtype of the buffer, values of element g)
    "i32": (np.int32, lambda g: (g * 7 + 1).astype(np.int32)),
    "u32": (np.uint32, lambda g: (np.uint32(0x80000000) | g.astype(np.uint32))),
    "f32": (np.float32, lambda g: (g + 0.5).astype(np.float32)),
    "f64": (np.float64, lambda g: g.astype(np.float64) * 2.0 ** 33 + 0.25),
    "i64": (np.int64, lambda g: (g.astype(np.int64) << 33) | (g.astype(np.int64) + 1)),
    "f16": (np.uint16, lambda g: ((g * 37 + 11) % 0x7bff + 1).astype(np.uint16)),    # raw bits
    "bf16": (np.uint16, lambda g: ((g * 41 + 7) % 0x7f7f + 1).astype(np.uint16)),    # raw bits
}
# (op, arg, width): width 0 = the form without width
SHUFFLES = [(0, 5, 0), (0, 40, 0), (0, 3, 16), (1, 1, 0), (1, 5, 16), (2, 1, 0), (2, 16, 0), (2, 3, 8),
            (3, 1, 0), (3, 32, 0), (3, 16, 16), (3, 31, 0), (3, 63, 0), (2, 33, 64), (0, 50, 64),
            # the 32-lane mapping's one-instruction forms (mask < 32, source < width) and their edges:
            # a mask past the segment (lanes above it keep their own value, those below read lower)
            (3, 5, 8), (3, 12, 8), (3, 2, 1), (3, 40, 16), (0, 7, 8), (0, 31, 32)]
BLOCKS = {64: [64, 128, 1024, 96, 80], 32: [64, 128, 1024]}   # partial wavefronts: wave 64 only


@pytest.fixture(scope="module")
def levels():
    """One isolated hip-on-nvidia level per wavefront size on the unit kernels."""
    from parity.run.levels import make
    made = {}
    for w in (64, 32):
        lv = make(hip_level_name(w), FIX, None, case_timeout=60)
        if not lv.availability.available:
            pytest.skip(f"{lv.name} unavailable: {lv.availability.reason}")
        made[w] = lv
    yield made
    for lv in made.values():
        lv.executor.close()


def launch(kernel: str, args: list[Arg], buffers: dict, outputs: tuple, block: int, grid: int = 2) -> Launch:
    return Launch(kernel, args, buffers, outputs, (grid, 1, 1), (block, 1, 1))


def run_ok(levels, wave: int, ln: Launch):
    r = levels[wave].executor.run(ln)
    assert r.status == "ok", f"{ln.describe()} at wave {wave}: {r.status} {r.message}"
    return r.outputs


@pytest.mark.gpu
@pytest.mark.parametrize("wave", [64, 32])
@pytest.mark.parametrize("ty", sorted(TYPES))
def test_shuffles(levels, wave, ty):
    dt, make_vals = TYPES[ty]
    bad = []
    for block in BLOCKS[wave]:
        n = 2 * block
        vals = make_vals(np.arange(n))
        for op, arg, width in SHUFFLES:
            if width > wave:
                continue
            ln = launch(f"shuffle_{ty}", [Arg("ptr", ("in", 0)), Arg("ptr", ("out", 0)), Arg("i32", op),
                                          Arg("i32", arg), Arg("i32", width)],
                        {"in": vals, "out": np.zeros(n, dt)}, ("out",), block)
            got = run_ok(levels, wave, ln)["out"]
            exp, defined = expected_shuffle(vals, op, arg, width, wave, block)
            wrong = np.flatnonzero(defined & (got != exp))
            if wrong.size:
                i = int(wrong[0])
                bad.append(f"block {block} op {op} arg {arg} width {width}: {wrong.size} wrong, first g={i} "
                           f"expected {exp[i]!r} got {got[i]!r}")
    assert not bad, "\n".join(bad[:20])


@pytest.mark.gpu
@pytest.mark.parametrize("wave", [64, 32])
def test_wave_sum_and_size(levels, wave):
    for block in (64, 256, 1024):
        x = (np.arange(2 * block) % 13).astype(np.float32)     # small integers: exact sums
        got = run_ok(levels, wave, launch("wave_sum_f32", [Arg("ptr", ("in", 0)), Arg("ptr", ("out", 0))],
                                          {"in": x, "out": np.zeros_like(x)}, ("out",), block))["out"]
        exp = np.repeat(x.reshape(-1, wave).sum(axis=1), wave)
        np.testing.assert_array_equal(got, exp)
    got = run_ok(levels, wave, launch("wave_size", [Arg("ptr", ("out", 0))], {"out": np.zeros(128, np.int32)},
                                      ("out",), 128, grid=1))["out"]
    assert set(got.tolist()) == {wave}


PREDS = {"odd": lambda g: g & 1, "all": lambda g: np.ones_like(g), "none": lambda g: np.zeros_like(g),
         "lane5": lambda g: (g % 64 == 5), "random": lambda g: np.random.default_rng(7).integers(0, 2, g.size)}


@pytest.mark.gpu
@pytest.mark.parametrize("wave", [64, 32])
def test_votes(levels, wave):
    skip_unless_mapped("votes.hip", wave)
    for block in BLOCKS[wave]:
        n = 2 * block
        for name, f in PREDS.items():
            pred = f(np.arange(n)).astype(np.int32)
            got = run_ok(levels, wave, launch("votes", [Arg("ptr", ("pred", 0)), Arg("ptr", ("out", 0))],
                                              {"pred": pred, "out": np.zeros(8 * n, np.uint64)}, ("out",),
                                              block))["out"].reshape(n, 8)
            ballot, anyv, allv, _ = expected_votes(pred, wave, block)
            lane = (np.arange(n) % block) % wave
            for col, exp, what in ((0, ballot, "__ballot"), (1, anyv, "__any"), (2, allv, "__all"),
                                   (3, lane.astype(np.uint64), "__lane_id"), (4, np.full(n, wave, np.uint64), "warpSize"),
                                   (5, popcount(ballot), "__popcll"), (6, ffs(ballot), "__ffsll"),
                                   (7, lane.astype(np.uint64), "__mbcnt_hi(~0u, __mbcnt_lo(~0u, 0))")):
                wrong = np.flatnonzero(got[:, col] != exp)
                assert not wrong.size, (f"{what} block {block} pred {name} wave {wave}: g={wrong[0]} "
                                        f"expected {int(exp[wrong[0]]):#x} got {int(got[wrong[0], col]):#x}")
    if wave == 64:                                   # the example, literally
        pred = (np.arange(128) & 1).astype(np.int32)
        got = run_ok(levels, 64, launch("votes", [Arg("ptr", ("pred", 0)), Arg("ptr", ("out", 0))],
                                        {"pred": pred, "out": np.zeros(8 * 128, np.uint64)}, ("out",), 64))["out"]
        assert int(got[0]) == 0xAAAAAAAAAAAAAAAA


@pytest.mark.gpu
@pytest.mark.parametrize("wave", [64, 32])
def test_sync_forms_activemask_syncwarp(levels, wave):
    skip_unless_mapped("sync.hip", wave)
    for block in (64, 128, 1024):                     # whole wavefronts: ROCm's mask check needs them
        n = 2 * block
        g = np.arange(n)
        act = run_ok(levels, wave, launch("activemask", [Arg("ptr", ("out", 0))], {"out": np.zeros(n, np.uint64)},
                                          ("out",), block))["out"]
        assert set(act.tolist()) == {(1 << wave) - 1}
        for name, f in PREDS.items():
            pred = f(g).astype(np.int32)
            got = run_ok(levels, wave, launch("votes_sync", [Arg("ptr", ("pred", 0)), Arg("ptr", ("out", 0))],
                                              {"pred": pred, "out": np.zeros(4 * n, np.uint64)}, ("out",),
                                              block))["out"].reshape(n, 4)
            ballot, _, _, _ = expected_votes(pred, wave, block)
            mask = np.uint64((1 << wave) - 1)          # ~0ull, ROCm: & 0xffffffff on wave32
            np.testing.assert_array_equal(got[:, 0], ballot & mask)
            np.testing.assert_array_equal(got[:, 1], (ballot != 0).astype(np.uint64))
            np.testing.assert_array_equal(got[:, 2], (ballot == mask).astype(np.uint64))
            np.testing.assert_array_equal(got[:, 3], (g ^ 1).astype(np.uint64))
            div = run_ok(levels, wave, launch("votes_divergent", [Arg("ptr", ("pred", 0)), Arg("ptr", ("out", 0))],
                                              {"pred": pred, "out": np.zeros(4 * n, np.uint64)}, ("out",),
                                              block))["out"].reshape(n, 4)
            inside = (g % block) % 3 != 0
            exp = expected_votes(pred, wave, block, active=inside)
            for col in range(4):
                np.testing.assert_array_equal(div[inside, col], exp[col][inside], err_msg=f"col {col} pred {name}")
            assert (div[~inside] == np.uint64(0xA5A5A5A5A5A5A5A5)).all()
        got = run_ok(levels, wave, launch("syncwarp_mirror", [Arg("ptr", ("out", 0))], {"out": np.zeros(n, np.int32)},
                                          ("out",), block))["out"]
        t = g % block
        mirror = t - t % wave + (wave - 1 - t % wave)
        np.testing.assert_array_equal(got, (mirror * 7 + 3).astype(np.int32))


@pytest.mark.gpu
def test_divergent_halves(levels):
    """Only the first warp of each wavefront reaches a shuffle. xor 1 stays in that warp: both
    wave sizes give lane ^ 1 (AMD runs it with the upper lanes masked off). xor 32 reads the
    masked-off half: wave 64 cannot emulate it and traps after ~1 s (crash, message naming
    divergent wave-wide operations), never hangs; the level keeps working afterwards."""
    import time
    x = np.arange(1, 257, dtype=np.float32)
    g = np.arange(256)
    args = [Arg("ptr", ("in", 0)), Arg("ptr", ("out", 0))]
    for wave in (32, 64):
        got = run_ok(levels, wave, launch("divergent_halves", args, {"in": x, "out": np.zeros_like(x)}, ("out",), 128))["out"]
        np.testing.assert_array_equal(got, np.where(g % 64 < 32, x[g ^ 1], x))
    t0 = time.perf_counter()
    r = levels[64].executor.run(launch("divergent_halves_cross", args, {"in": x, "out": np.zeros_like(x)}, ("out",), 128))
    assert r.status == "crash", (r.status, r.message)
    assert "divergent wave-wide operation" in r.message
    assert time.perf_counter() - t0 < 30
    run_ok(levels, 64, launch("wave_size", [Arg("ptr", ("out", 0))], {"out": np.zeros(64, np.int32)}, ("out",), 64, 1))


def test_repro_snippet_compiles_at_the_levels_wave(tmp_path):
    from parity.run.repro import snippet
    assert "-DPARITY_WAVE64=1" in snippet(tmp_path / "c.npz", None, "hip-on-nvidia", "k")
    assert "PARITY_WAVE64" not in snippet(tmp_path / "c.npz", None, "hip-on-nvidia/w32", "k")
    assert "PARITY_WAVE64" not in snippet(tmp_path / "c.npz", None, "cuda", "k")
