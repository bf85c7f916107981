"""The pr sweep of the structured families on the bundled HIP suite, compiled for NVIDIA
(`hip-on-nvidia`): every verdict must be pass. Needs a CUDA GPU (CuPy) and nvcc or NVRTC."""
import pytest

from parity.run.cases import Filters, load_sweep
from parity.run.engine import run_cases

FAMILIES = {"reduce": "reduce.*", "nn": "nn.*", "indexing": "index.*", "sort": "sort.*"}


@pytest.mark.gpu
@pytest.mark.parametrize("family", list(FAMILIES))
def test_structured_pr_sweep_passes_on_hip_on_nvidia(level, family):
    cases = load_sweep("pr", Filters(ops=[FAMILIES[family]]))
    assert cases
    rows = run_cases(cases, level.executor, level.availability.device)
    bad = [f"{r['case_id']}: {r['verdict']} {r.get('message', '')[:200]}" for r in rows if r["verdict"] != "pass"]
    assert not bad, f"{len(bad)}/{len(rows)} not passing:\n" + "\n".join(bad[:40])
