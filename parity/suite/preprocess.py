"""One suite source through the C preprocessor, whatever its includes are.

Discovery runs gcc's `cpp` over each source (parity.suite.scan) so that kernels stamped out by macros
are seen. A port's sources include headers this machine may not have, or ones that must never be
read, and each of those would otherwise end the file's preprocessing and lose its macro-stamped
kernels. Everything here happens inside one private temporary folder per call, removed after it
(on Ctrl-C and SIGTERM too: the CLI turns SIGTERM into an exception), and nothing is written anywhere
else:

* a header cpp cannot find under a relative name (`<hip/hip_runtime.h>`, `"../x.h"` up to STUB_DEPTH
  levels up) gets an empty stub in the folder's `stubs/` tree, found through `-I`;
* an include that cannot be stubbed there (an absolute name, more `../` than STUB_DEPTH) or that must
  not be opened (a FIFO or device outside the suite's folders, `parity.suite.includes.Refusal`) is
  blanked instead: the file holding it is copied into the folder's `overlay/` tree, at its absolute
  path below it (a name that cannot leave it), with that one line emptied, and its folder is mirrored
  there (a symbolic link per entry) so the copy's own includes resolve as the original's; cpp reads
  the overlay first. Each blanked include is one note;
* cpp runs with a time limit (CPP_TIMEOUT_S) and a memory limit (CPP_MEMORY_BYTES): a computed include
  of a FIFO would block it forever and one of `/dev/zero` would fill memory. Either ends discovery
  at once with a `SuiteError` naming the source (the other sources would only cost the same again).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from parity.core.files import special_file
from parity.suite.includes import Refusal, include_directives

STUB_DEPTH = 4           # `#include "../x.h"` up to this many levels up still lands in the stub folder
CPP_TIMEOUT_S = 120      # a computed include of a FIFO would block cpp forever
CPP_MEMORY_BYTES = 2 << 30   # ... and one of /dev/zero would read until memory runs out
MIRROR_UP = STUB_DEPTH   # folders above a blanked file's own that are mirrored too (its `../` includes)

_FATAL = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):\d+: fatal error: (?P<msg>[^\n]*)$", re.M)
_NOT_FOUND = re.compile(r"^(?P<name>.+): No such file or directory$")
_MARKER_PATH = re.compile(r'^(#\s*\d+\s+")((?:[^"\\\n]|\\.)*)(")', re.M)   # cpp escapes " and \ in paths


def marker_path(quoted: str) -> str:
    """A line marker's file name as cpp wrote it (\\" and \\\\ escaped) -> the path."""
    return re.sub(r"\\(.)", r"\1", quoted)


def marker_quote(path: str) -> str:
    """A path as a line marker's file name (a `"` in it would end the name)."""
    return path.replace("\\", "\\\\").replace('"', '\\"')


class SuiteError(ValueError):
    """What discovery cannot go on with, in one line: a special file in the suite's folders, or a cpp
    run that never finishes."""


def default_defines(suffix: str) -> dict[str, str]:
    """The macros a source is read under: a .hip file as hipcc's AMD device pass sees it (no
    __CUDA_ARCH__: a parameter type chosen by `#ifdef __CUDA_ARCH__` is the AMD build's, which the
    port ships), a .cu file as nvcc's device pass."""
    d = {"__PARITY_DISCOVERY__": "1"}
    if suffix == ".hip":
        d.update({"__HIPCC__": "1", "__HIP__": "1", "__HIP_DEVICE_COMPILE__": "1",
                  "__HIP_PLATFORM_AMD__": "1", "__HIP_PLATFORM_HCC__": "1", "__AMDGCN__": "1"})
    else:
        d.update({"__CUDA_ARCH__": "900", "__CUDACC__": "1", "__NVCC__": "1"})
    return d


def stub_path(stubs: Path, name: str) -> Path | None:
    """Where an empty stub for the missing header `name` (as written in the #include) goes so cpp
    finds it through `-I stubs/i/i/...`, or None when that would lie outside `stubs` (an absolute
    name, or more `../` than STUB_DEPTH): such a header is not stubbed."""
    if os.path.isabs(name) or "\0" in name:
        return None
    target = Path(os.path.normpath(stubs.joinpath(*["i"] * STUB_DEPTH, name)))
    return target if target != stubs and target.is_relative_to(stubs) else None


def _physical(p: str | os.PathLike) -> Path:
    return Path(os.path.abspath(p)).resolve()


