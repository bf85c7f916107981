"""Command line: parity list | run | report (and the suite tools: coverage, compile, doctor)."""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from parity import __version__

if TYPE_CHECKING:
    from parity.timing import TimingOptions

EPILOG_RUN = """\b
Examples:
  parity run                                  # smoke sweep on every level this machine has
  parity run --sweep pr --ops 'unary.*' --dtypes f16,bf16
  parity run --ops binary.minimum --layouts transposed,broadcast-leading
  parity run --hip-src ~/candle-rocm/kernels --require hip-on-nvidia
Exit codes: 0 every case passed, 1 a case failed (fail, missing, crash, ...), 2 usage or setup error.
"""


class SetupError(click.ClickException):
    """A user mistake or a missing prerequisite: one line, exit code 2, no traceback."""
    exit_code = 2


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@dataclass(frozen=True)
class RunOptions:
    """`parity run`'s options that reach below the CLI; passed down as arguments, never held globally."""
    timing: TimingOptions | None = None   # --time: time every passing case (None: no timing)
    gpus: str | None = None               # --gpus all|N: one worker per GPU (None: one worker)
    shard: tuple[int, int] | None = None  # --shard K/N, 1-based (None: every case)
    every_fault: bool = False             # --every-fault: launch cases on a path that already crashed

    def meta(self) -> dict:
        """The results.json meta entries of the options that were given."""
        out: dict = {}
        if self.timing is not None:
            out["timing"] = asdict(self.timing)
        if self.shard:
            out["shard"] = "/".join(map(str, self.shard))
        if self.gpus:
            out["gpus"] = self.gpus
        if self.every_fault:
            out["every_fault"] = True
        return out


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="parity")
def main() -> None:
    """parity proves, op by op, that a HIP port of Candle's CUDA kernels computes what the CUDA
    kernels and a CPU reference compute, over strided, sliced, broadcast, empty and huge layouts.

    Start with `parity run` (the smoke sweep on the bundled HIP suite), `parity list` to see the
    catalog, and `parity doctor` to see which levels this machine can run.
    """


PROFILE_HELP = ("The ABI profile: candle, rocm-rs, or a parity-kernels.toml declaring a port's own kernels "
                "(docs/profiles.md) [default: --hip-src DIR/parity-kernels.toml when there, else the profile whose "
                "kernel names the suite defines, else candle].")


