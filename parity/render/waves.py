"""Link amd-static's wavefront-size warnings (parity/suite/amd_static.py) to what the wave64 mode of
hip-on-nvidia proves: a kernel whose cases fail at wave 64 and pass at wave 32 has a warp-size
bug, and the static scan's lines in its source (if any) are where to look. Kernels the scan did
not flag are listed too: the run found what the scan missed."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from parity.core.row import Verdict
from parity.suite.amd_static import kernel_notes
from parity.suite.scan import Suite, discover

W64, W32 = "hip-on-nvidia", "hip-on-nvidia/w32"
PASSING = (Verdict.PASS, Verdict.XFAIL)
# what a launch at wave 64 showed
RUNTIME = (Verdict.FAIL, Verdict.CRASH, Verdict.TIMEOUT, Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED)


def evidence(rows: list[dict], suite: str | Path | Callable[[], Suite]) -> list[dict]:
    """One entry per kernel with a non-passing case at wave 64: its verdicts at both wave sizes,
    whether wave 32 passed the same cases, and the amd-static notes (file:line: note). suite: the
    suite folder, or the run's discovery of it (parity.run.session.Subject.suite)."""
    by_kernel: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        if r.get("level") in (W64, W32) and r.get("kernel"):
            by_kernel.setdefault(str(r["kernel"]), {}).setdefault(r["level"], []).append(r)
    bad = {k: v for k, v in by_kernel.items() if any(r["verdict"] not in PASSING for r in v.get(W64, []))}
    if not bad:
        return []
    notes = kernel_notes(suite() if callable(suite) else discover(Path(suite)))
    out = []
    for k in sorted(bad):
        v = bad[k]
        failing = sorted({r["case_id"] for r in v[W64] if r["verdict"] in RUNTIME})
        at32 = {r["case_id"]: r["verdict"] for r in v.get(W32, [])}
        checked = [c for c in failing if c in at32]          # a recheck runs a handful of them
        wave32 = ("not run" if not checked else Verdict.PASS if all(at32[c] in PASSING for c in checked)
                  else "fails too")
        # a kernel whose wave-64 failures were run at wave 32 (or that the scan flagged) is evidence
        # either way; a missing kernel, or one never run at 32 and not flagged, is another finding's
        if failing and (wave32 != "not run" or notes.get(k)):
            out.append({"kernel": k, "cases": failing,
                        "verdicts64": sorted({r["verdict"] for r in v[W64] if r["verdict"] in RUNTIME}),
                        "wave32": wave32, "suspect": wave32 == Verdict.PASS, "static": notes.get(k, [])})
    return out


RECHECK_PER_KERNEL = 4     # a handful of a kernel's wave-64 failures tells whether wave 32 passes them


def recheck_ids(rows: list[dict]) -> list[str]:
    """The cases to run again at wave 32: up to RECHECK_PER_KERNEL of each kernel's failures at
    wave 64 (fail, crash, ...), when the run has no wave-32 row for them."""
    at32 = {r["case_id"] for r in rows if r.get("level") == W32}
    picked: dict[str, list[str]] = {}
    for r in rows:
        if (r.get("level") == W64 and r.get("verdict") in RUNTIME and r.get("kernel")
                and r["case_id"] not in at32 and len(picked.setdefault(str(r["kernel"]), [])) < RECHECK_PER_KERNEL):
            picked[str(r["kernel"])].append(r["case_id"])
    return [c for ids in picked.values() for c in ids]


def markdown(entries: list[dict]) -> str:
    """Suspects first (fail at 64, pass at 32: a wave-size bug), then the kernels that fail at both
    sizes in one line (not wave-size bugs), then those never run at 32 that the scan flagged."""
    if not entries:
        return ""
    suspects = [e for e in entries if e["wave32"] == Verdict.PASS]
    both = [e for e in entries if e["wave32"] == "fails too"]
    unknown = [e for e in entries if e["wave32"] == "not run"]
    lines = ["### Wavefront size: wave64 evidence", ""]
    if suspects or unknown:
        lines += ["| kernel | at wave 64 | at wave 32 | amd-static flagged |", "| --- | --- | --- | --- |"]
        for e in suspects + unknown:
            flagged = "<br>".join(f"`{n}`" for n in e["static"]) or "nothing (the run found what the scan missed)"
            at32 = "**passes at 32**: wave-size suspect" if e in suspects else "not run"
            lines.append(f"| `{e['kernel']}` | {', '.join(e['verdicts64'])} ({len(e['cases'])} cases) | {at32} "
                         f"| {flagged} |")
        lines.append("")
    if both:
        names = ", ".join(f"`{e['kernel']}`" for e in both[:20]) + (f", … {len(both) - 20} more" if len(both) > 20 else "")
        lines += [f"Fail at wave 32 too (not a wave-size bug): {names}.", ""]
    lines += ["A kernel that fails at wave 64 and passes at wave 32 assumes 32-lane warps; "
              "the amd-static lines are the likely places."]
    return "\n".join(lines) + "\n"


NOTES_SHOWN = 30


def static_notes_markdown(notes: dict[str, list[str]] | None) -> str:
    """amd-static's wavefront-size notes of the run's kernels, by place (a note in a shared header is
    one line with the kernels that may run it): what to read when no GPU could run wave 64."""
    if not notes:
        return ""
    by_place: dict[str, list[str]] = {}
    for kernel, lines in sorted(notes.items()):
        for line in lines:
            by_place.setdefault(line, []).append(kernel)
    out = ["### Wavefront size: amd-static notes", "",
           "Places in the sources that assume a wavefront size (a 64-lane CDNA wave or a 32-lane RDNA one); "
           "a note is a place to read, not a failure.", ""]
    for place, kernels in list(by_place.items())[:NOTES_SHOWN]:
        shown = ", ".join(kernels[:4]) + (f", … {len(kernels) - 4} more" if len(kernels) > 4 else "")
        out.append(f"- `{place}` — {shown}")
    if len(by_place) > NOTES_SHOWN:
        out.append(f"- … {len(by_place) - NOTES_SHOWN} more places: see results.json (meta.static_notes)")
    return "\n".join(out) + "\n\n"
