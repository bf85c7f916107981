"""The one verdict of a whole run, computed here and only here: every report (terminal, markdown,
HTML, JUnit, GitHub annotations, the pytest plugin) and the exit code show this same outcome.

It is decided by what actually executed or compiled the subject's kernels (parity.run.levels.role),
never by counts alone: a run whose only rows come from the reference (the cpu level's emulation)
verified none of the port's code, `0/0` is never a pass, and a run that stopped early says so.

    status          exit  when
    pass            0     a level executed the suite's kernels and no case failed
    compiled        0     nothing executed them, amd-static compiled them, no case failed
    reference-only  0     only the reference ran, and the user asked for exactly that (--levels cpu)
    empty-shard     0     a `--shard K/N` that holds none of the selected cases (a CI matrix wider
                          than the selection): nothing to run in it; the merge of the shards decides
    partial         0     a merge the user allowed to lack shards (--allow-partial), no case failing:
                          the missing shards' cases are not verified, so it is never a green pass
    fail            1     a case failed (fail, missing, compile-error, crash, ...)
    nothing         2     no level ran or compiled any kernel of the suite (a setup problem)
    stopped         130   interrupted before every case ran (a failure seen so far is still named)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from parity.core.row import Verdict
from parity.core.text import md_code, share
from parity.render.findings import KINDS, first_line, tally
from parity.render.findings import of as findings_of
from parity.run.levels import COMPILES, EXECUTES, PROVES, REFERENCE, WHAT_EXECUTES_IT, WHAT_WOULD_RUN_IT, role
from parity.run.results import FAILING, Results, not_launched

OK = (Verdict.PASS, Verdict.XFAIL, Verdict.XPASS)     # not failing (a baselined failure included)
PASSED = (Verdict.PASS, Verdict.XPASS)                 # what the headline counts as passing
PARITYS = (Verdict.ERROR, Verdict.MAPPING_GAP)     # parity's own failures: the port is not verified there
DECLARATIONS = (Verdict.REFERENCE_ERROR,)           # a declared kernel's reference raised: not verified either
ICONS = {"pass": "✅", "fail": "❌", "compiled": "⚠️", "reference-only": "⚠️", "empty-shard": "⚠️", "partial": "⚠️",
         "nothing": "❌", "stopped": "⏹️"}
NOTHING_FAILED = ("pass", "compiled", "reference-only")  # what unread failing rows or a partial merge overrule
EXIT = {"pass": 0, "compiled": 0, "reference-only": 0, "empty-shard": 0, "partial": 0, "fail": 1, "nothing": 2,
        "stopped": 130}


@dataclass(frozen=True)
class Outcome:
    status: str                       # a key of EXIT
    headline: str                     # one line, no icon, no markup: "parity: 9,081/9,081 cases pass ..."
    proves: list[str] = field(default_factory=list)      # "level(s): what their rows prove"
    not_run: list[str] = field(default_factory=list)     # "level: why not" (unavailable levels)
    stopped: str = ""                 # why the run ended early ("" if it ran to the end)
    notes: list[str] = field(default_factory=list)       # what a merge decided (missing shards, conflicts)
    kernels_executed: int = 0
    kernels_compiled: int = 0

    @property
    def icon(self) -> str:
        return ICONS[self.status]

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    @property
    def file_exit_code(self) -> int:
        """The exit code of a command over a results file (report, merge): the run's, except that
        a run that stopped early is not an interrupt of this command (1: not a verified run)."""
        return 1 if self.status == "stopped" else self.exit_code

    @property
    def green(self) -> bool:
        return self.status == "pass"

    @property
    def title(self) -> str:
        """The headline with its icon: the terminal's last line, the markdown heading, the HTML badge."""
        return f"{self.icon} {self.headline}"


def of(res: Results) -> Outcome:
    """The outcome of a run (cached on the Results, like findings)."""
    if res._outcome is None:
        found = findings_of(res).findings
        res._outcome = decide(res.table, res.meta, len(found), tally(found))
    return res._outcome


