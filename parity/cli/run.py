"""`parity run`: its options, --resume, and the reports it writes; the run itself is the session's
(parity.run.session)."""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from parity.cli.errors import report_folder, resumable
from parity.cli.options import (SetupError, csv_list, cuda_src_option, hip_src_option, port_options, selection_option,
                                setup_errors)
from parity.cli.params import InputPath, Number, OutFolder, Seconds, Text
from parity.core import ci_log
from parity.run.session import PORT_LISTS, RUN_KEYS

if TYPE_CHECKING:
    from parity.timing import TimingOptions

EPILOG_RUN = """\b
Examples:
  parity run                                  # smoke sweep on every level this machine has
  parity run --sweep pr --ops 'unary.*' --dtypes f16,bf16
  parity run --ops binary.minimum --layouts transposed,broadcast-leading
  parity run --hip-src ~/candle-rocm/kernels --require hip-on-nvidia
Exit codes: 0 every case passed, 1 a case failed (fail, missing, crash, ...), 2 usage or setup error,
3 parity's internal error (traceback saved in --out), 130/143 interrupted.
"""
RESUMED = RUN_KEYS + PORT_LISTS          # run.json's options: a resume takes them from there


@dataclass(frozen=True)
class RunOptions:
    """`parity run`'s options that reach below the CLI; passed down as arguments, never held globally."""
    timing: TimingOptions | None = None   # --time: time every passing case (None: no timing)
    gpus: str | None = None               # --gpus all|N: one worker per GPU (None: one worker)
    shard: tuple[int, int] | None = None  # --shard K/N, 1-based (None: every case)
    every_fault: bool = False             # --every-fault: launch cases on a path that already crashed

    @property
    def shard_text(self) -> str | None:
        """--shard as run.json and results.json say it ("2/4"), None for every case."""
        return "/".join(map(str, self.shard)) if self.shard else None

    def meta(self) -> dict:
        """The results.json meta entries of the options that were given."""
        out: dict = {}
        if self.timing is not None:
            out["timing"] = asdict(self.timing)
        if self.shard:
            out["shard"] = self.shard_text
        if self.gpus:
            out["gpus"] = self.gpus
        if self.every_fault:
            out["every_fault"] = True
        return out


@click.command(epilog=EPILOG_RUN)
@click.option("--sweep", type=Text(), default="smoke", show_default=True,
              help="Bundled sweep (smoke, pr, nightly) or a path to a sweep TOML file.")
@selection_option("--ops", "Op glob patterns, comma separated ('unary.*,cast').")
@selection_option("--dtypes", "Dtypes, comma separated (f16,bf16,fp8).")
@selection_option("--layouts", "Layout classes, comma separated (transposed,broadcast-leading).")
@selection_option("--values", "Value classes, comma separated (normal,special,out-of-range).", "value_classes")
@selection_option("--levels", "Levels to run: auto (cpu, hip-on-nvidia, amd, amd-static and cuda: each that this "
                  "machine can run, the others listed as not run) or a list of those and cupy (the CuPy reference, "
                  "not in auto); hip-on-nvidia/w32 is hip-on-nvidia at --wave 32.", default="auto",
                  show_default=True)
@selection_option("--wave", "Wavefront size of the hip-on-nvidia level: 64 (AMD CDNA, emulated as two NVIDIA warps "
                  "per wavefront), 32 (RDNA wave32 / NVIDIA warps; level hip-on-nvidia/w32) or 32,64 (both, as two "
                  "levels).", default="64", show_default=True)
@selection_option("--require", "Levels that must be available, comma separated; exit 2 if one is not.")
@hip_src_option
@cuda_src_option()
@port_options
@click.option("--out", type=OutFolder(), default=Path("reports"), show_default=True,
              help="Folder for this run's report folder (results.json, summary.md, junit.xml).")
@click.option("--case-timeout", type=Seconds(), default=30.0, show_default=True,
              help="Seconds a GPU launch may take before the case is a `timeout` (its worker is restarted).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or tables; just the summary line.")
@click.option("--baseline", "baseline_path", type=InputPath(),
              help="Known failures (TOML/JSON, see `parity baseline`): matching failures become xfail.")
@click.option("--strict", is_flag=True, help="With --baseline: a baselined case that passes (xpass) fails the run.")
@click.option("--resume", type=InputPath(file=False, folder=True),
              help="Resume an interrupted run in this report folder: finished cases are not run again.")
