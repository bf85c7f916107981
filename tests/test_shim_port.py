"""Shim ports (issue #35, docs/shim-ports.md): CUDA sources compiled as HIP through a shim, described
by their build line (parity.suite.port), on hip-on-nvidia (wave 32 and 64), amd-static and amd.

Fixture `tests/fixtures/ports/shim-port/`: four `.cu` kernels in Candle's ABI, a shim of shadow
headers and a force-included `hip_compat.h` with four planted bugs, each switched on alone by a
define (its README lists them and the verdicts they must get). Without a GPU: the port file's
checks, discovery and coverage, the real hipcc and nvcc compiles through the shim (the include-order
problem and its fix), and a host transliteration of each planted bug that says at which wave size it
shows. With a GPU (`python3 -m pytest -q -s -m gpu tests/test_shim_port.py`): every planted bug's
exact verdicts at wave 32 and 64, the good shim passing, a run's report (port line, wave table), and
Candle's own candle-kernels/src through a minimal shim (PARITY_CANDLE_SRC or .candle/; skipped
without them).
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from parity.cli.main import main
from parity.suite.port import Port, PortError, discover_port, load_port

ROOT = Path(__file__).parent / "fixtures" / "ports"
PORT_DIR = ROOT / "shim-port"
SWEEP = PORT_DIR / "sweep.toml"
CANDLE_SHIM = ROOT / "candle-shim"
KERNELS = ("asort_asc_f32", "fast_sum_f16", "mul_mat_vec_q8_0_q8_1_cuda1", "rmsnorm_f32")
BUGS = ("SHIM_BUG_ATOMIC_HALFWORD", "SHIM_BUG_SHFL_WIDTH", "SHIM_BUG_BALLOT32", "SHIM_BUG_DP4A_SIGN")
needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not on PATH")
needs_hipcc = pytest.mark.skipif(not shutil.which("hipcc"), reason="hipcc not on PATH")


def port(*bugs: str) -> Port:
    return load_port(PORT_DIR / "parity-port.toml").extended(defines=list(bugs))


# ------------------------------------------------------------------------ the port file
def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "shim").mkdir(exist_ok=True)
    (tmp_path / "shim" / "compat.h").write_text("#pragma once\n")
    f = tmp_path / "parity-port.toml"
    f.write_text(text)
    return f


@pytest.mark.parametrize("text, said", [
    ('include_dir = ["shim"]\n', "unknown key 'include_dir'; did you mean 'include_dirs'?"),
    ('include_dirs = "shim"\n', "include_dirs must be a list (array), not str"),
    ('include_dirs = ["../elsewhere"]\n', "leaves the port folder"),
    ('include_dirs = ["/usr/include"]\n', "leaves the port folder"),
    ('force_includes = ["shim/absent.h"]\n', "'shim/absent.h' is not a file under"),
    ('defines = ["1BAD=2"]\n', "'1BAD' is not a macro name"),
    ('defines = ["A=1", 3]\n', "3 is not a define (a string K=V or K)"),
    ('defines = { X = true }\n', "the value of X must be a string or a number"),
    ('language = "cuda"\n', "unknown language 'cuda'"),
    ('sources = ["../*.cu"]\n', "leaves the sources' folder"),
    ('sources = ["/etc/*"]\n', "leaves the sources' folder"),
    ('sources = [" "]\n', "is empty: a glob such as 'src/*.hip'"),
    ('sources = [\n', "not valid TOML"),
    ('include_dirs = ["inc\\u0000"]\n', "expected a path string, got 'inc\\x00'"),
    # options that would write, load or read where the port file says: an untrusted file's text
    ('flags = ["-MD", "-MF", "x.d"]\n', "flags: '-MF' names an output"),
    ('flags = ["-DX=/etc/passwd"]\n', "flags: '-DX=/etc/passwd' is a path"),
    ('flags = ["-save-temps=obj"]\n', "flags: '-save-temps=obj' writes intermediate files"),
    ('flags = ["-fplugin=evil.so"]\n', "flags: '-fplugin=evil.so' loads a plugin"),
    ('flags = ["-Wp,-MD,x.d"]\n', "flags: '-Wp,-MD,x.d' passes options past the driver"),
    ('nvidia_flags = ["@opts.txt"]\n', "nvidia_flags: '@opts.txt' reads a response file"),
    ('nvidia_flags = ["-ccbin", "gcc"]\n', "nvidia_flags: '-ccbin' names a program to run"),
    ('flags = ["-O3 -o x"]\n', "flags: '-O3 -o x' is not one option"),
    # (the review's: each wrote or read a file in the current folder)
    ('flags = ["-foptimization-record-file=README.md"]\n', "'-foptimization-record-file=README.md' names an output"),
    ('flags = ["-mllvm", "-info-output-file=stats.txt"]\n', "flags: '-mllvm' passes options past the driver"),
    ('nvidia_flags = ["--dependency-output=d.d"]\n', "'--dependency-output=d.d' names an output"),
    ('nvidia_flags = ["--options-file=o.txt"]\n', "'--options-file=o.txt' reads a file"),
    ('flags = ["evil.cu"]\n', "flags: 'evil.cu' is not one option"),
])
def test_port_file_mistakes_are_one_line_naming_file_and_key(tmp_path, text, said):
    f = _write(tmp_path, text)
    with pytest.raises(PortError) as e:
        load_port(f)
    assert said in str(e.value) and str(f) in str(e.value) and "\n" not in str(e.value)


def test_port_file_options_that_stay_in_the_compile_are_kept(tmp_path):
    f = _write(tmp_path, 'flags = ["-O3", "-ffast-math", "-std=c++17", "-munsafe-fp-atomics", "-MD"]\n'
                         'nvidia_flags = ["--use_fast_math", "-lineinfo", "--expt-relaxed-constexpr", "-maxrregcount", '
                         '"64", "--keep-device-functions"]\n')
    port = load_port(f)
    assert port.flags == ("-O3", "-ffast-math", "-std=c++17", "-munsafe-fp-atomics", "-MD")
    assert port.nvidia_flags == ("--use_fast_math", "-lineinfo", "--expt-relaxed-constexpr", "-maxrregcount", "64",
                                 "--keep-device-functions")


def test_port_file_paths_are_relative_to_it_and_kept_in_order(tmp_path):
    (tmp_path / "a").mkdir()
    f = _write(tmp_path, 'include_dirs = ["shim", "a"]\nforce_includes = ["shim/compat.h"]\n'
                         'defines = ["K=1", "FLAG"]\nflags = ["-ffast-math"]\n')
    p = load_port(f)
    assert p.include_dirs == ((tmp_path / "shim").resolve(), (tmp_path / "a").resolve())
    assert p.hipcc_flags() == ["-x", "hip", "-DK=1", "-DFLAG", f"-I{(tmp_path / 'shim').resolve()}",
                               f"-I{(tmp_path / 'a').resolve()}", "-include",
                               str((tmp_path / "shim" / "compat.h").resolve()), "-ffast-math"]
    assert p.define_map(nvidia=True) == {"K": "1", "FLAG": ""}


def test_nvcc_owned_defines_stay_off_hip_on_nvidia():
    """The port's -D__CUDA_ARCH__=890 is for hipcc; nvcc sets its own (host pass included)."""
    p = port()
    assert p.define_map() == {"__CUDA_ARCH__": "890"} and p.define_map(nvidia=True) == {}


