"""`parity mutate`: how many single-change kernel bugs a sweep catches, and the ones it misses (#17)."""
from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import click
from rich.console import Console

from parity.cli.errors import report_folder
from parity.cli.options import (SetupError, csv_list, hip_src_option, selection_option, setup_errors, subject_of,
                                writing)
from parity.cli.params import Count, InputPath, Number, OutFolder, Seconds, Text
from parity.core.files import open_append

EPILOG = """\b
Examples:
  parity mutate --list --max 40                  # the mutants that would run (no GPU needed)
  parity mutate --sweep pr --max 300 --min-score 0.95
  parity mutate --ops 'unary.*' --max 20 --level amd
  parity mutate --max 300 --resume reports/mutate-pr-20261125-195429   # go on after Ctrl-C
Exit codes: 0 score at or above --min-score, 1 below it (or no mutant counted where --min-score is above 0),
2 usage or setup error (no GPU level).
"""


@click.command("mutate", epilog=EPILOG)
@hip_src_option
@click.option("--sweep", type=Text(), default="pr", show_default=True, help="Bundled sweep or a sweep TOML file.")
@selection_option("--ops", "Op glob patterns, comma separated: only mutate files defining their kernels.")
@click.option("--max", "max_n", type=Count(1), help="Run at most N mutants, sampled over every file.")
@click.option("--seed", type=Number("a whole number, 0 or more", 0, integer=True), default=0, show_default=True,
              help="Sampling seed (reproducible).")
@click.option("--level", default="hip-on-nvidia", show_default=True, type=click.Choice(["hip-on-nvidia", "amd"]))
@click.option("--jobs", type=Count(1), default=None, help="Mutants worked on at once, each compiling in its own copy "
              "of the suite [default: cores].")
@click.option("--runners", type=Count(1), default=4, show_default=True, help="Mutants launching on the GPU at once.")
@click.option("--min-score", type=Number("a fraction of mutants killed, from 0 to 1 (0.95 = 95%)", 0.0, 1.0),
              default=0.0, show_default=True, help="Exit 1 below this score: killed / (killed + survived), 0..1.")
@click.option("--mutant-timeout", type=Seconds(), default=120.0, show_default=True,
              help="Seconds a mutant's cases may take.")
@click.option("--out", type=OutFolder(), default=Path("reports"), show_default=True)
@click.option("--equivalent", "equivalent_file", type=InputPath(),
              help="Mutants argued equivalent, with reasons [default: the suite's mutants-equivalent.toml].")
@click.option("--resume", type=InputPath(file=False, folder=True),
              help="Go on with an interrupted run in this report folder: the mutants its mutants.jsonl "
                   "holds are not run again (same --sweep, --max, --seed and --hip-src).")
