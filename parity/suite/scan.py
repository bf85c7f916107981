"""A kernel suite: a folder of `.hip` / `.cu` sources, and the kernels it defines.

Kernels are found two ways, and both are kept:

* from the sources: each file is run through the C preprocessor (gcc's `cpp`, parity.suite.preprocess:
  a header it cannot find gets an empty stub, an include that cannot be stubbed or must not be read
  is left out with a note, all inside a private temporary folder; cpp runs under time and memory
  limits), so kernels stamped out by instantiation macros (`PK_UNARY_ALL(f32, f32)`) are seen with
  their real names, then `extern "C" __global__ void NAME(params)` declarations are parsed. Line
  markers map each kernel back to the file and line that produced it (the macro invocation).
  Without `cpp` only literal declarations are found. A special file (FIFO, device, socket) in the
  suite's folders refuses the suite before any cpp runs (`SuiteError`, exit 2).
* from a compiled binary (`parity.suite.elf.kernels_from_binary`): the ELF symbol table of an
  NVIDIA cubin or of an AMD code object (offload bundles are unbundled in Python), read in Python,
  with `nm` / `llvm-readelf` / `cuobjdump` as fall-backs.

Parameter types are normalised to the vocabulary of `Op.signature`: "size_t", "u32", "i32",
"f32", "f64", "bool", "ptr", and dtype names for scalars ("f16", "bf16", "f8_e4m3", "u8", ...).
`KernelDecl.types` says more of a pointer: what it points to, in the same vocabulary, and whether
that is const (`const size_t*`, `f32*`, `const void*`, `const block_q8_1*`): what the drift record
of Candle keeps, so a kernel whose `info` turns into `const uint32_t*` is a change.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from parity.core.files import special_file
from parity.suite.compile_cache import cache_dir
from parity.suite.includes import include_walk
from parity.suite.preprocess import (CPP_TIMEOUT_S, STUB_DEPTH, SuiteError, default_defines,  # noqa: F401
                                     marker_path, preprocess, stub_path)

SOURCE_SUFFIXES = (".hip", ".cu")
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inc", ".inl")


@dataclass
class KernelDecl:
    name: str
    file: Path | None                 # source that defines it (None: only seen in a binary)
    line: int | None                  # line of the declaration or of the macro invocation
    params: list[str] | None          # normalised C types, None when unknown
    raw_params: list[str] = field(default_factory=list)
    origin: str = "source"            # "source" | "symbols"
    types: list[str] | None = None    # params with each pointer's pointee: "const size_t*", "f32*" (None: unknown)

    def where(self) -> str:
        if self.file is None:
            return "(binary symbol table)"
        return f"{self.file}:{self.line}" if self.line else str(self.file)


@dataclass
class Suite:
    root: Path
    sources: list[Path]
    headers: list[Path]
    kernels: dict[str, KernelDecl]
    language: str                     # "hip" | "cuda" | "mixed" | "empty"
    notes: list[str] = field(default_factory=list)   # discovery problems (no cpp, parse failures)
    # a kernel name defined in more than one file: its other definitions (kernels holds the first; .hip
    # files' before .cu files', each by path); one that compiles but leaves the kernel out of its compiled
    # module (#if) gives way to the next, one that does not compile is the verdict
    twins: dict[str, list[KernelDecl]] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted(self.kernels)

    def copy(self) -> "Suite":
        """A copy whose lists a caller may narrow (a level's own sources) without touching others'."""
        return Suite(self.root, list(self.sources), list(self.headers), dict(self.kernels), self.language,
                     list(self.notes), {k: list(v) for k, v in self.twins.items()})

    def definitions(self, kernel: str) -> list[KernelDecl]:
        """Every definition of `kernel` in this suite's sources, in the order they are tried."""
        first = self.kernels.get(kernel)
        return [d for d in [first, *self.twins.get(kernel, [])]
                if d is not None and d.file is not None and Path(d.file) in self.sources]

    def choose(self, kernel: str, decl: KernelDecl) -> None:
        """`decl`, one of the kernel's definitions, is the one a level builds it from: the one its
        declaration checks (signature-mismatch) read from then on."""
        if self.kernels.get(kernel) is not decl:
            self.twins[kernel] = [self.kernels[kernel], *(d for d in self.twins.get(kernel, []) if d is not decl)]
            self.kernels[kernel] = decl

    def file_of(self, kernel: str) -> Path | None:
        k = self.kernels.get(kernel)
        return k.file if k else None

    def by_file(self) -> dict[Path, list[str]]:
        out: dict[Path, list[str]] = {s: [] for s in self.sources}
        for k in self.kernels.values():
            if k.file is not None:
                out.setdefault(k.file, []).append(k.name)
        return out

    def add_symbols(self, names: list[str], source: Path | None = None) -> list[str]:
        """Merge kernel names read from a compiled binary; returns the ones sources did not show."""
        new = []
        for n in names:
            if n not in self.kernels:
                self.kernels[n] = KernelDecl(n, source, None, None, origin="symbols")
                new.append(n)
        return new


# ------------------------------------------------------------------------- type normalisation
_TYPE_NAMES = {
    "size_t": "size_t", "std::size_t": "size_t", "unsigned long": "size_t",
    "unsigned long int": "size_t", "long unsigned int": "size_t", "decltype(sizeof(0))": "size_t",
    "uintptr_t": "size_t", "usize": "size_t",
    "unsigned long long": "u64", "unsigned long long int": "u64", "uint64_t": "u64", "u64": "u64",
    "long long": "i64", "long long int": "i64", "int64_t": "i64", "long": "i64", "long int": "i64",
    "ptrdiff_t": "i64", "ssize_t": "i64", "i64": "i64",
    "unsigned int": "u32", "unsigned": "u32", "uint32_t": "u32", "uint": "u32", "u32": "u32",
    "int": "i32", "signed int": "i32", "signed": "i32", "int32_t": "i32", "i32": "i32",
    "unsigned short": "u16", "unsigned short int": "u16", "uint16_t": "u16", "u16": "u16",
    "short": "i16", "short int": "i16", "signed short": "i16", "int16_t": "i16", "i16": "i16",
    "unsigned char": "u8", "uint8_t": "u8", "u8": "u8", "uchar": "u8",
    "char": "i8", "signed char": "i8", "int8_t": "i8", "i8": "i8",
    "float": "f32", "f32": "f32", "double": "f64", "f64": "f64", "bool": "bool",
    "__half": "f16", "half": "f16", "_Float16": "f16", "__fp16": "f16", "f16": "f16",
    "__nv_bfloat16": "bf16", "__hip_bfloat16": "bf16", "hip_bfloat16": "bf16", "__bf16": "bf16",
    "bfloat16": "bf16", "bf16": "bf16",
    "__nv_fp8_e4m3": "f8_e4m3", "__hip_fp8_e4m3": "f8_e4m3", "fp8_e4m3": "f8_e4m3",
    "__hip_fp8_e4m3_fnuz": "f8_e4m3fnuz",
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
               "typename", "register", "__grid_constant__", "enum"}
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _heuristic(name: str) -> str | None:
    n = name.lower()
    if ("fp8" in n or "f8" in n) and "e4m3" in n:
        return "f8_e4m3fnuz" if "fnuz" in n else "f8_e4m3"
    if "bf16" in n or "bfloat16" in n:
        return "bf16"
    if n in ("f16", "fp16", "half") or n.endswith("_f16") or "float16" in n:
        return "f16"
    return None


def normalize_type(ctype: str, typedefs: dict[str, str] | None = None) -> str:
    """A C parameter type (with or without a parameter name) -> "ptr", "size_t", "f32", ..."""
    typedefs = typedefs or {}
    t = re.sub(r"\s+", " ", ctype.replace("\n", " ")).strip()
    t = t.split("=")[0].strip()                              # default argument
    if "*" in t or "[" in t:
        return "ptr"
    t = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", t)
    words = [w for w in t.replace("&", " ").split() if w not in _QUALIFIERS]
    if not words:
        return "?"
    # drop the parameter name: the last identifier when more than one word remains and the
    # remaining words still name a type ("unsigned int n" -> "unsigned int")
    if " ".join(words) in _TYPE_NAMES:                      # an unnamed parameter: `unsigned char`
        return _TYPE_NAMES[" ".join(words)]
    if len(words) > 1 and _IDENT.fullmatch(words[-1]):
        head = " ".join(words[:-1])
        if _lookup(head, typedefs) is not None or "::" in head or _IDENT.fullmatch(head) or \
                head.startswith("decltype"):
            words = words[:-1]
    base = " ".join(words)
    got = _lookup(base, typedefs)
    return got if got is not None else base


def pointee_type(ctype: str, typedefs: dict[str, str] | None = None, depth: int = 0) -> str:
    """A parameter `normalize_type` calls "ptr", with what it points to: `const size_t *info` ->
    "const size_t*", `float x[]` -> "f32*", `T **p` -> "T**"; const of the pointee only (`float *const
    p` is "f32*"); "ptr" when a typedef hides more than one level."""
    typedefs = typedefs or {}
    t = re.sub(r"\s+", " ", ctype.replace("\n", " ")).strip().split("=")[0].strip()
    t = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", t)
    if "*" in t:
        base, stars = t[:t.index("*")], t[t.index("*"):].count("*")
    elif "[" in t:
        base, stars = t[:t.index("[")], 1
    else:                                   # a typedef of a pointer: `fptr x` with typedef float *fptr
        words = [w for w in t.replace("&", " ").split() if w not in _QUALIFIERS]
        target = next((typedefs[w] for w in words if w in typedefs and "*" in typedefs[w]), None)
        if target is None or depth > 8:
            return "ptr"
        const = "const " if "const" in t.split() and "const" not in target.split() else ""
        return pointee_type(const + target, typedefs, depth + 1)
    const = "const " if "const" in base.split() else ""
    elem = normalize_type(base, typedefs) if base.strip() else "?"
    return f"{const}{elem}{'*' * stars}"


def detailed_type(ctype: str, typedefs: dict[str, str] | None = None) -> str:
    """normalize_type's answer, with a pointer's pointee (pointee_type) where it says "ptr"."""
    n = normalize_type(ctype, typedefs)
    return pointee_type(ctype, typedefs) if n == "ptr" else n


def _lookup(base: str, typedefs: dict[str, str], depth: int = 0) -> str | None:
    base = base.strip()
    if base in _TYPE_NAMES:
        return _TYPE_NAMES[base]
    if base.startswith("decltype") and "sizeof" in base:
        return "size_t"
    short = base.split("::")[-1].strip()
    if short in _TYPE_NAMES and "::" in base and base.split("::")[0] in ("std", ""):
        return _TYPE_NAMES[short]
    for key in (base, short):
        if key in typedefs and depth < 12:
            target = typedefs[key]
            if "*" in target:
                return "ptr"
            got = _lookup(" ".join(w for w in target.split() if w not in _QUALIFIERS), typedefs, depth + 1)
            if got is not None:
                return got
    if short in _TYPE_NAMES:
        return _TYPE_NAMES[short]
    return _heuristic(short)


_TYPEDEF = re.compile(r"\btypedef\s+([^;{}()]+?)\s+(\w+)\s*;")
_USING = re.compile(r"\busing\s+(\w+)\s*=\s*([^;{}]+);")
_STRUCT = re.compile(r"\b(?:struct|class)\s+(\w+)\s*[{:]")


def collect_typedefs(text: str) -> dict[str, str]:
    tds: dict[str, str] = {}
    for m in _TYPEDEF.finditer(text):
        tds[m.group(2)] = m.group(1).strip()
    for m in re.finditer(r"\btypedef\s+(decltype\s*\(\s*sizeof\s*\(\s*0\s*\)\s*\))\s+(\w+)\s*;", text):
        tds[m.group(2)] = "decltype(sizeof(0))"
    for m in _USING.finditer(text):
        tds[m.group(1)] = m.group(2).strip()
    return tds


def split_params(params: str) -> list[str]:
    """Split a parameter list at top-level commas."""
    out, depth, cur = [], 0, []
    for ch in params:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last and last != "void":
        out.append(last)
    return [p for p in out if p]


# ------------------------------------------------------------------------------ parsing
_GLOBAL = re.compile(r"__global__|__attribute__\s*\(\(\s*global\s*\)\)")
_WORD = re.compile(r"[A-Za-z_]\w*")
_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+\w+(?:\(([^)]*)\))?")
_SPACE = re.compile(r"\s*")
# words with a (...) group that are never a kernel's name: attributes, and what may follow a
# parameter list
_ATTRIBUTE_WORDS = {"__attribute__", "__declspec", "__launch_bounds__", "__hip_cuda_launch_bounds__",
                    "__cluster_dims__", "__maxnreg__", "__align__", "alignas", "throw", "noexcept"}


