"""Timing and scale commands, registered on `parity.cli.main`
(`parity run` itself takes --time/--mode/--max-noise/--gpus/--shard, see cli.py):

* `parity bench`: timing-only sweep at bench shapes (cases/bench.toml) on GPU levels.
* `parity merge`: shard results -> one results.json, equal to an unsharded run case for case.
"""
from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console

from .cli import SetupError, _csv, main

MODE = click.Choice(["cold", "hot"])


def _timing_options(mode: str, max_noise: float, time_cap: float = 2.0, min_samples: int = 10):
    from .timing import TimingOptions
    try:
        return TimingOptions(mode=mode, max_noise=max_noise, time_cap_s=time_cap, min_samples=min_samples)
    except ValueError as e:
        raise SetupError(str(e))


# ------------------------------------------------------------------------------ parity bench
GPU_LEVELS = ("hip-on-nvidia", "amd", "cuda", "cupy")


@main.command("bench")
@click.option("--sweep", default="bench", show_default=True, help="Sweep with bench-sized cases (cases/bench.toml).")
@click.option("--ops", help="Op glob patterns, comma separated.")
@click.option("--dtypes", help="Dtypes, comma separated.")
@click.option("--layouts", help="Layout classes, comma separated (bench-contiguous, bench-transposed).")
@click.option("--levels", default="auto", show_default=True,
              help="GPU levels: auto (hip-on-nvidia and amd where available, plus cuda with --cuda-src, else the "
                   "cupy reference, for the HIP/CUDA ratio) or a list.")
@click.option("--hip-src", type=click.Path(path_type=Path), help="HIP kernel suite folder [default: bundled].")
@click.option("--cuda-src", type=click.Path(path_type=Path), help="CUDA kernel suite (the HIP-vs-CUDA ratio).")
@click.option("--mode", type=MODE, default="cold", show_default=True, help="cold: L2 flushed between samples; hot: back to back.")
@click.option("--max-noise", type=float, default=0.02, show_default=True, help="Stop sampling below this spread (IQR/(1.349*median)).")
@click.option("--time-cap", type=float, default=2.0, show_default=True, help="Seconds of sampling per case and level at most.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True)
@click.option("--case-timeout", type=float, default=60.0, show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def bench_cmd(sweep, ops, dtypes, layouts, levels, hip_src, cuda_src, mode, max_noise, time_cap, out,
              case_timeout, quiet) -> None:
    """Time a sweep at bench shapes on GPU levels: each case is checked first (only passing cases
    are timed), then timed with device events. Writes results.json (with the environment) and
    summary.md with the timing table. Exit 0 when every case passed, 1 otherwise, 2 without a GPU level.
    """
    from .cases import Filters, load_sweep
    from .engine import add_ratios, run_cases_multi
    from .levels import DEFAULT_HIP_SRC, make
    from .render import terminal
    from .render import timing as timing_report
    from .results import Results, environment
    from dataclasses import asdict
    opts = _timing_options(mode, max_noise, time_cap)
    names = _csv(levels) if levels != "auto" else list(GPU_LEVELS)
    if "cpu" in names:
        raise SetupError("parity bench times GPU levels only; the cpu level has no kernel time "
                         "(check correctness with `parity run`)")
    unknown = [n for n in names if n not in GPU_LEVELS]
    if unknown:
        raise SetupError(f"unknown GPU level {unknown[0]!r}; known: {', '.join(GPU_LEVELS)}")
    try:
        cases = load_sweep(sweep, Filters(_csv(ops), _csv(dtypes), _csv(layouts), None))
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise SetupError(str(e.args[0]) if e.args else str(e))
    if not cases:
        raise SetupError("the filters select no case")
    hip = Path(hip_src) if hip_src else DEFAULT_HIP_SRC
    if levels == "auto":                # the CUDA suite is the comparison when given, else the CuPy reference
        names = [n for n in names if n != ("cupy" if cuda_src else "cuda")]
    lvls = [make(n, hip, Path(cuda_src) if cuda_src else None, case_timeout) for n in names]
    runnable = [l for l in lvls if l.availability.available]
    if not runnable:
        why = "; ".join(f"{l.name}: {l.availability.reason}" for l in lvls)
        raise SetupError(f"no GPU level available to time on ({why})")
    console = Console(quiet=quiet)
    meta = {"kind": "bench", "sweep": sweep, "timing": asdict(opts), "environment": environment(),
            "levels": [{"level": l.name, "available": l.availability.available, "reason": l.availability.reason,
                        "device": l.availability.device} for l in lvls]}
    t0 = time.perf_counter()
    for lv in runnable:                        # workers warm up while compiling and preparing
        lv.prestart()
    with terminal.progress(console) as prog:
        for lv in runnable:                    # only the files these cases need, in parallel
            lv.precompile(set().union(*(c.kernels for c in cases)), prog)
        task = prog.add_task("bench", total=len(cases) * len(runnable), status="", unit="cases")
        try:
            rows = run_cases_multi(cases, [(l.executor, l.availability.device) for l in runnable], opts,
                                   on_row=lambda r: prog.update(task, advance=1, status=r["case_id"][:50]))
        finally:
            for l in runnable:
                l.executor.close()
    meta["elapsed_s"] = time.perf_counter() - t0
    res = Results.from_rows(add_ratios(rows), meta)
    folder = Path(out) / f"bench-{Path(sweep).stem}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    res.to_json(folder / "results.json")
    (folder / "summary.md").write_text(f"## parity bench: {len(cases)} cases x {len(runnable)} level(s), "
                                       f"{mode} L2\n\n" + timing_report.markdown(res))
    if not quiet:
        timing_report.show(res, console)
    counts = ", ".join(f"{n} {v}" for v, n in res.counts().items())
    click.echo(f"{len(cases)} cases x {len(runnable)} level(s) in {meta['elapsed_s']:.1f} s: {counts}")
    click.echo(f"reports: {folder}/ (results.json, summary.md)")
    sys.exit(0 if res.ok else 1)


# ------------------------------------------------------------------------------ parity merge
def merge_results(paths: list[Path]):
    """Rows of every file, keyed by (case ID, level), first appearance order; a later file's row
    replaces an earlier one for the same key. Meta: the first file's, plus provenance."""
    from .results import Results
    rows: dict[tuple, dict] = {}
    metas = []
    for p in paths:
        r = Results.from_json(p)
        metas.append(r.meta)
        for row in r.table.to_dict(orient="records"):
            rows[(row["case_id"], row["level"])] = row
    meta = dict(metas[0]) if metas else {}
    meta["merged_from"] = [str(p) for p in paths]
    meta["shards"] = [m.get("shard") for m in metas]
    meta["elapsed_s"] = sum(float(m.get("elapsed_s") or 0) for m in metas)
    meta.pop("shard", None)
    return Results.from_rows(list(rows.values()), meta)


@main.command("merge")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Merged results.json to write.")
def merge_cmd(results, output: Path) -> None:
    """Merge results.json files (shards of one sweep, or GPU workers) into one; exit 1 if it has failures."""
    try:
        res = merge_results(list(results))
    except ValueError as e:
        raise SetupError(str(e))
    res.to_json(output)
    click.echo(f"{output}: {len(res.table)} rows from {len(results)} file(s): "
               + ", ".join(f"{n} {v}" for v, n in res.counts().items()))
    sys.exit(0 if res.ok else 1)