@click.option("--time", "time_cases", is_flag=True,
              help="Time every passing case on GPU levels (device events; kernel_ms = median, "
                   "time_p10/p90, gbps, pct_peak, launch_bound, samples columns).")
@click.option("--mode", "time_mode", type=click.Choice(["cold", "hot"]), default="cold", show_default=True,
              help="With --time: cold (L2 flushed, outputs restored before each sample) or hot (back to back).")
@click.option("--max-noise", "time_max_noise", type=Number("a fraction between 0 and 1 (0.02 = 2%)", 0.0, 1.0, True),
              default=0.02, show_default=True,
              help="With --time: sample until IQR/(1.349*median) is below this (or the time cap).")
@click.option("--gpus", type=Text(), default=None,
              help="Spread GPU levels over 'all' or N GPUs: one process per GPU prepares, launches (pinned with "
                   "CUDA_VISIBLE_DEVICES) and compares every Nth case.")
@click.option("--shard", type=Text(), default=None,
              help="Run shard K of N (K/N, 1-based; split by case-ID hash); join with `parity merge`.")
@click.option("--since", "since", type=Text(), metavar="REF",
              help="Only the cases whose kernels are defined in suite files changed since this git ref "
                   "(committed, staged, unstaged, untracked or git-ignored; a changed header selects the files "
                   "including it; the kernels a changed or deleted file defined at REF count too).")
@click.option("--every-fault", is_flag=True,
              help="Launch every case. By default, once a kernel crashes or times out on a code path (in place, "
                   "empty, a layout class), its later cases on that path are `not-run` (failing, counted, listed): "
                   "each fault costs a worker restart.")
def run(time_cases: bool, time_mode: str, time_max_noise: float, gpus, shard, every_fault: bool, **kw) -> None:
    """Run a sweep of cases on every selected level and write the reports."""
    from click.core import ParameterSource

    from parity.run.levels import resolve_gpus
    from parity.run.shard import parse_shard
    from parity.timing import TimingOptions
    ctx = click.get_current_context()
    given = [f for f, k in (("--mode", "time_mode"), ("--max-noise", "time_max_noise"))
             if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE]
    if given and not time_cases:                 # options of --time: said, never silently dropped
        click.echo(f"{' and '.join(given)}: {'an option' if len(given) == 1 else 'options'} of --time, which this "
                   "command does not give: nothing is timed", err=True)
    try:
        opts = RunOptions(TimingOptions(mode=time_mode, max_noise=time_max_noise) if time_cases else None,
                          gpus, parse_shard(shard), every_fault)
        if gpus is not None:
            resolve_gpus(gpus)
    except ValueError as e:
        raise SetupError(str(e))
    _guarded(_run, opts, **kw)


def _guarded(fn, opts: RunOptions, **kw) -> None:
    """Run `fn`; Ctrl-C and SIGTERM end it with the reports of what finished (exit 130/143: the
    command group's signal handling, parity.core.interrupts), a SessionError is a usage error
    (exit 2). An unexpected internal error is the `parity` group's (parity.cli.errors): exit 3, its
    traceback saved in the run's folder."""
    report_folder(kw.get("resume") or kw.get("out") or "reports")
    with setup_errors():
        fn(opts, **kw)


def _resume_options(folder: Path, given: dict) -> dict:
    """The options of the run in `folder` (its run.json), with its record of the sources (`sources`);
    an option given now that differs is an error."""
    from click.core import ParameterSource

    from parity.run.session import read_run_file
    saved = read_run_file(folder)
    ctx = click.get_current_context()
    out = dict(given)
    for k in RESUMED:
        if k not in saved:
            continue
        now = given.get(k)
        if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE and _norm(now) != _norm(saved[k]):
            flag = {"value_classes": "--values", "profile_opt": "--profile", "port_file": "--port"}.get(
                k, "--" + k.replace("_", "-"))
            raise SetupError(f"--resume {folder} continues a run with {flag} {_shown(saved[k])}; "
                             f"this command says {flag} {_shown(now)}: drop the option, or start a new run")
        out[k] = tuple(saved[k]) if isinstance(saved[k], list) else saved[k]
    out["sources"], out["selection"] = saved.get("sources"), saved.get("selection")
    return out