def _declared_name(text: str, i: int) -> tuple[str, int] | None:
    """The kernel's name in the declaration whose `__global__` ends at `i`, and the offset just past
    its parameter list's `(`; None when this is no `void` function. Words and their balanced (...)
    groups are skipped on either side of `void`, so that an attribute or a macro left unexpanded
    (`__launch_bounds__(256, (M))`, `__attribute__((...))`, a port's own `KERNEL_BOUNDS(T)`) costs no
    kernel; the name is the last word with a group before the body, `;`, anything else or a new line
    (a macro's definition, read without cpp, ends at its line)."""
    seen_void, name = False, None
    while True:
        gap = _SPACE.match(text, i)
        i = gap.end()
        m = _WORD.match(text, i)
        if not m or (name and "\n" in gap.group()):
            return name
        word, j = m.group(), _SPACE.match(text, m.end()).end()
        group = j < len(text) and text[j] == "("
        end = balanced_end(text, j + 1, "()") if group else j
        if not seen_void:
            seen_void = word == "void"
        elif group and word not in _ATTRIBUTE_WORDS:
            name = (word, j + 1)
        i = end


def _named_by_macro_parameter(text: str, off: int, name: str) -> bool:
    """The declaration at `off` is in a `#define` whose parameter is its name (`#define K(n) ...
    void n(...)`): read without cpp, it declares no kernel."""
    macro = _DEFINE.match(text, text.rfind("\n", 0, off) + 1)
    return bool(macro) and name in re.split(r"\W+", macro.group(1) or "")


