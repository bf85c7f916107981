"""A port described by its build line: which sources, which include folders first, which headers
force-included, which defines (docs/shim-ports.md).

Two ways to port Candle's kernels to ROCm: rewrite them as `.hip` files, or keep Candle's `.cu`
files as the one source of truth and compile them with hipcc through a *shim*: shadow headers
(`cuda_fp16.h`, `cuda_bf16.h`, `cuda.h`, ...) first on the include path and a compat header
force-included ahead of every source. A `Port` says that build line once; suite discovery,
hip-on-nvidia, amd-static and amd all compile with it.

Given as `parity-port.toml` in the port folder (picked up by `--hip-src DIR`), `--port FILE`, or the
`--port-*` options of `parity run`. Paths in the file are relative to the file's folder and stay
inside it; a file never names where to write, and parity writes nothing in the port folder.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from parity.core import files, toml
from parity.core.suggest import unknown
from parity.core.text import one_line
from parity.suite.scan import Suite, default_defines, discover

PORT_FILE = "parity-port.toml"
LANGUAGES = ("hip",)                  # the sources are compiled as HIP (hipcc -x hip; nvcc -x cu + mapping)
SOURCE_GLOBS = ("**/*.hip", "**/*.cu")
# Defines the CUDA toolchain owns: nvcc sets them itself (a port's `-D__CUDA_ARCH__=890` for hipcc
# would break nvcc's host pass), so hip-on-nvidia leaves them out; discovery and AMD levels keep them.
NVCC_OWNED = ("__CUDA_ARCH__", "__CUDACC__", "__NVCC__", "__CUDACC_RTC__")

_KEYS = {"name": str, "sources": list, "include_dirs": list, "force_includes": list, "defines": (dict, list),
         "flags": list, "nvidia_defines": (dict, list), "nvidia_flags": list, "language": str}


@dataclass(frozen=True)
class Port:
    """One port's build line. `root`: the sources' folder (`--hip-src`); `base`: the folder its
    include paths were given relative to (the port file's). Paths are absolute once loaded."""
    root: Path
    sources: tuple[str, ...] = ()                 # globs under root; () = every .hip and .cu file
    include_dirs: tuple[Path, ...] = ()           # -I, in this order, ahead of each source's folder
    force_includes: tuple[Path, ...] = ()         # -include, in this order, ahead of every source
    defines: tuple[tuple[str, str], ...] = ()     # -D for every level (and discovery)
    flags: tuple[str, ...] = ()                   # hipcc flags of the port's build line (amd-static, amd)
    nvidia_defines: tuple[tuple[str, str], ...] = ()   # -D on hip-on-nvidia only (docs/shim-ports.md)
    nvidia_flags: tuple[str, ...] = ()            # nvcc flags on hip-on-nvidia only
    language: str = "hip"
    name: str = ""
    file: Path | None = None                      # the parity-port.toml it came from
    notes: tuple[str, ...] = field(default=(), compare=False)

    # --- what each consumer needs ------------------------------------------------------------
    def source_files(self) -> list[Path]:
        """The port's sources: its globs under root (files only, inside root, sorted)."""
        root = self.root.resolve()
        found: dict[Path, None] = {}
        for pattern in self.sources or SOURCE_GLOBS:
            for p in sorted(self.root.glob(pattern)):
                if p.is_file() and p.resolve().is_relative_to(root):
                    found[p] = None
        return list(found)

    def scan_line(self) -> tuple[list[Path], dict[str, str], list[Path]]:
        """What discovery preprocesses each source with, as hipcc sees it: the include folders (the
        port's, then its root), the defines (HIP's and the port's), the force-included headers."""
        return [*self.include_dirs, self.root], {**default_defines(".hip"), **self.define_map()}, \
            list(self.force_includes)

    def define_map(self, nvidia: bool = False) -> dict[str, str]:
        d = dict(self.defines)
        if nvidia:
            d = {k: v for k, v in d.items() if k not in NVCC_OWNED}
            d.update(dict(self.nvidia_defines))
        return d

    def hipcc_flags(self) -> list[str]:
        """The port's build line for hipcc (after parity's own --genco/--offload-arch flags)."""
        out = ["-x", "hip"] if self.language == "hip" else []
        out += [f"-D{k}={v}" if v != "" else f"-D{k}" for k, v in self.defines]
        out += [f"-I{d}" for d in self.include_dirs]
        for f in self.force_includes:
            out += ["-include", str(f)]
        return out + list(self.flags)

    def describe(self) -> str:
        """One line for reports: `shim-port: src/*.cu · -I shim · -include shim/hip_compat.h · -D...`."""
        def rel(p: Path) -> str:
            for base in (self.base, self.root):
                try:
                    return str(p.relative_to(base))
                except ValueError:
                    continue
            return str(p)
        parts = [", ".join(self.sources) or "every .hip/.cu file"]
        parts += [f"-I {rel(d)}" for d in self.include_dirs]
        parts += [f"-include {rel(f)}" for f in self.force_includes]
        parts += [f"-D{k}={v}" if v != "" else f"-D{k}" for k, v in self.defines]
        parts += list(self.flags)
        parts += [f"hip-on-nvidia: -D{k}={v}" for k, v in self.nvidia_defines] + \
                 [f"hip-on-nvidia: {f}" for f in self.nvidia_flags]
        head = self.name or self.root.name
        return f"{head} ({self.file.name if self.file else 'command line'}): " + " · ".join(parts)

    @property
    def base(self) -> Path:
        return self.file.parent if self.file else self.root

    def as_dict(self) -> dict:
        """The results.json `port` entry."""
        return {"name": self.name, "file": str(self.file) if self.file else None, "root": str(self.root),
                "sources": list(self.sources), "include_dirs": [str(d) for d in self.include_dirs],
                "force_includes": [str(f) for f in self.force_includes], "defines": dict(self.defines),
                "flags": list(self.flags), "nvidia_defines": dict(self.nvidia_defines),
                "nvidia_flags": list(self.nvidia_flags), "language": self.language,
                "description": self.describe(), "notes": list(self.notes)}

    def extended(self, *, sources=(), include_dirs=(), force_includes=(), defines=()) -> Port:
        """This port with command-line additions (--port-source, --port-include, ...) after its own."""
        d = dict(self.defines)
        d.update(dict(parse_defines(list(defines), "--port-define")))
        return replace(self, sources=self.sources + _source_globs(sources, "--port-source"),
                       include_dirs=self.include_dirs + tuple(_cli_path(p, "--port-include", dir_=True)
                                                              for p in include_dirs),
                       force_includes=self.force_includes + tuple(_cli_path(p, "--port-force-include")
                                                                  for p in force_includes),
                       defines=tuple(d.items()))


# ----------------------------------------------------------------------------------- loading
class PortError(ValueError):
    """A port description that cannot be used: one line naming the file and the key."""


def parse_defines(items, where: str) -> list[tuple[str, str]]:
    """["K=V", "K"] or {"K": "V"} -> [(K, V)]; a name must be a C identifier."""
    for s in [] if isinstance(items, dict) else items:
        if not isinstance(s, str):                   # (the item as written: `3`, not the None it would split to)
            raise PortError(f"{where}: {s!r} is not a define (a string K=V or K)")
    pairs = list(items.items()) if isinstance(items, dict) else [(s.split("=", 1) + [""])[:2] for s in items]
    out = []
    for k, v in pairs:
        if not isinstance(k, str) or not k.replace("_", "a").isalnum() or k[0].isdigit():
            raise PortError(f"{where}: {k!r} is not a macro name (K=V or K)")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise PortError(f"{where}: the value of {k} must be a string or a number, not {type(v).__name__}")
        out.append((k, str(v)))
    return out


def _cli_path(p, option: str, dir_: bool = False) -> Path:
    if not str(p).strip():                       # ('' resolved to the current folder)
        raise PortError(f"{option} is empty ({str(p)!r}): give a {'folder' if dir_ else 'file'}")
    path = Path(p).resolve()
    if not (path.is_dir() if dir_ else path.is_file()):
        raise PortError(f"{option} {p}: no such {'folder' if dir_ else 'file'}")
    return path


def _inside(base: Path, value: str, where: str, dir_: bool) -> Path:
    if not isinstance(value, str) or not value or "\0" in value:
        raise PortError(f"{where}: expected a path string, got {value!r}")
    if os.path.isabs(value) or ".." in Path(value).parts:
        raise PortError(f"{where}: {value!r} leaves the port folder {base} (paths in the file are relative "
                        "to it and stay inside; give other folders with --port-include)")
    path = (base / value).resolve()
    if not path.is_relative_to(base.resolve()):
        raise PortError(f"{where}: {value!r} leaves the port folder {base} (a link out of it)")
    if not (path.is_dir() if dir_ else path.is_file()):
        raise PortError(f"{where}: {value!r} is not a {'folder' if dir_ else 'file'} under {base}")
    return path


def _source_globs(globs, where: str) -> tuple[str, ...]:
    """Source globs as Path.glob takes them: relative to the sources' folder, inside it, not empty."""
    for s in globs:
        if not s.strip():
            raise PortError(f"{where} {s!r} is empty: a glob such as 'src/*.hip'")
        if os.path.isabs(s) or ".." in Path(s).parts:
            raise PortError(f"{where} {s!r} leaves the sources' folder (globs are relative to it)")
    return tuple(globs)


# Compiler options that name a file to write, a plugin or program to load, or a file to read by
# another way than the port's own keys: a port file is untrusted text, and parity writes nothing
# outside its own folders (prefixes; a value that is a path, with a `/`, is refused anyway)
_FLAG_REFUSED = {"-o": "names an output", "-MF": "names an output", "-MJ": "names an output",
                 "-save-temps": "writes intermediate files", "--save-temps": "writes intermediate files",
                 "-keep": "writes intermediate files",
                 "-dump": "names outputs", "--output": "names an output",
                 "-fcrash-diagnostics": "names an output folder", "-fprofile": "names an output",
                 "-ftime-trace": "names an output", "-fplugin": "loads a plugin", "-fpass-plugin": "loads a plugin",
                 "-load": "loads a plugin", "-B": "names programs to run", "-specs": "reads a file",
                 "--specs": "reads a file", "-Xclang": "passes options past the driver",
                 "-Xlinker": "passes options past the driver", "-Xcompiler": "passes options past the driver",
                 "--compiler-options": "passes options past the driver", "-Xptxas": "passes options past the driver",
                 "-Wl,": "passes options past the driver", "-Wp,": "passes options past the driver",
                 "-Wa,": "passes options past the driver", "-include": "reads a file (force_includes does)",
                 "-imacros": "reads a file", "-I": "names a folder (include_dirs does)",
                 "-isystem": "names a folder (include_dirs does)", "-iquote": "names a folder (include_dirs does)",
                 "-idirafter": "names a folder (include_dirs does)", "--include-path": "names a folder",
                 "-ccbin": "names a program to run", "--compiler-bindir": "names a program to run",
                 "-foptimization-record-file": "names an output", "-save-stats": "writes a file",
                 "-fproc-stat-report": "writes a file", "-resource-dir": "names a folder",
                 "-fmodules-cache-path": "names a folder", "-mllvm": "passes options past the driver",
                 "-Xarch": "passes options past the driver", "-Xoffload": "passes options past the driver",
                 "-Xnvlink": "passes options past the driver", "--ptxas-options": "passes options past the driver",
                 "--linker-options": "passes options past the driver", "--dependency-output": "names an output",
                 "--options-file": "reads a file", "-optf": "reads a file", "--output-file": "names an output",
                 "--keep-dir": "names a folder", "--keep=": "writes intermediate files"}
_FLAG_EXACT = {"--keep": "writes intermediate files"}     # (--keep-device-functions is harmless)


def _flags(data: dict, key: str, file: Path) -> tuple[str, ...]:
    """A build line's extra options, each one that cannot write, load or read outside parity's
    control (see _FLAG_REFUSED); PortError naming the first that can."""
    out = _strings(data, key, str(file))
    for f in out:
        why = ("is a path" if "/" in f or "\\" in f else "reads a response file" if f.startswith("@") else
               "" if f.isdigit() else                # an option's number (`-maxrregcount`, `64`)
               "is not one option" if not f.startswith("-") or any(c.isspace() or c == "\0" for c in f) else
               _FLAG_EXACT.get(f) or next((w for pre, w in _FLAG_REFUSED.items() if f.startswith(pre)), ""))
        if why:
            raise PortError(f"{file}: {key}: {f!r} {why}: a port file's options may not name files, folders or "
                            "programs (include_dirs and force_includes name the port's own)")
    return tuple(out)


def _strings(data: dict, key: str, where: str) -> list[str]:
    items = data.get(key, [])
    if not all(isinstance(i, str) for i in items):
        raise PortError(f"{where}: {key} must be a list of strings")
    return items


def load_port(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Port:
    """Read and check a parity-port.toml. root: the sources' folder (default: the file's folder).
    Raises PortError (one line: the file and the key) for anything unusable."""
    file = Path(path)
    try:
        data = toml.loads(files.read_text(file, "port file"))
    except FileNotFoundError:
        raise PortError(f"port file {file} does not exist")
    except files.FileRefused as e:
        raise PortError(str(e)) from None
    except (RecursionError, MemoryError):
        raise PortError(f"{file}: not a port file (nested too deeply)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PortError(f"{file}: cannot read it ({e})")
    except toml.TOMLDecodeError as e:
        raise PortError(f"{file}: not valid TOML ({e})")
    for k, v in data.items():
        if k not in _KEYS:
            raise PortError(f"{file}: {unknown('key', k, _KEYS)}")
        if not isinstance(v, _KEYS[k]):
            want = " or ".join(t.__name__ for t in (_KEYS[k] if isinstance(_KEYS[k], tuple) else (_KEYS[k],)))
            raise PortError(f"{file}: {k} must be a {want.replace('list', 'list (array)').replace('dict', 'table')}, "
                            f"not {type(v).__name__}")
    base = file.parent
    lang = data.get("language", "hip")
    if lang not in LANGUAGES:
        raise PortError(f"{file}: {unknown('language', lang, LANGUAGES)}")
    sources = _source_globs(_strings(data, "sources", str(file)), f"{file}: sources:")
    return Port(
        root=Path(root) if root is not None else base, sources=sources,
        include_dirs=tuple(_inside(base, d, f"{file}: include_dirs", True)
                           for d in _strings(data, "include_dirs", str(file))),
        force_includes=tuple(_inside(base, f, f"{file}: force_includes", False)
                             for f in _strings(data, "force_includes", str(file))),
        defines=tuple(parse_defines(data.get("defines", {}), f"{file}: defines")),
        flags=_flags(data, "flags", file),
        nvidia_defines=tuple(parse_defines(data.get("nvidia_defines", {}), f"{file}: nvidia_defines")),
        nvidia_flags=_flags(data, "nvidia_flags", file),
        language=lang, name=_name(data.get("name", ""), file), file=file)


def _name(name: object, file: Path) -> str:
    """The port's name: one line of text (it goes into every report's port line)."""
    if not isinstance(name, str) or one_line(name) != name:
        raise PortError(f"{file}: name: one line of text, with no control characters")
    return name


def find_port(hip_src: Path | None, port_file: Path | None) -> Port | None:
    """The port of a run: --port FILE, else DIR/parity-port.toml of --hip-src DIR, else None."""
    if port_file is not None:
        return load_port(port_file, hip_src)
    if hip_src is not None and files.kind(Path(hip_src) / PORT_FILE) != "nothing":   # (a folder or a FIFO
        return load_port(Path(hip_src) / PORT_FILE, hip_src)                        # there: load_port says so)
    return None


# headers a shim shadows that parity's HIP→CUDA mapping includes from the CUDA toolkit
MAPPING_NEEDS = ("cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h")


def shadowed(port: Port) -> list[Path]:
    """The port's headers that shadow a CUDA header the mapping needs (first found per name)."""
    out = []
    for name in MAPPING_NEEDS:
        hit = next((d / name for d in port.include_dirs if (d / name).is_file()), None)
        if hit is not None:
            out.append(hit)
    return out


def discover_port(port: Port):
    """The port's suite: its sources preprocessed as hipcc sees them (HIP's defines, the port's
    defines, include folders and force-included headers), so macro-stamped kernels are found."""
    include_dirs, defines, forced = port.scan_line()
    return discover(port.root, include_dirs, defines, force_includes=forced, sources=port.source_files())


def subject_suite(suite_dir: Path, port: Port | None, suffixes: tuple[str, ...] = (".hip",),
                  any_if_none: bool = False, discovered: Suite | Callable[[], Suite] | None = None) -> Suite:
    """The suite a HIP level reads: a port's own sources (its build line), else the folder's files
    with these suffixes (any_if_none: every source when the folder has none of them). discovered:
    the run's one discovery of that folder or port (parity.run.session.Subject.suite), or a function
    that makes it; a copy of it is narrowed here, so the run discovers its suite once."""
    if callable(discovered):
        discovered = discovered()
    if port is not None:
        return discovered.copy() if discovered is not None else discover_port(port)
    suite = discovered.copy() if discovered is not None else discover(suite_dir)
    chosen = [s for s in suite.sources if s.suffix in suffixes]
    suite.sources = chosen or (list(suite.sources) if any_if_none else [])
    return suite
