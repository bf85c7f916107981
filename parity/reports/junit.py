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
        wall = float(g["wall_ms"].fillna(0).sum()) / 1e3 if "wall_ms" in g else 0.0
        suite = ET.SubElement(root, "testsuite", name=f"parity.{level}", tests=str(len(g)),
                              failures=str(fails), errors="0", skipped=str(skipped), time=f"{wall:.3f}")
        for _, r in g.iterrows():
            tc = ET.SubElement(suite, "testcase", classname=f"parity.{level}.{r['op']}", name=str(r["case_id"]),
                               time=f"{(r.get('wall_ms') or 0) / 1e3:.4f}")
            props = ET.SubElement(tc, "properties")
            for k in ("kernel", "verdict", "max_ulp", "numel", "tolerance"):
                v = r.get(k)
                if v is not None and v == v:
                    ET.SubElement(props, "property", name=k, value=str(v))
            if r["verdict"] in FAILING:
                f = ET.SubElement(tc, "failure", type=str(r["verdict"]), message=str(r.get("message") or "")[:500])
                f.text = f"{r.get('launch') or ''}\n{r.get('message') or ''}"
            elif r["verdict"] in ("unavailable", "xfail"):
                ET.SubElement(tc, "skipped", message=str(r.get("message") or r["verdict"]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