@click.option("--list", "list_only", is_flag=True, help="Print the mutants that would run and stop.")
def mutate_cmd(hip_src, sweep, ops, max_n, seed, level, jobs, runners, min_score, mutant_timeout, out,
               equivalent_file, resume, list_only) -> None:
    """Mutation testing of a sweep: change a kernel in one small way, run the cases that reach it,
    and count the changes the sweep catches (score = killed / (killed + survived))."""
    from parity.core.resources import hip_mapping
    from parity.mutate.operators import mutants_of, sample, source_text
    from parity.mutate.targets import cases_for, targets
    from parity.run.cases import Filters
    from parity.run.session import check_report_files, check_writable, select_cases
    report_folder(resume or out)
    subj = subject_of(hip_src)
    if subj.profile.name != "candle":        # its sweeps and catalog are Candle's: no case would reach a kernel
        raise SetupError(f"parity mutate scores suites in Candle's kernel ABI; {subj.hip_src} has profile "
                         f"{subj.profile.name} ({subj.how}): check its kernels with parity run")
    if subj.port is not None:                # mutants compile as the suite folder's own files: not its build line
        raise SetupError(f"parity mutate compiles a suite folder's files as they are; {subj.hip_src} is a port built "
                         f"by its build line ({subj.port.describe()}), which mutate does not apply yet: its "
                         "mutants would be built otherwise than parity run builds the port")
    suite = subj.hip_src
    lv = None if list_only else _gpu_level(level, suite)     # before the seconds of sampling below
    if equivalent_file and not Path(equivalent_file).is_file():
        raise SetupError(f"--equivalent {equivalent_file}: no such file")
    if resume and not (Path(resume) / "mutants.jsonl").is_file():
        raise SetupError(f"--resume {resume}: no mutants.jsonl there (a parity mutate report folder)")
    if resume:
        with setup_errors():
            check_report_files(Path(resume))
            if not list_only:
                check_writable(Path(resume), "--resume")
    with setup_errors():
        cases = select_cases(sweep, Filters(csv_list(ops)), allow_empty=True)
    files = {f: t for f, t in targets(suite, [hip_mapping()]).items() if cases_for(t, cases)}
    if not files:
        raise SetupError("no suite file defines a kernel of the selected cases")
    from parity.mutate.scope import largest_case, unreachable, wide_spans
    largest = largest_case(cases)
    spans = {f: wide_spans(source_text(suite / f)) for f in files}
    reach, out_of_reach = [], Counter()
    for m in mutants_of(suite, list(files)):      # sample among what the sweep can catch at all
        why = unreachable(m, largest, spans[m.file])
        if why:
            out_of_reach[why] += 1
        else:
            reach.append(m)
    mutants = sample(reach, max_n, seed)
    from parity.mutate.scope import EQUIVALENT_FILE, load_argued
    try:
        table = load_argued(equivalent_file or suite / EQUIVALENT_FILE, level)
    except ValueError as e:
        raise SetupError(str(e))
    if list_only:                                # (a bad --equivalent is refused here too)
        for m in mutants:
            click.echo(f"{m.operator:20s} {m.diff()}")
        per_file = Counter(m.file for m in mutants)
        click.echo(f"{len(mutants)} mutants over {len(per_file)} files: "
                   + ", ".join(f"{f} {n}" for f, n in sorted(per_file.items())))
        for why, n in out_of_reach.items():
            click.echo(f"not sampled, out of the sweep's reach: {n} mutant{'s' if n != 1 else ''}: {why}")
        return
    previous = []
    scope = {"sweep": sweep, "ops": ops or "", "max": max_n, "seed": seed, "level": level, "hip_src": str(suite)}
    if resume:
        from parity.mutate.report import load_journal
        try:
            previous = load_journal(Path(resume) / "mutants.jsonl", {m.id: m for m in mutants}, scope)
        except ValueError as e:
            raise SetupError(str(e))
    _run(suite, files, cases, mutants, sweep, lv, jobs or os.cpu_count() or 1, runners, min_score,
         mutant_timeout, out, table, dict(out_of_reach), resume, previous, scope)


def _gpu_level(level: str, suite: Path):
    """The level mutants run on, or SetupError (exit 2, one line) saying why this machine has none."""
    from parity.run.levels import make
    lv = make(level, suite, None, isolate=False)
    if not lv.availability.available:
        raise SetupError(f"parity mutate needs a GPU level: {level} is unavailable ({lv.availability.reason})")
    return lv