def decide(table: pd.DataFrame, meta: dict, n_findings: int = 0, causes: dict[str, int] | None = None) -> Outcome:
    """The outcome of a results table and its run's meta (levels, interrupted, planned_rows, ...);
    n_findings: the findings of the run, causes: those findings per kind (parity.render.findings.tally:
    compile, wrong, missing, ...), which the headline shows beside the kernels of that kind."""
    causes = {**dict.fromkeys(KINDS, 0), **(causes or {})}
    levels = meta.get("levels") or []
    t = table[table["verdict"] != Verdict.UNAVAILABLE] if len(table) else table
    if len(t):                                   # a row without a kernel (an internal error): its op's
        t = t.assign(kernel=t["kernel"].fillna(t["op"]).astype(str))
    roles = t["level"].astype(str).map(role) if len(t) else pd.Series([], dtype=str)
    by_role = {r: t[roles == r] for r in (EXECUTES, COMPILES, REFERENCE)}
    failing = int(t["verdict"].isin(FAILING).sum()) if len(t) else 0
    proves = _proves(by_role)
    not_run = [f"{lv['level']}: {lv.get('reason') or 'unavailable'}" for lv in levels if not lv.get("available")]
    executed = _kernels(by_role[EXECUTES], ran_only=True)
    compiled = _kernels(by_role[COMPILES], (Verdict.COMPILED,))
    stopped = stop_reason(meta, len(table))
    common = dict(proves=proves, not_run=not_run, stopped=stopped, kernels_executed=executed,
                  kernels_compiled=compiled, notes=merge_notes(meta) + unread_notes(meta))
    ok = int(t["verdict"].isin(PASSED).sum()) if len(t) else 0
    if failing:
        subject = pd.concat([by_role[EXECUTES], by_role[COMPILES]])
        good = "at parity" if len(by_role[EXECUTES]) else "compile"
        head = ("parity: " + (_port_score(subject, causes, good) if len(subject) else
                              f"{ok:,}/{len(t):,} cases pass, {failing:,} failing — {_plural(n_findings, 'finding')}")
                + _on(by_role))
        ref = by_role[REFERENCE]
        ref_failing = int(ref["verdict"].isin(FAILING).sum()) if len(subject) and len(ref) else 0
        if ref_failing:                          # the port's score leaves them out: said, never hidden
            head += f" · {ref_failing:,} failing on {_names(ref)}, the reference"
        status = "stopped" if stopped else "fail"
    elif _launched(by_role[EXECUTES])["verdict"].isin(PASSED).any():
        e = by_role[EXECUTES]
        head = (f"parity: {int(e['verdict'].isin(PASSED).sum()):,}/{len(e):,} cases pass on "
                f"{_names(e)} — {executed:,} kernel{'s' if executed != 1 else ''} executed")
        status = "stopped" if stopped else "pass"
    elif compiled:
        c = by_role[COMPILES]
        total = _kernels(c, None)
        targets = meta.get("amd_targets") or []
        head = (f"parity: compiled, not executed — {compiled:,}/{total:,} kernels compile"
                + (f" for {', '.join(targets)}" if targets else "") + " (amd-static); "
                + (f"{_names(by_role[EXECUTES])} ran them and passed none (every case a known failure)"
                   if len(by_role[EXECUTES]) else "no level here ran them"))
        status = "stopped" if stopped else "compiled"
    elif len(by_role[REFERENCE]) and meta.get("reference_only_requested"):
        r = by_role[REFERENCE]
        head = (f"parity: reference only — {_names(r)} passed {ok:,}/{len(r):,} cases of the case machinery; "
                "no kernel of the suite ran or compiled")
        status = "stopped" if stopped else "reference-only"
    elif not len(table) and meta.get("empty_shard_of") and not stopped:
        head = (f"parity: shard {meta.get('shard')} holds none of the {meta['empty_shard_of']:,} selected cases — "
                "nothing to run in this job; `parity merge` the shards for the run's verdict")
        status = "empty-shard"
    else:
        tried = pd.concat([by_role[EXECUTES], by_role[COMPILES]])
        refusals = len(by_role[EXECUTES]) - len(_launched(by_role[EXECUTES]))
        if refusals and refusals == len(tried):  # right of the host, and no kernel of the port ran for them
            head = (f"parity: nothing verified — no kernel ran on {_names(tried)}: its {_plural(refusals, 'case')} "
                    "are all ones the host refuses before any launch (those pass; the port's kernels are not reached)")
        else:
            head = "parity: nothing verified — " + (f"no case passed or compiled on {_names(tried)}" if len(tried) else
                                                    "no level here ran or compiled the suite's kernels")
        if len(by_role[REFERENCE]):
            head += f" (the reference alone ran {len(by_role[REFERENCE]):,} cases)"
        status = "stopped" if stopped else "nothing"
    head, status = _qualified(head, status, table, meta, stopped)
    return Outcome(status, head, **common)


