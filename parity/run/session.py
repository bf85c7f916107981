"""The sweep session: everything between a front end's options and its reports.

`parity run`, `bench`, `mutate`, `repro`, `coverage`, `compile` and the pytest plugin all go through
here: the subject (the suite folder and its one default, a port's build line, the ABI profile, the
suite discovered once), the sweep's cases (filters, shard, `--since`), the levels, and the run itself
(workers started, the needed files precompiled, every case on every level, journalled). A mistake of
the user's is a `SessionError`: one line, which each front end shows as its usage error (exit 2,
`pytest.UsageError`); nothing here prints, exits or knows about click.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from parity.core import files, resources
from parity.core.suggest import unknown
from parity.suite.scan import HEADER_SUFFIXES, SOURCE_SUFFIXES

if TYPE_CHECKING:
    from parity.profiles import Profile
    from parity.run.cases import Case, Filters
    from parity.run.journal import Journal
    from parity.run.levels import Level
    from parity.suite.port import Port
    from parity.suite.scan import Suite
    from parity.timing import TimingOptions

DEFAULT_HIP_SRC = resources.hip_suite()       # the bundled HIP suite: the subject when --hip-src is not given
RUN_FILE = "run.json"                         # a run folder's options, for --resume


class SessionError(ValueError):
    """A user mistake or a missing prerequisite, said in one line."""


def csv_list(value: str | None) -> list[str] | None:
    """'a, b,,c' -> ['a', 'b', 'c']; None or '' -> None (the option was not given)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


# ------------------------------------------------------------------------------------- the subject
@dataclass
class Subject:
    """What a run checks: the HIP suite folder (or a port of it), the CUDA suite, the ABI profile."""
    hip_src: Path
    cuda_src: Path | None
    port: Port | None
    profile: Profile
    how: str                                  # how the profile was chosen, for the reports
    given: bool                               # the user named the suite (--hip-src or a port)
    _suite: Suite | None = field(default=None, repr=False)

    @property
    def folders(self) -> list[Path]:
        return [self.hip_src] + ([self.cuda_src] if self.cuda_src else [])

    def suite(self) -> Suite:
        """The HIP suite's sources and kernels, discovered once for the whole session; SessionError
        when discovery cannot go on (a FIFO in its folders, a cpp that never finishes)."""
        if self._suite is None:
            from parity.suite.port import discover_port
            from parity.suite.scan import SuiteError, discover
            try:
                self._suite = discover_port(self.port) if self.port is not None else discover(self.hip_src)
            except SuiteError as e:
                raise SessionError(str(e)) from None
        return self._suite

    def discovery_notes(self) -> list[str]:
        """What discovering the suite had to leave out (an include not found or refused, a file cpp
        could not get through), one line each; none when the suite was not discovered."""
        return list(self._suite.notes) if self._suite is not None else []

    def check_folders(self) -> None:
        for p in self.folders:
            if not p.is_dir():
                raise SessionError(f"kernel suite folder {p} does not exist")


def subject(hip_src: str | Path | None = None, cuda_src: str | Path | None = None, *, profile: str | None = None,
            port_file: str | Path | None = None, port_source=(), port_include=(), port_force_include=(),
            port_define=()) -> Subject:
    """The subject of a command from its options: --hip-src (default: the bundled suite), --cuda-src,
    --port FILE (default: DIR/parity-port.toml) and the --port-* additions, --profile (default:
    DIR/parity-kernels.toml, else the built-in profile whose kernel names the suite defines, else candle)."""
    given = Path(hip_src) if hip_src else None
    port = _port(given, port_file, port_source, port_include, port_force_include, port_define)
    root = given or (port.root if port is not None else None)
    subj = Subject(root or DEFAULT_HIP_SRC, Path(cuda_src) if cuda_src else None, port, None, "", root is not None)
    subj.profile, subj.how = _profile(profile, root, subj)
    return subj