def _run(suite: Path, files: dict, cases: list, mutants: list, sweep: str, lv, jobs: int,
         runners: int, min_score: float, mutant_timeout: float, out: Path, table: dict,
         out_of_reach: dict[str, int], resume: Path | None = None, previous: list = (), scope: dict | None = None
         ) -> None:
    from parity.core import interrupts
    from parity.mutate.report import record, summary, write
    from parity.mutate.run import GpuRunner, evaluate
    from parity.mutate.scope import argued
    from parity.ops import expected_kernels
    from parity.render import terminal
    from parity.run.session import run_folder
    level = lv.name
    known = expected_kernels()
    families = {f: ",".join(sorted({known[k][0].family for k in t.kernels if k in known})) for f, t in files.items()}
    console = Console()
    t0 = time.perf_counter()
    with setup_errors():                 # (a new folder, made before any mutant: exit 2 where --out takes none)
        folder = Path(resume) if resume else run_folder(out, f"mutate-{Path(sweep).stem}")
    outcomes, interrupted = [argued(o, table) for o in previous], False   # the arguments as they are now
    seen = {o.mutant.id for o in outcomes}
    todo = [m for m in mutants if m.id not in seen]
    runner = GpuRunner(suite, type(lv.executor), files, cases, jobs, mutant_timeout=mutant_timeout, runners=runners)
    todo.sort(key=runner.cost, reverse=True)     # longest first: the run ends when its last lane does
    with writing(folder / "mutants.jsonl"):    # (a link or a special file there: refused, not written through)
        journal_file = open_append(folder / "mutants.jsonl", "mutants journal", truncate=not resume)
    with journal_file as journal:        # each outcome as it comes
        if resume and journal.tell() and not (folder / "mutants.jsonl").read_bytes().endswith(b"\n"):
            journal.write("\n")          # a line cut short by a kill stays apart from the next one
        if not resume:                   # what --resume must match: another sweep's outcomes are not this one's
            journal.write(json.dumps({"scope": scope or {}}) + "\n")
        try:
            with terminal.progress(console) as prog:
                task = prog.add_task(level, total=len(mutants), completed=len(outcomes), status="", unit="mutants")
                tally: Counter = Counter(o.verdict for o in outcomes)

                def done(o) -> None:
                    if interrupts.first() is not None:   # finished under a signal, its compiles killed:
                        return                           # no outcome (--resume runs it again)
                    outcomes.append(o)
                    journal.write(json.dumps(record(o)) + "\n")
                    journal.flush()
                    tally[o.verdict] += 1
                    prog.update(task, advance=1, status=", ".join(f"{n} {v}" for v, n in tally.items()))
                evaluate(todo, lambda m: argued(runner.run_mutant(m), table), done, workers=len(runner.slots))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            runner.close()
    order = {m.id: i for i, m in enumerate(mutants)}
    outcomes.sort(key=lambda o: order[o.mutant.id])
    meta = {"sweep": sweep, "level": level, "device": lv.availability.device, "hip_src": str(suite),
            "mutants": len(mutants), "done": len(outcomes), "out_of_reach": out_of_reach, "interrupted": interrupted, "jobs": jobs,
            "runners": runners, "elapsed_s": time.perf_counter() - t0, "resumed_with": len(previous),
            "compile_s": runner.seconds["compile"], "wait_s": runner.seconds["wait"], "run_s": runner.seconds["run"],
            "cases_run": runner.cases_run,
            "failing_on_original": runner.original_failures()}
    s = summary(outcomes, families, meta)
    write(s, folder)
    pct = "n/a" if s["score"] is None else f"{100 * s['score']:.1f}%"
    again = f" ({len(previous)} from {folder}/mutants.jsonl, {len(outcomes) - len(previous)} this run)" if resume else ""
    click.echo(f"mutation score {pct}: " + ", ".join(f"{n} {v}" for v, n in s["counts"].items()) + again
               + f" in {meta['elapsed_s']:.0f} s (summed over {jobs} lanes: {meta['compile_s']:.0f} s compiling,"
               f" {meta['wait_s']:.0f} s waiting for one of {runners} runners, {meta['run_s']:.0f} s running"
               f" {meta['cases_run']} cases)")
    _warnings(s, meta, mutant_timeout)
    click.echo(f"reports: {folder}/ (mutants.json, mutants.jsonl, summary.md, index.html)")
    if interrupted:                      # lanes still compiling are not waited for
        click.echo(f"interrupted: {len(outcomes)} of {len(mutants)} mutants done; the score covers those "
                   f"(the same command with --resume {shlex.quote(str(folder))} runs the rest)")
        sys.stdout.flush()
        os._exit(130)
    if s["score"] is None and min_score > 0:     # nothing counted cannot meet a bar
        click.echo(f"no mutant was counted (killed or survived): the score cannot be held to --min-score {min_score:g}")
        sys.exit(1)
    sys.exit(0 if s["score"] is None or s["score"] >= min_score else 1)



def _warnings(s: dict, meta: dict, mutant_timeout: float) -> None:
    """What the score does not cover, then the survivors (the first 20; summary.md has them all)."""
    bad = meta["failing_on_original"]
    if bad:
        click.echo(f"warning: {len(bad)} case(s) fail on the unmutated suite and killed no mutant: "
                   + ", ".join(f"{k} ({v})" for k, v in list(bad.items())[:5]))
    slow = s["counts"].get("timeout", 0)
    if slow:
        click.echo(f"warning: {slow} mutant(s) timed out (--mutant-timeout {mutant_timeout:g} s): not counted, "
                   "the score does not cover them")
    for v in s["survivors"][:20]:
        click.echo(f"  survived {v['operator']:20s} {v['diff']}")


COMMANDS = [mutate_cmd]
