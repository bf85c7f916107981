"""JUnit XML: one testcase per case, grouped in one testsuite per level."""
from __future__ import annotations

import re
from xml.sax.saxutils import escape, quoteattr

from parity.core.row import Verdict
from parity.render import outcome
from parity.run.levels import REFERENCE, role
from parity.run.results import FAILING, Results

# rows that are no pass: nothing of the kernel ran (compiled: built for the AMD targets, not executed)
# or its failure is accepted (xfail); a CI's test report must not count them as passed tests. Nor a
# reference level's passes (cpu, cupy: the reference's math, no kernel of the suite): skipped too.
SKIPPED = (Verdict.UNAVAILABLE, Verdict.XFAIL, Verdict.COMPILED)
_REFERENCE_ONLY = "the reference alone: no kernel of the suite ran on this level"
BODY_LIMIT = 20_000     # characters of a failure's message in its body (a 200 MB message made a 209 MB file)
# characters XML 1.0 cannot carry (compiler messages may hold them)
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _skipped(r: dict) -> bool:
    return r["verdict"] in SKIPPED or (r["verdict"] in (Verdict.PASS, Verdict.XPASS)
                                       and (role(str(r["level"])) == REFERENCE or r.get("not_launched") in (True, 1)))


def _q(v) -> str:
    return quoteattr(_INVALID.sub("?", str(v)))


def _t(v) -> str:
    return escape(_INVALID.sub("?", str(v)))


def render(res: Results) -> str:
    """Written as text, not through ElementTree: a nightly sweep has 60,000 test cases."""
    by_level: dict[str, list[dict]] = {}
    for r in res.records():
        by_level.setdefault(str(r["level"]), []).append(r)
    o = outcome.of(res)
    down = [lv for lv in res.meta.get("levels", []) if not lv.get("available", True)]
    out = ["<?xml version='1.0' encoding='utf-8'?>",
           f"<testsuites name=\"parity\" tests=\"{len(res.table) + 1 + len(down)}\">"]
    out += _outcome_suite(o)
    for lv in down:                            # a level that did not run is a skipped suite, never a pass
        name, why = f"parity.{lv['level']}", f"level {lv['level']} unavailable: {lv.get('reason') or ''}"
        out += [f"  <testsuite name={_q(name)} tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\" time=\"0\">",
                f"    <testcase classname={_q(name)} name=\"level\" time=\"0\">",
                f"      <skipped message={_q(why)} />", "    </testcase>", "  </testsuite>"]
    for level in sorted(by_level):
        g = by_level[level]
        fails = sum(r["verdict"] in FAILING for r in g)
        skipped = sum(_skipped(r) for r in g)
        wall = sum(_ms(r.get("wall_ms")) for r in g) / 1e3
        out.append(f"  <testsuite name={_q(f'parity.{level}')} tests=\"{len(g)}\" failures=\"{fails}\" errors=\"0\" "
                   f"skipped=\"{skipped}\" time=\"{wall:.3f}\">")
        for r in g:
            cls, secs = f"parity.{level}.{r['op']}", _ms(r.get("wall_ms")) / 1e3
            out.append(f"    <testcase classname={_q(cls)} name={_q(r['case_id'])} time=\"{secs:.4f}\">")
            # per-case facts go to system-out: the JUnit XSD has no <properties> inside <testcase>
            facts = [f"{k}={r.get(k)}" for k in ("kernel", "verdict", "raw_verdict", "max_ulp", "numel", "tolerance")
                     if r.get(k) is not None]
            msg = str(r.get("message") or "")
            if r["verdict"] in FAILING:
                body = msg if len(msg) <= BODY_LIMIT else (msg[:BODY_LIMIT] + f"\n… {len(msg) - BODY_LIMIT:,} more "
                                                                      "characters in results.json")
                out.append(f"      <failure type={_q(r['verdict'])} message={_q(msg[:500])}>"
                           f"{_t(str(r.get('launch') or '') + chr(10) + body)}</failure>")
            elif _skipped(r):
                why = {Verdict.COMPILED: "compiled for the AMD targets, not executed", Verdict.PASS: _REFERENCE_ONLY,
                       Verdict.XPASS: _REFERENCE_ONLY}.get(r["verdict"], r["verdict"])
                out.append(f"      <skipped message={_q(msg or why)} />")
            out.append(f"      <system-out>{_t(chr(10).join(facts))}</system-out>")
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def _outcome_suite(o) -> list[str]:
    """The run's one verdict (parity.render.outcome) as a test of its own: passes only when the suite's kernels
    ran and passed; skipped when they were only compiled, only the reference ran or the shard held no case;
    fails otherwise."""
    state = ("" if o.green else             # exit 0 but not green: compiled only, reference only, ... (outcome)
             f"      <skipped message={_q(o.headline)} />" if o.exit_code == 0 else
             f"      <failure type={_q(o.status)} message={_q(o.headline)}>{_t(o.headline)}</failure>")
    failed, skipped = int(state.startswith("      <failure")), int(state.startswith("      <skipped"))
    return [f"  <testsuite name=\"parity.outcome\" tests=\"1\" failures=\"{failed}\" errors=\"0\" "
            f"skipped=\"{skipped}\" time=\"0\">",
            f"    <testcase classname=\"parity.outcome\" name={_q(o.status)} time=\"0\">",
            *([state] if state else []), "    </testcase>", "  </testsuite>"]


def _ms(v) -> float:
    """A finite, non-negative time (the XSD's xs:decimal has no NaN)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return 0.0
    return f if f == f and 0 <= f < float("inf") else 0.0
