"""Command line: parity list | run | report (and the suite tools: coverage, compile, doctor)."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from . import __version__

if TYPE_CHECKING:
    from .timing import TimingOptions

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

    def meta(self) -> dict:
        """The results.json meta entries of the options that were given."""
        out: dict = {}
        if self.timing is not None:
            out["timing"] = asdict(self.timing)
        if self.shard:
            out["shard"] = "/".join(map(str, self.shard))
        if self.gpus:
            out["gpus"] = self.gpus
        return out


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="parity")
def main() -> None:
    """parity proves, op by op, that a HIP port of Candle's CUDA kernels computes what the CUDA
    kernels and a CPU reference compute, over strided, sliced, broadcast, empty and huge layouts.

    Start with `parity run` (the smoke sweep on the bundled HIP suite), `parity list` to see the
    catalog, and `parity doctor` to see which levels this machine can run.
    """


@main.command("list")
@click.option("--ops", help="Glob patterns, comma separated: 'unary.*,cast'.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(ops: str | None, as_json: bool) -> None:
    """The op catalog: op, dtypes, kernel names, tolerance and CUDA semantics."""
    from .ops import select
    try:
        chosen = select(_csv(ops))
    except KeyError as e:
        raise SetupError(str(e.args[0]))
    if as_json:
        click.echo(json.dumps([{"op": o.name, "family": o.family, "dtypes": list(o.dtypes),
                                "kernels": [o.kernel_name(k) for k in o.dtypes], "abi": list(o.abi),
                                "semantics": o.semantics, "divergences": list(o.divergences)}
                               for o in chosen], indent=1))
        return
    from .termtable import Col, fit_table
    rows = []
    for o in chosen:
        names = [o.kernel_name(k) for k in o.dtypes]
        shown = ", ".join(names[:6]) + (f", … ({len(names)} kernels)" if len(names) > 6 else "")
        rows.append((o.name, shown, o.spec.tolerance(o.dtypes[0]), o.semantics))
    console = Console()
    cols = (Col("op", name=True), Col("kernels"), Col("tolerance", drop=2), Col("semantics", drop=1, prose=True))
    console.print(fit_table(console, cols, rows, show_lines=False))
    click.echo(f"{len(chosen)} ops, {sum(len(o.dtypes) for o in chosen)} kernels")


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
def run(time_cases: bool, time_mode: str, time_max_noise: float, gpus, shard, **kw) -> None:
    """Run a sweep of cases on every selected level and write the reports."""
    from .levels import resolve_gpus
    from .shard import parse_shard
    from .timing import TimingOptions
    try:
        opts = RunOptions(TimingOptions(mode=time_mode, max_noise=time_max_noise) if time_cases else None,
                          gpus, parse_shard(shard))
        if gpus is not None:
            resolve_gpus(gpus)
    except ValueError as e:
        raise SetupError(str(e))
    _run(opts, **kw)


def _run(opts: RunOptions, sweep: str, ops, dtypes, layouts, value_classes, levels: str, require, hip_src,
         cuda_src, out: Path, case_timeout: float, quiet: bool, baseline_path, strict: bool, resume, since,
         wave: str = "64") -> None:
    from .cases import Filters, load_sweep
    from .engine import run_cases
    from .golden import summary as golden_summary
    from .levels import ALL_LEVELS, DEFAULT_HIP_SRC, LEVELS, expand_waves, make, parse_waves
    from .render import junit, markdown, terminal
    from .results import Results, environment

    console = Console(stderr=False, quiet=quiet)
    filters = Filters(_csv(ops), _csv(dtypes), _csv(layouts), _csv(value_classes))
    try:
        cases = load_sweep(sweep, filters, shard=opts.shard)
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise SetupError(str(e.args[0]) if e.args else str(e))
    if not cases:
        raise SetupError("the filters select no case (see `parity list` and `parity run --help`)")
    names = LEVELS if levels == "auto" else _csv(levels) or []
    unknown = [n for n in names if n not in ALL_LEVELS]
    if unknown:
        raise SetupError(f"unknown level {unknown[0]!r}; known: {', '.join(ALL_LEVELS)}")
    try:
        names = expand_waves(names, parse_waves(wave))
    except ValueError as e:
        raise SetupError(str(e))
    hip_src = Path(hip_src) if hip_src else DEFAULT_HIP_SRC
    for p in [hip_src] + ([Path(cuda_src)] if cuda_src else []):
        if not p.is_dir():
            raise SetupError(f"kernel suite folder {p} does not exist")
    if since:
        cases = _changed_cases(cases, since, [hip_src] + ([Path(cuda_src)] if cuda_src else []))
        if not cases:
            click.echo(f"no selected case uses a kernel defined in a file changed since {since}: nothing to run")
            sys.exit(0)
    lvls = [make(n, hip_src, Path(cuda_src) if cuda_src else None, case_timeout, gpus=opts.gpus) for n in names]
    for r in _csv(require) or []:
        lv = next((l for l in lvls if l.name == r or l.name.split("/")[0] == r), None)
        if lv is None or not lv.availability.available:
            why = lv.availability.reason if lv else "not selected by --levels"
            raise SetupError(f"required level {r} is unavailable: {why}")
    runnable = [l for l in lvls if l.availability.available]
    # --- baseline, resumable journal, HTML/annotations: parity/commands.py, parity/journal.py
    from .commands import apply_baseline, load_baseline, write_extra_reports
    from .journal import Journal, resume_command
    known = load_baseline(baseline_path, strict)
    if resume and not Path(resume).is_dir():
        raise SetupError(f"--resume: run folder {resume} does not exist")
    folder = Path(resume) if resume else Path(out) / f"{Path(sweep).stem}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    journal = Journal(folder, resume=bool(resume))
    interrupted = False
    # ---

    meta = {"sweep": sweep, "filters": {k: v for k, v in vars(filters).items() if v}, "hip_src": str(hip_src),
            "cuda_src": str(cuda_src) if cuda_src else None, "environment": environment(),
            "levels": [{"level": l.name, "available": l.availability.available, "reason": l.availability.reason,
                        "device": l.availability.device} for l in lvls],
            "golden": golden_summary()}
    t0 = time.perf_counter()
    kernels = set().union(*(c.kernels for c in cases))
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
                fails += row["verdict"] not in ("pass", "xfail")
                pending += 1
                if time.perf_counter() - shown > 0.1:    # ~10 updates/s: a nightly sweep has 60,000 rows
                    prog.update(task, advance=pending, status=f"[red]{fails} not passing[/]" if fails else "")
                    pending, shown = 0, time.perf_counter()
            try:
                run_cases(todo, lv.executor, lv.availability.device, on_row=tick, timing=opts.timing)
            except KeyboardInterrupt:          # keep what finished; reports below, then exit 130
                interrupted = True
                break
            finally:
                prog.update(task, advance=pending)
                lv.executor.close()
    meta["elapsed_s"] = time.perf_counter() - t0
    meta["resumed_rows"], meta["interrupted"] = journal.resumed, interrupted
    rows = journal.rows
    if opts.timing is not None:
        from .engine import add_ratios
        rows = add_ratios(rows)
    meta.update(opts.meta())
    res = apply_baseline(Results.from_rows(rows, meta), known, strict)

    from .wave_link import evidence as wave_evidence, markdown as wave_md
    waves = wave_evidence(rows, hip_src)
    if waves:
        res.meta["wave_evidence"] = waves
    res.to_json(folder / "results.json")
    from .render import timing as timing_report
    timing_md = timing_report.markdown(res)
    appendix = (wave_md(waves) + "\n" if waves else "") + (timing_md or "")
    (folder / "summary.md").write_text(markdown.render(res, appendix=appendix))   # one 60,000-char budget
    write_extra_reports(res, folder)
    (folder / "junit.xml").write_text(junit.render(res))
    journal.close(finished=not interrupted)
    terminal.show(res, console)
    counts = ", ".join(f"{n} {v}" for v, n in res.counts().items())
    unavailable = [l.name for l in lvls if not l.availability.available]
    click.echo(f"{len(cases)} cases x {len(runnable)} level(s) in {meta['elapsed_s']:.1f} s "
               f"({meta['compile_s']:.1f} s compiling): {counts}"
               + (f"; unavailable (not run): {', '.join(unavailable)}" if unavailable else ""))
    click.echo(f"reports: {folder}/ (results.json, summary.md, junit.xml, index.html)")
    if interrupted:
        click.echo(f"interrupted: {len(journal.rows)} finished case(s) kept in {folder}/; resume with:\n  "
                   + resume_command(click.get_current_context(), folder))
        sys.exit(130)
    sys.exit(0 if res.ok else 1)


def _changed_cases(cases: list, ref: str, suites: list[Path]) -> list:
    """The cases whose kernels (or a host routine's kernels) are defined in files changed since ref;
    says on stderr which files chose them."""
    from .host.routines import is_library_kernel, suite_kernels
    from .since import SinceError, kernels_changed, selection_line
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
    from .commands import apply_baseline, load_baseline
    from .render import html, junit, markdown
    from .results import Results, newest
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
        from .render import timing as timing_report
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
    sys.exit(0 if res.ok else 1)


# register the other commands: coverage, compile, doctor; baseline, diff, repro; run --time, bench, merge
from . import cli_bench, cli_suite, commands  # noqa: E402,F401,I001
from . import cli_peak  # noqa: E402,F401  (register peak)
from . import cli_mutate  # noqa: E402,F401  (register mutate)

if __name__ == "__main__":
    main()