class Overlay:
    """Copies of suite files with unusable `#include` lines blanked, each at its absolute path below
    `root`, in folders mirroring the originals' (a link per entry). Empty until a line is blanked."""

    def __init__(self, root: Path, source: Path, search: list[Path] = ()):
        self.root, self.source = root, Path(source)
        self.roots = {_physical(d) for d in [Path(source).parent, *search]}   # the -I folders
        self.blanked: dict[Path, set[int]] = {}
        self._mirrored: set[Path] = set()

    @property
    def active(self) -> bool:
        return bool(self.blanked)

    def of(self, p: str | os.PathLike) -> Path:
        """Where the original `p` is in the overlay (below root by construction: no `..` is left)."""
        return self.root.joinpath(*_physical(p).parts[1:])

    def original(self, spelled: str) -> Path:
        """The original of a path cpp names (an overlay path, or an original already)."""
        p = Path(spelled)
        return Path("/", *p.relative_to(self.root).parts) if p.is_relative_to(self.root) else p

    def blank(self, file: str | os.PathLike, line: int) -> bool:
        """Empty line `line` of `file` (and the lines a backslash continues it on) in its overlay
        copy; False when it was blank already (cpp stopped there again: no progress)."""
        f = _physical(self.original(str(file)))
        done = self.blanked.setdefault(f, set())
        if line in done or line < 1 or special_file(f):
            return False
        done.add(line)
        self._mirror(_physical(self.source).parent)
        self._mirror(f.parent)
        lines = f.read_bytes().splitlines(keepends=True)
        for n in sorted(done):
            i = n - 1
            while 0 <= i < len(lines):
                cont = lines[i].rstrip(b"\r\n").endswith(b"\\")
                lines[i] = lines[i][len(lines[i].rstrip(b"\r\n")):]
                if not cont:
                    break
                i += 1
        target = self.of(f)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(b"".join(lines))
        return True

    def _mirror(self, folder: Path) -> None:
        """Make the overlay's copy of `folder` and of its ancestors real folders (never links, so
        nothing is written through one), with a link per entry of the original in `folder` and in
        its ancestors up to the outermost search folder holding it (MIRROR_UP at most): the copies'
        `"sib.h"` and `"../x.h"` find what the originals' do. (Above the search folders, cpp's
        fall-back to the original -I folders resolves a `../` as the original does.)"""
        chain = [folder, *folder.parents]
        inside = [i for i, a in enumerate(chain) if a in self.roots]
        top = min(max(inside, default=0), MIRROR_UP)
        for depth, orig in reversed(list(enumerate(chain))):
            o = self.of(orig) if orig != Path(orig.anchor) else self.root
            if o.is_symlink():
                o.unlink()
            o.mkdir(parents=True, exist_ok=True)
            if depth > top or o in self._mirrored:
                continue
            self._mirrored.add(o)
            try:
                entries = list(os.scandir(orig))
            except OSError:
                continue
            for e in entries:
                link = o / e.name
                if not link.exists() and not link.is_symlink():
                    os.symlink(e.path, link)

    def include_dirs(self, dirs: list[Path]) -> list[Path]:
        """The -I folders: each original's overlay copy (where it has one) just ahead of it."""
        out: list[Path] = []
        for d in dirs:
            if self.active and self.of(d).is_dir():
                out.append(self.of(d))
            out.append(Path(d))
        return out

    def file(self, f: Path) -> Path:
        """The path cpp is given for `f` (the source, a force-included header)."""
        return self.of(f) if self.active and (self.of(f).exists() or self.of(f).is_symlink()) else Path(f)

    def unmap(self, text: str) -> str:
        """cpp's output with every overlay path in its line markers back to the original's: the
        source as the caller spelled it, other files absolute (relative when the source was)."""
        if not self.active:
            return text
        root, main = str(self.root) + os.sep, str(self.of(self.source))

        def back(m: re.Match) -> str:
            p = marker_path(m.group(2))
            if not p.startswith(root):
                return m.group(0)
            if p == main:
                return m.group(1) + marker_quote(str(self.source)) + m.group(3)
            orig = os.sep + p[len(root):]
            return m.group(1) + marker_quote(orig if self.source.is_absolute() else os.path.relpath(orig)) + m.group(3)
        return _MARKER_PATH.sub(back, text)


