"""The rich terminal view: a progress bar while running, then counts and the failures."""
from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..results import FAILING, Results

STYLE = {"pass": "green", "fail": "bold red", "crash": "bold red", "oob-write": "bold red",
         "input-clobbered": "bold red", "timeout": "red", "compile-error": "red", "missing": "yellow",
         "error": "magenta", "unavailable": "dim", "xfail": "cyan", "xpass": "yellow", "xpass-strict": "bold yellow",
         "signature-mismatch": "red", "mapping-gap": "magenta"}


def progress(console: Console) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, transient=True)


def show(res: Results, console: Console, max_failures: int = 30) -> None:
    counts = Table(title="parity results", show_header=True)
    counts.add_column("verdict")
    counts.add_column("cases", justify="right")
    for v, n in res.counts().items():
        counts.add_row(f"[{STYLE.get(v, 'bold')}]{v}[/]", str(n))
    console.print(counts)
    for lv in res.meta.get("levels", []):
        if lv["available"]:
            console.print(f"  level [bold]{lv['level']}[/]: ran on {lv.get('device', '')}")
        else:
            console.print(f"  level [bold]{lv['level']}[/]: [dim]unavailable[/] — {lv.get('reason', '')}")
    fails = res.table[res.table["verdict"].isin(FAILING)]
    if fails.empty:
        return
    t = Table(title=f"failures ({len(fails)})", show_lines=False)
    t.add_column("case", overflow="fold")
    t.add_column("verdict")
    t.add_column("worst element / message", overflow="fold")
    for _, r in fails.head(max_failures).iterrows():
        t.add_row(r["case_id"], f"[{STYLE.get(r['verdict'], 'bold')}]{r['verdict']}[/]", str(r.get("message") or "")[:400])
    console.print(t)
    if len(fails) > max_failures:
        console.print(f"… and {len(fails) - max_failures} more (see the markdown or JSON report)")
