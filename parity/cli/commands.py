"""Commands around a run's results: report, baseline, diff, repro."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from parity.cli.options import (RESULTS, SetupError, cuda_src_option, hip_src_option, not_a_folder, not_an_input,
                                not_into_a_run, port_options, read_results, subject_of, writing)
from parity.cli.params import InputPath, Number, OutputFile, Text
from parity.core.text import one_line


# ------------------------------------------------------------------------------- report
@click.command()
@click.argument("results", nargs=-1, required=True, type=RESULTS)
@click.option("--format", "fmt", type=click.Choice(["md", "junit", "json", "html"]), default="md", show_default=True)
@click.option("-o", "--output", type=OutputFile(), help="Write here instead of stdout.")
@click.option("--baseline", "baseline_path", type=InputPath(), help="Known failures: become xfail.")
@click.option("--strict", is_flag=True, help="With --baseline: a baselined case that passes fails.")
def report(results: tuple[Path, ...], fmt: str, output: Path | None, baseline_path, strict: bool) -> None:
    """Render a results.json (or a run folder) as markdown, JUnit XML, JSON or the HTML scoreboard.

    Given several (a shell glob over runs), the newest run is rendered and named on stderr. Exits
    with the run's outcome: 0 pass, compiled or reference-only; 1 a case failing, or a run that
    stopped before every case ran (not a verified run); 2 nothing verified."""
    from parity.render import baseline as bl
    from parity.render import html, junit, markdown
    from parity.core import files
    from parity.run.results import newest
    if output is not None:
        not_a_folder(output, "the file to write")
        not_an_input(output, results)
    try:
        path, note = newest(list(results))
    except ValueError as e:
        raise SetupError(str(e))
    if output is not None:
        not_into_a_run(output, "the report", own=[path], fmt=fmt)   # (the rendered run's folder: its reports)
    if note:
        click.echo(one_line(note), err=True)
    res = read_results(path)
    if res.meta.get("shards_missing"):
        click.echo(f"⚠️ partial merge: shard(s) {', '.join(res.meta['shards_missing'])} missing "
                   "(their cases are in no report)", err=True)
    try:
        res = bl.apply(res, bl.with_stated_for(bl.load_optional(baseline_path, strict), res), strict)
    except ValueError as e:
        raise SetupError(str(e))
    if fmt == "html":
        text = html.render(res)
    elif fmt == "md":
        from parity.render import timing as timing_report
        text = markdown.render(res, appendix=timing_report.markdown(res))
    elif fmt == "junit":
        text = junit.render(res)
    else:
        text = res.json_text()                   # (as results.json writes it: inf stays "inf")
    if output:
        with writing(output):
            files.write_text(output, text, "-o")
    else:
        click.echo(text)
    from parity.render.outcome import of as outcome_of
    sys.exit(outcome_of(res).file_exit_code)


# ------------------------------------------------------------------------------- baseline
@click.group()
def baseline() -> None:
    """Known-failure baselines: accepted failures become xfail, baselined passes xpass.

    \b
    parity baseline update reports/smoke-*/results.json -o parity-baseline.toml
    parity run --baseline parity-baseline.toml [--strict]
    """


@baseline.command("update")
@click.argument("results", nargs=-1, required=True, type=RESULTS)
@click.option("-o", "--output", type=OutputFile(), required=True,
              help="Baseline file to write (.toml or .json); reasons of entries already there are kept.")
def baseline_update(results: tuple[Path, ...], output: Path) -> None:
    """Write the current failures of RESULTS as a baseline, with reason placeholders.

    RESULTS: a results.json or a run folder; given several (a shell glob over runs), the newest run
    is used. Entries for levels or cases these results did not run are kept as they are."""
    from parity.core import files
    from parity.render import baseline as bl
    from parity.run.results import newest
    not_a_folder(output, f"the baseline file to write (e.g. {output / 'known.toml'})")
    try:
        path, note = newest(list(results))
    except ValueError as e:
        raise SetupError(str(e))
    if note:
        click.echo(one_line(note), err=True)
    res = read_results(path)
    try:
        old_text = bl.read(output) if files.kind(output) != "nothing" else None   # (read once: parsed and kept)
        old = bl.parse(old_text, output) if old_text is not None else bl.Baseline([])
    except ValueError as e:
        raise SetupError(str(e))
    up = bl.update(old, res)
    with writing(output):
        kept = bl.dump(up.baseline, output, old, old_text)
    todo = sum(e.reason.startswith(bl.PLACEHOLDER) for e in up.baseline.entries)
    click.echo(f"{output}: {len(up.baseline.entries)} entries ({up.kept} kept from the old file, "
               f"{up.dropped} dropped as no longer failing, {up.not_covered} kept for levels/cases these "
               f"results did not run, {todo} need a reason)")
    for line in up.partly:
        click.echo(f"  {line}")
    if not kept:
        click.echo(f"  comments are not kept: {output} lays its entries out otherwise than one [[known]] table "
                   "each (rewritten without them)")


# ----------------------------------------------------------------------------------- diff
@click.command("diff")
@click.argument("old", type=RESULTS)
@click.argument("new", type=RESULTS)
@click.option("--slowdown", type=Number("greater than 1 (1.10 = 10% slower)", 1.0, lo_open=True), default=1.10,
              show_default=True, help="Kernel-time ratio NEW/OLD beyond which a case counts as a slowdown.")
@click.option("--min-ms", type=Number("a number of milliseconds, 0 or more", 0.0), default=0.0, show_default=True,
              help="Ignore timings where both runs are below this many milliseconds (noise).")
def diff_cmd(old: Path, new: Path, slowdown: float, min_ms: float) -> None:
    """Compare two results.json (or run folders): new failures, fixed cases, slowdowns.

    Exit 1 on a regression, 2 when the runs share no case. Runs of different sweeps, filters,
    levels or shards are compared on their common cases, and the report says so."""
    from parity.render.diff import diff, render
    a, b = read_results(old), read_results(new)
    d = diff(a, b, slowdown, min_ms)
    if not d.compared:                          # nothing in common: no verdict either way
        why = "; ".join(d.differs) or "no case in common"
        raise SetupError(f"nothing to compare: {old} and {new} share no case ({why}; "
                         f"{d.removed:,} cases only in OLD, {d.added:,} only in NEW)")
    click.echo(render(d), nl=False)
    if d.unread_failing:                        # (said in the diff too: a CI keeps stdout as the comment)
        click.echo(f"{new}: {d.unread_failing:,} unreadable row(s) with a failing verdict: a regression cannot be "
                   "ruled out", err=True)
    sys.exit(1 if d.regressions else 0)


# ---------------------------------------------------------------------------------- repro
@click.command("repro")
@click.argument("case_id", type=Text())
@click.option("--level", default="auto", show_default=True,
              help="hip-on-nvidia, hip-on-nvidia/w32, amd, cuda or cupy; amd-static compiles the kernel only; cpu "
                   "computes the reference only (no kernel runs); auto: hip-on-nvidia where an NVIDIA GPU is, else "
                   "amd on a ROCm GPU, else cpu.")
@hip_src_option
@cuda_src_option()
@click.option("-o", "--output", type=OutputFile(),
              help="Where to write the .npz (inputs' base buffers, layouts, expected, got, launch) "
                   "[default: reports/repro/<case id>.npz].")
@click.option("--no-snippet", is_flag=True, help="Do not print the CuPy replay script.")
@port_options
def repro_cmd(case_id: str, level: str, hip_src, cuda_src, output: Path | None, no_snippet: bool, profile_opt,
              port_file, port_source, port_include, port_force_include, port_define) -> None:
    """Re-run one case on one level, dump it to an .npz and print a CuPy replay script.

    Exit 0 when the case passes, 1 when it fails, 2 when the level is unavailable here or runs no
    kernel (cpu: the reference alone; amd-static: the kernel compiled, nothing ran; the .npz is still
    written, without `got` on amd-static, unless the file there holds an earlier run's `got`: it is
    kept) or the case ID or an option is wrong.
    """
    from parity.core import files
    from parity.core.row import Verdict
    from parity.core.suggest import unknown
    from parity.run import repro
    from parity.run.levels import ALL_LEVELS as LEVELS
    from parity.run.levels import REFERENCE, role
    if level not in (*LEVELS, "auto"):
        raise SetupError(unknown("level", level, [*LEVELS, "auto"]))
    for p in [hip_src, cuda_src]:
        if p is not None and not Path(p).is_dir():
            raise SetupError(f"kernel suite folder {p} does not exist")
    if output is not None:
        not_a_folder(output, f"the .npz to write, e.g. {Path(output) / repro.default_output(case_id).name}")
        output = repro.npz_path(output)        # the file written, so every line names it
        why = files.refusal(output, "--output", write=True)
        if why:
            raise SetupError(why)
    port = (port_file, port_source, port_include, port_force_include, port_define)
    base = subject_of(hip_src, cuda_src, profile_opt, *port)   # as `parity run`: a declared profile loaded first

    def subject(prof: str | None):                              # the case's own ABI profile, on the same suite
        prof = prof or "candle"
        return base if prof == base.profile.name else subject_of(hip_src, cuda_src, prof, *port)
    if level == "auto":
        level = repro.auto_level(base)
    from parity.profiles.kernels import ReferenceRaised
    try:
        r = repro.run(case_id, level, hip_src, cuda_src, output or repro.default_output(case_id), subject=subject)
    except ReferenceRaised as e:           # a declared reference that raised: the declaration's, as in `parity run`
        click.echo(f"# {case_id} on {level}: {Verdict.REFERENCE_ERROR} — {one_line(e)}", err=True)
        sys.exit(1)
    except (KeyError, ValueError) as e:
        raise SetupError(str(e.args[0]) if e.args else str(e))
    except OSError as e:                 # e.g. the .npz's folder cannot be made or written
        raise SetupError(f"{e.filename}: {e.strerror}" if e.filename else str(e))
    if not no_snippet:
        click.echo(r.snippet)
    reference_only = role(level) == REFERENCE and r.verdict == Verdict.PASS   # never a pass of a kernel that
    if reference_only:                                                         # did not run
        click.echo(f"# {r.case_id} on {level}: the reference alone, no kernel of the suite ran (an NVIDIA or ROCm "
                   "GPU runs it: --level hip-on-nvidia or amd)", err=True)
    else:
        click.echo(f"# {r.case_id} on {level}: {r.verdict}" + (f" — {r.message}" if r.message else ""), err=True)
    if r.kept:                           # a usage mistake never costs a captured output
        click.echo(f"# kept {r.npz} as it was: it holds the output of an earlier run of the kernel, and this one "
                   "ran none (-o names another file)", err=True)
    else:
        click.echo(f"# wrote {r.npz} (kernel {r.kernel}{', source ' + str(r.source) if r.source else ''})", err=True)
    if reference_only or r.verdict in (Verdict.UNAVAILABLE, Verdict.COMPILED):
        sys.exit(2)
    sys.exit(0 if r.verdict == Verdict.PASS else 1)


COMMANDS = [report, baseline, diff_cmd, repro_cmd]
