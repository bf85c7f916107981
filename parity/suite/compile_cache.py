"""Compile kernel sources once: a content-addressed cache shared by processes.

Key = SHA-256 over length-prefixed (source bytes, the bytes of every header it includes that
lives in the suite or an include dir, flags, toolchain version string, target). An entry is
`<cache>/<key[:2]>/<key>/` holding `out.bin` (the binary), `log.txt` (the compiler's stderr:
remarks survive a cache hit) and `meta.json`, written last as the commit mark. Writes go to a
temporary name and are renamed into place; a miss is compiled under an `fcntl` lock per entry,
so concurrent processes compile each entry once. Compile errors are cached too (same inputs,
same error) and come back as a `CompileError`, never as an exception.

The key is folder-free (a copy of a suite elsewhere hits the original's entries), so what an entry
says about paths is too: the compiler's output, message, error locations and command are stored
with the source's folder written `<dir>` and get the folder of the file compiled *now* when
served; a port copied to a second folder never reports errors in the first.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from parity.core import env, interrupts
from parity.suite.includes import include_walk

CACHE_VERSION = "1"
_LOC = re.compile(r'^(?P<file>[^\s:()][^:()\n]*?)(?::(?P<l1>\d+)(?::\d+)?|\((?P<l2>\d+)\))\s*:?\s*'
                  r'(?:fatal error|error|catastrophic error)\b', re.M)


# Environment variables the compiler drivers read as part of the command (hipcc.pl, nvcc): their
# values enter the cache key, so that a build under other appended flags or another ROCm is compiled.
TOOL_ENV = ("HIPCC_COMPILE_FLAGS_APPEND", "HIPCC_COMPILE_FLAGS_PREPEND", "HIPCC_LINK_FLAGS_APPEND", "HIP_CLANG_PATH",
            "HIP_PATH", "ROCM_PATH", "DEVICE_LIB_PATH", "HIP_DEVICE_LIB_PATH", "HIP_PLATFORM", "HIP_COMPILER",
            "HIP_RUNTIME", "HSA_PATH", "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "NVCC_CCBIN")
DEFAULT_TIMEOUT = 1800.0          # seconds; PARITY_COMPILE_TIMEOUT overrides it
TIMED_OUT = -2                    # a build's return code when the compile timeout killed it


_TIMEOUT_NOTED: set[str] = set()


def compile_timeout() -> float:
    """The compile timeout: PARITY_COMPILE_TIMEOUT seconds when set to a positive number, else 1800
    (another value is said once on stderr, never silently dropped)."""
    raw = os.environ.get("PARITY_COMPILE_TIMEOUT", "").strip()
    try:
        t = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        t = float("nan")
    if t > 0:                                  # (inf: no limit)
        return t
    if raw not in _TIMEOUT_NOTED:
        _TIMEOUT_NOTED.add(raw)
        print(f"note: PARITY_COMPILE_TIMEOUT={raw!r} is not a positive number of seconds: "
              f"using {DEFAULT_TIMEOUT:.0f}", file=sys.stderr)
    return DEFAULT_TIMEOUT


_LIVE: set[subprocess.Popen] = set()   # the compilers running now (kill_compilers stops them all)


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc; elsewhere none), children first found first."""
    parent: dict[int, int] = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat = (d / "stat").read_text()
            parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def _kill_tree(pid: int) -> None:
    """SIGKILL `pid` and every process below it (found first: a killed parent's children move to init)."""
    for p in [*_descendants(pid), pid]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def kill_compilers() -> None:
    """Kill every compiler this process is running, with what each started: a command stopping on its
    first Ctrl-C or SIGTERM must not wait for them (a hung clang kept parity alive through INT, TERM
    and INT). Their compiles fail as interrupted, and are not cached."""
    for p in list(_LIVE):
        _kill_tree(p.pid)


interrupts.on_first(kill_compilers)


def cache_dir() -> Path:
    """PARITY_CACHE_DIR, else ~/.cache/parity; with no home (HOME empty, /, or a folder that does not
    exist: Debian's /nonexistent for nobody and _apt) a folder of this user's under the temporary
    folder, never one at the file system's root or a home parity would have to make."""
    named = env.folder("PARITY_CACHE_DIR")
    if named:
        return named
    home = Path(os.path.expanduser("~"))
    if str(home) in ("", "/", "~", ".") or not home.is_dir():
        return _temp_cache()
    return home / ".cache" / "parity"


