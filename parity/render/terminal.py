"""The rich terminal view: a progress bar while running, then counts and the failures."""
from __future__ import annotations

import re
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from parity.core.row import Verdict
from parity.core.text import one_line, share
from parity.render import findings as fnd
from parity.render.outcome import Outcome, explain
from parity.run.levels import REFERENCE, role
from parity.run.results import Results

STYLE = {Verdict.PASS: "green", Verdict.FAIL: "bold red", Verdict.CRASH: "bold red", Verdict.OOB_WRITE: "bold red",
         Verdict.INPUT_CLOBBERED: "bold red", Verdict.TIMEOUT: "red", Verdict.COMPILE_ERROR: "red",
         Verdict.MISSING: "yellow", Verdict.ERROR: "magenta", Verdict.UNAVAILABLE: "dim", Verdict.XFAIL: "cyan",
         Verdict.XPASS: "yellow", Verdict.XPASS_STRICT: "bold yellow", Verdict.SIGNATURE_MISMATCH: "red",
         Verdict.MAPPING_GAP: "magenta", Verdict.COMPILED: "cyan", Verdict.REFERENCE_ERROR: "magenta"}
HEADLINE_STYLE = {"pass": "bold green", "fail": "bold red", "nothing": "bold red", "compiled": "bold yellow",
                  "reference-only": "bold yellow", "empty-shard": "bold yellow", "partial": "bold yellow",
                  "stopped": "bold yellow"}


def progress(console: Console) -> "Progress | LogProgress":
    """A live bar on a terminal; plain periodic lines in a log (CI, `| tee`), where rich's bar
    would print nothing until the end."""
    if not console.is_terminal:
        return LogProgress(console)
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, transient=True)


class LogProgress:
    """The part of rich's Progress that parity uses (add_task, update, context manager), written as
    lines like `hip-on-nvidia: 1200/24087 cases, 3 not passing, 12 s`: one every `every_s` seconds
    or every 10% of a task, whichever comes first, and one when a task completes. `unit` is a task
    field ("cases"; rich's bar ignores it); the compile task has none (`compile LEVEL: 3/12`)."""

    def __init__(self, console: Console, every_s: float = 5.0, clock=time.monotonic) -> None:
        self.console, self.every_s, self.clock = console, every_s, clock
        self.tasks: list[dict] = []

    def __enter__(self) -> "LogProgress":
        return self

    def __exit__(self, *exc) -> None:
        for i, task in enumerate(self.tasks):      # an interrupted task still gets its last line
            if not task["done"] and task["completed"] != task["shown_completed"]:
                self._line(i)

    def add_task(self, description: str, total: float | None = None, status: str = "", unit: str = "",
                 **_) -> int:
        now = self.clock()
        self.tasks.append({"description": description, "total": total, "completed": 0, "status": status,
                           "unit": unit,
                           "start": now, "shown_at": now, "shown_tenth": 0, "shown_completed": 0,
                           "done": False})
        return len(self.tasks) - 1

    def update(self, task_id: int, advance: float = 0, status: str | None = None, **_) -> None:
        task = self.tasks[task_id]
        task["completed"] += advance
        if status is not None:
            task["status"] = status
        total = task["total"]
        if total and task["completed"] >= total:
            if not task["done"]:
                self._line(task_id)
            return
        tenth = int(10 * task["completed"] / total) if total else 0
        if tenth > task["shown_tenth"] or self.clock() - task["shown_at"] >= self.every_s:
            self._line(task_id)

    def _line(self, task_id: int) -> None:
        task = self.tasks[task_id]
        now = self.clock()
        total = task["total"]
        done = f"{task['completed']:.0f}/{total:.0f}" if total else f"{task['completed']:.0f}"
        status = Text.from_markup(task["status"]).plain if task["status"] else ""
        parts = [f"{task['description']}: {done}" + (f" {task['unit']}" if task["unit"] else "")] + ([status] if status else []) \
            + [f"{now - task['start']:.{0 if now - task['start'] >= 10 else 1}f} s"]
        self.console.print(", ".join(parts), markup=False, highlight=False, soft_wrap=True)
        task["shown_at"], task["shown_completed"] = now, task["completed"]
        task["shown_tenth"] = int(10 * task["completed"] / total) if total else 0
        task["done"] = bool(total) and task["completed"] >= total


def counts_text(res: Results) -> str:
    """'cpu 160 pass; amd-static 160 compiled': verdict counts level by level (a reference level's
    passes and amd-static's compiles are different claims, never one sum)."""
    return "; ".join(f"{lv} " + ", ".join(f"{n} {v}" for v, n in c.items()) for lv, c in res.counts_by_level().items())