@main.command("list")
@click.option("--ops", help="Glob patterns, comma separated: 'unary.*,cast'.")
@click.option("--profile", "profile_opt", metavar="NAME|FILE", help=PROFILE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(ops: str | None, as_json: bool, profile_opt: str | None = None) -> None:
    """The op catalog: op, dtypes, kernel names, tolerance and semantics (of a profile: Candle's by default)."""
    profile, _ = _profile(profile_opt, None)
    try:
        chosen = profile.select(_csv(ops))
    except KeyError as e:
        raise SetupError(str(e.args[0]))
    if as_json:
        click.echo(json.dumps([{"op": o.name, "family": o.family, "dtypes": list(o.dtypes),
                                "kernels": [o.kernel_name(k) for k in o.dtypes], "abi": list(o.abi),
                                "semantics": o.semantics, "divergences": list(o.divergences)}
                               for o in chosen], indent=1))
        return
    from parity.termtable import Col, fit_table
    rows = []
    for o in chosen:
        names = [o.kernel_name(k) for k in o.dtypes]
        shown = ", ".join(names[:6]) + (f", … ({len(names)} kernels)" if len(names) > 6 else "")
        rows.append((o.name, shown, o.spec.tolerance(o.dtypes[0]), o.semantics))
    console = Console()
    cols = (Col("op", name=True), Col("kernels"), Col("tolerance", drop=2), Col("semantics", drop=1, prose=True))
    console.print(fit_table(console, cols, rows, show_lines=False))
    kernels = len({o.kernel_name(k) for o in chosen for k in o.dtypes})
    click.echo(f"{len(chosen)} ops, {kernels} kernels" + ("" if profile.name == "candle" else f" (profile {profile.name})"))


def port_options(f):
    """--port FILE and the --port-* options: a port's build line (parity.port), and --profile (its kernel
    conventions, parity.profiles), for run, coverage, compile."""
    opts = [
        click.option("--profile", "profile_opt", metavar="NAME|FILE", help=PROFILE_HELP),
        click.option("--port", "port_file", type=click.Path(path_type=Path, dir_okay=False),
                     help="The port's build line (parity-port.toml: sources, include folders in order, force-included "
                          "headers, defines; docs/shim-ports.md) [default: --hip-src DIR/parity-port.toml when there]."),
        click.option("--port-source", multiple=True, metavar="GLOB",
                     help="Add sources of the port (relative to --hip-src; .cu included)."),
        click.option("--port-include", multiple=True, metavar="DIR",
                     help="Add an include folder of the port, after its own (repeatable)."),
        click.option("--port-force-include", multiple=True, metavar="FILE",
                     help="Add a header force-included ahead of every source (-include), after the port's own."),
        click.option("--port-define", multiple=True, metavar="K=V", help="Add a define of the port's build line (repeatable)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@main.command(epilog=EPILOG_RUN)
@click.option("--sweep", default="smoke", show_default=True,
              help="Bundled sweep (smoke, pr, nightly) or a path to a sweep TOML file.")
@click.option("--ops", help="Op glob patterns, comma separated ('unary.*,cast').")
@click.option("--dtypes", help="Dtypes, comma separated (f16,bf16,fp8).")
@click.option("--layouts", help="Layout classes, comma separated (transposed,broadcast-leading).")
@click.option("--values", "value_classes", help="Value classes, comma separated (normal,special,out-of-range).")
@click.option("--levels", default="auto", show_default=True,
              help="Levels to run: auto (cpu + every GPU level this machine has) or a list of "
                   "cpu, hip-on-nvidia, amd, cuda, cupy (CuPy reference, not in auto).")
@click.option("--wave", default="64", show_default=True,
              help="Wavefront size of the hip-on-nvidia level: 64 (AMD CDNA, emulated as two NVIDIA warps per "
                   "wavefront), 32 (RDNA wave32 / NVIDIA warps; level hip-on-nvidia/w32) or 32,64 (both, as two levels).")
@click.option("--require", help="Levels that must be available, comma separated; exit 2 if one is not.")
@click.option("--hip-src", type=click.Path(path_type=Path), help="HIP kernel suite folder [default: bundled backends/hip].")
@click.option("--cuda-src", type=click.Path(path_type=Path), help="CUDA kernel suite folder (e.g. candle-kernels/src).")
@port_options
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Folder for this run's report folder (results.json, summary.md, junit.xml).")
@click.option("--case-timeout", type=float, default=30.0, show_default=True,
              help="Seconds a GPU launch may take before the case is a `timeout` (its worker is restarted).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or tables; just the summary line.")
@click.option("--baseline", "baseline_path", type=click.Path(path_type=Path),
              help="Known failures (TOML/JSON, see `parity baseline`): matching failures become xfail.")
@click.option("--strict", is_flag=True, help="With --baseline: a baselined case that passes (xpass) fails the run.")
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False),
              help="Resume an interrupted run in this report folder: finished cases are not run again.")
@click.option("--time", "time_cases", is_flag=True,
              help="Time every passing case on GPU levels (device events; kernel_ms = median, "
                   "time_p10/p90, gbps, pct_peak, launch_bound, samples columns).")
@click.option("--mode", "time_mode", type=click.Choice(["cold", "hot"]), default="cold", show_default=True,
              help="With --time: cold (L2 flushed, outputs restored before each sample) or hot (back to back).")
@click.option("--max-noise", "time_max_noise", type=float, default=0.02, show_default=True,
              help="With --time: sample until IQR/(1.349*median) is below this (or the time cap).")
@click.option("--gpus", default=None, help="Spread GPU levels over 'all' or N GPUs: one process per GPU prepares, "
                                          "launches (pinned with CUDA_VISIBLE_DEVICES) and compares every Nth case.")
@click.option("--shard", default=None, help="Run shard K of N (K/N, 1-based; split by case-ID hash); join with `parity merge`.")
@click.option("--since", "since", metavar="REF",
              help="Only the cases whose kernels are defined in suite files changed since this git ref "
                   "(committed, staged, unstaged or untracked; a changed header selects the files including it).")
@click.option("--every-fault", is_flag=True,
              help="Launch every case. By default, once a kernel crashes or times out on a code path (in place, "
                   "empty, a layout class), its later cases on that path are `not-run` (failing, counted, listed): "
                   "each fault costs a worker restart.")
def run(time_cases: bool, time_mode: str, time_max_noise: float, gpus, shard, every_fault: bool, **kw) -> None:
    """Run a sweep of cases on every selected level and write the reports."""
    from parity.levels import resolve_gpus
    from parity.shard import parse_shard
    from parity.timing import TimingOptions
    try:
        opts = RunOptions(TimingOptions(mode=time_mode, max_noise=time_max_noise) if time_cases else None,
                          gpus, parse_shard(shard), every_fault)
        if gpus is not None:
            resolve_gpus(gpus)
    except ValueError as e:
        raise SetupError(str(e))
    _guarded(_run, opts, **kw)


def _guarded(fn, opts: RunOptions, **kw) -> None:
    """Run `fn`; SIGTERM ends it like Ctrl-C (reports written, exit 143), and an unexpected internal
    error exits 3 with its traceback saved to a file: exit 1 means a case failed, nothing else."""
    import signal
    import traceback

    def term(signum, frame):
        raise Terminated()
    previous = signal.signal(signal.SIGTERM, term)
    try:
        fn(opts, **kw)
    except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit, KeyboardInterrupt):
        raise
    except Exception as e:
        folder = Path(kw.get("resume") or kw.get("out") or "reports")
        path = _save_traceback(folder, traceback.format_exc())
        click.echo(f"parity internal error: {type(e).__name__}: {e}" + (f" (traceback: {path})" if path else "")
                   + "; please report it", err=True)
        sys.exit(INTERNAL_ERROR)
    finally:
        signal.signal(signal.SIGTERM, previous)