def _resumed(folder: Path, opts: RunOptions, given: dict) -> tuple[dict, RunOptions]:
    """(the options of the run in `folder`, the run options with its shard); exit 2 for a folder that
    is not a run folder parity can resume, or that takes no new file (its reports), before any case."""
    from click.core import ParameterSource

    from parity.run import session
    if not folder.is_dir():
        raise SetupError(f"--resume: run folder {folder} does not exist")
    out = given.pop("out", None)                 # (--out: where a new run's folder goes)
    if click.get_current_context().get_parameter_source("out") == ParameterSource.COMMANDLINE and \
            os.path.realpath(out) != os.path.realpath(folder.parent):
        raise SetupError(f"--resume {folder} writes into that run folder; --out {out} names another place: "
                         "drop --out")
    o = _resume_options(folder, given)          # (its run.json read, the run's own files checked first)
    session.check_writable(folder, "--resume")
    if o.get("shard") and not opts.shard:
        from parity.run.shard import parse_shard
        try:
            opts = RunOptions(opts.timing, opts.gpus, parse_shard(o["shard"]), opts.every_fault)
        except ValueError as e:
            raise SetupError(f"--resume {folder}: {folder / 'run.json'}: shard: {e}")
    return o, opts


def _norm(v):
    if isinstance(v, (list, tuple)):
        return tuple(str(x) for x in v) or None
    return None if v in (None, "") else str(v)


def _shown(v) -> str:
    v = _norm(v)
    return "(none)" if v is None else " ".join(v) if isinstance(v, tuple) else v


def _run(opts: RunOptions, sweep: str, ops, dtypes, layouts, value_classes, levels: str, require, hip_src,
         cuda_src, out: Path, case_timeout: float, quiet: bool, baseline_path, strict: bool, resume, since,
         wave: str = "64", port_file=None, port_source=(), port_include=(), port_force_include=(),
         port_define=(), profile_opt: str | None = None) -> None:
    from parity.render import baseline, terminal
    from parity.run import session
    from parity.run.cases import Filters
    from parity.run.shard import apply_shard

    if resume:
        o, opts = _resumed(Path(resume), opts, dict(sweep=sweep, ops=ops, dtypes=dtypes, layouts=layouts,
                                                   value_classes=value_classes, levels=levels, wave=wave,
                                                   hip_src=hip_src, cuda_src=cuda_src,
                                                   shard=opts.shard_text, profile_opt=profile_opt, since=since,
                                                   port_file=port_file, port_source=port_source,
                                                   port_include=port_include, port_force_include=port_force_include,
                                                   port_define=port_define, out=out))
        (sweep, ops, dtypes, layouts, value_classes, levels, wave, hip_src, cuda_src, profile_opt, since, port_file,
         port_source, port_include, port_force_include, port_define) = (o[k] for k in RESUMED if k != "shard")
    console = Console(stderr=False, quiet=quiet)
    subj = session.subject(hip_src, cuda_src, profile=profile_opt, port_file=port_file, port_source=port_source,
                           port_include=port_include, port_force_include=port_force_include, port_define=port_define)
    profile = subj.profile
    filters = Filters(csv_list(ops), csv_list(dtypes), csv_list(layouts), csv_list(value_classes), profile=profile)
    selected = session.select_cases(sweep, filters, profile=profile)
    if profile.name != "candle" and not subj.given and levels != "cpu":
        raise SetupError(f"profile {profile.name} has no bundled suite: give --hip-src DIR (the kernels to check), "
                         "or --levels cpu for its reference alone")
    subj.check_folders()
    if subj.port is not None:
        console.print(f"port: {subj.port.describe()}", highlight=False, markup=False)
    if profile.name != "candle":
        console.print(f"profile: {profile.name} ({subj.how})", highlight=False, markup=False)
    lvls = session.build_levels(levels, subj, wave, case_timeout, opts.gpus, require)
    reference_only = session.reference_only(lvls, levels, subj)
    sources = session.source_record(subj)
    if resume:                                 # (the reference alone runs the profile's code only)
        session.check_sources_unchanged(Path(resume), o, sources, reference_only)
    if since:                                  # before the shard: the shards split what changed
        selected, line = session.changed_cases(selected, since, subj)
        if not quiet:
            click.echo(line, err=True)
    cases = apply_shard(selected, opts.shard)
    shard_of = len(selected) if opts.shard and not cases else None     # (a shard may hold no case)
    for note in subj.discovery_notes():        # what discovery left out is said, never silently lost
        click.echo(f"note: {note}", err=True)
    selection = session.selection_record(cases)
    if resume:          # (before --since's "nothing to run": resumed after new commits, it selects other cases)
        session.check_selection_unchanged(Path(resume), o, selection)
    if since and not selected:
        click.echo(f"no selected case uses a kernel defined in a file changed since {since}: nothing to run")
        sys.exit(0)
    runnable = [lv for lv in lvls if lv.availability.available]
    _warn_ignored(opts, runnable)
    try:
        known = baseline.load_optional(baseline_path, strict)
    except ValueError as e:
        raise SetupError(str(e))
    folder = Path(resume) if resume else session.run_folder(out, Path(sweep).stem)
    session.write_run_file(folder, dict(
        sweep=sweep, ops=ops, dtypes=dtypes, layouts=layouts, value_classes=value_classes, levels=levels, wave=wave,
        hip_src=str(subj.hip_src), cuda_src=str(subj.cuda_src) if subj.cuda_src else None,
        shard=opts.shard_text,
        profile_opt=profile_opt if profile_opt or profile.name == "candle"
        else profile.name if profile.source == "built-in" else profile.source, since=since,
        port_file=str(port_file) if port_file else None, port_source=list(port_source),
        port_include=list(port_include), port_force_include=list(port_force_include),
        port_define=list(port_define), sources=sources, selection=selection))
    resumable(folder, f"parity run --resume {shlex.quote(str(folder))}")     # (its run.json written)
    static = next((lv for lv in runnable if lv.name == "amd-static"), None)
    meta = _run_meta(sweep, filters, subj, lvls, levels, reference_only, len(cases) * len(runnable), shard_of, static)
    meta["suite_digest"] = session.suite_digest(sources)     # what a merge of shards compares, not paths
    journal = session.open_journal(folder, cases, runnable, bool(resume))
    for why in journal.skipped:                # a damaged or foreign row is said, never counted
        click.echo(f"--resume {folder}: skipped {why}", err=True)
    kernels = set().union(*(c.kernels for c in cases))     # (a chain's: its steps', worked out once here)
    with terminal.progress(console) as prog:     # (finish: from its end on, a signal is recorded, not raised)
        stopped_by = session.execute(cases, kernels, runnable, journal, prog, meta, opts.timing, opts.every_fault,
                                     finish=True)
    _report(opts, cases, kernels, meta, folder, console, lvls, known, strict, static, journal, stopped_by, subj)