def _port(hip_src: Path | None, port_file, sources, includes, forced, defines) -> Port | None:
    from parity.suite.port import Port, PortError, find_port
    try:
        port = find_port(hip_src, Path(port_file) if port_file else None)
        if port is None and (sources or includes or forced or defines):
            if hip_src is None:
                raise SessionError("--port-source/--port-include/--port-force-include/--port-define describe the "
                                   "port of --hip-src DIR: give --hip-src (or --port FILE)")
            port = Port(root=hip_src)
        if port is not None:
            port = port.extended(sources=sources, include_dirs=includes, force_includes=forced, defines=defines)
    except PortError as e:
        raise SessionError(str(e))
    if port is not None and not port.source_files():
        raise SessionError(f"the port's sources ({', '.join(port.sources) or '*.hip, *.cu'}) match no file "
                           f"under {port.root}")
    return port


def _profile(option: str | None, root: Path | None, subj: Subject) -> tuple[Profile, str]:
    from parity import profiles

    def names() -> list[str]:
        return list(subj.suite().kernels)
    try:
        return profiles.resolve(option, root, names if root is not None and Path(root).is_dir() else None)
    except KeyError as e:
        raise SessionError(str(e.args[0]) if e.args else str(e))
    except ValueError as e:
        raise SessionError(str(e))


def profile_only(option: str | None) -> Profile:
    """The profile a command without a suite names (`parity list --profile`)."""
    return subject(None, profile=option).profile


# ------------------------------------------------------------------------------------- the cases
def select_cases(sweep: str, filters: Filters | None = None, shard: tuple[int, int] | None = None,
                 profile: Profile | None = None, allow_empty: bool = False) -> list[Case]:
    """The sweep's cases, narrowed by the filters and the shard; SessionError for a sweep or filter
    that names nothing known, and (unless allow_empty) for filters that select no case."""
    from parity.run.cases import load_sweep
    try:
        cases = load_sweep(sweep, filters, shard=shard, profile=profile)
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise SessionError(str(e.args[0]) if e.args else str(e)) from None
    if not cases and not allow_empty:
        given = filters is not None and any((filters.ops, filters.dtypes, filters.layouts, filters.values))
        raise SessionError(("the filters select no case of sweep " if given else "sweep ") + f"{sweep}"
                           + ("" if given else " selects no case: its groups name no op, dtype, layout or value "
                              "class that goes together") + " (see `parity list` and `parity run --help`)")
    return cases


def changed_cases(cases: list[Case], ref: str, subj: Subject) -> tuple[list[Case], str]:
    """(the cases whose kernels, or a host routine's kernels, are defined in suite files changed since
    `ref`, the line that says which files chose them)."""
    from parity.host.routines import is_library_kernel, suite_kernels
    from parity.suite.since import SinceError, kernels_changed, selection_line
    kernels: set[str] = set()
    files: list[Path] = []
    try:
        for folder in subj.folders:
            own = folder == subj.hip_src          # the HIP suite: its port's build line and its one discovery
            k, f = kernels_changed(ref, folder, subj.port if own else None, subj.suite if own else None)
            kernels |= k
            files += f
    except SinceError as e:
        raise SessionError(str(e))
    # worked out once per distinct (op, dtype), not per case (a pr sweep: 26,000 cases, ~700 pairs);
    # a chain's step kernels and a host routine's own launches count
    needs: dict[tuple[str, str], set[str]] = {}
    for c in cases:
        if (c.op, c.dtype) not in needs:
            needs[c.op, c.dtype] = {k for n in c.kernels for k in (suite_kernels([n]) if is_library_kernel(n) else [n])}
    chosen = [c for c in cases if kernels & needs[c.op, c.dtype]]
    return chosen, selection_line(ref, files, kernels, len(chosen), len(cases))