INTERNAL_ERROR = 3


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled): handled as an interrupt, exit 143."""


def _save_traceback(folder: Path, text: str) -> Path | None:
    import tempfile
    for where in (folder, Path(tempfile.gettempdir())):
        try:
            where.mkdir(parents=True, exist_ok=True)
            path = where / f"parity-error-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
            path.write_text(text)
            return path
        except OSError:
            continue
    return None


def _levels(levels: str, wave: str, hip_src: Path, cuda_src: Path | None, case_timeout: float, gpus,
            require, port=None, profile: str | None = None) -> list:
    """The selected levels, built. Named levels that are unavailable are setup errors (exit 2), as
    --require's are; `auto` keeps the unavailable ones as rows of the report."""
    from parity.levels import ALL_LEVELS, LEVELS, expand_waves, make, parse_waves
    from parity.suggest import unknown
    names = LEVELS if levels == "auto" else _csv(levels) or []
    for n in list(names) + (_csv(require) or []):
        if n not in ALL_LEVELS:
            raise SetupError(unknown("level", n, ALL_LEVELS))
    try:
        names = expand_waves(names, parse_waves(wave))
    except ValueError as e:
        raise SetupError(str(e))
    lvls = [make(n, hip_src, cuda_src, case_timeout, gpus=gpus, port=port, profile=profile) for n in names]
    named = [] if levels == "auto" else [(l, "named in --levels") for l in lvls]
    for r in _csv(require) or []:
        lv = next((l for l in lvls if l.name == r or l.name.split("/")[0] == r), None)
        if lv is None:
            raise SetupError(f"required level {r} is not selected by --levels {levels}")
        named.insert(0, (lv, "required"))
    for lv, why in named:
        if not lv.availability.available:
            head = f"required level {lv.name}" if why == "required" else f"level {lv.name} ({why})"
            raise SetupError(f"{head} is unavailable: {lv.availability.reason}")
    return lvls


