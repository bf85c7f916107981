"""Commands around a run's results: baseline, diff, repro (registered on `parity.cli.main`),
and the report steps `parity run` / `parity report` share (baseline, HTML, CI annotations)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from parity.cli import SetupError, main


# ------------------------------------------------------------- helpers used by cli.run / report
def load_baseline(path: Path | None, strict: bool = False):
    """The baseline at `path` (None without one); SetupError for a bad file or --strict alone."""
    if path is None:
        if strict:
            raise SetupError("--strict needs --baseline FILE")
        return None
    from parity import baseline
    try:
        return baseline.load(path)
    except ValueError as e:
        raise SetupError(str(e))


def apply_baseline(res, known, strict: bool = False):
    """`res` with known failures as xfail (unchanged when `known` is None)."""
    if known is None:
        return res
    from parity import baseline
    return baseline.apply(res, known, strict)


def write_extra_reports(res, folder: Path) -> list[str]:
    """index.html beside summary.md; GitHub annotations on stdout under GitHub Actions."""
    from parity.render import github, html
    html.write(res, folder)
    if github.enabled():
        for line in github.annotations(res):
            click.echo(line)
    return ["index.html"]


# ------------------------------------------------------------------------------- baseline
@main.group()
def baseline() -> None:
    """Known-failure baselines: accepted failures become xfail, baselined passes xpass.

    \b
    parity baseline update reports/smoke-*/results.json -o parity-baseline.toml
    parity run --baseline parity-baseline.toml [--strict]
    """


@baseline.command("update")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Baseline file to write (.toml or .json); reasons of entries already there are kept.")
def baseline_update(results: tuple[Path, ...], output: Path) -> None:
    """Write the current failures of RESULTS as a baseline, with reason placeholders.

    RESULTS: a results.json or a run folder; given several (a shell glob over runs), the newest run
    is used. Entries for levels or cases these results did not run are kept as they are."""
    from parity import baseline as bl
    from parity.results import Results, newest
    try:
        path, note = newest(list(results))
        res = Results.from_json(path)
        old = bl.load(output) if output.exists() else bl.Baseline([])
    except ValueError as e:
        raise SetupError(str(e))
    if note:
        click.echo(note, err=True)
    up = bl.update(old, res)
    try:
        bl.dump(up.baseline, output)
    except OSError as e:
        raise SetupError(f"cannot write {output}: {e.strerror or e}")
    todo = sum(e.reason.startswith(bl.PLACEHOLDER) for e in up.baseline.entries)
    click.echo(f"{output}: {len(up.baseline.entries)} entries ({up.kept} kept from the old file, "
               f"{up.dropped} dropped as no longer failing, {up.not_covered} kept for levels/cases these "
               f"results did not run, {todo} need a reason)")


# ----------------------------------------------------------------------------------- diff
@main.command("diff")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("--slowdown", type=float, default=1.10, show_default=True,
              help="Kernel-time ratio NEW/OLD beyond which a case counts as a slowdown.")
@click.option("--min-ms", type=float, default=0.0, show_default=True,
              help="Ignore timings where both runs are below this many milliseconds (noise).")
def diff_cmd(old: Path, new: Path, slowdown: float, min_ms: float) -> None:
    """Compare two results.json (or run folders): new failures, fixed cases, slowdowns.

    Exit 1 on a regression, 2 when the runs share no case. Runs of different sweeps, filters,
    levels or shards are compared on their common cases, and the report says so."""
    from parity.diff import diff, render
    from parity.results import Results
    if slowdown <= 1.0:
        raise SetupError("--slowdown must be greater than 1 (1.10 = 10% slower)")
    try:
        a, b = Results.from_json(old), Results.from_json(new)
    except ValueError as e:
        raise SetupError(str(e))
    d = diff(a, b, slowdown, min_ms)
    if not d.compared:                          # nothing in common: no verdict either way
        why = "; ".join(d.differs) or "no case in common"
        raise SetupError(f"nothing to compare: {old} and {new} share no case ({why}; "
                         f"{d.removed:,} cases only in OLD, {d.added:,} only in NEW)")
    click.echo(render(d), nl=False)
    sys.exit(1 if d.regressions else 0)


# ---------------------------------------------------------------------------------- repro
@main.command("repro")
@click.argument("case_id")
@click.option("--level", default="cpu", show_default=True, help="cpu, hip-on-nvidia, amd or cuda.")
@click.option("--hip-src", type=click.Path(path_type=Path), help="HIP kernel suite folder [default: bundled].")
@click.option("--cuda-src", type=click.Path(path_type=Path), help="CUDA kernel suite folder.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Where to write the .npz (inputs' base buffers, layouts, expected, got, launch) "
                   "[default: reports/repro/<case id>.npz].")
@click.option("--no-snippet", is_flag=True, help="Do not print the CuPy replay script.")
def repro_cmd(case_id: str, level: str, hip_src, cuda_src, output: Path | None, no_snippet: bool) -> None:
    """Re-run one case on one level, dump it to an .npz and print a CuPy replay script.

    Exit 0 when the case passes, 1 when it fails, 2 when the level is unavailable here (the .npz
    is still written, without `got`) or the case ID or an option is wrong.
    """
    from parity.levels import ALL_LEVELS as LEVELS
    from parity import repro
    from parity.row import Verdict
    from parity.suggest import unknown
    if level not in LEVELS:
        raise SetupError(unknown("level", level, LEVELS))
    for p in [hip_src, cuda_src]:
        if p is not None and not Path(p).is_dir():
            raise SetupError(f"kernel suite folder {p} does not exist")
    try:
        r = repro.run(case_id, level, hip_src, cuda_src, output or repro.default_output(case_id))
    except (KeyError, ValueError) as e:
        raise SetupError(str(e.args[0]) if e.args else str(e))
    except OSError as e:                 # e.g. the .npz's folder cannot be made or written
        raise SetupError(f"{e.filename}: {e.strerror}" if e.filename else str(e))
    if not no_snippet:
        click.echo(r.snippet)
    click.echo(f"# {r.case_id} on {level}: {r.verdict}" + (f" — {r.message}" if r.message else ""), err=True)
    click.echo(f"# wrote {r.npz} (kernel {r.kernel}{', source ' + str(r.source) if r.source else ''})", err=True)
    if r.verdict == Verdict.UNAVAILABLE:
        sys.exit(2)
    sys.exit(0 if r.verdict == Verdict.PASS else 1)