def _qualified(head: str, status: str, table: pd.DataFrame, meta: dict, stopped: str) -> tuple[str, str]:
    """The headline's qualifiers, each said beside the counts it is not in (cases not run, known
    failures, unreadable rows, an early stop, a partial merge), and the status they overrule."""
    unavailable = table[table["verdict"] == Verdict.UNAVAILABLE] if len(table) else table
    if len(unavailable):                         # neither passed nor failed: counted, never left out of "N/N"
        reasons = unavailable["message"].map(first_line)
        why = reasons[reasons != ""].mode()
        why = why.iloc[0] if len(why) else ""
        head = (f"{head} · {_plural(len(unavailable), 'case')} not run ({_names(unavailable)}: unavailable, "
                "neither passed nor failed" + (f"; e.g. {why[:160]}" if why else "") + ")")
    known = int((table["verdict"] == Verdict.XFAIL).sum()) if len(table) else 0
    if known:                                    # accepted, not passed: said beside the counts it is not in
        head = f"{head} · {known:,} known failure{'s' if known != 1 else ''} accepted by the baseline (xfail)"
    unread, unread_failing = unread_counts(meta)
    if unread_failing and status in NOTHING_FAILED:
        status = "fail"                          # a failure the file recorded is not forgotten for its damage
    if unread:
        head = (f"{head} · {unread:,} unreadable row{'s' if unread != 1 else ''} skipped"
                + (f" ({unread_failing:,} failing)" if unread_failing else ""))
    if stopped:
        head = f"{head} · stopped early: {stopped}"
    if meta.get("shards_missing"):               # a merge the user allowed to be partial says so first
        head = f"{head} · partial merge: shard(s) {', '.join(meta['shards_missing'])} missing"
        if status in NOTHING_FAILED:
            status = "partial"
    return head, status


def _proves(by_role: dict) -> list[str]:
    """"level(s): what their rows prove", for the levels that judged a case (a level whose every case the
    baseline accepted verified nothing)."""
    judged = {r: g[g["verdict"] != Verdict.XFAIL] for r, g in by_role.items()}
    return [f"{', '.join(dict.fromkeys(g['level'].astype(str)))}: {PROVES[r]}" for r, g in judged.items() if len(g)]


