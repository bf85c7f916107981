"""The mutation report: score, counts, survivors with a hint at the case that would catch them."""
from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from parity.core import files
from parity.mutate.operators import Mutant
from parity.mutate.run import COUNTED, VERDICTS, Outcome

_HINTS = {
    "relational-boundary": "sizes around the block / grid / tile boundary (numel = k*block +- 1)",
    "off-by-one": "sizes around the block / grid / tile boundary (numel = k*block +- 1)",
    "equality": "a case where both branches differ (layout or value class the branch tests)",
    "logical": "a case where exactly one of the two conditions holds",
    "arithmetic-sign": "a non-zero offset or a sliced / strided layout",
    "stride-index": "a strided layout with unequal dims and strides (transposed, permuted 3-D+)",
    "nan-check": "the special value class (NaN inputs)",
    "rounding-bias": "values on a rounding tie (the special / out-of-range value classes, f16 / bf16)",
    "ternary-swap": "a case reaching both arms (mixed signs, NaN, both layouts)",
    "index-truncation": "a huge case (numel or an offset past 2^32)",
}
_STRIDED = ("strided", "info[", "strides", "num_dims", "dims[")


def score(outcomes: list[Outcome]) -> float | None:
    """killed / (killed + survived); None when no mutant counts."""
    c = Counter(o.verdict for o in outcomes)
    n = sum(c[v] for v in COUNTED)
    return c["killed"] / n if n else None


def hint(o: Outcome, family: str) -> str:
    """The case class that would most likely have caught a survivor, where the text tells."""
    line = o.mutant.source_line
    if o.mutant.operator in ("relational-boundary", "arithmetic-sign", "off-by-one") \
            and any(s in line for s in _STRIDED):
        return f"add a strided layout reaching this branch ({family})"
    return _HINTS.get(o.mutant.operator, "")


def summary(outcomes: list[Outcome], families: dict[str, str], meta: dict) -> dict:
    """Everything the markdown and HTML show, JSON-ready."""
    s = score(outcomes)
    per_op: dict[str, Counter] = {}
    per_file: dict[str, Counter] = {}
    for o in outcomes:
        per_op.setdefault(o.mutant.operator, Counter())[o.verdict] += 1
        per_file.setdefault(o.mutant.file, Counter())[o.verdict] += 1
    survivors = [{"where": f"{o.mutant.file}:{o.mutant.line}", "operator": o.mutant.operator,
                  "diff": o.mutant.diff(), "family": families.get(o.mutant.file, ""), "kernels": list(o.kernels),
                  "hint": hint(o, families.get(o.mutant.file, ""))}
                 for o in outcomes if o.verdict == "survived"]
    return {"schema": "parity.mutate/1", "meta": meta, "score": s,
            "counts": {v: n for v in VERDICTS if (n := sum(o.verdict == v for o in outcomes))},
            "per_operator": {k: dict(v) for k, v in sorted(per_op.items())},
            "per_file": {k: dict(v) for k, v in sorted(per_file.items())},
            "survivors": survivors,
            "argued": [{"diff": o.mutant.diff(), "why": o.message} for o in outcomes if o.verdict == "argued-equivalent"],
            "unreachable": dict(meta.get("out_of_reach") or {}),
            "slowest": [{"diff": o.mutant.diff(), "verdict": o.verdict, "seconds": round(o.seconds, 1),
                         "cases_run": o.cases_run, "phases": dict(o.phases)}
                        for o in sorted(outcomes, key=lambda o: -o.seconds)[:SLOWEST]],
            "outcomes": [record(o) for o in outcomes]}


SLOWEST = 10     # mutants listed under "where the time went"


def _time_spent(m: dict) -> str:
    """Where the run's time went, summed over its lanes (meta of a GpuRunner run; "" otherwise)."""
    if "compile_s" not in m:
        return ""
    return (f"{m.get('elapsed_s', 0):.0f} s in all; summed over {m.get('jobs')} lanes: {m.get('compile_s', 0):.0f} s "
            f"compiling, {m.get('wait_s', 0):.0f} s waiting for one of {m.get('runners')} runners, "
            f"{m.get('run_s', 0):.0f} s running {m.get('cases_run', 0)} cases.")


def _phases(p: dict) -> str:
    return ", ".join(f"{k} {v:.0f} s" if k != "sources" else f"{v} source(s)" for k, v in p.items()) or "-"


def record(o: Outcome) -> dict:
    """One outcome, JSON-ready (mutants.json's outcomes, and the journal's lines)."""
    return {**{k: v for k, v in asdict(o).items() if k != "mutant"}, "mutant": o.mutant.id, "diff": o.mutant.diff()}


