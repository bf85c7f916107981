"""GitHub Actions workflow commands: one `::error` annotation per failing case (capped)."""
from __future__ import annotations

import os

from ..results import FAILING, Results

CAP = 50


def enabled() -> bool:
    return os.environ.get("GITHUB_ACTIONS", "").lower() not in ("", "0", "false")


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def annotations(res: Results, cap: int = CAP) -> list[str]:
    fails = res.table[res.table["verdict"].isin(FAILING)]
    out = []
    for _, r in fails.head(cap).iterrows():
        title = f"parity {r['verdict']}: {r['case_id']} [{r['level']}]"
        msg = str(r.get("message") or r["verdict"]).splitlines()[0][:900] if r.get("message") else str(r["verdict"])
        msg += f"\nrepro: parity repro {r['case_id']} --level {r['level']}"
        out.append(f"::error title={_prop(title)}::{_data(msg)}")
    if len(fails) > cap:
        out.append(f"::warning title=parity::{len(fails) - cap} more failing cases not annotated "
                   f"(see summary.md / index.html)")
    return out