# ------------------------------------------------------------------------------------- the levels
def build_levels(levels: str | list[str], subj: Subject, wave: str | int = "64", case_timeout: float = 30.0,
                 gpus: str | None = None, require: str | None = None,
                 named: str | None = "--levels") -> list[Level]:
    """The selected levels, built ("auto": cpu and every GPU level of levels.LEVELS). A level named
    in `levels` (by the option `named`; None: not the user's choice) or in `require` that is
    unavailable is a SessionError; `auto`
    keeps the unavailable ones as rows of the report."""
    from parity.run.levels import ALL_LEVELS, LEVELS, expand_waves, make, parse_waves
    auto = levels == "auto"
    names = list(LEVELS) if auto else (csv_list(levels) if isinstance(levels, str) else list(levels)) or []
    required = csv_list(require) or []
    for n in names + required:
        if n not in ALL_LEVELS:
            raise SessionError(unknown("level", n, ALL_LEVELS))
    try:
        names = expand_waves(names, parse_waves(wave))
    except ValueError as e:
        raise SessionError(str(e))
    lvls = [make(n, subj.hip_src, subj.cuda_src, case_timeout, gpus=gpus, port=subj.port, profile=subj.profile.name,
                 suite=subj.suite) for n in names]
    must = [] if auto or not named else [(lv, f"named in {named}") for lv in lvls]
    for r in required:
        lv = next((lv for lv in lvls if lv.name == r or lv.name.split("/")[0] == r), None)
        if lv is None:
            raise SessionError(f"required level {r} is not selected by --levels {levels}")
        must.insert(0, (lv, "required"))
    for lv, why in must:
        if not lv.availability.available:
            head = f"required level {lv.name}" if why == "required" else f"level {lv.name} ({why})"
            raise SessionError(f"{head} is unavailable: {lv.availability.reason}")
    return lvls


def reference_only(lvls: list[Level], levels: str, subj: Subject) -> bool:
    """True when only reference levels were asked for by name. SessionError when no selected level
    runs or compiles the subject's kernels and the user did not ask for the reference alone."""
    from parity.run.levels import REFERENCE, WHAT_RUNS_IT, role
    runnable = [lv for lv in lvls if lv.availability.available]
    if any(role(lv.name) != REFERENCE for lv in runnable):
        return False
    if levels != "auto" and runnable and all(role(lv.name) == REFERENCE for lv in lvls):
        return True
    why = "; ".join(f"{lv.name}: {lv.availability.reason}" for lv in lvls if not lv.availability.available)
    raise SessionError(f"nothing here runs or compiles the kernels of {subj.hip_src}: {WHAT_RUNS_IT}"
                       + (f" ({why})" if why else "")
                       + ". `--levels cpu` runs the reference's case machinery alone (no kernel of the suite).")