def load_journal(path: Path, mutants: dict[str, Mutant], scope: dict | None = None) -> list[Outcome]:
    """The outcomes a mutants.jsonl recorded (`record`'s lines), for the mutants by id; ValueError
    where the run it began (its first line, {"scope": ...}) had another `scope` (--sweep, --ops,
    --max, --seed, --level, the suite), naming the first mutant that is not among them (another
    sample), or whose line the suite no longer reads as it did (the recorded diff). A line cut
    short by a kill is left out: that mutant runs again."""
    out = []
    try:
        text = files.read_text(path, "mutants journal", files.RESULTS_LIMIT)
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    for line in text.splitlines():
        try:
            r = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(r, dict) and isinstance(r.get("scope"), dict) and scope is not None:
            was = {k: r["scope"].get(k) for k in scope}
            differ = [f"{k} {was[k]!r} there, {scope[k]!r} now" for k in scope if was[k] != scope[k]]
            if differ:
                raise ValueError(f"{path}: that run was another one ({'; '.join(differ)}): resume it with the "
                                 "same options, or start a new run")
            continue
        if not isinstance(r, dict) or not isinstance(r.get("mutant", ""), str) or not isinstance(r.get("verdict"), str):
            continue                      # not a line `record` wrote: that mutant runs again
        m = mutants.get(r.get("mutant", ""))
        if m is None:
            raise ValueError(f"{path}: mutant {r.get('mutant')} is not in this run's sample (were --sweep, --max, "
                             "--seed and --hip-src the same?)")
        if isinstance(r.get("diff"), str) and r["diff"] != m.diff():
            raise ValueError(f"{path}: mutant {m.id} changed `{r['diff']}`; the source there now reads "
                             f"`{m.diff()}`: the suite changed since that run, start a new one")
        out.append(Outcome(m, r["verdict"], r.get("case", ""), r.get("case_verdict", ""), r.get("message", ""),
                           r.get("seconds", 0.0), r.get("cases_run", 0), tuple(r.get("kernels", ())),
                           dict(r.get("phases", {}))))
    return out


def _family(v: dict) -> str:
    """The op family, and the kernels whose machine code the survivor changed (those it ran)."""
    ks = v.get("kernels") or []
    more = f" (+{len(ks) - 3})" if len(ks) > 3 else ""
    return f"{v['family']}: {', '.join(ks[:3])}{more}" if ks else v["family"]


def _pct(s: float | None) -> str:
    return "n/a (no mutant counted)" if s is None else f"{100 * s:.1f}%"


def _counts_table(title: str, rows: dict[str, dict]) -> list[str]:
    cols = [v for v in VERDICTS if any(v in r for r in rows.values())]
    out = [f"| {title} | " + " | ".join(cols) + " | score |", "|---" * (len(cols) + 2) + "|"]
    for k, r in rows.items():
        n = r.get("killed", 0) + r.get("survived", 0)
        out.append(f"| `{k}` | " + " | ".join(str(r.get(c, 0)) for c in cols)
                   + f" | {_pct(r.get('killed', 0) / n) if n else '-'} |")
    return out


def markdown(s: dict) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in s["counts"].items())
    eq = s["counts"].get("equivalent", 0)
    lines = [f"# Mutation score: {_pct(s['score'])}", "",
             f"Sweep `{s['meta'].get('sweep')}` on level `{s['meta'].get('level')}`: {counts}. "
             f"Score = killed / (killed + survived); {eq} equivalent mutant(s) (object code unchanged), "
             "mutants argued equivalent, mutants out of the sweep's reach, compile errors and timeouts are not "
             "counted.", ""]
    slow = s["counts"].get("timeout", 0)
    if slow:                             # not caught in time is not caught: the score does not cover them
        lines += [f"**Timeouts**: {slow} mutant(s) ran out of --mutant-timeout before their cases caught them or "
                  "all passed; the score does not cover them (raise --mutant-timeout).", ""]
    bad = s["meta"].get("failing_on_original") or {}
    if bad:
        lines += [f"**Warning**: {len(bad)} case(s) fail on the unmutated suite; they killed no mutant: "
                  + ", ".join(f"`{k}` ({v})" for k, v in list(bad.items())[:10]), ""]
    if s["meta"].get("interrupted"):
        lines += [f"**Interrupted**: {s['meta'].get('done')} of {s['meta'].get('mutants')} mutants done; "
                  "the score covers those.", ""]
    lines += _counts_table("operator", s["per_operator"]) + [""] + _counts_table("file", s["per_file"]) + [""]
    lines += [f"## Survivors ({len(s['survivors'])})", ""]
    if s["survivors"]:
        lines += ["| where | operator | diff | family | hint |", "|---|---|---|---|---|"]
        lines += [f"| {v['where']} | {v['operator']} | `{v['diff'].split(': ', 1)[1].replace('|', '&#124;')}` "
                  f"| {_family(v)} | {v['hint']} |" for v in s["survivors"]]
    else:
        lines.append("None: every counted mutant was killed.")
    if s["argued"]:
        lines += ["", f"## Argued equivalent ({len(s['argued'])})", "", "| diff | why no input tells them apart |",
                  "|---|---|"]
        lines += [f"| `{a['diff'].replace('|', '&#124;')}` | {a['why']} |" for a in s["argued"]]
    if s["unreachable"]:
        lines += ["", f"## Out of the sweep's reach, not sampled ({sum(s['unreachable'].values())})", ""]
        lines += [f"- {n} mutant(s): {why}" for why, n in s["unreachable"].items()]
    spent = _time_spent(s["meta"])
    if s.get("slowest") and spent:
        lines += ["", "## Where the time went", "", f"{spent} The slowest mutants:", "",
                  "| seconds | verdict | cases run | phases | diff |", "|---|---|---|---|---|"]
        lines += [f"| {v['seconds']} | {v['verdict']} | {v['cases_run']} | {_phases(v['phases'])} "
                  f"| `{v['diff'].replace('|', '&#124;')}` |" for v in s["slowest"]]
    return "\n".join(lines) + "\n"