def _port_score(subject: pd.DataFrame, causes: dict[str, int], good: str) -> str:
    """Coverage and correctness as separate numbers, by kernel over the levels that ran or compiled the
    suite, each kind of failure with its findings (`causes`, as the Findings heading counts them):
    `ported 200/739 kernels (27%) · 130 at parity, 4 do not compile (1 cause), 66 wrong (9 causes) ·
    ... cases pass · 539 not ported (20 causes) · 4 families not started`. A kernel that does not compile
    somewhere counts there, not as wrong: it never ran there."""
    v = subject["verdict"]                       # a baselined failure counts as what it is (accepted, not fixed)
    if "raw_verdict" in subject:
        v = v.where(v != Verdict.XFAIL, subject["raw_verdict"].fillna(v))
    ours = v.isin(PARITYS)
    theirs = v.isin(DECLARATIONS)
    noc = v == Verdict.COMPILE_ERROR
    stale = v == Verdict.XPASS_STRICT            # it passed (or compiled): the baseline's entry is stale
    g = subject.assign(_missing=v == Verdict.MISSING, _ours=ours, _decl=theirs, _noc=noc,
                       _bad=v.isin(FAILING) & ~ours & ~theirs & ~noc & ~stale)
    per = g.groupby("kernel", sort=False).agg(missing=("_missing", "all"), bad=("_bad", "any"), noc=("_noc", "any"),
                                               ours=("_ours", "any"), decl=("_decl", "any"), family=("family", "first"))
    ported = per[~per["missing"]]
    broken = int(ported["noc"].sum())                               # compile-error: never ran (there)
    wrong = int((ported["bad"] & ~ported["noc"]).sum())
    unverified = int((ported["ours"] & ~ported["bad"] & ~ported["noc"]).sum())   # parity's gap, not the port's
    undeclared = int((ported["decl"] & ~ported["bad"] & ~ported["ours"] & ~ported["noc"]).sum())  # the reference's
    fams = per.groupby("family")["missing"].all()
    not_started = int(fams.sum())
    not_ported = len(per) - len(ported)
    ok = int(subject["verdict"].isin(PASSED + (Verdict.COMPILED,)).sum() + stale.sum())
    parts = [f"ported {len(ported):,}/{len(per):,} kernels ({share(len(ported), len(per))})"]
    if len(ported):
        kinds = [f"{len(ported) - broken - wrong - unverified - undeclared:,} {good}"]
        if broken or causes["compile"]:
            kinds.append(f"{broken:,} {'does' if broken == 1 else 'do'} not compile "
                         f"({_plural(causes['compile'], 'cause')})")
        if wrong or causes["wrong"]:
            kinds.append(f"{wrong:,} wrong ({_plural(causes['wrong'], 'cause')})")
        if unverified:
            kinds.append(f"{unverified:,} not verified (parity's error)")
        if undeclared:
            kinds.append(f"{undeclared:,} not verified (the declaration's reference raised)")
        parts.append(", ".join(kinds)
                     + f" · {ok:,}/{len(subject):,} cases {'pass' if good == 'at parity' else 'compile'}")
    if stale.any():
        parts.append(f"{_plural(int(stale.sum()), 'case')} the baseline expects to fail "
                     f"{'passed' if good == 'at parity' else 'compiled'} (xpass-strict: stale entries)")
    if not_ported or causes["missing"]:
        parts.append(f"{not_ported:,} not ported ({_plural(causes['missing'], 'cause')})")
    if not_started:
        parts.append(f"{_plural(not_started, 'family', 'families')} not started")
    return " · ".join(parts)


def _plural(n: int, one: str, many: str = "") -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _on(by_role: dict) -> str:
    """' · nothing executed' when the failures come from compile checks or the reference alone."""
    if len(by_role[EXECUTES]):
        return ""
    if len(by_role[COMPILES]):
        return " · compile checks only (amd-static), nothing executed"
    return " · on the reference only: no kernel of the suite ran"


def _names(g: pd.DataFrame) -> str:
    return ", ".join(dict.fromkeys(g["level"].astype(str)))


# verdicts (a baselined row's own, raw_verdict) of a kernel that did not run: absent, not built, refused
NEVER_RAN = (Verdict.MISSING, Verdict.COMPILE_ERROR, Verdict.SIGNATURE_MISMATCH, Verdict.MAPPING_GAP, Verdict.NOT_RUN,
             Verdict.REFUSED, Verdict.REFERENCE_ERROR, Verdict.ERROR)


def _launched(g: pd.DataFrame) -> pd.DataFrame:
    """The rows whose case launched a kernel (not a host refusal, which passes with none run)."""
    return g[~not_launched(g)] if len(g) else g


def _kernels(g: pd.DataFrame, verdicts=OK + tuple(FAILING), ran_only: bool = False) -> int:
    """Distinct kernels among rows (with one of `verdicts`, None: any; ran_only: of rows whose kernel
    ran, a baselined row judged by the verdict it had)."""
    if not len(g):
        return 0
    if verdicts is not None:
        g = g[g["verdict"].isin(verdicts)]
    if ran_only and len(g):
        g = _launched(g)
        own = g["raw_verdict"].fillna(g["verdict"]) if "raw_verdict" in g else g["verdict"]
        g = g[~own.isin(NEVER_RAN)]
    return int(g["kernel"].dropna().astype(str).nunique())