def strip_comments(text: str) -> str:
    """C comments blanked out (newlines kept, so offsets and line numbers stay); string and
    character literals are left alone, so `"http://x"` is not a comment."""
    def repl(m: re.Match) -> str:
        s = m.group(0)
        return s if s.startswith(('"', "'")) else re.sub(r"[^\n]", " ", s)
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', repl, text, flags=re.S)


def balanced_end(text: str, i: int, pair: str = "{}") -> int:
    """Offset just past the bracket that closes the one opened just before `i` (`pair`: its open
    and close characters), counting nested pairs; len(text) when it never closes."""
    depth = 1
    while i < len(text) and depth:
        depth += {pair[0]: 1, pair[1]: -1}.get(text[i], 0)
        i += 1
    return i


def _extern_c_blocks(text: str) -> list[tuple[int, int]]:
    return [(m.end(), balanced_end(text, m.end())) for m in re.finditer(r'extern\s+"C"\s*\{', text)]


def parse_declarations(text: str) -> list[tuple[str, int, list[str], bool]]:
    """(name, char offset, raw params, extern "C") for every non-template __global__ function."""
    blocks = _extern_c_blocks(text)
    out = []
    for g in _GLOBAL.finditer(text):
        found = _declared_name(text, g.end())
        if not found:
            continue
        name, start = found
        i = balanced_end(text, start, "()")
        params = split_params(text[start:i - 1])
        # the declaration prefix: back to the previous ; } or { (or 200 chars)
        j = g.start()
        while j > 0 and text[j - 1] not in ";}{" and g.start() - j < 400:
            j -= 1
        prefix = text[j:g.start()]
        if re.search(r"\btemplate\s*<", prefix):
            continue
        extern_c = bool(re.search(r'extern\s+"C"', prefix)) or any(a <= g.start() < b for a, b in blocks)
        out.append((name, g.start(), params, extern_c))
    return out


