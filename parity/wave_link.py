"""Link amd-static's wavefront-size warnings (parity/amd_static.py) to what the wave64 mode of
hip-on-nvidia proves: a kernel whose cases fail at wave 64 and pass at wave 32 has a warp-size
bug, and the static scan's lines in its source (if any) are where to look. Kernels the scan did
not flag are listed too: the run found what the scan missed."""
from __future__ import annotations

from pathlib import Path

from .row import Verdict

W64, W32 = "hip-on-nvidia", "hip-on-nvidia/w32"
PASSING = (Verdict.PASS, Verdict.XFAIL)
# what a launch at wave 64 showed
RUNTIME = (Verdict.FAIL, Verdict.CRASH, Verdict.TIMEOUT, Verdict.OOB_WRITE, Verdict.INPUT_CLOBBERED)


def evidence(rows: list[dict], suite_dir: str | Path) -> list[dict]:
    """One entry per kernel with a non-passing case at wave 64: its verdicts at both wave sizes,
    whether wave 32 passed the same cases, and the amd-static notes (file:line: note)."""
    by_kernel: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        if r.get("level") in (W64, W32) and r.get("kernel"):
            by_kernel.setdefault(str(r["kernel"]), {}).setdefault(r["level"], []).append(r)
    bad = {k: v for k, v in by_kernel.items() if any(r["verdict"] not in PASSING for r in v.get(W64, []))}
    if not bad:
        return []
    from .amd_static import kernel_notes
    from .suite import discover
    notes = kernel_notes(discover(Path(suite_dir)))
    out = []
    for k in sorted(bad):
        v = bad[k]
        failing = sorted({r["case_id"] for r in v[W64] if r["verdict"] in RUNTIME})
        at32 = {r["case_id"]: r["verdict"] for r in v.get(W32, [])}
        wave32 = (Verdict.PASS if failing and all(at32.get(c) in PASSING for c in failing)
                  else "not run" if not at32 else "fails too")
        # evidence of a warp-size bug: wave 32 passes what wave 64 fails, or the scan flagged the
        # kernel; a missing kernel or one that fails at both sizes is another finding's business
        if failing and (wave32 == Verdict.PASS or notes.get(k)):
            out.append({"kernel": k, "cases": failing,
                        "verdicts64": sorted({r["verdict"] for r in v[W64] if r["verdict"] in RUNTIME}),
                        "wave32": wave32, "static": notes.get(k, [])})
    return out


def markdown(entries: list[dict]) -> str:
    if not entries:
        return ""
    lines = ["### Wavefront size: wave64 evidence", "",
             "| kernel | at wave 64 | at wave 32 | amd-static flagged |", "| --- | --- | --- | --- |"]
    for e in entries:
        flagged = "<br>".join(f"`{n}`" for n in e["static"]) or "nothing (the run found what the scan missed)"
        lines.append(f"| `{e['kernel']}` | {', '.join(e['verdicts64'])} ({len(e['cases'])} cases) | {e['wave32']} | {flagged} |")
    lines += ["", "A kernel that fails at wave 64 and passes at wave 32 assumes 32-lane warps; "
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