def stop_reason(meta: dict, rows: int) -> str:
    """Why a run's rows are fewer than it planned (interrupted, rows without a result); '' when complete."""
    planned = meta.get("planned_rows")
    if meta.get("interrupted"):
        if planned and rows >= planned:          # the signal came while the reports were written
            return f"interrupted while the reports were written (all {planned:,} case runs had finished)"
        return f"interrupted after {rows:,} of {planned:,} case runs" if planned else "interrupted"
    if planned and rows < planned:
        return f"{planned - rows:,} of {planned:,} case runs have no result"
    return ""


def explain(o: Outcome, not_run: bool = True) -> list[str]:
    """The lines every long report gives under the headline: what ran, what that proves, and (not_run:
    for a report without a level table) the levels that did not run."""
    lines = [f"Verified here — {p}" for p in o.proves]
    if o.status in ("compiled", "reference-only", "nothing") or (o.status == "stopped" and not o.kernels_executed):
        lines.append("Not verified — the suite's kernels did not run here: "
                     + (WHAT_EXECUTES_IT if o.kernels_compiled else WHAT_WOULD_RUN_IT) + ".")
    if not_run:
        lines += [f"Not run — {n}" for n in o.not_run]
    return o.notes + lines


def merge_notes(meta: dict) -> list[str]:
    """What `parity merge` had to decide (parity.cli.bench): missing shards, conflicting rows."""
    out = []
    if meta.get("shards_missing"):
        out.append(f"Partial merge — shard(s) {', '.join(meta['shards_missing'])} missing: their cases are in "
                   "no report.")
    c = meta.get("merge_conflicts")
    if c:
        out.append(f"Merge conflicts — {c.get('count', 0)} case(s) had different verdicts in different files; "
                   f"{c.get('rule', 'the worst verdict is kept')}.")
    return out


def unread_counts(meta: dict) -> tuple[int, int]:
    """(rows of the files read that were not result rows, how many of those had a failing verdict):
    meta `unread_rows` (parity.run.results.Results.from_json)."""
    entries = [e for e in meta.get("unread_rows") or [] if isinstance(e, dict)]

    def count(k: str) -> int:
        return int(sum(e[k] for e in entries if isinstance(e.get(k), (int, float)) and not isinstance(e[k], bool)))
    return count("count"), count("failing")


def unread_notes(meta: dict) -> list[str]:
    """One line per results file whose damaged rows were skipped when it was read."""
    return [f"Unreadable rows — {e.get('count')} row(s) of {md_code(str(e.get('file')))} are not result rows and "
            f"are in no table ({e.get('failing')} with a failing verdict); first: {md_code(str(e.get('first')))}."
            for e in meta.get("unread_rows") or [] if isinstance(e, dict)]


def suites_line(meta: dict) -> str:
    """The suites the levels that ran read: the HIP levels the HIP suite (or port), `cuda` the CUDA suite;
    led by the run's ABI profile when results.json names one."""
    ran = [lv["level"] for lv in meta.get("levels", []) if lv.get("available")]
    hip = any(r.split("/")[0] in ("hip-on-nvidia", "amd", "amd-static") for r in ran) or not ran
    out = [f"HIP suite {md_code(meta.get('hip_src', ''))}"] if hip and meta.get("hip_src") else []
    if "cuda" in ran and meta.get("cuda_src"):
        out.append(f"CUDA suite {md_code(meta['cuda_src'])}")
    line = " · ".join(out) or "no suite ran (reference levels only)"
    prof = meta.get("profile")
    if isinstance(prof, dict) and prof.get("name"):     # the ABI profile (parity.profiles): whose kernel conventions
        line = f"ABI profile {md_code(prof['name'])} · {line}"
    return line