# ------------------------------------------------------------------------- preprocessing
_LINEMARK = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')     # the name as cpp escapes it (marker_path)


def _line_map(text: str) -> list[tuple[str, int]]:
    """For every line of cpp output, the (file, line) it came from."""
    res, cur_file, cur_line = [], "", 1
    for ln in text.split("\n"):
        m = _LINEMARK.match(ln)
        if m:
            cur_line, cur_file = int(m.group(1)), marker_path(m.group(2))
            res.append((cur_file, 0))
            continue
        res.append((cur_file, cur_line))
        cur_line += 1
    return res


def scan_source(source: Path, include_dirs: list[Path] = (), defines: dict[str, str] | None = None,
                use_cpp: bool = True, force_includes: list[Path] = (), cached: bool = True
                ) -> tuple[list[KernelDecl], list[str]]:
    """Kernels declared in one source file (through macros when `cpp` is there), and the notes on
    what its preprocessing had to leave out (parity.suite.preprocess). Served from a
    disk cache keyed by the file, the headers it includes, and the options: every worker process
    discovers the suite, and cpp over a large file costs a second. cached=False: neither read nor
    written (a file in a temporary folder, whose path would only add entries no one reads again)."""
    import hashlib
    import json

    headers, refused = include_walk(source, list(include_dirs))
    for f in force_includes:                 # force-included headers enter the key by content too
        more, why = include_walk(Path(f), list(include_dirs))
        headers, refused = [*headers, Path(f).resolve(), *more], refused + why
    whole = [r for r in refused if not r.line]
    if whole:                        # the source or a force-included header itself: nothing to read
        raise SuiteError(f"{whole[0]} (discovering {source})")
    if not cached:
        return _scan_source(source, include_dirs, defines, use_cpp, force_includes, refused)
    h = hashlib.sha256(b"scan/8")         # 3: KernelDecl.types, notes; 4: attributes as balanced groups;
    #                                       5-6: stub notes; 7: escaped quotes in line markers; 8: the defines
    h.update(json.dumps(default_defines(Path(source).suffix), sort_keys=True).encode())
    for f in [Path(source).resolve(), *headers]:
        h.update(str(f).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update("\0".join(refused).encode())
    h.update(json.dumps([[str(d) for d in include_dirs], defines or {}, use_cpp, shutil.which("cpp") or ""]
                        + ([[str(f) for f in force_includes]] if force_includes else []), sort_keys=True).encode())
    h.update(b"\0as given: " + str(source).encode())   # the decls record the file as this call spells it
                                                          # (relative or absolute): one entry per spelling
    entry = cache_dir() / "scan" / f"{h.hexdigest()}.json"
    try:
        data = json.loads(entry.read_text())
        return [KernelDecl(d["name"], Path(d["file"]), d["line"], d["params"], d["raw_params"], types=d["types"])
                for d in data["decls"]], [str(n) for n in data["notes"]]
    except (OSError, ValueError, KeyError):
        pass
    decls, notes = _scan_source(source, include_dirs, defines, use_cpp, force_includes, refused)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"notes": notes, "decls": [
            {"name": d.name, "file": str(d.file), "line": d.line, "params": d.params, "raw_params": d.raw_params,
             "types": d.types}
            for d in decls]}))
        tmp.replace(entry)
    except OSError:                  # a read-only cache only costs the scan
        pass
    return decls, notes