def _port(hip_src: Path | None, port_file, sources, includes, forced, defines):
    """The port of this run (parity.port), or None for a suite of .hip files: --port FILE, else
    --hip-src DIR/parity-port.toml, extended by the --port-* options."""
    from parity.port import Port, PortError, find_port
    try:
        port = find_port(hip_src, Path(port_file) if port_file else None)
        if port is None and (sources or includes or forced or defines):
            if hip_src is None:
                raise SetupError("--port-source/--port-include/--port-force-include/--port-define describe the "
                                 "port of --hip-src DIR: give --hip-src (or --port FILE)")
            port = Port(root=hip_src)
        if port is not None:
            port = port.extended(sources=sources, include_dirs=includes, force_includes=forced, defines=defines)
    except PortError as e:
        raise SetupError(str(e))
    if port is not None and not port.source_files():
        raise SetupError(f"the port's sources ({', '.join(port.sources) or '*.hip, *.cu'}) match no file "
                         f"under {port.root}")
    return port


def _profile(option: str | None, hip_src: Path | None, port=None):
    """(profile, how it was chosen) of a command: --profile, else DIR/parity-kernels.toml, else the
    built-in profile the suite's kernel names belong to (parity.profiles.resolve); exit 2 with one line
    for an unknown name or a declaration with an error."""
    from parity import profiles

    def names():
        from parity.port import discover_port
        from parity.suite import discover
        return list((discover_port(port) if port is not None else discover(hip_src)).kernels)
    try:
        return profiles.resolve(option, hip_src, names if hip_src is not None and Path(hip_src).is_dir() else None)
    except KeyError as e:
        raise SetupError(str(e.args[0]) if e.args else str(e))
    except ValueError as e:
        raise SetupError(str(e))


def _check_something_verifies(lvls: list, levels: str, hip_src: Path) -> bool:
    """True when only reference levels were asked for by name. Exit 2 when no selected level runs or
    compiles the subject's kernels and the user did not ask for the reference alone."""
    from parity.levels import REFERENCE, role
    from parity.outcome import WHAT_RUNS_IT
    runnable = [l for l in lvls if l.availability.available]
    if any(role(l.name) != REFERENCE for l in runnable):
        return False
    if levels != "auto" and runnable and all(role(l.name) == REFERENCE for l in lvls):
        return True
    why = "; ".join(f"{l.name}: {l.availability.reason}" for l in lvls if not l.availability.available)
    raise SetupError(f"nothing here runs or compiles the kernels of {hip_src}: {WHAT_RUNS_IT}"
                     + (f" ({why})" if why else "")
                     + ". `--levels cpu` runs the reference's case machinery alone (no kernel of the suite).")


RESUMED = ("sweep", "ops", "dtypes", "layouts", "value_classes", "levels", "wave", "hip_src", "cuda_src", "shard",
           "profile_opt")
RUN_FILE = "run.json"


