"""What an idle block of the nn row kernels runs before it returns, from their sm_90 SASS.

Candle launches one 1024-thread norm block per row, and the bundled kernels deal several rows to
one working block: most blocks return at once, so their warps' first instructions are a large share
of the kernel's. ptxas loads those instructions' kernel parameters into uniform registers (ULDC) or
into vector ones (LDC) by choices it makes for the whole kernel, and the uniform form is measurably
faster (backends/hip/nn.hip, plan_rows). This prints, per kernel, the idle path's instructions
(the shortest path from the entry to an EXIT with no global load, store or barrier on it) and its
LDC/ULDC count and its local (spill) stores, each a 128-byte write by every idle warp, so that a
change to nn.hip can be checked without a GPU. With nvcc 13.0, every norm kernel shows LDC=1 (the
rest of the prologue's parameters in ULDC) and STL=0. The reductions too: `python3
bench/idle_prologue.py backends/hip/reduce.hip --kernels fast_max_f16,fast_argmax_f32`. No path with
a global load is taken for the idle one, so where idle blocks read memory before they return (as
arg_rows' read `info` until its idle test came first) this prints another path: read the SASS. The
shortest path is found on the control flow alone, so it may be one no warp takes: for the sums,
minima and maxima it goes through red_groups' branch for launches it does not deal (19
instructions for fast_max_f16, where its idle warps run 28); arg_rows' 18 are the path its idle
warps take.

--sections adds, per kernel, each stretch from a block barrier to the EXIT that ends it: what a
working block's warps run after their row's reduction (the output pass), one stretch per path the
kernel compiled, with its global loads and stores, spill traffic (LDL/STL) and moves. A change
that shortens the output pass shows there (layernorm f16's batch path at 4 packs: 389
instructions with 41 moves, 32 of them, 8 a pack, the fallbacks for a missing alpha or beta).

    python3 bench/idle_prologue.py [NN_HIP] [--kernels rmsnorm_f16,...] [--require-uniform K,...] [--sections]

Needs nvcc and nvdisasm (CUDA toolkit) on PATH, no GPU (on a machine without the toolkit's nvdisasm,
`pip download --no-deps nvidia-cuda-nvdisasm` holds one, nvidia/cu13/bin/nvdisasm); exit 1 when a
kernel of --require-uniform loads its prologue into vector registers.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NORMS = [f"{k}_{t}" for k in ("rmsnorm", "layernorm") for t in ("f32", "f16", "bf16")]


def sass(source: Path) -> str:
    """The sm_90 SASS of a HIP file compiled as parity's hip-on-nvidia level maps it (nvcc)."""
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d) / "k.cubin"
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-std=c++17", "--expt-relaxed-constexpr",
                        "-D__HIPCC__", "-I", str(source.parent / "include"), "-x", "cu", str(source),
                        "-o", str(cubin)], check=True, capture_output=True)
        return subprocess.run(["nvdisasm", "-c", str(cubin)], check=True, capture_output=True, text=True).stdout


_ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")   # an instruction line's address, as nvdisasm -c prints it


def _body(text: str, kernel: str) -> list[str]:
    """The kernel's lines of the listing: its instructions and labels, in order."""
    return text.split(f".text.{kernel}:", 1)[1].split("\n.text.", 1)[0].splitlines()


def _instructions(lines: list[str]) -> list[str]:
    """The instruction lines (those with an address) among `lines`, in order."""
    return [ln for ln in lines if _ADDRESS.search(ln)]


def idle_path(text: str, kernel: str) -> list[str]:
    """The shortest run of the kernel's instructions from its entry to an EXIT that reads no global
    memory and meets no barrier (branches followed either way): what an idle block's warps run, the
    kernel's working paths all loading their row first."""
    body = _body(text, kernel)
    ins = _instructions(body)
    at, n = {}, 0                                  # label -> index of the instruction after it
    for ln in body:
        if _ADDRESS.search(ln):
            n += 1
        elif ln.strip().endswith(":"):
            at[ln.strip()[:-1]] = n
    parent = {0: None}
    queue = deque([0])
    while queue:
        i = queue.popleft()
        op = ins[i].split("*/", 1)[1]
        if re.search(r"\b(LDG|STG|BAR)\b", op):
            continue
        if re.search(r"\bEXIT\b", op):
            path = []
            while i is not None:
                path.append(ins[i])
                i = parent[i]
            return path[::-1]
        jump = re.search(r"\bBRA\b.*`\(([^)]+)\)", op)
        nxt = [at[jump.group(1)]] if jump else []
        if not jump or op.strip().startswith("@"):          # an unpredicated BRA does not fall through
            nxt.append(i + 1)
        for j in nxt:
            if j < len(ins) and j not in parent:
                parent[j] = i
                queue.append(j)
    raise ValueError(f"{kernel}: no path from the entry to an EXIT without a load, store or barrier")


def barrier_sections(text: str, kernel: str) -> list[list[str]]:
    """Each stretch of the kernel's instructions from a BAR.SYNC to the first unpredicated EXIT after
    it (in the listing's order; an `@P EXIT` on the way returns the threads past the launch's rows):
    a working block's output pass, one per compiled path."""
    ins, out = _instructions(_body(text, kernel)), []
    for i, ln in enumerate(ins):
        if "BAR.SYNC" in ln:
            end = next((j for j in range(i + 1, len(ins)) if re.search(r"\*/\s+EXIT\b", ins[j])), None)
            if end is not None:
                out.append(ins[i:end + 1])
    return out


def section_counts(section: list[str]) -> str:
    """A stretch's length and its global loads/stores, local (spill) loads/stores and moves."""
    counts = {op: sum(1 for ln in section if re.search(rf"\b{op}\b", ln))
              for op in ("LDG", "STG", "LDL", "STL", "MOV")}
    return f"{len(section):4d} instructions  " + " ".join(f"{op}={c}" for op, c in counts.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", nargs="?", default=str(ROOT / "backends" / "hip" / "nn.hip"))
    ap.add_argument("--kernels", default=",".join(NORMS))
    ap.add_argument("--require-uniform", default="", metavar="K,...",
                    help="exit 1 when one of these kernels loads its prologue into vector registers")
    ap.add_argument("--sections", action="store_true",
                    help="also each stretch from a block barrier to its EXIT (the output passes)")
    a = ap.parse_args(argv)
    text = sass(Path(a.source))
    required = set(filter(None, a.require_uniform.split(",")))
    vector = 0
    for k in a.kernels.split(","):
        path = idle_path(text, k)
        ldc = sum(1 for ln in path if re.search(r"\bLDC(\.\d+)? ", ln))
        uldc = sum(1 for ln in path if "ULDC" in ln)
        stl = sum(1 for ln in path if re.search(r"\bSTL\b", ln))
        vector += ldc > 1 and k in required
        print(f"{k:16s} {len(path):3d} instructions  LDC={ldc} ULDC={uldc} STL={stl}"
              + ("  (prologue in vector registers)" if ldc > 1 else ""))
        if a.sections:
            for sec in barrier_sections(text, k):
                at = _ADDRESS.search(sec[0]).group(1)
                print(f"  barrier at {at}: {section_counts(sec)}")
    return 1 if vector else 0


if __name__ == "__main__":
    sys.exit(main())