# ------------------------------------------------------------------------------------- the run folder
def run_folder(out: Path, stem: str) -> Path:
    """A new folder for this run, made atomically: a second run in the same second gets `-2`, `-3`."""
    base = f"{stem}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise SessionError(f"--out {out} is a file, not a folder")
    except OSError as e:
        raise SessionError(f"--out {out}: cannot make the folder: {e.strerror or e}")
    for i in range(1, 1000):
        folder = Path(out) / (base if i == 1 else f"{base}-{i}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
        except OSError as e:
            raise SessionError(f"--out {out}: cannot write there: {e.strerror or e}")
    raise SessionError(f"--out {out}: 999 runs named {base} already")


RUN_REPORT_FORMATS = {"summary.md": "md", "junit.xml": "junit", "index.html": "html"}   # `parity report --format`
RUN_REPORTS = tuple(RUN_REPORT_FORMATS)                 # a run's reports, made from its results.json
REPORT_FILES = (RUN_FILE, "results.json", "results.partial.jsonl", *RUN_REPORTS, "mutants.jsonl", "mutants.json")


def check_report_files(folder: Path) -> None:
    """SessionError when a file a run writes in `folder` (one being resumed) is a FIFO, a device, a
    socket or a folder: said before the run, not after it (parity.core.files never replaces one)."""
    for name in REPORT_FILES:
        why = files.refusal(folder / name, "", write=True)
        if why:
            raise SessionError(f"--resume {folder}: {why}")


def check_writable(folder: Path, what: str) -> None:
    """SessionError unless `folder` (one being resumed) takes the new files its reports are written
    as: the files a run leaves there stay writable in a folder that is not (chmod 555, chattr +i),
    so only a new file proves it, before any case runs rather than at the reports after the last."""
    try:
        files.probe_folder(folder)
    except OSError as e:
        raise SessionError(f"{what} {folder}: cannot write a new file there ({e.strerror or e}), so its reports "
                           "could not be written") from None


def read_run_file(folder: Path) -> dict:
    """The options a run folder was made with (its run.json), checked: SessionError naming the file and
    the field for one that is not what `parity run` writes, and for a folder whose run files are not
    files (a results.json that is a folder could never be written, a FIFO never read)."""
    path = folder / RUN_FILE
    check_report_files(folder)
    try:
        saved = json.loads(files.read_text(path, RUN_FILE))
        if not isinstance(saved, dict):
            raise ValueError(f"not an object ({type(saved).__name__})")
    except files.FileRefused as e:
        raise SessionError(f"--resume {folder}: {e}")
    except FileNotFoundError:
        raise SessionError(f"--resume {folder}: no {RUN_FILE} there (not a parity run folder, or one made by a "
                           "parity before 0.4: start a new run)")
    except RecursionError:
        raise SessionError(f"--resume {folder}: cannot read {path}: nested too deeply") from None
    except (OSError, ValueError) as e:
        raise SessionError(f"--resume {folder}: cannot read {path}: {e}")
    for key in PORT_LISTS:
        value = saved.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise SessionError(f"--resume {folder}: {path}: {key} must be a list of strings")
    for key, value in saved.items():
        if key in RUN_KEYS and not (value is None and key != "sweep" or isinstance(value, str) and
                                    (value or key != "sweep")):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise SessionError(f"--resume {folder}: {path}: {key} must be "
                               f"{'a non-empty string' if key == 'sweep' else 'a string or null'}, not {shown}")
    if "sweep" not in saved:
        raise SessionError(f"--resume {folder}: {path}: sweep: missing")
    return saved


# ------------------------------------------------------------------ the sources a run's verdicts are of
# Sources, headers, and a declared profile's declaration and references: what a case's verdict depends on.
RECORDED_SUFFIXES = SOURCE_SUFFIXES + HEADER_SUFFIXES + (".toml", ".py")
_RECORD_MAX_BYTES = 64 << 20                     # a larger file is no source: not read
_RECORD_MAX_FILES = 20_000                       # a folder far larger than a kernel suite: the first ones


def _short_digest(data: bytes) -> str:
    """The 16 hex digits of SHA-256 run.json and results.json keep of a file, a record or a selection."""
    import hashlib
    return hashlib.sha256(data).hexdigest()[:16]


def source_record(subj: Subject) -> dict[str, str]:
    """'hip:relative/path' / 'cuda:...' / a port's 'include0:...' and 'force-include0:name' -> the
    sha256 (16 hex digits) of each recorded file under the subject's folders, its port's include
    folders and forced headers (hidden folders, links and non-regular files left out): run.json keeps
    it, so that --resume knows whether the verdicts it keeps are of the code it would run now."""
    import os
    out = {}

    def digest(path: Path) -> str | None:
        try:                                 # (a FIFO, a device or a larger file: refused, not read)
            return _short_digest(files.read_bytes(path, limit=_RECORD_MAX_BYTES))
        except (OSError, ValueError):
            return None
    port = subj.port
    roots = [("hip", subj.hip_src), ("cuda", subj.cuda_src)]
    if subj.profile is not None and subj.profile.source != "built-in":
        decl = Path(subj.profile.source)        # a declaration and its references module, wherever they are
        # (the files beside it and the module it names: its folder is not walked, it may be a large one)
        named = [p for p in sorted(decl.parent.glob("*")) if p.suffix in (".toml", ".py")] + _references_of(decl)
        for path in dict.fromkeys(named):
            if path.is_file() and not path.is_symlink():
                d = digest(path)
                if d is not None:
                    out[f"profile:{path.relative_to(decl.parent).as_posix()}"] = d
    if port is not None:        # a port's include folders and forced headers may lie outside --hip-src
        roots += [(f"include{i}", Path(d)) for i, d in enumerate(port.include_dirs)]
        for i, f in enumerate(port.force_includes):
            d = digest(Path(f))
            if d is not None:
                out[f"force-include{i}:{Path(f).name}"] = d
    included = _included_elsewise(subj)
    for label, root in roots:
        if root is None or not root.is_dir():
            continue
        for top, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path = Path(top, name)
                if (path.suffix not in RECORDED_SUFFIXES and path.resolve() not in included) or path.is_symlink():
                    continue
                d = digest(path)
                if d is None:
                    continue
                out[f"{label}:{path.relative_to(root).as_posix()}"] = d
                if len(out) >= _RECORD_MAX_FILES:    # (in the walk's sorted order: the same ones again)
                    return out
    return out


def _included_elsewise(subj: Subject) -> set[Path]:
    """The headers the HIP suite's sources include whose names have no header suffix (`ops.def`):
    recorded too, as a change there changes the code a resume would run."""
    from parity.suite.includes import header_closure
    from parity.suite.scan import SuiteError
    try:
        suite = subj.suite()
    except (SessionError, SuiteError, OSError):
        return set()
    dirs = list(subj.port.include_dirs) if subj.port is not None else []
    return {h.resolve() for src in suite.sources for h in header_closure(Path(src), dirs)
            if h.suffix not in RECORDED_SUFFIXES}


def suite_digest(record: dict[str, str]) -> str:
    """One digest of a source record (source_record): the same for the same sources wherever they are
    checked out (its keys are relative to their folders), so shards from runners with other workspace
    paths are parts of one run, and shards of edited sources are not."""
    return _short_digest("\n".join(f"{k}={v}" for k, v in sorted(record.items())).encode())


def _references_of(decl: Path) -> list[Path]:
    """The references module a declaration names (`references = "sub/refs.py"`), when it names one
    inside its folder (the declaration's loader refuses any other)."""
    from parity.core import toml
    try:
        rp = toml.loads(files.read_text(decl, "declaration")).get("references")
    except (OSError, ValueError):              # (undecodable, refused, no TOML: the loader says so)
        return []
    if not isinstance(rp, str) or "\0" in rp:
        return []
    path = decl.parent / rp
    return [path] if path.resolve().is_relative_to(decl.parent.resolve()) else []


def check_sources_unchanged(folder: Path, saved: dict, now: dict[str, str], reference_only: bool = False) -> None:
    """SessionError when the sources recorded in `folder`'s run.json (saved["sources"]) are not the ones
    there now: the verdicts a resume keeps would be of other code (reference_only: of the profile's
    declaration and references alone, the only code such a run runs). A run.json without the record
    (an older parity's) is not checked."""
    record = saved.get("sources")
    if record is None:
        return
    if not isinstance(record, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in record.items()):
        raise SessionError(f"--resume {folder}: {folder / RUN_FILE}: sources must be an object of file digests")
    if reference_only:
        record, now = ({k: v for k, v in d.items() if k.startswith("profile:")} for d in (record, now))
    changed = sorted(k for k in record.keys() & now.keys() if record[k] != now[k])
    added, removed = sorted(now.keys() - record.keys()), sorted(record.keys() - now.keys())
    if not (changed or added or removed):
        return
    said = [f"{k} (changed)" for k in changed] + [f"{k} (new)" for k in added] + [f"{k} (gone)" for k in removed]
    more = f" and {len(said) - 5} more" if len(said) > 5 else ""
    raise SessionError(f"--resume {folder}: the kernel sources changed since that run: {', '.join(said[:5])}{more}; "
                       "the verdicts it finished are of the old code: start a new run")


# run.json's fields (what `parity run` writes; each a string, or null where an option was not given)
RUN_KEYS = ("sweep", "ops", "dtypes", "layouts", "value_classes", "levels", "wave", "hip_src", "cuda_src", "shard",
            "profile_opt", "since", "port_file")
PORT_LISTS = ("port_source", "port_include", "port_force_include", "port_define")   # each a list of strings


def selection_record(cases: list[Case]) -> dict:
    """The cases a run selected, as run.json keeps them: their number and a digest of their ids. A
    resume that selects others (its sweep file edited, parity's bundled sweeps or catalog changed,
    --since's ref moved) would drop the verdicts of the cases no longer selected."""
    return {"cases": len(cases), "digest": _short_digest("\n".join(sorted(c.id for c in cases)).encode())}


def check_selection_unchanged(folder: Path, saved: dict, now: dict) -> None:
    """SessionError when the cases a resume selects are not the run's (run.json's `selection`; one
    without it, an older parity's, is not checked): nothing it finished is dropped."""
    record = saved.get("selection")
    if record is None or record == now:
        return
    if not isinstance(record, dict) or not isinstance(record.get("cases"), int):
        raise SessionError(f"--resume {folder}: {folder / RUN_FILE}: selection must be an object with a case count")
    raise SessionError(f"--resume {folder}: this command selects other cases than that run ({record['cases']} then, "
                       f"{now['cases']} now: its sweep file, parity's bundled sweeps or catalog, or the --since ref "
                       "changed since); resuming would drop verdicts it finished: start a new run")


def write_run_file(folder: Path, options: dict) -> None:
    path = folder / RUN_FILE
    if files.kind(path) == "a regular file":
        return
    try:
        files.write_text(path, json.dumps(options, indent=1) + "\n", RUN_FILE)
    except files.FileRefused as e:
        raise SessionError(str(e))
    except OSError as e:
        raise SessionError(f"cannot write in the run folder {folder}: {e.strerror or e}")


def open_journal(folder: Path, cases: list[Case], runnable: list[Level], resume: bool) -> Journal:
    """The run folder's journal, its lock taken (SessionError when another run holds it) and, resuming,
    the rows it already has loaded."""
    from parity.run.journal import FolderBusy, Journal
    try:
        return Journal(folder, resume=resume, cases={c.id for c in cases}, levels={lv.name for lv in runnable})
    except FolderBusy as e:
        raise SessionError(f"--resume {folder}: {e}" if resume else str(e)) from None
    except ValueError as e:
        raise SessionError(f"--resume {folder}: {e}") from None
    except OSError as e:
        raise SessionError(f"cannot write in the run folder {folder}: {e.strerror or e}")


# ------------------------------------------------------------------------------------- the run
def start(runnable: list[Level], kernels: set[str], progress=None) -> float:
    """Start the levels' workers (they warm up meanwhile), then compile in parallel the suite files
    these kernels need, and only those; the seconds it took."""
    t0 = time.perf_counter()
    for lv in runnable:
        lv.prestart()
    for lv in runnable:
        lv.precompile(kernels, progress)
    return time.perf_counter() - t0


def execute(cases: list[Case], kernels: set[str], runnable: list[Level], journal: Journal, progress, meta: dict,
            timing: TimingOptions | None = None, every_fault: bool = False,
            finish: bool = False) -> BaseException | None:
    """Compile the files these kernels need (the cases' kernels: a chain's are its steps'), then run
    every case on every runnable level, journalled; fills meta's `compile_s`,
    `elapsed_s`, `resumed_rows` and `interrupted`. progress: a rich Progress (or parity.render's plain
    one). Returns the interrupt (Ctrl-C, SIGTERM) that stopped the run, or None. finish: the command
    writes its reports next: from the end of the run on (finished or stopped), a signal is recorded,
    never raised (parity.core.interrupts.finishing), so nothing cuts the reports short."""
    from parity.core import interrupts
    from parity.run.engine import run_cases
    interrupted: BaseException | None = None
    t0 = time.perf_counter()
    try:
        meta["compile_s"] = start(runnable, kernels, progress)
        for lv in runnable:
            todo = journal.todo(cases, lv.name)
            task = progress.add_task(lv.name, total=len(todo), status="", unit="cases")
            tick = _Ticker(journal, progress, task)
            try:
                run_cases(todo, lv.executor, lv.availability.device, on_row=tick, timing=timing,
                          every_fault=every_fault)
            finally:
                tick.flush()
                lv.executor.close()
        if finish:
            interrupts.finishing()
    except KeyboardInterrupt as e:                 # Ctrl-C or SIGTERM: keep what finished
        if finish:
            interrupts.finishing()
        interrupted = e
        for lv in runnable:
            if lv.executor is not None:
                lv.executor.close()
    interrupted = interrupted or (interrupts.first() if finish else None)
    meta.setdefault("compile_s", time.perf_counter() - t0)
    meta["elapsed_s"] = time.perf_counter() - t0
    meta["resumed_rows"], meta["interrupted"] = journal.resumed, interrupted is not None
    return interrupted


class _Ticker:
    """Each finished row goes to the journal; the bar moves ~10 times a second (a nightly sweep has
    60,000 rows)."""

    def __init__(self, journal: Journal, progress, task):
        self.journal, self.progress, self.task = journal, progress, task
        self.fails = self.pending = 0
        self.shown = time.perf_counter()

    def __call__(self, row: dict) -> None:
        self.journal.append(row)
        self.fails += row["verdict"] not in ("pass", "xfail", "compiled")
        self.pending += 1
        if time.perf_counter() - self.shown > 0.1:
            self.flush()

    def flush(self) -> None:
        self.progress.update(self.task, advance=self.pending,
                             status=f"[red]{self.fails} not passing[/]" if self.fails else "")
        self.pending, self.shown = 0, time.perf_counter()