def _resume_options(folder: Path, given: dict) -> dict:
    """The options of the run in `folder` (its run.json); an option given now that differs is an error."""
    from click.core import ParameterSource
    path = folder / RUN_FILE
    try:
        saved = json.loads(path.read_text())
        if not isinstance(saved, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        raise SetupError(f"--resume {folder}: no {RUN_FILE} there (not a parity run folder, or one made by a "
                         "parity before 0.4: start a new run)")
    except (OSError, ValueError) as e:
        raise SetupError(f"--resume {folder}: cannot read {RUN_FILE}: {e}")
    ctx = click.get_current_context()
    out = dict(given)
    for k in RESUMED:
        if k not in saved:
            continue
        src = ctx.get_parameter_source(k)
        now = given.get(k)
        if src == ParameterSource.COMMANDLINE and _norm(now) != _norm(saved[k]):
            flag = {"value_classes": "--values", "profile_opt": "--profile"}.get(k, "--" + k.replace("_", "-"))
            raise SetupError(f"--resume {folder} continues a run with {flag} {saved[k] or '(none)'}; "
                             f"this command says {flag} {now}: drop the option, or start a new run")
        out[k] = saved[k]
    return out


def _norm(v):
    return None if v in (None, "") else str(v)


def _run_folder(out: Path, stem: str) -> Path:
    """A new folder for this run, made atomically: a second run in the same second gets `-2`, `-3`."""
    base = f"{stem}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise SetupError(f"--out {out} is a file, not a folder")
    except OSError as e:
        raise SetupError(f"--out {out}: cannot make the folder: {e.strerror or e}")
    for i in range(1, 1000):
        folder = Path(out) / (base if i == 1 else f"{base}-{i}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
        except OSError as e:
            raise SetupError(f"--out {out}: cannot write there: {e.strerror or e}")
    raise SetupError(f"--out {out}: 999 runs named {base} already")


def _run(opts: RunOptions, sweep: str, ops, dtypes, layouts, value_classes, levels: str, require, hip_src,
         cuda_src, out: Path, case_timeout: float, quiet: bool, baseline_path, strict: bool, resume, since,
         wave: str = "64", port_file=None, port_source=(), port_include=(), port_force_include=(),
         port_define=(), profile_opt: str | None = None) -> None:
    from parity.cases import Filters, load_sweep
    from parity.golden import summary as golden_summary
    from parity.levels import DEFAULT_HIP_SRC
    from parity.results import environment

    if resume:
        if not Path(resume).is_dir():
            raise SetupError(f"--resume: run folder {resume} does not exist")
        o = _resume_options(Path(resume), dict(sweep=sweep, ops=ops, dtypes=dtypes, layouts=layouts,
                                              value_classes=value_classes, levels=levels, wave=wave,
                                              hip_src=hip_src, cuda_src=cuda_src, shard=None,
                                              profile_opt=profile_opt))
        sweep, ops, dtypes, layouts, value_classes, levels, wave, hip_src, cuda_src, profile_opt = (
            o[k] for k in RESUMED if k != "shard")
        if o.get("shard") and not opts.shard:
            from parity.shard import parse_shard
            opts = RunOptions(opts.timing, opts.gpus, parse_shard(o["shard"]), opts.every_fault)
    console = Console(stderr=False, quiet=quiet)
    given_src = Path(hip_src) if hip_src else None
    port = _port(given_src, port_file, port_source, port_include, port_force_include, port_define)
    profile, how = _profile(profile_opt, given_src or (port.root if port is not None else None), port)
    filters = Filters(_csv(ops), _csv(dtypes), _csv(layouts), _csv(value_classes), profile=profile)
    try:
        cases = load_sweep(sweep, filters, shard=opts.shard, profile=profile)
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise SetupError(str(e.args[0]) if e.args else str(e))
    if not cases:
        raise SetupError("the filters select no case (see `parity list` and `parity run --help`)")
    if profile.name != "candle" and given_src is None and port is None and levels != "cpu":
        raise SetupError(f"profile {profile.name} has no bundled suite: give --hip-src DIR (the kernels to check), "
                         "or --levels cpu for its reference alone")
    hip_src = given_src if given_src else port.root if port is not None else DEFAULT_HIP_SRC
    cuda_src = Path(cuda_src) if cuda_src else None
    for p in [hip_src] + ([cuda_src] if cuda_src else []):
        if not p.is_dir():
            raise SetupError(f"kernel suite folder {p} does not exist")
    if port is not None:
        console.print(f"port: {port.describe()}", highlight=False, markup=False)
    if profile.name != "candle":
        console.print(f"profile: {profile.name} ({how})", highlight=False, markup=False)
    lvls = _levels(levels, wave, hip_src, cuda_src, case_timeout, opts.gpus, require, port, profile.name)
    reference_only = _check_something_verifies(lvls, levels, hip_src)
    if since:
        cases = _changed_cases(cases, since, [hip_src] + ([cuda_src] if cuda_src else []), quiet)
        if not cases:
            click.echo(f"no selected case uses a kernel defined in a file changed since {since}: nothing to run")
            sys.exit(0)
    runnable = [l for l in lvls if l.availability.available]
    _warn_ignored(opts, runnable)
    from parity.commands import load_baseline
    known = load_baseline(baseline_path, strict)
    folder = Path(resume) if resume else _run_folder(out, Path(sweep).stem)
    _write_run_file(folder, dict(sweep=sweep, ops=ops, dtypes=dtypes, layouts=layouts, value_classes=value_classes,
                                 levels=levels, wave=wave, hip_src=str(hip_src),
                                 cuda_src=str(cuda_src) if cuda_src else None,
                                 shard="/".join(map(str, opts.shard)) if opts.shard else None,
                                 profile_opt=profile_opt if profile_opt or profile.name == "candle"
                                 else profile.name if profile.source == "built-in" else profile.source))
    meta = {"sweep": sweep, "filters": {k: v for k, v in vars(filters).items() if v and k != "profile"},
            "hip_src": str(hip_src), "cuda_src": str(cuda_src) if cuda_src else None, "environment": environment(),
            "levels": [_level_meta(l) for l in lvls], "levels_requested": levels,
            "reference_only_requested": reference_only, "profile": {**profile.meta(), "how": how},
            "planned_rows": len(cases) * len(runnable)}
    if profile.name == "candle":                 # measured CUDA outputs of Candle's kernels
        meta["golden"] = golden_summary()
    if port is not None:
        meta["port"] = port.as_dict()
    static = next((l for l in runnable if l.name == "amd-static"), None)
    if static is not None:
        meta["amd_targets"] = list(static.executor.targets)
    kernels = set().union(*(c.kernels for c in cases))     # (a chain's: its steps', built once here)
    journal, stopped_by = _execute(opts, cases, kernels, runnable, folder, meta, console, resume)
    _report(opts, cases, kernels, meta, folder, console, lvls, known, strict, static, journal, stopped_by, port)


def _wave32_recheck(rows: list[dict], cases: list, lvls: list, meta: dict, console, port=None) -> list[dict]:
    """A kernel failing at wave 64 gets a handful of its failing cases run again at wave 32 (when the
    run had no wave-32 level): the evidence table then says whether the failure is a wave-size bug.
    The rows feed the evidence only: the run's table keeps the levels it asked for."""
    from parity.engine import run_cases
    from parity.levels import make
    from parity.wave_link import W32, W64, recheck_ids
    w64 = next((l for l in lvls if l.name == W64 and l.availability.available), None)
    if w64 is None or any(l.name == W32 for l in lvls):
        return []
    ids = set(recheck_ids(rows))
    if not ids:
        return []
    lv = make(W32, Path(meta["hip_src"]), None, gpus=None, port=port)
    if not lv.availability.available:
        return []
    todo = [c for c in cases if c.id in ids]
    console.print(f"wave 32 recheck: {len(todo)} of the cases failing at wave 64 ({len(ids)} picked)")
    try:
        got = run_cases(todo, lv.executor, lv.availability.device)
    finally:
        lv.executor.close()
    meta["wave32_recheck"] = {"cases": len(got), "failing": sum(r["verdict"] not in ("pass", "xfail") for r in got)}
    return got


def _level_meta(lv) -> dict:
    from parity.levels import role
    return {"level": lv.name, "available": lv.availability.available, "reason": lv.availability.reason,
            "device": lv.availability.device, "role": role(lv.name)}


def _warn_ignored(opts: RunOptions, runnable: list) -> None:
    """--time and --gpus need a GPU level: without one they are ignored, and the user is told so."""
    from parity.levels import EXECUTES, role
    gpu = [l for l in runnable if role(l.name) == EXECUTES]
    if opts.timing is not None and not gpu:
        click.echo("--time: no GPU level runs here, so nothing is timed", err=True)
    if opts.gpus and not gpu:
        click.echo(f"--gpus {opts.gpus}: no GPU level runs here; ignored", err=True)


def _write_run_file(folder: Path, options: dict) -> None:
    path = folder / RUN_FILE
    if path.exists():
        return
    try:
        path.write_text(json.dumps(options, indent=1) + "\n")
    except OSError as e:
        raise SetupError(f"cannot write in the run folder {folder}: {e.strerror or e}")


def _execute(opts: RunOptions, cases: list, kernels: set[str], runnable: list, folder: Path, meta: dict, console,
             resume):
    """Compile, then run every case on every runnable level, journalled; fills meta's times and
    `interrupted`. Returns the journal (its rows: the run's) and the interrupt that stopped it, or None."""
    from parity.engine import run_cases
    from parity.journal import Journal
    from parity.render import terminal
    try:
        journal = Journal(folder, resume=bool(resume), cases={c.id for c in cases}, levels={l.name for l in runnable})
    except OSError as e:
        raise SetupError(f"cannot write in the run folder {folder}: {e.strerror or e}")
    for why in journal.skipped:                # a damaged or foreign row is said, never counted
        click.echo(f"--resume {folder}: skipped {why}", err=True)
    interrupted: BaseException | None = None
    t0 = time.perf_counter()
    try:
        for lv in runnable:                        # workers warm up while compiling
            lv.prestart()
        with terminal.progress(console) as prog:
            for lv in runnable:                    # only the files the selected cases need, in parallel
                lv.precompile(kernels, prog)
            meta["compile_s"] = time.perf_counter() - t0
            for lv in runnable:
                todo = journal.todo(cases, lv.name)
                task = prog.add_task(lv.name, total=len(todo), status="", unit="cases")
                fails = pending = 0
                shown = time.perf_counter()

                def tick(row: dict, task=task) -> None:
                    nonlocal fails, pending, shown
                    journal.append(row)
                    fails += row["verdict"] not in ("pass", "xfail", "compiled")
                    pending += 1
                    if time.perf_counter() - shown > 0.1:    # ~10 updates/s: a nightly sweep has 60,000 rows
                        prog.update(task, advance=pending, status=f"[red]{fails} not passing[/]" if fails else "")
                        pending, shown = 0, time.perf_counter()
                try:
                    run_cases(todo, lv.executor, lv.availability.device, on_row=tick, timing=opts.timing,
                              every_fault=opts.every_fault)
                finally:
                    prog.update(task, advance=pending)
                    lv.executor.close()
    except KeyboardInterrupt as e:                 # Ctrl-C or SIGTERM: keep what finished, report, exit 130/143
        interrupted = e
        for lv in runnable:
            if lv.executor is not None:
                lv.executor.close()
    meta.setdefault("compile_s", time.perf_counter() - t0)
    meta["elapsed_s"] = time.perf_counter() - t0
    meta["resumed_rows"], meta["interrupted"] = journal.resumed, interrupted is not None
    return journal, interrupted


def _report(opts: RunOptions, cases: list, kernels: set[str], meta: dict, folder: Path, console, lvls: list, known,
            strict: bool, static, journal, signal_: BaseException | None, port) -> None:
    from parity.commands import apply_baseline, write_extra_reports
    from parity.outcome import of as outcome_of
    from parity.render import junit, markdown, terminal
    from parity.results import Results
    rows = journal.rows
    if opts.timing is not None:
        from parity.engine import add_ratios
        rows = add_ratios(rows)
    meta.update(opts.meta())
    res = apply_baseline(Results.from_rows(rows, meta), known, strict)
    from parity.wave_link import evidence as wave_evidence, markdown as wave_md, static_notes_markdown
    waves = wave_evidence(rows + _wave32_recheck(rows, cases, lvls, meta, console, port), meta["hip_src"])
    if waves:
        res.meta["wave_evidence"] = waves
    if static is not None:
        notes = static.executor.notes(kernels)
        if notes:
            res.meta["static_notes"] = notes
    res.to_json(folder / "results.json")
    from parity.render import timing as timing_report
    timing_md = timing_report.markdown(res)
    appendix = ((wave_md(waves) + "\n" if waves else "") + static_notes_markdown(res.meta.get("static_notes"))
                + (timing_md or ""))
    (folder / "summary.md").write_text(markdown.render(res, appendix=appendix))   # one 60,000-char budget
    write_extra_reports(res, folder)
    (folder / "junit.xml").write_text(junit.render(res))
    journal.close(finished=signal_ is None)
    terminal.show(res, console)
    outcome = outcome_of(res)
    counts = ", ".join(f"{n} {v}" for v, n in res.counts().items())
    runnable = [l for l in lvls if l.availability.available]
    click.echo(f"{len(cases)} cases x {len(runnable)} level(s) in {meta['elapsed_s']:.1f} s "
               f"({meta['compile_s']:.1f} s compiling): {counts or 'no rows'}")
    if console.quiet:                          # (terminal.show lists the levels otherwise)
        for line in outcome.not_run:
            click.echo(f"not run: {line}")
    click.echo(f"reports: {folder}/ (results.json, summary.md, junit.xml, index.html)")
    terminal.headline(outcome, console if not console.quiet else Console(highlight=False), brief=console.quiet)
    if signal_ is not None:
        click.echo(f"interrupted: {len(rows)} finished case(s) kept in {folder}/; resume with:\n  "
                   f"parity run --resume {folder}")
        sys.exit(143 if isinstance(signal_, Terminated) else 130)
    sys.exit(outcome.exit_code)


def _changed_cases(cases: list, ref: str, suites: list[Path], quiet: bool = False) -> list:
    """The cases whose kernels (or a host routine's kernels) are defined in files changed since ref;
    says on stderr which files chose them."""
    from parity.host.routines import is_library_kernel, suite_kernels
    from parity.since import SinceError, kernels_changed, selection_line
    kernels: set[str] = set()
    files: list[Path] = []
    try:
        for suite in suites:
            k, f = kernels_changed(ref, suite)
            kernels |= k
            files += f
    except SinceError as e:
        raise SetupError(str(e))
    # worked out once per distinct (op, dtype), not per case (a pr sweep: 26,000 cases, ~700 pairs);
    # a chain's step kernels and a host routine's own launches count
    needs: dict[tuple[str, str], set[str]] = {}
    for c in cases:
        if (c.op, c.dtype) not in needs:
            needs[c.op, c.dtype] = {k for n in c.kernels for k in (suite_kernels([n]) if is_library_kernel(n) else [n])}
    chosen = [c for c in cases if kernels & needs[c.op, c.dtype]]
    if not quiet:
        click.echo(selection_line(ref, files, kernels, len(chosen), len(cases)), err=True)
    return chosen


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["md", "junit", "json", "html"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here instead of stdout.")
@click.option("--baseline", "baseline_path", type=click.Path(path_type=Path), help="Known failures: become xfail.")
@click.option("--strict", is_flag=True, help="With --baseline: a baselined case that passes fails.")
def report(results: tuple[Path, ...], fmt: str, output: Path | None, baseline_path, strict: bool) -> None:
    """Render a results.json (or a run folder) as markdown, JUnit XML, JSON or the HTML scoreboard.

    Given several (a shell glob over runs), the newest run is rendered and named on stderr."""
    from parity.commands import apply_baseline, load_baseline
    from parity.render import html, junit, markdown
    from parity.results import Results, newest
    if output is not None and Path(output).is_dir():
        raise SetupError(f"-o {output} is a folder; name the file to write")
    try:
        path, note = newest(list(results))
        res = Results.from_json(path)
    except ValueError as e:
        raise SetupError(str(e))
    if note:
        click.echo(note, err=True)
    if res.meta.get("shards_missing"):
        click.echo(f"⚠️ partial merge: shard(s) {', '.join(res.meta['shards_missing'])} missing "
                   "(their cases are in no report)", err=True)
    res = apply_baseline(res, load_baseline(baseline_path, strict), strict)
    if fmt == "html":
        text = html.render(res)
    elif fmt == "md":
        from parity.render import timing as timing_report
        text = markdown.render(res, appendix=timing_report.markdown(res))
    elif fmt == "junit":
        text = junit.render(res)
    else:
        text = json.dumps({"schema": "parity.results/1", "meta": res.meta,
                           "results": json.loads(res.table.to_json(orient="records"))}, indent=1)
    if output:
        try:
            Path(output).write_text(text)
        except OSError as e:
            raise SetupError(f"cannot write {output}: {e.strerror or e}")
    else:
        click.echo(text)
    from parity.outcome import of as outcome_of
    sys.exit(outcome_of(res).file_exit_code)


# register the other commands: coverage, compile, doctor; baseline, diff, repro; run --time, bench, merge
from parity import cli_bench, cli_suite, commands  # noqa: E402,F401,I001
from parity import cli_peak  # noqa: E402,F401  (register peak)
from parity import cli_mutate  # noqa: E402,F401  (register mutate)

if __name__ == "__main__":
    main()