def test_cli_port_mistakes_exit_2_in_one_line(tmp_path):
    r = CliRunner().invoke(main, ["run", "--hip-src", str(PORT_DIR), "--levels", "cpu", "--port-define", "1X",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 2 and "'1X' is not a macro name" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--port-include", str(tmp_path), "--out", str(tmp_path)])
    assert r.exit_code == 2 and "give --hip-src" in r.output
    for glob, said in (("/etc/passwd", "--port-source '/etc/passwd' leaves the sources' folder"),
                       ("", "--port-source '' is empty")):   # (were internal errors: Path.glob refused them)
        for cmd in ("run", "compile"):
            r = CliRunner().invoke(main, [cmd, "--hip-src", str(PORT_DIR), "--port-source", glob])
            assert r.exit_code == 2 and said in r.output and "Traceback" not in r.output, r.output
    r = CliRunner().invoke(main, ["run", "--hip-src", str(PORT_DIR), "--port-include", "", "--levels", "cpu"])
    assert r.exit_code == 2 and "--port-include is empty ('')" in r.output, r.output
    (tmp_path / "suite" / "parity-port.toml").mkdir(parents=True)        # not a file: refused, not ignored
    r = CliRunner().invoke(main, ["run", "--hip-src", str(tmp_path / "suite"), "--levels", "cpu"])
    assert r.exit_code == 2 and "parity-port.toml is a folder, not a regular file" in r.output, r.output
    r = CliRunner().invoke(main, ["run", "--hip-src", str(PORT_DIR), "--levels", "cpu", "--port-source", "none/*.cu",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 0     # globs add to the port's own src/*.cu


def test_run_picks_up_parity_port_toml_and_shows_it(tmp_path):
    """--hip-src DIR with a parity-port.toml is a port: results.json's meta and summary.md say so."""
    r = CliRunner().invoke(main, ["run", "--sweep", str(SWEEP), "--hip-src", str(PORT_DIR), "--levels", "cpu",
                                  "--ops", "sort.asc", "--out", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    folder = next(tmp_path.iterdir())
    meta = json.loads((folder / "results.json").read_text())["meta"]
    assert meta["port"]["name"] == "shim-port" and meta["port"]["sources"] == ["src/*.cu"]
    assert "-include shim/hip_compat.h" in meta["port"]["description"]
    assert f"Port (its build line, on every HIP level): `{meta['port']['description']}`" in \
        (folder / "summary.md").read_text()


# --------------------------------------------------------------------- discovery, coverage
def test_discovery_finds_the_ports_cu_kernels_with_the_abis_parameters():
    from parity.suite.coverage import coverage
    suite = discover_port(port())
    assert sorted(suite.kernels) == list(KERNELS) and not suite.notes
    assert [s.name for s in suite.sources] == ["nn.cu", "quantized.cu", "reduce.cu", "sort.cu"]
    rows = {r.kernel: r.status for r in coverage(suite)}
    assert {k: rows[k] for k in KERNELS} == dict.fromkeys(KERNELS, "present")


def test_discovery_sees_macros_of_the_force_included_header(tmp_path):
    """A kernel stamped by a macro the compat header defines is found only with -include."""
    (tmp_path / "compat.h").write_text('#define STAMP(n) extern "C" __global__ void n(float* x) {}\n')
    (tmp_path / "k.cu").write_text("STAMP(ucopy_f32)\n")
    bare = discover_port(Port(root=tmp_path, sources=("*.cu",)))
    shim = discover_port(Port(root=tmp_path, sources=("*.cu",), force_includes=(tmp_path / "compat.h",)))
    assert "ucopy_f32" not in bare.kernels and "ucopy_f32" in shim.kernels


# ------------------------------------------------------------------------------ compiles
@needs_hipcc
@pytest.mark.slow
def test_amd_static_compiles_the_shim_port_for_cdna_and_rdna():
    from parity.executors.amd_compile import AmdStaticExecutor
    ex = AmdStaticExecutor(PORT_DIR, port=port(*BUGS))          # the bugs are run-time ones: still compiles
    assert ex.availability().available
    assert {k: ex.kernel_verdict(k).status for k in KERNELS} == dict.fromkeys(KERNELS, "compiled")


def _nvcc_flags(wave: int, p: Port) -> tuple[object, list[str]]:
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor(PORT_DIR, wave=wave, port=p, arch="90", compiler="nvcc")
    return ex, ex.toolchain.flags(PORT_DIR / "src" / "reduce.cu")


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("wave", [32, 64])
def test_nvcc_compiles_every_kernel_through_the_shim_and_the_mapping(wave):
    ex, _ = _nvcc_flags(wave, port())
    for k in KERNELS:
        src, err = ex.locate(k)
        assert err is None and src is not None, err and err.message


@needs_nvcc
@pytest.mark.slow
def test_the_mapping_reaches_the_toolkit_headers_past_the_shims_shadows(tmp_path):
    """The include-order problem: without the absolute toolkit paths, <cuda_fp16.h> from the mapping
    reaches the shim's shadow, which includes <hip/hip_fp16.h> again: __half is never defined."""
    ex, flags = _nvcc_flags(64, port())
    assert any(f.startswith('-DPARITY_CUDA_FP16_H="') and f.endswith('/cuda_fp16.h"') for f in flags)
    src = PORT_DIR / "src" / "reduce.cu"
    cmd = ["nvcc", "-ptx", "-arch=sm_90", *flags, "-x", "cu", str(src), "-o", str(tmp_path / "r.ptx")]
    ok = subprocess.run(cmd, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # the shim's CAS loop is the 16-bit atomicAdd that runs, not CUDA's native atom.add.f16
    ptx = (tmp_path / "r.ptx").read_text()
    assert "atom.global.cas.b32" in ptx and "atom.global.add.noftz.f16" not in ptx
    without = [f for f in cmd if not f.startswith("-DPARITY_CUDA_")]
    bad = subprocess.run(without, capture_output=True, text=True)
    assert bad.returncode != 0 and 'identifier "__half" is undefined' in bad.stdout + bad.stderr


def test_a_shim_that_cannot_coexist_with_the_mapping_says_so(monkeypatch):
    from parity.executors import hip_nvidia
    monkeypatch.setattr(hip_nvidia, "cuda_toolkit_include", lambda: None)
    ex = hip_nvidia.HipOnNvidiaExecutor(PORT_DIR, wave=64, port=port(), arch="90")
    av = ex.availability()
    assert not av.available and "shim/cuda_fp16.h shadows <cuda_fp16.h>" in av.reason and "CUDA_PATH" in av.reason


# ------------------------------------------------- the planted bugs, transliterated on the host
def shim_ballot(preds: np.ndarray, wave: int, bug: bool) -> int:
    """__popcll(__ballot_sync(...)) over one wavefront of predicates (lanes beyond the block: 0)."""
    mask = sum(1 << i for i, p in enumerate(preds[:wave]) if p)
    return bin(mask & 0xFFFFFFFF if bug else mask).count("1")


def shim_segment_sum(vals: np.ndarray, wave: int, active: int, bug: bool) -> list[float]:
    """rmsnorm's segment_sum over one wavefront (shfl_down 16..1 then a broadcast from lane 0, width
    32), as the segment's last lane stores it. HIP's __shfl_down keeps the lane's own value when the
    source is past its width segment, __shfl reads lane (src % width) of the lane's own segment; an
    inactive source lane reads 0 (ds_bpermute). The bug drops width: one 64-lane segment."""
    width = wave if bug else 32
    v = [float(vals[i]) if i < active else 0.0 for i in range(wave)]
    for off in (16, 8, 4, 2, 1):
        v = [v[i] + ((v[i + off] if i + off < active else 0.0) if (i % width) + off < width else v[i])
             for i in range(wave)]
    v = [v[i & ~(width - 1)] for i in range(wave)]
    return [v[s + 31] for s in range(0, min(active, wave), 32)]


def shim_dp4a(a: int, b: int, bug: bool) -> int:
    conv = (lambda x: x & 0xFF) if bug else (lambda x: (x & 0xFF) - 256 * ((x >> 7) & 1))
    return sum(conv(a >> 8 * l) * conv(b >> 8 * l) for l in range(4))


def shim_atomic_add_f16(mem: np.ndarray, index: int, val: np.float16, bug: bool) -> None:
    """The CAS loop on the 32-bit word holding mem[index] (mem: float16 array, 4-byte aligned)."""
    half = index & 1
    target = (index & ~1) + (1 - half if bug else half)
    mem[target] = np.float16(mem[target] + val)


def test_host_model_ballot32_shows_at_wave64_only():
    rng = np.random.default_rng(0)
    preds = rng.random(64) < 0.5
    assert shim_ballot(preds, 32, True) == shim_ballot(preds, 32, False)
    assert shim_ballot(preds, 64, True) != shim_ballot(preds, 64, False)


def test_host_model_shuffle_width_shows_at_wave64_on_full_wavefronts_only():
    vals = np.arange(1.0, 65.0)
    for active in (32, 64):      # rmsnorm's block 32 (c100, c512, offset, ...) and 1024 (c1024, c3000, ...)
        good = shim_segment_sum(vals, 32, min(active, 32), False)
        assert shim_segment_sum(vals, 32, min(active, 32), True) == good
    assert shim_segment_sum(vals, 64, 32, True) == shim_segment_sum(vals, 64, 32, False) == [sum(range(1, 33))]
    assert shim_segment_sum(vals, 64, 64, False) == [sum(range(1, 33)), sum(range(33, 65))]
    assert shim_segment_sum(vals, 64, 64, True) != shim_segment_sum(vals, 64, 64, False)


def test_host_model_dp4a_sign_and_atomic_halfword_show_at_any_wave():
    """(The empty rows' +0.0 into the guard changes it: the guard's first half-word is a NaN.)"""
    from parity.host.marshal import GUARD
    assert np.isnan(GUARD[:2].view(np.float16)[0])
    a, b = 0x80FF7F01, 0x01FF80FE                  # bytes 1, 127, -1, -128 and -2, -128, -1, 1
    assert shim_dp4a(a, b, False) == 1 * -2 + 127 * -128 + -1 * -1 + -128 * 1
    assert shim_dp4a(a, b, True) != shim_dp4a(a, b, False)
    mem = np.zeros(4, np.float16)
    shim_atomic_add_f16(mem, 2, np.float16(1.5), True)
    assert mem.tolist() == [0, 0, 0, 1.5]          # the neighbour: an odd-length dst writes its guard


# ------------------------------------------------------------------------------------ GPU
# Every case's verdict per (shim, wave). A kernel the bug does not touch passes.
# - fast_sum_f16, wrong half-word (any wave): each block's sum lands in the other half of its 32-bit
#   word. A dst of odd length puts its last one in the guard after it (oob-write), the empty rows too
#   (+0.0 into the guard's first half-word, 0x7f5a, a NaN: NaN + 0 is the canonical NaN, other bits).
#   multi and multi-perm (6 outputs) get wrong values (fail). row4000 and row9000 (2 outputs, one
#   word) get each other's sum, which the f16 sum tolerance (gamma_d·sum|x|, 0.07·sum|x| at n = 4000,
#   positive values too) cannot tell from their own: pass, a blind spot of a tolerance, not of the launch.
# - rmsnorm_f32, width dropped: wrong at wave 64 on 1024-thread blocks (the rows of 1024 columns and more)
#   only, where the broadcast from lane 0 gives the second 32-lane segment the first one's sum; a
#   block of 32 has none.
# - asort_asc_f32, 32-bit ballot: wrong at wave 64 once a wavefront holds more than 32 columns
#   (c100 and up, offset's 37); c1 and c8 fit in 32 lanes.
# - mmvq q8_0, unsigned dp4a bytes: every case, any wave (the quants are signed).
ODD_DST = {"row100", "row1024", "row1900", "row4096", "dim0", "transposed", "narrowed", "empty"}
SWAPPED = {"multi", "multi-perm"}


def expected(bug: str | None, wave: int, case_id: str) -> str:
    op, _, shape = case_id.split("/")[:3]
    if bug == "SHIM_BUG_ATOMIC_HALFWORD" and op == "reduce.sum":
        return "oob-write" if shape in ODD_DST else "fail" if shape in SWAPPED else "pass"
    if bug == "SHIM_BUG_SHFL_WIDTH" and op == "nn.rmsnorm" and wave == 64:
        return "fail" if shape in ("c1024", "c2048", "c3000", "c16384", "offset-1024") else "pass"
    if bug == "SHIM_BUG_BALLOT32" and op == "sort.asc" and wave == 64:
        return "pass" if shape in ("c1", "c8") else "fail"
    if bug == "SHIM_BUG_DP4A_SIGN" and op.startswith("quant.mmvq"):
        return "fail"
    return "pass"


def _cases():
    from parity.run.cases import Filters, load_sweep
    return load_sweep(str(SWEEP), Filters(None, None, None, None))


@pytest.mark.gpu
@pytest.mark.parametrize("bug", [None, *BUGS])
def test_each_planted_shim_bug_gets_its_exact_verdicts_at_wave_32_and_64(bug):
    from parity.run.engine import run_cases
    from parity.run.levels import make
    cases = _cases()
    p = port(*([bug] if bug else []))
    bad = []
    for level in ("hip-on-nvidia/w32", "hip-on-nvidia"):
        wave = 32 if level.endswith("w32") else 64
        lv = make(level, PORT_DIR, None, case_timeout=60, port=p)
        assert lv.availability.available, lv.availability.reason
        try:
            got = run_cases(cases, lv.executor, every_fault=True)
        finally:
            lv.executor.close()
        counts = collections.Counter(r["verdict"] for r in got)
        by_kernel = collections.defaultdict(collections.Counter)
        for c, r in zip(cases, got):
            by_kernel[c.op][r["verdict"]] += 1
        print(f"\nshim {bug or 'good'} wave {wave}: {dict(counts)}; " +
              "; ".join(f"{op} {dict(v)}" for op, v in sorted(by_kernel.items())))
        for c, r in zip(cases, got):
            if r["verdict"] != "pass":
                print(f"  {c.id}: {r['verdict']}: {r['message'][:140]}")
        bad += [(c.id, wave, expected(bug, wave, c.id), r["verdict"], r["message"][:160])
                for c, r in zip(cases, got) if r["verdict"] != expected(bug, wave, c.id)]
    assert not bad, bad


@pytest.mark.gpu
def test_a_run_of_the_ballot32_shim_puts_the_wave64_only_kernel_in_the_wave_table(tmp_path):
    r = CliRunner().invoke(main, ["run", "--sweep", str(SWEEP), "--hip-src", str(PORT_DIR), "--levels",
                                  "hip-on-nvidia", "--wave", "32,64", "--port-define", "SHIM_BUG_BALLOT32",
                                  "--out", str(tmp_path), "-q"])
    assert r.exit_code == 1, r.output
    folder = next(tmp_path.iterdir())
    res = json.loads((folder / "results.json").read_text())
    summary = (folder / "summary.md").read_text()
    print("\n" + summary[:6000])
    assert "SHIM_BUG_BALLOT32" in res["meta"]["port"]["description"]
    assert "asort_asc_f32" in json.dumps(res["meta"].get("wave_evidence", {}))
    rows = res["results"]
    fails = {(r["level"], r["kernel"]) for r in rows if r["verdict"] != "pass"}
    assert fails == {("hip-on-nvidia", "asort_asc_f32")}


# ------------------------------------------------------- Candle's own sources through a shim
def candle_src() -> Path | None:
    for c in (os.environ.get("PARITY_CANDLE_SRC"), Path(__file__).parents[1] / ".candle" / "candle-kernels" / "src"):
        if c and (Path(c) / "unary.cu").is_file():
            return Path(c)
    return None


def candle_port() -> Port:
    src = candle_src()
    if src is None:
        pytest.skip("Candle's candle-kernels/src not found (PARITY_CANDLE_SRC, or export it into .candle/)")
    return Port(root=src.resolve(), sources=("*.cu",), include_dirs=(CANDLE_SHIM.resolve(),),
                force_includes=(CANDLE_SHIM.resolve() / "hip_compat.h",), defines=(("__CUDA_ARCH__", "890"),),
                name="candle-kernels/src + tests/fixtures/ports/candle-shim")


def test_candles_sources_are_discovered_through_the_minimal_shim():
    suite = discover_port(candle_port())
    assert len(suite.kernels) > 900 and not suite.notes
    assert {"uexp_f32", "fast_sum_f16", "asort_asc_bf16", "mul_mat_vec_q8_0_q8_1_cuda1"} <= set(suite.kernels)


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("file", ["reduce.cu", "sort.cu", "indexing.cu"])
def test_candles_sources_compile_as_hip_through_the_minimal_shim(file):
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    p = candle_port()
    res = HipOnNvidiaExecutor(p.root, wave=64, port=p, arch="90", compiler="nvcc").compile(p.root / file)
    assert res.ok, res.error and res.error.message[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("sweep", ["smoke", "quant"])
def test_candle_through_a_minimal_shim_at_wave_32_and_64(sweep, tmp_path):
    """Counts per wave and every kernel that does not pass, with its first message: the closing note
    explains each (a wave-64 hazard in Candle's CUDA code, or a gap of ours)."""
    p = candle_port()
    from parity.suite.port import PORT_FILE
    assert not (p.root / PORT_FILE).exists()
    args = ["run", "--sweep", sweep, "--hip-src", str(p.root), "--levels", "hip-on-nvidia", "--wave", "32,64",
            "--port-source", "*.cu", "--port-include", str(CANDLE_SHIM), "--port-force-include",
            str(CANDLE_SHIM / "hip_compat.h"), "--port-define", "__CUDA_ARCH__=890", "--out", str(tmp_path), "-q"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code in (0, 1), r.output
    folder = next(tmp_path.iterdir())
    rows = json.loads((folder / "results.json").read_text())["results"]
    for level in ("hip-on-nvidia/w32", "hip-on-nvidia"):
        mine = [x for x in rows if x["level"] == level]
        print(f"\ncandle {sweep} {level}: {len(mine)} cases: {dict(collections.Counter(x['verdict'] for x in mine))}")
        failing = collections.defaultdict(list)
        for x in mine:
            if x["verdict"] not in ("pass", "xfail"):
                failing[(x["kernel"], x["verdict"])].append(x)
        for (k, v), xs in sorted(failing.items()):
            print(f"  {k} {v} x{len(xs)}: {xs[0]['case_id']}: {xs[0]['message'][:240]}")
    print((folder / "summary.md").read_text()[:8000])
    assert not [x for x in rows if x["verdict"] in ("compile-error", "mapping-gap")], \
        sorted({x["message"][:300] for x in rows if x["verdict"] in ("compile-error", "mapping-gap")})[:5]


def test_coverage_takes_the_port_s_build_line():
    """`parity coverage --hip-src <shim port>` reads the port's .cu sources through its shim, as a run does."""
    r = CliRunner().invoke(main, ["coverage", "--hip-src", str(PORT_DIR), "--json"])
    hip = json.loads(r.output)["hip"]
    present = sorted(row["kernel"] for row in hip["rows"] if row["status"] == "present")
    assert present == ["asort_asc_f32", "fast_sum_f16", "mul_mat_vec_q8_0_q8_1_cuda1", "rmsnorm_f32"]


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("hipcc"), reason="hipcc not installed")
def test_compile_takes_the_port_s_build_line():
    """`parity compile --hip-src <shim port>`: hipcc with the port's -x hip, -I and -include, every kernel ok."""
    r = CliRunner().invoke(main, ["compile", "--hip-src", str(PORT_DIR), "--amd-arch", "gfx90a", "--json"])
    rows = json.loads(r.output[r.output.index("["):])
    assert r.exit_code == 0 and len({x["kernel"] for x in rows}) == 4 and {x["status"] for x in rows} == {"ok"}


def test_a_port_file_with_a_byte_order_mark_is_read(tmp_path):
    """A Windows editor's BOM was 'Invalid statement (at line 1, column 1)' in every TOML parity reads."""
    f = _write(tmp_path, '\ufeffname = "bom"\ninclude_dirs = ["shim"]\n')
    assert load_port(f).name == "bom"