_LONG_PATH = re.compile(r"(?<![\w.])/(?:[^\s/]+/)+([^\s/]+/[^\s/]+)")


def short_paths(text: str) -> str:
    """Absolute paths cut to their last two parts (`…/src/unary_f32.hip`): cut at the right edge
    of an 80-column CI log, a CI checkout's long prefix left every compile finding the same text."""
    return _LONG_PATH.sub(lambda m: "…/" + m.group(1), text)


def show(res: Results, console: Console, max_findings: int = 12) -> None:
    """Verdict counts, the parity score (family × level), then the top findings; fits 80 columns
    (names are cut with an ellipsis, never wrapped). The rest: summary.md / index.html."""
    f = fnd.of(res)
    console.print(" · ".join(f"[bold]{escape(one_line(lv))}[/]: "
                             + "  ".join(f"[{STYLE.get(v, 'bold')}]{v}[/] {n:,}" for v, n in c.items())
                             for lv, c in res.counts_by_level().items()))
    for lv in res.meta.get("levels", []):
        name = escape(one_line(lv["level"]))
        if lv["available"]:
            console.print(f"  level [bold]{name}[/]: ran on {escape(one_line(lv.get('device', '')))}",
                          overflow="ellipsis", no_wrap=True)
        else:                                       # a reason is read whole: it says what to install
            console.print(f"  level [bold]{name}[/]: [dim]unavailable[/] — {escape(one_line(lv.get('reason', '')))}")
    if f.scoreboard:
        levels = list(dict.fromkeys(r.level for r in f.scoreboard))
        cell = {(r.level, r.family): r for r in f.scoreboard}
        console.print("[bold]parity score[/]: kernels at parity (every case pass, xfail not; amd-static: compiled) "
                      "/ kernels run; the reference levels (cpu, cupy) run no kernel: their column counts cases")
        t = Table(box=None, pad_edge=False)
        t.add_column("family", no_wrap=True, overflow="ellipsis", max_width=14)
        for lv in levels:
            t.add_column(lv, justify="right", no_wrap=True, overflow="ellipsis")
        fams = list(dict.fromkeys(r.family for r in f.scoreboard if r.family != "all"))
        for fam in fams[:20] + ["all"]:
            cs = []
            for lv in levels:
                r = cell.get((lv, fam))
                if r is None:
                    cs.append("")
                    continue
                ok, n = (r.cases_ok, r.cases) if role(lv) == REFERENCE else (r.kernels_ok, r.kernels)
                cs.append(f"[{'green' if ok == n else 'red'}]{ok}/{n}[/] {share(ok, n) if n else '0%':>4}"
                          + (" cases" if role(lv) == REFERENCE else ""))
            t.add_row("[bold]all[/]" if fam == "all" else escape(one_line(fam)), *cs)
        if len(fams) > 20:
            t.caption = f"… {len(fams) - 20} more families in summary.md"
        console.print(t)
    if not f.findings:
        return
    console.print(f"[bold]findings[/]: {fnd.count_text(f.findings)}, worst first")
    t = Table(box=None, pad_edge=False, show_header=False)
    t.add_column("#", justify="right", no_wrap=True, width=3)
    t.add_column("cause", no_wrap=True, width=18, overflow="ellipsis")
    t.add_column("finding", no_wrap=True, overflow="ellipsis", width=max(20, console.width - 3 - 18 - 4))
    for i, x in enumerate(f.findings[:max_findings], 1):
        t.add_row(str(i), f"[{STYLE.get(x.cause, 'bold')}]{x.cause}[/]",
                  escape(short_paths(one_line(x.title.replace("`", "")))))
    console.print(t)
    more = len(f.findings) - max_findings
    console.print((f"… {more} more findings: " if more > 0 else "details: ") + "see summary.md / index.html")


def headline(outcome: Outcome, console: Console, brief: bool = False) -> None:
    """The run's one verdict, last on the screen (parity.render.outcome): the same words as summary.md's heading;
    then, unless brief (-q), what ran and what would run the rest when nothing of the suite executed."""
    console.print(f"[{HEADLINE_STYLE[outcome.status]}]{escape(one_line(outcome.title))}[/]", highlight=False,
                  soft_wrap=True)                  # one line, whatever the width: CI logs grep for it
    if not brief and outcome.status in ("compiled", "reference-only", "nothing"):
        for line in explain(outcome, not_run=False):     # show() listed the levels
            console.print(f"  {escape(one_line(line))}", highlight=False)