def _run_meta(sweep: str, filters, subj, lvls: list, levels: str, reference_only: bool, planned: int,
              shard_of: int | None, static) -> dict:
    """results.json's meta of a run, before it runs (the options' and timings' entries come after)."""
    from parity.run.results import environment
    from parity.suite.golden import summary as golden_summary
    profile = subj.profile
    meta = {"sweep": sweep, "filters": {k: v for k, v in vars(filters).items() if v and k != "profile"},
            "hip_src": str(subj.hip_src), "cuda_src": str(subj.cuda_src) if subj.cuda_src else None,
            "environment": environment(), "levels": [lv.meta() for lv in lvls], "levels_requested": levels,
            "reference_only_requested": reference_only, "profile": {**profile.meta(), "how": subj.how},
            "planned_rows": planned}
    if shard_of is not None:                     # a CI matrix wider than the selection: this job's share
        meta["empty_shard_of"] = shard_of        # is empty, and says so (not a pass, not a failure)
    if profile.name == "candle":                 # measured CUDA outputs of Candle's kernels
        meta["golden"] = golden_summary()
    if subj.port is not None:
        meta["port"] = subj.port.as_dict()
    if subj.discovery_notes():
        meta["discovery_notes"] = subj.discovery_notes()
    if static is not None:                       # (the amd-static level, when it runs)
        meta["amd_targets"] = list(static.executor.targets)
    return meta


def _wave32_recheck(rows: list[dict], cases: list, lvls: list, meta: dict, console, subj) -> list[dict]:
    """A kernel failing at wave 64 gets a handful of its failing cases run again at wave 32 (when the
    run had no wave-32 level): the evidence table then says whether the failure is a wave-size bug.
    The rows feed the evidence only: the run's table keeps the levels it asked for."""
    from parity.render.waves import W32, W64, recheck_ids
    from parity.run.engine import run_cases
    from parity.run.levels import make
    w64 = next((lv for lv in lvls if lv.name == W64 and lv.availability.available), None)
    if w64 is None or any(lv.name == W32 for lv in lvls):
        return []
    ids = set(recheck_ids(rows))
    if not ids:
        return []
    lv = make(W32, subj.hip_src, None, gpus=None, port=subj.port, suite=subj.suite)
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


