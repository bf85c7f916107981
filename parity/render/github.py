"""GitHub Actions workflow commands: one `::error` annotation per finding (root cause), capped."""
from __future__ import annotations

from parity.core import env
from parity.render.findings import of
from parity.render.outcome import of as outcome_of
from parity.run.results import Results

CAP = 50


def enabled() -> bool:
    return env.flag("GITHUB_ACTIONS")


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def annotations(res: Results, cap: int = CAP) -> list[str]:
    """The run's outcome when it is neither a pass nor a plain failure (compiled only, reference only,
    nothing verified, stopped early), then one annotation per finding, worst first (xpass: a notice)."""
    found = of(res).findings
    o = outcome_of(res)
    out = []
    if o.status not in ("pass", "fail"):
        kind = "warning" if o.exit_code == 0 else "error"
        out.append(f"::{kind} title={_prop('parity: ' + o.status)}::{_data(o.headline)}")
    for f in found[:cap]:
        kind = "notice" if f.cause == "xpass" else "error"
        title = f"parity {f.cause}: {f.title}"
        msg = "\n".join(x for x in (f.detail, f"kernels: {f.kernel_list()}", f"repro: {f.repro}") if x)
        out.append(f"::{kind} title={_prop(title)}::{_data(msg[:900])}")
    if len(found) > cap:
        out.append(f"::warning title=parity::{len(found) - cap} more findings not annotated "
                   f"(see summary.md / index.html)")
    return out