def _temp_cache() -> Path:
    """This user's cache folder under the shared temporary folder, made private (0700) when absent. Its
    name can be guessed: one that is anything but a folder of this user's that no one else can write
    (a link, another user's folder, one open to the group or to all) may hold entries someone planted
    (a compile error served as compiled, a binary of theirs run) and is passed over for this process's
    private scratch folder, with one warning line; our own one that others may write (made by an older
    parity under a loose umask) is emptied and made again, private."""
    path = Path(tempfile.gettempdir()) / f"parity-cache-{os.getuid()}"
    for attempt in (1, 2):
        try:
            os.mkdir(path, 0o700)
        except OSError:
            pass                                  # (there already, or not makeable: judged below)
        try:
            st = os.lstat(path)
            why = ("not a folder" if not stat.S_ISDIR(st.st_mode) else
                   f"owned by uid {st.st_uid}" if st.st_uid != os.getuid() else
                   f"writable by others (mode {stat.S_IMODE(st.st_mode):o})" if st.st_mode & 0o022 else "")
        except OSError as e:
            why = e.strerror or str(e)
        if not why:
            return path
        if attempt == 1 and why.startswith("writable by others"):   # ours, made under a loose umask by an
            shutil.rmtree(path, ignore_errors=True)                  # older parity: its entries may be
            continue                                                 # anyone's, so emptied and made again
        break
    scratch = _scratch_root()
    with _GUARD:
        if str(path) not in _WARNED:
            _WARNED.add(str(path))
            print(f"warning: compile cache {path} is {why}: not used; compiling into {scratch} for this run "
                  f"(set PARITY_CACHE_DIR to a folder of yours)", file=sys.stderr)
    return scratch


@dataclass
class CompileError:
    message: str                                   # the compiler's output (error lines kept)
    locations: list[tuple[str, int]] = field(default_factory=list)   # (file, line) of each error
    command: list[str] = field(default_factory=list)
    returncode: int | None = None

    def first(self) -> str:
        return f"{self.locations[0][0]}:{self.locations[0][1]}" if self.locations else ""

    def __str__(self) -> str:
        return self.message


@dataclass
class CompileResult:
    ok: bool
    key: str
    binary: Path | None = None       # path inside the cache (read-only by convention)
    log: str = ""                    # stderr (warnings, -Rpass remarks)
    cached: bool = False             # served from the cache
    error: CompileError | None = None
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)

    def read(self) -> bytes:
        return self.binary.read_bytes() if self.binary else b""

    @property
    def timed_out(self) -> bool:
        """The compiler was stopped by the compile timeout: the source's outcome is unknown, not an error."""
        return self.error is not None and self.error.returncode == TIMED_OUT


def error_locations(text: str) -> list[tuple[str, int]]:
    out = []
    for m in _LOC.finditer(text):
        out.append((m.group("file").strip(), int(m.group("l1") or m.group("l2"))))
    return out


_NOISE = re.compile(r"^(Traceback|  File |    |FileNotFoundError|.*rocm_agent_enumerator).*$", re.M)


def clean_message(text: str, limit: int = 12000) -> str:
    """Drop tool noise (hipcc's agent-enumerator traceback), keep file:line lines, cap the size."""
    lines = [ln for ln in text.splitlines() if not _NOISE.match(ln)]
    if sum(len(ln) + 1 for ln in lines) > limit:       # keep every error line, then context
        keep = [ln for ln in lines if "error" in ln]
        rest = [ln for ln in lines if "error" not in ln]
        lines = keep + ["..."] + rest[: max(0, 40 - len(keep))]
    return "\n".join(lines)[:limit].strip()


def make_error(text: str, command: list[str] = (), returncode: int | None = None) -> CompileError:
    msg = clean_message(text)
    return CompileError(msg, error_locations(msg), list(command), returncode)


