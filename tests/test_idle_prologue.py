"""bench/idle_prologue.py: the idle path it cuts out of a kernel's SASS, and its LDC/ULDC count — the
check nn.hip's comments name for the norms' uniform-register prologue (issue #34) — and the output
passes (barrier to EXIT) that --sections counts."""
import importlib.util
import shutil
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("idle_prologue",
                                               Path(__file__).parents[1] / "bench" / "idle_prologue.py")
ip = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ip)

# two kernels as nvdisasm -c prints them: k's idle path is its entry up to the first branch, then the
# branch target up to its EXIT (the path between them loads: a working block's)
SASS = """
.text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   ULDC UR4, c[0x0][0x210] ;
        /*0020*/                   LDC.64 R2, c[0x0][0x218] ;
        /*0030*/              @!P0 BRA `(.L_x_7) ;
        /*0040*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0050*/                   EXIT ;
.L_x_7:
        /*0060*/                   S2UR UR5, SR_CTAID.X ;
        /*0070*/                   LDC R6, c[0x0][0x220] ;
        /*0080*/               @P0 EXIT ;
        /*0090*/                   STG.E.128 desc[UR6][R2.64], R4 ;
.text.other:
        /*0000*/                   EXIT ;
"""


def test_idle_path_is_entry_to_first_branch_then_target_to_exit():
    path = ip.idle_path(SASS, "k")
    ops = [ln.split(";")[0].split("*/")[1].strip() for ln in path]
    assert ops == ["LDC R1, c[0x0][0x28]", "ULDC UR4, c[0x0][0x210]", "LDC.64 R2, c[0x0][0x218]",
                   "@!P0 BRA `(.L_x_7)", "S2UR UR5, SR_CTAID.X", "LDC R6, c[0x0][0x220]", "@P0 EXIT"]


# the other layout: the idle test falls through to its EXIT, past a branch to the working blocks'
# path, whose EXIT comes first in the listing but after a barrier; an unpredicated BRA is followed
LAYOUT = """
.text.j:
        /*0000*/                   ULDC UR4, c[0x0][0x210] ;
        /*0010*/              @P1 BRA `(.L_x_2) ;
        /*0020*/                   BRA `(.L_x_3) ;
.L_x_2:
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0040*/                   EXIT ;
.L_x_3:
        /*0050*/                   S2UR UR5, SR_CTAID.X ;
        /*0060*/               @P0 EXIT ;
        /*0070*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0080*/                   EXIT ;
"""


def test_idle_path_is_the_shortest_way_to_an_exit_without_memory_or_barrier():
    path = ip.idle_path(LAYOUT, "j")
    assert [ln.split("*/")[0].strip() for ln in path] == ["/*0000", "/*0010", "/*0020", "/*0050", "/*0060"]
    with pytest.raises(ValueError, match="no path"):
        ip.idle_path(LAYOUT.replace("@P0 EXIT", "NOP").replace("@P1 BRA", "BRA"), "j")


def test_main_counts_vector_and_uniform_loads_and_fails_only_on_required(monkeypatch, capsys):
    monkeypatch.setattr(ip, "sass", lambda source: SASS)
    assert ip.main(["x.hip", "--kernels", "k"]) == 0           # reported, not required
    assert "k                  7 instructions  LDC=3 ULDC=1 STL=0  (prologue in vector registers)" in capsys.readouterr().out
    assert ip.main(["x.hip", "--kernels", "k", "--require-uniform", "k"]) == 1


@pytest.mark.slow                                               # nvcc on nn.hip: ~10 s
@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("nvdisasm")), reason="needs nvcc and nvdisasm")
def test_bundled_norm_kernels_have_an_idle_path_with_their_parameters(capsys):
    assert ip.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ip.NORMS
    for ln in lines:                                            # the plan: ~40 instructions, no loop
        n = int(ln.split()[1])
        assert 20 <= n <= 80, ln
        assert "STL=0" in ln, ln                                # no spill stored by an idle warp


@pytest.mark.slow                                               # nvcc on nn.hip: ~10 s
@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("nvdisasm")), reason="needs nvcc and nvdisasm")
def test_bundled_row_kernels_shuffle_with_native_butterflies():
    # seg_allreduce's xor shuffles through the 32-lane mapping (hip_runtime.h): one SHFL.BFLY each, no
    # SHFL.IDX with HIP's lane arithmetic before it (that form took 3 more instructions a shuffle)
    text = ip.sass(ip.ROOT / "backends" / "hip" / "nn.hip")
    for k in ip.NORMS + ["softmax_f32", "softmax_f16", "softmax_bf16"]:
        ops = [ln.split("*/", 1)[1] for ln in ip._instructions(ip._body(text, k))]
        assert any("SHFL.BFLY" in op for op in ops), k
        assert not any("SHFL.IDX" in op for op in ops), k


def test_main_counts_the_idle_paths_spill_stores(monkeypatch, capsys):
    # a spilled value stored before the idle test: every idle warp writes it (reduce.hip's fast_max_f16
    # stores two); one on the working path only is not counted
    sass = """
.text.s:
        /*0000*/                   LDC R3, c[0x0][RZ] ;
        /*0010*/                   STL [R1], R3 ;
        /*0020*/              @!P0 BRA `(.L_x_3) ;
        /*0030*/                   STL [R1+0x4], R3 ;
        /*0040*/                   LDG.E R4, desc[UR6][R2.64] ;
        /*0050*/                   EXIT ;
.L_x_3:
        /*0060*/               @P0 EXIT ;
"""
    monkeypatch.setattr(ip, "sass", lambda source: sass)
    assert ip.main(["x.hip", "--kernels", "s"]) == 0
    assert capsys.readouterr().out.strip() == "s                  4 instructions  LDC=1 ULDC=0 STL=1"


# a working path after its barrier: an `@P0 EXIT` for the threads past the rows, then the output pass
SECTIONS = """
.text.w:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/              @!P2 BRA `(.L_x_9) ;
        /*0020*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0030*/               @P0 EXIT ;
        /*0040*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0050*/              @!P1 MOV R8, 0x3c003c00 ;
        /*0060*/                   STL [R1], R4 ;
        /*0070*/                   LDL.LU R4, [R1] ;
        /*0080*/                   STG.E.128 desc[UR6][R2.64], R4 ;
        /*0090*/                   EXIT ;
.L_x_9:
        /*00a0*/               @P3 EXIT ;
"""


def test_barrier_sections_run_to_the_unpredicated_exit_and_count_memory_and_moves():
    (sec,) = ip.barrier_sections(SECTIONS, "w")
    assert len(sec) == 8 and "BAR.SYNC" in sec[0] and sec[-1].split("*/")[1].strip() == "EXIT ;"
    assert ip.section_counts(sec) == "   8 instructions  LDG=1 STG=1 LDL=1 STL=1 MOV=1"
    assert ip.barrier_sections(SASS, "k") == []                 # no barrier: no output pass listed


def test_main_prints_sections_when_asked(monkeypatch, capsys):
    monkeypatch.setattr(ip, "sass", lambda source: SASS + SECTIONS)
    assert ip.main(["x.hip", "--kernels", "k,w"]) == 0
    assert "barrier" not in capsys.readouterr().out
    assert ip.main(["x.hip", "--kernels", "k,w", "--sections"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "w                  3 instructions  LDC=0 ULDC=0 STL=0",
        "  barrier at 0020:    8 instructions  LDG=1 STG=1 LDL=1 STL=1 MOV=1"]