def run_cpp(cmd: list[str], source: Path) -> subprocess.CompletedProcess:
    """cmd under the time and memory limits, in a session of its own (cpp's cc1plus is killed with
    it); SuiteError when it does not finish or runs out of memory, naming the source."""
    sh = shutil.which("sh")
    argv = [sh, "-c", f'ulimit -v {CPP_MEMORY_BYTES // 1024} 2>/dev/null; exec "$0" "$@"', *cmd] if sh else cmd
    never = "an include that never ends (FIFO/device)?"
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          text=True, errors="replace", start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=CPP_TIMEOUT_S)
        except BaseException as e:           # the limit, Ctrl-C, SIGTERM: cpp does not outlive us
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.communicate()
            if isinstance(e, subprocess.TimeoutExpired):
                raise SuiteError(f"preprocessing {source} did not finish in {CPP_TIMEOUT_S} s — {never}") from None
            raise
    if "out of memory" in err or "memory exhausted" in err:
        raise SuiteError(f"preprocessing {source} ran out of memory (limit {CPP_MEMORY_BYTES >> 20} MiB) — {never}")
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _where(file: Path, line: int, source: Path) -> str:
    """file:line, relative to the source's folder when inside it."""
    home = _physical(source).parent
    return f"{file.relative_to(home) if file.is_relative_to(home) else file}:{line}"


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if "error" in ln]
    return (lines or [ln.strip() for ln in stderr.splitlines() if ln.strip()] or ["no output"])[0][:300]


def _include_at(file: Path, line: int) -> bool:
    """Whether line `line` of `file` holds an #include directive."""
    try:
        return any(i.line == line for i in include_directives(file.read_text(errors="replace")))
    except OSError:
        return False


# Headers of the toolkits and the C/C++ libraries, which a machine without ROCm or CUDA lacks: stubbed
# without a note, however they are included ("cuda_fp16.h" as often as <cuda_fp16.h>). A library's
# folder (`thrust/scan.h`), a C++ header (no suffix), or one of these names; a port's own header, even
# one named like them (`cuda_utils.cuh`, `hip_utils.h`), is not.
_TOOLKIT_FOLDERS = {"hip", "cuda", "crt", "cub", "hipcub", "thrust", "rocprim", "rocrand", "hiprand", "rocblas",
                    "hipblas", "hipblaslt", "miopen", "rocwmma", "rccl", "nccl", "cutlass", "cute", "amd_detail",
                    "nvidia_detail", "sys", "bits", "cooperative_groups", "nv"}
_TOOLKIT_HEADERS = {
    # CUDA
    "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h",
    "cuda_bf16.hpp", "cuda_fp8.h", "cuda_fp8.hpp", "cuda_fp6.h", "cuda_fp4.h", "cuda_pipeline.h",
    "cuda_awbarrier.h", "cuda_texture_types.h", "cuda_surface_types.h", "cuda_device_runtime_api.h",
    "cooperative_groups.h", "mma.h", "driver_types.h", "vector_types.h", "vector_functions.h",
    "device_functions.h", "device_launch_parameters.h", "device_atomic_functions.h", "math_constants.h",
    "math_functions.h", "host_defines.h", "builtin_types.h", "channel_descriptor.h", "texture_types.h",
    "surface_types.h", "library_types.h", "sm_20_intrinsics.h", "sm_30_intrinsics.h", "sm_32_intrinsics.h",
    "sm_35_intrinsics.h", "sm_60_atomic_functions.h", "sm_61_intrinsics.h", "cuComplex.h", "curand.h",
    "curand_kernel.h", "cublas_v2.h", "cublas.h", "cufft.h", "nvrtc.h", "nvml.h", "nvfunctional",
    # HIP / ROCm
    "hip_runtime.h", "hip_runtime_api.h", "hip_fp16.h", "hip_bf16.h", "hip_bfloat16.h", "hip_fp8.h",
    "hip_version.h", "hip_complex.h", "hip_cooperative_groups.h", "hip_math_constants.h", "hip_vector_types.h",
    "hip_common.h", "hip_ext.h", "amd_hip_runtime.h", "hiprtc.h",
    # C
    "assert.h", "ctype.h", "errno.h", "float.h", "inttypes.h", "limits.h", "math.h", "stdarg.h", "stdbool.h",
    "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "string.h", "time.h", "wchar.h", "fenv.h", "complex.h",
    "signal.h", "setjmp.h", "locale.h", "iso646.h", "uchar.h", "unistd.h", "memory.h", "malloc.h",
}


def _toolkit_header(name: str) -> bool:
    parts = Path(name).parts
    if len(parts) > 1:
        return parts[0] in _TOOLKIT_FOLDERS
    return "." not in name or name in _TOOLKIT_HEADERS


def _stub_note(name: str, file: Path, line: int) -> str:
    """The note for a quoted include of a header of the port's own (`"binary.h"`) that an empty stub
    stood in for: the kernels its macros stamp out are then not seen, and would be reported missing
    with no word of why. Toolkit and library headers, and <...> includes, are stubbed silently."""
    try:
        inc = next((i for i in include_directives(file.read_text(errors="replace")) if i.line == line), None)
    except OSError:
        inc = None
    if inc is None or inc.angled or _toolkit_header(name):
        return ""
    return (f"#include {name!r} is not found: an empty stub stood in for it, so what it defines (kernels its "
            "macros make among them) is not seen; give its folder (--port-include DIR, or include_dirs in "
            "parity-port.toml)")


