"""The rich terminal view: a progress bar while running, then counts and the failures."""
from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.markup import escape
from rich.table import Table

from ..results import Results

STYLE = {"pass": "green", "fail": "bold red", "crash": "bold red", "oob-write": "bold red",
         "input-clobbered": "bold red", "timeout": "red", "compile-error": "red", "missing": "yellow",
         "error": "magenta", "unavailable": "dim", "xfail": "cyan", "xpass": "yellow", "xpass-strict": "bold yellow",
         "signature-mismatch": "red", "mapping-gap": "magenta"}


def progress(console: Console) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, transient=True)


def show(res: Results, console: Console, max_findings: int = 12) -> None:
    """Verdict counts, the parity score (family × level), then the top findings; fits 80 columns
    (names are cut with an ellipsis, never wrapped). The rest: summary.md / index.html."""
    from .. import findings as fnd
    f = fnd.analyze(res.table, res.meta.get("levels"))
    console.print("  ".join(f"[{STYLE.get(v, 'bold')}]{v}[/] {n:,}" for v, n in res.counts().items()))
    for lv in res.meta.get("levels", []):
        if lv["available"]:
            console.print(f"  level [bold]{lv['level']}[/]: ran on {lv.get('device', '')}", overflow="ellipsis",
                          no_wrap=True)
        else:
            console.print(f"  level [bold]{lv['level']}[/]: [dim]unavailable[/] — {lv.get('reason', '')}",
                          overflow="ellipsis", no_wrap=True)
    if f.scoreboard:
        levels = list(dict.fromkeys(r.level for r in f.scoreboard))
        cell = {(r.level, r.family): r for r in f.scoreboard}
        console.print("[bold]parity score[/]: kernels at parity (every case pass/xfail) / kernels run")
        t = Table(box=None, pad_edge=False)
        t.add_column("family", no_wrap=True, overflow="ellipsis", max_width=14)
        for lv in levels:
            t.add_column(lv, justify="right", no_wrap=True, overflow="ellipsis")
        fams = list(dict.fromkeys(r.family for r in f.scoreboard if r.family != "all"))
        for fam in fams[:20] + ["all"]:
            cs = []
            for lv in levels:
                r = cell.get((lv, fam))
                style = "" if r is None else "green" if r.kernels_ok == r.kernels else "red"
                cs.append("" if r is None else f"[{style}]{r.kernels_ok}/{r.kernels}[/] {r.score:>4.0%}")
            t.add_row("[bold]all[/]" if fam == "all" else fam, *cs)
        if len(fams) > 20:
            t.caption = f"… {len(fams) - 20} more families in summary.md"
        console.print(t)
    if not f.findings:
        return
    console.print(f"[bold]findings[/]: {len(f.findings)} causes, worst first")
    t = Table(box=None, pad_edge=False, show_header=False)
    t.add_column("#", justify="right", no_wrap=True, width=3)
    t.add_column("cause", no_wrap=True, width=18, overflow="ellipsis")
    t.add_column("finding", no_wrap=True, overflow="ellipsis", width=max(20, console.width - 3 - 18 - 4))
    for i, x in enumerate(f.findings[:max_findings], 1):
        t.add_row(str(i), f"[{STYLE.get(x.cause, 'bold')}]{x.cause}[/]", escape(x.title.replace("`", "")))
    console.print(t)
    more = len(f.findings) - max_findings
    console.print((f"… {more} more findings: " if more > 0 else "details: ") + "see summary.md / index.html")
