"""Suite-facing commands: coverage, compile (amd-static table), doctor."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.text import Text as Styled

from parity.cli.options import (SetupError, csv_list, cuda_src_option, discover_folder, hip_src_option, port_options,
                                selection_option, setup_errors, subject_of)
from parity.cli.params import InputPath, Text
from parity.core.text import one_line
from parity.render.table import Col, fit_table


@click.command("coverage")
@port_options
@hip_src_option
@cuda_src_option("Also check a CUDA suite (e.g. candle-kernels/src).")
@selection_option("--ops", "Only these op patterns (e.g. 'unary.*,cast').")
@click.option("--all", "show_all", is_flag=True, help="List present kernels too, not only the problems.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable rows.")
@click.option("--drift", is_flag=True, help="With --cuda-src (Candle's candle-kernels/src): what changed upstream since "
                                            "the catalog caught up — kernels new upstream, gone upstream, or with "
                                            "changed parameters — one line each with file:line; exit 1 on any.")
@click.option("--snapshot", "snapshot_file", type=InputPath(), metavar="FILE",
              help="With --drift: the record of upstream to compare against [default: the bundled "
                   "parity/data/candle-upstream.json].")
@click.option("--update-snapshot", is_flag=True, help="With --drift: after catching the catalog up, write --cuda-src's "
                                                      "kernels as the new record (to --snapshot, else the bundled one).")
@click.option("--snapshot-source", metavar="TEXT", help="With --update-snapshot: what the record says it was taken "
                                                        "from, e.g. 'huggingface/candle 2a13b0f3ff62 (2026-08-14) "
                                                        "candle-kernels/src' [default: the --cuda-src path].")
def coverage_cmd(hip_src, cuda_src, ops, show_all, as_json, drift, snapshot_file, update_snapshot, snapshot_source,
                 port_file, port_source, port_include,
                 port_force_include, port_define, profile_opt=None) -> None:
    """Which kernels the catalog expects are present, missing, extra or mis-declared in each suite.

    A missing kernel comes with the closest name the suite does define (a suite with `utan_f32`
    but no `utanh_f32` is told so). Exit 1 when anything is missing or mismatched. The catalog is
    the ABI profile's (--profile; by default the one the suite's kernel names belong to).
    """
    from parity.suite.coverage import coverage, summary
    if snapshot_source and not update_snapshot:
        raise SetupError("--snapshot-source goes with --drift --update-snapshot")
    if drift:
        _drift(cuda_src, as_json, profile_opt, snapshot_file, update_snapshot, snapshot_source)
    if snapshot_file or update_snapshot:
        raise SetupError("--snapshot and --update-snapshot go with --drift")
    subj = subject_of(hip_src, cuda_src, profile_opt, port_file, port_source, port_include, port_force_include,
                      port_define)
    profile, how = subj.profile, subj.how
    try:
        wanted = {o.name for o in profile.select(csv_list(ops))} if ops else None
    except KeyError as e:
        raise SetupError(str(e.args[0]))
    expected = {k: v for k, v in profile.expected_kernels().items() if wanted is None or v[0].name in wanted}
    typed = profile.typed_signatures()
    suites = [("hip", subj.hip_src)] + ([("cuda", subj.cuda_src)] if subj.cuda_src else [])
    bad = False
    out = {}
    console = Console()
    for label, folder in suites:
        with setup_errors():
            suite = subj.suite() if label == "hip" else discover_folder(folder)
        for note in suite.notes:              # what discovery left out is said, never silently lost
            click.echo(f"note: {one_line(note)}", err=True)
        rows = coverage(suite, expected, typed)
        if wanted is not None:
            rows = [r for r in rows if r.status != "extra"]
        s = summary(rows)
        bad |= bool(s.get("missing") or s.get("signature-mismatch"))
        out[label] = {"suite": str(folder), "profile": profile.name, "summary": s,
                      "rows": [r.as_dict() for r in rows]}
        if as_json:
            continue
        shown = [r for r in rows if show_all or r.status != "present"]
        # the header is a line of its own: as a table title rich would wrap it to the table's width
        named = "" if profile.name == "candle" and not profile_opt else f" (profile {profile.name}: {how})"
        console.print(f"[bold]{label} suite[/] {escape(one_line(folder))}{escape(one_line(named))}: "
                      + ", ".join(f"{n} {k}" for k, n in s.items()),
                      soft_wrap=True, highlight=False)
        if not shown:
            continue
        style = {"missing": "red", "signature-mismatch": "red", "extra": "yellow", "present": "green"}
        cols = (Col("kernel", name=True), Col("op", drop=4), Col("dtype", drop=3), Col("status", name=True),
                Col("suggestion / note"), Col("where", drop=2))
        console.print(fit_table(console, cols, [
            (r.kernel, r.op, r.dtype, Styled(r.status, style=style.get(r.status, "")), r.suggestion,
             _relative(r.where, folder)) for r in shown]))
    if as_json:
        click.echo(json.dumps(out, indent=1))
    sys.exit(1 if bad else 0)


@click.command("compile")
@port_options
@hip_src_option
@selection_option("--amd-arch", "AMD targets, comma separated (one hipcc cannot compile for: exit 2).",
                  default="gfx90a,gfx908,gfx1030,gfx940", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable rows.")
@click.option("--summary", "per_file", is_flag=True, help="One row per source file and target (max registers).")
@click.option("--since", type=Text(), metavar="REF",
              help="Only the sources changed since this git ref (or including a changed header): the pre-commit "
                   "check on a machine without a GPU.")
def compile_cmd(hip_src, amd_arch, as_json, per_file, since, port_file, port_source, port_include,
                port_force_include, port_define, profile_opt=None) -> None:
    """The amd-static level: compile every HIP source for AMD targets with hipcc (no GPU needed)
    and report per kernel VGPRs, SGPRs, spills, LDS, scratch, wavefront size and occupancy.

    Exit 1 on a compile error, any spill or a kernel a target's code object lacks (left out by an #if);
    2 when hipcc is missing (see `parity doctor`), cannot compile for a target given with --amd-arch
    (a default it lacks is an `unavailable` row) or a compile ran past PARITY_COMPILE_TIMEOUT (not
    checked: no pass).
    """
    from click.core import ParameterSource

    from parity.suite.amd_static import hipcc, target_refusal
    if hip_src is not None and not Path(hip_src).is_dir():
        raise SetupError(f"kernel suite folder {hip_src} does not exist")
    targets = tuple(dict.fromkeys(csv_list(amd_arch)))
    # (a bad --profile is an error here too, though the compile is the same for every profile)
    subj = subject_of(hip_src, None, profile_opt, port_file, port_source, port_include, port_force_include,
                      port_define)
    with setup_errors():
        folder, port, suite = subj.hip_src, subj.port, subj.suite()
    for note in suite.notes:
        click.echo(f"note: {note}", err=True)
    if not suite.sources:                         # 0 kernels x 0 targets is no pass (`parity run`'s "nothing")
        raise SetupError(f"no HIP source in {folder}: nothing to compile (is it the suite's folder?)")
    if not hipcc():
        raise SetupError("hipcc not found: apt-get install hipcc libamdhip64-dev (Debian 12), then retry")
    # Targets asked for must compile (a typo would pass as an `unavailable` row and "0 compile errors");
    # a default this hipcc lacks stays such a row.
    if click.get_current_context().get_parameter_source("amd_arch") != ParameterSource.DEFAULT:
        why = target_refusal(targets)
        if why:
            raise SetupError(f"--amd-arch: {why}")
    if since:
        from parity.suite.since import SinceError, sources_changed
        try:
            hit, files = sources_changed(since, folder, port, lambda: suite)
        except SinceError as e:
            raise SetupError(str(e))
        changed = {p.resolve() for p in hit}
        total = len(suite.sources)
        suite.sources = [s for s in suite.sources if Path(s).resolve() in changed]
        names = ", ".join(p.name for p in files[:6]) + (f", … {len(files) - 6} more" if len(files) > 6 else "")
        if not as_json:
            click.echo(f"--since {since}: {len(files)} changed file{'s' * (len(files) != 1)}"
                       + (f" ({names})" if files else "") + f": {len(suite.sources)} of {total} sources", err=True)
        if not suite.sources:                     # (--json: still JSON on stdout, the rows of nothing)
            click.echo("[]" if as_json else f"no HIP source changed since {since}: nothing to compile")
            if as_json:
                click.echo(f"no HIP source changed since {since}: nothing to compile", err=True)
            sys.exit(0)
    rows = _analyze_with_progress(suite, targets, log_lines=not as_json, port=port)
    if not rows:
        raise SetupError(f"{len(suite.sources)} HIP source(s) in {folder}, no kernel in them: nothing compiled")
    if all(r.status == "unavailable" for r in rows):  # nothing compiled is no pass (`parity run` says so too)
        why = "; ".join(dict.fromkeys(f"{r.arch}: {one_line(r.message)[:300]}" for r in rows))
        raise SetupError(f"nothing was compiled: {why}")
    errors = [r for r in rows if r.status == "compile-error"]
    missing = [r for r in rows if r.status == "missing"]     # defined, yet not in a target's code object
    unchecked = [r for r in rows if r.status == "timeout"]        # a compile past PARITY_COMPILE_TIMEOUT
    spills = [r for r in rows if (r.vgpr_spill or 0) + (r.sgpr_spill or 0) > 0]
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=1))
    else:
        _print_static(rows, per_file)
        click.echo(f"{len({r.kernel for r in rows})} kernels x {len({r.arch for r in rows})} targets: "
                   f"{len(errors)} compile errors, {len(spills)} kernel/target pairs with spills"
                   + (f", {len(missing)} kernel/target pairs missing from the code object" if missing else ""))
        for r in {r.message: r for r in errors}.values():
            click.echo(f"compile-error ({r.arch}): {r.message.strip()[:2000]}")
        for r in missing:
            click.echo(f"missing ({r.arch}): {r.message}")
        for r in {r.message: r for r in unchecked}.values():
            click.echo(f"not checked ({r.arch}): {one_line(r.message)[:500]}")
    sys.exit(1 if errors or spills or missing else 2 if unchecked else 0)   # (not checked is no pass)


def _analyze_with_progress(suite, targets: tuple[str, ...], log_lines: bool = True, port=None) -> list:
    """amd_static.analyze with progress on stderr (a cold cache compiles 32 files x 4 targets: 90 s
    on 2 cores): a bar on a terminal, else a line every few seconds (log_lines=False: none, for
    --json read by a script)."""
    import threading

    from parity.render import terminal
    from parity.suite.amd_static import analyze
    console = Console(stderr=True)
    line = {"extra_flags": port.hipcc_flags(), "include_dirs": list(port.include_dirs)} if port is not None else {}
    if not console.is_terminal and not log_lines:
        return analyze(suite, targets, **line)
    lock = threading.Lock()
    with terminal.progress(console) as prog:
        task: list[int] = []

        def compiled(done: int, total: int, what: str) -> None:
            with lock:                                   # called from the compile threads
                if not done:
                    task.append(prog.add_task("compile amd-static", total=total, status="", unit="file x target"))
                else:
                    prog.update(task[0], advance=1, status=what)
        return analyze(suite, targets, on_compiled=compiled, **line)


def _drift(cuda_src: Path | None, as_json: bool, profile_opt: str | None = None, snapshot_file: Path | None = None,
           update: bool = False, source: str | None = None) -> None:
    """`coverage --drift`: what changed in a CUDA suite since the catalog caught up with it (#31). The
    report (its lines and the summary) goes to stdout, so `> file` keeps it; errors go to stderr."""
    from parity.core.resources import data_dir
    from parity.profiles.candle import UPSTREAM_RECORD
    from parity.suite.coverage import drift, foreign_tree, snapshot_text, upstream_snapshot
    if cuda_src is None:
        raise SetupError("--drift compares the catalog with a CUDA suite: give --cuda-src <candle-kernels/src>")
    subj = subject_of(None, cuda_src, profile_opt)
    folder, profile = subj.cuda_src, subj.profile
    record = snapshot_file or (data_dir() / UPSTREAM_RECORD if profile.name == "candle" else None)
    if update and record is None:
        raise SetupError(f"profile {profile.name} has no bundled upstream record: name one with --snapshot FILE")
    lock = _read_record(record, must_exist=bool(snapshot_file) and not update, lenient=update)
    why = foreign_tree(folder, lock) if lock else ""
    if why:
        raise SetupError(why)
    suite = discover_folder(folder)
    if update and not suite.kernels:             # a record of nothing would call every later drift current
        raise SetupError(f"--update-snapshot: {folder} defines no kernel: nothing to record (is it "
                         "candle-kernels/src?)")
    if update:
        try:
            record.write_text(snapshot_text(upstream_snapshot(suite, source or str(folder))))
        except OSError as e:
            raise SetupError(f"cannot write {record}: {e.strerror or e}")
        click.echo(f"{record}: {len(suite.kernels)} kernels of {folder} recorded")
        lock = None
    rows = drift(suite, profile.expected_kernels(), lock)
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=1))
    else:
        for r in rows:
            click.echo(f"{r.status}\t{r.kernel}\t{_relative(r.where, folder)}\t{r.suggestion or '-'}")
        counts = {st: sum(r.status == st for r in rows) for st in ("new upstream", "gone upstream", "parameters changed")}
        since = f" since {lock.get('source', record)}" if lock else ""
        click.echo(f"{folder}{since}: " + ", ".join(f"{n} {st}" for st, n in counts.items())
                   + (": catch the catalog up (docs/candle-new-kernels.md, 'A new upstream kernel')" if rows
                      else ": the catalog is current"))
    sys.exit(1 if rows else 0)


def _read_record(record: Path | None, must_exist: bool, lenient: bool = False) -> dict | None:
    """The upstream record `drift` compares against (None: none, or none yet where it may be written;
    lenient: one that is no record, about to be overwritten)."""
    if record is None:
        return None
    try:
        lock = json.loads(record.read_text())
        if not isinstance(lock, dict) or not isinstance(lock.get("kernels"), dict):
            raise ValueError("no 'kernels' object")
        for name, k in lock["kernels"].items():    # as --update-snapshot writes them, or not a record
            ok = isinstance(k, dict) and isinstance(k.get("file"), str) and \
                isinstance(k.get("line"), int) and not isinstance(k.get("line"), bool) and \
                (k.get("params") is None or (isinstance(k["params"], list)
                                             and all(isinstance(x, str) for x in k["params"])))
            if not ok:
                raise ValueError(f"kernel {name!r}: not a {{file: str, line: int, params: [str]}} entry")
        return lock
    except FileNotFoundError:
        if must_exist:
            raise SetupError(f"--snapshot {record} does not exist (write one with --update-snapshot)")
        return None
    except (OSError, ValueError, RecursionError) as e:
        if lenient:
            return None
        why = "nested too deeply" if isinstance(e, RecursionError) else e
        raise SetupError(f"{record} is not an upstream record ({why})")


def _relative(where: str, folder: Path) -> str:
    """`file:line` without the suite folder the header already names."""
    prefix = f"{folder}/"
    return where[len(prefix):] if where.startswith(prefix) else where


class _Rows(list):
    def add_row(self, *cells: str) -> None:
        self.append(cells)


def _cell(text: str) -> str:
    """A note as one table cell: its lines joined by spaces (a compiler's notes span lines), 200 characters."""
    return one_line(" ".join(text.split()))[:200]


def _print_static(rows, per_file: bool) -> None:
    t = _Rows()
    # narrow terminals lose the columns a spill/occupancy review needs least
    cols = (Col("file" if per_file else "kernel", name=True), Col("arch", name=True), Col("status", name=True),
            Col("wave", drop=4), Col("VGPRs", justify="right"), Col("SGPRs", drop=6, justify="right"),
            Col("spills", justify="right"), Col("LDS", drop=5, justify="right"),
            Col("scratch", drop=7, justify="right"), Col("occupancy", drop=3, justify="right"), Col("notes"))
    if per_file:
        groups: dict[tuple, list] = {}
        for r in rows:
            groups.setdefault((Path(r.file).name if r.file else "*", r.arch), []).append(r)
        for (f, arch), rs in sorted(groups.items()):
            mx = lambda a: max((getattr(r, a) or 0) for r in rs)
            status = "ok" if all(r.status == "ok" for r in rs) else next(r.status for r in rs if r.status != "ok")
            t.add_row(f"{f} ({len(rs)})", arch, status, str(rs[0].wavefront or ""), str(mx("vgprs")),
                      str(mx("sgprs")), str(mx("vgpr_spill") + mx("sgpr_spill")), str(mx("lds_bytes")),
                      str(mx("scratch_bytes")), str(min((r.occupancy or 0) for r in rs)),
                      _cell("; ".join(sorted({n for r in rs for n in r.notes}))))
    else:
        def n(v) -> str:                         # (no resource-usage remark: nothing to show, not "None")
            return "" if v is None else str(v)
        for r in rows:
            t.add_row(r.kernel, r.arch, r.status, n(r.wavefront), n(r.vgprs), n(r.sgprs),
                      str((r.vgpr_spill or 0) + (r.sgpr_spill or 0)), n(r.lds_bytes), n(r.scratch_bytes),
                      n(r.occupancy), _cell("; ".join(r.notes) or r.message))
    console = Console()
    console.print(fit_table(console, cols, t))


@click.command("doctor")
def doctor_cmd() -> None:
    """Which levels this machine can run, what is missing for the others, and the command that installs it."""
    from parity.run.doctor import LEVELS_HEADING, doctor, render, run_levels
    click.echo(render(doctor()))
    click.echo(f"\n{LEVELS_HEADING}\n{render(run_levels())}")


COMMANDS = [coverage_cmd, compile_cmd, doctor_cmd]