def _scan_source(source: Path, include_dirs: list[Path] = (), defines: dict[str, str] | None = None,
                 use_cpp: bool = True, force_includes: list[Path] = (), blanks: list = ()
                 ) -> tuple[list[KernelDecl], list[str]]:
    """blanks: includes never to be opened (parity.suite.includes.Refusal): preprocessed without them."""
    text, notes = (preprocess(source, include_dirs, defines, force_includes=force_includes, blanks=blanks)
                   if use_cpp else (None, ["cpp disabled"]))
    literal = text is None
    if literal:
        text = strip_comments(source.read_text(errors="replace"))
    typedefs = collect_typedefs(text)
    lines = None if literal else _line_map(text)
    starts = [0]
    for ln in text.split("\n"):
        starts.append(starts[-1] + len(ln) + 1)
    import bisect
    decls = []
    for name, off, params, extern_c in parse_declarations(text):
        if not extern_c:
            continue
        if literal and ("##" in "".join(params) + name or _named_by_macro_parameter(text, off, name)):
            continue                 # a macro's definition, read without cpp: its uses are not seen
        row = bisect.bisect_right(starts, off) - 1
        if lines is None:
            file, line = source, row + 1
        else:
            f, line = lines[row] if row < len(lines) else (str(source), 0)
            file = Path(f) if f and not f.startswith("<") else source
        decls.append(KernelDecl(name, file, line or None, [normalize_type(p, typedefs) for p in params],
                                raw_params=params, types=[detailed_type(p, typedefs) for p in params]))
    return decls, notes


VCS_FOLDERS = {".git", ".hg", ".svn"}      # not the suite's: git's fsmonitor keeps a socket in .git


def special_files(folders: list[Path], found: dict[Path, list[Path]] | None = None) -> list[str]:
    """special_file's line for every special file (FIFO, device, socket, or a link to one) anywhere
    under these folders (or these files), version-control folders left out. found: the entries already
    listed per folder (discover lists the suite folder once for both)."""
    out: list[str] = []
    for folder in dict.fromkeys(Path(f) for f in folders):
        if not folder.is_dir():
            why = special_file(folder)
            out += [why] if why else []
            continue
        entries = (found or {}).get(folder)
        out += [w for w in map(special_file, listing(folder) if entries is None else entries) if w]
    return list(dict.fromkeys(out))


