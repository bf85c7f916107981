"""Level `amd-static`: compile every HIP source for AMD targets and read per-kernel resources.

One `hipcc --genco --offload-arch=ARCH -Rpass-analysis=kernel-resource-usage` per (source,
arch): the remarks do not name the arch, so one arch per invocation. Compiles go through the
compile cache (the remarks are kept in the entry's log) and run in a thread pool. Beside the
numbers, a static scan flags wavefront-size assumptions (docs/DESIGN.md, "Wavefront size is
the trap"): literal 32/64 lane counts in shuffle code, `__ballot` results stored in 32- or 64-bit
integers, lane arithmetic with `% 32` / `& 31`, `warpSize` used as a compile-time constant.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from parity.core.suggest import unknown
from parity.suite.compile_cache import compile_source, toolchain_version
from parity.suite.elf import kernels_from_binary
from parity.suite.includes import header_closure
from parity.suite.scan import Suite, balanced_end, discover, strip_comments

DEFAULT_TARGETS = ("gfx90a", "gfx908", "gfx1030", "gfx940")
# LLVM's AMDGPU processors: what a target hipcc rejects is matched against, so a typo (gfx90) is
# told the closest names. hipcc alone decides what compiles: a name missing here is not refused.
KNOWN_TARGETS = (
    "gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705",
    "gfx801", "gfx802", "gfx803", "gfx805", "gfx810",
    "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940", "gfx941", "gfx942",
    "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034",
    "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
    "gfx1200", "gfx1201", "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic", "gfx11-generic",
    "gfx12-generic")
HIP_ENV = {"HIP_PLATFORM": "amd"}
BASE_FLAGS = ["--genco", "-O3", "-std=c++17"]
REMARK_FLAG = "-Rpass-analysis=kernel-resource-usage"

_FIELDS = {
    "SGPRs": "sgprs", "VGPRs": "vgprs", "AGPRs": "agprs", "ScratchSize [bytes/lane]": "scratch_bytes",
    "Occupancy [waves/SIMD]": "occupancy", "SGPRs Spill": "sgpr_spill", "VGPRs Spill": "vgpr_spill",
    "LDS Size [bytes/block]": "lds_bytes",
}
_REMARK = re.compile(r"^(?P<file>.*?):(?P<line>\d+):\d+: remark:\s+(?P<body>.*?)\s*\[-Rpass-analysis=kernel-resource-usage\]\s*$")


@dataclass
class StaticRow:
    kernel: str
    arch: str
    status: str                       # "ok" | "compile-error" | "timeout" (not checked) | "missing" | "unavailable"
    file: str = ""
    line: int | None = None
    wavefront: int | None = None
    vgprs: int | None = None
    sgprs: int | None = None
    agprs: int | None = None
    vgpr_spill: int | None = None
    sgpr_spill: int | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None
    occupancy: int | None = None
    notes: list[str] = field(default_factory=list)
    message: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def hipcc() -> list[str] | None:
    exe = shutil.which("hipcc")
    return [exe] if exe else None


def wavefront_size(arch: str, flags: list[str] = ()) -> int:
    """64 on gfx9 (GCN/CDNA), 32 on gfx10+ (RDNA) unless compiled with wave64."""
    m = re.match(r"gfx(\d+)", arch)
    major = int(m.group(1)[:-2] or 0) if m else 9
    if major >= 10:
        return 64 if any("wavefrontsize64" in f for f in flags) else 32
    return 64


def parse_resource_usage(text: str) -> dict[str, dict]:
    """Kernel name -> {vgprs, sgprs, ..., file, line} from the remarks in a compile log."""
    out: dict[str, dict] = {}
    cur = None
    for ln in text.splitlines():
        m = _REMARK.match(ln)
        if not m:
            continue
        body = m.group("body")
        if body.startswith("Function Name:"):
            cur = body.split(":", 1)[1].strip()
            out[cur] = {"file": m.group("file"), "line": int(m.group("line"))}
            continue
        if cur is None or ":" not in body:
            continue
        k, v = body.rsplit(":", 1)
        key = _FIELDS.get(k.strip())
        if key:
            try:
                out[cur][key] = int(v.strip())
            except ValueError:
                pass
    return out


_PROBE = 'extern "C" __global__ void parity_probe(float* p) { p[threadIdx.x] = 1.0f; }\n'


def accepted_targets(targets=DEFAULT_TARGETS, cache_root: Path | None = None) -> dict[str, tuple[bool, str]]:
    """arch -> (accepted, reason) by compiling a one-line kernel for each with this hipcc."""
    cc = hipcc()
    if not cc:
        return {a: (False, "hipcc not found (apt-get install hipcc libamdhip64-dev)") for a in targets}
    res = {}
    with tempfile.TemporaryDirectory(prefix="parity-probe-") as tmp:
        probe = Path(tmp) / "probe.hip"
        probe.write_text("#include <hip/hip_runtime.h>\n" + _PROBE)

        def one(arch):
            r = compile_source(probe, cc, [*BASE_FLAGS, f"--offload-arch={arch}"], target=arch,
                               env=HIP_ENV, cache_root=cache_root)
            if r.ok:
                return arch, (True, "")
            lines = r.error.message.splitlines() or ["rejected"]      # (a timeout: its first line says so)
            return arch, (False, lines[0].replace(str(probe), "a one-line probe") if r.timed_out else lines[-1])
        with ThreadPoolExecutor(max_workers=max(1, min(len(targets), os.cpu_count() or 1))) as pool:
            res = dict(pool.map(one, targets))
    return res


def target_refusal(targets: tuple[str, ...], cache_root: Path | None = None) -> str | None:
    """One line for the first of `targets` this hipcc cannot compile for (an unknown name gets the
    closest known ones), None when it compiles for all: a target named on the command line is never
    just an `unavailable` row, which a CI gate with a typo in it would pass."""
    for arch, (ok, why) in accepted_targets(targets, cache_root).items():
        if ok:
            continue
        if arch.split(":")[0] not in KNOWN_TARGETS:       # (gfx90a:xnack+: a processor and its features)
            return unknown("AMD target", arch, DEFAULT_TARGETS + KNOWN_TARGETS, ordered=True,
                           hint=f"e.g. {', '.join(DEFAULT_TARGETS)}")
        return f"hipcc cannot compile for {arch} here: {why}"
    return None


# ------------------------------------------------------------------------ wavefront scan
_SCAN = [
    (re.compile(r"__shfl\w*\s*\([^;]*\b(32|64|31|63)\b"),
     "literal lane count {0} in a shuffle: wave64 on CDNA, 32 on NVIDIA/RDNA"),
    (re.compile(r"\b(?:uint64_t|unsigned\s+long\s+long|u64|long\s+long|int64_t)\s+\w+\s*=\s*__ballot"),
     "__ballot stored as a 64-bit mask: NVIDIA/RDNA fill only the low 32 bits"),
    (re.compile(r"\b(?:uint32_t|unsigned\s+int|unsigned|u32|int)\s+\w+\s*=\s*__ballot"),
     "__ballot stored in 32 bits: lanes 32-63 of a CDNA wave64 are dropped"),
    (re.compile(r"__popc\s*\(\s*__ballot"),
     "__popc on a ballot counts 32 lanes only: use __popcll on wave64"),
    (re.compile(r"(?:threadIdx\.x|hipThreadIdx_x|\btid\b|\blane\w*)\s*(?:%\s*(32|64)\b|&\s*(31|63)\b|>>\s*(5|6)\b|/\s*(32|64)\b)"),
     "lane/warp index computed with a literal ({0}): assumes a fixed wavefront size"),
    (re.compile(r"\[\s*warpSize\s*\]|constexpr[^;]*warpSize|static_assert[^;]*warpSize"),
     "warpSize used as a compile-time constant: it is a run-time value in HIP"),
    (re.compile(r"__\w+_sync\s*\(\s*0x[fF]{8}[uU]?\s*,"),
     "full-warp mask 0xffffffff: covers 32 lanes, half of a CDNA wave64"),
]
# A halving loop from a literal 16/32 is a warp reduction only when its body shuffles: one that
# exchanges through shared memory (quantized_mmv.hip's butterfly32) is block-wide, the same on
# 32- and 64-lane waves. Matched over the whole text, the body found by bracket matching.
_HALVING_LOOP = re.compile(r"\bfor\s*\([^;]*=\s*(16|32)\s*;[^;]*;[^)]*(?:>>=\s*1|/=\s*2)\s*\)")
_SHUFFLE = re.compile(r"__shfl\w*\s*\(")
_LOOP_NOTE = {"16": "warp-reduction loop starting at 16: reduces lanes 0-31 only; a wave64 reduction must start at 32",
              "32": "warp-reduction loop starting at 32: assumes a 64-lane wave; a 32-lane wave (RDNA, NVIDIA) "
                    "must start at 16 (start at warpSize / 2)"}


def _statement_end(text: str, i: int) -> int:
    """Offset just past the statement starting at `i` (a loop's body): a `{...}` block, or up to
    the `;` outside parentheses (so `for (...) for (...) x;` is one statement)."""
    while i < len(text):
        c = text[i]
        if c == "(":
            i = balanced_end(text, i + 1, "()")
            continue
        if c == "{":
            return balanced_end(text, i + 1)
        if c == ";":
            return i + 1
        i += 1
    return i


def _reduction_loops(text: str) -> list[tuple[int, str]]:
    """(line, note) for each halving loop from a literal 16/32 whose body shuffles."""
    out = []
    for m in _HALVING_LOOP.finditer(text):
        if _SHUFFLE.search(text, m.end(), _statement_end(text, m.end())):
            out.append((text.count("\n", 0, m.start()) + 1, _LOOP_NOTE[m.group(1)]))
    return out


def wavefront_scan(paths) -> list[tuple[str, int, str]]:
    """(file, line, note) for each wavefront-size assumption in the given sources/headers."""
    found = []
    for p in paths:
        p = Path(p)
        try:
            text = strip_comments(p.read_text(errors="replace"))
        except OSError:
            continue
        notes = []
        for i, ln in enumerate(text.splitlines(), 1):
            for rx, msg in _SCAN:
                m = rx.search(ln)
                if m:
                    lit = next((g for g in m.groups() if g), "") if m.groups() else ""
                    notes.append((i, msg.format(lit)))
        notes += _reduction_loops(text)
        found += [(str(p), i, note) for i, note in sorted(notes, key=lambda n: n[0])]
    return found


def kernel_notes(suite: Suite) -> dict[str, list[str]]:
    """Per kernel: the wavefront findings of its own source file and of the suite's headers.

    Kernels built by macros share their helpers, so findings are attributed by file: a note
    says where the assumption is, and the kernels that may run it carry it.
    """
    findings = wavefront_scan([*suite.sources, *suite.headers])
    by_file: dict[str, list[str]] = {}
    for f, line, msg in findings:
        by_file.setdefault(str(Path(f).resolve()), []).append(f"{f}:{line}: {msg}")
    notes: dict[str, list[str]] = {}
    closure_cache: dict[Path, list[str]] = {}
    for name, k in suite.kernels.items():
        if k.file is None:
            continue
        src = Path(k.file)
        if src not in closure_cache:
            files = [src.resolve(), *header_closure(src)]
            closure_cache[src] = [n for f in files for n in by_file.get(str(f), [])]
        if closure_cache[src]:
            notes[name] = closure_cache[src]
    return notes


# ------------------------------------------------------------------------------ analysis
def compile_for_arch(source: Path, arch: str, extra_flags: list[str] = (), cache_root: Path | None = None,
                     include_dirs: list[Path] = ()):
    """One hipcc compile. extra_flags: e.g. a shim port's build line (parity.suite.port.Port.hipcc_flags);
    include_dirs: where its headers are found besides the source's folder (for the cache key)."""
    cc = hipcc()
    flags = [*BASE_FLAGS, f"--offload-arch={arch}", REMARK_FLAG, *extra_flags]
    return compile_source(source, cc, flags, target=arch, include_dirs=[source.parent, *include_dirs], env=HIP_ENV,
                          cache_root=cache_root)


def analyze(suite: Suite | str | os.PathLike, targets=DEFAULT_TARGETS, *, jobs: int | None = None,
            extra_flags: list[str] = (), cache_root: Path | None = None,
            on_compiled: Callable[[int, int, str], None] | None = None,
            include_dirs: list[Path] = ()) -> list[StaticRow]:
    """Rows per (kernel, arch): resources, wavefront size, wavefront notes; or why not.
    on_compiled(done, total, "file arch"): once with done=0 before the compiles start, then (from
    the compile threads) as each one finishes — for progress."""
    suite = suite if isinstance(suite, Suite) else discover(suite)
    hip_sources = [s for s in suite.sources if s.suffix == ".hip"] or list(suite.sources)
    if not hipcc():
        return [StaticRow("*", a, "unavailable", message="hipcc not found (apt-get install hipcc libamdhip64-dev)")
                for a in targets]
    accepted = accepted_targets(targets, cache_root)
    rows: list[StaticRow] = []
    for a, (ok, why) in accepted.items():
        if not ok:
            rows.append(StaticRow("*", a, "unavailable", message=f"hipcc rejects --offload-arch={a}: {why}"))
    archs = [a for a in targets if accepted[a][0]]
    notes = kernel_notes(suite)
    by_file = suite.by_file()
    jobs = jobs or max(1, os.cpu_count() or 1)
    tasks = [(s, a) for s in hip_sources for a in archs]
    done = iter(range(1, len(tasks) + 1))             # next() is atomic under the GIL

    def one(t: tuple[Path, str]):
        res = compile_for_arch(t[0], t[1], extra_flags, cache_root, include_dirs)
        if on_compiled:
            on_compiled(next(done), len(tasks), f"{Path(t[0]).name} {t[1]}")
        return t, res
    if on_compiled:
        on_compiled(0, len(tasks), "")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, tasks))
    for (src, arch), res in results:
        wf = wavefront_size(arch, extra_flags)
        if not res.ok:
            names = by_file.get(src) or ["*"]
            for n in sorted(names):
                rows.append(StaticRow(n, arch, "timeout" if res.timed_out else "compile-error", str(src),
                                      wavefront=wf, notes=notes.get(n, []), message=res.error.message))
            continue
        usage = parse_resource_usage(res.log)
        try:
            names = set(kernels_from_binary(res.binary, arch))
        except Exception:
            names = set()
        if names:                                # the code object's own list: a kernel the source defines
            for n in sorted(set(by_file.get(src, [])) - names):     # that this target's build left out (#if)
                rows.append(StaticRow(n, arch, "missing", str(src), wavefront=wf, notes=notes.get(n, []),
                                      message=f"{n} is defined in {src.name} but absent from its code object for "
                                              f"{arch} (left out for this target by an #if on the arch, or a "
                                              "static kernel: internal linkage renames it)"))
            by_file_here = set(by_file.get(src, [])) & names
        else:                                    # (no list read: the scan's names stand)
            by_file_here = set(by_file.get(src, []))
        if not names and not usage and by_file.get(src):   # exit 0, yet no code object, no remark
            rows += [StaticRow(n, arch, "unavailable", str(src), wavefront=wf, notes=notes.get(n, []),
                               message="hipcc exited 0 but its output holds none of the file's kernels and it "
                                       "printed no resource usage: the toolchain, not the source")
                     for n in sorted(by_file[src])]
            continue
        names |= by_file_here
        for n in sorted(names | set(k for k in usage if not k.startswith("_Z"))):
            u = usage.get(n, {})
            k = suite.kernels.get(n)
            rows.append(StaticRow(
                n, arch, "ok", str(k.file) if k and k.file else str(src), k.line if k else u.get("line"),
                wf, u.get("vgprs"), u.get("sgprs"), u.get("agprs", 0 if u else None),
                u.get("vgpr_spill"), u.get("sgpr_spill"), u.get("lds_bytes"), u.get("scratch_bytes"),
                u.get("occupancy"), notes.get(n, []), "" if u else "no resource-usage remark for this kernel"))
    return rows


def toolchain() -> str:
    cc = hipcc()
    return toolchain_version(tuple(cc), tuple(HIP_ENV.items())) if cc else ""