# ------------------------------------------------------------------------ key ingredients
@functools.lru_cache(maxsize=None)
def toolchain_version(argv: tuple[str, ...], env_items: tuple[tuple[str, str], ...] = ()) -> str:
    """`<compiler> --version`, noise removed; "" when the compiler is absent."""
    exe = shutil.which(argv[0])
    if not exe:
        return ""
    run_env = {**os.environ, **dict(env_items)}
    try:
        p = subprocess.run([exe, *argv[1:], "--version"], capture_output=True, text=True, env=run_env,
                           errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return clean_message(p.stdout + p.stderr)


def _folder_free(flags: list[str], source: Path) -> list[str]:
    """flags with the source's own folder written as <dir>: what it holds enters the key by content
    (header_closure), so a copy of a suite elsewhere (parity mutate's slots) has the original's keys,
    whichever compiler (nvcc, NVRTC, hiprtc) the key is for."""
    out = list(flags)
    for d in sorted({str(source.parent), str(source.parent.resolve())}, key=len, reverse=True):
        out = [f.replace(d, "<dir>") for f in out]
    return out


def cache_key(source: Path, headers: list[Path], flags: list[str], toolchain: str, target: str,
              source_bytes: bytes | None = None) -> str:
    h = hashlib.sha256()

    def put(b: bytes) -> None:
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    put(CACHE_VERSION.encode())
    put(Path(source).name.encode())
    put(source_bytes if source_bytes is not None else Path(source).read_bytes())
    # headers by name and content, not by path: a copy of the suite elsewhere (parity mutate's
    # slots) hits the original's entries for every file it did not change
    for name, body in sorted((Path(hd).name.encode(), Path(hd).read_bytes()) for hd in headers):
        put(name)
        put(body)
    put("\0".join(_folder_free(flags, Path(source))).encode())
    put(toolchain.encode())
    put(target.encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------ the store
@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


DIR = "<dir>"          # the source's folder in a stored entry (as in the key's flags)


def _folders(source: Path) -> list[str]:
    """The spellings of source's folder a compiler may print (as given, resolved), longest first;
    none for a bare file name: its output names it without a folder."""
    ds = {str(source.parent), str(source.parent.resolve())}
    return sorted((d for d in ds if d not in ("", ".")), key=len, reverse=True)


def _store_paths(text: str, source: Path) -> str:
    """text with each spelling of source's folder (a path prefix) written `<dir>`."""
    for d in _folders(source):
        text = text.replace(d.rstrip("/") + "/", DIR + "/")
    return text


def _serve_paths(text: str, source: Path) -> str:
    """A stored text with `<dir>` back to the current source's folder, as the caller spelled it."""
    d = str(source.parent)
    return text.replace(DIR + "/", "" if d in ("", ".") else d.rstrip("/") + "/")


def _store_command(command: list[str], source: Path) -> list[str]:
    """The command with source's folder written `<dir>` wherever it appears (`-I/port/kernels`)."""
    return _folder_free(list(command), source)


def _serve_command(command: list[str], source: Path) -> list[str]:
    d = str(source.parent)
    return [c.replace(DIR, d) for c in command]


def _load(entry: Path, key: str, source: Path | None = None) -> CompileResult | None:
    meta_p = entry / "meta.json"
    if not meta_p.is_file():
        return None
    try:
        meta = json.loads(meta_p.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict):                # a damaged entry is a miss, compiled again
        return None
    folder_free = meta.get("paths") == "folder-free"
    if source is not None and not folder_free and not meta.get("ok"):
        return None        # an older entry's error names the folder first compiled: compile again
    log = (entry / "log.txt").read_text(errors="replace") if (entry / "log.txt").is_file() else ""
    serve = (lambda t: _serve_paths(t, source)) if source is not None and folder_free else (lambda t: t)
    command = meta.get("command", [])
    command = _serve_command(command, source) if source is not None and folder_free else command
    if meta.get("ok"):
        if not _intact(entry / "out.bin", meta.get("sha256")):
            return None                           # truncated, replaced or lost: compiled again
        return CompileResult(True, key, entry / "out.bin", serve(log), cached=True, command=command)
    err = CompileError(serve(meta.get("message", log)), [(serve(f), n) for f, n in meta.get("locations", [])],
                       command, meta.get("returncode"))
    return CompileResult(False, key, None, serve(log), cached=True, error=err, command=command)


def _intact(binary: Path, digest: object) -> bool:
    """An entry's object is there, not empty, and (where its meta recorded one) of its digest."""
    try:
        data = binary.read_bytes()
    except OSError:
        return False
    return bool(data) and (not isinstance(digest, str) or hashlib.sha256(data).hexdigest() == digest)


Builder = Callable[[Path], tuple[int, str]]   # (output path) -> (return code, compiler output)

# A compiler's failure that says nothing of the source: a signal (Ctrl-C, the OOM killer, a timeout's
# kill), the machine (no temporary file, no memory, a full disk), or no word at all.
_TRANSIENT = re.compile(r"died with signal|^Killed$|: Terminated$|timed out after|unable to make temporary file|"
                        r"No space left on device|Cannot allocate memory|out of memory", re.M | re.I)
_SIGNAL_EXITS = {128 + s for s in (1, 2, 9, 15)}   # a shell's exit status for SIGHUP/INT/KILL/TERM


def transient(rc: int | None, text: str) -> bool:
    """Whether a failed compile may succeed when run again on the same inputs (then it is not cached);
    rc 0 here is a compiler that said it succeeded and wrote no object."""
    return rc is None or rc <= 0 or rc in _SIGNAL_EXITS or not text.strip() or bool(_TRANSIENT.search(text))


_SCRATCH: list[Path] = []          # this process's private cache, for a cache folder it cannot write
_WARNED: set[str] = set()
_GUARD = threading.Lock()


def _scratch_root() -> Path:
    """A private folder for compiles the cache folder cannot take, removed at exit."""
    with _GUARD:
        if not _SCRATCH:
            _SCRATCH.append(Path(tempfile.mkdtemp(prefix="parity-cache-")))
            atexit.register(shutil.rmtree, _SCRATCH[0], True)
        return _SCRATCH[0]


def _warn_unwritable(root: Path, e: OSError) -> None:
    """One warning line per cache folder and process (never a traceback: the check goes on)."""
    with _GUARD:
        if str(root) in _WARNED:
            return
        _WARNED.add(str(root))
    print(f"warning: compile cache {root} cannot be written ({e.strerror or e}): compiling uncached; "
          f"set PARITY_CACHE_DIR to a writable folder", file=sys.stderr)


def cached_build(key: str, build: Builder, command: list[str] = (), root: Path | None = None,
                 force: bool = False, source: Path | None = None) -> CompileResult:
    """Serve `key` from the cache, or run `build(out_path)` once (under the entry's lock).
    source: the file compiled; its folder is stored as `<dir>` and served as the current one.
    A cache folder that cannot be written (read-only, a file, a full disk) still serves its hits;
    a miss compiles into a private scratch folder, with one warning line."""
    root = Path(root) if root else cache_dir()
    source = Path(source) if source is not None else None
    forced = force or env.flag("PARITY_FORCE_RECOMPILE")
    if not forced:
        hit = _load(root / key[:2] / key, key, source)
        if hit:
            return hit
    try:
        return _compile_into(root, key, build, command, forced, source)
    except OSError as e:
        _warn_unwritable(root, e)
        return _compile_into(_scratch_root(), key, build, command, forced, source)


def _compile_into(root: Path, key: str, build: Builder, command: list[str], forced: bool,
                  source: Path | None) -> CompileResult:
    entry = root / key[:2] / key
    with _locked(root / "locks" / f"{key}.lock"):
        if not forced:
            hit = _load(entry, key, source)       # another process compiled it meanwhile
            if hit:
                return hit
        entry.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        store = (lambda t: _store_paths(t, source)) if source is not None else (lambda t: t)
        with tempfile.TemporaryDirectory(dir=entry, prefix=".build-") as tmp:
            out = Path(tmp) / "out.bin"
            try:
                rc, text = build(out)
            except Exception as e:                 # a builder that raises is a compile error too
                rc, text = -1, f"{type(e).__name__}: {e}"
            seconds = time.perf_counter() - t0
            ok = rc == 0 and out.is_file() and out.stat().st_size > 0
            stopped = interrupts.first() is not None   # a signal to parity reaches its compilers too (nvcc
            if not ok and (transient(rc, text) or stopped):   # exits 255): this attempt's failure, not kept
                err = make_error(f"{text.strip() or f'compiler exited with {rc} and wrote no output'}\n(the "
                                 f"compile did not finish: not cached, the next run compiles again)", command, rc)
                return CompileResult(False, key, None, text, False, err, seconds, list(command))
            binary = out.read_bytes() if ok else b""
            if ok:
                _atomic_write(entry / "out.bin", binary)
            _atomic_write(entry / "log.txt", store(text).encode())
            meta = {"ok": ok, "command": list(command), "returncode": rc, "seconds": seconds}
            if ok:
                meta["sha256"] = hashlib.sha256(binary).hexdigest()
            if source is not None:
                meta.update(paths="folder-free", command=_store_command(command, source))
            err = None
            if not ok:
                err = make_error(text or f"compiler exited with {rc} and wrote no output", command, rc)
                meta.update(message=store(err.message), locations=[(store(f), n) for f, n in err.locations])
            _atomic_write(entry / "meta.json", json.dumps(meta).encode())
        if ok:
            return CompileResult(True, key, entry / "out.bin", text, False, None, seconds, list(command))
        return CompileResult(False, key, None, text, False, err, seconds, list(command))


def compile_source(source: str | os.PathLike, compiler: list[str], flags: list[str], *,
                   target: str = "", include_dirs: list[str | os.PathLike] = (),
                   env: dict[str, str] | None = None, output_flag: str = "-o",
                   timeout: float | None = None, cache_root: Path | None = None,
                   force: bool = False, nice: int = 0) -> CompileResult:
    """`compiler + flags + [source, -o out]` through the cache. Missing compiler -> error result.
    nice: the compiler's CPU priority is lowered by this much (its subprocesses inherit it); timeout:
    seconds before the compiler and everything it started are killed (default compile_timeout())."""
    source = Path(source)
    env_items = tuple(sorted((env or {}).items()))
    version = toolchain_version(tuple(compiler), env_items)
    cmd = [*compiler, *flags, str(source), output_flag]
    if not version and not shutil.which(compiler[0]):
        err = CompileError(f"{compiler[0]}: not found on PATH", [], cmd, None)
        return CompileResult(False, "", error=err, command=cmd)
    incs = [Path(d) for d in include_dirs]
    headers, refused = include_walk(source, incs)
    for i, f in enumerate(flags[:-1]):   # force-included headers (a shim port's) enter the key by content
        if f == "-include":
            more, why = include_walk(Path(flags[i + 1]), incs)
            headers, refused = [*headers, Path(flags[i + 1]).resolve(), *more], refused + why
    if refused:                 # the compiler would block reading a FIFO: not run
        return CompileResult(False, "", error=CompileError(refused[0], [], cmd, None), command=cmd)
    merged = {**os.environ, **(env or {})}
    tool_env = [f"env:{k}={merged[k]}" for k in TOOL_ENV if merged.get(k)]
    key = cache_key(source, headers, [*compiler, *flags, *tool_env], version, target)

    limit = timeout if timeout is not None else compile_timeout()

    def build(out: Path) -> tuple[int, str]:
        # the compiler's temporary files in a folder of the build's own (hipcc left an empty
        # /tmp/<stem>-<hex> folder per compile; a TMPDIR that does not exist failed every compile)
        with tempfile.TemporaryDirectory(prefix="parity-cc-") as scratch:
            return _build(out, {**os.environ, **(env or {}), "TMPDIR": scratch})

    def _build(out: Path, run_env: dict[str, str]) -> tuple[int, str]:
        p = subprocess.Popen([*cmd, str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", env=run_env)
        with _GUARD:
            _LIVE.add(p)
        try:
            if nice:       # set before the driver forks its stages (no preexec_fn: unsafe beside threads)
                try:
                    os.setpriority(os.PRIO_PROCESS, p.pid, os.getpriority(os.PRIO_PROCESS, 0) + nice)
                except OSError:
                    pass   # (already exited, or not permitted: priority is only a preference)
            try:
                text, _ = p.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                _kill_tree(p.pid)                  # hipcc is perl -> sh -> clang: its clang holds the pipe
                p.communicate()
                return TIMED_OUT, (f"{source}: compiler timed out after {limit:g} s: not checked here (not a "
                                   "fault of the source as far as anyone knows); PARITY_COMPILE_TIMEOUT=<seconds> "
                                   "raises the limit")
            return p.returncode, text
        finally:
            with _GUARD:
                _LIVE.discard(p)
    return cached_build(key, build, cmd + ["<out>"], cache_root, force, source)