def listing(folder: Path) -> list[Path]:
    """Every entry under `folder`, version-control folders left out (not walked into: a .git holds
    thousands of objects)."""
    entries: list[Path] = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in VCS_FOLDERS]
        entries += [Path(top, n) for n in dirs + files]
    return entries


def discover(path: str | os.PathLike, include_dirs: list[str | os.PathLike] = (),
             defines: dict[str, str] | None = None, use_cpp: bool = True,
             force_includes: list[str | os.PathLike] = (), sources: list[Path] | None = None) -> Suite:
    """Find the sources of a suite folder (or a single file) and the kernels they declare.
    sources: the files to scan (a port's globs, parity.suite.port), instead of every .hip/.cu under path.

    SuiteError (one line) for a special file (FIFO, device, socket) anywhere in the suite's folder, its
    include folders or among its force-included headers: a computed #include could reach it, and cpp
    would block reading it; and when cpp does not finish on a source (parity.suite.preprocess)."""
    root = Path(path)
    why = special_file(root)
    if why:
        raise SuiteError(f"{why}: a suite is a folder of sources, or one source file")
    hdr_root = root.parent if root.is_file() else root
    found = listing(hdr_root)
    bad = special_files([hdr_root, *map(Path, include_dirs), *map(Path, force_includes)], {hdr_root: found})
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise SuiteError(f"{bad[0]}{more}: remove it from the suite's folders (a computed #include could reach "
                         "it, and preprocessing would block reading it)")
    if sources is not None:
        sources = sorted(Path(s) for s in sources)
    elif root.is_file():
        sources = [root]
    else:
        sources = sorted(p for p in found if p.suffix in SOURCE_SUFFIXES and p.is_file())
    headers = sorted(p for p in found if p.suffix in HEADER_SUFFIXES and p.is_file())
    kinds = {s.suffix for s in sources}
    language = "empty" if not kinds else "hip" if kinds == {".hip"} else "cuda" if kinds == {".cu"} else "mixed"
    found_decls: dict[str, list[KernelDecl]] = {}
    said: dict[str, list[Path]] = {}          # a note -> the sources it is about
    for src in sources:
        decls, problems = scan_source(src, [Path(d) for d in include_dirs], defines, use_cpp,
                                      [Path(f) for f in force_includes])
        for p in problems:
            said.setdefault(p, []).append(src)
        for d in decls:
            same = found_decls.setdefault(d.name, [])
            if not any(o.file == d.file for o in same):
                same.append(d)
    kernels: dict[str, KernelDecl] = {}
    twins: dict[str, list[KernelDecl]] = {}
    for name, decls in found_decls.items():   # a .hip file's first (the port's, not a CUDA original kept
        first, *others = sorted(decls, key=lambda d: (d.file.suffix != ".hip", str(d.file)))   # beside it)
        kernels[name] = first
        if others:
            twins[name] = others
    return Suite(root, sources, headers, kernels, language, [*map(_about, said.items()), *_twin_notes(kernels, twins)],
                 twins)


def _twin_notes(kernels: dict[str, KernelDecl], twins: dict[str, list[KernelDecl]]) -> list[str]:
    """One note per pair of files that define the same kernels (Candle's CUDA originals kept beside their
    port define a hundred): which file's definition parity checks, and how to choose."""
    groups: dict[tuple, list[str]] = {}
    for name, others in twins.items():
        groups.setdefault((kernels[name].file, *(d.file for d in others)), []).append(name)
    out = []
    for files_, names in groups.items():
        shown = ", ".join(sorted(names)[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        where = " and ".join(d.where() for d in [kernels[names[0]], *twins[names[0]]]) if len(names) == 1 \
            else " and ".join(map(str, files_))
        out.append(f"{shown} defined {'twice' if len(files_) == 2 else f'{len(files_)} times'}: {where}; parity "
                   "checks the first file's (the next where the first's compiled module leaves it out); name the "
                   "port's sources (parity-port.toml `sources`) to choose")
    return out


def _about(item: tuple[str, list[Path]]) -> str:
    """One note line for the sources it is about: `src: note`, or `note (in N sources: a.hip, b.hip, ...)`
    when a header they share is the cause (one line, not one per source)."""
    note, srcs = item
    if len(srcs) == 1:
        return f"{srcs[0]}: {note}"
    names = ", ".join(p.name for p in srcs[:4]) + (", ..." if len(srcs) > 4 else "")
    return f"{note} (in {len(srcs)} sources: {names})"