def _recover(m: re.Match, overlay: Overlay, stubs: Path, source: Path) -> tuple[bool, str]:
    """What to do about cpp's fatal error `m`: (go on, note). A missing header with a relative name
    gets a stub (a note where it is the port's own header, _stub_note); any other include cpp stops at
    is blanked, with a note."""
    file, line, msg = overlay.original(m.group("file")), int(m.group("line")), m.group("msg").strip()
    where = _where(_physical(file), line, source)
    miss = _NOT_FOUND.match(msg)
    if miss:
        name = miss.group("name").strip()
        stub = stub_path(stubs, name)
        if stub is not None and not stub.exists():
            stub.parent.mkdir(parents=True, exist_ok=True)     # (stubs/ holds no link to write through)
            if _physical(stub).is_relative_to(stubs):
                stub.write_text("")
                return True, _stub_note(name, _physical(file), line)
        why = "is not found" if stub is None else "is not found (an empty stub did not do)"
        note = f"#include {name!r} ({where}) {why} and is not stubbed (an absolute or ../ name outside the " \
               "include folders): preprocessed without it"
    else:
        if not _include_at(_physical(file), line):
            return False, f"cpp stopped at {where}: {msg}"
        note = f"#include at {where}: {msg}: preprocessed without it"
    if not overlay.blank(file, line):
        return False, f"cpp stopped at {where} again: {msg}"
    return True, note


def preprocess(source: Path, include_dirs: list[Path] = (), defines: dict[str, str] | None = None,
               cpp: str | None = None, max_stubs: int = 200, force_includes: list[Path] = (),
               blanks: list[Refusal] = ()) -> tuple[str | None, list[str]]:
    """Run `cpp` over `source` as above. Returns (text, notes): the text is None when cpp could not
    get through the file (the last note says why: only its literal declarations are found then); a
    note names each include blanked (not found, or refused). blanks: includes never to be opened
    (each with its file and line). SuiteError when cpp does not finish."""
    cpp = cpp or shutil.which("cpp")
    if not cpp:
        return None, ["no C preprocessor (cpp) on PATH: only literal kernel declarations are found"]
    defines = default_defines(source.suffix) if defines is None else defines
    notes: list[str] = []
    literal = "only literal kernel declarations are found (kernels its macros stamp out are not discovered)"
    with tempfile.TemporaryDirectory(prefix="parity-stubs-") as tmp:
        stubs = (Path(tmp).resolve() / "stubs")
        inc = stubs.joinpath(*["i"] * STUB_DEPTH)
        inc.mkdir(parents=True)
        overlay = Overlay(Path(tmp).resolve() / "overlay", source, list(include_dirs))
        for r in blanks:
            if not overlay.blank(r.file, r.line):
                return None, notes + [f"{r}: {literal}"]
            notes.append(f"#include {r.name!r} ({_where(_physical(r.file), r.line, source)}) refused: "
                         f"{r.reason.removesuffix(': refused (not opened)')}: preprocessed without it")
        for _ in range(max_stubs):
            cmd = [cpp, "-x", "c++", "-std=c++17", "-nostdinc", "-w"]
            cmd += [f"-I{d}" for d in overlay.include_dirs([source.parent, *include_dirs])] + [f"-I{inc}"]
            cmd += [f"-D{k}={v}" for k, v in defines.items()]
            cmd += [a for f in force_includes for a in ("-include", str(overlay.file(Path(f))))]
            given = str(overlay.file(source))
            dashed = given.startswith("-")           # `-dashsrc/k.hip` would be read as an option: ./ ahead,
            p = run_cpp(cmd + ["./" + given if dashed else given], source)    # taken off the markers again
            m = _FATAL.search(p.stderr)
            if m is None:
                if p.returncode != 0 and not p.stdout:
                    return None, notes + [f"cpp failed: {_first_error(p.stderr)}: {literal}"]
                out = _MARKER_PATH.sub(lambda k: k.group(1) + k.group(2).removeprefix("./") + k.group(3), p.stdout) \
                    if dashed else p.stdout
                return overlay.unmap(out), notes
            go_on, note = _recover(m, overlay, stubs, source)
            if not go_on:
                return None, notes + [f"{note}: {literal}"]
            if note:
                notes.append(note)
    return None, notes + [f"more than {max_stubs} missing headers: {literal}"]