def html_page(s: dict) -> str:
    """A standalone page (the run reports' palette), the markdown's content as tables."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(v['where'])}</td><td>{e(v['operator'])}</td><td><code>{e(v['diff'])}</code></td>"
                   f"<td>{e(_family(v))}</td><td>{e(v['hint'])}</td></tr>" for v in s["survivors"])

    def table(title: str, data: dict) -> str:
        cols = [v for v in VERDICTS if any(v in r for r in data.values())]
        body = "".join(f"<tr><td><code>{e(k)}</code></td>" + "".join(f"<td>{r.get(c, 0)}</td>" for c in cols)
                       + "</tr>" for k, r in data.items())
        return (f"<table><tr><th>{title}</th>" + "".join(f"<th>{c}</th>" for c in cols) + f"</tr>{body}</table>")
    counts = ", ".join(f"{n} {v}" for v, n in s["counts"].items())
    argued = "".join(f"<tr><td><code>{e(a['diff'])}</code></td><td>{e(a['why'])}</td></tr>" for a in s["argued"])
    reach = "".join(f"<li>{n} mutant(s): {e(why)}</li>" for why, n in s["unreachable"].items())
    slow = "".join(f"<tr><td>{v['seconds']}</td><td>{e(v['verdict'])}</td><td>{v['cases_run']}</td>"
                   f"<td>{e(_phases(v['phases']))}</td><td><code>{e(v['diff'])}</code></td></tr>"
                   for v in s.get("slowest", []))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>parity mutate: {_pct(s['score'])}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;color:#222}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ddd;padding:4px 8px;text-align:left}} th{{background:#f4f4f4}}
.score{{font-size:2em;color:{'#2e9e4f' if (s['score'] or 0) >= 0.95 else '#d62828'}}}</style></head><body>
<h1>Mutation score: <span class="score">{_pct(s['score'])}</span></h1>
<p>Sweep <code>{e(str(s['meta'].get('sweep')))}</code> on <code>{e(str(s['meta'].get('level')))}</code>: {e(counts)}.
Equivalent (and argued equivalent) mutants, mutants out of the sweep's reach, compile errors and timeouts are not counted.</p>
{table('operator', s['per_operator'])}{table('file', s['per_file'])}
<h2>Survivors ({len(s['survivors'])})</h2>
<table><tr><th>where</th><th>operator</th><th>diff</th><th>family</th><th>hint</th></tr>{rows}</table>
<h2>Argued equivalent ({len(s['argued'])})</h2>
<table><tr><th>diff</th><th>why no input tells them apart</th></tr>{argued}</table>
<h2>Out of the sweep's reach, not sampled ({sum(s['unreachable'].values())})</h2>
<ul>{reach}</ul>
<h2>Where the time went</h2>
<p>{e(_time_spent(s['meta']))} The slowest mutants:</p>
<table><tr><th>seconds</th><th>verdict</th><th>cases run</th><th>phases</th><th>diff</th></tr>{slow}</table>
</body></html>
"""


def write(s: dict, folder: Path) -> list[Path]:
    """mutants.json, summary.md and index.html in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "mutants.json", folder / "summary.md", folder / "index.html"]
    for path, text in zip(paths, (json.dumps(s, indent=1), markdown(s), html_page(s))):
        files.write_text(path, text, "report")
    return paths