def _warn_ignored(opts: RunOptions, runnable: list) -> None:
    """--time and --gpus need a GPU level: without one they are ignored, and the user is told so."""
    from parity.run.levels import EXECUTES, role
    gpu = [lv for lv in runnable if role(lv.name) == EXECUTES]
    if opts.timing is not None and not gpu:
        click.echo("--time: no GPU level runs here, so nothing is timed", err=True)
    if opts.gpus and not gpu:
        click.echo(f"--gpus {opts.gpus}: no GPU level runs here; ignored", err=True)


def _report(opts: RunOptions, cases: list, kernels: set[str], meta: dict, folder: Path, console, lvls: list, known,
            strict: bool, static, journal, signal_: BaseException | None, subj) -> None:
    """Write the reports of what finished and exit. Runs after `interrupts.finishing()`: a signal now
    is recorded, never raised, and one that came while the reports were written has them written
    again saying the run was interrupted (exit 130/143)."""
    from parity.core import interrupts
    from parity.render import terminal
    from parity.render.outcome import of as outcome_of
    signal_ = signal_ or interrupts.first()
    rows = journal.rows
    if opts.timing is not None:
        from parity.run.engine import add_ratios
        rows = add_ratios(rows)
    meta.update(opts.meta())
    meta["interrupted"] = signal_ is not None
    recheck = _wave32_recheck(rows, cases, lvls, meta, console, subj) if signal_ is None else []
    res = _write_reports(rows, recheck, meta, folder, kernels, known, strict, static, subj)
    if signal_ is None and interrupts.first() is not None:
        signal_ = interrupts.first()
        meta["interrupted"] = True
        res = _write_reports(rows, recheck, meta, folder, kernels, known, strict, static, subj, quiet=True)
    journal.close(finished=signal_ is None)
    terminal.show(res, console)
    outcome = outcome_of(res)
    counts = terminal.counts_text(res)
    runnable = [lv for lv in lvls if lv.availability.available]
    click.echo(f"{len(cases)} cases x {len(runnable)} level(s) in {meta['elapsed_s']:.1f} s "
               f"({meta['compile_s']:.1f} s compiling): {counts or 'no rows'}")
    if console.quiet:                          # (terminal.show lists the levels otherwise)
        for line in outcome.not_run:
            click.echo(f"not run: {line}")
    click.echo(f"reports: {folder}/ (results.json, summary.md, junit.xml, index.html)")
    terminal.headline(outcome, console if not console.quiet else Console(highlight=False), brief=console.quiet)
    if signal_ is not None:
        click.echo(f"interrupted: {len(rows)} finished case(s) kept in {folder}/; resume with:\n  "
                   f"parity run --resume {shlex.quote(str(folder))}")
        sys.exit(interrupts.exit_code(signal_))
    sys.exit(outcome.exit_code)


def _write_reports(rows: list[dict], recheck: list[dict], meta: dict, folder: Path, kernels: set[str], known,
                   strict: bool, static, subj, quiet: bool = False):
    """results.json, summary.md, junit.xml and the extra reports of these rows; the Results."""
    from parity.core import files
    from parity.render import baseline, junit, markdown
    from parity.render import timing as timing_report
    from parity.render.html import write_extra_reports
    from parity.render.waves import evidence as wave_evidence
    from parity.render.waves import markdown as wave_md
    from parity.render.waves import static_notes_markdown
    from parity.run.results import Results
    res = Results.from_rows(rows, meta)
    res = baseline.apply(res, baseline.with_stated_for(known, res), strict)
    waves = wave_evidence(rows + recheck, subj.suite)
    if waves:
        res.meta["wave_evidence"] = waves
    if static is not None:
        notes = static.executor.notes(kernels)
        if notes:
            res.meta["static_notes"] = notes
    res.to_json(folder / "results.json")
    timing_md = timing_report.markdown(res)
    appendix = ((wave_md(waves) + "\n" if waves else "") + static_notes_markdown(res.meta.get("static_notes"))
                + (timing_md or ""))
    files.write_text(folder / "summary.md", markdown.render(res, appendix=appendix))   # one 60,000-char budget
    for line in write_extra_reports(res, folder):
        if not quiet:
            ci_log.command(line)
    files.write_text(folder / "junit.xml", junit.render(res))
    return res


COMMANDS = [run]
