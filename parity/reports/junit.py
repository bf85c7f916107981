"""JUnit XML: one testcase per case, grouped in one testsuite per level."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from ..results import FAILING, Results


def render(res: Results) -> str:
    t = res.table
    root = ET.Element("testsuites", name="parity", tests=str(len(t)))
    for level, g in t.groupby("level", sort=True):
        fails = int(g["verdict"].isin(FAILING).sum())
        skipped = int(g["verdict"].isin(["unavailable", "xfail"]).sum())
        wall = sum(_ms(w) for w in g["wall_ms"]) / 1e3 if "wall_ms" in g else 0.0
        suite = ET.SubElement(root, "testsuite", name=f"parity.{level}", tests=str(len(g)),
                              failures=str(fails), errors="0", skipped=str(skipped), time=f"{wall:.3f}")
        for r in g.to_dict(orient="records"):          # plain dicts: iterrows costs ~0.1 ms a row
            tc = ET.SubElement(suite, "testcase", classname=f"parity.{level}.{r['op']}", name=str(r["case_id"]),
                               time=f"{_ms(r.get('wall_ms')) / 1e3:.4f}")
            # per-case facts go to system-out: the JUnit XSD has no <properties> inside <testcase>
            facts = [f"{k}={r.get(k)}" for k in ("kernel", "verdict", "raw_verdict", "max_ulp", "numel", "tolerance")
                     if r.get(k) is not None and r.get(k) == r.get(k)]
            if r["verdict"] in FAILING:
                f = ET.SubElement(tc, "failure", type=str(r["verdict"]), message=str(r.get("message") or "")[:500])
                f.text = f"{r.get('launch') or ''}\n{r.get('message') or ''}"
            elif r["verdict"] in ("unavailable", "xfail"):
                ET.SubElement(tc, "skipped", message=str(r.get("message") or r["verdict"]))
            ET.SubElement(tc, "system-out").text = "\n".join(facts)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _ms(v) -> float:
    """A finite, non-negative time (the XSD's xs:decimal has no NaN)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return 0.0
    return f if f == f and 0 <= f < float("inf") else 0.0
