"""Timing and scale commands: bench, merge
(`parity run` itself takes --time/--mode/--max-noise/--gpus/--shard, see cli/run.py):

* `parity bench`: timing-only sweep at bench shapes (cases/bench.toml) on GPU levels.
* `parity merge`: shard results -> one results.json, equal to an unsharded run case for case.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click
from rich.console import Console

from parity.cli.errors import report_folder
from parity.cli.options import (RESULTS, SetupError, csv_list, cuda_src_option, hip_src_option, not_a_folder,
                                not_an_input, not_into_a_run, read_results, selection_option, setup_errors, subject_of,
                                writing)
from parity.cli.params import Number, OutFolder, OutputFile, Seconds, Text

MODE = click.Choice(["cold", "hot"])


def _timing_options(mode: str, max_noise: float, time_cap: float = 2.0, min_samples: int = 10):
    from parity.timing import TimingOptions
    try:
        return TimingOptions(mode=mode, max_noise=max_noise, time_cap_s=time_cap, min_samples=min_samples)
    except ValueError as e:
        raise SetupError(str(e))


# ------------------------------------------------------------------------------ parity bench
GPU_LEVELS = ("hip-on-nvidia", "amd", "cuda", "cupy")


@click.command("bench")
@click.option("--sweep", type=Text(), default="bench", show_default=True,
              help="Sweep with bench-sized cases (cases/bench.toml).")
@selection_option("--ops", "Op glob patterns, comma separated.")
@selection_option("--dtypes", "Dtypes, comma separated.")
@selection_option("--layouts", "Layout classes, comma separated (bench-contiguous, bench-transposed).")
@selection_option("--levels", "GPU levels: auto (hip-on-nvidia and amd where available, plus cuda with --cuda-src, "
                  "else the cupy reference, for the HIP/CUDA ratio) or a list.", default="auto", show_default=True)
@hip_src_option
@cuda_src_option("CUDA kernel suite (the HIP-vs-CUDA ratio).")
@click.option("--mode", type=MODE, default="cold", show_default=True, help="cold: L2 flushed between samples; hot: back to back.")
@click.option("--max-noise", type=Number("a fraction between 0 and 1 (0.02 = 2%)", 0.0, 1.0, True), default=0.02,
              show_default=True, help="Stop sampling below this spread (IQR/(1.349*median)).")
@click.option("--time-cap", type=Seconds(), default=2.0, show_default=True,
              help="Seconds of sampling per case and level at most.")
@click.option("--out", type=OutFolder(), default=Path("reports"), show_default=True)
@click.option("--case-timeout", type=Seconds(), default=60.0, show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def bench_cmd(sweep, ops, dtypes, layouts, levels, hip_src, cuda_src, mode, max_noise, time_cap, out,
              case_timeout, quiet) -> None:
    """Time a sweep at bench shapes on GPU levels: each case is checked first (only passing cases
    are timed), then timed with device events. Writes results.json (with the environment) and
    summary.md with the timing table. Exit 0 when every case passed, 1 otherwise, 2 without a GPU level.
    """
    from dataclasses import asdict

    from parity.core import files
    from parity.render import terminal
    from parity.render import timing as timing_report
    from parity.run import session
    from parity.run.cases import Filters
    from parity.run.engine import add_ratios, run_cases_multi
    from parity.run.results import Results, environment
    report_folder(out)
    opts = _timing_options(mode, max_noise, time_cap)
    names = csv_list(levels) if levels != "auto" else list(GPU_LEVELS)
    if "cpu" in names:
        raise SetupError("parity bench times GPU levels only; the cpu level has no kernel time "
                         "(check correctness with `parity run`)")
    unknown = [n for n in names if n not in GPU_LEVELS]
    if unknown:
        raise SetupError(f"unknown GPU level {unknown[0]!r}; known: {', '.join(GPU_LEVELS)}")
    with setup_errors():
        cases = session.select_cases(sweep, Filters(csv_list(ops), csv_list(dtypes), csv_list(layouts), None))
    subj = subject_of(hip_src, cuda_src)
    if levels == "auto":                # the CUDA suite is the comparison when given, else the CuPy reference
        names = [n for n in names if n != ("cupy" if cuda_src else "cuda")]
    with setup_errors():
        lvls = session.build_levels(names, subj, case_timeout=case_timeout, named=None)
    runnable = [l for l in lvls if l.availability.available]
    if not runnable:
        why = "; ".join(f"{l.name}: {l.availability.reason}" for l in lvls)
        raise SetupError(f"no GPU level available to time on ({why})")
    with setup_errors():                      # before the timing: an --out taking no folder is said now, not after it
        folder = session.run_folder(out, f"bench-{Path(sweep).stem}")
    console = Console(quiet=quiet)
    meta = {"kind": "bench", "sweep": sweep, "timing": asdict(opts), "environment": environment(),
            "levels": [l.meta() for l in lvls]}
    t0 = time.perf_counter()
    with terminal.progress(console) as prog:
        session.start(runnable, set().union(*(c.kernels for c in cases)), prog)
        task = prog.add_task("bench", total=len(cases) * len(runnable), status="", unit="cases")
        try:
            rows = run_cases_multi(cases, [(l.executor, l.availability.device) for l in runnable], opts,
                                   on_row=lambda r: prog.update(task, advance=1, status=r["case_id"][:50]))
        finally:
            for l in runnable:
                l.executor.close()
    meta["elapsed_s"] = time.perf_counter() - t0
    res = Results.from_rows(add_ratios(rows), meta)
    res.to_json(folder / "results.json")
    files.write_text(folder / "summary.md", f"## parity bench: {len(cases)} cases x {len(runnable)} level(s), "
                     f"{mode} L2\n\n" + timing_report.markdown(res))
    if not quiet:
        timing_report.show(res, console)
    counts = terminal.counts_text(res)
    click.echo(f"{len(cases)} cases x {len(runnable)} level(s) in {meta['elapsed_s']:.1f} s: {counts}")
    click.echo(f"reports: {folder}/ (results.json, summary.md)")
    sys.exit(0 if res.ok else 1)


# ------------------------------------------------------------------------------ parity merge
MERGE_SCOPE = ("kind", "sweep", "filters", "levels", "hip_src", "cuda_src")
CONTENT_SCOPE = tuple(k for k in MERGE_SCOPE if not k.endswith("_src"))   # files with a suite_digest: no paths
MAX_CONFLICTS = 50                             # conflicts listed in meta (all are counted)


def merge_results(paths: list[Path], allow_partial: bool = False, read=None):
    """One run from its shards (or its GPU workers' files), keyed by (case ID, level).

    ValueError (one line) when the files are not parts of one run: another sweep, filters, levels
    or suite, shards of different splits, or — unless `allow_partial` — a shard K of N missing
    (the merged meta then names them in `shards_missing`). Rows of one key with different verdicts
    are a conflict: the worst verdict (results.ORDER: a failure before a pass) is kept whatever the
    argument order, and meta `merge_conflicts` lists them. `read`: how a file is read (default
    Results.from_json); the rows each file could not give are counted in meta `unread_rows`. A file
    named twice (a run folder and its results.json too) is read once; a shard in two files (run
    again) plans its cases once."""
    from parity.render.diff import scope_differences
    from parity.run.results import Results
    parts = [(Path(p), read(p) if read else Results.from_json(p)) for p in _distinct(paths)]
    for p, r in parts[1:]:
        a, b = parts[0][1].meta.get("suite_digest"), r.meta.get("suite_digest")
        if a and b:                           # the suites by their content: runners check out in other paths
            diff = scope_differences(parts[0][1].meta, r.meta, CONTENT_SCOPE)
            diff += [f"suite sources {a} vs {b}"] if a != b else []
        else:                                 # (an older parity's file: by their paths)
            diff = scope_differences(parts[0][1].meta, r.meta, MERGE_SCOPE)
        if diff:
            raise ValueError(f"cannot merge {p} with {parts[0][0]}: not parts of one run ({'; '.join(diff)})")
    held = [(s, p) for p, r in parts for s in _shards_of(r.meta)]
    missing = _missing_shards([s for s, _ in held], [p for _, p in held])
    if missing and not allow_partial:
        raise ValueError(f"shard(s) {', '.join(missing)} missing: merge every shard, or pass --allow-partial "
                         f"to write a merge that says so")
    rows, conflicts = _merge_rows(parts)
    metas = [r.meta for _, r in parts]
    meta = dict(metas[0]) if metas else {}
    for k in ("shard", "shards_missing", "merge_conflicts", "empty_shard_of", "planned_by_shard"):   # the first
        meta.pop(k, None)                                                                            # file's
    meta["merged_from"] = [str(p) for p, _ in parts]
    meta["shards"] = [s or None for s, _ in held]      # each file's (a shard in two: twice, and said so)
    meta["elapsed_s"] = sum(float(m.get("elapsed_s") or 0) for m in metas)
    meta["interrupted"] = any(m.get("interrupted") is True for m in metas)   # any shard's, not the first file's
    planned = [_planned_by_shard(m) for m in metas]    # a shard plans its own cases, a merge its shards'; a
    if all(p is not None for p in planned):             # GPU worker's file (no shard) the whole run's
        per_shard: dict[str, int] = {}
        for by in planned:
            for s, n in by.items():
                per_shard[s] = max(n, per_shard.get(s, 0))
        meta["planned_rows"] = sum(per_shard.values()) if all(s for s, _ in held) else max(per_shard.values())
        if all(s for s, _ in held):
            meta["planned_by_shard"] = per_shard
    else:
        meta.pop("planned_rows", None)
    unread = [e for m in metas for e in m.get("unread_rows", [])]
    if unread:
        meta["unread_rows"] = unread
    # an input that is itself a partial merge, or had conflicts, passes that on: merged again it was a
    # whole run (the missing shards' cases unverified, and no word of it)
    have = {s for s, _ in held}                         # (a shard missing there and given here is not missing)
    missing = sorted({*missing, *(k for m in metas for k in (m.get("shards_missing") or [])
                                  if isinstance(k, str) and k not in have)})
    earlier = [m.get("merge_conflicts") for m in metas if isinstance(m.get("merge_conflicts"), dict)]
    count = len(conflicts) + sum(c.get("count", 0) for c in earlier if isinstance(c.get("count"), int))
    if missing:
        meta["shards_missing"] = missing
    if count:
        first = conflicts + [x for c in earlier for x in (c.get("first") or []) if isinstance(c.get("first"), list)]
        meta["merge_conflicts"] = {"count": count, "rule": "the worst verdict is kept", "first": first[:MAX_CONFLICTS]}
    return Results.from_rows(rows, meta)


def _distinct(paths: list) -> list[Path]:
    """`paths` without a second name for a file already named (the same results.json again, or through
    its run folder or a link)."""
    import os

    from parity.run.results import results_path
    seen, out = set(), []
    for p in map(Path, paths):
        real = os.path.realpath(results_path(p))
        if real not in seen:
            seen.add(real)
            out.append(p)
    return out


def _planned_by_shard(meta: dict) -> dict[str, int] | None:
    """The case runs a results file planned, by shard ("" for a whole run); None where it does not say."""
    by = meta.get("planned_by_shard")
    if isinstance(by, dict) and by and all(isinstance(n, int) and not isinstance(n, bool) for n in by.values()):
        return {str(s): n for s, n in by.items()}
    n = meta.get("planned_rows")
    shards = _shards_of(meta)
    return {shards[0]: n} if isinstance(n, int) and not isinstance(n, bool) and len(shards) == 1 else None


def _shards_of(meta: dict) -> list[str]:
    """The K/N shards a results file holds: its own, or a merge's (a partial merge completed later with
    the shards it lacked); [""] for a whole run."""
    if meta.get("shard"):
        return [str(meta["shard"])]
    held = meta.get("shards")
    if isinstance(held, list) and held and all(isinstance(s, str) and s for s in held):
        return list(dict.fromkeys(held))
    return [""]


def _missing_shards(shards: list[str], paths: list[Path]) -> list[str]:
    """The K/N absent from `shards` ("" for a whole run); ValueError for splits that do not fit."""
    from parity.run.shard import parse_shard
    if not any(shards):
        return []
    if not all(shards):
        whole = paths[shards.index("")]
        raise ValueError(f"cannot merge {whole} (a whole run) with shards ({next(s for s in shards if s)})")
    try:
        split = [parse_shard(s) for s in shards]
    except ValueError as e:
        raise ValueError(f"meta {e}") from None
    ns = sorted({n for _, n in split})
    if len(ns) > 1:
        raise ValueError(f"cannot merge shards of different splits (/{' and /'.join(map(str, ns))})")
    have = {k for k, _ in split}
    return [f"{k}/{ns[0]}" for k in range(1, ns[0] + 1) if k not in have]


def _merge_rows(parts: list) -> tuple[list[dict], list[dict]]:
    """Rows keyed by (case ID, level), first appearance order; of rows with different verdicts for a
    key the worst is kept (never the later file's: argument order must not hide a failure)."""
    from parity.run.results import ORDER

    def rank(v) -> int:
        return ORDER.index(v) if v in ORDER else -1         # unknown: first (from_json refuses them)
    rows: dict[tuple, dict] = {}
    seen: dict[tuple, dict[str, str]] = {}                   # key -> {file: verdict}
    for p, r in parts:
        for row in r.records():
            key = (row["case_id"], row["level"])
            seen.setdefault(key, {})[str(p)] = str(row["verdict"])
            if key not in rows or rank(row["verdict"]) < rank(rows[key]["verdict"]):
                rows[key] = row
    conflicts = [{"case_id": k[0], "level": k[1], "verdicts": v, "kept": str(rows[k]["verdict"])}
                 for k, v in seen.items() if len(set(v.values())) > 1]
    return list(rows.values()), conflicts


@click.command("merge")
@click.argument("results", nargs=-1, required=True, type=RESULTS)
@click.option("-o", "--output", type=OutputFile(), required=True, help="Merged results.json to write.")
@click.option("--allow-partial", is_flag=True,
              help="Merge although shards of the split are missing; the merged meta and reports name them.")
def merge_cmd(results, output: Path, allow_partial: bool) -> None:
    """Merge results.json files (or run folders) of one run — its shards, or its GPU workers — into one.

    Exit 2 when they are not parts of one run (another sweep, filters, levels or suite) or a shard
    is missing (see --allow-partial), or -o is in a run's folder; 1 if the merge has failures. A case
    with different verdicts in two files keeps the worst one, and the conflict is reported."""
    not_into_a_run(output, "the merge")         # a run folder's results.json is that run's (--resume reads it)
    not_a_folder(output, f"the merged file, e.g. {Path(output) / 'results.json'}")
    not_an_input(output, results)
    try:
        res = merge_results(list(results), allow_partial, read_results)
    except ValueError as e:
        raise SetupError(str(e))
    with writing(output):                      # (to_json leaves no temporary file behind)
        res.to_json(output)
    from parity.render import terminal
    read = res.meta["merged_from"]
    again = f" ({len(results) - len(read)} named twice, read once)" if len(read) < len(results) else ""
    click.echo(f"{output}: {len(res.table)} rows from {len(read)} file(s){again}: "
               + terminal.counts_text(res))
    twice = sorted({s for s in res.meta["shards"] if s and res.meta["shards"].count(s) > 1})
    if twice:
        click.echo(f"note: shard(s) {', '.join(twice)} in more than one file: their rows are merged as one "
                   "shard's (a case with two verdicts keeps the worst)")
    missing = res.meta.get("shards_missing")
    if missing:
        click.echo(f"⚠️ partial merge: shard(s) {', '.join(missing)} missing — their cases are not in {output}")
    conflicts = res.meta.get("merge_conflicts")
    if conflicts:
        c = conflicts["first"][0]
        where = ", ".join(f"{v} in {f}" for f, v in c["verdicts"].items())
        click.echo(f"⚠️ {conflicts['count']} case(s) with different verdicts in different files; the worst verdict "
                   f"kept (e.g. {c['case_id']} @{c['level']}: {where} -> {c['kept']})")
    from parity.render.outcome import of as outcome_of, unread_counts
    unread, failing = unread_counts(res.meta)
    if unread:                                  # why a merge of passing rows can still exit 1
        click.echo(f"⚠️ {unread} unreadable row(s) skipped, {failing} of them with a failing verdict: "
                   "in no table, counted in the outcome")
    o = outcome_of(res)
    if o.stopped:                               # another reason it can: a shard that did not finish
        click.echo(f"⚠️ stopped early: {o.stopped} (a shard that did not finish: resume it, then merge again)")
    sys.exit(o.file_exit_code)


COMMANDS = [bench_cmd, merge_cmd]
